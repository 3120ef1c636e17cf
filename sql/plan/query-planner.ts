/**
 * sql/plan/query-planner.ts — SELECT with joins, aggregation, DISTINCT, set
 * operations, subqueries and CTEs (issue 7 part 1) → plan tree.
 *
 *   planner.planSelect ──needsQueryPlanner(s)?──► planQuery(ctx, s)
 *
 * Pipeline of one SELECT clause:
 *   FROM (leaves: single-table SELECTs planned by planner.planSelect, with the
 *         WHERE conjuncts that only read that table pushed into them so they
 *         keep their primary-key spans; subqueries; CTE references)
 *     → joins (hash join on the ON/USING equalities, nested loop without any;
 *       lookup join when the equalities cover the right table's whole primary
 *       key and the right side is otherwise a full-table read — cost rule:
 *       a full scan of the right table is never cheaper than one batched get
 *       per left row in a 2-table join)
 *     → WHERE rest (incl. subqueries) → aggregate → HAVING
 *     → project (targets ++ ORDER BY keys not among them) → sort
 *     → DISTINCT [ON] → LIMIT/OFFSET → trim to the targets
 *     → subqueries (uncorrelated ones, run once per execution) at the top.
 * Aggregates are planned by rewriting the target / HAVING / ORDER BY
 * expressions: each aggregate call and each GROUP BY expression becomes a
 * column `__agg.aN` / `__agg.gN` of the aggregate's output.
 *
 * Window functions (row_number, rank, dense_rank, percent_rank, cume_dist,
 * ntile, lag, lead, first_value, last_value, nth_value,
 * count/sum/avg/min/max/bool_and/bool_or OVER) run after HAVING,
 * one window node per distinct window definition, with its frame (ROWS /
 * RANGE / GROUPS, offsets, EXCLUDE).
 *
 * Correlated subqueries (scalar, EXISTS, IN / NOT IN / op ANY / op ALL,
 * ARRAY(subquery)) in WHERE, the select list and JOIN … ON run per outer row
 * in an apply node (EXISTS with equality correlations become semi / anti
 * joins); LATERAL subqueries and functions in FROM that read earlier FROM
 * items are apply nodes too (inner, cross, LEFT).
 *
 * Not supported (0A000 naming it): LATERAL under RIGHT / FULL joins or with
 * USING / NATURAL, correlated subqueries in an aggregated select list, HAVING
 * or ORDER BY; aggregates in WHERE are 42803.
 */
import { formatExpr, formatTableExpr, formatWindowDef } from '../parser/format.js';
import { mapExpr, walkExpr } from '../parser/walk.js';
import type { Expr, FrameBound, FuncCall, JoinExpr, NamedWindow, SelectBody, SelectStatement, SelectTarget, SortBy, SubLink, TableExpr, WindowDef, WindowFrame } from '../parser/ast.js';
import { SqlError, unimplemented } from '../parser/sql-error.js';
import { ExprCompiler, Scope, isNumericType, opError, unifyTypes, type EvalEnv, type EvalFn, type ScopeColumn, type Typed } from '../sem/expr.js';
import type { Datum } from '../sem/datum.js';
import { castDatum } from '../types/cast.js';
import { datumKey } from '../types/compare.js';
import { arrayLowerBound, compareTest } from '../sem/array-jsonb.js';
import { T, arrayOf, formatType, type SqlType } from '../types/type.js';
import { datatypeMismatch } from '../types/type-error.js';
import type { PlanNode, ProjectNode, QueryPlan, ResultColumn, ScanNode, SortKey } from './plan-node.js';
import type { AggName, AggSpec, FrameBoundSpec, HashJoinNode, JoinType, SubqueryCell, WindowFrameSpec, WindowFuncSpec } from './query-nodes.js';
import { evalBinary } from '../types/arith.js';
import { compileLimit, outputName as coreOutputName, planSelect, sortKey, type PlanContext } from './planner.js';
import { isVirtualTable, virtualTable } from '../vtable/virtual-tables.js';

/** WITH RECURSIVE iterations before the query fails with 54001. */
export const MAX_RECURSIVE_ITERATIONS = 10000;

const AGGS = new Set<string>(['count', 'sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every', 'string_agg', 'array_agg', 'jsonb_agg', 'json_agg']);

function isAgg(e: Expr): e is FuncCall {
  return e.kind === 'FuncCall' && e.over === undefined && e.name.length === 1 && AGGS.has(e.name[0] as string);
}

function exprHas(e: Expr | undefined, pred: (x: Expr) => boolean): boolean {
  if (e === undefined) return false;
  let found = false;
  walkExpr(e, (x) => {
    if (found) return false;
    if (pred(x)) found = true;
    return !found;
  });
  return found;
}

const isSpecial = (x: Expr): boolean => x.kind === 'SubLink' || (x.kind === 'FuncCall' && (x.over !== undefined || isAgg(x)));

/** True when `s` needs this planner (planner.ts handles the single-table rest). */
export function needsQueryPlanner(s: SelectStatement): boolean {
  if (s.with !== undefined) return true;
  const b = s.body;
  if (b.kind === 'SetOp' || b.kind === 'Select') return true;
  if (b.kind !== 'SelectClause') return false;
  if (b.groupBy.length > 0 || b.having !== undefined || b.distinct !== false || b.windows.length > 0) return true;
  if (b.from.length > 1 || b.from.some((f) => f.kind !== 'TableRef')) return true;
  if (b.from.some((f) => f.kind === 'TableRef' && isVirtualTable(f.table))) return true;
  if (b.from.some((f) => f.kind === 'TableRef' && f.alias !== undefined && f.alias.columns.length > 0)) return true;
  const srf = (x: Expr): boolean => x.kind === 'FuncCall' && Object.hasOwn(SRF_ARITY, x.name[x.name.length - 1] as string);
  return exprHas(b.where, isSpecial) || b.targets.some((t) => exprHas(t.expr, (x) => isSpecial(x) || srf(x))) || s.orderBy.some((o) => exprHas(o.expr, isSpecial));
}

/** A planned relation: its node and the columns its rows hold. */
interface Rel {
  readonly node: PlanNode;
  readonly columns: readonly ScopeColumn[];
  /** Output names and origin for RowDescription. */
  readonly result?: readonly ResultColumn[];
}

interface CteDef {
  readonly stmt: SelectStatement;
  readonly columns: readonly string[];
  /** Set while planning a recursive CTE's recursive term: the working table. */
  working?: { rows: WeakMap<EvalEnv, Datum[][]>; columns: readonly ScopeColumn[] };
  recursive: boolean;
}

/** The enclosing query's row, for a correlated subquery planned inside an apply node. */
interface OuterRow {
  readonly scope: Scope;
  readonly slot: WeakMap<EvalEnv, readonly Datum[]>;
  readonly parent: OuterRow | undefined;
}

class QueryCtx {
  constructor(
    readonly ctx: PlanContext,
    readonly ctes: ReadonlyMap<string, CteDef>,
    readonly lock: 'none' | 'exclusive',
    readonly outer: OuterRow | undefined = undefined,
  ) {}
  cells: SubqueryCell[] = [];
}

export function planQuery(ctx0: PlanContext, s: SelectStatement): QueryPlan {
  if (s.locking.some((l) => l.wait !== 'block')) throw unimplemented('NOWAIT / SKIP LOCKED');
  // The outermost statement decides which columns its leaves decode (a nested call keeps it).
  const ctx = ctx0.readNames === undefined ? { ...ctx0, readNames: statementReadNames(s) } : ctx0;
  const q = new QueryCtx(ctx, new Map(), s.locking.length > 0 ? 'exclusive' : 'none');
  const rel = planStatement(q, s);
  const result = rel.result ?? rel.columns.map((c) => ({ name: c.name, type: c.type, tableOid: 0, columnAttr: 0 }));
  return { root: rel.node, result, tag: 'SELECT', schemaVersion: ctx.snapshot.version, writes: false };
}

/**
 * The column names `s` references anywhere (every ColumnRef's last part, USING
 * lists), or null when it may read columns it does not name: a `*` or
 * `t.*`, or a NATURAL join. A leaf whose table or alias is itself among the
 * names (a whole-row reference such as row_to_json(t)) reads every column
 * (planner.ts planSource). Walks the AST generically, so no clause is missed.
 */
export function statementReadNames(s: SelectStatement): ReadonlySet<string> | null {
  const names = new Set<string>();
  const stack: unknown[] = [s];
  while (stack.length > 0) {
    const n = stack.pop();
    if (n === null || typeof n !== 'object') continue;
    if (Array.isArray(n)) {
      for (const x of n) stack.push(x);
      continue;
    }
    const o = n as { readonly kind?: unknown; readonly star?: unknown; readonly names?: unknown; readonly natural?: unknown; readonly using?: unknown };
    if (o.kind === 'ColumnRef') {
      if (o.star === true) return null;
      const parts = o.names as readonly string[];
      if (parts.length > 0) names.add(parts[parts.length - 1] as string);
    } else if (o.kind === 'Join') {
      if (o.natural === true) return null;
      for (const u of o.using as readonly string[]) names.add(u);
    }
    for (const v of Object.values(o)) if (v !== null && typeof v === 'object') stack.push(v);
  }
  return names;
}

function withCtes(q: QueryCtx, s: SelectStatement): QueryCtx {
  if (s.with === undefined) return q;
  const ctes = new Map(q.ctes);
  for (const c of s.with.ctes) {
    if (c.query.kind !== 'Select') throw unimplemented('data-modifying statements in WITH');
    ctes.set(c.name, { stmt: c.query, columns: c.columns, recursive: s.with.recursive });
  }
  const nq = new QueryCtx(q.ctx, ctes, q.lock, q.outer);
  nq.cells = q.cells;
  return nq;
}

/** Plans a complete statement (WITH, body, ORDER BY, LIMIT) at its own subquery level. */
function planStatement(outer: QueryCtx, s0: SelectStatement): Rel {
  const q0 = withCtes(outer, s0);
  const q = new QueryCtx(q0.ctx, q0.ctes, q0.lock, q0.outer);
  const s: SelectStatement = { ...s0, with: undefined };
  let rel: Rel;
  const b = s.body;
  if (b.kind === 'SelectClause') rel = planClause(q, s, b);
  else if (b.kind === 'Values' && !needsValuesHelp(b)) {
    const p = planSelect(leafCtx(q), { ...s, locking: [] });
    rel = { node: p.root, columns: resultScope(p.result as ResultColumn[], undefined), result: p.result };
  } else {
    rel = planBody(q, b);
    rel = orderAndLimit(q, rel, s);
  }
  if (q.cells.length > 0) rel = { ...rel, node: { kind: 'subqueries', input: rel.node, cells: q.cells, columns: rel.columns } };
  return rel;
}

function needsValuesHelp(b: Extract<SelectBody, { kind: 'Values' }>): boolean {
  return b.rows.some((r) => r.some((e) => exprHas(e, isSpecial)));
}

function resultScope(cols: readonly ResultColumn[], table: string | undefined): ScopeColumn[] {
  return cols.map((c) => ({ name: c.name, table, type: c.type, hidden: false }));
}

/** A set-operation operand or parenthesised query, without outer ORDER BY / LIMIT. */
function planBody(q: QueryCtx, b: SelectBody): Rel {
  switch (b.kind) {
    case 'Select':
      return planStatement(q, b);
    case 'SelectClause':
    case 'Values':
      return planStatement(q, { kind: 'Select', with: undefined, body: b, orderBy: [], limit: undefined, offset: undefined, locking: [], asOfSystemTime: undefined });
    case 'SetOp': {
      const l = planBody(q, b.left);
      const r = planBody(q, b.right);
      return setOp(q, b.op, b.all, l, r);
    }
    default:
      throw unimplemented('this query form');
  }
}

function setOp(q: QueryCtx, op: 'union' | 'intersect' | 'except', all: boolean, l: Rel, r: Rel): Rel {
  const what = op.toUpperCase();
  if (l.columns.length !== r.columns.length) throw new SqlError('sql.syntax_error', '42601', `each ${what} query must have the same number of columns`);
  const types = l.columns.map((lc, i) => {
    const rc = r.columns[i] as ScopeColumn;
    const u = unifyTypes(lc.type, rc.type);
    if (u === undefined) throw datatypeMismatch(`${what} types ${formatType(lc.type)} and ${formatType(rc.type)} cannot be matched`);
    return u.family === 'unknown' ? T.text : u;
  });
  const left = castRel(l, types);
  const right = castRel(r, types);
  const columns = l.columns.map((c, i) => ({ name: c.name, table: undefined, type: types[i] as SqlType, hidden: false }));
  return { node: { kind: 'set-op', op, all, left: left.node, right: right.node, types, columns }, columns, result: columns.map((c) => ({ name: c.name, type: c.type, tableOid: 0, columnAttr: 0 })) };
}

/** Projects `rel` to `types` (a no-op when it already has them). */
function castRel(rel: Rel, types: readonly SqlType[]): Rel {
  if (rel.columns.every((c, i) => c.type.oid === (types[i] as SqlType).oid)) return rel;
  const exprs: EvalFn[] = rel.columns.map((c, i) => {
    const to = types[i] as SqlType;
    if (c.type.oid === to.oid) return (row) => row[i] as Datum;
    const from = c.type;
    return (row) => {
      const v = row[i] as Datum;
      return v === null ? null : castDatum(v, from, to, 'implicit');
    };
  });
  const columns = rel.columns.map((c, i) => ({ ...c, type: types[i] as SqlType }));
  return { node: { kind: 'project', input: rel.node, exprs, text: [], columns }, columns };
}

/** ORDER BY / LIMIT over a set operation or VALUES: by output name or ordinal. */
function orderAndLimit(q: QueryCtx, rel: Rel, s: SelectStatement): Rel {
  let node = rel.node;
  const scope = new Scope(rel.columns);
  const c = compilerFor(q, scope);
  if (s.orderBy.length > 0) {
    const keys = s.orderBy.map((o) => {
      const e = o.expr;
      if (e.kind === 'Const' && e.type === 'int') {
        const i = Number(e.text);
        const col = rel.columns[i - 1];
        if (col === undefined) throw new SqlError('sql.invalid_column_reference', '42P10', `ORDER BY position ${i} is not in select list`);
        const k = sortKey(c, { kind: 'Const', type: 'null', value: null, text: 'NULL' }, o);
        return { ...k, fn: (row: readonly Datum[]) => row[i - 1] as Datum, cmp: c.comparator(col.type, col.type, 'ORDER BY'), text: `${i}${o.dir === 'desc' ? ' DESC' : ''}` };
      }
      return sortKey(c, e, o);
    });
    node = { kind: 'sort', input: node, keys, columns: rel.columns };
  }
  node = limitNode(c, node, s, rel.columns);
  return { ...rel, node };
}

function limitNode(c: ExprCompiler, node: PlanNode, s: SelectStatement, columns: readonly ScopeColumn[]): PlanNode {
  const limit = compileLimit(c, s.limit, 'LIMIT');
  const offset = compileLimit(c, s.offset, 'OFFSET');
  if (limit === undefined && offset === undefined) return node;
  if (limit !== undefined && node.kind === 'sort') {
    // Top-K: the sort keeps only LIMIT + OFFSET rows.
    const off = offset;
    const pushed: EvalFn = (row, env) => {
      const l = limit(row, env);
      if (l === null) return null;
      return (l as bigint) + (off === undefined ? 0n : ((off(row, env) as bigint | null) ?? 0n));
    };
    node = { ...node, limit: pushed };
  }
  return { kind: 'limit', input: node, limit, offset, columns };
}

// ---- FROM ------------------------------------------------------------------------------

function conjuncts(e: Expr | undefined, out: Expr[] = []): Expr[] {
  if (e === undefined) return out;
  if (e.kind === 'BoolExpr' && e.op === 'and') for (const a of e.args) conjuncts(a, out);
  else out.push(e);
  return out;
}

export function andAll(es: readonly Expr[]): Expr | undefined {
  if (es.length === 0) return undefined;
  if (es.length === 1) return es[0];
  return { kind: 'BoolExpr', op: 'and', args: es };
}

/** Column names a TableRef leaf exposes (before planning), for WHERE pushdown. */
interface LeafInfo {
  readonly alias: string;
  readonly names: ReadonlySet<string>;
}

/** Leaves of the FROM tree whose rows are never NULL-extended, with their names. */
function pushTargets(q: QueryCtx, items: readonly TableExpr[], out: Map<TableExpr, LeafInfo>, all: LeafInfo[]): void {
  const visit = (t: TableExpr, preserved: boolean): void => {
    if (t.kind === 'TableRef') {
      const info = leafInfo(q, t);
      all.push(info ?? { alias: t.alias?.name ?? t.table.name, names: new Set(['\u0000opaque']) });
      if (info !== undefined && preserved) out.set(t, info);
    } else if (t.kind === 'Join') {
      visit(t.left, preserved && (t.type === 'inner' || t.type === 'cross' || t.type === 'left'));
      visit(t.right, preserved && (t.type === 'inner' || t.type === 'cross' || t.type === 'right'));
    } else all.push({ alias: t.alias?.name ?? '', names: new Set(['\u0000opaque']) });
  };
  for (const i of items) visit(i, true);
}

function leafInfo(q: QueryCtx, t: Extract<TableExpr, { kind: 'TableRef' }>): LeafInfo | undefined {
  if (t.table.schema === undefined && q.ctes.has(t.table.name)) return undefined;
  if (t.alias !== undefined && t.alias.columns.length > 0) return undefined;
  if (isVirtualTable(t.table)) return undefined;
  let names: Set<string>;
  try {
    const p = planSelect(q.ctx, leafSelect(t, [], []));
    names = new Set((p.result as ResultColumn[]).map((c) => c.name));
  } catch {
    return undefined;
  }
  return { alias: t.alias?.name ?? t.table.name, names };
}

/** The context single-table leaves are planned in: with the outer row's columns when there is one. */
function leafCtx(q: QueryCtx): PlanContext {
  const o = q.outer;
  return o === undefined ? q.ctx : { ...q.ctx, outerRef: (names) => outerRef(o, names) };
}

function leafLocking(q: QueryCtx): SelectStatement['locking'] {
  return q.lock === 'exclusive' ? [{ strength: 'update', of: [], wait: 'block' }] : [];
}

function leafSelect(t: Extract<TableExpr, { kind: 'TableRef' }>, where: readonly Expr[], locking: SelectStatement['locking']): SelectStatement {
  return {
    kind: 'Select',
    with: undefined,
    body: { kind: 'SelectClause', distinct: false, targets: [{ expr: { kind: 'ColumnRef', names: [], star: true }, alias: undefined }], from: [t], where: andAll(where), groupBy: [], having: undefined, windows: [] },
    orderBy: [],
    limit: undefined,
    offset: undefined,
    locking,
    asOfSystemTime: undefined,
  };
}

/** The leaf a conjunct only reads (every column reference resolves there), if any. */
function pushTarget(conj: Expr, leaves: ReadonlyMap<TableExpr, LeafInfo>, all: readonly LeafInfo[]): TableExpr | undefined {
  if (exprHas(conj, (x) => isSpecial(x) || (x.kind === 'FuncCall' && /^(random|nextval|gen_random_uuid|unique_rowid)$/.test(x.name[x.name.length - 1] as string)))) return undefined;
  let target: LeafInfo | undefined;
  let ok = true;
  let refs = 0;
  walkExpr(conj, (x) => {
    if (!ok || x.kind !== 'ColumnRef') return ok;
    refs++;
    if (x.star) {
      ok = false;
      return false;
    }
    const col = x.names[x.names.length - 1] as string;
    const tbl = x.names.length >= 2 ? x.names[x.names.length - 2] : undefined;
    const owners = all.filter((l) => (tbl === undefined || l.alias === tbl) && (l.names.has(col) || l.names.has('\u0000opaque')));
    if (owners.length !== 1) ok = false;
    else if (target === undefined) target = owners[0];
    else if (target !== owners[0]) ok = false;
    return ok;
  });
  if (!ok || target === undefined || refs === 0) return undefined;
  for (const [t, info] of leaves) if (info === target) return t;
  return undefined;
}

/** The FROM list: comma-separated items are inner joins without a condition. */
function planFromList(q: QueryCtx, from: readonly TableExpr[], pushed: ReadonlyMap<TableExpr, Expr[]>): Rel {
  if (from.length === 0) return { node: { kind: 'values', rows: [[]], columns: [] }, columns: [] };
  let rel = planFromItem(q, from[0] as TableExpr, pushed);
  for (let i = 1; i < from.length; i++) {
    const t = from[i] as TableExpr;
    rel = (t.kind === 'SubqueryRef' && t.lateral ? planLateral(q, rel, t, 'inner', undefined) : undefined) ?? joinRels(q, 'inner', rel, planFromItem(q, t, pushed), undefined);
  }
  return rel;
}

/**
 * Index nested-loop join: when the left side yields a bounded number of rows
 * (a point lookup, VALUES), the right table is planned once as a
 * single-table read whose WHERE is its pushed conjuncts plus the ON
 * conjuncts, with the left row's columns as constants — so `r.g = p.pid`
 * becomes a span on an index of r.g (or r's primary key) — and an apply node
 * runs it per left row (LEFT: NULL-extended when nothing matches). Undefined
 * when the left side is not bounded or the right read would be a full scan
 * (the hash / lookup join is then better).
 */
function planIndexApply(q: QueryCtx, l: Rel, t: Extract<TableExpr, { kind: 'TableRef' }>, type: 'inner' | 'left', on: Expr, pushed: readonly Expr[]): Rel | undefined {
  if (!boundedRows(l.node) || leafInfo(q, t) === undefined) return undefined;
  const slot = new WeakMap<EvalEnv, readonly Datum[]>();
  const lq = new QueryCtx(q.ctx, q.ctes, q.lock, { scope: new Scope(l.columns), slot, parent: q.outer });
  const onConj = conjuncts(on).filter((x) => !exprHas(x, isSpecial));
  let p: QueryPlan;
  try {
    p = planSelect(leafCtx(lq), leafSelect(t, [...pushed, ...onConj], leafLocking(q)));
  } catch {
    return undefined;
  }
  // Not for a full scan (hash join), nor for primary-key points (the lookup join batches those gets).
  const scan = leafScan(p.root);
  if (scan === undefined || !readsSpans(scan) || (scan.spans.kind === 'points' && scan.index === undefined)) return undefined;
  const alias = t.alias?.name ?? t.table.name;
  const columns = [...l.columns, ...resultScope(p.result as ResultColumn[], alias)];
  const pred = compilerFor(q, new Scope(columns)).compileBool(on, 'JOIN/ON').fn;
  const text = `${type === 'left' ? 'LEFT JOIN ' : 'JOIN '}${formatTableExpr(t)} ON ${formatExpr(on)} (index nested loop)`;
  return { node: { kind: 'apply', input: l.node, plan: p.root, mode: type === 'left' ? 'lateral-left' : 'lateral', outer: slot, on: pred, text, columns }, columns };
}

/** Rows a plan can yield are few and known up front: a point lookup (≤ 1024 keys) or a VALUES list. */
function boundedRows(n: PlanNode): boolean {
  switch (n.kind) {
    case 'scan':
      return n.spans.kind === 'points';
    case 'values':
      return n.rows.length <= 1024;
    case 'limit':
    case 'filter':
    case 'project':
    case 'sort':
      return boundedRows(n.input);
    default:
      return false;
  }
}

/** The scan under a single-table plan's filter / project / limit / sort. */
function leafScan(n: PlanNode): ScanNode | undefined {
  switch (n.kind) {
    case 'scan':
      return n;
    case 'filter':
    case 'project':
    case 'limit':
    case 'sort':
      return leafScan(n.input);
    default:
      return undefined;
  }
}

/** Whether a scan reads key spans (not the whole table). */
function readsSpans(n: ScanNode): boolean {
  const sp = n.spans;
  return sp.kind === 'points' || (sp.prefixes[0] ?? []).length > 0 || sp.lo !== undefined || sp.hi !== undefined;
}

/**
 * `left, LATERAL (subquery) s` / `left [LEFT] JOIN LATERAL (…) s ON …` (and a
 * function in FROM, which is implicitly lateral) whose subquery reads `left`'s
 * columns: an apply node runs the subquery per left row, publishing the row
 * as its outer row, and emits left ++ each subquery row that passes `on`
 * (LEFT: left ++ NULLs when none does). Undefined when the subquery does not
 * read `left` (it is then an ordinary join).
 */
function planLateral(q: QueryCtx, left: Rel, t: Extract<TableExpr, { kind: 'SubqueryRef' }>, type: 'inner' | 'left', on: Expr | undefined): Rel | undefined {
  if (t.alias === undefined) throw new SqlError('sql.syntax_error', '42601', 'subquery in FROM must have an alias');
  try {
    planStatement(new QueryCtx(q.ctx, q.ctes, 'none', q.outer), t.query);
    return undefined;
  } catch {
    // reads the left side (or is wrong: planned again below, which reports it)
  }
  const slot = new WeakMap<EvalEnv, readonly Datum[]>();
  const inner = new QueryCtx(q.ctx, q.ctes, 'none', { scope: new Scope(left.columns), slot, parent: q.outer });
  const sub = planStatement(inner, t.query);
  const columns = [...left.columns, ...renameColumns(sub.columns, t.alias.columns, t.alias.name)];
  const pred = on === undefined ? undefined : compilerFor(q, new Scope(columns)).compileBool(on, 'JOIN/ON').fn;
  const text = `${type === 'left' ? 'LEFT JOIN ' : ''}${formatTableExpr(t)}${on === undefined ? '' : ` ON ${formatExpr(on)}`}`;
  return { node: { kind: 'apply', input: left.node, plan: sub.node, mode: type === 'left' ? 'lateral-left' : 'lateral', outer: slot, on: pred, text, columns }, columns };
}

function planFromItem(q: QueryCtx, t: TableExpr, pushed: ReadonlyMap<TableExpr, Expr[]>): Rel {
  switch (t.kind) {
    case 'TableRef': {
      const name = t.table.name;
      const cte = t.table.schema === undefined ? q.ctes.get(name) : undefined;
      if (cte !== undefined) return planCteRef(q, name, cte, t.alias?.name ?? name, t.alias?.columns ?? []);
      const vt = virtualTable(t.table, { snapshot: q.ctx.snapshot, database: q.ctx.database, user: 'root' });
      if (vt !== undefined) {
        const alias = t.alias?.name ?? name;
        const columns = renameColumns(vt.columns.map((c) => ({ ...c, table: alias })), t.alias?.columns ?? [], alias);
        return { node: { kind: 'values', rows: vt.rows.map((r) => r.map((d) => () => d)), columns }, columns };
      }
      const p = planSelect(leafCtx(q), leafSelect(t, pushed.get(t) ?? [], leafLocking(q)));
      const alias = t.alias?.name ?? name;
      const result = p.result as ResultColumn[];
      return { node: p.root, columns: renameColumns(resultScope(result, alias), t.alias?.columns ?? [], alias), result };
    }
    case 'SubqueryRef': {
      if (t.alias === undefined) throw new SqlError('sql.syntax_error', '42601', 'subquery in FROM must have an alias');
      const rel = planStatement(q, t.query);
      return { node: rel.node, columns: renameColumns(rel.columns, t.alias.columns, t.alias.name) };
    }
    case 'Join':
      return planJoin(q, t, pushed);
    default:
      throw unimplemented('this FROM item');
  }
}

function renameColumns(cols: readonly ScopeColumn[], names: readonly string[], table: string): ScopeColumn[] {
  if (names.length > cols.filter((c) => !c.hidden).length) throw new SqlError('sql.invalid_column_reference', '42P10', `table "${table}" has ${cols.length} columns available but ${names.length} columns specified`);
  return cols.map((c, i) => ({ ...c, name: names[i] ?? c.name, table }));
}

function planCteRef(q: QueryCtx, name: string, cte: CteDef, alias: string, colAliases: readonly string[]): Rel {
  if (cte.working !== undefined) {
    const columns = renameColumns(cte.working.columns, colAliases, alias);
    return { node: { kind: 'working-table', working: cte.working, name, columns }, columns };
  }
  const body = cte.stmt.body;
  const selfRef = cte.recursive && body.kind === 'SetOp' && statementMentions(cte.stmt, name);
  let rel: Rel;
  if (!selfRef) rel = planStatement(q, cte.stmt);
  else {
    if (body.kind !== 'SetOp' || body.op !== 'union') throw unimplemented(`WITH RECURSIVE "${name}" whose body is not a UNION`);
    const innerCtes = new Map(q.ctes);
    innerCtes.delete(name);
    const anchorQ = new QueryCtx(q.ctx, innerCtes, q.lock, q.outer);
    const anchor = planBody(anchorQ, body.left);
    const anchorCols = renameColumns(anchor.columns, cte.columns, name);
    const working = { rows: new WeakMap<EvalEnv, Datum[][]>(), columns: anchorCols };
    const recCtes = new Map(q.ctes);
    recCtes.set(name, { ...cte, working });
    const recQ = new QueryCtx(q.ctx, recCtes, q.lock, q.outer);
    const rec = planBody(recQ, body.right);
    if (rec.columns.length !== anchorCols.length) throw new SqlError('sql.syntax_error', '42601', 'each UNION query must have the same number of columns');
    const types = anchorCols.map((c) => c.type);
    const recCast = castRel(rec, types);
    const node: PlanNode = { kind: 'recursive-cte', anchor: anchor.node, recursive: recCast.node, working: { rows: working.rows }, union: body.all ? 'all' : 'distinct', types, maxIterations: MAX_RECURSIVE_ITERATIONS, name, columns: anchorCols };
    rel = { node, columns: anchorCols };
    // The working table node reads `working.rows`; share the same map.
    (node.working as { rows: WeakMap<EvalEnv, Datum[][]> }).rows = working.rows;
  }
  const cols = renameColumns(renameColumns(rel.columns, cte.columns, name), colAliases, alias);
  return { node: rel.node, columns: cols };
}

function statementMentions(s: SelectStatement, name: string): boolean {
  return JSON.stringify(s, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)).includes(`"name":"${name}"`);
}

function planJoin(q: QueryCtx, j: JoinExpr, pushed: ReadonlyMap<TableExpr, Expr[]>): Rel {
  const l = planFromItem(q, j.left, pushed);
  if (j.right.kind === 'TableRef' && j.on !== undefined && (j.type === 'inner' || j.type === 'left') && j.alias === undefined && !j.natural && j.using.length === 0) {
    const ia = planIndexApply(q, l, j.right, j.type, j.on, pushed.get(j.right) ?? []);
    if (ia !== undefined) return ia;
  }
  if (j.right.kind === 'SubqueryRef' && j.right.lateral) {
    const simple = !j.natural && j.using.length === 0 && j.alias === undefined;
    const lat = simple && (j.type === 'inner' || j.type === 'cross' || j.type === 'left') ? planLateral(q, l, j.right, j.type === 'left' ? 'left' : 'inner', j.on) : undefined;
    if (lat !== undefined) return lat;
  }
  const r = planFromItem(q, j.right, pushed);
  let using = j.using;
  if (j.natural) using = l.columns.filter((c) => !c.hidden && r.columns.some((rc) => !rc.hidden && rc.name === c.name)).map((c) => c.name);
  const type: JoinType = j.type === 'cross' ? 'inner' : j.type;
  if (using.length === 0) {
    const rel = joinRels(q, type, l, r, j.on);
    return j.alias !== undefined ? { ...rel, columns: renameColumns(rel.columns, j.alias.columns, j.alias.name) } : rel;
  }
  const lIdx = using.map((n) => findColumn(l.columns, n, 'left'));
  const rIdx = using.map((n) => findColumn(r.columns, n, 'right'));
  const eqs: Expr[] = [];
  const lw = l.columns.length;
  // Join on positional references so names never clash.
  const scopeCols = [...l.columns.map((c, i) => ({ ...c, name: `\u0000l${i}` })), ...r.columns.map((c, i) => ({ ...c, name: `\u0000r${i}` }))];
  using.forEach((_n, k) => eqs.push({ kind: 'BinaryOp', op: '=', left: { kind: 'ColumnRef', names: [`\u0000l${lIdx[k]}`], star: false }, right: { kind: 'ColumnRef', names: [`\u0000r${rIdx[k]}`], star: false } }));
  const joined = joinRels(q, type, { node: l.node, columns: scopeCols.slice(0, lw) }, { node: r.node, columns: scopeCols.slice(lw) }, andAll(eqs));
  // Output: merged USING columns, then the rest of left, then the rest of right.
  const exprs: EvalFn[] = [];
  const columns: ScopeColumn[] = [];
  using.forEach((n, k) => {
    const li = lIdx[k] as number;
    const ri = (rIdx[k] as number) + lw;
    const lc = l.columns[li] as ScopeColumn;
    const rc = r.columns[ri - lw] as ScopeColumn;
    const t = unifyTypes(lc.type, rc.type) ?? lc.type;
    const cast = (v: Datum, from: SqlType): Datum => (v === null || from.oid === t.oid ? v : castDatum(v, from, t, 'implicit'));
    exprs.push(type === 'full' ? (row) => (row[li] !== null ? cast(row[li] as Datum, lc.type) : cast(row[ri] as Datum, rc.type)) : type === 'right' ? (row) => cast(row[ri] as Datum, rc.type) : (row) => cast(row[li] as Datum, lc.type));
    columns.push({ name: n, table: type === 'right' ? rc.table : lc.table, type: t, hidden: false });
  });
  l.columns.forEach((c, i) => {
    if (lIdx.includes(i)) return;
    exprs.push((row) => row[i] as Datum);
    columns.push(c);
  });
  r.columns.forEach((c, i) => {
    if (rIdx.includes(i)) return;
    exprs.push((row) => row[lw + i] as Datum);
    columns.push(c);
  });
  const node: ProjectNode = { kind: 'project', input: joined.node, exprs, text: [], columns };
  const rel = { node, columns };
  return j.alias !== undefined ? { ...rel, columns: renameColumns(columns, j.alias.columns, j.alias.name) } : rel;
}

function findColumn(cols: readonly ScopeColumn[], name: string, side: string): number {
  const i = cols.findIndex((c) => c.name === name && !c.hidden);
  if (i < 0) throw new SqlError('sql.undefined_column', '42703', `column "${name}" specified in USING clause does not exist in ${side} table`);
  return i;
}

/** Joins two relations on `on` (hash join on its equalities, lookup join when it fits). */
function joinRels(q: QueryCtx, type: JoinType, l0: Rel, r: Rel, on0: Expr | undefined): Rel {
  // Correlated subqueries in ON that read the left row run per left row.
  let l = l0;
  let on = on0;
  if (on !== undefined && (type === 'inner' || type === 'left')) {
    const a = applyCorrelated(q, l, on);
    l = a.rel;
    on = a.expr;
  }
  const columns = [...l.columns, ...r.columns];
  const scope = new Scope(columns);
  const c = compilerFor(q, scope);
  const lc = compilerFor(q, new Scope(l.columns));
  const rc = compilerFor(q, new Scope(r.columns));
  if (on !== undefined) c.compileBool(on, 'JOIN/ON');
  const leftKeys: EvalFn[] = [];
  const rightKeys: EvalFn[] = [];
  const keyTypes: SqlType[] = [];
  const leftCasts: HashJoinNode['leftCasts'][number][] = [];
  const rightCasts: HashJoinNode['rightCasts'][number][] = [];
  const rightKeyExprs: Expr[] = [];
  const leftTyped: Typed[] = [];
  const rest: Expr[] = [];
  for (const conj of conjuncts(on)) {
    if (conj.kind === 'BinaryOp' && conj.op === '=' && !exprHas(conj, isSpecial)) {
      const sides = ((): [Typed, Typed, Expr] | undefined => {
        const a = tryCompile(lc, conj.left);
        const b = tryCompile(rc, conj.right);
        if (a !== undefined && b !== undefined && refsColumns(conj.left) && refsColumns(conj.right)) return [a, b, conj.right];
        const a2 = tryCompile(lc, conj.right);
        const b2 = tryCompile(rc, conj.left);
        if (a2 !== undefined && b2 !== undefined && refsColumns(conj.left) && refsColumns(conj.right)) return [a2, b2, conj.left];
        return undefined;
      })();
      if (sides !== undefined) {
        const [a, b, rExpr] = sides;
        const u = unifyTypes(a.type, b.type);
        if (u === undefined) throw opError('=', a.type, b.type);
        const kt = u.family === 'unknown' ? T.text : u;
        leftKeys.push(a.fn);
        rightKeys.push(b.fn);
        keyTypes.push(kt);
        leftCasts.push(caster(a.type, kt));
        rightCasts.push(caster(b.type, kt));
        rightKeyExprs.push(rExpr);
        leftTyped.push(a);
        continue;
      }
    }
    rest.push(conj);
  }
  const onRest = rest.length > 0 ? c.compileBool(andAll(rest) as Expr, 'JOIN/ON').fn : undefined;
  const text = on !== undefined ? formatExpr(on) : 'true';
  const lookup = lookupJoin(type, l, r, rightKeyExprs, leftTyped, onRest, text, columns, c);
  if (lookup !== undefined) return { node: lookup, columns };
  const node: HashJoinNode = { kind: 'hash-join', type, left: l.node, right: r.node, leftKeys, rightKeys, keyTypes, leftCasts, rightCasts, on: onRest, text, leftWidth: l.columns.length, rightWidth: r.columns.length, columns };
  return { node, columns };
}

function refsColumns(e: Expr): boolean {
  return exprHas(e, (x) => x.kind === 'ColumnRef');
}

function tryCompile(c: ExprCompiler, e: Expr): Typed | undefined {
  try {
    return c.resolveUnknown(c.compile(e));
  } catch {
    return undefined;
  }
}

function caster(from: SqlType, to: SqlType): (d: Exclude<Datum, null>) => Exclude<Datum, null> {
  if (from.oid === to.oid) return (d) => d;
  return (d) => castDatum(d, from, to, 'implicit') as Exclude<Datum, null>;
}

/**
 * A lookup join when the right side is a whole-table read of one table
 * (project ─ [filter] ─ scan over the full span) and the equalities bind every
 * primary-key column of that table to a left-side expression.
 */
function lookupJoin(type: JoinType, l: Rel, r: Rel, rightKeyExprs: readonly Expr[], leftTyped: readonly Typed[], on: EvalFn | undefined, text: string, columns: readonly ScopeColumn[], c: ExprCompiler): PlanNode | undefined {
  if (type !== 'inner' && type !== 'left') return undefined;
  const proj = r.node;
  if (proj.kind !== 'project') return undefined;
  let inner = proj.input;
  let rightFilter: EvalFn | undefined;
  if (inner.kind === 'filter') {
    rightFilter = inner.pred;
    inner = inner.input;
  }
  if (inner.kind !== 'scan') return undefined;
  const scan: ScanNode = inner;
  const sp = scan.spans;
  if (sp.kind !== 'range' || sp.lo !== undefined || sp.hi !== undefined || sp.prefixes.length !== 1 || (sp.prefixes[0] as readonly EvalFn[]).length !== 0) return undefined;
  const pk = scan.table.codec.pkOrdinals;
  const keyFns: EvalFn[] = [];
  for (const ord of pk) {
    // The right projection column that is scan column `ord`.
    const colName = scan.columns[ord]?.name;
    const k = rightKeyExprs.findIndex((e) => e.kind === 'ColumnRef' && !e.star && e.names[e.names.length - 1] === colName && r.columns.filter((x) => x.name === colName).length === 1 && r.result?.[r.columns.findIndex((x) => x.name === colName)]?.name === colName);
    if (k < 0 || colName === undefined) return undefined;
    const lt = leftTyped[k] as Typed;
    const pkType = scan.table.codec.types[ord] as SqlType;
    if (lt.type.family !== pkType.family) return undefined;
    const f = lt.type.oid === pkType.oid ? lt.fn : c.coerce(lt, pkType, 'implicit').fn;
    keyFns.push(f);
  }
  if (keyFns.length === 0) return undefined;
  return { kind: 'lookup-join', type, left: l.node, scan, leftKeys: keyFns, rightFilter, rightExprs: proj.exprs, on, text, leftWidth: l.columns.length, rightWidth: r.columns.length, columns };
}

// ---- SELECT clause ---------------------------------------------------------------------

function compilerFor(q: QueryCtx, scope: Scope): ExprCompiler {
  const c = new ExprCompiler(scope, q.ctx.paramTypes);
  c.subLinks = (e, hint) => compileSubLink(q, c, e, hint);
  if (q.outer !== undefined) c.outerRef = (names) => outerRef(q.outer, names);
  return c;
}

function outerRef(o: OuterRow | undefined, names: readonly string[]): Typed | undefined {
  for (let cur = o; cur !== undefined; cur = cur.parent) {
    let i: number;
    try {
      i = cur.scope.resolve(names);
    } catch {
      continue;
    }
    const slot = cur.slot;
    return { type: (cur.scope.columns[i] as ScopeColumn).type, fn: (_row, env) => (slot.get(env)?.[i] ?? null) as Datum };
  }
  return undefined;
}

let applySeq = 0;

/**
 * Replaces the correlated scalar / EXISTS subqueries of `e` that read `rel`'s
 * row with a column that an apply node over `rel` computes per row.
 * Uncorrelated ones (run once) and other shapes are left as they are.
 */
function applyCorrelated(q: QueryCtx, rel: Rel, e: Expr): { rel: Rel; expr: Expr } {
  if (!exprHas(e, (x) => x.kind === 'SubLink')) return { rel, expr: e };
  let cur = rel;
  const expr = mapExpr(e, (x) => {
    if (x.kind !== 'SubLink') return x;
    try {
      planStatement(new QueryCtx(q.ctx, q.ctes, 'none', q.outer), x.query);
      return x;
    } catch (err) {
      if (!(err instanceof SqlError)) throw err;
      // Reads the outer row — or is wrong, which planning it with the outer row reports.
    }
    const slot = new WeakMap<EvalEnv, readonly Datum[]>();
    const inner = new QueryCtx(q.ctx, q.ctes, 'none', { scope: new Scope(cur.columns), slot, parent: q.outer });
    const sub = planStatement(inner, x.query);
    if (x.type !== 'exists' && sub.columns.length !== 1) throw new SqlError('sql.syntax_error', '42601', sub.columns.length > 1 && x.type !== 'scalar' ? 'subquery has too many columns' : 'subquery must return only one column');
    const name = `a${applySeq++}`;
    const ref: Expr = { kind: 'ColumnRef', names: ['\u0000apply', name], star: false };
    const mode = x.type === 'exists' || x.type === 'scalar' ? x.type : 'array';
    const col = (sub.columns[0] as ScopeColumn | undefined)?.type;
    let type: SqlType = T.bool;
    if (mode === 'scalar') type = col as SqlType;
    else if (mode === 'array') type = subqueryArrayType(col as SqlType);
    const columns = [...cur.columns, { name, table: '\u0000apply', type, hidden: true }];
    cur = { node: { kind: 'apply', input: cur.node, plan: sub.node, mode, outer: slot, text: formatExpr(x), columns }, columns, result: cur.result };
    // IN / op ANY / op ALL compare with the array of the subquery's values, with the same NULL rules.
    if (x.type === 'in' || x.type === 'any' || x.type === 'all') return { kind: 'ArrayOp', op: x.type === 'in' ? '=' : (x.op as string), quantifier: x.type === 'all' ? 'all' : 'any', left: x.test as Expr, right: ref };
    return ref;
  });
  return { rel: cur, expr };
}

function planClause(q: QueryCtx, s0: SelectStatement, b: Extract<SelectBody, { kind: 'SelectClause' }>): Rel {
  let s = s0;
  if (exprHas(b.where, isWindow) || exprHas(b.having, isWindow) || b.groupBy.some((g) => exprHas(g, isWindow))) {
    throw new SqlError('sql.windowing_error', '42P20', 'window functions are not allowed in WHERE, GROUP BY or HAVING');
  }
  // FROM with WHERE pushdown into single-table leaves.
  const where = conjuncts(b.where);
  if (where.some((w) => exprHas(w, isAgg))) throw new SqlError('sql.grouping_error', '42803', 'aggregate functions are not allowed in WHERE');
  const leaves = new Map<TableExpr, LeafInfo>();
  const all: LeafInfo[] = [];
  pushTargets(q, b.from, leaves, all);
  const pushed = new Map<TableExpr, Expr[]>();
  const rest: Expr[] = [];
  for (const w of where) {
    // A single table takes every plain conjunct (references to an outer row are constants there).
    const t = b.from.length === 1 && b.from[0]?.kind === 'TableRef' ? (leaves.has(b.from[0]) && !exprHas(w, isSpecial) ? b.from[0] : undefined) : pushTarget(w, leaves, all);
    if (t === undefined) rest.push(w);
    else {
      const list = pushed.get(t) ?? [];
      list.push(w);
      pushed.set(t, list);
    }
  }
  let rel = planFromList(q, b.from, pushed);
  const singleTable = b.from.length === 1 && b.from[0]?.kind === 'TableRef' ? rel.result : undefined;
  // Correlated [NOT] EXISTS with equality correlations become semi / anti joins.
  for (let i = 0; i < rest.length; i++) {
    const semi = decorrelateExists(q, rel, rest[i] as Expr);
    if (semi !== undefined) {
      rel = semi;
      rest.splice(i--, 1);
    }
  }
  for (let i = 0; i < rest.length; i++) {
    const a = applyCorrelated(q, rel, rest[i] as Expr);
    rel = a.rel;
    rest[i] = a.expr;
  }
  let scope = new Scope(rel.columns);
  let c = compilerFor(q, scope);
  let node = rel.node;
  if (rest.length > 0) {
    const pred = c.compileBool(andAll(rest) as Expr, 'WHERE');
    node = { kind: 'filter', input: node, pred: pred.fn, text: rest.map(formatExpr).join(' AND '), columns: scope.columns };
  }
  // Expand * before aggregation rewrites.
  const targets: SelectTarget[] = [];
  for (const t of b.targets) {
    if (t.expr.kind === 'ColumnRef' && t.expr.star) {
      const qual = t.expr.names[0];
      if (scope.columns.length === 0) throw new SqlError('sql.syntax_error', '42601', 'SELECT * with no tables specified is not valid');
      if (qual !== undefined && !scope.columns.some((col) => col.table === qual)) throw new SqlError('sql.undefined_table', '42P01', `missing FROM-clause entry for table "${qual}"`);
      scope.columns.forEach((col, i) => {
        if (col.hidden || (qual !== undefined && col.table !== qual)) return;
        targets.push({ expr: { kind: 'ColumnRef', names: [`\u0000c${i}`], star: false }, alias: col.name });
      });
    } else targets.push(t);
  }
  // Stars expand to references that resolve to their position; when names clash
  // (a self-join), rows are widened with positional copies `\0cN` of every column.
  if (targets.some((t) => t.expr.kind === 'ColumnRef' && (t.expr.names[0] as string).startsWith('\u0000c'))) {
    const base = scope;
    const fixed = targets.map((t) => {
      const n0 = t.expr.kind === 'ColumnRef' ? (t.expr.names[0] as string) : '';
      if (!n0.startsWith('\u0000c')) return t;
      const i = Number(n0.slice(2));
      const col = base.columns[i] as ScopeColumn;
      for (const names of [[col.name], ...(col.table !== undefined ? [[col.table, col.name]] : [])]) {
        try {
          if (base.resolve(names) === i) return { expr: { kind: 'ColumnRef', names, star: false } as Expr, alias: t.alias };
        } catch {
          // ambiguous: positional
        }
      }
      return t;
    });
    targets.splice(0, targets.length, ...fixed);
    if (targets.some((t) => t.expr.kind === 'ColumnRef' && (t.expr.names[0] as string).startsWith('\u0000c'))) {
      const posCols = base.columns.map((col, i) => ({ ...col, name: `\u0000c${i}`, table: undefined }));
      scope = new Scope([...base.columns, ...posCols]);
      const copy = base.columns.map((_c, i) => (row: readonly Datum[]) => row[i] as Datum);
      node = { kind: 'project', input: node, exprs: [...copy, ...copy], text: [], columns: scope.columns };
      c = compilerFor(q, scope);
    }
  }
  const baseWidth = rel.columns.length;
  if (b.windows.length > 0) {
    // Inline named windows (WINDOW w AS (…)) so aggregation rewrites see their expressions.
    const inline = (e: Expr): Expr => mapExpr(e, (x) => (x.kind === 'FuncCall' && x.over !== undefined && x.over.refName !== undefined ? { ...x, over: resolveWindow(x.over, b.windows) } : x));
    targets.splice(0, targets.length, ...targets.map((t) => ({ expr: inline(t.expr), alias: t.alias })));
    s = { ...s, orderBy: s.orderBy.map((o) => ({ ...o, expr: inline(o.expr) })) };
  }
  let orderExprs = s.orderBy.map((o) => resolveOrderRef(o.expr, targets, scope));
  let having = b.having;
  const hasAgg = b.groupBy.length > 0 || having !== undefined || targets.some((t) => exprHas(t.expr, isAgg)) || orderExprs.some((e) => e !== undefined && typeof e !== 'number' && exprHas(e, isAgg));
  let projTargets = targets;
  let aggRw: AggRewrite | undefined;
  const aggInScope = scope;
  if (hasAgg) {
    const agg = planAggregate(q, c, node, b.groupBy, targets, having, orderExprs, baseWidth);
    node = agg.node;
    scope = agg.scope;
    c = compilerFor(q, scope);
    projTargets = agg.targets;
    aggRw = agg.rw;
    having = agg.having;
    orderExprs = agg.order;
    const hasSubLink = (e: Expr | number | undefined): boolean => e !== undefined && typeof e !== 'number' && exprHas(e, (x) => x.kind === 'SubLink');
    if (hasSubLink(having) || projTargets.some((t) => hasSubLink(t.expr)) || orderExprs.some(hasSubLink)) {
      // Correlated subqueries over grouped rows read the GROUP BY columns by their names.
      const g = groupAliases({ node, columns: scope.columns }, agg.rw, aggInScope);
      node = g.node;
      scope = new Scope(g.columns);
      c = compilerFor(q, scope);
      if (having !== undefined) {
        const a = applyCorrelated(q, g, having);
        node = a.rel.node;
        scope = new Scope(a.rel.columns);
        c = compilerFor(q, scope);
        having = a.expr;
      }
    }
    if (having !== undefined) {
      const pred = c.compileBool(having, 'HAVING');
      node = { kind: 'filter', input: node, pred: pred.fn, text: formatExpr(b.having as Expr), columns: scope.columns };
    }
  }
  const orderSubLinks = orderExprs.some((e) => typeof e !== 'number' && exprHas(e, (x) => x.kind === 'SubLink'));
  if (orderSubLinks || projTargets.some((t) => exprHas(t.expr, (x) => x.kind === 'SubLink'))) {
    let cur: Rel = { node, columns: scope.columns };
    projTargets = projTargets.map((t) => {
      const a = applyCorrelated(q, cur, t.expr);
      cur = a.rel;
      return { expr: a.expr, alias: t.alias };
    });
    if (orderSubLinks) {
      orderExprs = orderExprs.map((e) => {
        if (typeof e === 'number') return e;
        const a = applyCorrelated(q, cur, e);
        cur = a.rel;
        return a.expr;
      });
    }
    node = cur.node;
    scope = new Scope(cur.columns);
    c = compilerFor(q, scope);
  }
  // unnest(array) in the select list: a project-set node appends the elements.
  const isUnnest = (x: Expr): boolean => x.kind === 'FuncCall' && x.over === undefined && x.name.length === 1 && SRF_ARITY[x.name[0] as string]?.includes(x.args.length) === true;
  if (!hasAgg && projTargets.some((t) => exprHas(t.expr, isUnnest))) {
    const arrays: EvalFn[] = [];
    const texts: string[] = [];
    const cols = [...scope.columns];
    const sc = c;
    projTargets = projTargets.map((t) => ({
      alias: t.alias,
      expr: mapExpr(t.expr, (x) => {
        if (!isUnnest(x) || x.kind !== 'FuncCall') return x;
        const fname = x.name[0];
        const a = fname === 'generate_series' ? compileSeries(sc, x.args) : fname === 'generate_subscripts' ? generateSubscripts(sc, x.args) : fname === 'pg_partition_ancestors' ? partitionAncestors(sc, x.args[0] as Expr) : sc.compile(x.args[0] as Expr);
        if (a.type.family !== 'array') throw new SqlError('sql.undefined_function', '42883', `function unnest(${formatType(a.type)}) does not exist`);
        arrays.push(a.fn);
        texts.push(formatExpr(x));
        const name = `s${cols.length}`;
        cols.push({ name, table: '\u0000srf', type: a.type.arrayElem as SqlType, hidden: true });
        return { kind: 'ColumnRef', names: ['\u0000srf', name], star: false };
      }),
    }));
    node = { kind: 'project-set', input: node, arrays, text: texts, columns: cols };
    scope = new Scope(cols);
    c = compilerFor(q, scope);
  }
  // Window functions: one window node per distinct window, appending a column per call.
  const win = planWindows(q, c, node, scope, projTargets, orderExprs, b.windows);
  if (win !== undefined) {
    node = win.node;
    scope = win.scope;
    c = compilerFor(q, scope);
    projTargets = win.targets;
    orderExprs = win.order;
  }
  // Project targets ++ extra ORDER BY keys.
  const exprs: EvalFn[] = [];
  const outCols: ResultColumn[] = [];
  const typed = projTargets.map((t) => c.resolveUnknown(c.compile(t.expr)));
  typed.forEach((t, i) => {
    const tgt = projTargets[i] as SelectTarget;
    exprs.push(t.fn);
    let tableOid = 0;
    let columnAttr = 0;
    if (singleTable !== undefined && tgt.expr.kind === 'ColumnRef') {
      try {
        const pos = scope.resolve(tgt.expr.names) % Math.max(1, baseWidth);
        const rc = singleTable[pos];
        if (rc !== undefined) ({ tableOid, columnAttr } = rc);
      } catch {
        // not a plain column
      }
    }
    outCols.push({ name: outputName(targets[i] as SelectTarget), type: t.type, tableOid, columnAttr });
  });
  const nOut = exprs.length;
  const sortKeys: SortKey[] = [];
  const distinctOn = Array.isArray(b.distinct) ? (b.distinct as readonly Expr[]) : undefined;
  s.orderBy.forEach((o, i) => {
    const ref = orderExprs[i];
    let idx: number;
    let type: SqlType;
    if (typeof ref === 'number') {
      idx = ref;
      type = (typed[ref] as Typed).type;
    } else {
      const e = ref as Expr;
      const text = formatExpr(e);
      const same = projTargets.findIndex((t) => formatExpr(t.expr) === text);
      if (same >= 0) {
        idx = same;
        type = (typed[same] as Typed).type;
      } else {
        if (b.distinct === true) throw new SqlError('sql.invalid_column_reference', '42P10', 'for SELECT DISTINCT, ORDER BY expressions must appear in select list');
        const t = c.resolveUnknown(c.compile(e));
        idx = exprs.length;
        exprs.push(t.fn);
        type = t.type;
      }
    }
    const desc = o.dir === 'desc';
    const at = idx;
    sortKeys.push({ fn: (row) => row[at] as Datum, desc, nullsFirst: o.nulls === 'default' ? desc : o.nulls === 'first', cmp: c.comparator(type, type, 'ORDER BY'), text: `${formatExpr(o.expr)}${desc ? ' DESC' : ''}` });
  });
  const projCols = exprs.map((_f, i) => ({ name: (outCols[i]?.name ?? `\u0000o${i}`), table: undefined, type: i < nOut ? (outCols[i] as ResultColumn).type : T.text, hidden: false }));
  let distinctKeys: { fns: EvalFn[]; types: SqlType[] } | undefined;
  if (distinctOn !== undefined) {
    // DISTINCT ON keys are computed into extra columns too.
    const fns: EvalFn[] = [];
    const types: SqlType[] = [];
    for (const e0 of distinctOn) {
      const r = resolveOrderRef(e0, targets, scope);
      if (typeof r === 'number') {
        fns.push((row) => row[r] as Datum);
        types.push((typed[r] as Typed).type);
        continue;
      }
      const e = aggRw !== undefined ? rewriteForAgg(r as Expr, aggRw, aggInScope) : (r as Expr);
      const t = c.resolveUnknown(c.compile(e));
      const at = exprs.length;
      exprs.push(t.fn);
      projCols.push({ name: `\u0000d${at}`, table: undefined, type: t.type, hidden: false });
      fns.push((row) => row[at] as Datum);
      types.push(t.type);
    }
    distinctKeys = { fns, types };
  } else if (b.distinct === true) {
    distinctKeys = { fns: outCols.map((_x, i) => (row: readonly Datum[]) => row[i] as Datum), types: outCols.map((x) => x.type) };
  }
  node = { kind: 'project', input: node, exprs, text: projTargets.map((t) => formatExpr(t.expr)), columns: projCols };
  if (sortKeys.length > 0) node = { kind: 'sort', input: node, keys: sortKeys, columns: projCols };
  if (distinctKeys !== undefined) node = { kind: 'distinct', input: node, keys: distinctKeys.fns, keyTypes: distinctKeys.types, on: distinctOn !== undefined, columns: projCols };
  node = limitNode(c, node, s, projCols);
  const columns = outCols.map((x) => ({ name: x.name, table: undefined, type: x.type, hidden: false }));
  if (exprs.length > nOut) {
    node = { kind: 'project', input: node, exprs: outCols.map((_x, i) => (row: readonly Datum[]) => row[i] as Datum), text: [], columns };
  }
  return { node, columns, result: outCols };
}

/** ORDER BY / DISTINCT ON item: a target index (ordinal or output name) or an expression. */
function resolveOrderRef(e: Expr, targets: readonly SelectTarget[], scope: Scope): number | Expr {
  if (e.kind === 'Const' && e.type === 'int') {
    const i = Number(e.text);
    if (targets[i - 1] === undefined) throw new SqlError('sql.invalid_column_reference', '42P10', `ORDER BY position ${i} is not in select list`);
    return i - 1;
  }
  if (e.kind === 'ColumnRef' && e.names.length === 1 && !e.star) {
    const name = e.names[0] as string;
    const i = targets.findIndex((t) => outputName(t) === name && (t.alias !== undefined || !(t.expr.kind === 'ColumnRef')));
    if (i >= 0) return i;
    const j = targets.findIndex((t) => t.alias === name);
    if (j >= 0) return j;
    void scope;
  }
  return e;
}

function outputName(t: SelectTarget): string {
  const e = t.expr;
  if (t.alias === undefined && e.kind === 'FuncCall' && e.name[e.name.length - 1] === 'unnest') return 'unnest';
  if (t.alias === undefined && e.kind === 'SubLink') {
    if (e.type === 'exists') return 'exists';
    if (e.type === 'array') return 'array';
    const b = e.query.body;
    if (e.type === 'scalar' && b.kind === 'SelectClause' && b.targets.length === 1) return outputName(b.targets[0] as SelectTarget);
  }
  return coreOutputName(t);
}

// ---- window functions -----------------------------------------------------------------

function resolveWindow(w: WindowDef, named: readonly NamedWindow[]): WindowDef {
  if (w.refName === undefined) return w;
  const base = named.find((n) => n.name === w.refName);
  if (base === undefined) throw new SqlError('sql.undefined_object', '42704', `window "${w.refName}" does not exist`);
  const b = resolveWindow(base.def, named);
  return { refName: undefined, partitionBy: b.partitionBy, orderBy: w.orderBy.length > 0 ? w.orderBy : b.orderBy, frame: w.frame ?? b.frame };
}

const isWindow = (x: Expr): boolean => x.kind === 'FuncCall' && x.over !== undefined;

const WINDOW_FUNCS = new Set(['row_number', 'rank', 'dense_rank', 'lag', 'lead', 'first_value', 'last_value', 'nth_value', 'ntile', 'percent_rank', 'cume_dist']);
const WINDOW_AGGS = new Set(['count', 'sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every']);

function planWindows(
  q: QueryCtx,
  c: ExprCompiler,
  input: PlanNode,
  scope: Scope,
  targets: readonly SelectTarget[],
  order: readonly (number | Expr)[],
  named: readonly NamedWindow[],
): { node: PlanNode; scope: Scope; targets: SelectTarget[]; order: (number | Expr)[] } | undefined {
  const calls: FuncCall[] = [];
  const texts: string[] = [];
  const collect = (e: Expr): void => {
    walkExpr(e, (x) => {
      if (x.kind !== 'FuncCall' || x.over === undefined) return true;
      const t = formatExpr(x);
      if (!texts.includes(t)) {
        for (const a of x.args) if (exprHas(a, isWindow)) throw new SqlError('sql.windowing_error', '42P20', 'window function calls cannot be nested');
        calls.push(x);
        texts.push(t);
      }
      return false;
    });
  };
  for (const t of targets) collect(t.expr);
  for (const o of order) if (typeof o !== 'number') collect(o);
  if (calls.length === 0) return undefined;
  const resolveDef = (w: WindowDef): WindowDef => resolveWindow(w, named);
  // Group calls by window definition.
  const groups = new Map<string, { def: WindowDef; calls: number[] }>();
  calls.forEach((f, i) => {
    const def = resolveDef(f.over as WindowDef);
    const key = formatWindowDef(def);
    let g = groups.get(key);
    if (g === undefined) groups.set(key, (g = { def, calls: [] }));
    g.calls.push(i);
  });
  let node = input;
  let cols = [...scope.columns];
  const colOf: number[] = new Array(calls.length);
  for (const [key, g] of groups) {
    const wc = compilerFor(q, new Scope(cols));
    const part = g.def.partitionBy.map((e) => wc.resolveUnknown(wc.compile(e)));
    const ord = g.def.orderBy.map((o) => {
      const k = sortKey(wc, o.expr, o);
      return { fn: k.fn, desc: k.desc, nullsFirst: k.nullsFirst, cmp: k.cmp };
    });
    const funcs: WindowFuncSpec[] = g.calls.map((i) => windowFunc(wc, calls[i] as FuncCall, g.def));
    const base = cols.length;
    const newCols = funcs.map((f, j) => ({ name: `w${base + j}`, table: '\u0000win', type: f.type, hidden: false }));
    g.calls.forEach((i, j) => {
      colOf[i] = base + j;
    });
    cols = [...cols, ...newCols];
    const frame = g.def.frame === undefined ? undefined : planFrame(wc, g.def.frame, g.def.orderBy, ord.length);
    node = { kind: 'window', input: node, partition: part.map((t) => t.fn), partitionTypes: part.map((t) => t.type), order: ord, funcs, frame, text: key === '' ? '()' : key, columns: cols };
  }
  const rewrite = (e: Expr): Expr =>
    mapExpr(e, (x) => {
      if (x.kind !== 'FuncCall' || x.over === undefined) return x;
      const i = texts.indexOf(formatExpr(x));
      return i >= 0 ? { kind: 'ColumnRef', names: ['\u0000win', `w${colOf[i]}`], star: false } : x;
    });
  void c;
  return { node, scope: new Scope(cols), targets: targets.map((t) => ({ expr: rewrite(t.expr), alias: t.alias })), order: order.map((o) => (typeof o === 'number' ? o : rewrite(o))) };
}

/**
 * A frame clause → WindowFrameSpec. ROWS / GROUPS offsets are bigint row or
 * peer-group counts; RANGE offsets need exactly one ORDER BY key, numeric
 * (offset of a numeric type) or timestamp[tz] (offset an interval).
 */
function planFrame(c: ExprCompiler, f: WindowFrame, orderBy: readonly SortBy[], nOrder: number): WindowFrameSpec {
  const end: FrameBound = f.end ?? { kind: 'current row' };
  const hasOffset = (b: FrameBound): boolean => b.kind === 'preceding' || b.kind === 'following';
  let keyType: SqlType | undefined;
  let offType: SqlType = T.int8;
  if (f.mode === 'range' && (hasOffset(f.start) || hasOffset(end))) {
    if (nOrder !== 1) throw new SqlError('sql.windowing_error', '42P20', 'RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column');
    keyType = c.resolveUnknown(c.compile((orderBy[0] as SortBy).expr)).type;
    if (isNumericType(keyType)) offType = keyType;
    else if (keyType.family === 'timestamp' || keyType.family === 'timestamptz') offType = T.interval;
    else throw new SqlError('sql.feature_not_supported', '0A000', `RANGE with offset PRECEDING/FOLLOWING is not supported for column type ${formatType(keyType)}`);
  }
  if (f.mode === 'groups' && nOrder === 0) throw new SqlError('sql.windowing_error', '42P20', 'GROUPS mode requires an ORDER BY clause');
  const bound = (b: FrameBound): FrameBoundSpec => {
    if (b.kind !== 'preceding' && b.kind !== 'following') return { kind: b.kind, offset: undefined };
    const o = c.compile(b.offset, offType);
    if (exprHas(b.offset, (x) => x.kind === 'ColumnRef' || x.kind === 'SubLink' || isWindow(x) || isAgg(x))) {
      throw new SqlError('sql.invalid_column_reference', '42P10', `argument of ${f.mode.toUpperCase()} must not contain variables`);
    }
    return { kind: b.kind, offset: c.coerce(o, offType, 'implicit').fn };
  };
  let shift: WindowFrameSpec['shift'];
  if (keyType !== undefined) {
    const kt = keyType;
    const ot = offType;
    shift = (key, off, back) => evalBinary(back ? '-' : '+', key, kt, off, ot);
  }
  return { mode: f.mode, start: bound(f.start), end: bound(end), exclude: f.exclude, shift };
}

function windowFunc(c: ExprCompiler, f: FuncCall, def: WindowDef): WindowFuncSpec {
  const name = (f.name[f.name.length - 1] as string).toLowerCase();
  const text = formatExpr(f);
  if (f.filter !== undefined && !WINDOW_AGGS.has(name)) throw unimplemented(`FILTER on window function ${name}`);
  if (WINDOW_FUNCS.has(name)) {
    // PostgreSQL's own answer for DISTINCT in a window call: 0A000, same message.
    if (f.distinct) throw new SqlError('sql.feature_not_supported', '0A000', 'DISTINCT is not implemented for window functions');
    if (f.star) throw new SqlError('sql.syntax_error', '42601', `${name}(*) is not a valid window function call`);
    if (name === 'row_number' || name === 'rank' || name === 'dense_rank' || name === 'percent_rank' || name === 'cume_dist') {
      if (f.args.length !== 0) throw new SqlError('sql.undefined_function', '42883', `function ${name} with arguments does not exist`);
      return { name, args: [], agg: undefined, type: name === 'percent_rank' || name === 'cume_dist' ? T.float8 : T.int8, text };
    }
    if (name === 'ntile') {
      if (f.args.length !== 1) throw new SqlError('sql.undefined_function', '42883', `function ntile with ${f.args.length} arguments does not exist`);
      return { name, args: [c.coerce(c.compile(f.args[0] as Expr, T.int4), T.int4, 'implicit').fn], agg: undefined, type: T.int4, text };
    }
    const maxArgs = name === 'lag' || name === 'lead' ? 3 : name === 'nth_value' ? 2 : 1;
    if (f.args.length < (name === 'nth_value' ? 2 : 1) || f.args.length > maxArgs) throw new SqlError('sql.undefined_function', '42883', `function ${name} with ${f.args.length} arguments does not exist`);
    const v = c.resolveUnknown(c.compile(f.args[0] as Expr));
    const args: EvalFn[] = [v.fn];
    if (f.args.length >= 2) args.push(c.coerce(c.compile(f.args[1] as Expr, name === 'nth_value' ? T.int4 : T.int8), name === 'nth_value' ? T.int4 : T.int8, 'implicit').fn);
    if (f.args.length === 3) args.push(c.coerce(c.compile(f.args[2] as Expr, v.type), v.type, 'implicit').fn);
    return { name: name as WindowFuncSpec['name'], args, agg: undefined, type: v.type, text };
  }
  if (WINDOW_AGGS.has(name)) {
    if (f.distinct) throw unimplemented('DISTINCT in window aggregates');
    const agg = aggSpec(c, { ...f, over: undefined });
    void def;
    return { name: 'aggregate', args: [], agg, type: agg.resultType, text };
  }
  throw unimplemented(`window function ${name}`);
}

// ---- aggregation -----------------------------------------------------------------------

interface AggRewrite {
  readonly groupText: string[];
  readonly groupCols: number[];
  readonly aggs: Map<FuncCall, number>;
  readonly aggText: string[];
  readonly scope: Scope;
  readonly baseWidth: number;
}

/**
 * The aggregate's output widened with a hidden copy of each GROUP BY column
 * under its input name (`p.id`), so a correlated subquery in the select list,
 * HAVING or ORDER BY of a grouped query can read it as an outer column.
 */
function groupAliases(rel: Rel, rw: AggRewrite, inScope: Scope): Rel {
  const extra: ScopeColumn[] = [];
  const fns: EvalFn[] = [];
  rw.groupCols.forEach((ci, gi) => {
    const col = inScope.columns[ci];
    if (ci < 0 || col === undefined) return;
    extra.push({ name: col.name, table: col.table, type: (rw.scope.columns[gi] as ScopeColumn).type, hidden: true });
    fns.push((row) => row[gi] as Datum);
  });
  if (extra.length === 0) return rel;
  const columns = [...rel.columns, ...extra];
  const exprs: EvalFn[] = [...rel.columns.map((_c, i) => (row: readonly Datum[]) => row[i] as Datum), ...fns];
  return { node: { kind: 'project', input: rel.node, exprs, text: [], columns }, columns };
}

function planAggregate(
  q: QueryCtx,
  c: ExprCompiler,
  input: PlanNode,
  groupBy: readonly Expr[],
  targets: readonly SelectTarget[],
  having: Expr | undefined,
  order: readonly (number | Expr)[],
  baseWidth: number,
): { node: PlanNode; scope: Scope; targets: SelectTarget[]; having: Expr | undefined; order: (number | Expr)[]; rw: AggRewrite } {
  const inScope = c.scope;
  const groupExprs = groupBy.map((g) => {
    const r = resolveOrderRef(g, targets, inScope);
    if (typeof r === 'number') {
      if (g.kind === 'ColumnRef') {
        // A name that is both an input column and an output name means the input column (PostgreSQL).
        try {
          inScope.resolve(g.names);
          return g;
        } catch {
          /* output name */
        }
      }
      const t = (targets[r] as SelectTarget).expr;
      if (exprHas(t, isAgg)) throw new SqlError('sql.grouping_error', '42803', 'aggregate functions are not allowed in GROUP BY');
      return t;
    }
    if (exprHas(r, isAgg)) throw new SqlError('sql.grouping_error', '42803', 'aggregate functions are not allowed in GROUP BY');
    return r;
  });
  const groupTyped = groupExprs.map((g) => c.resolveUnknown(c.compile(g)));
  const groupCols = groupExprs.map((g) => (g.kind === 'ColumnRef' && !g.star ? inScope.resolve(g.names) % Math.max(1, baseWidth) : -1));
  const aggs = new Map<FuncCall, number>();
  const aggText: string[] = [];
  const specs: AggSpec[] = [];
  const collect = (e: Expr | undefined): void => {
    if (e === undefined) return;
    walkExpr(e, (x) => {
      if (!isAgg(x)) return true;
      const text = formatExpr(x);
      const known = aggText.indexOf(text);
      if (known >= 0) {
        aggs.set(x, known);
        return false;
      }
      for (const a of x.args) if (exprHas(a, isAgg)) throw new SqlError('sql.grouping_error', '42803', 'aggregate function calls cannot be nested');
      aggs.set(x, specs.length);
      aggText.push(text);
      specs.push(aggSpec(c, x));
      return false;
    });
  };
  for (const t of targets) collect(t.expr);
  collect(having);
  for (const o of order) if (typeof o !== 'number') collect(o);
  const cols: ScopeColumn[] = [
    ...groupTyped.map((t, i) => ({ name: `g${i}`, table: '\u0000agg', type: t.type, hidden: false })),
    ...specs.map((a, i) => ({ name: `a${i}`, table: '\u0000agg', type: a.resultType, hidden: false })),
  ];
  const scope = new Scope(cols);
  const rw: AggRewrite = { groupText: groupExprs.map(formatExpr), groupCols, aggs, aggText, scope, baseWidth };
  const rewrite = (e: Expr): Expr => {
    const out = rewriteForAgg(e, rw, inScope);
    walkExpr(out, (x) => {
      if (x.kind === 'ColumnRef' && !x.star && x.names[0] !== '\u0000agg') {
        const name = x.names[x.names.length - 1] as string;
        let shown = x.names.join('.');
        if (name.startsWith('\u0000c')) {
          const col = inScope.columns[Number(name.slice(2))] as ScopeColumn;
          shown = col.table !== undefined ? `${col.table}.${col.name}` : col.name;
        } else if (x.names.length === 1) {
          try {
            const col = inScope.columns[inScope.resolve(x.names)] as ScopeColumn;
            if (col.table !== undefined) shown = `${col.table}.${col.name}`;
          } catch {
            /* reported as is */
          }
        }
        throw new SqlError('sql.grouping_error', '42803', `column "${shown}" must appear in the GROUP BY clause or be used in an aggregate function`);
      }
      return x.kind !== 'SubLink';
    });
    return out;
  };
  const newTargets = targets.map((t) => ({ expr: rewrite(t.expr), alias: t.alias }));
  const newHaving = having !== undefined ? rewrite(having) : undefined;
  const newOrder = order.map((o) => (typeof o === 'number' ? o : rewrite(o)));
  const node: PlanNode = {
    kind: 'aggregate',
    input: readingAll(input),
    groupKeys: groupTyped.map((t) => t.fn),
    groupTypes: groupTyped.map((t) => t.type),
    groupText: rw.groupText,
    aggs: specs,
    columns: cols,
  };
  void q;
  return { node, scope, targets: newTargets, having: newHaving, order: newOrder, rw };
}

/** `n` with the scan under its filters / projections marked readsAll (the consumer drains it). */
function readingAll(n: PlanNode): PlanNode {
  switch (n.kind) {
    case 'scan':
      return n.limit === undefined ? { ...n, readsAll: true } : n;
    case 'filter':
    case 'project':
      return { ...n, input: readingAll(n.input) };
    default:
      return n;
  }
}

function rewriteForAgg(e: Expr, rw: AggRewrite, inScope?: Scope): Expr {
  const withAggs = mapExpr(e, (x) => {
    if (x.kind === 'FuncCall') {
      const i = rw.aggs.get(x) ?? (isAgg(x) ? rw.aggText.indexOf(formatExpr(x)) : -1);
      if (i !== undefined && i >= 0) return { kind: 'ColumnRef', names: ['\u0000agg', `a${i}`], star: false };
    }
    return x;
  });
  return mapExpr(withAggs, (x) => {
    if (x.kind === 'ColumnRef' && x.names[0] === '\u0000agg') return x;
    const text = formatExpr(x);
    let gi = rw.groupText.indexOf(text);
    if (gi < 0 && x.kind === 'ColumnRef' && !x.star && inScope !== undefined) {
      try {
        const pos = inScope.resolve(x.names) % Math.max(1, rw.baseWidth);
        gi = rw.groupCols.findIndex((g) => g === pos);
      } catch {
        gi = -1;
      }
    }
    return gi >= 0 ? { kind: 'ColumnRef', names: ['\u0000agg', `g${gi}`], star: false } : x;
  });
}

function aggSpec(c: ExprCompiler, f: FuncCall): AggSpec {
  const name = f.name[0] as AggName;
  const text = formatExpr(f);
  const filter = f.filter !== undefined ? c.compileBool(f.filter, 'FILTER').fn : undefined;
  const order = f.orderBy.map((o) => {
    const k = sortKey(c, o.expr, o);
    return { fn: k.fn, desc: k.desc, nullsFirst: k.nullsFirst, cmp: k.cmp };
  });
  if (f.star) {
    if (name !== 'count') throw new SqlError('sql.syntax_error', '42601', `${name}(*) is not a valid aggregate call`);
    return { name, args: [], argTypes: [], distinct: false, filter, resultType: T.int8, order, text };
  }
  const want = name === 'string_agg' ? 2 : 1;
  if (f.args.length !== want) throw new SqlError('sql.undefined_function', '42883', `function ${name} with ${f.args.length} arguments does not exist`);
  const args = f.args.map((a) => c.resolveUnknown(c.compile(a, name === 'string_agg' ? T.text : undefined)));
  const at = (args[0] as Typed).type;
  let resultType: SqlType;
  switch (name) {
    case 'count':
      resultType = T.int8;
      break;
    case 'sum':
      if (at.family === 'int') resultType = at.oid === T.int8.oid ? T.numeric : T.int8;
      else if (at.family === 'numeric' || at.family === 'float' || at.family === 'interval') resultType = at.family === 'numeric' ? T.numeric : at;
      else throw new SqlError('sql.undefined_function', '42883', `function sum(${formatType(at)}) does not exist`);
      break;
    case 'avg':
      if (at.family === 'int' || at.family === 'numeric') resultType = T.numeric;
      else if (at.family === 'float') resultType = T.float8;
      else if (at.family === 'interval') resultType = at;
      else throw new SqlError('sql.undefined_function', '42883', `function avg(${formatType(at)}) does not exist`);
      break;
    case 'min':
    case 'max':
      c.comparator(at, at, name);
      resultType = at;
      break;
    case 'bool_and':
    case 'bool_or':
    case 'every':
      if (at.family !== 'bool') throw new SqlError('sql.undefined_function', '42883', `function ${name}(${formatType(at)}) does not exist`);
      resultType = T.bool;
      break;
    case 'string_agg':
      if (at.family !== 'string') throw new SqlError('sql.undefined_function', '42883', `function string_agg(${formatType(at)}, text) does not exist`);
      resultType = T.text;
      break;
    case 'array_agg':
      resultType = arrayOf(at);
      break;
    case 'jsonb_agg':
      resultType = T.jsonb;
      break;
    case 'json_agg':
      resultType = T.json;
      break;
    default:
      throw unimplemented(`aggregate function ${name as string}`);
  }
  const argFns = args.map((a, i) => (name === 'string_agg' && a.type.family === 'string' ? a.fn : i === 0 ? a.fn : a.fn));
  return { name, args: argFns, argTypes: args.map((a) => a.type), distinct: f.distinct, filter, resultType, order, text };
}

// ---- subqueries in expressions ---------------------------------------------------------

/**
 * Lets `c` (a single-table statement's compiler: UPDATE / DELETE WHERE, SET,
 * RETURNING, INSERT VALUES) compile uncorrelated subqueries: each becomes a
 * cell of the returned list, which the caller runs once before its input
 * (withSubqueries). Correlated ones stay 0A000 there.
 */
export function attachSubqueries(ctx: PlanContext, c: ExprCompiler): SubqueryCell[] {
  const q = new QueryCtx(ctx, new Map(), 'none');
  c.subLinks = (e, hint) => compileSubLink(q, c, e, hint);
  return q.cells;
}

/**
 * Correlated subqueries of `exprs` over the rows of `node` (an UPDATE /
 * DELETE's scan): each becomes a column an apply node appends to the row,
 * and the expressions are rewritten to read it. The returned compiler reads
 * the widened rows (and compiles uncorrelated subqueries into `cells`).
 */
export function applyDmlSubqueries(ctx: PlanContext, node: PlanNode, columns: readonly ScopeColumn[], exprs: readonly Expr[], cells: SubqueryCell[]): { node: PlanNode; exprs: Expr[]; compiler: ExprCompiler } {
  const q = new QueryCtx(ctx, new Map(), 'none');
  q.cells = cells;
  let rel: Rel = { node, columns };
  const out = exprs.map((e) => {
    const a = applyCorrelated(q, rel, e);
    rel = a.rel;
    return a.expr;
  });
  return { node: rel.node, exprs: out, compiler: compilerFor(q, new Scope(rel.columns)) };
}

/**
 * UPDATE … FROM / DELETE … USING: per row of the target table (`node`), the
 * other FROM items are read as a LATERAL subquery `SELECT * FROM items WHERE
 * where LIMIT 1` (the target row's columns are outer references, so join
 * conditions become spans or index reads there); a row without a match is
 * left alone, a row with several is changed once (with one of them), as in
 * PostgreSQL. Returns the widened rows (target columns ++ the items'
 * columns) and a compiler over them for SET and RETURNING.
 */
export function applyDmlFrom(ctx: PlanContext, node: PlanNode, columns: readonly ScopeColumn[], from: readonly TableExpr[], where: Expr | undefined): { node: PlanNode; columns: ScopeColumn[]; compiler: ExprCompiler } {
  const slot = new WeakMap<EvalEnv, readonly Datum[]>();
  const inner = new QueryCtx(ctx, new Map(), 'none', { scope: new Scope(columns), slot, parent: undefined });
  const stmt: SelectStatement = {
    kind: 'Select',
    with: undefined,
    body: { kind: 'SelectClause', distinct: false, targets: [{ expr: { kind: 'ColumnRef', names: [], star: true }, alias: undefined }], from, where, groupBy: [], having: undefined, windows: [] },
    orderBy: [],
    limit: { kind: 'Const', type: 'int', value: 1, text: '1' },
    offset: undefined,
    locking: [],
    asOfSystemTime: undefined,
  };
  const sub = planStatement(inner, stmt);
  // `*` loses the items' names: take them (table-qualified) from the FROM list's own columns.
  const named = planFromList(inner, from, new Map()).columns.filter((c) => !c.hidden);
  if (named.length !== sub.columns.length) throw unimplemented('this FROM list in UPDATE … FROM / DELETE … USING');
  const cols = [...columns, ...sub.columns.map((c, i) => ({ ...c, name: (named[i] as ScopeColumn).name, table: (named[i] as ScopeColumn).table }))];
  const text = `FROM ${from.map(formatTableExpr).join(', ')}${where === undefined ? '' : ` WHERE ${formatExpr(where)}`}`;
  const q = new QueryCtx(ctx, new Map(), 'none');
  return { node: { kind: 'apply', input: node, plan: sub.node, mode: 'lateral', outer: slot, on: undefined, text, columns: cols }, columns: cols, compiler: compilerFor(q, new Scope(cols)) };
}

/** `input` preceded by running `cells` (when there are any). */
export function withSubqueries(input: PlanNode, cells: readonly SubqueryCell[]): PlanNode {
  return cells.length === 0 ? input : { kind: 'subqueries', input, cells, columns: input.columns };
}

/** The set-returning functions of the select list (a project-set node) and their argument counts. */
const SRF_ARITY: Readonly<Record<string, readonly number[]>> = { unnest: [1], generate_series: [2, 3], pg_partition_ancestors: [1], generate_subscripts: [2, 3] };

/**
 * generate_subscripts(array, dim [, reverse]) as the array of its values: the
 * subscripts of dimension `dim` (from its lower bound), descending when reverse; none
 * for a NULL or empty array or a dimension it does not have.
 */
function generateSubscripts(c: ExprCompiler, args: readonly Expr[]): Typed {
  const a = c.resolveUnknown(c.compile(args[0] as Expr));
  if (a.type.family !== 'array') throw new SqlError('sql.undefined_function', '42883', `function generate_subscripts(${formatType(a.type)}, integer) does not exist`);
  const dim = c.coerce(c.compile(args[1] as Expr, T.int4), T.int4, 'implicit').fn;
  const rev = args[2] === undefined ? undefined : c.coerce(c.compile(args[2] as Expr, T.bool), T.bool, 'implicit').fn;
  const arr = a.fn;
  const lb = arrayLowerBound(a.type);
  return { type: arrayOf(T.int4), fn: (row, env) => {
    let cur = arr(row, env);
    const d = dim(row, env);
    if (cur === null || d === null || (d as number) < 1) return [];
    for (let i = 1; i < (d as number); i++) {
      const first: Datum = (cur as readonly Datum[])[0] ?? null;
      if (!Array.isArray(first)) return [];
      cur = first;
    }
    const n = (cur as readonly Datum[]).length;
    const out: Datum[] = Array.from({ length: n }, (_, i) => i + lb);
    return rev !== undefined && rev(row, env) === true ? out.reverse() : out;
  } };
}

/** pg_partition_ancestors(regclass): Cairn has no partitions, so the relation itself (PostgreSQL lists it first). */
function partitionAncestors(c: ExprCompiler, arg: Expr): Typed {
  const a = c.coerce(c.resolveUnknown(c.compile(arg, T.regclass)), T.regclass, 'implicit');
  const f = a.fn;
  return { type: arrayOf(T.regclass), fn: (row, env) => {
    const v = f(row, env);
    return v === null ? [] : [v];
  } };
}

/** generate_series rows one input row may produce (the series is built as an array first). */
export const MAX_SERIES_LENGTH = 10_000_000;

/**
 * generate_series(start, stop [, step]) over integers, as the array of its
 * values (the project-set node turns it into rows): int4, or int8 when an
 * argument is int8. Other argument types (numeric, timestamps) are 0A000.
 */
function compileSeries(c: ExprCompiler, args: readonly Expr[]): Typed {
  const typed = args.map((a) => c.resolveUnknown(c.compile(a, T.int4)));
  if (typed.some((t) => t.type.family !== 'int')) throw unimplemented(`generate_series(${typed.map((t) => formatType(t.type)).join(', ')})`);
  const big = typed.some((t) => t.type.oid === T.int8.oid);
  const fns = typed.map((t) => c.coerce(t, T.int8, 'implicit').fn);
  return {
    type: arrayOf(big ? T.int8 : T.int4),
    fn: (row, env) => {
      const v = fns.map((f) => f(row, env));
      if (v.some((x) => x === null)) return [];
      const [lo, hi, step = 1n] = v as bigint[];
      if (step === 0n) throw new SqlError('sql.invalid_parameter_value', '22023', 'step size cannot equal zero');
      const n = step > 0n ? ((hi as bigint) - (lo as bigint)) / step + 1n : ((lo as bigint) - (hi as bigint)) / -step + 1n;
      if (n > BigInt(MAX_SERIES_LENGTH)) throw new SqlError('sql.program_limit_exceeded', '54000', `generate_series: more than ${MAX_SERIES_LENGTH} rows for one input row`);
      const out: Datum[] = [];
      for (let x = lo as bigint, i = 0n; i < n; i++, x += step) out.push(big ? x : Number(x));
      return out;
    },
  };
}

/** The type of ARRAY(subquery) over a column of type `t` (arrays of arrays are not supported). */
function subqueryArrayType(t: SqlType): SqlType {
  if (t.family === 'array') throw unimplemented('ARRAY(subquery) over an array column');
  if (t.family === 'unknown') return arrayOf(T.text);
  return arrayOf(t);
}

function compileSubLink(q: QueryCtx, outer: ExprCompiler, e: SubLink, hint: SqlType | undefined): Typed {
  void hint;
  let rel: Rel;
  const sub = new QueryCtx(q.ctx, q.ctes, 'none', q.outer);
  try {
    rel = planStatement(sub, e.query);
  } catch (err) {
    if (err instanceof SqlError && (err.sqlState === '42703' || err.sqlState === '42P01')) {
      const m = /column "([^"]+)" does not exist|missing FROM-clause entry for table "([^"]+)"/.exec(err.message);
      const name = m?.[1] ?? m?.[2];
      if (name !== undefined && outer.scope.columns.some((c) => c.name === name.split('.').pop() || c.table === name || c.table === name.split('.')[0])) {
        throw unimplemented('correlated subqueries', 'Rewrite the subquery as a join.');
      }
    }
    throw err;
  }
  const types = rel.columns.map((c) => c.type);
  const results = new WeakMap<EvalEnv, unknown>();
  const text = formatExpr(e);
  if (e.type === 'exists') {
    q.cells.push({ plan: rel.node, mode: 'exists', types, text, results });
    return { type: T.bool, fn: (_row, env) => (results.get(env) as boolean | undefined) ?? false };
  }
  if (rel.columns.length !== 1) throw new SqlError('sql.syntax_error', '42601', rel.columns.length > 1 ? 'subquery has too many columns' : 'subquery must return only one column');
  const ct = types[0] as SqlType;
  if (e.type === 'array') {
    const at = subqueryArrayType(ct);
    q.cells.push({ plan: rel.node, mode: 'rows', types, text, results });
    const arrays = new WeakMap<EvalEnv, Datum[]>();
    return {
      type: at,
      fn: (_row, env) => {
        let a = arrays.get(env);
        if (a === undefined) {
          a = ((results.get(env) as Datum[][] | undefined) ?? []).map((r) => r[0] as Datum);
          arrays.set(env, a);
        }
        return a;
      },
    };
  }
  if (e.type === 'scalar') {
    q.cells.push({ plan: rel.node, mode: 'scalar', types, text, results });
    return { type: ct, fn: (_row, env) => (results.get(env) as Datum | undefined) ?? null };
  }
  q.cells.push({ plan: rel.node, mode: 'rows', types, text, results });
  const test = outer.resolveUnknown(outer.compile(e.test as Expr, ct));
  const op = e.type === 'in' ? '=' : (e.op as string);
  const u = unifyTypes(test.type, ct);
  if (u === undefined) throw opError(op, test.type, ct);
  const tt = test.type;
  const tf = test.fn;
  const rows = (env: EvalEnv): readonly (readonly Datum[])[] => (results.get(env) as Datum[][] | undefined) ?? [];
  if (op === '=' && e.type !== 'all') {
    // IN / = ANY: a hash set per execution; NULL when not found and the set has a NULL.
    const sets = new WeakMap<EvalEnv, { keys: Set<string | number>; hasNull: boolean; empty: boolean }>();
    const toKey = (v: Exclude<Datum, null>, from: SqlType): string | number => datumKey(from.oid === u.oid ? v : castDatum(v, from, u, 'implicit'), u) as string | number;
    return {
      type: T.bool,
      fn: (row, env) => {
        let s = sets.get(env);
        if (s === undefined) {
          const keys = new Set<string | number>();
          let hasNull = false;
          const rs = rows(env);
          for (const r of rs) {
            const v = r[0] as Datum;
            if (v === null) hasNull = true;
            else keys.add(toKey(v, ct));
          }
          s = { keys, hasNull, empty: rs.length === 0 };
          sets.set(env, s);
        }
        if (s.empty) return false;
        const v = tf(row, env);
        if (v === null) return null;
        if (s.keys.has(toKey(v, tt))) return true;
        return s.hasNull ? null : false;
      },
    };
  }
  const cmp = outer.comparator(tt, ct, op);
  const test1 = compareTest(op);
  const all = e.type === 'all';
  return {
    type: T.bool,
    fn: (row, env) => {
      const v = tf(row, env);
      const rs = rows(env);
      if (rs.length === 0) return all;
      if (v === null) return null;
      let sawNull = false;
      for (const r of rs) {
        const x = r[0] as Datum;
        if (x === null) {
          sawNull = true;
          continue;
        }
        const ok = test1(cmp(v, x));
        if (all && !ok) return false;
        if (!all && ok) return true;
      }
      return sawNull ? null : all;
    },
  };
}

/**
 * `EXISTS (SELECT … FROM f WHERE inner AND i1 = o1 AND …)` where every
 * conjunct reading the outer row is an equality between an inner-only and an
 * outer-only expression → a semi join (anti join under NOT) of the outer
 * relation with `SELECT i1, … FROM f WHERE inner`. Undefined when the
 * subquery is not correlated (it is then run once) or not of that shape.
 */
function decorrelateExists(q: QueryCtx, outer: Rel, conj: Expr): Rel | undefined {
  let negate = false;
  let e = conj;
  if (e.kind === 'BoolExpr' && e.op === 'not' && e.args.length === 1) {
    negate = true;
    e = e.args[0] as Expr;
  }
  if (e.kind !== 'SubLink' || e.type !== 'exists') return undefined;
  const sq = e.query;
  const body = sq.body;
  if (sq.with !== undefined || body.kind !== 'SelectClause' || body.groupBy.length > 0 || body.having !== undefined || sq.limit !== undefined || sq.offset !== undefined || body.from.length === 0) return undefined;
  if (body.targets.some((t) => exprHas(t.expr, isAgg))) return undefined;
  let inner: Rel;
  try {
    inner = planFromList(withCtes(q, sq), body.from, new Map());
  } catch {
    return undefined;
  }
  const innerScope = new Scope(inner.columns);
  const outerScope = new Scope(outer.columns);
  const side = (x: Expr): 'inner' | 'outer' | 'mixed' | 'none' => {
    let sawInner = false;
    let sawOuter = false;
    let bad = false;
    walkExpr(x, (y) => {
      if (y.kind === 'SubLink') bad = true;
      if (y.kind !== 'ColumnRef' || y.star) return !bad;
      try {
        innerScope.resolve(y.names);
        sawInner = true;
      } catch {
        try {
          outerScope.resolve(y.names);
          sawOuter = true;
        } catch {
          bad = true;
        }
      }
      return !bad;
    });
    if (bad || (sawInner && sawOuter)) return 'mixed';
    return sawInner ? 'inner' : sawOuter ? 'outer' : 'none';
  };
  const innerConj: Expr[] = [];
  const innerKeys: Expr[] = [];
  const outerKeys: Expr[] = [];
  for (const w of conjuncts(body.where)) {
    const sw = side(w);
    if (sw === 'inner' || sw === 'none') {
      innerConj.push(w);
      continue;
    }
    if (w.kind !== 'BinaryOp' || w.op !== '=') return undefined;
    const l = side(w.left);
    const r = side(w.right);
    if (l === 'inner' && r === 'outer') {
      innerKeys.push(w.left);
      outerKeys.push(w.right);
    } else if (l === 'outer' && r === 'inner') {
      innerKeys.push(w.right);
      outerKeys.push(w.left);
    } else return undefined;
  }
  if (innerKeys.length === 0) return undefined;
  const right = planStatement(q, { ...sq, orderBy: [], body: { ...body, where: andAll(innerConj), targets: innerKeys.map((k) => ({ expr: k, alias: undefined })), distinct: false } });
  const oc = compilerFor(q, outerScope);
  const leftKeys: EvalFn[] = [];
  const rightKeys: EvalFn[] = [];
  const keyTypes: SqlType[] = [];
  const leftCasts: HashJoinNode['leftCasts'][number][] = [];
  const rightCasts: HashJoinNode['rightCasts'][number][] = [];
  outerKeys.forEach((k, i) => {
    const lt = oc.resolveUnknown(oc.compile(k));
    const rt = (right.columns[i] as ScopeColumn).type;
    const u = unifyTypes(lt.type, rt);
    if (u === undefined) throw opError('=', rt, lt.type);
    leftKeys.push(lt.fn);
    rightKeys.push((row) => row[i] as Datum);
    keyTypes.push(u);
    leftCasts.push(caster(lt.type, u));
    rightCasts.push(caster(rt, u));
  });
  const node: HashJoinNode = {
    kind: 'hash-join',
    type: negate ? 'anti' : 'semi',
    left: outer.node,
    right: right.node,
    leftKeys,
    rightKeys,
    keyTypes,
    leftCasts,
    rightCasts,
    on: undefined,
    text: formatExpr(conj),
    leftWidth: outer.columns.length,
    rightWidth: right.columns.length,
    columns: outer.columns,
  };
  return { node, columns: outer.columns, result: outer.result };
}

