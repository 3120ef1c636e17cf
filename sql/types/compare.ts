/**
 * Ordering, equality and hash keys of datums, as PostgreSQL's btree and hash
 * operator classes define them.
 *
 *   bool          false < true
 *   int, oid      numeric value (int8 bigints)
 *   float         −∞ < … < −0 = +0 < … < +∞ < NaN, and NaN = NaN (PostgreSQL,
 *                 unlike IEEE, so NaN sorts and groups)
 *   numeric       Decimal.cmp: 1.0 = 1.00; NaN greatest
 *   string        code point order (Cairn's only collation is "C");
 *                 char(n) ignores trailing spaces
 *   bytea         unsigned bytes, then length
 *   date, timestamp(tz)   the number (±Infinity at the ends)
 *   interval      months × 30 days + days, × 24 h, + µs ('1 mon' = '30 days')
 *   uuid          canonical text = byte order
 *   jsonb         PostgreSQL's jsonb order (compareJson: '[]' first, scalars,
 *                 arrays by length, objects by size, then element-wise)
 *   array         element-wise (a NULL element sorts after any value), then length
 *
 * datumKey(d, t) gives a Map key (number or string) that is equal exactly when
 * the datums compare equal — for GROUP BY, DISTINCT and hash joins. Within one
 * type, String(datumKey) is injective too, so composite keys can be strings
 * joined with length prefixes (rowKey).
 *
 * Cross-type comparison (compareMixed) follows PostgreSQL's operator choice:
 * int vs int exact; int/numeric vs numeric exact; anything vs float as float8;
 * oid only against int.
 *
 * NULLs: compareDatums takes non-NULL datums; compareNullable applies
 * NULLS FIRST/LAST (PostgreSQL's default: NULLS LAST ascending, FIRST descending).
 */
import { assertNever } from '../../src/util/assert.js';
import { Decimal } from './decimal.js';
import { Jsonb, type Datum, type JsonObject, type JsonValue } from './datum.js';
import { Interval } from './interval.js';
import { intToOid } from './cast.js';
import { datatypeMismatch, undefinedOperator } from './type-error.js';
import { Oid, formatType, type SqlType } from './type.js';

function cmpNum(a: number, b: number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** PostgreSQL's float order: NaN greatest and equal to itself; −0 = +0. */
export function compareFloats(a: number, b: number): number {
  if (a < b) return -1;
  if (a > b) return 1;
  if (a === b) return 0;
  const an = a !== a;
  const bn = b !== b;
  return an === bn ? 0 : an ? 1 : -1;
}

/** Code point order (UTF-16 code unit order differs only around surrogates). */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800 && (x < 0xe000) !== (y < 0xe000)) return x < 0xe000 ? 1 : -1; // surrogate (≥ U+10000) vs BMP above U+E000
    return x < y ? -1 : 1;
  }
  return cmpNum(a.length, b.length);
}

function rtrim(s: string): string {
  let e = s.length;
  while (e > 0 && s.charCodeAt(e - 1) === 32) e--;
  return e === s.length ? s : s.slice(0, e);
}

/** Total order of two non-NULL datums of type `t`: negative, zero or positive. */
export function compareDatums(a: Datum, b: Datum, t: SqlType): number {
  switch (t.family) {
    case 'bool':
      return a === b ? 0 : a ? 1 : -1;
    case 'int':
    case 'oid':
    case 'date':
    case 'timestamp':
    case 'timestamptz':
      return a! < b! ? -1 : a! > b! ? 1 : 0;
    case 'float':
      return compareFloats(a as number, b as number);
    case 'numeric':
      return (a as Decimal).cmp(b as Decimal);
    case 'string':
      return t.oid === Oid.bpchar ? compareStrings(rtrim(a as string), rtrim(b as string)) : compareStrings(a as string, b as string);
    case 'unknown':
    case 'uuid':
    case 'json':
      return compareStrings(a as string, b as string);
    case 'bytes':
      return Buffer.compare(a as Buffer, b as Buffer);
    case 'interval':
      return (a as Interval).cmp(b as Interval);
    case 'jsonb':
      return compareJson((a as Jsonb).value, (b as Jsonb).value);
    case 'array':
      return compareArrays(a as readonly Datum[], b as readonly Datum[], t.arrayElem as SqlType);
    case 'void':
      return 0;
    case 'record':
      throw datatypeMismatch('could not identify a comparison function for type record');
    default:
      return assertNever(t.family);
  }
}

function compareArrays(a: readonly Datum[], b: readonly Datum[], elem: SqlType): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a[i] as Datum;
    const y = b[i] as Datum;
    if (x === null || y === null) {
      if (x === y) continue;
      return x === null ? 1 : -1;
    }
    const c = Array.isArray(x) ? compareArrays(x as readonly Datum[], y as readonly Datum[], elem) : compareDatums(x, y, elem);
    if (c !== 0) return c;
  }
  return cmpNum(a.length, b.length);
}

function jsonRank(v: JsonValue): number {
  if (v === null) return 0;
  if (typeof v === 'string') return 1;
  if (v instanceof Decimal) return 2;
  if (typeof v === 'boolean') return 3;
  return Array.isArray(v) ? 4 : 5;
}

/**
 * PostgreSQL's jsonb btree order (compareJsonbContainers). A top-level scalar
 * is a one-element "raw scalar" array. Arrays compare by length, then raw
 * scalar before real array, then element-wise; objects by pair count, then
 * pair by pair in storage order (keys compared lexically, then values);
 * values of different kinds by null < string < number < boolean < array < object.
 * So '[]' sorts first of all, and every scalar before any non-empty array.
 */
export function compareJson(a: JsonValue, b: JsonValue): number {
  const rawA = jsonRank(a) < 4;
  const rawB = jsonRank(b) < 4;
  if (rawA === rawB) return compareJsonValues(a, b);
  const xa = rawA ? [a] : a;
  const xb = rawB ? [b] : b;
  if (Array.isArray(xa) && Array.isArray(xb)) {
    if (xa.length !== xb.length) return xa.length - xb.length;
    return rawA ? -1 : 1; // same length: the raw scalar first
  }
  return compareJsonValues(xa, xb);
}

function compareJsonValues(a: JsonValue, b: JsonValue): number {
  const ra = jsonRank(a);
  const rb = jsonRank(b);
  if (ra !== rb) return ra - rb;
  switch (ra) {
    case 0:
      return 0;
    case 1:
      return compareStrings(a as string, b as string);
    case 2:
      return (a as Decimal).cmp(b as Decimal);
    case 3:
      return a === b ? 0 : a ? 1 : -1;
    case 4: {
      const x = a as readonly JsonValue[];
      const y = b as readonly JsonValue[];
      if (x.length !== y.length) return x.length - y.length;
      for (let i = 0; i < x.length; i++) {
        const c = compareJsonValues(x[i] as JsonValue, y[i] as JsonValue);
        if (c !== 0) return c;
      }
      return 0;
    }
    default: {
      const x = a as JsonObject;
      const y = b as JsonObject;
      if (x.size !== y.size) return x.size - y.size;
      const xi = x.entries();
      const yi = y.entries();
      for (;;) {
        const p = xi.next();
        const q = yi.next();
        if (p.done || q.done) return 0;
        const kc = compareStrings(p.value[0], q.value[0]);
        if (kc !== 0) return kc;
        const vc = compareJsonValues(p.value[1], q.value[1]);
        if (vc !== 0) return vc;
      }
    }
  }
}

/** Equality as SQL `=` on non-NULL datums (NaN = NaN for float and numeric, as PostgreSQL). */
export function datumsEqual(a: Datum, b: Datum, t: SqlType): boolean {
  switch (t.family) {
    case 'int':
    case 'bool':
    case 'oid':
    case 'date':
    case 'timestamp':
    case 'timestamptz':
    case 'uuid':
    case 'unknown':
    case 'json':
      return a === b;
    case 'string':
      return a === b || (t.oid === Oid.bpchar && rtrim(a as string) === rtrim(b as string));
    default:
      return compareDatums(a, b, t) === 0;
  }
}

export interface NullOrder {
  /** Descending order. */
  readonly desc?: boolean;
  /** NULLs before values; defaults to PostgreSQL's: last ascending, first descending. */
  readonly nullsFirst?: boolean;
}

/** ORDER BY comparison of possibly-NULL datums with direction and NULLS FIRST/LAST. */
export function compareNullable(a: Datum, b: Datum, t: SqlType, order: NullOrder = {}): number {
  const desc = order.desc ?? false;
  if (a === null || b === null) {
    if (a === b) return 0;
    const nullsFirst = order.nullsFirst ?? desc;
    return (a === null) === nullsFirst ? -1 : 1;
  }
  const c = compareDatums(a, b, t);
  return desc ? -c : c;
}

/** A Map key equal exactly for equal datums of type `t` (NULL → null). */
export function datumKey(d: Datum, t: SqlType): string | number | null {
  if (d === null) return null;
  switch (t.family) {
    case 'bool':
      return d ? 1 : 0;
    case 'int':
      if (typeof d === 'bigint') return d >= -9007199254740991n && d <= 9007199254740991n ? Number(d) : d.toString();
      return d as number;
    case 'float':
      return (d as number) === 0 ? 0 : (d as number) !== (d as number) ? 'NaN' : (d as number); // −0 → 0; NaN → 'NaN' so === works
    case 'oid':
    case 'date':
    case 'timestamp':
    case 'timestamptz':
      return d as number;
    case 'numeric':
      return (d as Decimal).key();
    case 'string':
      return t.oid === Oid.bpchar ? rtrim(d as string) : (d as string);
    case 'unknown':
    case 'uuid':
    case 'json':
      return d as string;
    case 'bytes':
      return (d as Buffer).toString('latin1');
    case 'interval': {
      const iv = d as Interval;
      const n = iv.spanNumber();
      return Math.abs(n) <= 9007199254740991 ? n : iv.span().toString();
    }
    case 'jsonb':
      return (d as Jsonb).toString();
    case 'array':
      return arrayKey(d as readonly Datum[], t.arrayElem as SqlType);
    case 'void':
      return 0;
    case 'record':
      throw datatypeMismatch('could not identify a hash function for type record');
    default:
      return assertNever(t.family);
  }
}

function arrayKey(a: readonly Datum[], elem: SqlType): string {
  let out = '[';
  for (const e of a) {
    if (e === null) out += 'n';
    else {
      const k = Array.isArray(e) ? arrayKey(e as readonly Datum[], elem) : String(datumKey(e, elem));
      out += `${k.length}:${k}`;
    }
  }
  return `${out}]`;
}

/** One string key for a row of datums (GROUP BY a, b …): equal exactly when every column is equal. */
export function rowKey(ds: readonly Datum[], ts: readonly SqlType[]): string {
  let out = '';
  for (let i = 0; i < ds.length; i++) {
    const k = datumKey(ds[i] as Datum, ts[i] as SqlType);
    if (k === null) out += 'n';
    else {
      const s = typeof k === 'number' ? String(k) : k;
      out += `${s.length}:${s}`;
    }
  }
  return out;
}

function asFloat(d: Datum, t: SqlType): number {
  if (t.family === 'numeric') return (d as Decimal).toNumber();
  return Number(d as number | bigint);
}

function asDecimal(d: Datum, t: SqlType): Decimal {
  return t.family === 'numeric' ? (d as Decimal) : Decimal.fromInt(d as number | bigint);
}

const NUMERIC_FAMILIES = new Set(['int', 'float', 'numeric']);

/**
 * Compares non-NULL datums of two numeric types (int*, float*, numeric, and
 * oid against int) as PostgreSQL's cross-type operators do; same-family pairs
 * defer to compareDatums. oid vs int casts the int to oid (22003 outside its
 * range); other mixes are 42883, as PostgreSQL finds no operator.
 */
export function compareMixed(a: Datum, ta: SqlType, b: Datum, tb: SqlType): number {
  if (ta.family === tb.family) return compareDatums(a, b, ta);
  if (ta.family === 'oid' || tb.family === 'oid') {
    const other = ta.family === 'oid' ? tb : ta;
    if (other.family !== 'int') throw undefinedOperator('=', formatType(ta), formatType(tb));
    const x = ta.family === 'oid' ? (a as number) : intToOid(a as number | bigint);
    const y = tb.family === 'oid' ? (b as number) : intToOid(b as number | bigint);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (!NUMERIC_FAMILIES.has(ta.family) || !NUMERIC_FAMILIES.has(tb.family)) {
    throw undefinedOperator('=', formatType(ta), formatType(tb));
  }
  if (ta.family === 'float' || tb.family === 'float') return compareFloats(asFloat(a, ta), asFloat(b, tb));
  return asDecimal(a, ta).cmp(asDecimal(b, tb));
}

export type CompareOp = '=' | '<>' | '<' | '<=' | '>' | '>=';

function applyOp(op: CompareOp, c: number): boolean {
  switch (op) {
    case '=':
      return c === 0;
    case '<>':
      return c !== 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    default:
      return c >= 0;
  }
}

/**
 * SQL comparison with NULL semantics: NULL when either side is NULL, else the
 * comparison (across numeric types as compareMixed). Array operands compare
 * element-wise (same element type).
 */
export function evalCompare(op: CompareOp, a: Datum, ta: SqlType, b: Datum, tb: SqlType): boolean | null {
  if (a === null || b === null) return null;
  return applyOp(op, compareMixed(a, ta, b, tb));
}

/** a IS DISTINCT FROM b: like <>, but NULL is a value (NULL vs NULL → false, NULL vs 1 → true). */
export function isDistinctFrom(a: Datum, ta: SqlType, b: Datum, tb: SqlType): boolean {
  if (a === null || b === null) return a !== b;
  return compareMixed(a, ta, b, tb) !== 0;
}

/**
 * `a op ANY (array)` / `a op ALL (array)` (what ORMs send as `id = ANY($1)`):
 * ANY is true if some element satisfies op, else NULL if a or some element
 * is NULL, else false; ALL is false if some element fails, else NULL if a or
 * some element is NULL, else true. An empty array gives false (ANY) / true
 * (ALL) even when a is NULL, as in PostgreSQL. Multi-dimensional arrays are
 * flattened.
 */
export function evalArrayCompare(op: CompareOp, quantifier: 'any' | 'all', a: Datum, ta: SqlType, arr: Datum, tarr: SqlType): boolean | null {
  if (arr === null) return null;
  const elem = tarr.arrayElem as SqlType;
  let sawNull = false;
  const visit = (xs: readonly Datum[]): boolean | undefined => {
    for (const x of xs) {
      if (Array.isArray(x)) {
        const r = visit(x as readonly Datum[]);
        if (r !== undefined) return r;
        continue;
      }
      if (x === null || a === null) {
        sawNull = true;
        continue;
      }
      const ok = applyOp(op, compareMixed(a, ta, x, elem));
      if (quantifier === 'any' && ok) return true;
      if (quantifier === 'all' && !ok) return false;
    }
    return undefined;
  };
  const r = visit(arr as readonly Datum[]);
  if (r !== undefined) return r;
  return sawNull ? null : quantifier === 'all';
}

/** Three-valued AND / OR / NOT (SQL's Kleene logic over boolean | null). */
export function and3(a: boolean | null, b: boolean | null): boolean | null {
  if (a === false || b === false) return false;
  return a === null || b === null ? null : true;
}

export function or3(a: boolean | null, b: boolean | null): boolean | null {
  if (a === true || b === true) return true;
  return a === null || b === null ? null : false;
}

export function not3(a: boolean | null): boolean | null {
  return a === null ? null : !a;
}
