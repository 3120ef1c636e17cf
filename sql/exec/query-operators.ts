/**
 * sql/exec/query-operators.ts — operators for the nodes of plan/query-nodes.ts
 * (joins, aggregation, DISTINCT, set operations, subqueries, recursive CTEs).
 *
 * Same pull protocol as operators.ts (`next()` → a batch or null). Buffering
 * operators charge the rows they keep to the query's memory account
 * (memory-budget.ts) and fail with 53200 past the budget. Output batches are
 * capped at OUT_BATCH rows so a join that multiplies rows streams.
 *
 * Hash keys are sql/types' datumKey / rowKey of values cast to the key type,
 * so equal values of different numeric types meet. A NULL key never matches.
 */
import { assertNever } from '../../src/util/assert.js';
import { compareBytes } from '../../storage/encoding/index.js';
import { SqlError } from '../parser/sql-error.js';
import { KVBatch } from '../kv.js';
import type { Datum } from '../sem/datum.js';
import type { EvalFn } from '../sem/expr.js';
import { datumKey, rowKey } from '../types/compare.js';
import type { SqlType } from '../types/type.js';
import type {
  AggregateNode,
  ApplyNode,
  ProjectSetNode,
  DistinctNode,
  HashJoinNode,
  LookupJoinNode,
  QueryNode,
  RecursiveCteNode,
  SetOpNode,
  SubqueriesNode,
  WorkingTableNode,
} from '../plan/query-nodes.js';
import type { PlanNode } from '../plan/plan-node.js';
import { open, type ExecCtx, type Row, type RowIter } from './operators.js';
import { queryMemory, rowBytes, type QueryMemory } from './memory-budget.js';
import { newAggState } from './aggregate-state.js';
import { WindowIter } from './window-operator.js';

const OUT_BATCH = 1024;

export function openQueryNode(node: QueryNode, ctx: ExecCtx): RowIter {
  switch (node.kind) {
    case 'hash-join':
      return new HashJoinIter(node, ctx);
    case 'lookup-join':
      return new LookupJoinIter(node, ctx);
    case 'aggregate':
      return new AggregateIter(node, ctx);
    case 'distinct':
      return new DistinctIter(node, ctx);
    case 'set-op':
      return new SetOpIter(node, ctx);
    case 'subqueries':
      return new SubqueriesIter(node, ctx);
    case 'recursive-cte':
      return new RecursiveCteIter(node, ctx);
    case 'working-table':
      return new WorkingTableIter(node, ctx);
    case 'window':
      return new WindowIter(node, ctx);
    case 'apply':
      return new ApplyIter(node, ctx);
    case 'project-set':
      return new ProjectSetIter(node, ctx);
    default:
      return assertNever(node);
  }
}

/** Drains a plan into one array of rows, charging them to `mem`. */
export async function drain(node: PlanNode, ctx: ExecCtx, mem: QueryMemory, what: string): Promise<Row[]> {
  const it = open(node, ctx);
  const out: Row[] = [];
  for (;;) {
    const b = await it.next();
    if (b === null) return out;
    let bytes = 0;
    for (const r of b) {
      bytes += rowBytes(r);
      out.push(r);
    }
    mem.grow(bytes, what);
    ctx.checkCancel();
  }
}

/** The hash key of `fns` over `row`, with casts; null when any part is NULL. */
function keyOf(fns: readonly EvalFn[], casts: HashJoinNode['leftCasts'], types: readonly SqlType[], row: Row, ctx: ExecCtx): string | number | null {
  if (fns.length === 1) {
    const v = (fns[0] as EvalFn)(row, ctx.env);
    if (v === null) return null;
    return datumKey((casts[0] as (d: Exclude<Datum, null>) => Exclude<Datum, null>)(v), types[0] as SqlType);
  }
  const vals: Datum[] = new Array(fns.length);
  for (let i = 0; i < fns.length; i++) {
    const v = (fns[i] as EvalFn)(row, ctx.env);
    if (v === null) return null;
    vals[i] = (casts[i] as (d: Exclude<Datum, null>) => Exclude<Datum, null>)(v);
  }
  return rowKey(vals, types);
}

function nulls(n: number): Row {
  return new Array(n).fill(null);
}

/** Hash join (nested loop when there are no equality keys): builds on the right input. */
class HashJoinIter implements RowIter {
  private table: Map<string | number, { rows: Row[]; ids: number[] }> | undefined;
  private matched: Uint8Array = new Uint8Array(0);
  private rightRows: Row[] = [];
  private readonly left: RowIter;
  private batch: Row[] = [];
  private pos = 0;
  private leftDone = false;
  private tailPos = -1;

  constructor(
    private readonly node: HashJoinNode,
    private readonly ctx: ExecCtx,
  ) {
    this.left = open(node.left, ctx);
  }

  private async build(): Promise<void> {
    const { node, ctx } = this;
    const mem = queryMemory(ctx.env);
    this.rightRows = await drain(node.right, ctx, mem, 'hash join');
    mem.grow(this.rightRows.length * 40, 'hash join');
    const t = new Map<string | number, { rows: Row[]; ids: number[] }>();
    const noKeys = node.leftKeys.length === 0;
    this.rightRows.forEach((r, i) => {
      const k = noKeys ? 0 : keyOf(node.rightKeys, node.rightCasts, node.keyTypes, r, ctx);
      if (k === null) return;
      let b = t.get(k);
      if (b === undefined) t.set(k, (b = { rows: [], ids: [] }));
      b.rows.push(r);
      b.ids.push(i);
    });
    this.table = t;
    this.matched = new Uint8Array(this.rightRows.length);
  }

  async next(): Promise<Row[] | null> {
    if (this.table === undefined) await this.build();
    const { node, ctx } = this;
    const table = this.table as Map<string | number, { rows: Row[]; ids: number[] }>;
    const env = ctx.env;
    const type = node.type;
    const out: Row[] = [];
    const noKeys = node.leftKeys.length === 0;
    while (!this.leftDone) {
      if (this.pos >= this.batch.length) {
        const b = await this.left.next();
        if (b === null) {
          this.leftDone = true;
          break;
        }
        this.batch = b;
        this.pos = 0;
        ctx.checkCancel();
      }
      while (this.pos < this.batch.length) {
        const l = this.batch[this.pos++] as Row;
        const k = noKeys ? 0 : keyOf(node.leftKeys, node.leftCasts, node.keyTypes, l, ctx);
        const bucket = k === null ? undefined : table.get(k);
        let any = false;
        if (bucket !== undefined) {
          const rows = bucket.rows;
          for (let i = 0; i < rows.length; i++) {
            const r = rows[i] as Row;
            const joined = l.concat(r);
            if (node.on !== undefined && node.on(joined, env) !== true) continue;
            any = true;
            if (type === 'semi' || type === 'anti') break;
            this.matched[bucket.ids[i] as number] = 1;
            out.push(joined);
          }
        }
        if (type === 'semi' && any) out.push(l);
        else if (type === 'anti' && !any) out.push(l);
        else if (!any && (type === 'left' || type === 'full')) out.push(l.concat(nulls(node.rightWidth)));
        if (out.length >= OUT_BATCH) return out;
      }
    }
    if (type === 'right' || type === 'full') {
      if (this.tailPos < 0) this.tailPos = 0;
      while (this.tailPos < this.rightRows.length) {
        const i = this.tailPos++;
        if (this.matched[i] === 0) out.push(nulls(node.leftWidth).concat(this.rightRows[i] as Row));
        if (out.length >= OUT_BATCH) return out;
      }
    }
    return out.length > 0 ? out : null;
  }
}

/** Lookup join: batched primary-index gets on the right table for each left batch. */
class LookupJoinIter implements RowIter {
  private readonly left: RowIter;
  constructor(
    private readonly node: LookupJoinNode,
    private readonly ctx: ExecCtx,
  ) {
    this.left = open(node.left, ctx);
  }

  async next(): Promise<Row[] | null> {
    const { node, ctx } = this;
    const env = ctx.env;
    const codec = node.scan.table.codec;
    for (;;) {
      const batch = await this.left.next();
      if (batch === null) return null;
      ctx.checkCancel();
      const keys: (Buffer | null)[] = new Array(batch.length);
      const distinct = new Map<string, Buffer>();
      for (let i = 0; i < batch.length; i++) {
        const l = batch[i] as Row;
        const vals: Datum[] = [];
        let isNull = false;
        for (const f of node.leftKeys) {
          const v = f(l, env);
          if (v === null) isNull = true;
          vals.push(v);
        }
        if (isNull) {
          keys[i] = null;
          continue;
        }
        const k = codec.encodeKeyPrefix(vals);
        keys[i] = k;
        distinct.set(k.toString('latin1'), k);
      }
      const sorted = [...distinct.values()].sort(compareBytes);
      const found = new Map<string, Row>();
      if (sorted.length > 0) {
        const b = new KVBatch();
        for (const k of sorted) b.get(k, node.scan.lock);
        const res = await ctx.txn.run(b);
        for (let i = 0; i < sorted.length; i++) {
          const r = res[i];
          if (r?.kind !== 'get' || r.value === null) continue;
          const key = sorted[i] as Buffer;
          const scanned: Row = nulls(node.scan.columns.length);
          codec.decodeKey(key, scanned);
          codec.decodeValue(r.value, scanned, node.scan.needed);
          if (node.rightFilter !== undefined && node.rightFilter(scanned, env) !== true) continue;
          const right: Row = node.rightExprs.map((f) => f(scanned, env));
          found.set(key.toString('latin1'), right);
        }
      }
      const out: Row[] = [];
      for (let i = 0; i < batch.length; i++) {
        const l = batch[i] as Row;
        const k = keys[i];
        const r = k === null || k === undefined ? undefined : found.get(k.toString('latin1'));
        if (r !== undefined) {
          const joined = l.concat(r);
          if (node.on === undefined || node.on(joined, env) === true) {
            out.push(joined);
            continue;
          }
        }
        if (node.type === 'left') out.push(l.concat(nulls(node.rightWidth)));
      }
      if (out.length > 0) return out;
    }
  }
}

class AggregateIter implements RowIter {
  private done = false;
  private readonly input: RowIter;
  constructor(
    private readonly node: AggregateNode,
    private readonly ctx: ExecCtx,
  ) {
    this.input = open(node.input, ctx);
  }

  async next(): Promise<Row[] | null> {
    if (this.done) return null;
    this.done = true;
    const { node, ctx } = this;
    const env = ctx.env;
    const mem = queryMemory(env);
    const nk = node.groupKeys.length;
    const groups = new Map<string | number, { keys: Row; states: ReturnType<typeof newAggState>[] }>();
    const newGroup = (keys: Row): { keys: Row; states: ReturnType<typeof newAggState>[] } => {
      mem.grow(rowBytes(keys) + 64 * node.aggs.length, 'aggregation');
      return { keys, states: node.aggs.map((a) => newAggState(a, mem)) };
    };
    let single = nk === 0 ? newGroup([]) : undefined;
    // Keys are evaluated into one scratch array; a new group copies it.
    const scratch: Row = new Array(nk);
    const key0 = node.groupKeys[0];
    const type0 = node.groupTypes[0] as SqlType;
    for (;;) {
      const b = await this.input.next();
      if (b === null) break;
      ctx.checkCancel();
      for (const row of b) {
        let g = single;
        if (g === undefined) {
          let k: string | number;
          if (nk === 1) {
            scratch[0] = (key0 as EvalFn)(row, env);
            k = datumKey(scratch[0] as Datum, type0) ?? '\u0000null';
          } else {
            for (let i = 0; i < nk; i++) scratch[i] = (node.groupKeys[i] as EvalFn)(row, env);
            k = rowKey(scratch, node.groupTypes);
          }
          g = groups.get(k);
          if (g === undefined) groups.set(k, (g = newGroup(scratch.slice())));
        }
        const states = g.states;
        for (let i = 0; i < states.length; i++) (states[i] as ReturnType<typeof newAggState>).add(row, env);
      }
    }
    const out: Row[] = [];
    if (single !== undefined) out.push(single.states.map((s) => s.result()));
    else for (const g of groups.values()) out.push(g.keys.concat(g.states.map((s) => s.result())));
    single = undefined;
    return out.length > 0 ? out : null;
  }
}

class DistinctIter implements RowIter {
  private readonly seen = new Set<string | number>();
  private readonly input: RowIter;
  constructor(
    private readonly node: DistinctNode,
    private readonly ctx: ExecCtx,
  ) {
    this.input = open(node.input, ctx);
  }
  async next(): Promise<Row[] | null> {
    const { node, ctx } = this;
    const env = ctx.env;
    const mem = queryMemory(env);
    for (;;) {
      const b = await this.input.next();
      if (b === null) return null;
      const out: Row[] = [];
      let bytes = 0;
      for (const row of b) {
        const vals = node.keys.map((f) => f(row, env));
        const k = rowKey(vals, node.keyTypes);
        if (this.seen.has(k)) continue;
        this.seen.add(k);
        bytes += 48 + k.length * 2;
        out.push(row);
      }
      mem.grow(bytes, 'DISTINCT');
      if (out.length > 0) return out;
    }
  }
}

class SetOpIter implements RowIter {
  private out: Row[] | undefined;
  private left: RowIter | undefined;
  private right: RowIter | undefined;
  private readonly seen = new Set<string>();
  constructor(
    private readonly node: SetOpNode,
    private readonly ctx: ExecCtx,
  ) {}

  async next(): Promise<Row[] | null> {
    const { node, ctx } = this;
    if (node.op === 'union') return this.union();
    if (this.out !== undefined) {
      const o = this.out;
      this.out = [];
      return o.length > 0 ? o : null;
    }
    const mem = queryMemory(ctx.env);
    const counts = new Map<string, number>();
    for (const r of await drain(node.right, ctx, mem, node.op.toUpperCase())) {
      const k = rowKey(r, node.types);
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    const out: Row[] = [];
    const emitted = new Set<string>();
    const left = open(node.left, ctx);
    for (;;) {
      const b = await left.next();
      if (b === null) break;
      ctx.checkCancel();
      for (const r of b) {
        const k = rowKey(r, node.types);
        const c = counts.get(k) ?? 0;
        if (node.all) {
          if (node.op === 'intersect') {
            if (c > 0) {
              counts.set(k, c - 1);
              out.push(r);
            }
          } else if (c > 0) counts.set(k, c - 1);
          else out.push(r);
        } else if (!emitted.has(k) && (node.op === 'intersect') === c > 0) {
          emitted.add(k);
          out.push(r);
        }
      }
      mem.grow(b.length * 16, node.op.toUpperCase());
    }
    this.out = [];
    return out.length > 0 ? out : null;
  }

  private async union(): Promise<Row[] | null> {
    const { node, ctx } = this;
    const mem = queryMemory(ctx.env);
    for (;;) {
      if (this.left === undefined) this.left = open(node.left, ctx);
      let b = await this.left.next();
      if (b === null) {
        if (this.right === undefined) this.right = open(node.right, ctx);
        b = await this.right.next();
        if (b === null) return null;
        // Left is exhausted: stop asking it.
        this.left = EMPTY;
      }
      if (node.all) return b;
      const out: Row[] = [];
      let bytes = 0;
      for (const r of b) {
        const k = rowKey(r, node.types);
        if (this.seen.has(k)) continue;
        this.seen.add(k);
        bytes += 48 + k.length * 2;
        out.push(r);
      }
      mem.grow(bytes, 'UNION');
      if (out.length > 0) return out;
    }
  }
}

const EMPTY: RowIter = { next: async () => null };

class SubqueriesIter implements RowIter {
  private input: RowIter | undefined;
  constructor(
    private readonly node: SubqueriesNode,
    private readonly ctx: ExecCtx,
  ) {}
  async next(): Promise<Row[] | null> {
    if (this.input === undefined) {
      const { node, ctx } = this;
      const mem = queryMemory(ctx.env);
      for (const cell of node.cells) {
        if (cell.mode === 'exists') {
          const b = await open(cell.plan, ctx).next();
          cell.results.set(ctx.env, b !== null && b.length > 0);
          continue;
        }
        const rows = await drain(cell.plan, ctx, mem, 'subquery');
        if (cell.mode === 'scalar') {
          if (rows.length > 1) throw new SqlError('sql.cardinality_violation', '21000', 'more than one row returned by a subquery used as an expression');
          cell.results.set(ctx.env, rows.length === 0 ? null : ((rows[0] as Row)[0] as Datum));
        } else cell.results.set(ctx.env, rows);
      }
      this.input = open(node.input, ctx);
    }
    return this.input.next();
  }
}

class RecursiveCteIter implements RowIter {
  private done = false;
  constructor(
    private readonly node: RecursiveCteNode,
    private readonly ctx: ExecCtx,
  ) {}
  async next(): Promise<Row[] | null> {
    if (this.done) return null;
    this.done = true;
    const { node, ctx } = this;
    const mem = queryMemory(ctx.env);
    const seen = new Set<string>();
    const keep = (rows: Row[]): Row[] => {
      if (node.union === 'all') return rows;
      return rows.filter((r) => {
        const k = rowKey(r, node.types);
        if (seen.has(k)) return false;
        seen.add(k);
        return true;
      });
    };
    const all: Row[] = [];
    let work = keep(await drain(node.anchor, ctx, mem, `WITH RECURSIVE ${node.name}`));
    for (let iter = 0; work.length > 0; iter++) {
      if (iter >= node.maxIterations) {
        throw new SqlError('sql.recursion_limit', '54001', `WITH RECURSIVE "${node.name}" did not finish within ${node.maxIterations} iterations`, {
          hint: 'Check that the recursive term stops producing rows (a cycle keeps UNION ALL going forever).',
        });
      }
      for (const r of work) all.push(r);
      node.working.rows.set(ctx.env, work);
      work = keep(await drain(node.recursive, ctx, mem, `WITH RECURSIVE ${node.name}`));
    }
    node.working.rows.delete(ctx.env);
    return all.length > 0 ? all : null;
  }
}

class WorkingTableIter implements RowIter {
  private done = false;
  constructor(
    private readonly node: WorkingTableNode,
    private readonly ctx: ExecCtx,
  ) {}
  async next(): Promise<Row[] | null> {
    if (this.done) return null;
    this.done = true;
    const rows = this.node.working.rows.get(this.ctx.env);
    return rows !== undefined && rows.length > 0 ? rows : null;
  }
}

/** Runs a correlated subquery per input row, appending its result to the row. */
class ApplyIter implements RowIter {
  private readonly input: RowIter;
  constructor(
    private readonly node: ApplyNode,
    private readonly ctx: ExecCtx,
  ) {
    this.input = open(node.input, ctx);
  }
  async next(): Promise<Row[] | null> {
    const { node, ctx } = this;
    if (node.mode === 'lateral' || node.mode === 'lateral-left') {
      for (;;) {
        const lb = await this.input.next();
        if (lb === null) return null;
        const out = await this.lateral(lb);
        if (out.length > 0) return out;
      }
    }
    const b = await this.input.next();
    if (b === null) return null;
    const out: Row[] = new Array(b.length);
    for (let i = 0; i < b.length; i++) {
      const row = b[i] as Row;
      node.outer.set(ctx.env, row);
      let value: Datum;
      if (node.mode === 'exists') {
        const it = open(node.plan, ctx);
        let found = false;
        for (let r = await it.next(); r !== null && !found; r = found ? null : await it.next()) found = r.length > 0;
        value = found;
      } else if (node.mode === 'array') {
        // Charged while collected (a huge ARRAY(subquery) is 53200, not an OOM), then released.
        const mem = queryMemory(ctx.env);
        const rows = await drain(node.plan, ctx, mem, 'ARRAY(subquery)');
        let bytes = 0;
        for (const r of rows) bytes += rowBytes(r);
        mem.shrink(bytes);
        value = rows.map((r) => r[0] as Datum);
      } else {
        const it = open(node.plan, ctx);
        const rows: Row[] = [];
        for (let r = await it.next(); r !== null && rows.length < 2; r = rows.length < 2 ? await it.next() : null) rows.push(...r);
        if (rows.length > 1) throw new SqlError('sql.cardinality_violation', '21000', 'more than one row returned by a subquery used as an expression');
        value = rows.length === 0 ? null : ((rows[0] as Row)[0] as Datum);
      }
      out[i] = row.concat([value]);
      if ((i & 255) === 255) ctx.checkCancel();
    }
    node.outer.delete(ctx.env);
    return out;
  }

  /** LATERAL join of one input batch: each row ++ each subquery row passing `on`. */
  private async lateral(b: readonly Row[]): Promise<Row[]> {
    const { node, ctx } = this;
    const env = ctx.env;
    const on = node.on;
    const out: Row[] = [];
    for (const row of b) {
      node.outer.set(env, row);
      const it = open(node.plan, ctx);
      let matched = false;
      for (let r = await it.next(); r !== null; r = await it.next()) {
        for (const sub of r) {
          const joined = row.concat(sub);
          if (on !== undefined && on(joined, env) !== true) continue;
          matched = true;
          out.push(joined);
        }
      }
      if (!matched && node.mode === 'lateral-left') out.push(row.concat(nulls(node.columns.length - row.length)));
      ctx.checkCancel();
    }
    node.outer.delete(env);
    return out;
  }
}

class ProjectSetIter implements RowIter {
  private readonly input: RowIter;
  constructor(
    private readonly node: ProjectSetNode,
    private readonly ctx: ExecCtx,
  ) {
    this.input = open(node.input, ctx);
  }
  async next(): Promise<Row[] | null> {
    const env = this.ctx.env;
    for (;;) {
      const b = await this.input.next();
      if (b === null) return null;
      const out: Row[] = [];
      for (const row of b) {
        const arrays = this.node.arrays.map((f) => f(row, env) as readonly Datum[] | null);
        let n = 0;
        for (const a of arrays) if (a !== null && a.length > n) n = a.length;
        for (let i = 0; i < n; i++) out.push(row.concat(arrays.map((a) => (a === null ? null : (a[i] ?? null)))));
      }
      if (out.length > 0) return out;
    }
  }
}
