/**
 * sql/exec/operators.ts — pull-based operators over batches of rows.
 *
 *   open(plan) → RowIter;  await iter.next() → Datum[][] (a batch) | null (done)
 *
 * Every operator pulls batches from its input and hands back a batch, so
 * the per-row cost is a closure call, and KV reads are batched: a point
 * lookup of an IN list is one batch of gets, a span is read in chunks of
 * rows (the pushed-down LIMIT, else growing from 128 to 8192 rows per round
 * trip, each capped at 4 MiB by targetBytes).
 *
 * Mutations (INSERT/UPDATE/DELETE) are in mutation.ts; they drain their input
 * through these operators and write one KV batch per statement.
 *
 * Cancellation: `ctx.checkCancel()` runs between batches and every 1024 rows
 * of filters, so a long scan stops promptly with 57014.
 */
import { assertNever } from '../../src/util/assert.js';
import { prefixEnd, compareBytes } from '../../storage/encoding/index.js';
import { KVBatch } from '../kv.js';
import type { Datum } from '../sem/datum.js';
import type { EvalEnv, EvalFn } from '../sem/expr.js';
import type { FilterNode, LimitNode, PlanNode, ProjectNode, ScanNode, SortNode, ValuesNode } from '../plan/plan-node.js';
import type { SqlTxn } from './sql-txn.js';
import { openQueryNode } from './query-operators.js';
import { queryMemory, rowBytes } from './memory-budget.js';

export type Row = Datum[];

export interface ExecCtx {
  readonly txn: SqlTxn;
  readonly env: EvalEnv;
  checkCancel(): void;
}

export interface RowIter {
  next(): Promise<Row[] | null>;
}

const NO_ROW: readonly Datum[] = [];
const FIRST_CHUNK = 128;
const MAX_CHUNK = 8192;
/**
 * The first chunk of a scan whose consumer reads every row (ScanNode.readsAll),
 * growing as usual to MAX_CHUNK. Not larger: one 65,536-row answer cost more
 * CPU (garbage collection of the whole answer at once) than three round trips.
 */
const DRAIN_CHUNK = 1024;
const TARGET_BYTES = 4 << 20;

export function open(node: PlanNode, ctx: ExecCtx): RowIter {
  switch (node.kind) {
    case 'scan':
      if (node.spans.kind === 'points') return new PointScan(node, ctx);
      return isUniqueIndexPoint(node) ? new UniqueIndexPointScan(node, ctx) : new RangeScan(node, ctx);
    case 'values':
      return new ValuesIter(node, ctx);
    case 'filter':
      return new FilterIter(node, ctx);
    case 'sort':
      return new SortIter(node, ctx);
    case 'limit':
      return new LimitIter(node, ctx);
    case 'project':
      return new ProjectIter(node, ctx);
    case 'insert':
    case 'update':
    case 'delete':
      throw new Error('exec: mutations are run by mutation.ts');
    case 'hash-join':
    case 'lookup-join':
    case 'aggregate':
    case 'distinct':
    case 'set-op':
    case 'subqueries':
    case 'recursive-cte':
    case 'working-table':
    case 'window':
    case 'apply':
    case 'project-set':
      return openQueryNode(node, ctx);
    default:
      return assertNever(node);
  }
}

function decodeRow(node: ScanNode, key: Buffer, value: Buffer): Row {
  if (node.index === undefined) return decodePrimaryRow(node, key, value);
  const row: Row = new Array(node.columns.length).fill(null);
  node.index.codec.decodeEntry(key, value, row);
  return row;
}

/** A row of the table's primary index (what a scan of it, or an index join, reads). */
function decodePrimaryRow(node: ScanNode, key: Buffer, value: Buffer): Row {
  const row: Row = new Array(node.columns.length).fill(null);
  node.table.codec.decodeKey(key, row);
  node.table.codec.decodeValue(value, row, node.needed);
  return row;
}

/**
 * Index join: the primary rows of index entries decoded by `decodeRow`, in
 * entry order, read with one batch of gets (rows gone since are dropped).
 */
async function indexJoin(node: ScanNode, ctx: ExecCtx, entries: Row[]): Promise<Row[]> {
  if (entries.length === 0) return entries;
  const codec = node.table.codec;
  return getRows(node, ctx, entries.map((r) => codec.encodeKey(r)), decodePrimaryRow);
}

class PointScan implements RowIter {
  private done = false;
  constructor(
    private readonly node: ScanNode,
    private readonly ctx: ExecCtx,
  ) {}

  async next(): Promise<Row[] | null> {
    if (this.done) return null;
    this.done = true;
    const { node, ctx } = this;
    if (node.spans.kind !== 'points') return null;
    const codec = node.table.codec;
    let keys: Buffer[] = [];
    for (const fns of node.spans.keys) {
      const vals: Datum[] = new Array(fns.length);
      let isNull = false;
      for (let i = 0; i < fns.length; i++) {
        const v = (fns[i] as EvalFn)(NO_ROW, ctx.env);
        if (v === null) isNull = true;
        vals[i] = v;
      }
      if (!isNull) keys.push(codec.encodeKeyPrefix(vals));
    }
    if (keys.length > 1) {
      keys.sort(compareBytes);
      keys = keys.filter((k, i) => i === 0 || !k.equals(keys[i - 1] as Buffer));
      if (node.reverse) keys.reverse();
    }
    if (keys.length === 0) return null;
    return getRows(node, ctx, keys);
  }
}

/** The rows at `keys` (primary or unique-index entries, or the primary rows of an index join), read with one batch of gets, in the keys' order; absent keys give none. */
async function getRows(node: ScanNode, ctx: ExecCtx, keys: readonly Buffer[], decode = decodeRow): Promise<Row[]> {
  const b = new KVBatch();
  for (const k of keys) b.get(k, node.lock);
  ctx.checkCancel();
  const res = await ctx.txn.run(b);
  const rows: Row[] = [];
  for (let i = 0; i < keys.length; i++) {
    const r = res[i];
    if (r?.kind === 'get' && r.value !== null) rows.push(decode(node, keys[i] as Buffer, r.value));
  }
  return rows;
}

/**
 * Equality on every key column of a unique secondary index, nothing else
 * bounding or locking the scan: each prefix matches at most one entry — the
 * short form (index-codec.ts), whose key is exactly the encoded prefix, since
 * NULL prefixes are dropped and a long-form entry has a NULL key column.
 */
function isUniqueIndexPoint(node: ScanNode): boolean {
  const ix = node.index;
  if (ix === undefined || !ix.codec.index.unique || node.lock !== 'none' || node.spans.kind !== 'range') return false;
  const { lo, hi, prefixes } = node.spans;
  const n = ix.codec.index.keyColumnIds.length;
  return lo === undefined && hi === undefined && prefixes.length > 0 && prefixes.every((p) => p.length === n);
}

/**
 * A unique-index lookup (isUniqueIndexPoint) read with one get per prefix
 * instead of a scan: the leaseholder's point-read path (replica.ts) serves
 * gets, and a get needs no span arithmetic; the index join follows as for
 * a scan. Same rows, same order as RangeScan over the same spans.
 */
class UniqueIndexPointScan implements RowIter {
  private done = false;
  constructor(
    private readonly node: ScanNode,
    private readonly ctx: ExecCtx,
  ) {}

  async next(): Promise<Row[] | null> {
    if (this.done) return null;
    this.done = true;
    const { node, ctx } = this;
    const spans = new RangeScan(node, ctx).spansToRead();
    if (spans.length === 0) return null;
    let rows = await getRows(node, ctx, spans.map((s) => s.start));
    const l = node.limit?.(NO_ROW, ctx.env);
    if (l !== undefined && l !== null && rows.length > Number(l)) rows = rows.slice(0, Number(l));
    if (node.index?.join === true) rows = await indexJoin(node, ctx, rows);
    return rows;
  }
}

class RangeScan implements RowIter {
  /** The spans still to read, in the order they are read; [0] is current. */
  private spans: { start: Buffer; end: Buffer }[] | undefined;
  private chunk: number;
  private remaining = -1;

  constructor(
    private readonly node: ScanNode,
    private readonly ctx: ExecCtx,
  ) {
    this.chunk = node.readsAll === true ? DRAIN_CHUNK : FIRST_CHUNK;
  }

  /** The spans this scan reads, in reading order (UniqueIndexPointScan reads their starts). */
  spansToRead(): { start: Buffer; end: Buffer }[] {
    return this.init();
  }

  /** Evaluates the span bounds: one [start, end) per prefix, sorted, empty ones dropped. */
  private init(): { start: Buffer; end: Buffer }[] {
    const { node, ctx } = this;
    if (node.spans.kind !== 'range') return [];
    const codec = node.index !== undefined ? node.index.codec : node.table.codec;
    const { lo, hi } = node.spans;
    const loV = lo?.fn(NO_ROW, ctx.env);
    const hiV = hi?.fn(NO_ROW, ctx.env);
    if (loV === null || hiV === null) return [];
    const out: { start: Buffer; end: Buffer }[] = [];
    for (const fns of node.spans.prefixes) {
      const prefix: Datum[] = [];
      for (const f of fns) prefix.push(f(NO_ROW, ctx.env));
      if (prefix.some((v) => v === null)) continue;
      const prefixKey = codec.encodeKeyPrefix(prefix);
      let start = prefixKey;
      let end = prefixEnd(prefixKey);
      if (lo !== undefined) {
        const k = codec.encodeKeyPrefix([...prefix, loV as Datum]);
        start = lo.inclusive ? k : prefixEnd(k);
      }
      if (hi !== undefined) {
        const k = codec.encodeKeyPrefix([...prefix, hiV as Datum]);
        end = hi.inclusive ? prefixEnd(k) : k;
      }
      if (compareBytes(start, end) < 0) out.push({ start, end });
    }
    // Prefixes are distinct values of the leading columns: their spans do not overlap.
    out.sort((x, y) => compareBytes(x.start, y.start));
    const dedup = out.filter((s, i) => i === 0 || !s.start.equals((out[i - 1] as { start: Buffer }).start));
    if (node.reverse) dedup.reverse();
    if (node.limit !== undefined) {
      const l = node.limit(NO_ROW, ctx.env);
      if (l !== null) {
        this.remaining = Number(l);
        if (this.remaining === 0) return [];
      }
    }
    return dedup;
  }

  async next(): Promise<Row[] | null> {
    if (this.spans === undefined) this.spans = this.init();
    const span = this.spans[0];
    if (span === undefined) return null;
    const { node, ctx } = this;
    const limit = this.remaining >= 0 ? this.remaining : this.chunk;
    const b = new KVBatch();
    const opts = { limit, targetBytes: TARGET_BYTES, lock: node.lock };
    if (node.reverse) b.reverseScan(span.start, span.end, opts);
    else b.scan(span.start, span.end, opts);
    ctx.checkCancel();
    const [res] = await ctx.txn.run(b);
    if (res?.kind !== 'scan') throw new Error('exec: unexpected scan result');
    let rows: Row[] = new Array(res.rows.length);
    for (let i = 0; i < res.rows.length; i++) {
      const kv = res.rows[i] as { key: Buffer; value: Buffer };
      rows[i] = decodeRow(node, kv.key, kv.value);
    }
    if (node.index?.join === true) rows = await indexJoin(node, ctx, rows);
    if (this.remaining >= 0) this.remaining -= rows.length;
    if (this.remaining === 0) this.spans.length = 0;
    else if (res.resumeKey === null) this.spans.shift();
    else if (node.reverse) span.end = res.resumeKey;
    else span.start = res.resumeKey;
    this.chunk = Math.max(this.chunk, Math.min(this.chunk * 4, MAX_CHUNK));
    return rows;
  }
}

class ValuesIter implements RowIter {
  private done = false;
  constructor(
    private readonly node: ValuesNode,
    private readonly ctx: ExecCtx,
  ) {}
  async next(): Promise<Row[] | null> {
    if (this.done) return null;
    this.done = true;
    const env = this.ctx.env;
    return this.node.rows.map((fns) => fns.map((f) => f(NO_ROW, env)));
  }
}

class FilterIter implements RowIter {
  private readonly input: RowIter;
  constructor(
    private readonly node: FilterNode,
    private readonly ctx: ExecCtx,
  ) {
    this.input = open(node.input, ctx);
  }
  async next(): Promise<Row[] | null> {
    const pred = this.node.pred;
    const env = this.ctx.env;
    for (;;) {
      const batch = await this.input.next();
      if (batch === null) return null;
      const out: Row[] = [];
      for (let i = 0; i < batch.length; i++) {
        if ((i & 1023) === 1023) this.ctx.checkCancel();
        const r = batch[i] as Row;
        if (pred(r, env) === true) out.push(r);
      }
      if (out.length > 0) return out;
    }
  }
}

class SortIter implements RowIter {
  private readonly input: RowIter;
  private done = false;
  constructor(
    private readonly node: SortNode,
    private readonly ctx: ExecCtx,
  ) {
    this.input = open(node.input, ctx);
  }
  async next(): Promise<Row[] | null> {
    if (this.done) return null;
    this.done = true;
    const env = this.ctx.env;
    const keys = this.node.keys;
    const cmp = (a: { keys: Datum[] }, b: { keys: Datum[] }): number => {
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i] as SortNode['keys'][number];
        const x = a.keys[i] as Datum;
        const y = b.keys[i] as Datum;
        if (x === null || y === null) {
          if (x === y) continue;
          return (x === null) === k.nullsFirst ? -1 : 1;
        }
        const c = k.cmp(x, y);
        if (c !== 0) return k.desc ? -c : c;
      }
      return 0;
    };
    // Top-K under a LIMIT: keep at most 2K rows, trimming to the best K when full.
    const lim = this.node.limit?.(NO_ROW, env) ?? null;
    const k = lim === null ? Infinity : Number(lim);
    let all: { row: Row; keys: Datum[] }[] = [];
    const mem = queryMemory(env);
    for (;;) {
      const b = await this.input.next();
      if (b === null) break;
      let bytes = 0;
      for (const row of b) {
        all.push({ row, keys: keys.map((key) => key.fn(row, env)) });
        bytes += rowBytes(row);
      }
      // Top-K keeps at most 2K + 128 rows; only a full sort grows with its input.
      if (k === Infinity) mem.grow(bytes, 'sort');
      if (all.length > 2 * k + 128) all = all.sort(cmp).slice(0, k);
      this.ctx.checkCancel();
    }
    all.sort(cmp);
    if (all.length > k) all.length = k;
    return all.map((x) => x.row);
  }
}

class LimitIter implements RowIter {
  private readonly input: RowIter;
  private toSkip = -1;
  private left = -1;
  constructor(
    private readonly node: LimitNode,
    private readonly ctx: ExecCtx,
  ) {
    this.input = open(node.input, ctx);
  }
  async next(): Promise<Row[] | null> {
    if (this.toSkip < 0) {
      const env = this.ctx.env;
      const o = this.node.offset?.(NO_ROW, env) ?? null;
      const l = this.node.limit?.(NO_ROW, env) ?? null;
      this.toSkip = o === null ? 0 : Number(o);
      this.left = l === null ? Infinity : Number(l);
    }
    while (this.left > 0) {
      const b = await this.input.next();
      if (b === null) return null;
      let rows = b;
      if (this.toSkip > 0) {
        const skip = Math.min(this.toSkip, rows.length);
        this.toSkip -= skip;
        rows = rows.slice(skip);
      }
      if (rows.length > this.left) rows = rows.slice(0, this.left);
      this.left -= rows.length;
      if (rows.length > 0) return rows;
    }
    return null;
  }
}

class ProjectIter implements RowIter {
  private readonly input: RowIter;
  constructor(
    private readonly node: ProjectNode,
    private readonly ctx: ExecCtx,
  ) {
    this.input = open(node.input, ctx);
  }
  async next(): Promise<Row[] | null> {
    const b = await this.input.next();
    if (b === null) return null;
    return this.node.identity === true ? b : projectRows(this.node.exprs, b, this.ctx.env);
  }
}

export function projectRows(exprs: readonly EvalFn[], rows: readonly Row[], env: EvalEnv): Row[] {
  const n = exprs.length;
  const out: Row[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i] as Row;
    const o: Row = new Array(n);
    for (let j = 0; j < n; j++) o[j] = (exprs[j] as EvalFn)(r, env);
    out[i] = o;
  }
  return out;
}
