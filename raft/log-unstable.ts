/**
 * Unstable: the entries (and possibly one snapshot) that the Raft state
 * machine has accepted but that are not yet known to be durable in Storage.
 *
 *        storage (stable)            unstable
 *   … ─────────────────────┤ offset ───────────── offset+len-1
 *                                 ├ offsetInProgress
 *   entries [offset, offsetInProgress) were handed to the caller in a Ready
 *   and are being persisted; entries from offsetInProgress on are new.
 *
 * Invariants: offset ≤ offsetInProgress ≤ offset + entries.length; when a
 * snapshot is present, offset = snapshot.index + 1.
 *
 * Entries are kept in one array; stableTo drops the persisted prefix
 * (usually the whole array, replaced by an empty one — no copy).
 */
import { assert } from '../src/util/assert.js';
import type { Entry, Snapshot } from './types.js';

export class Unstable {
  snapshot: Snapshot | null = null;
  entries: Entry[] = [];
  offset: number;
  snapshotInProgress = false;
  offsetInProgress: number;

  constructor(offset: number) {
    this.offset = offset;
    this.offsetInProgress = offset;
  }

  /** The first index if there is a snapshot (snapshot.index + 1). */
  maybeFirstIndex(): number | undefined {
    return this.snapshot === null ? undefined : this.snapshot.metadata.index + 1;
  }

  maybeLastIndex(): number | undefined {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    if (this.snapshot !== null) return this.snapshot.metadata.index;
    return undefined;
  }

  /** The term of entry i if this unstable part knows it. */
  maybeTerm(i: number): number | undefined {
    if (i < this.offset) {
      if (this.snapshot !== null && this.snapshot.metadata.index === i) return this.snapshot.metadata.term;
      return undefined;
    }
    const k = i - this.offset;
    if (k >= this.entries.length) return undefined;
    return (this.entries[k] as Entry).term;
  }

  /** Entries not yet handed out for persistence (a fresh array). */
  nextEntries(): Entry[] {
    const inProgress = this.offsetInProgress - this.offset;
    if (inProgress >= this.entries.length) return [];
    return this.entries.slice(inProgress);
  }

  hasNextEntries(): boolean {
    return this.offsetInProgress - this.offset < this.entries.length;
  }

  nextSnapshot(): Snapshot | null {
    if (this.snapshot === null || this.snapshotInProgress) return null;
    return this.snapshot;
  }

  /** Marks everything currently unstable as handed out for persistence. */
  acceptInProgress(): void {
    if (this.entries.length > 0) this.offsetInProgress = this.offset + this.entries.length;
    if (this.snapshot !== null) this.snapshotInProgress = true;
  }

  /** Entries ≤ i with term t are durable now. Ignored when the entry changed meanwhile. */
  stableTo(i: number, t: number): void {
    const gt = this.maybeTerm(i);
    if (gt === undefined || gt !== t || i < this.offset) return; // snapshot index, stale, or replaced
    const n = i + 1 - this.offset;
    this.entries = n >= this.entries.length ? [] : this.entries.slice(n);
    this.offset = i + 1;
    if (this.offsetInProgress < this.offset) this.offsetInProgress = this.offset;
  }

  stableSnapTo(i: number): void {
    if (this.snapshot !== null && this.snapshot.metadata.index === i) {
      this.snapshot = null;
      this.snapshotInProgress = false;
    }
  }

  restore(s: Snapshot): void {
    this.offset = s.metadata.index + 1;
    this.offsetInProgress = this.offset;
    this.entries = [];
    this.snapshot = s;
    this.snapshotInProgress = false;
  }

  truncateAndAppend(ents: readonly Entry[]): void {
    const from = (ents[0] as Entry).index;
    if (from === this.offset + this.entries.length) {
      // The common case: a direct continuation.
      for (let k = 0; k < ents.length; k++) this.entries.push(ents[k] as Entry);
    } else if (from <= this.offset) {
      // Replace everything unstable (the log is truncated to before `from`).
      this.entries = ents.slice();
      this.offset = from;
      this.offsetInProgress = this.offset;
    } else {
      // Truncate to from-1, then append.
      this.entries = this.slice(this.offset, from);
      for (let k = 0; k < ents.length; k++) this.entries.push(ents[k] as Entry);
      if (this.offsetInProgress > from) this.offsetInProgress = from;
    }
  }

  /** Entries [lo, hi) (a fresh array). */
  slice(lo: number, hi: number): Entry[] {
    if (!(lo <= hi && lo >= this.offset && hi <= this.offset + this.entries.length)) assert(false, `raft: unstable.slice[${lo},${hi}) out of bound [${this.offset},${this.offset + this.entries.length}]`);
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}
