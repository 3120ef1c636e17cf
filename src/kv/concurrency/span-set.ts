/**
 * The spans a request declares, with how it accesses each (CockroachDB's
 * kv/kvserver/spanset): the input of the latch manager and of the lock table.
 *
 * A span is a point `key` (endKey absent or null) or the half-open range
 * `[key, endKey)`. Each declared span carries an access and a timestamp:
 *
 *   - a read at ts only needs writes at or below ts to be finished: it
 *     conflicts with write latches at ≤ ts (MVCC-aware latching: a write above
 *     the read's timestamp is invisible to it anyway);
 *   - a write at ts conflicts with every other write, and with reads at ≥ ts
 *     (the reads that would see it);
 *   - a span without a timestamp (non-MVCC: range-local keys, the lease, the
 *     Raft log) conflicts regardless of timestamps.
 *
 *         read@10  vs write@10 → conflict       read@10  vs write@11 → none
 *         write@10 vs write@20 → conflict       any      vs non-MVCC → by access
 *
 * Ownership: a SpanSet holds references to the key Buffers it is given; they
 * must not be mutated while the request holds latches or waits in the lock
 * table.
 */
import { compareKeys } from '../../../storage/engine.js';
import { assert } from '../../util/assert.js';
import { compareTimestamps, formatTimestamp, type Timestamp } from '../../util/hlc.js';

export type SpanAccess = 'read' | 'write';

export interface Span {
  readonly key: Buffer;
  /** Absent or null: the single key. Otherwise exclusive and > key. */
  readonly endKey?: Buffer | null;
}

export interface DeclaredSpan {
  readonly access: SpanAccess;
  readonly span: Span;
  /** Absent: a non-MVCC span, which conflicts regardless of timestamps. */
  readonly timestamp?: Timestamp;
}

export type SpanSet = readonly DeclaredSpan[];

/** The spans batcheval's commands declare (src/kv/batcheval/command.ts), by shape. */
export interface CommandSpan {
  readonly key: Buffer;
  readonly endKey: Buffer | null;
  readonly write: boolean;
}

/** Converts command-declared spans into a SpanSet at the batch timestamp (undefined: non-MVCC). */
export function spanSetFromCommandSpans(spans: readonly CommandSpan[], timestamp?: Timestamp): SpanSet {
  return spans.map((s) => (timestamp === undefined ? { access: s.write ? 'write' : 'read', span: s } : { access: s.write ? 'write' : 'read', span: s, timestamp }));
}

/** Asserts that every span is a point or a non-empty range. */
export function validateSpanSet(set: SpanSet): void {
  for (const d of set) {
    const end = d.span.endKey;
    assert(end === undefined || end === null || compareKeys(d.span.key, end) < 0, 'concurrency: span end must be above its start');
  }
}

/**
 * Whether two accesses conflict by access and timestamp alone (the spans
 * are assumed to overlap). Timestamps undefined mean non-MVCC.
 */
export function accessesConflict(a: SpanAccess, aTs: Timestamp | undefined, b: SpanAccess, bTs: Timestamp | undefined): boolean {
  if (a === 'read' && b === 'read') return false;
  if (a === 'write' && b === 'write') return true;
  if (aTs === undefined || bTs === undefined) return true;
  // One read, one write: conflict when the write is at or below the read.
  const [readTs, writeTs] = a === 'read' ? [aTs, bTs] : [bTs, aTs];
  return compareTimestamps(writeTs, readTs) <= 0;
}

/** Whether two spans share at least one key. */
export function spansOverlap(a: Span, b: Span): boolean {
  const ae = a.endKey ?? null;
  const be = b.endKey ?? null;
  // a starts before b ends and b starts before a ends (points are [k, k]).
  const c1 = compareKeys(a.key, be ?? b.key);
  if (c1 > 0 || (c1 === 0 && be !== null)) return false;
  const c2 = compareKeys(b.key, ae ?? a.key);
  return !(c2 > 0 || (c2 === 0 && ae !== null));
}

/** Printable form of a key: printable ASCII as is, anything else in hex. */
export function formatKey(k: Buffer): string {
  for (const b of k) if (b < 0x20 || b > 0x7e) return `0x${k.toString('hex')}`;
  return k.toString('latin1');
}

export function formatSpan(s: Span): string {
  const e = s.endKey ?? null;
  return e === null ? formatKey(s.key) : `[${formatKey(s.key)},${formatKey(e)})`;
}

export function formatDeclaredSpan(d: DeclaredSpan): string {
  return `${d.access} ${formatSpan(d.span)}${d.timestamp === undefined ? '' : `@${formatTimestamp(d.timestamp)}`}`;
}
