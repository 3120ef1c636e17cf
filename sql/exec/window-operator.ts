/**
 * sql/exec/window-operator.ts — evaluates the window functions of one window
 * (plan/query-nodes.ts WindowNode).
 *
 * Buffers its whole input (charged to the query memory budget), splits it
 * into partitions by the PARTITION BY key (first-seen order), sorts each
 * partition by the window's ORDER BY (stable), then appends one value per
 * function to every row. Peers (rows equal on the ORDER BY keys) share rank.
 *
 * Frames (PostgreSQL 15 semantics): each row's frame is a half-open range
 * [start, end) of the sorted partition, minus the EXCLUDEd rows:
 *   ROWS    n PRECEDING/FOLLOWING count rows from the current one;
 *   GROUPS  count peer groups; CURRENT ROW is the current peer group's edge;
 *   RANGE   CURRENT ROW is the peer group's edge; an offset moves the
 *           current row's key (the one ORDER BY column): the frame holds the
 *           rows whose key lies within; a NULL key's frame is its NULL peers.
 * The default frame is RANGE UNBOUNDED PRECEDING … CURRENT ROW. Aggregates
 * whose frames only grow (start fixed at the partition start, no EXCLUDE)
 * run incrementally; others recompute per row, reusing the previous result
 * when the frame did not move — O(rows × frame) for sliding frames.
 */
import type { Datum } from '../sem/datum.js';
import type { EvalEnv } from '../sem/expr.js';
import { rowKey } from '../types/compare.js';
import type { FrameBoundSpec, WindowFrameSpec, WindowFuncSpec, WindowNode } from '../plan/query-nodes.js';
import { SqlError } from '../parser/sql-error.js';
import { assertNever } from '../../src/util/assert.js';
import { Decimal } from '../types/decimal.js';
import { Interval } from '../types/interval.js';
import type { ExecCtx, Row, RowIter } from './operators.js';
import { queryMemory } from './memory-budget.js';
import { drain } from './query-operators.js';
import { compareSortKeys, newAggState } from './aggregate-state.js';

export class WindowIter implements RowIter {
  private done = false;
  constructor(
    private readonly node: WindowNode,
    private readonly ctx: ExecCtx,
  ) {}

  async next(): Promise<Row[] | null> {
    if (this.done) return null;
    this.done = true;
    const { node, ctx } = this;
    const env = ctx.env;
    const mem = queryMemory(env);
    const rows = await drain(node.input, ctx, mem, 'window');
    const parts = new Map<string, Row[]>();
    for (const r of rows) {
      const k = node.partition.length === 0 ? '' : rowKey(node.partition.map((f) => f(r, env)), node.partitionTypes);
      let p = parts.get(k);
      if (p === undefined) parts.set(k, (p = []));
      p.push(r);
    }
    const out: Row[] = [];
    for (const part of parts.values()) {
      const keyed = part.map((row) => ({ row, keys: node.order.map((o) => o.fn(row, env)) }));
      if (node.order.length > 0) keyed.sort((a, b) => compareKeys(node, a.keys, b.keys));
      const sorted = keyed.map((k) => k.row);
      // Peer group of each row: [start, end) in sorted order.
      const peerEnd: number[] = new Array(sorted.length);
      const peerStart: number[] = new Array(sorted.length);
      for (let i = 0; i < sorted.length; ) {
        let j = i + 1;
        if (node.order.length > 0) while (j < sorted.length && compareKeys(node, (keyed[i] as { keys: Datum[] }).keys, (keyed[j] as { keys: Datum[] }).keys) === 0) j++;
        else j = sorted.length;
        for (let x = i; x < j; x++) {
          peerStart[x] = i;
          peerEnd[x] = j;
        }
        i = j;
      }
      const frames = frameBounds(node, sorted, keyed, peerStart, peerEnd, env);
      const results = node.funcs.map((f) => evalFunc(f, sorted, peerStart, frames, env, mem));
      sorted.forEach((row, i) => out.push(row.concat(results.map((r) => r[i] as Datum))));
    }
    return out.length > 0 ? out : null;
  }
}

function compareKeys(node: WindowNode, a: readonly Datum[], b: readonly Datum[]): number {
  return compareSortKeys(node.order, a, b);
}

/** Each row's frame [start[i], end[i]) in the sorted partition, and what EXCLUDE removes. */
interface Frames {
  readonly start: Int32Array;
  readonly end: Int32Array;
  readonly exclude: WindowFrameSpec['exclude'];
  readonly peerStart: readonly number[];
  readonly peerEnd: readonly number[];
  /** Frames start at the partition start and never shrink (a running aggregate is exact). */
  readonly growing: boolean;
}

function frameBounds(node: WindowNode, rows: readonly Row[], keyed: readonly { keys: Datum[] }[], peerStart: readonly number[], peerEnd: readonly number[], env: EvalEnv): Frames {
  const n = rows.length;
  const start = new Int32Array(n);
  const end = new Int32Array(n);
  const f = node.frame;
  if (f === undefined) {
    for (let i = 0; i < n; i++) end[i] = peerEnd[i] as number;
    return { start, end, exclude: 'no others', peerStart, peerEnd, growing: true };
  }
  const offsetOf = (b: FrameBoundSpec, what: string): Datum => {
    if (b.offset === undefined || n === 0) return null;
    const v = b.offset(rows[0] as Row, env);
    if (v === null) throw new SqlError('sql.null_value_not_allowed', '22004', `frame ${what} offset must not be null`);
    if (f.mode === 'range' ? isNegative(v) : BigInt(v as bigint) < 0n) {
      throw new SqlError('sql.invalid_preceding_or_following_size', '22013', f.mode === 'range' ? 'invalid preceding or following size in window function' : `frame ${what} offset must not be negative`);
    }
    return v;
  };
  const so = offsetOf(f.start, 'starting');
  const eo = offsetOf(f.end, 'ending');
  // Peer-group index of each row and the first row of each group (GROUPS).
  const group = new Int32Array(n);
  const groupStart: number[] = [];
  for (let i = 0; i < n; i++) {
    if (peerStart[i] === i) groupStart.push(i);
    group[i] = groupStart.length - 1;
  }
  const groupBound = (g: number, edge: 'start' | 'end'): number => {
    if (g < 0) return 0;
    if (g >= groupStart.length) return n;
    return edge === 'start' ? (groupStart[g] as number) : g + 1 < groupStart.length ? (groupStart[g + 1] as number) : n;
  };
  const o0 = node.order[0];
  const key = (i: number): Datum => (keyed[i] as { keys: Datum[] }).keys[0] as Datum;
  // RANGE offset: first row in [lo, hi) whose key is past `b` (strictly, for an end bound) in sort order.
  const rangeSearch = (b: Datum, strict: boolean, lo: number, hi: number): number => {
    const o = o0 as NonNullable<typeof o0>;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const k = key(mid);
      const c0 = o.cmp(k as Exclude<Datum, null>, b as Exclude<Datum, null>);
      const c = o.desc ? -c0 : c0;
      if (strict ? c > 0 : c >= 0) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  // The non-NULL block of keys (NULLs sort together, first or last).
  let nnLo = 0;
  let nnHi = n;
  if (f.shift !== undefined) {
    while (nnLo < n && key(nnLo) === null) nnLo++;
    while (nnHi > nnLo && key(nnHi - 1) === null) nnHi--;
  }
  const edge = (b: FrameBoundSpec, off: Datum, i: number, isEnd: boolean): number => {
    switch (b.kind) {
      case 'unbounded preceding':
        return 0;
      case 'unbounded following':
        return n;
      case 'current row':
        if (f.mode === 'rows') return isEnd ? i + 1 : i;
        return isEnd ? (peerEnd[i] as number) : (peerStart[i] as number);
      case 'preceding':
      case 'following': {
        const back = b.kind === 'preceding';
        if (f.mode === 'rows') {
          const k = Number(off as bigint);
          const at = back ? i - k : i + k;
          return Math.min(n, Math.max(0, isEnd ? at + 1 : at));
        }
        if (f.mode === 'groups') {
          const k = Number(off as bigint);
          return groupBound(back ? (group[i] as number) - k : (group[i] as number) + k, isEnd ? 'end' : 'start');
        }
        const k = key(i);
        if (k === null) return isEnd ? (peerEnd[i] as number) : (peerStart[i] as number);
        const desc = (o0 as NonNullable<typeof o0>).desc;
        const moved = (f.shift as NonNullable<typeof f.shift>)(k, off as Exclude<Datum, null>, back !== desc);
        return rangeSearch(moved, isEnd, nnLo, nnHi);
      }
      default:
        return assertNever(b.kind);
    }
  };
  for (let i = 0; i < n; i++) {
    start[i] = edge(f.start, so, i, false);
    end[i] = Math.max(start[i] as number, edge(f.end, eo, i, true));
  }
  const growing = f.exclude === 'no others' && f.start.kind === 'unbounded preceding';
  return { start, end, exclude: f.exclude, peerStart, peerEnd, growing };
}

function isNegative(v: Datum): boolean {
  if (typeof v === 'number' || typeof v === 'bigint') return v < 0;
  if (v instanceof Interval) return v.months < 0 || v.days < 0 || v.micros < 0;
  if (v instanceof Decimal) return v.sign() < 0;
  return false;
}

/** Whether row j is EXCLUDEd from row i's frame. */
function excluded(fr: Frames, i: number, j: number): boolean {
  switch (fr.exclude) {
    case 'no others':
      return false;
    case 'current row':
      return j === i;
    case 'group':
      return j >= (fr.peerStart[i] as number) && j < (fr.peerEnd[i] as number);
    case 'ties':
      return j !== i && j >= (fr.peerStart[i] as number) && j < (fr.peerEnd[i] as number);
    default:
      return assertNever(fr.exclude);
  }
}

/** The first (or last) row of row i's frame that is not excluded, or -1. */
function frameEdgeRow(fr: Frames, i: number, last: boolean): number {
  const s = fr.start[i] as number;
  const e = fr.end[i] as number;
  if (last) {
    for (let j = e - 1; j >= s; j--) if (!excluded(fr, i, j)) return j;
  } else {
    for (let j = s; j < e; j++) if (!excluded(fr, i, j)) return j;
  }
  return -1;
}

function evalFunc(f: WindowFuncSpec, rows: readonly Row[], peerStart: readonly number[], fr: Frames, env: EvalEnv, mem: ReturnType<typeof queryMemory>): Datum[] {
  const n = rows.length;
  const out: Datum[] = new Array(n);
  switch (f.name) {
    case 'row_number':
      for (let i = 0; i < n; i++) out[i] = BigInt(i + 1);
      return out;
    case 'rank':
      for (let i = 0; i < n; i++) out[i] = BigInt((peerStart[i] as number) + 1);
      return out;
    case 'dense_rank': {
      let rank = 0;
      for (let i = 0; i < n; i++) {
        if (peerStart[i] === i) rank++;
        out[i] = BigInt(rank);
      }
      return out;
    }
    case 'percent_rank':
      // (rank − 1) / (partition rows − 1); 0 for a one-row partition.
      for (let i = 0; i < n; i++) out[i] = n > 1 ? (peerStart[i] as number) / (n - 1) : 0;
      return out;
    case 'cume_dist':
      // Rows up to and including the current peer group / partition rows.
      for (let i = 0; i < n; i++) out[i] = (fr.peerEnd[i] as number) / n;
      return out;
    case 'ntile': {
      // Buckets 1..k as even as possible, the first n % k one row larger (PostgreSQL's ntile).
      const arg = f.args[0] as NonNullable<(typeof f.args)[0]>;
      for (let i = 0; i < n; i++) {
        const k = arg(rows[i] as Row, env);
        if (k === null) {
          out[i] = null;
          continue;
        }
        const buckets = Number(k);
        if (buckets <= 0) throw new SqlError('sql.invalid_argument_for_ntile', '22014', 'argument of ntile must be greater than zero');
        const size = Math.floor(n / buckets);
        const extra = n % buckets;
        const big = extra * (size + 1);
        out[i] = i < big ? Math.floor(i / (size + 1)) + 1 : extra + Math.floor((i - big) / Math.max(1, size)) + 1;
      }
      return out;
    }
    case 'nth_value': {
      const [val, nth] = f.args as [NonNullable<(typeof f.args)[0]>, NonNullable<(typeof f.args)[0]>];
      for (let i = 0; i < n; i++) {
        const k = nth(rows[i] as Row, env);
        if (k === null) {
          out[i] = null;
          continue;
        }
        if (Number(k) <= 0) throw new SqlError('sql.invalid_argument_for_nth_value', '22016', 'argument of nth_value must be greater than zero');
        let seen = 0;
        let hit = -1;
        for (let j = fr.start[i] as number; j < (fr.end[i] as number) && hit < 0; j++) if (!excluded(fr, i, j) && ++seen === Number(k)) hit = j;
        out[i] = hit < 0 ? null : val(rows[hit] as Row, env);
      }
      return out;
    }
    case 'lag':
    case 'lead': {
      const [val, off, def] = f.args;
      for (let i = 0; i < n; i++) {
        const row = rows[i] as Row;
        const o = off === undefined ? 1 : off(row, env);
        if (o === null) {
          out[i] = null;
          continue;
        }
        const j = f.name === 'lag' ? i - Number(o) : i + Number(o);
        out[i] = j >= 0 && j < n ? (val as NonNullable<typeof val>)(rows[j] as Row, env) : def === undefined ? null : def(row, env);
      }
      return out;
    }
    case 'first_value':
    case 'last_value': {
      const arg = f.args[0] as NonNullable<(typeof f.args)[0]>;
      for (let i = 0; i < n; i++) {
        const j = frameEdgeRow(fr, i, f.name === 'last_value');
        out[i] = j < 0 ? null : arg(rows[j] as Row, env);
      }
      return out;
    }
    case 'aggregate': {
      const spec = f.agg as NonNullable<WindowFuncSpec['agg']>;
      if (fr.growing) {
        // Running aggregate: frames [0, end) with end never decreasing.
        const st = newAggState(spec, mem);
        let added = 0;
        for (let i = 0; i < n; i++) {
          const end = fr.end[i] as number;
          while (added < end) st.add(rows[added++] as Row, env);
          out[i] = st.result();
        }
        return out;
      }
      let prevStart = -1;
      let prevEnd = -1;
      let prev: Datum = null;
      for (let i = 0; i < n; i++) {
        const s = fr.start[i] as number;
        const e = fr.end[i] as number;
        if (fr.exclude === 'no others' && s === prevStart && e === prevEnd) {
          out[i] = prev;
          continue;
        }
        const st = newAggState(spec, mem);
        for (let j = s; j < e; j++) if (!excluded(fr, i, j)) st.add(rows[j] as Row, env);
        out[i] = prev = st.result();
        prevStart = s;
        prevEnd = e;
      }
      return out;
    }
    default:
      throw new Error(`exec: unknown window function ${f.name as string}`);
  }
}
