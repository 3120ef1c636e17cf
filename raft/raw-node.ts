/**
 * RawNode: the public, thread-less driver of one Raft group (etcd/raft's
 * RawNode). The owner (a Replica in src/kv, the test harness, the simulation)
 * calls it from one logical thread of control.
 *
 * ## The Ready contract
 *
 *   loop:
 *     tick() every tick interval; step(msg) for every received message;
 *     propose()/proposeConfChange()/readIndex()/transferLeader() on demand.
 *     if hasReady():
 *       rd = ready()
 *       1. persist rd.snapshot (if any), rd.entries (append, overwriting any
 *          conflicting suffix) and rd.hardState (if non-null) — one atomic
 *          write, synced when rd.mustSync;
 *       2. only then send rd.messages (they may acknowledge what step 1
 *          persisted: votes, MsgAppResp; sending earlier loses data on a crash);
 *       3. apply rd.snapshot, then rd.committedEntries in order; for an
 *          EntryConfChange entry call applyConfChange(decodeConfChange(data))
 *          and persist the returned ConfState with the applied state;
 *       4. advance(rd).
 *
 *   - At most one Ready is outstanding: ready() asserts that the previous one
 *     was advanced. Between ready() and advance() the owner may keep calling
 *     tick/step/propose (e.g. while the write of step 1 is in flight); what
 *     they produce goes into the next Ready.
 *   - rd.readStates: serve each read once the applied index ≥ its index.
 *   - Messages to a peer that cannot be reached: reportUnreachable(id); the
 *     outcome of a sent snapshot: reportSnapshot(id, ok).
 *   - Ownership: every array in a Ready belongs to the caller. Entries (and
 *     their data) are shared and immutable — never mutate them.
 *
 * ## Errors
 *   propose/proposeConfChange/readIndex throw ProposalDroppedError
 *   (raft.proposal_dropped, retryable) when nothing was proposed: no leader
 *   known, a leader transfer is in progress, forwarding disabled, or the
 *   uncommitted-size budget is exhausted. A proposal that was accepted (or
 *   forwarded) may still be lost (leader change): the owner must track its
 *   commands and treat a lost one as ambiguous, never as failed.
 *   step() throws StepLocalMsgError / StepPeerNotFoundError for messages that
 *   must not come from the network.
 *
 * ## Quiescence
 *   The cluster layer may stop ticking an idle group (DESIGN.md §3). It is
 *   safe on the leader when status().quiescable is true: leader, no transfer
 *   or read in progress, every member's match = lastIndex = commit, nothing
 *   unapplied. The leader then sends one final heartbeat (so followers learn
 *   the commit index) and stops ticking; followers stop ticking when they
 *   receive the cluster layer's quiesce message and wake on any traffic.
 *
 * ## Bootstrapping and restart
 *   A new group starts from a Storage whose initial state carries the initial
 *   ConfState (MemoryStorage.setConfState or applySnapshot / the store's
 *   initial state); a replica added later starts empty and is caught up by
 *   its leader. On restart, Config.applied is the applied index of the
 *   durable state machine, and Storage.initialState().confState must be the
 *   configuration as of that index (persist the ConfState returned by
 *   applyConfChange atomically with the applied index): entries up to
 *   `applied` are not handed out again, so their conf changes are not
 *   replayed.
 */
import { assert } from '../src/util/assert.js';
import { encodeConfChange } from './conf-change-codec.js';
import { Raft } from './raft.js';
import { PROGRESS_STATE_NAMES } from './tracker/progress.js';
import { describeTrackerConfig } from './tracker/tracker.js';
import {
  EntryType,
  MessageType,
  NONE,
  StateType,
  StepLocalMsgError,
  StepPeerNotFoundError,
  hardStateEqual,
  isEmptyHardState,
  isEmptySnap,
  isLocalMsg,
  isResponseMsg,
  newMessage,
  type ConfChangeV2,
  type ConfState,
  type Config,
  type Entry,
  type HardState,
  type Message,
  type Ready,
  type SoftState,
} from './types.js';

/** The leader's view of one member, in Status. */
export interface ProgressStatus {
  readonly match: number;
  readonly next: number;
  /** 'StateProbe' | 'StateReplicate' | 'StateSnapshot' */
  readonly state: string;
  readonly isLearner: boolean;
  readonly paused: boolean;
  readonly recentActive: boolean;
  readonly pendingSnapshot: number;
  readonly inflight: number;
}

export interface BasicStatus {
  readonly id: number;
  readonly hardState: HardState;
  readonly softState: SoftState;
  readonly applied: number;
  readonly lastIndex: number;
  readonly leadTransferee: number;
}

export interface Status extends BasicStatus {
  /** The configuration, e.g. "voters=(1 2 3)&&(1 2) autoleave". */
  readonly config: string;
  readonly confState: ConfState;
  /** Per-member progress, on the leader only (null elsewhere). */
  readonly progress: ReadonlyMap<number, ProgressStatus> | null;
  /** Idle-safe to stop ticking (leader only; see the header). */
  readonly quiescable: boolean;
}

export class RawNode {
  readonly raft: Raft;
  private prevSoftSt: SoftState;
  private prevHardSt: HardState;
  private outstanding = false;

  constructor(config: Config) {
    this.raft = new Raft(config);
    this.prevSoftSt = this.raft.softState();
    this.prevHardSt = this.raft.hardState();
  }

  /** Advances the logical clock by one tick (election and heartbeat timeouts count ticks). */
  tick(): void {
    this.raft.tick();
  }

  /**
   * Advances only the election clock of a quiesced replica: no heartbeat,
   * no campaign (etcd's TickQuiesced). A follower woken from quiescence then
   * behaves as if those ticks had passed, so it campaigns promptly if the
   * leader is really gone.
   */
  tickQuiesced(): void {
    this.raft.electionElapsed++;
  }

  /** Starts an election now (pre-vote first when enabled). */
  campaign(): void {
    this.raft.step(newMessage({ type: MessageType.MsgHup }));
  }

  /**
   * Proposes `data` for the log. Throws ProposalDroppedError when nothing was
   * proposed. Each call appends and sends at once (a MsgApp per follower):
   * for throughput, gather the proposals of a Ready cycle into proposeBatch.
   */
  propose(data: Uint8Array): void {
    this.raft.step(
      newMessage({ type: MessageType.MsgProp, from: this.raft.id, entries: [{ term: 0, index: 0, type: EntryType.Normal, data }] }),
    );
  }

  /** Proposes several entries in one message (one append, one MsgApp round). */
  proposeBatch(datas: readonly Uint8Array[]): void {
    const entries: Entry[] = new Array<Entry>(datas.length);
    for (let k = 0; k < datas.length; k++) entries[k] = { term: 0, index: 0, type: EntryType.Normal, data: datas[k] as Uint8Array };
    this.raft.step(newMessage({ type: MessageType.MsgProp, from: this.raft.id, entries }));
  }

  /**
   * Proposes a configuration change. A change that cannot be accepted now
   * (another one unapplied, or a joint config to leave first) is replaced by
   * an empty normal entry, as in etcd: watch for it to be applied.
   */
  proposeConfChange(cc: ConfChangeV2): void {
    const data = encodeConfChange(cc);
    this.raft.step(
      newMessage({ type: MessageType.MsgProp, from: this.raft.id, entries: [{ term: 0, index: 0, type: EntryType.ConfChange, data }] }),
    );
  }

  /** Applies a committed conf change (from an applied entry); returns the ConfState to persist. */
  applyConfChange(cc: ConfChangeV2): ConfState {
    return this.raft.applyConfChange(cc);
  }

  /**
   * Feeds a message received from a peer. The library owns the message once
   * stepped (a forwarded proposal's entries are stamped in place).
   */
  step(m: Message): void {
    if (isLocalMsg(m.type)) throw new StepLocalMsgError();
    if (isResponseMsg(m.type) && !this.raft.trk.progress.has(m.from)) throw new StepPeerNotFoundError();
    this.raft.step(m);
  }

  /** Asks the leader to hand leadership to `transferee` (forwarded when we are a follower). */
  transferLeader(transferee: number): void {
    this.raft.step(newMessage({ type: MessageType.MsgTransferLeader, from: transferee }));
  }

  /**
   * Requests a linearizable read point. `ctx` identifies the request (unique
   * per outstanding request); it comes back in a Ready's readStates.
   */
  readIndex(ctx: Uint8Array): void {
    this.raft.step(newMessage({ type: MessageType.MsgReadIndex, entries: [{ term: 0, index: 0, type: EntryType.Normal, data: ctx }] }));
  }

  reportUnreachable(id: number): void {
    // Do not throw when the peer is gone: this is a best-effort hint.
    if (!this.raft.trk.progress.has(id)) return;
    this.raft.step(newMessage({ type: MessageType.MsgUnreachable, from: id }));
  }

  reportSnapshot(id: number, ok: boolean): void {
    if (!this.raft.trk.progress.has(id)) return;
    this.raft.step(newMessage({ type: MessageType.MsgSnapStatus, from: id, reject: !ok }));
  }

  /** Whether ready() would return something to do. Cheap; call it after every input batch. */
  hasReady(): boolean {
    const r = this.raft;
    if (r.msgs.length > 0) return true;
    if (r.raftLog.hasNextUnstableEnts() || r.raftLog.hasNextCommittedEnts()) return true;
    if (r.lead !== this.prevSoftSt.lead || r.state !== this.prevSoftSt.raftState) return true;
    if (r.term !== this.prevHardSt.term || r.vote !== this.prevHardSt.vote || r.raftLog.committed !== this.prevHardSt.commit) {
      if (!isEmptyHardState(r.hardState())) return true;
    }
    if (r.raftLog.hasNextUnstableSnapshot()) return true;
    return r.readStates.length > 0;
  }

  /** The next batch of work (see the contract above). Call advance(rd) when done. */
  ready(): Ready {
    assert(!this.outstanding, 'raft: ready() called again before advance()');
    const r = this.raft;
    const log = r.raftLog;
    const entries = log.nextUnstableEnts();
    const committedEntries = log.nextCommittedEnts();
    const ss = r.softState();
    const softState = ss.lead !== this.prevSoftSt.lead || ss.raftState !== this.prevSoftSt.raftState ? ss : null;
    const hs = r.hardState();
    const hardState = !isEmptyHardState(hs) && !hardStateEqual(hs, this.prevHardSt) ? hs : null;
    const snapshot = log.nextUnstableSnapshot();
    const rd: Ready = {
      softState,
      hardState,
      readStates: r.readStates,
      entries,
      snapshot,
      committedEntries,
      messages: r.msgs,
      // Entries, a term change or a vote must survive a crash before any
      // message acknowledging them is sent; a commit-only change need not
      // (the commit index can be re-learned).
      mustSync: entries.length > 0 || snapshot !== null || hs.term !== this.prevHardSt.term || hs.vote !== this.prevHardSt.vote,
    };
    // Accept: hand everything over.
    if (softState !== null) this.prevSoftSt = softState;
    if (hardState !== null) this.prevHardSt = hardState;
    if (r.readStates.length > 0) r.readStates = [];
    r.msgs = [];
    log.acceptUnstable();
    if (committedEntries.length > 0) {
      log.acceptApplying((committedEntries[committedEntries.length - 1] as Entry).index);
    }
    this.outstanding = true;
    return rd;
  }

  /**
   * Whether takeCommittedEntries(maxIndex) would hand out anything. Cheap.
   */
  hasCommittedEntriesUpTo(maxIndex: number): boolean {
    const log = this.raft.raftLog;
    return !log.hasNextOrInProgressSnapshot() && log.applying < Math.min(log.committed, maxIndex);
  }

  /**
   * Committed entries with index ≤ maxIndex not yet handed out, taken while a
   * Ready may be outstanding: an owner whose Ready write is in flight applies
   * the commits that arrive meanwhile (its followers' acks) without waiting
   * for that write. The owner guarantees that
   *   - the entries are durable in its own log (maxIndex ≤ its durable last
   *     index): the leader counts its own entries at append time, so only
   *     then does the commit stand on a quorum of durable copies;
   *   - it applies them after every entry handed out before (by ready() or
   *     an earlier call), and then calls appliedEntries(ents).
   * Never returns entries past a pending snapshot.
   */
  takeCommittedEntries(maxIndex: number): Entry[] {
    if (!this.hasCommittedEntriesUpTo(maxIndex)) return [];
    const log = this.raft.raftLog;
    const ents = log.nextCommittedEnts();
    let n = 0;
    while (n < ents.length && (ents[n] as Entry).index <= maxIndex) n++;
    if (n === 0) return [];
    const out = n === ents.length ? ents : ents.slice(0, n);
    log.acceptApplying((out[n - 1] as Entry).index);
    return out;
  }

  /**
   * The leader's MsgApps that carry entries, taken out of the pending
   * messages while a Ready may be outstanding, for the owner to send at once
   * instead of with the next Ready: an owner whose Ready write is in flight
   * lets proposals made meanwhile reach the followers during that write, so
   * they persist in parallel with the leader (Raft thesis §10.2.1: a leader
   * may send entries before its own copy is durable). Only a leader whose
   * term and vote are durable (`durable.term`/`durable.vote`, the owner's
   * persisted hard state) gets anything: a message must never speak for a
   * term or vote a crash could forget.
   *
   * `durable.lastIndex` is the owner's durable last index. The leader counts
   * its own entries at append time, so its commit index may stand on a copy
   * of its own that is not durable yet; each taken message announces at most
   * `durable.lastIndex` (splitAppendForDurability), and for one whose commit
   * was cut a commit-only MsgApp stays pending for the next Ready (whose
   * owner sends it once its own log covers that commit). The other pending
   * messages keep their order.
   */
  takeAppends(durable: { readonly lastIndex: number; readonly term: number; readonly vote: number }): Message[] {
    const r = this.raft;
    if (r.state !== StateType.Leader || r.term !== durable.term || r.vote !== durable.vote || r.msgs.length === 0) return [];
    let taken: Message[] | null = null;
    for (const m of r.msgs) {
      if (m.type === MessageType.MsgApp && m.entries.length > 0) (taken ??= []).push(m);
    }
    if (taken === null) return [];
    const keep: Message[] = [];
    for (const m of r.msgs) if (m.type !== MessageType.MsgApp || m.entries.length === 0) keep.push(m);
    const out = new Array<Message>(taken.length);
    for (let k = 0; k < taken.length; k++) {
      const s = splitAppendForDurability(taken[k] as Message, durable.lastIndex);
      out[k] = s.now as Message;
      if (s.later !== null) keep.push(s.later);
    }
    r.msgs = keep;
    return out;
  }

  /** Entries handed out by takeCommittedEntries were applied. */
  appliedEntries(ents: readonly Entry[]): void {
    if (ents.length === 0) return;
    const r = this.raft;
    let size = 0;
    for (let k = 0; k < ents.length; k++) size += (ents[k] as Entry).data.length;
    r.reduceUncommittedSize(size);
    const last = (ents[ents.length - 1] as Entry).index;
    if (last >= r.raftLog.applied) r.appliedTo(last);
  }

  /** The owner finished persisting, sending and applying `rd`. */
  advance(rd: Ready): void {
    assert(this.outstanding, 'raft: advance() without an outstanding Ready');
    this.outstanding = false;
    const r = this.raft;
    const ce = rd.committedEntries;
    if (ce.length > 0) {
      let size = 0;
      for (let k = 0; k < ce.length; k++) size += (ce[k] as Entry).data.length;
      r.reduceUncommittedSize(size);
    }
    if (rd.entries.length > 0) {
      const e = rd.entries[rd.entries.length - 1] as Entry;
      r.raftLog.stableTo(e.index, e.term);
    }
    if (rd.snapshot !== null && !isEmptySnap(rd.snapshot)) r.raftLog.stableSnapTo(rd.snapshot.metadata.index);
    const applied = ce.length > 0 ? (ce[ce.length - 1] as Entry).index : rd.snapshot !== null ? rd.snapshot.metadata.index : 0;
    // Entries taken by takeCommittedEntries may already have been applied past this Ready's.
    if (applied > 0 && applied >= r.raftLog.applied) r.appliedTo(applied);
  }

  basicStatus(): BasicStatus {
    const r = this.raft;
    return {
      id: r.id,
      hardState: r.hardState(),
      softState: r.softState(),
      applied: r.raftLog.applied,
      lastIndex: r.raftLog.lastIndex(),
      leadTransferee: r.leadTransferee,
    };
  }

  status(): Status {
    const r = this.raft;
    const basic = this.basicStatus();
    let progress: Map<number, ProgressStatus> | null = null;
    let quiescable = false;
    if (r.state === StateType.Leader) {
      progress = new Map();
      const last = r.raftLog.lastIndex();
      quiescable =
        r.leadTransferee === NONE &&
        r.readOnly.pendingCount === 0 &&
        r.pendingReadIndexMessages.length === 0 &&
        r.raftLog.committed === last &&
        r.raftLog.applied === last &&
        r.msgs.length === 0;
      for (const id of r.trk.ids()) {
        const pr = r.trk.progress.get(id);
        if (pr === undefined) continue;
        if (pr.match !== last) quiescable = false;
        progress.set(id, {
          match: pr.match,
          next: pr.next,
          state: PROGRESS_STATE_NAMES[pr.state] as string,
          isLearner: pr.isLearner,
          paused: pr.isPaused(),
          recentActive: pr.recentActive,
          pendingSnapshot: pr.pendingSnapshot,
          inflight: pr.inflights.count,
        });
      }
    }
    return { ...basic, config: describeTrackerConfig(r.trk.config), confState: r.trk.confState(), progress, quiescable };
  }
}

/**
 * A leader's MsgApp `m` made fit to send before the leader's own log is
 * durable past `durableIndex` (its commit index counts its own entries at
 * append time, so a commit above its durable index may not yet stand on a
 * quorum of durable copies, and a follower told it could apply an entry a
 * crash of the leader then lets a new leader overwrite):
 *
 *   - commit ≤ durableIndex: `now` is m itself;
 *   - no entries: `later` is m (all it says is the commit — send it once
 *     the leader's log covers it);
 *   - otherwise `now` is m announcing commit = durableIndex, and `later` a
 *     commit-only MsgApp at m's last entry (index, logTerm) with m's commit.
 *     The follower that appended m's entries accepts it and commits
 *     min(commit, that index), what m would have committed; one that did
 *     not rejects it as it would any append past its log.
 *
 * Pure; the returned messages are new objects (m is never mutated).
 */
export function splitAppendForDurability(m: Message, durableIndex: number): { now: Message | null; later: Message | null } {
  assert(m.type === MessageType.MsgApp, 'raft: splitAppendForDurability of a message that is not MsgApp');
  if (m.commit <= durableIndex) return { now: m, later: null };
  if (m.entries.length === 0) return { now: null, later: m };
  const last = m.entries[m.entries.length - 1] as Entry;
  return {
    now: { ...m, commit: durableIndex },
    later: { ...m, index: last.index, logTerm: last.term, entries: [], commit: m.commit },
  };
}
