/**
 * Store-backed Raft storage for one replica: raft/'s Storage interface over
 * the store's engine, with the whole untruncated log tail cached in memory
 * (DESIGN.md §3: "Raft reads its log synchronously, so the store keeps each
 * replica's recent log tail in memory, rebuilt on start"). The log truncation
 * queue keeps the tail short; the cache is rebuilt from the engine by load().
 *
 * On disk (unreplicated range-ID-local keys, storage/keys.ts, each stored at
 * its MVCC metadata engine key — unversioned):
 *
 *     raftHardStateKey(r)      → hardState  (api-codec.ts)
 *     raftTruncatedStateKey(r) → truncState: entries ≤ index are gone
 *     raftLogKey(r, i)         → entry i: term:uv type:u8 data
 *
 *     index:  … truncated.index | truncated.index+1 … lastIndex
 *                 (term kept)   |  cached in `ents`, persisted
 *
 * Write protocol (the Store's Ready loop, raw-node.ts's contract): the store
 * puts the Ready's entries / hard state into ITS engine batch with
 * stageAppend / stageHardState, writes the batch (one synced write for all
 * replicas), and only then calls commitAppend so that the in-memory view
 * moves with the disk. Truncation and snapshot application work the same
 * way (stageTruncation/commitTruncation, stageSnapshot/commitSnapshot).
 *
 * snapshot(): metadata at the replica's applied index/term and the
 * configuration of its descriptor, with empty data: the Store builds the
 * real snapshot (a consistent engine snapshot of the range, streamed in
 * chunks) when it sends the MsgSnap, and re-stamps the metadata from that
 * engine snapshot so data and index always agree.
 *
 * Ownership: the Replica owns its storage; only the Store's loop writes.
 */
import { assert } from '../util/assert.js';
import type { Engine, Reader, Writer } from '../../storage/engine.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { raftHardStateKey, raftLogKey, raftTruncatedStateKey } from '../../storage/keys.js';
import {
  CompactedError,
  EMPTY_HARD_STATE,
  UnavailableError,
  limitSize,
  type ConfState,
  type Entry,
  type HardState,
  type InitialState,
  type Snapshot,
  type Storage,
} from '../../raft/types.js';
import { decodeHardState, decodeRaftEntry, decodeTruncatedState, encodeHardState, encodeRaftEntry, encodeTruncatedState } from './api-codec.js';
import type { TruncatedState } from './api.js';

const EMPTY = new Uint8Array(0);

export function raftLogEngineKey(rangeId: number, index: number): Buffer {
  return encodeMvccKey(raftLogKey(rangeId, index));
}

const TWO_POW_32 = 4294967296;

/**
 * raftLogEngineKey(rangeId, index) from the range's escaped key prefix
 * (everything before the index, computed once per replica): the log writes
 * one key per entry and truncation deletes one per entry, so the hot path
 * only escapes the index's 8 bytes (mvcc-key.ts: 0x00 → 0x00 0xFF) and
 * appends the terminator 0x00 0x01. Checked against raftLogEngineKey
 * (test/kv/raft-storage.test.ts).
 */
export function raftLogEngineKeyFrom(prefix: Buffer, index: number): Buffer {
  const hi = Math.floor(index / TWO_POW_32);
  const lo = index - hi * TWO_POW_32;
  let zeros = 0;
  for (let k = 24; k >= 0; k -= 8) {
    if (((hi >>> k) & 0xff) === 0) zeros++;
    if (((lo >>> k) & 0xff) === 0) zeros++;
  }
  const out = Buffer.allocUnsafe(prefix.length + 8 + zeros + 2);
  let o = prefix.copy(out, 0);
  for (let k = 24; k >= 0; k -= 8) {
    const b = (hi >>> k) & 0xff;
    out[o++] = b;
    if (b === 0) out[o++] = 0xff;
  }
  for (let k = 24; k >= 0; k -= 8) {
    const b = (lo >>> k) & 0xff;
    out[o++] = b;
    if (b === 0) out[o++] = 0xff;
  }
  out[o++] = 0x00;
  out[o] = 0x01;
  return out;
}

/** The escaped engine-key prefix of a range's Raft log entries (for raftLogEngineKeyFrom). */
export function raftLogEnginePrefix(rangeId: number): Buffer {
  // Index 0 encodes as 8 zero bytes, each escaped to 0x00 0xFF, then the 2-byte terminator.
  const k = raftLogEngineKey(rangeId, 0);
  return Buffer.from(k.subarray(0, k.length - 18));
}

export class ReplicaRaftStorage implements Storage {
  hardState: HardState;
  truncated: TruncatedState;
  /** Entries truncated.index+1 … lastIndex, contiguous. */
  private ents: Entry[];
  /** Set by the replica: the configuration as of the applied index. */
  confState: ConfState;
  /** Set by the replica after each apply. */
  appliedIndex = 0;
  appliedTerm = 0;
  /** Bytes of entry data cached (for the truncation queue). */
  private bytes = 0;
  /** raftLogEnginePrefix(rangeId). */
  private readonly logPrefix: Buffer;

  private constructor(
    readonly rangeId: number,
    hs: HardState,
    truncated: TruncatedState,
    ents: Entry[],
    confState: ConfState,
  ) {
    this.hardState = hs;
    this.truncated = truncated;
    this.ents = ents;
    this.confState = confState;
    this.logPrefix = raftLogEnginePrefix(rangeId);
    for (const e of ents) this.bytes += e.data.length;
  }

  /** Loads the Raft state and log of rangeId from the engine. */
  static async load(engine: Reader, rangeId: number, confState: ConfState): Promise<ReplicaRaftStorage> {
    const hsRaw = engine.getSync(encodeMvccKey(raftHardStateKey(rangeId)));
    const tsRaw = engine.getSync(encodeMvccKey(raftTruncatedStateKey(rangeId)));
    const hs = hsRaw === undefined ? EMPTY_HARD_STATE : decodeHardState(hsRaw);
    const truncated = tsRaw === undefined ? { index: 0, term: 0 } : decodeTruncatedState(tsRaw);
    const ents: Entry[] = [];
    const it = engine.iterator({ gte: raftLogEngineKey(rangeId, truncated.index + 1), lt: raftLogEngineKey(rangeId, Number.MAX_SAFE_INTEGER) });
    try {
      let next = truncated.index + 1;
      for (;;) {
        const rows = await it.nextBatch(1024);
        if (rows.length === 0) break;
        for (const row of rows) {
          // Entries are contiguous; anything after a gap is garbage of an
          // interrupted overwrite and is ignored (it is deleted on the next append).
          const e = decodeRaftEntry(next, Buffer.from(row.value));
          ents.push(e);
          next++;
        }
      }
    } finally {
      await it.close();
    }
    return new ReplicaRaftStorage(rangeId, hs, truncated, ents, confState);
  }

  /** An empty storage (tests): nothing truncated, no hard state. */
  static empty(rangeId: number, confState: ConfState): ReplicaRaftStorage {
    return new ReplicaRaftStorage(rangeId, EMPTY_HARD_STATE, { index: 0, term: 0 }, [], confState);
  }

  initialState(): InitialState {
    return { hardState: this.hardState, confState: this.confState };
  }

  entries(lo: number, hi: number, maxSize: number): Entry[] {
    const off = this.truncated.index;
    if (lo <= off) throw new CompactedError();
    assert(hi <= this.lastIndex() + 1, `kv: raft entries hi(${hi}) is out of bound lastindex(${this.lastIndex()})`);
    if (this.ents.length === 0) throw new UnavailableError();
    return limitSize(this.ents.slice(lo - off - 1, hi - off - 1), maxSize);
  }

  term(i: number): number {
    const off = this.truncated.index;
    if (i < off) throw new CompactedError();
    if (i === off) return this.truncated.term;
    const e = this.ents[i - off - 1];
    if (e === undefined) throw new UnavailableError();
    return e.term;
  }

  lastIndex(): number {
    return this.truncated.index + this.ents.length;
  }

  firstIndex(): number {
    return this.truncated.index + 1;
  }

  snapshot(): Snapshot {
    return { data: EMPTY, metadata: { index: this.appliedIndex, term: this.appliedTerm, confState: this.confState } };
  }

  /** Entries cached. */
  get entryCount(): number {
    return this.ents.length;
  }

  /** Bytes of entry data cached. */
  get logBytes(): number {
    return this.bytes;
  }

  // ---- write protocol -------------------------------------------------------------

  /**
   * Writes `entries` (contiguous, ascending, possibly overlapping the tail)
   * into `batch`, deleting any old entries beyond the new last index.
   */
  stageAppend(batch: Writer, entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = (entries[0] as Entry).index;
    const newLast = first + entries.length - 1;
    for (const e of entries) {
      if (e.index <= this.truncated.index) continue;
      batch.put(raftLogEngineKeyFrom(this.logPrefix, e.index), encodeRaftEntry(e));
    }
    for (let i = newLast + 1; i <= this.lastIndex(); i++) batch.delete(raftLogEngineKeyFrom(this.logPrefix, i));
  }

  /** After the batch of stageAppend is durable. */
  commitAppend(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const e0 = entries[0] as Entry;
    const last = e0.index + entries.length - 1;
    if (last <= this.truncated.index) return;
    let start = 0;
    if (e0.index <= this.truncated.index) start = this.truncated.index + 1 - e0.index;
    const from = (entries[start] as Entry).index;
    const keep = from - this.truncated.index - 1;
    assert(keep <= this.ents.length, `kv: raft log gap appending at ${from} after ${this.lastIndex()}`);
    for (let k = keep; k < this.ents.length; k++) this.bytes -= (this.ents[k] as Entry).data.length;
    this.ents.length = keep;
    for (let k = start; k < entries.length; k++) {
      const e = entries[k] as Entry;
      this.ents.push(e);
      this.bytes += e.data.length;
    }
  }

  stageHardState(batch: Writer, hs: HardState): void {
    batch.put(encodeMvccKey(raftHardStateKey(this.rangeId)), encodeHardState(hs));
  }

  commitHardState(hs: HardState): void {
    this.hardState = hs;
  }

  /** Deletes entries ≤ ts.index and records the truncated state. No-op if not newer. */
  stageTruncation(batch: Writer, ts: TruncatedState): void {
    if (ts.index <= this.truncated.index) return;
    const hi = Math.min(ts.index, this.lastIndex());
    for (let i = this.truncated.index + 1; i <= hi; i++) batch.delete(raftLogEngineKeyFrom(this.logPrefix, i));
    batch.put(encodeMvccKey(raftTruncatedStateKey(this.rangeId)), encodeTruncatedState(ts));
  }

  commitTruncation(ts: TruncatedState): void {
    if (ts.index <= this.truncated.index) return;
    const drop = Math.min(ts.index - this.truncated.index, this.ents.length);
    for (let k = 0; k < drop; k++) this.bytes -= (this.ents[k] as Entry).data.length;
    this.ents = this.ents.slice(drop);
    this.truncated = ts;
  }

  /** A snapshot at (index, term) replaces the whole log. */
  stageSnapshot(batch: Writer, index: number, term: number): void {
    for (let i = this.truncated.index + 1; i <= this.lastIndex(); i++) batch.delete(raftLogEngineKeyFrom(this.logPrefix, i));
    batch.put(encodeMvccKey(raftTruncatedStateKey(this.rangeId)), encodeTruncatedState({ index, term }));
  }

  commitSnapshot(index: number, term: number, confState: ConfState): void {
    this.ents = [];
    this.bytes = 0;
    this.truncated = { index, term };
    this.appliedIndex = index;
    this.appliedTerm = term;
    this.confState = confState;
  }
}

/** Writes the initial Raft state of a bootstrapped range (truncated at `index`/`term`). */
export async function writeInitialRaftState(engine: Engine, rangeId: number, index: number, term: number): Promise<void> {
  const b = engine.newBatch();
  b.put(encodeMvccKey(raftTruncatedStateKey(rangeId)), encodeTruncatedState({ index, term }));
  b.put(encodeMvccKey(raftHardStateKey(rangeId)), encodeHardState({ term, vote: 0, commit: index }));
  await engine.write(b, { sync: true });
}
