/**
 * MemoryStorage: the Storage interface (types.ts) over an in-memory array,
 * for tests, the simulation and benchmarks. The store-backed storage lives in
 * src/kv (it keeps the recent log tail in memory and the rest in LevelDB).
 *
 * Layout: `ents[0]` is a dummy entry holding the index and term of the last
 * compacted entry (the snapshot point); real entries follow contiguously.
 *
 *   ents:  [ dummy(i0,t0) | i0+1 | i0+2 | … | lastIndex ]
 *   firstIndex = i0+1, lastIndex = i0 + ents.length - 1
 *
 * Ownership: append() keeps references to the given entries (never copies
 * data); entries() returns a fresh array of shared, immutable entries.
 * Not thread-safe (there are no threads); callers serialize access.
 */
import { assert } from '../src/util/assert.js';
import {
  CompactedError,
  EMPTY_HARD_STATE,
  EMPTY_SNAPSHOT,
  EntryType,
  SnapshotOutOfDateError,
  UnavailableError,
  limitSize,
  type ConfState,
  type Entry,
  type HardState,
  type InitialState,
  type Snapshot,
  type Storage,
} from './types.js';

const EMPTY_DATA = new Uint8Array(0);

function dummy(index: number, term: number): Entry {
  return { term, index, type: EntryType.Normal, data: EMPTY_DATA };
}

export class MemoryStorage implements Storage {
  hardState: HardState = EMPTY_HARD_STATE;
  private snap: Snapshot = EMPTY_SNAPSHOT;
  private ents: Entry[] = [dummy(0, 0)];

  initialState(): InitialState {
    return { hardState: this.hardState, confState: this.snap.metadata.confState };
  }

  setHardState(hs: HardState): void {
    this.hardState = hs;
  }

  entries(lo: number, hi: number, maxSize: number): Entry[] {
    const offset = (this.ents[0] as Entry).index;
    if (lo <= offset) throw new CompactedError();
    if (!(hi <= this.lastIndex() + 1)) assert(false, `raft: entries' hi(${hi}) is out of bound lastindex(${this.lastIndex()})`);
    // Only the dummy entry: nothing to return.
    if (this.ents.length === 1) throw new UnavailableError();
    return limitSize(this.ents.slice(lo - offset, hi - offset), maxSize);
  }

  term(i: number): number {
    const offset = (this.ents[0] as Entry).index;
    if (i < offset) throw new CompactedError();
    if (i - offset >= this.ents.length) throw new UnavailableError();
    return (this.ents[i - offset] as Entry).term;
  }

  lastIndex(): number {
    return (this.ents[0] as Entry).index + this.ents.length - 1;
  }

  firstIndex(): number {
    return (this.ents[0] as Entry).index + 1;
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  /**
   * Sets the configuration recorded with the current snapshot point, without
   * moving it: how a new group is bootstrapped on an empty log (the first
   * entry is then index 1).
   */
  setConfState(cs: ConfState): void {
    this.snap = { data: this.snap.data, metadata: { ...this.snap.metadata, confState: cs } };
  }

  /** Replaces the storage's contents with the snapshot. */
  applySnapshot(snap: Snapshot): void {
    const cur = this.snap.metadata.index;
    if (cur >= snap.metadata.index) throw new SnapshotOutOfDateError();
    this.snap = snap;
    this.ents = [dummy(snap.metadata.index, snap.metadata.term)];
  }

  /**
   * Records a snapshot at index i (≤ lastIndex) with the given state-machine
   * data; the caller compacts separately. Throws SnapshotOutOfDateError when
   * i is not newer than the current snapshot.
   */
  createSnapshot(i: number, cs: ConfState | undefined, data: Uint8Array): Snapshot {
    if (i <= this.snap.metadata.index) throw new SnapshotOutOfDateError();
    const offset = (this.ents[0] as Entry).index;
    assert(i <= this.lastIndex(), `raft: snapshot ${i} is out of bound lastindex(${this.lastIndex()})`);
    this.snap = {
      data,
      metadata: { index: i, term: (this.ents[i - offset] as Entry).term, confState: cs ?? this.snap.metadata.confState },
    };
    return this.snap;
  }

  /** Discards entries up to and including compactIndex (which must be ≤ applied). */
  compact(compactIndex: number): void {
    const offset = (this.ents[0] as Entry).index;
    if (compactIndex <= offset) throw new CompactedError();
    assert(compactIndex <= this.lastIndex(), `raft: compact ${compactIndex} is out of bound lastindex(${this.lastIndex()})`);
    const i = compactIndex - offset;
    const e = this.ents[i] as Entry;
    const rest = this.ents.slice(i + 1);
    rest.unshift(dummy(e.index, e.term));
    this.ents = rest;
  }

  /**
   * Appends entries (contiguous, ascending). Entries at or below the
   * compaction point are ignored; an overlap with existing entries replaces
   * the existing suffix.
   */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = this.firstIndex();
    const e0 = entries[0] as Entry;
    const last = e0.index + entries.length - 1;
    if (last < first) return; // all compacted
    let start = 0;
    if (first > e0.index) start = first - e0.index;
    const from = (entries[start] as Entry).index;
    const offset = from - (this.ents[0] as Entry).index;
    if (!(offset <= this.ents.length)) assert(false, `raft: missing log entry [last: ${this.lastIndex()}, append at: ${from}]`);
    if (offset < this.ents.length) this.ents.length = offset;
    for (let k = start; k < entries.length; k++) this.ents.push(entries[k] as Entry);
  }
}
