/**
 * sql/plan/planner.ts — SELECT / INSERT / UPDATE / DELETE → plan tree (plan-node.ts).
 *
 * Index selection (primary index only; secondary indexes come with issue 7
 * and slot in as another candidate in chooseSpans):
 *   - WHERE is split into conjuncts. A conjunct `pk_col op const` (op one of
 *     = < <= > >=), `pk_col IN (consts)` or `pk_col BETWEEN c1 AND c2`,
 *     where the constant side has the column's type family, constrains the
 *     key. "const" means: no column references (parameters, literals and
 *     functions of them are fine; they are evaluated once per execution).
 *   - Equalities (and IN lists) on every primary-key column → point lookups
 *     (one batched get per key, the cross product of the IN lists, ≤ 1024);
 *     otherwise equalities / IN lists on a key prefix plus bounds on the
 *     next column → one span per prefix value (read one after another, in
 *     key order); no usable conjunct → the whole table.
 *   - Conjuncts turned into keys are dropped from the filter (they are
 *     exact); everything else filters the scanned rows.
 *   - ORDER BY on a primary-key prefix in index order (or exactly reversed)
 *     needs no sort (the scan runs forward or in reverse).
 *   - LIMIT/OFFSET is pushed into the scan as a row limit when no filter
 *     and no sort sit between them.
 * Constructs of issue 7 (joins, aggregates, GROUP BY, DISTINCT, subqueries,
 * set operations, CTEs) are rejected with 0A000 naming the construct.
 */
import { walkExpr } from '../parser/walk.js';
import { formatExpr } from '../parser/format.js';
import type { DeleteStatement, Expr, InsertStatement, SelectStatement, SelectTarget, SortBy, TableExpr, TableName, UpdateStatement } from '../parser/ast.js';
import { parseExpr } from '../parser/parse.js';
import { andAll, applyDmlFrom, applyDmlSubqueries, attachSubqueries, needsQueryPlanner, planQuery, withSubqueries } from './query-planner.js';
import type { SubqueryCell } from './query-nodes.js';
import { SqlError, unimplemented } from '../parser/sql-error.js';
import { T, formatType, type SqlType } from '../types/type.js';
import { datatypeMismatch } from '../types/type-error.js';
import type { CatalogSnapshot, TableEntry } from '../catalog/catalog.js';
import { indexCodecs, type IndexCodec } from '../rowenc/index-codec.js';
import { ExprCompiler, Scope, type EvalFn, type ScopeColumn, type Typed } from '../sem/expr.js';
import { assignCast, type Datum } from '../sem/datum.js';
import type {
  ConflictPlan,
  DeleteNode,
  InsertNode,
  KeyBound,
  PlanNode,
  ProjectNode,
  QueryPlan,
  ResultColumn,
  ScanNode,
  SortKey,
  SpanPlan,
  UpdateNode,
} from './plan-node.js';

export interface PlanContext {
  readonly snapshot: CatalogSnapshot;
  readonly database: string;
  /** Parameter types by index − 1; the planner fills in inferred ones. */
  readonly paramTypes: (SqlType | undefined)[];
  /**
   * Set by the query planner when this SELECT runs once per outer row (a
   * correlated subquery, a LATERAL item, an index nested-loop join): column
   * references the table does not have resolve to the outer row, and count
   * as constants for span and index choice.
   */
  readonly outerRef?: ((names: readonly string[]) => Typed | undefined) | undefined;
  /**
   * Set by the query planner (statementReadNames): the column names the whole
   * statement references, or null when it reads every column (a `*`, a NATURAL
   * join). A query-planner leaf (`SELECT * FROM t`) then decodes only the
   * columns named here — the others stay NULL in its rows, which nothing reads.
   */
  readonly readNames?: ReadonlySet<string> | null | undefined;
}

const MAX_POINTS = 1024;

export function resolveTable(ctx: PlanContext, name: TableName): TableEntry {
  let dbName = name.catalog ?? ctx.database;
  if (name.catalog === undefined && name.schema !== undefined && name.schema !== 'public') dbName = name.schema;
  if (name.schema !== undefined && name.catalog !== undefined && name.schema !== 'public') {
    throw new SqlError('sql.undefined_schema', '3F000', `schema "${name.schema}" does not exist`);
  }
  const db = ctx.snapshot.database(dbName);
  if (db === undefined) {
    if (name.catalog === undefined && name.schema === undefined) throw new SqlError('sql.undefined_database', '3D000', `database "${dbName}" does not exist`);
    throw new SqlError('sql.undefined_table', '42P01', `relation "${formatName(name)}" does not exist`);
  }
  const t = ctx.snapshot.table(db.id, name.name);
  if (t === undefined) throw new SqlError('sql.undefined_table', '42P01', `relation "${formatName(name)}" does not exist`);
  return t;
}

function formatName(n: TableName): string {
  return [n.catalog, n.schema, n.name].filter((x) => x !== undefined).join('.');
}

function tableScope(t: TableEntry, alias: string): ScopeColumn[] {
  return t.desc.columns.map((c, i) => ({ name: c.name, table: alias, type: t.codec.types[i] as SqlType, hidden: c.hidden }));
}

function conjuncts(e: Expr | undefined, out: Expr[] = []): Expr[] {
  if (e === undefined) return out;
  if (e.kind === 'BoolExpr' && e.op === 'and') for (const a of e.args) conjuncts(a, out);
  else out.push(e);
  return out;
}

/**
 * Whether `e` is fixed for the whole scan: no column of the scanned table, no
 * subquery. With a compiler that has an outer-row hook (a correlated
 * subquery or index nested-loop join planned per outer row), references to
 * the outer row count as constants.
 */
function isConstant(e: Expr, c?: ExprCompiler): boolean {
  let ok = true;
  walkExpr(e, (x) => {
    if (x.kind === 'SubLink' || x.kind === 'Default') ok = false;
    else if (x.kind === 'ColumnRef') ok = c !== undefined && !x.star && isOuterRef(c, x.names);
    return ok;
  });
  return ok;
}

function isOuterRef(c: ExprCompiler, names: readonly string[]): boolean {
  if (c.outerRef === undefined) return false;
  try {
    c.scope.resolve(names);
    return false;
  } catch {
    return c.outerRef(names) !== undefined;
  }
}

/** Marks every column `e` references (by scope position). */
function markNeeded(e: Expr | undefined, scope: Scope, needed: Uint8Array): void {
  if (e === undefined) return;
  walkExpr(e, (x) => {
    if (x.kind === 'ColumnRef') {
      if (x.star) needed.fill(1);
      else {
        try {
          needed[scope.resolve(x.names)] = 1;
        } catch {
          // resolution errors are raised by the compiler with the right context
        }
      }
    }
  });
}

const FLIP: Record<string, string> = { '=': '=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

interface ColumnConstraint {
  eq?: { fns: EvalFn[]; texts: string[]; conj: Expr };
  lo?: { b: KeyBound; conj: Expr };
  hi?: { b: KeyBound; conj: Expr };
}

/** Compiles the constant side for key column `type`; undefined when it cannot be a key value. */
function keyValue(c: ExprCompiler, e: Expr, type: SqlType): Typed | undefined {
  let t: Typed;
  try {
    t = c.compile(e, type);
    if (t.type.family !== type.family) t = c.coerce(t, type, 'implicit');
  } catch {
    return undefined;
  }
  return t.type.family === type.family ? t : undefined;
}

/** The key columns a scan can constrain: the primary key, or a secondary index's key. */
interface KeyShape {
  readonly ords: readonly number[];
  readonly dirs: readonly ('asc' | 'desc')[];
}

function chooseSpans(
  c: ExprCompiler,
  table: TableEntry,
  scope: Scope,
  where: Expr[],
  key: KeyShape = { ords: table.codec.pkOrdinals, dirs: table.codec.pkDirs },
): { spans: SpanPlan; used: Set<Expr> } {
  const pk = key.ords;
  const cons: ColumnConstraint[] = pk.map(() => ({}));
  const posOfOrd = new Map(pk.map((o, i) => [o, i]));
  const colPos = (e: Expr): number | undefined => {
    if (e.kind !== 'ColumnRef' || e.star) return undefined;
    try {
      return posOfOrd.get(scope.resolve(e.names));
    } catch {
      return undefined;
    }
  };
  for (const conj of where) {
    if (conj.kind === 'BinaryOp' && FLIP[conj.op] !== undefined) {
      let p = colPos(conj.left);
      let other = conj.right;
      let op = conj.op;
      if (p === undefined || !isConstant(other, c)) {
        p = colPos(conj.right);
        other = conj.left;
        op = FLIP[conj.op] as string;
        if (p === undefined || !isConstant(other, c)) continue;
      }
      const type = table.codec.types[pk[p] as number] as SqlType;
      const v = keyValue(c, other, type);
      if (v === undefined) continue;
      const cc = cons[p] as ColumnConstraint;
      const text = formatExpr(other);
      if (op === '=') {
        if (cc.eq === undefined) cc.eq = { fns: [v.fn], texts: [text], conj };
      } else if (op === '>' || op === '>=') {
        if (cc.lo === undefined) cc.lo = { b: { fn: v.fn, inclusive: op === '>=', text }, conj };
      } else if (cc.hi === undefined) cc.hi = { b: { fn: v.fn, inclusive: op === '<=', text }, conj };
    } else if (conj.kind === 'InList' && !conj.not) {
      const p = colPos(conj.arg);
      if (p === undefined || !conj.list.every((x) => isConstant(x, c))) continue;
      const type = table.codec.types[pk[p] as number] as SqlType;
      const vs = conj.list.map((x) => keyValue(c, x, type));
      if (vs.some((v) => v === undefined)) continue;
      const cc = cons[p] as ColumnConstraint;
      if (cc.eq === undefined) cc.eq = { fns: vs.map((v) => (v as Typed).fn), texts: conj.list.map(formatExpr), conj };
    } else if (conj.kind === 'Between' && !conj.not && !conj.symmetric) {
      const p = colPos(conj.arg);
      if (p === undefined || !isConstant(conj.low, c) || !isConstant(conj.high, c)) continue;
      const type = table.codec.types[pk[p] as number] as SqlType;
      const lo = keyValue(c, conj.low, type);
      const hi = keyValue(c, conj.high, type);
      const cc = cons[p] as ColumnConstraint;
      if (lo === undefined || hi === undefined || cc.lo !== undefined || cc.hi !== undefined) continue;
      cc.lo = { b: { fn: lo.fn, inclusive: true, text: formatExpr(conj.low) }, conj };
      cc.hi = { b: { fn: hi.fn, inclusive: true, text: formatExpr(conj.high) }, conj };
    }
  }
  const used = new Set<Expr>();
  // Points: every column has an equality / IN list.
  if (cons.every((cc) => cc.eq !== undefined)) {
    let count = 1;
    for (const cc of cons) count *= (cc.eq as { fns: EvalFn[] }).fns.length;
    if (count <= MAX_POINTS) {
      let keys: EvalFn[][] = [[]];
      let texts: string[][] = [[]];
      for (const cc of cons) {
        const eq = cc.eq as { fns: EvalFn[]; texts: string[]; conj: Expr };
        used.add(eq.conj);
        const nk: EvalFn[][] = [];
        const nt: string[][] = [];
        keys.forEach((k, i) => eq.fns.forEach((f, j) => {
          nk.push([...k, f]);
          nt.push([...(texts[i] as string[]), eq.texts[j] as string]);
        }));
        keys = nk;
        texts = nt;
      }
      return { spans: { kind: 'points', keys, text: texts.map((t) => '/' + t.join('/')) }, used };
    }
  }
  let prefixes: EvalFn[][] = [[]];
  let prefixText: string[] = [''];
  let lo: KeyBound | undefined;
  let hi: KeyBound | undefined;
  for (let p = 0; p < cons.length; p++) {
    const cc = cons[p] as ColumnConstraint;
    const eq = cc.eq;
    if (eq !== undefined && prefixes.length * eq.fns.length <= MAX_POINTS) {
      const np: EvalFn[][] = [];
      const nt: string[] = [];
      prefixes.forEach((pre, i) => eq.fns.forEach((f, j) => {
        np.push([...pre, f]);
        nt.push(`${prefixText[i]}/${eq.texts[j]}`);
      }));
      prefixes = np;
      prefixText = nt;
      used.add(eq.conj);
      continue;
    }
    if (eq !== undefined) break;
    const desc = key.dirs[p] === 'desc';
    // On a descending column, value bounds swap ends in key order.
    const vlo = cc.lo;
    const vhi = cc.hi;
    if (vlo !== undefined) used.add(vlo.conj);
    if (vhi !== undefined) used.add(vhi.conj);
    lo = desc ? vhi?.b : vlo?.b;
    hi = desc ? vlo?.b : vhi?.b;
    break;
  }
  return { spans: { kind: 'range', prefixes, prefixText, lo, hi }, used };
}

/** Whether the scan constrains nothing (a full primary-index scan). */
function isFullScan(sp: SpanPlan): boolean {
  return sp.kind === 'range' && sp.lo === undefined && sp.hi === undefined && sp.prefixes.length === 1 && (sp.prefixes[0] as readonly EvalFn[]).length === 0;
}

function coveredBy(covered: Uint8Array, needed: Uint8Array): boolean {
  for (let i = 0; i < needed.length; i++) if (needed[i] === 1 && covered[i] !== 1) return false;
  return true;
}

/**
 * Index selection: the primary key wins whenever it constrains the scan;
 * otherwise the public secondary index whose key the WHERE constrains the
 * most (equality columns first, then a range) — an index entry span plus,
 * when the index does not cover the query, an index join to the primary.
 * Index spans are always ranges: a point on the index key is a prefix of
 * the entry key (the PK suffix follows).
 */
function chooseIndex(
  c: ExprCompiler,
  table: TableEntry,
  scope: Scope,
  where: Expr[],
  pk: { spans: SpanPlan; used: Set<Expr> },
): { spans: SpanPlan; used: Set<Expr>; index: IndexCodec | undefined } {
  if (!isFullScan(pk.spans) || table.desc.indexes.length === 0 || where.length === 0) return { ...pk, index: undefined };
  let best: { spans: SpanPlan; used: Set<Expr>; index: IndexCodec; score: number } | undefined;
  for (const ic of indexCodecs(table.desc, table.codec)) {
    if (ic.index.state !== undefined && ic.index.state !== 'public') continue;
    const ch = chooseSpans(c, table, scope, where, { ords: ic.keyOrdinals, dirs: ic.index.directions });
    if (isFullScan(ch.spans)) continue;
    const sp: SpanPlan = ch.spans.kind === 'points' ? { kind: 'range', prefixes: ch.spans.keys, prefixText: ch.spans.text, lo: undefined, hi: undefined } : ch.spans;
    const eqCols = sp.kind === 'range' ? (sp.prefixes[0] as readonly EvalFn[]).length : 0;
    const score = eqCols * 2 + (sp.kind === 'range' && (sp.lo !== undefined || sp.hi !== undefined) ? 1 : 0) + (ic.index.unique && eqCols === ic.keyOrdinals.length ? 1 : 0);
    if (best === undefined || score > best.score) best = { spans: sp, used: ch.used, index: ic, score };
  }
  return best !== undefined ? { spans: best.spans, used: best.used, index: best.index } : { ...pk, index: undefined };
}

export function outputName(t: SelectTarget): string {
  if (t.alias !== undefined) return t.alias;
  const e = t.expr;
  switch (e.kind) {
    case 'ColumnRef':
      return e.names[e.names.length - 1] ?? '?column?';
    case 'FuncCall':
      return e.name[e.name.length - 1] ?? '?column?';
    case 'Cast':
      return e.arg.kind === 'ColumnRef' || e.arg.kind === 'FuncCall' ? outputName({ expr: e.arg, alias: undefined }) : formatType(T.unknown) === '' ? '' : e.type.name;
    case 'SqlValueFunction':
      return e.name;
    case 'Coalesce':
      return 'coalesce';
    case 'NullIf':
      return 'nullif';
    case 'MinMax':
      return e.op;
    case 'Case':
      return 'case';
    default:
      return '?column?';
  }
}

/** Compiles a SELECT list / RETURNING list over `scope`. */
/** A select list that is one unqualified `*`. */
function isStarOnly(targets: readonly SelectTarget[]): boolean {
  const e = targets.length === 1 ? targets[0]?.expr : undefined;
  return e !== undefined && e.kind === 'ColumnRef' && e.star && e.names.length === 0;
}

/** Whether the rows a node yields are arrays it made for this query alone (a scan's, through filter / sort / limit), so passing them on unchanged is safe. */
function ownsRows(n: PlanNode): boolean {
  switch (n.kind) {
    case 'scan':
      return true;
    case 'filter':
    case 'sort':
    case 'limit':
      return ownsRows(n.input);
    default:
      return false;
  }
}

function compileTargets(c: ExprCompiler, scope: Scope, targets: readonly SelectTarget[], table: TableEntry | undefined): { exprs: EvalFn[]; cols: ResultColumn[]; text: string[] } {
  const exprs: EvalFn[] = [];
  const cols: ResultColumn[] = [];
  const text: string[] = [];
  for (const t of targets) {
    if (t.expr.kind === 'ColumnRef' && t.expr.star) {
      const qual = t.expr.names[0];
      if (scope.columns.length === 0) throw new SqlError('sql.syntax_error', '42601', 'SELECT * with no tables specified is not valid');
      scope.columns.forEach((col, i) => {
        if (col.hidden || (qual !== undefined && col.table !== qual)) return;
        exprs.push((row) => row[i] as Datum);
        cols.push({ name: col.name, type: col.type, tableOid: table?.desc.id ?? 0, columnAttr: table !== undefined ? i + 1 : 0 });
        text.push(col.name);
      });
      continue;
    }
    const typed = c.resolveUnknown(c.compile(t.expr));
    let attr = 0;
    if (t.expr.kind === 'ColumnRef' && table !== undefined) attr = scope.resolve(t.expr.names) + 1;
    exprs.push(typed.fn);
    cols.push({ name: outputName(t), type: typed.type, tableOid: attr > 0 ? (table?.desc.id ?? 0) : 0, columnAttr: attr });
    text.push(formatExpr(t.expr));
  }
  return { exprs, cols, text };
}

export function compileLimit(c: ExprCompiler, e: Expr | undefined, what: string): EvalFn | undefined {
  if (e === undefined) return undefined;
  const t = c.compile(e, T.int8);
  if (t.type.family !== 'int') throw datatypeMismatch(`argument of ${what} must be type bigint, not type ${formatType(t.type)}`);
  const f = c.coerce(t, T.int8, 'implicit').fn;
  return (row, env) => {
    const v = f(row, env);
    if (v !== null && (v as bigint) < 0n) throw new SqlError('sql.invalid_row_count', what === 'LIMIT' ? '2201W' : '2201X', `${what} must not be negative`);
    return v;
  };
}

function rejectUnsupported(s: SelectStatement): void {
  if (s.with !== undefined) throw unimplemented('WITH (common table expressions)');
  const b = s.body;
  if (b.kind === 'SetOp') throw unimplemented(`${b.op.toUpperCase()} (set operations)`);
  if (b.kind === 'Select') throw unimplemented('parenthesized subquery as a statement body');
  if (b.kind === 'SelectClause') {
    if (b.groupBy.length > 0) throw unimplemented('GROUP BY');
    if (b.having !== undefined) throw unimplemented('HAVING');
    if (b.distinct !== false) throw unimplemented('DISTINCT');
    if (b.windows.length > 0) throw unimplemented('WINDOW');
    if (b.from.length > 1) throw unimplemented('joins (several FROM items)');
    const f = b.from[0];
    if (f !== undefined && f.kind === 'Join') throw unimplemented('joins');
    if (f !== undefined && f.kind === 'SubqueryRef') throw unimplemented('subqueries in FROM');
  }
}

/** Builds the row source of a SELECT (scan/values + filter) and its scope. */
function planSource(
  c0: PlanContext,
  s: SelectStatement,
  lock: 'none' | 'exclusive',
  extraNeeded: readonly (Expr | undefined)[],
): { node: PlanNode; scope: Scope; table: TableEntry | undefined; compiler: ExprCompiler; filtered: boolean; scan: ScanNode | undefined; cells?: SubqueryCell[] } {
  rejectUnsupported(s);
  const b = s.body;
  if (b.kind === 'Values') {
    const first = b.rows[0] as readonly Expr[];
    const compiler = new ExprCompiler(new Scope([]), c0.paramTypes);
    const typedRows = b.rows.map((r) => {
      if (r.length !== first.length) throw new SqlError('sql.syntax_error', '42601', 'VALUES lists must all be the same length');
      return r.map((e) => compiler.compile(e));
    });
    const types = first.map((_, j) => compiler.commonType(typedRows.map((r) => r[j] as Typed), 'VALUES'));
    const rows = typedRows.map((r) => r.map((t, j) => compiler.coerce(t, types[j] as SqlType, 'implicit').fn));
    const columns = types.map((t, j) => ({ name: `column${j + 1}`, table: undefined, type: t, hidden: false }));
    const node: PlanNode = { kind: 'values', rows, columns };
    return { node, scope: new Scope(columns), table: undefined, compiler: new ExprCompiler(new Scope(columns), c0.paramTypes), filtered: false, scan: undefined };
  }
  if (b.kind !== 'SelectClause') throw unimplemented('this query form');
  const from = b.from[0];
  if (from === undefined) {
    const compiler = new ExprCompiler(new Scope([]), c0.paramTypes);
    let node: PlanNode = { kind: 'values', rows: [[]], columns: [] };
    if (b.where !== undefined) {
      const pred = compiler.compileBool(b.where, 'WHERE');
      node = { kind: 'filter', input: node, pred: pred.fn, text: formatExpr(b.where), columns: [] };
    }
    return { node, scope: new Scope([]), table: undefined, compiler, filtered: b.where !== undefined, scan: undefined };
  }
  if (from.kind !== 'TableRef') throw unimplemented('joins');
  const table = resolveTable(c0, from.table);
  const alias = from.alias?.name ?? from.table.name;
  if (from.alias !== undefined && from.alias.columns.length > 0) throw unimplemented('column aliases in FROM');
  const columns = tableScope(table, alias);
  const scope = new Scope(columns);
  const compiler = new ExprCompiler(scope, c0.paramTypes);
  compiler.outerRef = c0.outerRef;
  const cells = attachSubqueries(c0, compiler);
  const where = conjuncts(b.where);
  // Type-check the whole WHERE first (errors like 42804 on non-boolean conditions).
  const wholePred = b.where !== undefined ? compiler.compileBool(b.where, 'WHERE') : undefined;
  void wholePred;
  const pkChoice = chooseSpans(compiler, table, scope, where);
  const choice = chooseIndex(compiler, table, scope, where, pkChoice);
  const { spans, used } = choice;
  const rest = where.filter((w) => !used.has(w));
  const needed = new Uint8Array(columns.length);
  for (const e of [...rest, ...extraNeeded]) markNeeded(e, scope, needed);
  const names = c0.readNames;
  const leafStar = b.targets.length === 1 && b.targets[0]?.expr.kind === 'ColumnRef' && b.targets[0].expr.star && b.targets[0].expr.names.length === 0;
  if (names != null && leafStar && !names.has(alias) && !names.has(table.desc.name)) {
    columns.forEach((col, i) => {
      if (names.has(col.name)) needed[i] = 1;
    });
  } else for (const t of b.targets) markNeeded(t.expr, scope, needed);
  for (const o of s.orderBy) markNeeded(o.expr, scope, needed);
  const index = choice.index !== undefined ? { codec: choice.index, join: lock !== 'none' || !coveredBy(choice.index.covered, needed) } : undefined;
  const scan: ScanNode = { kind: 'scan', table, alias, spans, reverse: false, lock, needed, limit: undefined, columns, index };
  let node: PlanNode = scan;
  if (rest.length > 0) {
    const preds = rest.map((r) => compiler.compileBool(r, 'WHERE').fn);
    const pred: EvalFn =
      preds.length === 1
        ? (preds[0] as EvalFn)
        : (row, env) => {
            let sawNull = false;
            for (const p of preds) {
              const v = p(row, env);
              if (v === false) return false;
              if (v === null) sawNull = true;
            }
            return sawNull ? null : true;
          };
    node = { kind: 'filter', input: node, pred, text: rest.map(formatExpr).join(' AND '), columns };
  }
  return { node, scope, table, compiler, filtered: rest.length > 0, scan, cells };
}

export function planSelect(ctx: PlanContext, s: SelectStatement): QueryPlan {
  if (needsQueryPlanner(s)) return planQuery(ctx, s);
  if (s.locking.some((l) => l.wait !== 'block')) throw unimplemented('NOWAIT / SKIP LOCKED');
  const lock = s.locking.length > 0 ? 'exclusive' : 'none';
  const src = planSource(ctx, s, lock, []);
  const { scope, compiler, table } = src;
  let node = src.node;
  const body = s.body;
  const targets: readonly SelectTarget[] =
    body.kind === 'SelectClause' ? body.targets : scope.columns.map((col) => ({ expr: { kind: 'ColumnRef', names: [col.name], star: false } as Expr, alias: undefined }));
  if (body.kind === 'SelectClause' && body.targets.length === 0) throw unimplemented('SELECT with no columns');
  const proj = compileTargets(compiler, scope, targets, table);
  // ORDER BY: ordinals and output aliases refer to the targets.
  let sorted = false;
  if (s.orderBy.length > 0) {
    const keys: SortKey[] = [];
    const refs: Expr[] = [];
    for (const o of s.orderBy) {
      let e = o.expr;
      if (e.kind === 'Const' && e.type === 'int') {
        const i = Number(e.text);
        const tgt = targets[i - 1];
        if (tgt === undefined || (tgt.expr.kind === 'ColumnRef' && tgt.expr.star)) {
          if (tgt === undefined) throw new SqlError('sql.invalid_column_reference', '42P10', `ORDER BY position ${i} is not in select list`);
        }
        e = (tgt as SelectTarget).expr;
      } else if (e.kind === 'ColumnRef' && e.names.length === 1) {
        const name = e.names[0];
        const byAlias = targets.find((t) => t.alias === name);
        if (byAlias !== undefined) e = byAlias.expr;
      }
      refs.push(e);
      keys.push(sortKey(compiler, e, o));
    }
    if (src.scan !== undefined && !src.filtered) {
      const dir = pkOrder(src.scan, scope, refs, s.orderBy);
      if (dir !== undefined) {
        node = { ...src.scan, reverse: dir === 'reverse' };
        sorted = true;
      }
    } else if (src.scan !== undefined) {
      const dir = pkOrder(src.scan, scope, refs, s.orderBy);
      if (dir !== undefined && node.kind === 'filter') {
        node = { ...node, input: { ...src.scan, reverse: dir === 'reverse' } };
        sorted = true;
      }
    }
    if (!sorted) node = { kind: 'sort', input: node, keys, columns: scope.columns };
  }
  const limit = compileLimit(compiler, s.limit, 'LIMIT');
  const offset = compileLimit(compiler, s.offset, 'OFFSET');
  if (limit !== undefined || offset !== undefined) {
    // Push LIMIT+OFFSET into a scan nothing filters or sorts, or into a sort (top-K).
    if (limit !== undefined && (node.kind === 'scan' || node.kind === 'sort')) {
      const off = offset;
      const pushed: EvalFn = (row, env) => {
        const l = limit(row, env);
        if (l === null) return null;
        const o = off === undefined ? 0n : ((off(row, env) as bigint | null) ?? 0n);
        return (l as bigint) + o;
      };
      node = { ...node, limit: pushed };
    }
    node = { kind: 'limit', input: node, limit, offset, columns: scope.columns };
  }
  const identity = isStarOnly(targets) && scope.columns.every((c) => !c.hidden) && node.columns.length === scope.columns.length && proj.exprs.length === scope.columns.length && ownsRows(node);
  const project: ProjectNode = { kind: 'project', input: node, exprs: proj.exprs, text: proj.text, columns: proj.cols.map((c) => ({ name: c.name, table: undefined, type: c.type, hidden: false })), identity };
  return { root: project, result: proj.cols, tag: 'SELECT', schemaVersion: ctx.snapshot.version, writes: false };
}

export function sortKey(c: ExprCompiler, e: Expr, o: SortBy): SortKey {
  const t = c.resolveUnknown(c.compile(e));
  const desc = o.dir === 'desc';
  const nullsFirst = o.nulls === 'default' ? desc : o.nulls === 'first';
  return { fn: t.fn, desc, nullsFirst, cmp: c.comparator(t.type, t.type, 'ORDER BY'), text: `${formatExpr(e)}${desc ? ' DESC' : ''}` };
}

/** 'forward' / 'reverse' when ORDER BY is a primary-key prefix in (reversed) index order. */
function pkOrder(scan: ScanNode, scope: Scope, refs: readonly Expr[], order: readonly SortBy[]): 'forward' | 'reverse' | undefined {
  const pk = scan.table.codec.pkOrdinals;
  // Index order is not used for ORDER BY (NULLs sort first in key order, last in PostgreSQL's ASC).
  if (refs.length > pk.length || scan.index !== undefined) return undefined;
  let dir: 'forward' | 'reverse' | undefined;
  for (let i = 0; i < refs.length; i++) {
    const r = refs[i] as Expr;
    if (r.kind !== 'ColumnRef' || r.star) return undefined;
    let ord: number;
    try {
      ord = scope.resolve(r.names);
    } catch {
      return undefined;
    }
    if (ord !== pk[i]) return undefined;
    const o = order[i] as SortBy;
    if (o.nulls !== 'default') return undefined;
    const idxDesc = scan.table.codec.pkDirs[i] === 'desc';
    const d = (o.dir === 'desc') === idxDesc ? 'forward' : 'reverse';
    if (dir !== undefined && d !== dir) return undefined;
    dir = d;
  }
  return dir;
}

// ---- DML -------------------------------------------------------------------------------

/** DEFAULT expressions and CHECK constraints of a table, compiled over its scope. */
export interface TableRules {
  readonly defaults: readonly EvalFn[];
  readonly checks: readonly { readonly name: string; readonly fn: EvalFn }[];
}

const rulesCache = new WeakMap<TableEntry, TableRules>();

/** The table's compiled rules, cached with its (immutable) catalog entry. */
export function tableRules(table: TableEntry): TableRules {
  let r = rulesCache.get(table);
  if (r === undefined) {
    r = compileTableRules(table, []);
    rulesCache.set(table, r);
  }
  return r;
}

export function compileTableRules(table: TableEntry, paramTypes: (SqlType | undefined)[]): TableRules {
  const scope = new Scope(tableScope(table, table.desc.name));
  const c = new ExprCompiler(scope, paramTypes);
  const empty = new ExprCompiler(new Scope([]), paramTypes);
  const defaults = table.desc.columns.map((col, i) => {
    if (col.defaultExpr === undefined) return (() => null) as EvalFn;
    const type = table.codec.types[i] as SqlType;
    const t = empty.coerce(empty.compile(parseExpr(col.defaultExpr), type), type, 'assignment');
    const f = t.fn;
    return ((row, env) => assignCast(f(row, env), type, type)) as EvalFn;
  });
  const checks = table.desc.checks.map((ch) => ({ name: ch.name, fn: c.compileBool(parseExpr(ch.expr), 'CHECK').fn }));
  return { defaults, checks };
}

function targetColumns(table: TableEntry, names: readonly string[]): number[] {
  if (names.length === 0) return table.desc.columns.flatMap((c, i) => (c.hidden ? [] : [i]));
  const seen = new Set<number>();
  return names.map((n) => {
    const i = table.desc.columns.findIndex((c) => c.name === n);
    if (i < 0) throw new SqlError('sql.undefined_column', '42703', `column "${n}" of relation "${table.desc.name}" does not exist`);
    if (seen.has(i)) throw new SqlError('sql.duplicate_column', '42701', `column "${n}" specified more than once`);
    seen.add(i);
    return i;
  });
}

function planReturning(c: ExprCompiler, scope: Scope, table: TableEntry, returning: readonly SelectTarget[], input: PlanNode): { proj: ProjectNode | undefined; cols: ResultColumn[] | undefined } {
  if (returning.length === 0) return { proj: undefined, cols: undefined };
  const r = compileTargets(c, scope, returning, table);
  return {
    proj: { kind: 'project', input, exprs: r.exprs, text: r.text, columns: r.cols.map((x) => ({ name: x.name, table: undefined, type: x.type, hidden: false })) },
    cols: r.cols,
  };
}

export function planInsert(ctx: PlanContext, s: InsertStatement): QueryPlan {
  if (s.with !== undefined) throw unimplemented('WITH (common table expressions)');
  const table = resolveTable(ctx, s.table);
  const n = table.desc.columns.length;
  const targets = targetColumns(table, s.columns);
  const rules = tableRules(table);
  const types = table.codec.types;
  const empty = new ExprCompiler(new Scope([]), ctx.paramTypes);
  const cells = attachSubqueries(ctx, empty);
  let input: PlanNode;
  const fill = (given: readonly (EvalFn | undefined)[]): EvalFn[] => {
    const out: EvalFn[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = rules.defaults[i] as EvalFn;
    targets.forEach((ord, j) => {
      const g = given[j];
      if (g !== undefined) out[ord] = g;
    });
    return out;
  };
  const columns = tableScope(table, s.alias ?? table.desc.name);
  if (s.source === undefined) {
    input = { kind: 'values', rows: [fill([])], columns };
  } else if (s.source.body.kind === 'Values' && s.source.orderBy.length === 0 && s.source.limit === undefined) {
    const rows = s.source.body.rows.map((r) => {
      if (r.length > targets.length) throw new SqlError('sql.syntax_error', '42601', 'INSERT has more expressions than target columns');
      if (r.length < targets.length && s.columns.length > 0) throw new SqlError('sql.syntax_error', '42601', 'INSERT has more target columns than expressions');
      return fill(
        r.map((e, j) => {
          if (e.kind === 'Default') return undefined;
          const ord = targets[j] as number;
          const type = types[ord] as SqlType;
          const t = empty.compile(e, type);
          let conv: Typed;
          try {
            conv = empty.coerce(t, type, 'assignment');
          } catch (err) {
            if (err instanceof SqlError && err.sqlState === '42804') {
              throw datatypeMismatch(`column "${table.desc.columns[ord]?.name}" is of type ${formatType(type)} but expression is of type ${formatType(t.type)}`);
            }
            throw err;
          }
          return conv.fn;
        }),
      );
    });
    input = { kind: 'values', rows, columns };
  } else {
    const q = planSelect(ctx, s.source);
    const qcols = q.result as readonly ResultColumn[];
    if (qcols.length > targets.length) throw new SqlError('sql.syntax_error', '42601', 'INSERT has more expressions than target columns');
    if (qcols.length < targets.length && s.columns.length > 0) throw new SqlError('sql.syntax_error', '42601', 'INSERT has more target columns than expressions');
    // Map the query's output row into a full table row.
    const convs = qcols.map((qc, j) => {
      const type = types[targets[j] as number] as SqlType;
      const c = new ExprCompiler(new Scope([]), ctx.paramTypes);
      const f = c.coerce({ type: qc.type, fn: (row) => row[j] as Datum }, type, 'assignment').fn;
      return f;
    });
    input = { kind: 'project', input: q.root, exprs: fill(convs), text: [], columns };
  }
  const scope = new Scope(columns);
  const c = new ExprCompiler(scope, ctx.paramTypes);
  let onConflict: ConflictPlan | undefined;
  if (s.upsert || s.onConflict !== undefined) {
    if (s.onConflict?.constraint !== undefined || (s.onConflict !== undefined && s.onConflict.columns.length > 0 && !samePk(table, s.onConflict.columns))) {
      if (s.onConflict.constraint !== `${table.desc.name}_pkey` || s.onConflict.columns.length > 0) {
        throw unimplemented('ON CONFLICT on columns other than the primary key');
      }
    }
    if (s.onConflict?.where !== undefined) throw unimplemented('ON CONFLICT … WHERE');
    const excludedScope = new Scope([...columns, ...tableScope(table, 'excluded')]);
    const ec = new ExprCompiler(excludedScope, ctx.paramTypes);
    if (s.upsert) {
      const set: (EvalFn | undefined)[] = new Array(n).fill(undefined);
      for (const ord of targets) set[ord] = (row) => row[n + ord] as Datum;
      onConflict = { action: 'update', set, where: undefined };
    } else {
      const act = (s.onConflict as NonNullable<InsertStatement['onConflict']>).action;
      if (act.kind === 'nothing') onConflict = { action: 'nothing', set: [], where: undefined };
      else {
        const set: (EvalFn | undefined)[] = new Array(n).fill(undefined);
        for (const sc of act.set) {
          const ord = targetColumns(table, [sc.column])[0] as number;
          set[ord] = assignFn(ec, sc.value, table, ord);
        }
        onConflict = { action: 'update', set, where: act.where !== undefined ? ec.compileBool(act.where, 'WHERE').fn : undefined };
      }
    }
  }
  const ret = planReturning(c, scope, table, s.returning, { kind: 'values', rows: [], columns });
  const node: InsertNode = { kind: 'insert', table, input: withSubqueries(input, cells), onConflict, returning: ret.proj, upsert: s.upsert, columns };
  return { root: node, result: ret.cols, tag: 'INSERT', schemaVersion: ctx.snapshot.version, writes: true };
}

function samePk(table: TableEntry, cols: readonly string[]): boolean {
  const pkNames = table.codec.pkOrdinals.map((o) => table.desc.columns[o]?.name);
  return cols.length === pkNames.length && cols.every((c) => pkNames.includes(c));
}

function assignFn(c: ExprCompiler, e: Expr, table: TableEntry, ord: number): EvalFn | undefined {
  const type = table.codec.types[ord] as SqlType;
  if (e.kind === 'Default') {
    const d = table.desc.columns[ord]?.defaultExpr;
    if (d === undefined) return () => null;
    const empty = new ExprCompiler(new Scope([]), c.paramTypes);
    return empty.coerce(empty.compile(parseExpr(d), type), type, 'assignment').fn;
  }
  const t = c.compile(e, type);
  try {
    return c.coerce(t, type, 'assignment').fn;
  } catch (err) {
    if (err instanceof SqlError && err.sqlState === '42804') {
      throw datatypeMismatch(`column "${table.desc.columns[ord]?.name}" is of type ${formatType(type)} but expression is of type ${formatType(t.type)}`);
    }
    throw err;
  }
}

/**
 * The rows an UPDATE / DELETE changes. WHERE conjuncts holding subqueries
 * filter above the scan (correlated ones read columns an apply node appends;
 * uncorrelated ones run once, as cells); `setValues` with subqueries are
 * rewritten the same way and compiled by the returned `setCompiler`, which
 * reads the widened rows (the mutation writes only the table's columns).
 */
function dmlSourceWithSubqueries(ctx: PlanContext, tableName: TableName, alias: string | undefined, where: Expr | undefined, setValues: readonly Expr[], extra: readonly (Expr | undefined)[]) {
  const hasSub = (e: Expr): boolean => {
    let found = false;
    walkExpr(e, (x) => {
      if (x.kind === 'SubLink') found = true;
      return !found;
    });
    return found;
  };
  const conj = conjuncts(where);
  const subWhere = conj.filter(hasSub);
  const src = dmlSource(ctx, tableName, alias, andAll(conj.filter((w) => !hasSub(w))), extra);
  if (subWhere.length === 0 && !setValues.some(hasSub)) return { ...src, setCompiler: src.compiler, setValues };
  const cells = src.cells ?? [];
  const a = applyDmlSubqueries(ctx, src.node, src.scope.columns, [...subWhere, ...setValues], cells);
  let node = a.node;
  const w = a.exprs.slice(0, subWhere.length);
  if (w.length > 0) {
    const pred = a.compiler.compileBool(andAll(w) as Expr, 'WHERE');
    node = { kind: 'filter', input: node, pred: pred.fn, text: subWhere.map(formatExpr).join(' AND '), columns: node.columns };
  }
  return { ...src, node, cells, setCompiler: a.compiler, setValues: a.exprs.slice(subWhere.length) };
}

function dmlSource(ctx: PlanContext, tableName: TableName, alias: string | undefined, where: Expr | undefined, extra: readonly (Expr | undefined)[]) {
  const sel: SelectStatement = {
    kind: 'Select',
    with: undefined,
    body: { kind: 'SelectClause', distinct: false, targets: [], from: [{ kind: 'TableRef', table: tableName, alias: alias !== undefined ? { name: alias, columns: [] } : undefined }], where, groupBy: [], having: undefined, windows: [] },
    orderBy: [],
    limit: undefined,
    offset: undefined,
    locking: [],
    asOfSystemTime: undefined,
  };
  return planSource(ctx, sel, 'exclusive', extra);
}

/**
 * The target rows of UPDATE … FROM / DELETE … USING: WHERE conjuncts that
 * read only the target table go to its scan; the rest and the other items
 * run per target row (applyDmlFrom). Subqueries there are 0A000.
 */
function dmlSourceWithFrom(ctx: PlanContext, s: { table: TableName; alias: string | undefined; where: Expr | undefined }, from: readonly TableExpr[], what: string) {
  const probe = dmlSource(ctx, s.table, s.alias, undefined, []);
  const own: Expr[] = [];
  const rest: Expr[] = [];
  for (const w of conjuncts(s.where)) {
    let found = false;
    walkExpr(w, (x) => {
      if (x.kind === 'SubLink') found = true;
      return !found;
    });
    if (found) throw unimplemented(`subqueries in ${what}`);
    let mine = true;
    try {
      probe.compiler.compileBool(w, 'WHERE');
    } catch {
      mine = false;
    }
    (mine ? own : rest).push(w);
  }
  const src = dmlSource(ctx, s.table, s.alias, andAll(own), []);
  const a = applyDmlFrom(ctx, src.node, src.scope.columns, from, andAll(rest));
  return { ...src, node: a.node, compiler: a.compiler, scope: new Scope(a.columns) };
}

export function planUpdate(ctx: PlanContext, s: UpdateStatement): QueryPlan {
  if (s.with !== undefined) throw unimplemented('WITH (common table expressions)');
  if (s.from.length > 0) return planUpdateFrom(ctx, s);
  const src = dmlSourceWithSubqueries(ctx, s.table, s.alias, s.where, s.set.map((x) => x.value), [...s.set.map((x) => x.value), ...s.returning.map((r) => r.expr)]);
  const table = src.table as TableEntry;
  const scan = src.scan as ScanNode;
  // UPDATE needs every column to rewrite the row value.
  scan.needed.fill(1);
  const n = table.desc.columns.length;
  const set: (EvalFn | undefined)[] = new Array(n).fill(undefined);
  s.set.forEach((sc, i) => {
    const ord = targetColumns(table, [sc.column])[0] as number;
    set[ord] = assignFn(src.setCompiler, src.setValues[i] as Expr, table, ord);
  });
  const ret = planReturning(src.compiler, src.scope, table, s.returning, { kind: 'values', rows: [], columns: src.scope.columns });
  const node: UpdateNode = { kind: 'update', table, input: withSubqueries(src.node, src.cells ?? []), set, returning: ret.proj, columns: src.scope.columns };
  return { root: node, result: ret.cols, tag: 'UPDATE', schemaVersion: ctx.snapshot.version, writes: true };
}

function planUpdateFrom(ctx: PlanContext, s: UpdateStatement): QueryPlan {
  const src = dmlSourceWithFrom(ctx, s, s.from, 'UPDATE … FROM');
  const table = src.table as TableEntry;
  (src.scan as ScanNode).needed.fill(1);
  const set: (EvalFn | undefined)[] = new Array(table.desc.columns.length).fill(undefined);
  for (const sc of s.set) {
    const ord = targetColumns(table, [sc.column])[0] as number;
    set[ord] = assignFn(src.compiler, sc.value, table, ord);
  }
  const ret = planReturning(src.compiler, src.scope, table, s.returning, { kind: 'values', rows: [], columns: src.scope.columns });
  const node: UpdateNode = { kind: 'update', table, input: src.node, set, returning: ret.proj, columns: src.scope.columns };
  return { root: node, result: ret.cols, tag: 'UPDATE', schemaVersion: ctx.snapshot.version, writes: true };
}

export function planDelete(ctx: PlanContext, s: DeleteStatement): QueryPlan {
  if (s.with !== undefined) throw unimplemented('WITH (common table expressions)');
  if (s.using.length > 0) {
    const src = dmlSourceWithFrom(ctx, s, s.using, 'DELETE … USING');
    const table = src.table as TableEntry;
    (src.scan as ScanNode).needed.fill(1);
    const ret = planReturning(src.compiler, src.scope, table, s.returning, { kind: 'values', rows: [], columns: src.scope.columns });
    const node: DeleteNode = { kind: 'delete', table, input: src.node, returning: ret.proj, columns: src.scope.columns };
    return { root: node, result: ret.cols, tag: 'DELETE', schemaVersion: ctx.snapshot.version, writes: true };
  }
  const src = dmlSourceWithSubqueries(ctx, s.table, s.alias, s.where, [], s.returning.map((r) => r.expr));
  const table = src.table as TableEntry;
  // RETURNING and index maintenance (the rows' index entries are deleted too) need whole rows.
  if (s.returning.length > 0 || table.desc.indexes.length > 0) (src.scan as ScanNode).needed.fill(1);
  const ret = planReturning(src.compiler, src.scope, table, s.returning, { kind: 'values', rows: [], columns: src.scope.columns });
  const node: DeleteNode = { kind: 'delete', table, input: withSubqueries(src.node, src.cells ?? []), returning: ret.proj, columns: src.scope.columns };
  return { root: node, result: ret.cols, tag: 'DELETE', schemaVersion: ctx.snapshot.version, writes: true };
}

