/**
 * sql/sem/expr.ts — type checking and compilation of scalar expressions.
 *
 *   Expr (parser AST) ──ExprCompiler.compile(e, hint)──► Typed { type, fn(row, env) }
 *
 * Compilation happens once per prepared statement; evaluation is a closure
 * call per row, with no AST walk and no allocation beyond the result.
 *
 * Typing follows PostgreSQL's rules closely enough for issue 6:
 *   - integer literals are int4, int8 or numeric by magnitude; decimal
 *     literals numeric; '…' literals are `unknown` and take the type the
 *     context wants (the other operand, the target column), else text;
 *   - a parameter $n takes the type of its context the same way (that is
 *     the parameter type inference pgwire's Describe reports), else text;
 *   - numeric operands are promoted int2 < int4 < int8 < numeric < float8;
 *   - comparing incompatible families is 42883 (operator does not exist).
 * Semantics: SQL NULL propagates through operators and functions (strict),
 * AND/OR/NOT use three-valued logic, integer overflow is 22003, division by
 * zero 22012.
 *
 * Not supported yet (0A000 naming the construct): subqueries, aggregates,
 * window functions, arrays, row values, COLLATE.
 */
import { assertNever } from '../../src/util/assert.js';
import type { Timestamp } from '../../src/util/hlc.js';
import type { Expr, FuncCall, SubLink } from '../parser/ast.js';
import { SqlError, unimplemented } from '../parser/sql-error.js';
import { Decimal } from '../types/decimal.js';
import { Oid, T, formatType, typeFromName, type SqlType } from '../types/type.js';
import { divisionByZero, datatypeMismatch } from '../types/type-error.js';
import { castContext, castDatum, checkInt, compareAcross, compareDatums, datumFromText, type Datum } from './datum.js';

const CAST_RANK = { implicit: 0, assignment: 1, explicit: 2 } as const;
import { lookupBuiltin } from './builtins.js';
import { REGEX_OPS, compileRegexOp } from './catalog-builtins.js';
import { CONTAINER_OPS, compileArrayExpr, compileArrayOp, compileContainerFunction, compileContainerOp, compileSubscript } from './array-jsonb.js';
import { binaryOpType, evalBinary, type BinaryOp as BinaryArithOp } from '../types/arith.js';


/** pg_namespace's rows by OID (sql/vtable/virtual-tables.ts), for ::regnamespace. */
const NAMESPACE_NAMES: ReadonlyMap<number, string> = new Map([[11, 'pg_catalog'], [99, 'pg_toast'], [2200, 'public'], [13000, 'information_schema']]);
export interface ScopeColumn {
  readonly name: string;
  readonly table: string | undefined;
  readonly type: SqlType;
  /** Not expanded by `*` (the hidden rowid). */
  readonly hidden: boolean;
}

/** The columns an expression may reference: row[i] is columns[i]. */
export class Scope {
  constructor(readonly columns: readonly ScopeColumn[]) {}

  resolve(names: readonly string[]): number {
    const col = names[names.length - 1] as string;
    const table = names.length >= 2 ? names[names.length - 2] : undefined;
    let found = -1;
    for (let i = 0; i < this.columns.length; i++) {
      const c = this.columns[i] as ScopeColumn;
      if (c.name !== col || (table !== undefined && c.table !== table)) continue;
      if (found >= 0) throw new SqlError('sql.ambiguous_column', '42702', `column reference "${col}" is ambiguous`);
      found = i;
    }
    if (found < 0) {
      if (table !== undefined && !this.columns.some((c) => c.table === table)) {
        throw new SqlError('sql.undefined_table', '42P01', `missing FROM-clause entry for table "${table}"`);
      }
      throw new SqlError('sql.undefined_column', '42703', `column "${names.join('.')}" does not exist`);
    }
    return found;
  }
}

/** Node-wide services expressions may call. */
export interface NodeServices {
  readonly nodeId: number;
  uniqueRowid(): bigint;
  randomUUID(): string;
  random(): number;
}

/** What an evaluation may read besides the row. */
export interface EvalEnv {
  params: readonly Datum[];
  /** The transaction timestamp, µs since 2000-01-01 UTC (now(), current_timestamp). */
  txnTime: number;
  /** The statement's start, same unit (statement_timestamp()). */
  stmtTime: number;
  /** cluster_logical_timestamp(): the transaction's commit timestamp, fixed by the call (KVTxn.fixCommitTimestamp). */
  commitTimestamp?: () => Timestamp;
  readonly node: NodeServices;
  user: string;
  database: string;
  /** A session variable's value (current_setting); throws 42704 for an unknown name. */
  setting(name: string): string;
  /** nextval/currval/setval (sql/schema/sequences.ts); absent: sequences unavailable. */
  readonly sequences?: SequenceAccess;
}

/**
 * Sequence functions for a session. Evaluation is synchronous, so a call
 * that needs the KV layer (an exhausted cached block, setval) throws the
 * session's "needs I/O" error; the session does the I/O and re-runs the
 * statement (sql/schema/sequences.ts).
 */
export interface SequenceAccess {
  nextval(name: string): bigint;
  currval(name: string): bigint;
  setval(name: string, value: bigint, isCalled: boolean): bigint;
}

export type EvalFn = (row: readonly Datum[], env: EvalEnv) => Datum;

export interface Typed {
  readonly type: SqlType;
  readonly fn: EvalFn;
  /** For `unknown` literals: the text, so context can re-type it. */
  readonly literal?: string;
  /** For an untyped parameter: its 1-based index. */
  readonly param?: number;
}

export function opError(op: string, l: SqlType, r: SqlType | undefined): SqlError {
  const sig = r === undefined ? `${op} ${formatType(l)}` : `${formatType(l)} ${op} ${formatType(r)}`;
  return new SqlError('sql.undefined_function', '42883', `operator does not exist: ${sig}`, {
    hint: 'No operator matches the given name and argument types. You might need to add explicit type casts.',
  });
}

const NUMERIC_RANK: Record<number, number> = { [Oid.int2]: 1, [Oid.int4]: 2, [Oid.int8]: 3, [Oid.numeric]: 4, [Oid.float4]: 5, [Oid.float8]: 6 };

export function isNumericType(t: SqlType): boolean {
  return t.family === 'int' || t.family === 'float' || t.family === 'numeric';
}

/** The common type of two operands for comparison / CASE / COALESCE, or undefined. */
export function unifyTypes(a: SqlType, b: SqlType): SqlType | undefined {
  if (a.family === 'unknown') return b;
  if (b.family === 'unknown') return a;
  if (a.oid === b.oid) return a.typmod === b.typmod ? a : { ...a, typmod: -1 };
  if (isNumericType(a) && isNumericType(b)) {
    const ra = NUMERIC_RANK[a.oid] ?? 0;
    const rb = NUMERIC_RANK[b.oid] ?? 0;
    const hi = ra >= rb ? a : b;
    if (hi.oid === Oid.float4 && (a.family === 'numeric' || b.family === 'numeric')) return T.float8;
    return { ...hi, typmod: -1 };
  }
  if (a.family === 'string' && b.family === 'string') return T.text;
  if ((a.family === 'date' || a.family === 'timestamp' || a.family === 'timestamptz') && (b.family === 'date' || b.family === 'timestamp' || b.family === 'timestamptz')) {
    return a.family === 'timestamptz' || b.family === 'timestamptz' ? T.timestamptz : T.timestamp;
  }
  if ((a.family === 'json' || a.family === 'jsonb') && a.family === b.family) return a;
  // oid and the reg* aliases compare as oids (regclass → oid is binary-coercible in PostgreSQL).
  if (a.family === 'oid' && b.family === 'oid') return T.oid;
  return undefined;
}

const likeCache = new Map<string, RegExp>();
function likeRegex(pattern: string, escape: string | null, ci: boolean): RegExp {
  const key = `${ci ? 'i' : 's'}${escape ?? ''}\u0000${pattern}`;
  let re = likeCache.get(key);
  if (re !== undefined) return re;
  let src = '^';
  const chars = [...pattern];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (escape !== null && escape !== '' && c === escape) {
      const n = chars[++i];
      if (n === undefined) throw new SqlError('sql.invalid_escape_sequence', '22025', 'LIKE pattern must not end with escape character');
      src += n.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    } else if (c === '%') src += '[\\s\\S]*';
    else if (c === '_') src += '[\\s\\S]';
    else src += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  re = new RegExp(src + '$', ci ? 'isu' : 'su');
  if (likeCache.size > 1000) likeCache.clear();
  likeCache.set(key, re);
  return re;
}

function constFn(v: Datum): EvalFn {
  return () => v;
}

/** Integer literal typed by magnitude. */
function intLiteral(text: string): Typed {
  const b = BigInt(text);
  if (b >= -2147483648n && b <= 2147483647n) return { type: T.int4, fn: constFn(Number(b)) };
  if (b >= -(2n ** 63n) && b < 2n ** 63n) return { type: T.int8, fn: constFn(b) };
  return { type: T.numeric, fn: constFn(Decimal.parseOrThrow(text)) };
}

function isUntyped(t: Typed): boolean {
  return t.type.family === 'unknown';
}

export class ExprCompiler {
  /** Compiles subqueries in expressions (set by plan/query-planner.ts; else 0A000). */
  subLinks: ((e: SubLink, hint: SqlType | undefined) => Typed) | undefined;
  /** Resolves a column of an enclosing query (correlated subqueries; set by plan/query-planner.ts). */
  outerRef: ((names: readonly string[]) => Typed | undefined) | undefined;

  /** Set when the expression mentions a volatile function or column (not constant-foldable). */
  constructor(
    readonly scope: Scope,
    /** Parameter types by index − 1; undefined = not yet inferred. Mutated as inference proceeds. */
    readonly paramTypes: (SqlType | undefined)[],
  ) {}

  /** Compiles `e`; `hint` is the type the context wants for untyped literals and parameters. */
  compile(e: Expr, hint?: SqlType): Typed {
    const t = this.compileRaw(e, hint);
    return hint !== undefined && hint.family !== 'unknown' && isUntyped(t) ? this.coerce(t, hint, 'implicit') : t;
  }

  /** Compiles a boolean condition (WHERE, CHECK, ON …): 42804 if not boolean. */
  /**
   * `x::regnamespace` (psql's \\d reads pg_statistic_ext.stxnamespace this
   * way): the namespace's name, typed `name`; an unknown OID prints as its
   * number, as PostgreSQL's regnamespaceout does.
   */
  private regnamespace(arg: Expr): Typed {
    const a = this.coerce(this.resolveUnknown(this.compile(arg, T.oid)), T.oid, 'explicit');
    const f = a.fn;
    return { type: T.name, fn: (row, env) => {
      const v = f(row, env);
      return v === null ? null : NAMESPACE_NAMES.get(Number(v)) ?? String(v);
    } };
  }

  compileBool(e: Expr, clause: string): Typed {
    const t = this.compile(e, T.bool);
    if (t.type.family !== 'bool') {
      throw datatypeMismatch(`argument of ${clause} must be type boolean, not type ${formatType(t.type)}`);
    }
    return t;
  }

  /** Resolves a still-untyped expression: unknown literals and parameters become text. */
  resolveUnknown(t: Typed): Typed {
    return isUntyped(t) ? this.coerce(t, T.text, 'implicit') : t;
  }

  /**
   * Converts `t` to type `to`. 'implicit' only re-types unknowns and widens
   * numbers; 'assignment' also allows any → text and number narrowing (with
   * range checks); 'explicit' is CAST.
   */
  coerce(t: Typed, to: SqlType, mode: 'implicit' | 'assignment' | 'explicit'): Typed {
    const from = t.type;
    if (from.oid === to.oid && from.typmod === to.typmod) return t;
    if (t.param !== undefined) {
      const idx = t.param - 1;
      if (this.paramTypes[idx] === undefined || this.paramTypes[idx]?.family === 'unknown') {
        this.paramTypes[idx] = to;
        return { type: to, fn: (_row, env) => env.params[idx] as Datum };
      }
    }
    if (t.literal !== undefined && from.family === 'unknown') {
      const lit = t.literal;
      if (to.family === 'unknown') return t;
      const v = datumFromText(lit, to);
      return { type: to, fn: constFn(v) };
    }
    if (from.family === 'unknown') {
      // NULL literal or an unknown-typed expression: convert at run time.
      const f = t.fn;
      return { type: to, fn: (row, env) => {
        const v = f(row, env);
        return v === null ? null : datumFromText(v as string, to);
      } };
    }
    const ctx = castContext(from, to);
    if (ctx === undefined) {
      if (mode === 'explicit') throw new SqlError('sql.cannot_coerce', '42846', `cannot cast type ${formatType(from)} to ${formatType(to)}`);
      throw datatypeMismatch(`expected ${formatType(to)}, found ${formatType(from)}`);
    }
    if (CAST_RANK[ctx] > CAST_RANK[mode]) throw datatypeMismatch(`expected ${formatType(to)}, found ${formatType(from)}`);
    const f = t.fn;
    return { type: to, fn: (row, env) => {
      const v = f(row, env);
      return v === null ? null : castDatum(v, from, to, mode);
    } };
  }

  private compileRaw(e: Expr, hint: SqlType | undefined): Typed {
    switch (e.kind) {
      case 'ColumnRef': {
        if (e.star) throw new SqlError('sql.syntax_error', '42601', '"*" is not allowed here');
        let i: number;
        try {
          i = this.scope.resolve(e.names);
        } catch (err) {
          // A correlated subquery's reference to the enclosing query's row.
          const outer = this.outerRef?.(e.names);
          if (outer !== undefined) return outer;
          throw err;
        }
        const c = this.scope.columns[i] as ScopeColumn;
        return { type: c.type, fn: (row) => row[i] as Datum };
      }
      case 'Const':
        switch (e.type) {
          case 'int':
            return intLiteral(e.text);
          case 'numeric':
            return { type: T.numeric, fn: constFn(Decimal.parseOrThrow(e.text)) };
          case 'string':
            return { type: T.unknown, fn: constFn(e.text), literal: e.text };
          case 'bool':
            return { type: T.bool, fn: constFn(e.value === true) };
          case 'null':
            return { type: T.unknown, fn: constFn(null) };
          case 'bitstring':
            throw unimplemented('bit string literals');
          default:
            return assertNever(e as never);
        }
      case 'Param': {
        const idx = e.index - 1;
        const known = this.paramTypes[idx];
        if (known !== undefined && known.family !== 'unknown') return { type: known, fn: (_row, env) => env.params[idx] as Datum };
        if (hint !== undefined && hint.family !== 'unknown') {
          this.paramTypes[idx] = hint;
          return { type: hint, fn: (_row, env) => env.params[idx] as Datum };
        }
        return { type: T.unknown, fn: (_row, env) => env.params[idx] as Datum, param: e.index };
      }
      case 'BinaryOp':
        return this.binary(e.op, e.left, e.right);
      case 'UnaryOp': {
        const a = this.compileRaw(e.operand, undefined);
        if (isUntyped(a) && a.param === undefined) {
          throw new SqlError('sql.ambiguous_function', '42725', `operator is not unique: ${e.op} unknown`, { hint: 'Could not choose a best candidate operator. You might need to add explicit type casts.' });
        }
        const x = isUntyped(a) ? this.coerce(a, T.numeric, 'implicit') : a;
        if (e.op === '+') return x;
        if (e.op === '-' && isNumericType(x.type)) {
          const f = x.fn;
          const t = x.type;
          return { type: t, fn: (row, env) => {
            const v = f(row, env);
            if (v === null) return null;
            if (t.family === 'int') return checkInt(t, typeof v === 'bigint' ? -v : -(v as number));
            if (t.family === 'numeric') return (v as Decimal).neg();
            return -(v as number);
          } };
        }
        throw opError(e.op, x.type, undefined);
      }
      case 'BoolExpr': {
        const args = e.args.map((a) => this.compileBool(a, e.op.toUpperCase()));
        const fns = args.map((a) => a.fn);
        if (e.op === 'not') {
          const f = fns[0] as EvalFn;
          return { type: T.bool, fn: (row, env) => {
            const v = f(row, env);
            return v === null ? null : !v;
          } };
        }
        if (e.op === 'and') {
          return { type: T.bool, fn: (row, env) => {
            let sawNull = false;
            for (const f of fns) {
              const v = f(row, env);
              if (v === false) return false;
              if (v === null) sawNull = true;
            }
            return sawNull ? null : true;
          } };
        }
        return { type: T.bool, fn: (row, env) => {
          let sawNull = false;
          for (const f of fns) {
            const v = f(row, env);
            if (v === true) return true;
            if (v === null) sawNull = true;
          }
          return sawNull ? null : false;
        } };
      }
      case 'FuncCall':
        return this.funcCall(e);
      case 'Cast': {
        if (e.type.arrayDims === 0 && e.type.name.replace(/^pg_catalog\./, '') === 'regnamespace') return this.regnamespace(e.arg);
        const to = typeFromName(e.type.name, e.type.mods, e.type.arrayDims);
        const a = this.compileRaw(e.arg, to);
        if (a.literal !== undefined || a.param !== undefined) return this.coerce(a, to, 'explicit');
        return this.coerce(a, to, 'explicit');
      }
      case 'Case': {
        const whens: { cond: EvalFn; then: Typed }[] = [];
        let operand: Typed | undefined;
        if (e.operand !== undefined) operand = this.compile(e.operand);
        for (const w of e.whens) {
          let cond: Typed;
          if (operand !== undefined) {
            const rhs = this.compile(w.when, operand.type.family === 'unknown' ? undefined : operand.type);
            cond = this.comparison('=', operand, rhs);
          } else cond = this.compileBool(w.when, 'CASE/WHEN');
          whens.push({ cond: cond.fn, then: this.compile(w.then, hint) });
        }
        const elseT = e.else !== undefined ? this.compile(e.else, hint) : undefined;
        const results = [...whens.map((w) => w.then), ...(elseT !== undefined ? [elseT] : [])];
        const type = this.commonType(results, 'CASE');
        const thens = whens.map((w) => ({ cond: w.cond, then: this.coerce(w.then, type, 'implicit').fn }));
        const elseF = elseT !== undefined ? this.coerce(elseT, type, 'implicit').fn : constFn(null);
        return { type, fn: (row, env) => {
          for (const w of thens) if (w.cond(row, env) === true) return w.then(row, env);
          return elseF(row, env);
        } };
      }
      case 'NullTest': {
        const a = this.compile(e.arg);
        const f = a.fn;
        return e.not ? { type: T.bool, fn: (row, env) => f(row, env) !== null } : { type: T.bool, fn: (row, env) => f(row, env) === null };
      }
      case 'BooleanTest': {
        const a = this.compileBool(e.arg, `IS ${e.test.toUpperCase()}`);
        const f = a.fn;
        const want = e.test === 'true' ? true : e.test === 'false' ? false : null;
        const not = e.not;
        return { type: T.bool, fn: (row, env) => (f(row, env) === want) !== not };
      }
      case 'IsDistinctFrom': {
        const [l, r] = this.pair(e.left, e.right);
        const cmp = this.comparator(l.type, r.type, 'IS DISTINCT FROM');
        const lf = l.fn;
        const rf = r.fn;
        const not = e.not;
        return { type: T.bool, fn: (row, env) => {
          const a = lf(row, env);
          const b = rf(row, env);
          const distinct = a === null || b === null ? a !== b : cmp(a, b) !== 0;
          return distinct !== not;
        } };
      }
      case 'InList': {
        const arg = this.compile(e.arg);
        const items = e.list.map((x) => this.compile(x, arg.type.family === 'unknown' ? undefined : arg.type));
        const all = [arg, ...items];
        const type = this.operandType(all, '=');
        const af = this.coerce(arg, type, 'implicit').fn;
        const fs = items.map((x) => this.coerce(x, type, 'implicit').fn);
        const cmp = this.comparator(type, type, 'IN');
        const not = e.not;
        return { type: T.bool, fn: (row, env) => {
          const a = af(row, env);
          if (a === null) return null;
          let sawNull = false;
          for (const f of fs) {
            const b = f(row, env);
            if (b === null) sawNull = true;
            else if (cmp(a, b) === 0) return !not;
          }
          return sawNull ? null : not;
        } };
      }
      case 'Between': {
        const arg = this.compile(e.arg);
        const lo = this.compile(e.low, arg.type.family === 'unknown' ? undefined : arg.type);
        const hi = this.compile(e.high, arg.type.family === 'unknown' ? undefined : arg.type);
        const type = this.operandType([arg, lo, hi], '>=');
        const [af, lf, hf] = [arg, lo, hi].map((x) => this.coerce(x, type, 'implicit').fn) as [EvalFn, EvalFn, EvalFn];
        const cmp = this.comparator(type, type, 'BETWEEN');
        const { not, symmetric } = e;
        return { type: T.bool, fn: (row, env) => {
          const a = af(row, env);
          let l = lf(row, env);
          let h = hf(row, env);
          if (symmetric && l !== null && h !== null && cmp(l, h) > 0) [l, h] = [h, l];
          const ge = a === null || l === null ? null : cmp(a, l) >= 0;
          const le = a === null || h === null ? null : cmp(a, h) <= 0;
          const r = ge === false || le === false ? false : ge === null || le === null ? null : true;
          return r === null ? null : r !== not;
        } };
      }
      case 'Like': {
        const a = this.coerceText(this.compile(e.arg, T.text), 'LIKE');
        const p = this.coerceText(this.compile(e.pattern, T.text), 'LIKE');
        const esc = e.escape !== undefined ? this.coerceText(this.compile(e.escape, T.text), 'ESCAPE').fn : constFn('\\');
        const { caseInsensitive: ci, not } = e;
        const af = a.fn;
        const pf = p.fn;
        return { type: T.bool, fn: (row, env) => {
          const s = af(row, env);
          const pat = pf(row, env);
          const es = esc(row, env);
          if (s === null || pat === null) return null;
          return likeRegex(pat as string, es as string | null, ci).test(s as string) !== not;
        } };
      }
      case 'SubLink':
        if (this.subLinks !== undefined) return this.subLinks(e, hint);
        throw unimplemented('subqueries');
      case 'ArrayOp':
        return compileArrayOp(this, e);
      case 'Array':
        return compileArrayExpr(this, e, hint);
      case 'Row':
        throw unimplemented('row values');
      case 'Coalesce': {
        const args = e.args.map((a) => this.compile(a, hint));
        const type = this.commonType(args, 'COALESCE');
        const fs = args.map((a) => this.coerce(a, type, 'implicit').fn);
        return { type, fn: (row, env) => {
          for (const f of fs) {
            const v = f(row, env);
            if (v !== null) return v;
          }
          return null;
        } };
      }
      case 'NullIf': {
        const [l0, r0] = this.pair(e.left, e.right);
        // The result has the common type of both (PostgreSQL resolves NULLIF like `=`).
        const type = this.operandType([l0, r0], '=');
        const l = this.coerce(l0, type, 'implicit');
        const r = this.coerce(r0, type, 'implicit');
        const cmp = this.comparator(type, type, 'NULLIF');
        const lf = l.fn;
        const rf = r.fn;
        return { type, fn: (row, env) => {
          const a = lf(row, env);
          const b = rf(row, env);
          return a !== null && b !== null && cmp(a, b) === 0 ? null : a;
        } };
      }
      case 'MinMax': {
        const args = e.args.map((a) => this.compile(a, hint));
        const type = this.commonType(args, e.op.toUpperCase());
        const fs = args.map((a) => this.coerce(a, type, 'implicit').fn);
        const cmp = this.comparator(type, type, e.op.toUpperCase());
        const sign = e.op === 'greatest' ? 1 : -1;
        return { type, fn: (row, env) => {
          let best: Datum = null;
          for (const f of fs) {
            const v = f(row, env);
            if (v !== null && (best === null || sign * cmp(v, best) > 0)) best = v;
          }
          return best;
        } };
      }
      case 'Subscript':
        return compileSubscript(this, e);
      case 'Collate': {
        // Cairn compares strings by code point: the C collation, which is also every database's default.
        const coll = e.collation[e.collation.length - 1];
        if (coll === 'default' || coll === 'C' || coll === 'POSIX') return this.compile(e.arg, hint);
        throw unimplemented(`COLLATE "${coll ?? ''}"`);
      }
      case 'SqlValueFunction':
        switch (e.name) {
          case 'current_timestamp':
            return { type: T.timestamptz, fn: (_r, env) => env.txnTime };
          case 'localtimestamp':
            return { type: T.timestamp, fn: (_r, env) => env.txnTime };
          case 'current_date':
            return { type: T.date, fn: (_r, env) => Math.floor(env.txnTime / 86_400_000_000) };
          case 'current_user':
          case 'current_role':
          case 'user':
          case 'session_user':
            return { type: T.name, fn: (_r, env) => env.user };
          case 'current_catalog':
            return { type: T.name, fn: (_r, env) => env.database };
          case 'current_schema':
            return { type: T.name, fn: constFn('public') };
          case 'current_time':
          case 'localtime':
            throw unimplemented(`${e.name.toUpperCase()} (type time)`);
          default:
            return assertNever(e as never);
        }
      case 'Default':
        throw new SqlError('sql.syntax_error', '42601', 'DEFAULT is not allowed in this context');
      default:
        return assertNever(e);
    }
  }

  private coerceText(t: Typed, what: string): Typed {
    if (isUntyped(t)) return this.coerce(t, T.text, 'implicit');
    if (t.type.family !== 'string') throw opError(what === 'LIKE' ? '~~' : what, t.type, T.text);
    return t;
  }

  /** Compiles two operands so that an untyped one takes the other's type. */
  pair(l: Expr, r: Expr): [Typed, Typed] {
    let lt = this.compile(l);
    let rt = this.compile(r, isUntyped(lt) ? undefined : lt.type);
    if (isUntyped(lt) && !isUntyped(rt)) lt = this.coerce(lt, rt.type, 'implicit');
    if (isUntyped(lt) && isUntyped(rt)) {
      lt = this.coerce(lt, T.text, 'implicit');
      rt = this.coerce(rt, T.text, 'implicit');
    }
    return [lt, rt];
  }

  /** The common type of comparison operands (IN, BETWEEN); 42883 naming the operator when there is none. */
  operandType(ts: readonly Typed[], op: string): SqlType {
    let type: SqlType = T.unknown;
    for (const t of ts) {
      const u = unifyTypes(type, t.type);
      if (u === undefined) throw opError(op, type, t.type);
      type = u;
    }
    return type.family === 'unknown' ? T.text : type;
  }

  /** The common type of several results (CASE, COALESCE, VALUES …); 42804 when there is none. */
  commonType(ts: readonly Typed[], what: string): SqlType {
    let type: SqlType = T.unknown;
    for (const t of ts) {
      const u = unifyTypes(type, t.type);
      if (u === undefined) throw datatypeMismatch(`${what} types ${formatType(type)} and ${formatType(t.type)} cannot be matched`);
      type = u;
    }
    return type.family === 'unknown' ? T.text : type;
  }

  /** A comparison function for two operand types (42883 when PostgreSQL has no such operator). */
  comparator(a: SqlType, b: SqlType, op: string): (x: Exclude<Datum, null>, y: Exclude<Datum, null>) => number {
    // oid, regclass, regtype, regproc: all compare as plain oids.
    if (a.family === 'oid' && b.family === 'oid') return (x, y) => compareDatums(x, y, T.oid);
    const u = unifyTypes(a, b);
    if (u === undefined) throw opError(op, a, b);
    if (a.family === b.family) return (x, y) => compareDatums(x, y, a);
    if (isNumericType(a) && isNumericType(b)) return (x, y) => compareAcross(x, a, y, b);
    // date vs timestamp(tz), unknown vs X: compare in the unified type.
    return (x, y) => compareDatums(a.family === u.family ? x : castDatum(x, a, u, 'implicit'), b.family === u.family ? y : castDatum(y, b, u, 'implicit'), u);
  }

  private comparison(op: string, l: Typed, r: Typed): Typed {
    if (isUntyped(l) && !isUntyped(r)) l = this.coerce(l, r.type, 'implicit');
    if (isUntyped(r) && !isUntyped(l)) r = this.coerce(r, l.type, 'implicit');
    if (isUntyped(l) && isUntyped(r)) {
      l = this.coerce(l, T.text, 'implicit');
      r = this.coerce(r, T.text, 'implicit');
    }
    // PostgreSQL casts int → oid implicitly (catalog queries compare oid columns with 0).
    if (l.type.family === 'oid' && r.type.family === 'int') r = this.coerce(r, l.type, 'explicit');
    else if (r.type.family === 'oid' && l.type.family === 'int') l = this.coerce(l, r.type, 'explicit');

    const cmp = this.comparator(l.type, r.type, op);
    const lf = l.fn;
    const rf = r.fn;
    let test: (c: number) => boolean;
    switch (op) {
      case '=':
        test = (c) => c === 0;
        break;
      case '<>':
        test = (c) => c !== 0;
        break;
      case '<':
        test = (c) => c < 0;
        break;
      case '<=':
        test = (c) => c <= 0;
        break;
      case '>':
        test = (c) => c > 0;
        break;
      case '>=':
        test = (c) => c >= 0;
        break;
      default:
        throw opError(op, l.type, r.type);
    }
    return { type: T.bool, fn: (row, env) => {
      const a = lf(row, env);
      if (a === null) return null;
      const b = rf(row, env);
      if (b === null) return null;
      return test(cmp(a, b));
    } };
  }

  private binary(op: string, le: Expr, re: Expr): Typed {
    if (CONTAINER_OPS.has(op)) return compileContainerOp(this, op, le, re);
    if (REGEX_OPS.has(op)) return compileRegexOp(this, op, le, re);
    if (op === '||') {
      // An untyped literal beside a non-string (`'p' || 1`) is text, not the other side's type.
      let l = this.compile(le);
      let r = this.compile(re);
      l = isUntyped(l) ? this.coerce(l, T.text, 'implicit') : l;
      r = isUntyped(r) ? this.coerce(r, T.text, 'implicit') : r;
      if (l.type.family !== 'string' && r.type.family !== 'string') throw opError(op, l.type, r.type);
      // Both sides become text (char(n) loses its padding, other types print).
      const lf = this.coerce(l, T.text, 'assignment').fn;
      const rf = this.coerce(r, T.text, 'assignment').fn;
      return { type: T.text, fn: (row, env) => {
        const a = lf(row, env);
        if (a === null) return null;
        const b = rf(row, env);
        return b === null ? null : (a as string) + (b as string);
      } };
    }
    const [l, r] = this.pairLoose(le, re);
    if (op === '=' || op === '<>' || op === '<' || op === '<=' || op === '>' || op === '>=') return this.comparison(op, l, r);
    if (op === '+' || op === '-' || op === '*' || op === '/' || op === '%' || op === '^') return this.arithmetic(op, l, r);
    if (op === '&' || op === '|' || op === '#') return this.bitwise(op, l, r);
    if (op === '~~' || op === '!~~' || op === '~~*' || op === '!~~*') throw unimplemented(`operator ${op}`);
    throw opError(op, l.type, r.type);
  }

  /** Integer bitwise and / or / xor, over the wider of the two integer types (int2 & int4 is int4). */
  private bitwise(op: '&' | '|' | '#', l: Typed, r: Typed): Typed {
    if (isUntyped(l)) l = this.coerce(l, isUntyped(r) ? T.int4 : r.type, 'implicit');
    if (isUntyped(r)) r = this.coerce(r, l.type, 'implicit');
    if (l.type.family !== 'int' || r.type.family !== 'int') throw opError(op, l.type, r.type);
    const type = unifyTypes(l.type, r.type) as SqlType;
    const lf = this.coerce(l, type, 'implicit').fn;
    const rf = this.coerce(r, type, 'implicit').fn;
    const big = type.oid === T.int8.oid;
    return { type, fn: (row, env) => {
      const a = lf(row, env);
      if (a === null) return null;
      const b = rf(row, env);
      if (b === null) return null;
      if (big) return op === '&' ? (a as bigint) & (b as bigint) : op === '|' ? (a as bigint) | (b as bigint) : (a as bigint) ^ (b as bigint);
      return op === '&' ? (a as number) & (b as number) : op === '|' ? (a as number) | (b as number) : (a as number) ^ (b as number);
    } };
  }

  /** Like pair() but leaves two untyped operands untyped (arithmetic wants numeric then). */
  private pairLoose(le: Expr, re: Expr): [Typed, Typed] {
    let l = this.compile(le);
    const r = this.compile(re, isUntyped(l) ? undefined : l.type);
    if (isUntyped(l) && !isUntyped(r)) l = this.coerce(l, r.type, 'implicit');
    return [l, r];
  }

  private arithmetic(op: string, l: Typed, r: Typed): Typed {
    if (isUntyped(l)) l = this.coerce(l, isUntyped(r) ? T.numeric : r.type, 'implicit');
    if (isUntyped(r)) r = this.coerce(r, l.type, 'implicit');
    const lt = l.type;
    const rt = r.type;
    // Dates, timestamps and intervals: sql/types' operator table (date − date,
    // timestamp ± interval, interval × number, …).
    if (!isNumericType(lt) || !isNumericType(rt)) {
      if (op === '^') throw opError(op, lt, rt);
      const aop = op as BinaryArithOp;
      const type = binaryOpType(aop, lt, rt);
      if (type === undefined) throw opError(op, lt, rt);
      const lf = l.fn;
      const rf = r.fn;
      return { type, fn: (row, env) => {
        const a = lf(row, env);
        if (a === null) return null;
        const b = rf(row, env);
        return b === null ? null : evalBinary(aop, a, lt, b, rt);
      } };
    }
    if (!isNumericType(lt) || !isNumericType(rt)) throw opError(op, lt, rt);
    let type = unifyTypes(lt, rt) as SqlType;
    if (op === '^') type = type.family === 'numeric' ? T.numeric : T.float8;
    const lf = this.coerce(l, type, 'implicit').fn;
    const rf = this.coerce(r, type, 'implicit').fn;
    const k = arithKernel(op, type);
    return { type, fn: (row, env) => {
      const a = lf(row, env);
      if (a === null) return null;
      const b = rf(row, env);
      if (b === null) return null;
      return k(a, b);
    } };
  }

  private funcCall(e: FuncCall): Typed {
    const name = e.name.join('.');
    if (e.over !== undefined) throw unimplemented('window functions');
    if (e.star || e.distinct || AGGREGATES.has(name)) throw unimplemented(`aggregate functions (${name})`);
    if (e.filter !== undefined || e.orderBy.length > 0) throw unimplemented(`aggregate functions (${name})`);
    return compileContainerFunction(this, name, e.args) ?? lookupBuiltin(this, name, e.args);
  }
}

const AGGREGATES = new Set(['count', 'sum', 'avg', 'min', 'max', 'array_agg', 'string_agg', 'bool_and', 'bool_or', 'every', 'stddev', 'variance', 'json_agg', 'jsonb_agg']);

type Kernel = (a: Exclude<Datum, null>, b: Exclude<Datum, null>) => Datum;

/**
 * numeric ^ numeric: exact for integer exponents up to 10000 (by squaring),
 * through float8 otherwise; the result shows at least 16 decimals, as
 * PostgreSQL's power() on numeric does for results of ordinary size.
 */
function numericPower(a: Decimal, b: Decimal): Decimal {
  const scale = (d: Decimal): number => {
    const t = d.toString();
    const i = t.indexOf('.');
    return i < 0 ? 0 : t.length - i - 1;
  };
  const e = b.toBigInt();
  if (e !== undefined && b.isFinite() && b.trunc(0).equals(b) && e >= -10000n && e <= 10000n && a.isFinite()) {
    if (a.isZero() && e < 0n) throw new SqlError('sql.invalid_argument_for_power_function', '2201F', 'zero raised to a negative power is undefined');
    let result = Decimal.ONE;
    let base = a;
    let n = e < 0n ? -e : e;
    while (n > 0n) {
      if (n & 1n) result = result.mul(base);
      base = base.mul(base);
      n >>= 1n;
    }
    if (e < 0n) result = Decimal.ONE.divScaled(result, Math.max(16, scale(a)));
    return result.round(Math.max(16, scale(a)));
  }
  const v = Math.pow(a.toNumber(), b.toNumber());
  if (Number.isNaN(v)) throw new SqlError('sql.invalid_argument_for_power_function', '2201F', 'a negative number raised to a non-integer power yields a complex result');
  if (!Number.isFinite(v)) throw new SqlError('sql.numeric_value_out_of_range', '22003', 'value overflows numeric format');
  return Decimal.fromFloat(v).round(16);
}

function arithKernel(op: string, t: SqlType): Kernel {
  if (t.family === 'int') {
    if (t.oid === Oid.int8) {
      switch (op) {
        case '+':
          return (a, b) => checkInt(t, (a as bigint) + (b as bigint));
        case '-':
          return (a, b) => checkInt(t, (a as bigint) - (b as bigint));
        case '*':
          return (a, b) => checkInt(t, (a as bigint) * (b as bigint));
        case '/':
          return (a, b) => {
            if (b === 0n) throw divisionByZero();
            return checkInt(t, (a as bigint) / (b as bigint));
          };
        case '%':
          return (a, b) => {
            if (b === 0n) throw divisionByZero();
            return (a as bigint) % (b as bigint);
          };
      }
    } else {
      switch (op) {
        case '+':
          return (a, b) => checkInt(t, (a as number) + (b as number));
        case '-':
          return (a, b) => checkInt(t, (a as number) - (b as number));
        case '*':
          return (a, b) => checkInt(t, (a as number) * (b as number));
        case '/':
          return (a, b) => {
            if (b === 0) throw divisionByZero();
            return checkInt(t, Math.trunc((a as number) / (b as number)));
          };
        case '%':
          return (a, b) => {
            if (b === 0) throw divisionByZero();
            return ((a as number) % (b as number)) + 0;
          };
      }
    }
  }
  if (t.family === 'numeric') {
    switch (op) {
      case '+':
        return (a, b) => (a as Decimal).add(b as Decimal);
      case '-':
        return (a, b) => (a as Decimal).sub(b as Decimal);
      case '*':
        return (a, b) => (a as Decimal).mul(b as Decimal);
      case '/':
        return (a, b) => (a as Decimal).div(b as Decimal);
      case '%':
        return (a, b) => (a as Decimal).mod(b as Decimal);
      case '^':
        return (a, b) => numericPower(a as Decimal, b as Decimal);
    }
  }
  const f4 = t.oid === Oid.float4;
  const fin = (v: number, a: number, b: number): number => {
    if (!Number.isFinite(v) && Number.isFinite(a) && Number.isFinite(b)) {
      throw new SqlError('sql.numeric_value_out_of_range', '22003', 'value out of range: overflow');
    }
    return f4 ? Math.fround(v) : v;
  };
  switch (op) {
    case '+':
      return (a, b) => fin((a as number) + (b as number), a as number, b as number);
    case '-':
      return (a, b) => fin((a as number) - (b as number), a as number, b as number);
    case '*':
      return (a, b) => fin((a as number) * (b as number), a as number, b as number);
    case '/':
      return (a, b) => {
        if (b === 0) throw divisionByZero();
        return fin((a as number) / (b as number), a as number, b as number);
      };
    case '%':
      return (a, b) => {
        if (b === 0) throw divisionByZero();
        return (a as number) % (b as number);
      };
    case '^':
      return (a, b) => fin(Math.pow(a as number, b as number), a as number, b as number);
  }
  throw opError(op, t, t);
}
