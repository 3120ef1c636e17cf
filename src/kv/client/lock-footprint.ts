/**
 * A transaction's span footprints with a memory budget (CockroachDB's
 * condensableSpanSet, kvcoord/condensable_span_set.go): the lock footprint
 * (the spans the transaction's intents and unreplicated locks may be in —
 * what EndTxn and intent resolution must cover) and the refresh footprint
 * (the spans it read — what a refresh must re-check). Both grow with the
 * transaction: a COPY of 100,000 rows writes 100,000 keys and reads (cput)
 * as many.
 *
 *   insert(span) ─► exact spans (deduplicated), bytes += cost(span)
 *        bytes > budget ─► condense():
 *            sort + merge overlapping spans, then merge every run of spans
 *            that start in one range (the DistSender's cached descriptors;
 *            unknown ranges form one group) AND in one table's data
 *            (/Table/<id>, storage/keys.ts tableIdOf) into ONE covering span
 *            [first.key, max end)            — a point stays a point when alone;
 *            spans outside table data (system keys: descriptors, namespace,
 *            settings, the id generators, liveness) are never widened
 *
 *   point spans  a    c  d       g             (range r1 = [a, e), r2 = [e, z); all in table 52)
 *   condensed   [a ------- d+)  [g]            (d+ = keyNext(d))
 *
 *   r1 = [/Min, /Table/52/1/"user30559")      one range: system keys AND table data
 *   spans       /System/descriptor/52   /Table/52/1/"user0" … /Table/52/1/"user30000"
 *   condensed   [/System/descriptor/52]  [/Table/52/1/"user0", …"user30000"+)
 *               — never [/System/descriptor/52, …): that span would cover
 *               /System/gen/range-id (every split writes it) and
 *               /System/liveness/* (every heartbeat writes them), so every
 *               refresh of the transaction would fail.
 *
 * Why the table boundary: CockroachDB condenses per range only, but its ranges
 * never hold two tables, nor system keys and table data (static split points
 * at every table boundary). Cairn's first range holds the system keys and the
 * first table's data until the split queue splits it by size, so "per range"
 * alone let a COPY's refresh footprint — its catalog read plus 45,000 cputs —
 * condense into one span from its descriptor key to its rows; a push (the
 * split's fresh right-hand replica starts its timestamp cache ahead) then
 * needed a refresh, which met the split's own write to /System/gen/range-id
 * and failed (40001: COPY of 100,000 rows on the 3-node process cluster).
 *
 * cost(span) = key bytes + end key bytes + SPAN_OVERHEAD_BYTES (the JS
 * objects holding it): with the default 4 MiB a transaction condenses after
 * roughly 45,000 table keys.
 *
 * Invariants: every span ever inserted (since the last clear) is covered by
 * some span of spans() — condensing only widens. After condensing, a lock
 * span may cover keys the transaction never wrote: resolution of a ranged
 * span (ResolveIntentRange) touches only this transaction's intents, and a
 * refresh of one (RefreshRange) fails only on others' writes, so both stay
 * correct, only less precise (a refresh may fail that would have passed;
 * the transaction then restarts) — which is why a condensed span never
 * leaves its table's data. A set that stays over its budget after
 * condensing (spans in very many ranges or tables, or very many system
 * keys) is `overBudget`: the coordinator
 * gives up refreshing such a read set (it restarts instead), as CockroachDB
 * does when its refresh spans cannot be condensed enough.
 *
 * Settings: footprintSettings.maxIntentsBytes (kv.transaction.max_intents_bytes)
 * and maxRefreshSpansBytes (kv.transaction.max_refresh_spans_bytes), 4 MiB
 * each, process-wide and mutable as cluster settings are; read by a set
 * when it is created.
 *
 * Ownership: one set per footprint per TxnCoordSender; not shared, calls
 * never concurrent. Pure: range bounds come from an injected lookup.
 */
import { compareBytes, keyNext } from '../../../storage/encoding/bytes.js';
import { tableIdOf } from '../../../storage/keys.js';
import type { Sender } from '../kv-client.js';
import type { LockSpan } from '../txn-api.js';

/** kv.transaction.max_intents_bytes / kv.transaction.max_refresh_spans_bytes (CockroachDB's defaults). */
export const footprintSettings = {
  maxIntentsBytes: 4 << 20,
  maxRefreshSpansBytes: 4 << 20,
};

/** What one span costs beyond its key bytes (the span object and its Buffers). */
export const SPAN_OVERHEAD_BYTES = 64;

/** The cached range holding `key` (no I/O), if any. */
export type RangeBoundsOf = (key: Buffer) => { readonly startKey: Buffer; readonly endKey: Buffer } | undefined;

/** A lookup into the sender's range-descriptor cache when the sender has one (the DistSender), else undefined. */
export function cachedRangeBounds(sender: Sender): RangeBoundsOf | undefined {
  const cache = (sender as { cache?: { get?: unknown } }).cache;
  if (cache === undefined || typeof cache.get !== 'function') return undefined;
  const get = cache.get as (key: Buffer) => { readonly startKey: Buffer; readonly endKey: Buffer } | undefined;
  return (key) => get.call(cache, key);
}

function spanCost(s: LockSpan): number {
  return s.key.length + (s.endKey === null ? 0 : s.endKey.length) + SPAN_OVERHEAD_BYTES;
}

function spanId(s: LockSpan): string {
  // A point and a span never collide: the prefix tells them apart, the length where the key ends.
  return s.endKey === null ? 'p' + s.key.toString('latin1') : `r${s.key.length}:${s.key.toString('latin1')}${s.endKey.toString('latin1')}`;
}

/** The exclusive end of a span: a point [k] ends at keyNext(k). */
function endOf(s: LockSpan): Buffer {
  return s.endKey ?? keyNext(s.key);
}

export class CondensableSpanSet {
  private spansById = new Map<string, LockSpan>();
  private bytesUsed = 0;
  private condenseCount = 0;
  private over = false;

  /**
   * @param budget bytes of spans kept before condensing
   * @param rangeOf the range holding a key (cached descriptors); without it every span condenses into one
   */
  constructor(
    private readonly budget: number,
    private readonly rangeOf?: RangeBoundsOf,
  ) {}

  /** Spans held (after condensing, the covering spans). */
  get size(): number {
    return this.spansById.size;
  }

  /** Bytes the held spans cost. */
  get bytes(): number {
    return this.bytesUsed;
  }

  /** How many times the set was condensed (it covers more than what was inserted). */
  get condensations(): number {
    return this.condenseCount;
  }

  /** True once condensing could not bring the set under its budget. */
  get overBudget(): boolean {
    return this.over;
  }

  insert(s: LockSpan): void {
    const id = spanId(s);
    if (this.spansById.has(id)) return;
    this.spansById.set(id, s);
    this.bytesUsed += spanCost(s);
    if (this.bytesUsed > this.budget) this.condense();
  }

  /** The spans, in insertion order (condensed ones sorted by key). */
  spans(): LockSpan[] {
    return [...this.spansById.values()];
  }

  clear(): void {
    this.spansById.clear();
    this.bytesUsed = 0;
    this.over = false;
  }

  /** Merges the spans per range into covering spans (see the header). */
  condense(): void {
    this.condenseCount++;
    const out = condenseSpans([...this.spansById.values()], this.rangeOf);
    this.spansById = new Map();
    this.bytesUsed = 0;
    for (const s of out) {
      this.spansById.set(spanId(s), s);
      this.bytesUsed += spanCost(s);
    }
    this.over = this.bytesUsed > this.budget;
  }
}

/**
 * The condensing step on its own (exported for tests): sorted, overlapping
 * spans merged, then one covering span per run of spans that start in one
 * range and in one table's data (spans outside table data only merge where
 * they overlap).
 */
export function condenseSpans(spans: readonly LockSpan[], rangeOf?: RangeBoundsOf): LockSpan[] {
  const sorted = [...spans].sort((a, b) => compareBytes(a.key, b.key));
  const out: LockSpan[] = [];
  let cur: LockSpan | null = null;
  let curEnd: Buffer | null = null;
  let curRangeEnd: Buffer | null = null;
  let curRangeStart: Buffer | null = null;
  let curTable: number | undefined;
  for (const s of sorted) {
    const end = endOf(s);
    const table = tableIdOf(s.key);
    if (cur !== null && curEnd !== null) {
      const overlaps = compareBytes(s.key, curEnd) <= 0;
      const sameTable = table !== undefined && table === curTable;
      const sameRange =
        sameTable &&
        (curRangeStart !== null && curRangeEnd !== null ? compareBytes(s.key, curRangeStart) >= 0 && compareBytes(s.key, curRangeEnd) < 0 : rangeOf === undefined || rangeOf(s.key) === undefined);
      if (overlaps || sameRange) {
        if (compareBytes(end, curEnd) > 0) curEnd = end;
        cur = { key: cur.key, endKey: curEnd };
        continue;
      }
      out.push(cur);
    }
    cur = s;
    curEnd = end;
    curTable = table;
    const r = rangeOf?.(s.key);
    curRangeStart = r?.startKey ?? null;
    curRangeEnd = r?.endKey ?? null;
  }
  if (cur !== null) out.push(cur);
  return out;
}
