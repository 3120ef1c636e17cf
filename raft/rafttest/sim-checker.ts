/**
 * The fault simulation's safety checker: Raft's safety properties, asserted
 * after every step of a schedule (Raft paper Figure 3):
 *
 *   - Election Safety (§5.2): at most one leader per term, ever.
 *   - Leader Append-Only (§5.3): while a node stays leader of a term (and does
 *     not crash), no entry of its log changes and its log never shrinks.
 *   - Log Matching (§5.3): entries with the same index and term hold the same
 *     data, and are preceded by the same term. By induction that makes the
 *     logs identical up to that index, so it is checked entry by entry against
 *     a registry of every (index, term) ever seen, without pairwise scans.
 *   - Leader Completeness (§5.4): a leader of term T holds every entry
 *     committed in a term below T. The term in which an entry was committed
 *     is over-approximated by the term of the node on which the commit was
 *     first observed (never below the real one), so the check never fires
 *     falsely.
 *   - State Machine Safety (§5.4.3): an entry once committed never changes or
 *     disappears (every node's committed prefix and every applied entry agree
 *     with the first observation of that index), and each node applies
 *     indexes contiguously, so applied sequences are prefixes of one another.
 *
 * A violation throws SimViolationError. The checker only reads the nodes
 * (raft internals included: it is a test harness); the cluster tells it which
 * nodes changed ("dirty") so a step costs O(dirty nodes × log length).
 */
import { EntryType, StateType, type Entry, type HardState, type Storage } from '../types.js';
import type { RaftLog } from '../log.js';

export class SimViolationError extends Error {
  override name = 'SimViolationError';
}

/** What the checker needs to read from one live node. */
export interface CheckedNode {
  readonly id: number;
  readonly state: StateType;
  readonly term: number;
  readonly raftLog: RaftLog;
}

interface CommittedRecord {
  readonly term: number;
  readonly entry: Entry;
  /** Term of the node on which the commit was first observed (≥ the real commit term). */
  readonly observedTerm: number;
}

interface IndexTermRecord {
  readonly entry: Entry;
  /** Term of the entry before it (-1 when the observing node had compacted it away). */
  prevTerm: number;
}

interface LeaderRecord {
  readonly term: number;
  readonly first: number;
  /** Terms of the leader's entries from `first` on, as last observed. */
  terms: number[];
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameEntry(a: Entry, b: Entry): boolean {
  return a.index === b.index && a.term === b.term && a.type === b.type && bytesEqual(a.data, b.data);
}

/** index/tterm[:data], the data shown when printable (proposals), else as a size or a conf change marker. */
function fmt(e: Entry): string {
  let d = '';
  if (e.type === EntryType.ConfChange) d = ':confchange';
  else if (e.data.length > 0) d = e.data.every((b) => b >= 0x20 && b < 0x7f) ? `:${Buffer.from(e.data).toString('latin1')}` : `:<${e.data.length} bytes>`;
  return `${e.index}/t${e.term}${d}`;
}

export class SafetyChecker {
  /** term → the leader seen in it. */
  readonly leaders = new Map<number, number>();
  /** index → the committed entry at that index. */
  private readonly committed = new Map<number, CommittedRecord>();
  /** index → term → record. */
  private readonly byIndexTerm = new Map<number, Map<number, IndexTermRecord>>();
  private readonly leaderLogs = new Map<number, LeaderRecord>();
  /** node id → last applied index. */
  private readonly appliedIndex = new Map<number, number>();
  /** Number of distinct committed indexes observed. */
  get committedCount(): number {
    return this.committed.size;
  }

  private fail(msg: string): never {
    throw new SimViolationError(`raft sim: ${msg}`);
  }

  /** The node crashed: its leadership (and its append-only obligation) ends. */
  onCrash(id: number): void {
    this.leaderLogs.delete(id);
  }

  /** The node's state machine was reset to `applied` (restart, snapshot). */
  resetApplied(id: number, applied: number): void {
    this.appliedIndex.set(id, applied);
  }

  /**
   * Checks one node that may have changed in the last step, in two parts:
   *
   *   - its durable log (`storage`: what handled Readies persisted) feeds
   *     the log-matching registry and, up to the persisted commit index, the
   *     record of committed entries. Only durable state is evidence: a lone
   *     voter can win an election, append and commit in memory and crash
   *     before persisting any of it, then legitimately redo that term with
   *     other entries (nobody ever saw the first).
   *   - its in-memory log must agree with every committed entry recorded so
   *     far, and is what the leader checks read.
   */
  checkNode(n: CheckedNode, storage: Storage & { readonly hardState: HardState }): void {
    const sFirst = storage.firstIndex();
    const sLast = storage.lastIndex();
    const sEnts = sLast >= sFirst ? storage.entries(sFirst, sLast + 1, Number.MAX_SAFE_INTEGER) : [];
    let prevTerm = sFirst > 1 ? storage.term(sFirst - 1) : 0;
    const known = Math.min(storage.hardState.commit, sLast);
    // The snapshot point itself, if committed and known.
    const snapRec = this.committed.get(sFirst - 1);
    if (snapRec !== undefined && snapRec.term !== prevTerm) {
      this.fail(`node ${n.id}: snapshot point ${sFirst - 1} has term ${prevTerm}, committed entry has term ${snapRec.term}`);
    }
    for (let k = 0; k < sEnts.length; k++) {
      const e = sEnts[k] as Entry;
      if (e.index !== sFirst + k) this.fail(`node ${n.id}: stored entry at position ${sFirst + k} has index ${e.index}`);
      // Log matching: (index, term) determines data and the previous term.
      let terms = this.byIndexTerm.get(e.index);
      if (terms === undefined) this.byIndexTerm.set(e.index, (terms = new Map()));
      const rec = terms.get(e.term);
      if (rec === undefined) terms.set(e.term, { entry: e, prevTerm });
      else {
        if (!sameEntry(rec.entry, e)) this.fail(`log matching: node ${n.id} has ${fmt(e)}, another node had ${fmt(rec.entry)}`);
        if (rec.prevTerm !== prevTerm) {
          this.fail(`log matching: node ${n.id} has ${fmt(e)} after term ${prevTerm}, another node had it after term ${rec.prevTerm}`);
        }
      }
      // A committed entry never changes.
      if (e.index <= known) this.observeCommitted(n, e);
      prevTerm = e.term;
    }
    const log = n.raftLog;
    const first = log.firstIndex();
    const last = log.lastIndex();
    const ents = last >= first ? log.slice(first, last + 1, Number.MAX_SAFE_INTEGER) : [];
    const commit = Math.min(log.committed, last);
    for (let k = 0; k < ents.length; k++) {
      const e = ents[k] as Entry;
      if (e.index !== first + k) this.fail(`node ${n.id}: log entry at position ${first + k} has index ${e.index}`);
      if (e.index <= commit) this.compareCommitted(n, e);
    }
    // Leader Append-Only, Election Safety and Leader Completeness.
    if (n.state === StateType.Leader) {
      const prev = this.leaders.get(n.term);
      if (prev === undefined) this.leaders.set(n.term, n.id);
      else if (prev !== n.id) this.fail(`election safety: nodes ${prev} and ${n.id} are both leaders of term ${n.term}`);
      const lr = this.leaderLogs.get(n.id);
      if (lr !== undefined && lr.term === n.term) {
        if (last < lr.first + lr.terms.length - 1) this.fail(`leader append-only: leader ${n.id} of term ${n.term} shrank its log to ${last}`);
        for (let k = 0; k < lr.terms.length; k++) {
          const i = lr.first + k;
          if (i < first) continue;
          if ((ents[i - first] as Entry).term !== lr.terms[k]) {
            this.fail(`leader append-only: leader ${n.id} of term ${n.term} changed entry ${i} from term ${lr.terms[k]} to ${(ents[i - first] as Entry).term}`);
          }
        }
      } else this.checkLeaderCompleteness(n, ents, first);
      this.leaderLogs.set(n.id, { term: n.term, first, terms: ents.map((e) => e.term) });
    } else this.leaderLogs.delete(n.id);
  }

  private checkLeaderCompleteness(n: CheckedNode, ents: readonly Entry[], first: number): void {
    for (const [i, c] of this.committed) {
      if (c.observedTerm >= n.term || i < first) continue;
      const e = ents[i - first];
      if (e === undefined || !sameEntry(e, c.entry)) {
        this.fail(
          `leader completeness: leader ${n.id} of term ${n.term} has ${e === undefined ? 'nothing' : fmt(e)} at ${i}, where ${fmt(c.entry)} was committed by term ${c.observedTerm}`,
        );
      }
    }
  }

  private observeCommitted(n: CheckedNode, e: Entry): void {
    const c = this.committed.get(e.index);
    if (c === undefined) this.committed.set(e.index, { term: e.term, entry: e, observedTerm: n.term });
    else if (!sameEntry(c.entry, e)) this.fail(`state machine safety: node ${n.id} has ${fmt(e)} committed, where ${fmt(c.entry)} was committed before`);
  }

  private compareCommitted(n: CheckedNode, e: Entry): void {
    const c = this.committed.get(e.index);
    if (c !== undefined && !sameEntry(c.entry, e)) this.fail(`state machine safety: node ${n.id} has ${fmt(e)} committed, where ${fmt(c.entry)} was committed before`);
  }

  /** Node `n` applies entry `e` (from a Ready's committedEntries or a snapshot's state). */
  onApply(n: CheckedNode, e: Entry): void {
    const prev = this.appliedIndex.get(n.id) ?? 0;
    if (e.index !== prev + 1) this.fail(`state machine safety: node ${n.id} applied ${fmt(e)} after index ${prev}`);
    this.appliedIndex.set(n.id, e.index);
    this.observeCommitted(n, e);
  }
}
