/**
 * sql/sem/array-jsonb.ts — array and jsonb expressions used by ORMs:
 *
 *   ARRAY[e, …]              array constructor (element type: the common type)
 *   x op ANY|ALL (array)     e.g. `id = ANY($1)` ($1 is inferred as an array)
 *   a @> b, a <@ b, a && b   array containment / overlap (NULL elements never match)
 *   j -> k, j ->> k          jsonb object field (text key) or array element (int index)
 *   j @> j2, j <@ j2         jsonb containment (PostgreSQL's rules: objects by key,
 *                            arrays as multisets, a top-level array contains a scalar)
 *   j ? k, j ?| ks, j ?& ks  key / string-element existence
 *   array_length, cardinality, jsonb_build_object, to_jsonb, jsonb_typeof
 *   a[i]                     array element (1-based; out of range → NULL; slices 0A000)
 *   toJsonValue(d, type)     SQL value → jsonb value (to_jsonb, jsonb_agg)
 *
 * Hooked into ExprCompiler (expr.ts) for the ArrayOp / Array nodes, these
 * binary operators (before operand typing, so `j -> 'key'` keeps its text
 * key) and these function names. Strict: NULL operands give NULL.
 */
import type { ArrayExpr, ArrayOp, Expr, Subscript } from '../parser/ast.js';
import { SqlError, unimplemented } from '../parser/sql-error.js';
import { Decimal } from '../types/decimal.js';
import { Jsonb, type JsonValue } from '../types/datum.js';
import { datumKey } from '../types/compare.js';
import { T, Oid, arrayOf, formatType, type SqlType } from '../types/type.js';
import { datumToText, type Datum } from './datum.js';
import type { EvalFn, ExprCompiler, Typed } from './expr.js';

/** Binary operators compiled here rather than by ExprCompiler.binary. */
export const CONTAINER_OPS: ReadonlySet<string> = new Set(['->', '->>', '@>', '<@', '?', '?|', '?&', '&&']);

function noOperator(op: string, l: SqlType, r: SqlType): SqlError {
  return new SqlError('sql.undefined_function', '42883', `operator does not exist: ${formatType(l)} ${op} ${formatType(r)}`, {
    hint: 'No operator matches the given name and argument types. You might need to add explicit type casts.',
  });
}

function isUntyped(t: Typed): boolean {
  return t.type.family === 'unknown';
}

export function compileArrayExpr(c: ExprCompiler, e: ArrayExpr, hint: SqlType | undefined): Typed {
  const elemHint = hint?.family === 'array' ? hint.arrayElem : undefined;
  const ts = e.elements.map((x) => c.compile(x, elemHint));
  if (ts.length === 0) {
    if (elemHint === undefined) throw new SqlError('sql.indeterminate_datatype', '42P18', 'cannot determine type of empty array', { hint: 'Explicitly cast to the desired type, for example ARRAY[]::integer[].' });
    return { type: arrayOf(elemHint), fn: () => [] };
  }
  const elem = c.commonType(ts, 'ARRAY');
  if (elem.family === 'array') throw unimplemented('multidimensional arrays');
  const fns = ts.map((t) => c.coerce(t, elem, 'implicit').fn);
  return { type: arrayOf(elem), fn: (row, env) => fns.map((f) => f(row, env)) };
}

/** `a[i]` on a one-dimensional array. */
/** An array's lower bound: 1, except int2vector / oidvector, which PostgreSQL subscripts from 0. */
export function arrayLowerBound(t: SqlType): number {
  return t.oid === Oid.int2vector || t.oid === Oid.oidvector ? 0 : 1;
}

export function compileSubscript(c: ExprCompiler, e: Subscript): Typed {
  const a = c.compile(e.arg);
  if (a.type.family !== 'array') throw new SqlError('sql.datatype_mismatch', '42804', `cannot subscript type ${formatType(a.type)} because it does not support subscripting`);
  if (e.subscripts.length !== 1 || (e.subscripts[0] as Subscript['subscripts'][number]).slice) throw unimplemented('array slices and multidimensional subscripts');
  const idx = c.coerce(c.compile((e.subscripts[0] as Subscript['subscripts'][number]).upper as Expr, T.int4), T.int4, 'implicit');
  const lb = arrayLowerBound(a.type);
  return strict2(a.type.arrayElem as SqlType, a.fn, idx.fn, (arr, i) => (arr as readonly Datum[])[Number(i) - lb] ?? null);
}

/** `left op ANY|ALL (right)` over an array value. */
export function compileArrayOp(c: ExprCompiler, e: ArrayOp): Typed {
  let l = c.compile(e.left);
  let r = c.compile(e.right, isUntyped(l) ? undefined : arrayOf(l.type));
  if (isUntyped(r)) r = c.coerce(r, arrayOf(isUntyped(l) ? T.text : l.type), 'implicit');
  if (r.type.family !== 'array') throw noOperator(e.op, l.type, r.type);
  const elem = r.type.arrayElem as SqlType;
  if (isUntyped(l)) l = c.coerce(l, elem, 'implicit');
  const cmp = c.comparator(l.type, elem, e.op);
  const test = compareTest(e.op);
  const all = e.quantifier === 'all';
  const lf = l.fn;
  const rf = r.fn;
  return {
    type: T.bool,
    fn: (row, env) => {
      const arr = rf(row, env) as readonly Datum[] | null;
      if (arr === null) return null;
      if (arr.length === 0) return all;
      const v = lf(row, env);
      if (v === null) return null;
      let sawNull = false;
      for (const x of arr) {
        if (x === null) {
          sawNull = true;
          continue;
        }
        const ok = test(cmp(v, x));
        if (all && !ok) return false;
        if (!all && ok) return true;
      }
      return sawNull ? null : all;
    },
  };
}

/** The test of a comparison operator on a comparator's result (ANY / ALL). */
export function compareTest(op: string): (c: number) => boolean {
  switch (op) {
    case '=':
      return (c) => c === 0;
    case '<>':
    case '!=':
      return (c) => c !== 0;
    case '<':
      return (c) => c < 0;
    case '<=':
      return (c) => c <= 0;
    case '>':
      return (c) => c > 0;
    case '>=':
      return (c) => c >= 0;
    default:
      throw unimplemented(`operator ${op} with ANY/ALL`);
  }
}

function strict2(type: SqlType, lf: EvalFn, rf: EvalFn, k: (a: Exclude<Datum, null>, b: Exclude<Datum, null>) => Datum): Typed {
  return {
    type,
    fn: (row, env) => {
      const a = lf(row, env);
      if (a === null) return null;
      const b = rf(row, env);
      return b === null ? null : k(a, b);
    },
  };
}

/** The container operators (CONTAINER_OPS); operands are compiled here. */
export function compileContainerOp(c: ExprCompiler, op: string, le: Expr, re: Expr): Typed {
  let l = c.compile(le);
  if (op === '->' || op === '->>') {
    if (isUntyped(l)) l = c.coerce(l, T.jsonb, 'implicit');
    let r = c.compile(re);
    if (isUntyped(r)) r = c.coerce(r, T.text, 'implicit');
    if ((l.type.family !== 'jsonb' && l.type.family !== 'json') || (r.type.family !== 'string' && r.type.family !== 'int')) throw noOperator(op, l.type, r.type);
    const json = l.type.family === 'json';
    const lf = json ? (row: readonly Datum[], env: Parameters<EvalFn>[1]) => {
      const v = l.fn(row, env);
      return v === null ? null : Jsonb.parse(v as string);
    } : l.fn;
    const byIndex = r.type.family === 'int';
    const text = op === '->>';
    return strict2(text ? T.text : l.type, lf, r.fn, (a, b) => {
      const v = (a as Jsonb).value;
      let out: JsonValue | undefined;
      if (byIndex) {
        if (Array.isArray(v)) {
          const i = Number(b);
          out = (v as JsonValue[])[i < 0 ? v.length + i : i];
        }
      } else if (v instanceof Map) out = v.get(b as string);
      if (out === undefined) return null;
      if (text) return out === null ? null : typeof out === 'string' ? out : Jsonb.from(out).toString();
      return json ? Jsonb.from(out).toString() : Jsonb.from(out);
    });
  }
  if (op === '?' || op === '?|' || op === '?&') {
    if (isUntyped(l)) l = c.coerce(l, T.jsonb, 'implicit');
    const want = op === '?' ? T.text : arrayOf(T.text);
    let r = c.compile(re, want);
    if (isUntyped(r)) r = c.coerce(r, want, 'implicit');
    if (l.type.family !== 'jsonb' || (op === '?' ? r.type.family !== 'string' : r.type.family !== 'array')) throw noOperator(op, l.type, r.type);
    const has = (v: JsonValue, k: string): boolean => (v instanceof Map ? v.has(k) : Array.isArray(v) ? (v as JsonValue[]).includes(k) : v === k);
    return strict2(T.bool, l.fn, r.fn, (a, b) => {
      const v = (a as Jsonb).value;
      if (op === '?') return has(v, b as string);
      const ks = (b as readonly Datum[]).filter((k): k is string => k !== null);
      return op === '?|' ? ks.some((k) => has(v, k)) : ks.every((k) => has(v, k));
    });
  }
  // @> <@ &&: both operands of one container type.
  let r = c.compile(re, isUntyped(l) ? undefined : l.type);
  if (isUntyped(l) && !isUntyped(r)) l = c.coerce(l, r.type, 'implicit');
  if (isUntyped(r) && !isUntyped(l)) r = c.coerce(r, l.type, 'implicit');
  if (l.type.family === 'jsonb' && r.type.family === 'jsonb' && op !== '&&') {
    const [outer, inner] = op === '@>' ? [l, r] : [r, l];
    return strict2(T.bool, outer.fn, inner.fn, (a, b) => jsonContains((a as Jsonb).value, (b as Jsonb).value, true));
  }
  if (l.type.family === 'array' && r.type.family === 'array') {
    const le2 = l.type.arrayElem as SqlType;
    const re2 = r.type.arrayElem as SqlType;
    if (le2.oid !== re2.oid && c.commonType([{ type: le2, fn: () => null }, { type: re2, fn: () => null }], op) === undefined) throw noOperator(op, l.type, r.type);
    const keys = (arr: readonly Datum[], t: SqlType): Set<string | number> => new Set(arr.filter((x) => x !== null).map((x) => datumKey(x, t) as string | number));
    if (op === '&&') {
      return strict2(T.bool, l.fn, r.fn, (a, b) => {
        const ka = keys(a as readonly Datum[], le2);
        return (b as readonly Datum[]).some((x) => x !== null && ka.has(datumKey(x, re2) as string | number));
      });
    }
    const [outer, inner, ot, it] = op === '@>' ? [l, r, le2, re2] : [r, l, re2, le2];
    return strict2(T.bool, outer.fn, inner.fn, (a, b) => {
      const ka = keys(a as readonly Datum[], ot);
      return (b as readonly Datum[]).every((x) => x !== null && ka.has(datumKey(x, it) as string | number));
    });
  }
  throw noOperator(op, l.type, r.type);
}

function jsonScalarEqual(a: JsonValue, b: JsonValue): boolean {
  if (a instanceof Decimal && b instanceof Decimal) return a.sub(b).isZero();
  return a === b;
}

/** PostgreSQL's jsonb containment (`a @> b`). */
export function jsonContains(a: JsonValue, b: JsonValue, top: boolean): boolean {
  if (a instanceof Map) {
    if (!(b instanceof Map)) return false;
    for (const [k, bv] of b) {
      if (!a.has(k)) return false;
      if (!jsonContains(a.get(k) as JsonValue, bv, false)) return false;
    }
    return true;
  }
  if (Array.isArray(a)) {
    const arr = a as readonly JsonValue[];
    if (Array.isArray(b)) return (b as readonly JsonValue[]).every((bv) => arr.some((av) => jsonContains(av, bv, false)));
    if (top && !(b instanceof Map)) return arr.some((av) => !(av instanceof Map) && !Array.isArray(av) && jsonScalarEqual(av, b));
    return false;
  }
  if (b instanceof Map || Array.isArray(b)) return false;
  return jsonScalarEqual(a, b);
}

/** A SQL value as a jsonb value (to_jsonb). */
export function toJsonValue(d: Datum, t: SqlType): JsonValue {
  if (d === null) return null;
  switch (t.family) {
    case 'bool':
      return d as boolean;
    case 'int':
      return Decimal.fromInt(d as number | bigint);
    case 'float': {
      const n = d as number;
      return Number.isFinite(n) ? Decimal.parseOrThrow(String(n)) : String(n);
    }
    case 'numeric':
      return (d as Decimal).isFinite() ? (d as Decimal) : (d as Decimal).toString();
    case 'jsonb':
      return (d as Jsonb).value;
    case 'json':
      return Jsonb.parse(d as string).value;
    case 'array':
      return (d as readonly Datum[]).map((x) => toJsonValue(x, t.arrayElem as SqlType));
    case 'string':
      return d as string;
    case 'timestamp':
    case 'timestamptz':
      return datumToText(d, t).replace(' ', 'T');
    default:
      return datumToText(d, t);
  }
}

/** Functions over arrays and jsonb; undefined when `name` is not one of them. */
export function compileContainerFunction(c: ExprCompiler, name: string, exprs: readonly Expr[]): Typed | undefined {
  switch (name) {
    case 'unnest':
    case 'jsonb_array_elements':
    case 'jsonb_each':
    case 'generate_series':
      throw unimplemented(`set-returning function ${name}`);
    case 'array_upper':
    case 'array_lower': {
      // Arrays have lower bound 1 (int2vector / oidvector 0): upper is lower + the dimension's length − 1; NULL for an empty array or a missing dimension.
      if (exprs.length !== 2) return undefined;
      const a = c.compile(exprs[0] as Expr);
      if (a.type.family !== 'array') throw new SqlError('sql.undefined_function', '42883', `function ${name}(${formatType(a.type)}, integer) does not exist`);
      const dim = c.coerce(c.compile(exprs[1] as Expr, T.int4), T.int4, 'implicit');
      const upper = name === 'array_upper';
      const lb = arrayLowerBound(a.type);
      return strict2(T.int4, a.fn, dim.fn, (arr, d) => {
        let cur: Datum = arr;
        for (let i = 1; i < Number(d); i++) cur = Array.isArray(cur) ? ((cur as readonly Datum[])[0] ?? null) : null;
        if (Number(d) < 1 || !Array.isArray(cur) || (cur as readonly Datum[]).length === 0) return null;
        return upper ? (cur as readonly Datum[]).length + lb - 1 : lb;
      });
    }
    case 'array_length':
    case 'cardinality': {
      const want = name === 'array_length' ? 2 : 1;
      if (exprs.length !== want) return undefined;
      const a = c.compile(exprs[0] as Expr);
      if (a.type.family !== 'array') throw new SqlError('sql.undefined_function', '42883', `function ${name}(${formatType(a.type)}) does not exist`);
      if (name === 'cardinality') return { type: T.int4, fn: (row, env) => (a.fn(row, env) as readonly Datum[] | null)?.length ?? null };
      const dim = c.coerce(c.compile(exprs[1] as Expr, T.int4), T.int4, 'implicit');
      return strict2(T.int4, a.fn, dim.fn, (arr, d) => (Number(d) === 1 && (arr as readonly Datum[]).length > 0 ? (arr as readonly Datum[]).length : null));
    }
    case 'to_jsonb': {
      if (exprs.length !== 1) return undefined;
      const a = c.resolveUnknown(c.compile(exprs[0] as Expr));
      return { type: T.jsonb, fn: (row, env) => {
        const v = a.fn(row, env);
        return v === null ? null : Jsonb.from(toJsonValue(v, a.type));
      } };
    }
    case 'jsonb_build_object': {
      if (exprs.length % 2 !== 0) throw new SqlError('sql.invalid_parameter_value', '22023', 'argument list must have even number of elements', { hint: 'The arguments of jsonb_build_object() must consist of alternating keys and values.' });
      const args = exprs.map((e) => c.resolveUnknown(c.compile(e)));
      return { type: T.jsonb, fn: (row, env) => {
        const pairs = new Map<string, JsonValue>();
        for (let i = 0; i < args.length; i += 2) {
          const k = (args[i] as Typed).fn(row, env);
          if (k === null) throw new SqlError('sql.null_value_not_allowed', '22004', 'argument 1: key must not be null');
          const kt = (args[i] as Typed).type;
          pairs.set(kt.family === 'string' ? (k as string) : datumToText(k, kt), toJsonValue((args[i + 1] as Typed).fn(row, env), (args[i + 1] as Typed).type));
        }
        return Jsonb.from(pairs);
      } };
    }
    case 'jsonb_build_array': {
      const args = exprs.map((e) => c.resolveUnknown(c.compile(e)));
      return { type: T.jsonb, fn: (row, env) => Jsonb.from(args.map((a) => toJsonValue(a.fn(row, env), a.type))) };
    }
    case 'jsonb_typeof': {
      if (exprs.length !== 1) return undefined;
      const a = c.coerce(c.compile(exprs[0] as Expr, T.jsonb), T.jsonb, 'implicit');
      return { type: T.text, fn: (row, env) => {
        const v = a.fn(row, env) as Jsonb | null;
        if (v === null) return null;
        const j = v.value;
        return j === null ? 'null' : j instanceof Map ? 'object' : Array.isArray(j) ? 'array' : typeof j === 'string' ? 'string' : typeof j === 'boolean' ? 'boolean' : 'number';
      } };
    }
    default:
      return undefined;
  }
}
