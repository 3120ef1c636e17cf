/**
 * sql/exec/window-operator.ts — evaluates the window functions of one window
 * (plan/query-nodes.ts WindowNode).
 *
 * Buffers its whole input (charged to the query memory budget), splits it
 * into partitions by the PARTITION BY key (first-seen order), sorts each
 * partition by the window's ORDER BY (stable), then appends one value per
 * function to every row. Peers (rows equal on the ORDER BY keys) share rank
 * and the running aggregate's value, as PostgreSQL's default RANGE frame does.
 */
import type { Datum } from '../sem/datum.js';
import type { EvalEnv } from '../sem/expr.js';
import { rowKey } from '../types/compare.js';
import type { WindowFuncSpec, WindowNode } from '../plan/query-nodes.js';
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
      const results = node.funcs.map((f) => evalFunc(f, sorted, peerStart, peerEnd, env, mem));
      sorted.forEach((row, i) => out.push(row.concat(results.map((r) => r[i] as Datum))));
    }
    return out.length > 0 ? out : null;
  }
}

function compareKeys(node: WindowNode, a: readonly Datum[], b: readonly Datum[]): number {
  return compareSortKeys(node.order, a, b);
}

function evalFunc(f: WindowFuncSpec, rows: readonly Row[], peerStart: readonly number[], peerEnd: readonly number[], env: EvalEnv, mem: ReturnType<typeof queryMemory>): Datum[] {
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
      for (let i = 0; i < n; i++) out[i] = (f.args[0] as NonNullable<(typeof f.args)[0]>)(rows[0] as Row, env);
      return out;
    case 'last_value':
      for (let i = 0; i < n; i++) out[i] = (f.args[0] as NonNullable<(typeof f.args)[0]>)(rows[(peerEnd[i] as number) - 1] as Row, env);
      return out;
    case 'aggregate': {
      // Running aggregate over the frame UNBOUNDED PRECEDING … end of the current peer group.
      const st = newAggState(f.agg as NonNullable<WindowFuncSpec['agg']>, mem);
      let added = 0;
      for (let i = 0; i < n; i++) {
        const end = peerEnd[i] as number;
        while (added < end) st.add(rows[added++] as Row, env);
        out[i] = st.result();
      }
      return out;
    }
    default:
      throw new Error(`exec: unknown window function ${f.name as string}`);
  }
}
