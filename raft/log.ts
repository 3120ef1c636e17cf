/**
 * RaftLog: the log as the Raft state machine sees it — Storage (durable)
 * followed by Unstable (accepted, not yet durable) — plus the commit and
 * apply cursors.
 *
 *   firstIndex … [storage] … unstable.offset … [unstable] … lastIndex
 *   applied ≤ applying ≤ committed ≤ lastIndex
 *
 *   committed  highest index known to be replicated on a quorum;
 *   applying   highest index handed to the caller for application (in a Ready);
 *   applied    highest index the caller reported applied (advance()).
 *
 * Invariants: committed never decreases, and never points past lastIndex;
 * an entry at or below committed is never truncated (Raft §5.3, Log Matching:
 * an assert fails if a leader tries).
 */
import { assert } from '../src/util/assert.js';
import { Unstable } from './log-unstable.js';
import { CompactedError, NO_LIMIT, UnavailableError, limitSize, type Entry, type Snapshot, type Storage } from './types.js';

export class RaftLog {
  readonly storage: Storage;
  readonly unstable: Unstable;
  committed: number;
  applying: number;
  applied: number;
  /** Byte budget of committed entries handed out per Ready. */
  readonly maxApplyingEntsSize: number;

  constructor(storage: Storage, maxApplyingEntsSize = NO_LIMIT) {
    this.storage = storage;
    this.maxApplyingEntsSize = maxApplyingEntsSize;
    const first = storage.firstIndex();
    const last = storage.lastIndex();
    this.unstable = new Unstable(last + 1);
    // Initialize the cursors to the snapshot point; the caller restores the
    // commit index from the hard state.
    this.committed = first - 1;
    this.applying = first - 1;
    this.applied = first - 1;
  }

  toString(): string {
    return `committed=${this.committed}, applied=${this.applied}, applying=${this.applying}, unstable.offset=${this.unstable.offset}, unstable.offsetInProgress=${this.unstable.offsetInProgress}, len(unstable.Entries)=${this.unstable.entries.length}`;
  }

  firstIndex(): number {
    return this.unstable.maybeFirstIndex() ?? this.storage.firstIndex();
  }

  lastIndex(): number {
    return this.unstable.maybeLastIndex() ?? this.storage.lastIndex();
  }

  lastTerm(): number {
    return this.term(this.lastIndex());
  }

  /**
   * The term of entry i. Valid range: [firstIndex()-1, lastIndex()];
   * throws CompactedError below and UnavailableError above.
   */
  term(i: number): number {
    const t = this.unstable.maybeTerm(i);
    if (t !== undefined) return t;
    if (i < this.firstIndex() - 1) throw new CompactedError();
    if (i > this.lastIndex()) throw new UnavailableError();
    return this.storage.term(i);
  }

  /** The term of entry i, or 0 when it is compacted or unavailable. */
  zeroTermOnOutOfBounds(i: number): number {
    const t = this.unstable.maybeTerm(i);
    if (t !== undefined) return t;
    if (i < this.firstIndex() - 1 || i > this.lastIndex()) return 0;
    try {
      return this.storage.term(i);
    } catch (e) {
      if (e instanceof CompactedError || e instanceof UnavailableError) return 0;
      throw e;
    }
  }

  matchTerm(i: number, t: number): boolean {
    if (i < this.firstIndex() - 1 || i > this.lastIndex()) return false;
    return this.zeroTermOnOutOfBounds(i) === t;
  }

  /**
   * Appends `ents` after (index, logTerm) if the log has that entry (Raft
   * §5.3, the AppendEntries consistency check), truncating any conflicting
   * suffix, and commits up to min(committed, last new index). Returns the last
   * new index, or -1 when the consistency check fails.
   */
  maybeAppend(index: number, logTerm: number, committed: number, ents: readonly Entry[]): number {
    if (!this.matchTerm(index, logTerm)) return -1;
    const lastNew = index + ents.length;
    const ci = this.findConflict(ents);
    if (ci !== 0) {
      assert(ci > this.committed, `raft: entry ${ci} conflicts with committed entry [committed(${this.committed})]`);
      const offset = index + 1;
      this.append(ci - offset === 0 ? ents : ents.slice(ci - offset));
    }
    this.commitTo(Math.min(committed, lastNew));
    return lastNew;
  }

  /** Appends entries (truncating a conflicting unstable suffix); returns the new last index. */
  append(ents: readonly Entry[]): number {
    if (ents.length === 0) return this.lastIndex();
    const after = (ents[0] as Entry).index - 1;
    if (!(after >= this.committed)) assert(false, `raft: after(${after}) is out of range [committed(${this.committed})]`);
    this.unstable.truncateAndAppend(ents);
    return this.lastIndex();
  }

  /**
   * The index of the first entry of `ents` whose term differs from ours (or
   * that we do not have), or 0 when all of them match.
   */
  findConflict(ents: readonly Entry[]): number {
    for (let k = 0; k < ents.length; k++) {
      const e = ents[k] as Entry;
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /**
   * The largest (index, term) with index ≤ `index` and term ≤ `term`: the
   * fast-backtracking probe (etcd's findConflictByTerm). An index whose term
   * is unknown (compacted) is returned with term 0.
   */
  findConflictByTerm(index: number, term: number): [index: number, term: number] {
    for (; index > 0; index--) {
      let t: number;
      try {
        t = this.term(index);
      } catch (e) {
        if (e instanceof CompactedError || e instanceof UnavailableError) return [index, 0];
        throw e;
      }
      if (t <= term) return [index, t];
    }
    return [0, 0];
  }

  /** Unstable entries not yet handed out for persistence. */
  nextUnstableEnts(): Entry[] {
    return this.unstable.nextEntries();
  }

  hasNextUnstableEnts(): boolean {
    return this.unstable.hasNextEntries();
  }

  hasNextOrInProgressUnstableEnts(): boolean {
    return this.unstable.entries.length > 0;
  }

  /** Committed entries not yet handed out for application, within the byte budget. */
  nextCommittedEnts(): Entry[] {
    if (this.hasNextOrInProgressSnapshot()) return []; // apply the snapshot first
    const lo = this.applying + 1;
    const hi = this.maxAppliableIndex() + 1;
    if (lo >= hi) return [];
    return this.slice(lo, hi, this.maxApplyingEntsSize);
  }

  hasNextCommittedEnts(): boolean {
    if (this.hasNextOrInProgressSnapshot()) return false;
    return this.applying + 1 <= this.maxAppliableIndex();
  }

  /** Committed entries may be applied in the same Ready that persists them. */
  private maxAppliableIndex(): number {
    return Math.min(this.committed, this.lastIndex());
  }

  nextUnstableSnapshot(): Snapshot | null {
    return this.unstable.nextSnapshot();
  }

  hasNextUnstableSnapshot(): boolean {
    return this.unstable.nextSnapshot() !== null;
  }

  hasNextOrInProgressSnapshot(): boolean {
    return this.unstable.snapshot !== null;
  }

  snapshot(): Snapshot {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }

  commitTo(toCommit: number): void {
    if (this.committed < toCommit) {
      if (!(this.lastIndex() >= toCommit)) assert(false, `raft: tocommit(${toCommit}) is out of range [lastIndex(${this.lastIndex()})]. Was the raft log corrupted, truncated, or lost?`);
      this.committed = toCommit;
    }
  }

  /** The caller applied entries up to i. */
  appliedTo(i: number): void {
    if (i === 0) return;
    if (!(this.committed >= i && i >= this.applied)) assert(false, `raft: applied(${i}) is out of range [prevApplied(${this.applied}), committed(${this.committed})]`);
    this.applied = i;
    if (this.applying < i) this.applying = i;
  }

  /** Entries up to i were handed out for application. */
  acceptApplying(i: number): void {
    if (!(this.committed >= i)) assert(false, `raft: applying(${i}) is out of range [committed(${this.committed})]`);
    this.applying = i;
  }

  stableTo(i: number, t: number): void {
    this.unstable.stableTo(i, t);
  }

  stableSnapTo(i: number): void {
    this.unstable.stableSnapTo(i);
  }

  acceptUnstable(): void {
    this.unstable.acceptInProgress();
  }

  /** Entries from i to the end, at most maxSize bytes (at least one entry). */
  entries(i: number, maxSize: number): Entry[] {
    if (i > this.lastIndex()) return [];
    return this.slice(i, this.lastIndex() + 1, maxSize);
  }

  allEntries(): Entry[] {
    return this.entries(this.firstIndex(), NO_LIMIT);
  }

  /** Raft §5.4.1: is a log ending at (lasti, term) at least as up to date as ours? */
  isUpToDate(lasti: number, term: number): boolean {
    const lt = this.lastTerm();
    return term > lt || (term === lt && lasti >= this.lastIndex());
  }

  /**
   * Commits maxIndex if its term is `term` (Raft §5.4.2: a leader only
   * commits entries of its own term by counting replicas).
   */
  maybeCommit(maxIndex: number, term: number): boolean {
    if (maxIndex > this.committed && this.zeroTermOnOutOfBounds(maxIndex) === term) {
      this.commitTo(maxIndex);
      return true;
    }
    return false;
  }

  restore(s: Snapshot): void {
    this.committed = s.metadata.index;
    this.unstable.restore(s);
  }

  /** Entries [lo, hi), at most maxSize bytes but at least one. Throws CompactedError below firstIndex. */
  slice(lo: number, hi: number, maxSize: number): Entry[] {
    this.mustCheckOutOfBounds(lo, hi);
    if (lo === hi) return [];
    const off = this.unstable.offset;
    let ents: Entry[] = [];
    if (lo < off) {
      const stHi = Math.min(hi, off);
      const stored = this.storage.entries(lo, stHi, maxSize);
      // Cut short by the size limit: the unstable part cannot follow.
      if (stored.length < stHi - lo) return stored;
      ents = stored;
    }
    if (hi > off) {
      const uns = this.unstable.slice(Math.max(lo, off), hi);
      if (ents.length > 0) {
        const combined = ents.slice();
        for (let k = 0; k < uns.length; k++) combined.push(uns[k] as Entry);
        ents = combined;
      } else {
        ents = uns;
      }
    }
    return limitSize(ents, maxSize);
  }

  private mustCheckOutOfBounds(lo: number, hi: number): void {
    if (!(lo <= hi)) assert(false, `raft: invalid slice ${lo} > ${hi}`);
    const fi = this.firstIndex();
    if (lo < fi) throw new CompactedError();
    const length = this.lastIndex() + 1 - fi;
    if (!(hi <= fi + length)) assert(false, `raft: slice[${lo},${hi}) out of bound [${fi},${this.lastIndex()}]`);
  }
}
