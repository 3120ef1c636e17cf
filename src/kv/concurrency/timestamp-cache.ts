/**
 * The timestamp cache: the highest timestamp at which each key span has been
 * read on this leaseholder (CockroachDB's kv/kvserver/tscache). A write to a
 * key must land above every read already served there, or it would change
 * history under that read: the replica asks getMax(span) and pushes the
 * write's timestamp above the answer (unless the answer is the writer's own
 * read, which the txnId lets it tell).
 *
 * Structure. A set of disjoint half-open segments [start, end) → {ts, txnId},
 * kept sorted in a SegmentIndex (a two-level B+tree: ~log2 n key comparisons
 * to find a key), plus a low-water mark that stands for every key not
 * covered (and for everything forgotten):
 *
 *     low water 5 ─────────────────────────────────────────────
 *        a        c           f     g
 *        [  9,t1  )           [ 12  )
 *
 * add(span, ts, txn) splits the segments it partly covers and raises the
 * covered parts to max(old, new); where two different transactions read at
 * the same highest timestamp the segment keeps no txnId (neither may ignore
 * it). Keys are stored as latin1 strings (see segment-index.ts). A point
 * key k is stored as [k, k\x00); re-reading exactly a stored
 * segment updates it in place. Both operations cost O(log n + k) comparisons
 * for k overlapped segments (plus a bounded memmove inside one chunk).
 *
 * Low-water mark. setLowWater(ts) raises it (it never falls) and drops the
 * segments at or below it. A new leaseholder must set it to the lease start
 * (DESIGN.md §6, "Timestamp cache after a lease transfer"): it does not know
 * what the previous holder served, so every key counts as read up to there.
 *
 * Bounded memory. When the entries' estimated size passes the budget, the
 * lowest-timestamp segments are evicted until a quarter of the budget is
 * free, and the low-water mark rises to the highest evicted timestamp, so no
 * read is ever lost: getMax may answer more than the exact maximum (a
 * spurious push), never less. Eviction sorts the segments (O(n log n)) but
 * frees a quarter of them, so it costs O(log n) amortized per add.
 *
 * Invariants: segments are disjoint and non-empty; every segment's ts is
 * above the low-water mark. Ownership: the cache keeps no reference to the
 * caller's Buffers (its keys are strings), so a long-lived entry never pins a
 * request frame the key was sliced from.
 */
import { assert } from '../../util/assert.js';
import { compareTimestamps, formatTimestamp, ZERO_TIMESTAMP, type Timestamp } from '../../util/hlc.js';
import { SegmentIndex, type KeyString, type SegmentPos } from './segment-index.js';
import { formatSpan, type Span } from './span-set.js';

/** A transaction's identity as the timestamp cache and the txn wait queue key it (compared by value; e.g. the id's hex). */
export type TxnId = string;

/** The TxnId of a transaction id's bytes (storage's TxnMeta.id). */
export function txnIdOf(id: Buffer): TxnId {
  return id.toString('hex');
}

export interface ReadSummary {
  readonly ts: Timestamp;
  /** The single transaction that read at ts; undefined when none or several. */
  readonly txnId?: TxnId;
}

interface Segment {
  readonly key: KeyString;
  readonly endKey: KeyString;
  /** Mutable: raised in place when a read covers exactly this segment. */
  ts: Timestamp;
  txnId: TxnId | undefined;
}

/** Estimated bytes of one segment beyond its keys (objects, timestamp, chunk slot). */
const ENTRY_OVERHEAD = 120;

export interface TimestampCacheOptions {
  /** Estimated bytes the entries may take before the oldest are evicted (default 64 MiB). */
  readonly maxBytes?: number;
  /** The initial low-water mark (default zero). */
  readonly lowWater?: Timestamp;
  /** The index's chunk size (default 128); a knob tests randomize. */
  readonly chunkSize?: number;
}

export interface TimestampCacheMetrics {
  readonly entries: number;
  readonly bytes: number;
  readonly evictions: number;
  readonly lowWater: Timestamp;
}

function sizeOf(s: Segment): number {
  return s.key.length + s.endKey.length + ENTRY_OVERHEAD;
}

/** Whether s is exactly the point segment [k, k\x00). */
function isPointSegment(s: Segment, k: KeyString): boolean {
  const e = s.endKey;
  return e.length === k.length + 1 && e.charCodeAt(k.length) === 0 && s.key === k && e.startsWith(k);
}

export class TimestampCache {
  private readonly index: SegmentIndex<Segment>;
  private low: Timestamp;
  /** The highest timestamp ever added or set as the low-water mark (see maxRead). */
  private high: Timestamp;
  private bytes = 0;
  private evictions = 0;
  private readonly maxBytes: number;

  constructor(opts: TimestampCacheOptions = {}) {
    this.maxBytes = opts.maxBytes ?? 64 << 20;
    this.index = new SegmentIndex(opts.chunkSize);
    this.low = opts.lowWater ?? ZERO_TIMESTAMP;
    this.high = this.low;
    assert(this.maxBytes > 0, 'timestamp-cache: budget must be positive');
  }

  get lowWater(): Timestamp {
    return this.low;
  }

  /** Records that `span` was read at `ts` (by `txnId`, when transactional). */
  add(span: Span, ts: Timestamp, txnId?: TxnId): void {
    if (compareTimestamps(ts, this.low) <= 0) return;
    if (compareTimestamps(ts, this.high) > 0) this.high = ts;
    const start = span.key.toString('latin1');
    const spanEnd = span.endKey == null ? null : span.endKey.toString('latin1');
    const pos: SegmentPos = this.index.seek(start);
    const old: Segment[] = [];
    this.index.forEachOverlap(start, spanEnd, (s) => void old.push(s), pos);
    // Fast path: one segment covers exactly the span, or covers it with a value at least as high.
    if (old.length === 1) {
      const s = old[0] as Segment;
      const exact = spanEnd === null ? isPointSegment(s, start) : s.key === start && s.endKey === spanEnd;
      const c = compareTimestamps(s.ts, ts);
      if (exact || ((c > 0 || (c === 0 && s.txnId === txnId)) && s.key <= start && (spanEnd === null || s.endKey >= spanEnd))) {
        if (c < 0) {
          s.ts = ts;
          s.txnId = txnId;
        } else if (c === 0 && s.txnId !== txnId) s.txnId = undefined;
        return;
      }
    }
    const end = spanEnd ?? start + '\x00';
    assert(start < end, 'timestamp-cache: empty span');
    const pieces: Segment[] = [];
    const push = (key: KeyString, endKey: KeyString, t: Timestamp, id: TxnId | undefined): void => {
      const last = pieces[pieces.length - 1];
      // Coalesce with an adjacent piece of the same value.
      if (last !== undefined && last.txnId === id && compareTimestamps(last.ts, t) === 0 && last.endKey === key) {
        pieces[pieces.length - 1] = { key: last.key, endKey, ts: t, txnId: id };
        return;
      }
      pieces.push({ key, endKey, ts: t, txnId: id });
    };
    let cursor = start;
    for (const s of old) {
      if (s.key < start) push(s.key, start, s.ts, s.txnId);
      else if (cursor < s.key) push(cursor, s.key, ts, txnId);
      const from = s.key < start ? start : s.key;
      const to = s.endKey > end ? end : s.endKey;
      const c = compareTimestamps(s.ts, ts);
      if (c > 0) push(from, to, s.ts, s.txnId);
      else if (c < 0) push(from, to, ts, txnId);
      else push(from, to, ts, s.txnId === txnId ? txnId : undefined);
      cursor = to;
      if (s.endKey > end) push(end, s.endKey, s.ts, s.txnId);
    }
    if (cursor < end) push(cursor, end, ts, txnId);
    this.index.splice(pos, old.length, pieces);
    for (const s of old) this.bytes -= sizeOf(s);
    for (const p of pieces) this.bytes += sizeOf(p);
    if (this.bytes > this.maxBytes) this.evict();
  }

  /** The highest read timestamp over `span` (at least the low-water mark). */
  getMax(span: Span): ReadSummary {
    let best = this.low;
    let id: TxnId | undefined;
    // Segments are all above the low-water mark, which has no owner.
    const visit = (s: Segment): void => {
      const c = compareTimestamps(s.ts, best);
      if (c > 0) {
        best = s.ts;
        id = s.txnId;
      } else if (c === 0 && id !== s.txnId) id = undefined;
    };
    this.index.forEachOverlap(span.key.toString('latin1'), span.endKey == null ? null : span.endKey.toString('latin1'), visit);
    return id !== undefined ? { ts: best, txnId: id } : { ts: best };
  }

  /**
   * The highest timestamp at which anything has been read here, over every
   * key (at least the low-water mark): what a leaseholder hands over with its
   * lease (CockroachDB's prior read summary, reduced to one timestamp).
   */
  maxRead(): Timestamp {
    return this.high;
  }

  /**
   * Forgets every read and sets the low-water mark to `ts`, lower than before
   * if need be. Only for a replica handed the lease with a read summary that
   * covers every read ever served on the range (a lease transfer): what this
   * cache held from earlier stints, or from a horizon it was raised to while
   * others held the lease, is covered by that summary.
   */
  reset(ts: Timestamp): void {
    this.index.filter(() => false);
    this.bytes = 0;
    this.low = ts;
    this.high = ts;
  }

  /** Raises the low-water mark (never lowers it) and forgets the reads at or below it. */
  setLowWater(ts: Timestamp): void {
    if (compareTimestamps(ts, this.low) <= 0) return;
    this.low = ts;
    if (compareTimestamps(ts, this.high) > 0) this.high = ts;
    this.index.filter((s) => {
      if (compareTimestamps(s.ts, ts) > 0) return true;
      this.bytes -= sizeOf(s);
      return false;
    });
  }

  metrics(): TimestampCacheMetrics {
    return { entries: this.index.size, bytes: this.bytes, evictions: this.evictions, lowWater: this.low };
  }

  /** Debug dump: the low-water mark and one line per segment. */
  toString(): string {
    const lines = [`low-water ${formatTimestamp(this.low)}`];
    this.index.forEach((s) => lines.push(`${formatSpan({ key: Buffer.from(s.key, 'latin1'), endKey: Buffer.from(s.endKey, 'latin1') })} ${formatTimestamp(s.ts)}${s.txnId === undefined ? '' : ` txn=${s.txnId}`}`));
    return lines.join('\n');
  }

  /** Test hook: checks the invariants; returns the entry count. */
  check(): number {
    let bytes = 0;
    this.index.forEach((s) => {
      assert(compareTimestamps(s.ts, this.low) > 0, 'timestamp-cache: segment at or below the low-water mark');
      bytes += sizeOf(s);
    });
    assert(bytes === this.bytes, 'timestamp-cache: byte count');
    return this.index.check();
  }

  /** Evicts the lowest-timestamp segments until 3/4 of the budget is used, raising the low-water mark over them. */
  private evict(): void {
    const all: Segment[] = [];
    this.index.forEach((s) => all.push(s));
    all.sort((a, b) => compareTimestamps(a.ts, b.ts));
    const target = Math.floor((this.maxBytes * 3) / 4);
    let bytes = this.bytes;
    let i = 0;
    while (i < all.length && bytes > target) {
      const s = all[i++] as Segment;
      bytes -= sizeOf(s);
    }
    if (i === 0) return;
    this.evictions++;
    this.setLowWater((all[i - 1] as Segment).ts);
  }
}
