/**
 * Casts between SQL types, as PostgreSQL's pg_cast defines them.
 *
 * A cast has a context — the weakest place it may be applied:
 *   implicit     anywhere (int4 → int8, int → numeric, varchar → text, date → timestamp)
 *   assignment   INSERT/UPDATE targets and explicit casts (int8 → int4, float8 → int4,
 *                numeric → int, anything → text via its output function)
 *   explicit     only CAST(x AS t) / x::t (text → int via the input function,
 *                int4 ↔ bool, jsonb → numeric)
 * castContext() answers which; castDatum() performs a cast in a given mode
 * and raises 42846 when no such cast exists, 42804 when it exists only in a
 * stronger context.
 *
 * Value rules (PostgreSQL 15):
 *   float → int           rounds half to even (rint); 22003 out of range
 *   numeric → int         rounds half away from zero; NaN/∞ → 0A000
 *   float → numeric       via 15 (float4: 6) significant digits, as float8_numeric
 *   float8 → float4       22003 "value out of range: overflow/underflow"
 *   numeric(p, s)         rounds to s, 22003 "numeric field overflow" past p
 *   varchar(n)            explicit: truncate to n characters; assignment: 22001
 *                         unless only spaces are cut
 *   char(n)               pads with spaces to n; over-long as varchar(n)
 *   char(n) → text/varchar  trailing spaces removed
 *   timestamp(p), interval(p)  rounded to p fractional digits
 *   unknown (an untyped literal) → T   T's input function, then T's typmod
 *
 * Ownership: pure functions; the planner chooses the mode.
 */
import { SqlError } from '../parser/sql-error.js';
import { localToUtc, roundMicros, USECS_PER_DAY, USECS_PER_SEC, timestampInRange } from './datetime.js';
import { Decimal } from './decimal.js';
import { Jsonb, type Datum, type JsonValue } from './datum.js';
import { Interval, roundInterval } from './interval.js';
import { cannotCoerce, datatypeMismatch, datetimeOverflow, outOfRange, stringTooLong } from './type-error.js';
import { DEFAULT_TEXT_CONTEXT, charToText, decodeText, encodeText, firstByteChar, truncateName, type TextFormatContext } from './text-format.js';
import { Oid, T, formatType, numericPrecisionScale, stringLength, timePrecision, type SqlType } from './type.js';

export type CastContext = 'implicit' | 'assignment' | 'explicit';

const RANK: Record<CastContext, number> = { implicit: 0, assignment: 1, explicit: 2 };

const INT_NAMES: Record<number, string> = { [Oid.int2]: 'smallint', [Oid.int4]: 'integer', [Oid.int8]: 'bigint' };
const INT_BITS: Record<number, number> = { [Oid.int2]: 16, [Oid.int4]: 32, [Oid.int8]: 64 };

function isTextual(t: SqlType): boolean {
  return t.family === 'string';
}

/**
 * The weakest context in which a value of `from` may be cast to `to`, or
 * undefined when PostgreSQL has no such cast.
 */
export function castContext(from: SqlType, to: SqlType): CastContext | undefined {
  if (from.oid === to.oid) return 'implicit'; // typmod coercion
  if (from.family === 'unknown') return 'implicit';
  const f = from.family;
  const g = to.family;
  if (f === 'int' && g === 'int') return INT_BITS[from.oid]! < INT_BITS[to.oid]! ? 'implicit' : 'assignment';
  if (f === 'int' && (g === 'float' || g === 'numeric')) return 'implicit';
  if (f === 'float' && g === 'float') return from.oid === Oid.float4 ? 'implicit' : 'assignment';
  if (f === 'float' && (g === 'int' || g === 'numeric')) return 'assignment';
  if (f === 'numeric' && g === 'float') return 'implicit';
  if (f === 'numeric' && g === 'int') return 'assignment';
  if ((f === 'int' && g === 'bool' && from.oid === Oid.int4) || (f === 'bool' && g === 'int' && to.oid === Oid.int4)) return 'explicit';
  if (f === 'int' && g === 'oid') return from.oid === Oid.int2 ? undefined : 'implicit';
  if (f === 'oid' && g === 'int') return to.oid === Oid.int2 ? undefined : to.oid === Oid.int8 ? 'implicit' : 'assignment';
  if (f === 'oid' && g === 'oid') return 'implicit';
  if (isTextual(from) && isTextual(to)) {
    if (to.oid === Oid.char || from.oid === Oid.char) return 'assignment';
    return 'implicit';
  }
  if (f === 'date' && (g === 'timestamp' || g === 'timestamptz')) return 'implicit';
  if (f === 'timestamp' && g === 'timestamptz') return 'implicit';
  if ((f === 'timestamptz' && g === 'timestamp') || ((f === 'timestamp' || f === 'timestamptz') && g === 'date')) return 'assignment';
  if ((f === 'json' && g === 'jsonb') || (f === 'jsonb' && g === 'json')) return 'assignment';
  if (f === 'jsonb' && (g === 'bool' || g === 'numeric' || g === 'int' || g === 'float')) return 'explicit';
  if (g === 'array' && f === 'array') {
    const c = castContext(from.arrayElem as SqlType, to.arrayElem as SqlType);
    return c;
  }
  if (isTextual(to) && f !== 'record') return 'assignment'; // I/O conversion to a string type
  if (isTextual(from) && g !== 'record' && g !== 'void') return 'explicit'; // I/O conversion from a string type
  return undefined;
}

/**
 * Casts a datum from `from` to `to` in `mode` (which context the cast is being
 * applied in). NULL casts to NULL. Throws 42846 when there is no cast, 42804
 * when the cast needs a stronger context, and the value errors listed above.
 */
export function castDatum(d: Datum, from: SqlType, to: SqlType, mode: CastContext = 'explicit', ctx: TextFormatContext = DEFAULT_TEXT_CONTEXT): Datum {
  if (d === null) return null;
  const c = castContext(from, to);
  if (c === undefined) throw cannotCoerce(formatType(from), formatType(to));
  if (RANK[c] > RANK[mode]) {
    throw datatypeMismatch(`cannot cast type ${formatType(from)} to ${formatType(to)} in ${mode} context`);
  }
  return coerceToTypmod(convert(d, from, to, ctx), to, mode === 'explicit');
}

function convert(d: Datum, from: SqlType, to: SqlType, ctx: TextFormatContext): Datum {
  if (from.oid === to.oid) return d; // only the typmod differs: coerceToTypmod's job
  const f = from.family;
  const g = to.family;
  if (f === 'unknown') return decodeText(d as string, to, ctx);
  if (isTextual(from) && !isTextual(to)) return decodeText(from.oid === Oid.bpchar ? (d as string).replace(/ +$/, '') : (d as string), to, ctx);
  if (g === 'array' && f === 'array') {
    const ef = from.arrayElem as SqlType;
    const et = to.arrayElem as SqlType;
    const walk = (a: readonly Datum[]): Datum[] => a.map((e) => (Array.isArray(e) ? walk(e as readonly Datum[]) : e === null ? null : coerceToTypmod(convert(e, ef, et, ctx), et, true)));
    return walk(d as readonly Datum[]);
  }
  switch (g) {
    case 'int':
      return toInt(d, from, to);
    case 'float':
      return toFloat(d, from, to);
    case 'numeric':
      return toNumeric(d, from);
    case 'bool':
      if (f === 'int') return (d as number) !== 0;
      if (f === 'jsonb') return jsonbScalar(d as Jsonb, 'boolean', to) as boolean;
      break;
    case 'oid':
      if (f === 'int') return intToOid(d as number | bigint);
      if (f === 'oid') return d;
      break;
    case 'string':
      if (f === 'string') {
        const s = from.oid === Oid.bpchar ? (d as string).replace(/ +$/, '') : (d as string);
        if (to.oid === Oid.name) return truncateName(s);
        if (to.oid === Oid.char) return firstByteChar(s);
        if (from.oid === Oid.char) return charToText(s);
        return s;
      }
      if (f === 'bool') return d ? 'true' : 'false'; // booltext, unlike boolout's t/f
      return encodeText(d, from, ctx);
    case 'date':
      if (f === 'timestamp') return toDate(d as number);
      if (f === 'timestamptz') {
        const t = d as number;
        if (!Number.isFinite(t)) return t;
        return toDate(t + (ctx.timeZone.fixedOffset ?? ctx.timeZone.offsetAt(t)) * USECS_PER_SEC);
      }
      break;
    case 'timestamp':
      if (f === 'date') return dateToMicros(d as number);
      if (f === 'timestamptz') {
        const t = d as number;
        if (!Number.isFinite(t)) return t;
        return t + (ctx.timeZone.fixedOffset ?? ctx.timeZone.offsetAt(t)) * USECS_PER_SEC;
      }
      break;
    case 'timestamptz':
      if (f === 'date' || f === 'timestamp') {
        const local = f === 'date' ? dateToMicros(d as number) : (d as number);
        if (!Number.isFinite(local)) return local;
        const t = localToUtc(local, ctx.timeZone);
        if (!timestampInRange(t)) throw datetimeOverflow('timestamp out of range');
        return t;
      }
      break;
    case 'json':
      if (f === 'jsonb') return (d as Jsonb).toString();
      break;
    case 'jsonb':
      if (f === 'json') return Jsonb.parse(d as string);
      break;
    default:
      break;
  }
  throw cannotCoerce(formatType(from), formatType(to));
}

/** int4 → oid reinterprets negatives as unsigned; int8 → oid must be 0 … 2^32−1. */
export function intToOid(v: number | bigint): number {
  if (typeof v === 'bigint') {
    if (v < 0n || v > 4294967295n) throw outOfRange('OID out of range');
    return Number(v);
  }
  return v < 0 ? v + 4294967296 : v;
}

function dateToMicros(days: number): number {
  if (!Number.isFinite(days)) return days;
  const t = days * USECS_PER_DAY;
  if (!timestampInRange(t)) throw datetimeOverflow('date out of range for timestamp');
  return t;
}

function toDate(micros: number): number {
  if (!Number.isFinite(micros)) return micros;
  return Math.floor(micros / USECS_PER_DAY);
}

const INT8_MIN = -(2n ** 63n);
const INT8_MAX = 2n ** 63n - 1n;

/** Range-checks an integer for int2/int4/int8 (22003 "integer out of range"); returns the datum form (bigint for int8). */
export function checkIntRange(v: number | bigint, t: SqlType): number | bigint {
  if (t.oid === Oid.int8) {
    const b = typeof v === 'bigint' ? v : BigInt(v);
    if (b < INT8_MIN || b > INT8_MAX) throw outOfRange('bigint out of range');
    return b;
  }
  const n = typeof v === 'bigint' ? (v > 2n ** 40n ? Infinity : v < -(2n ** 40n) ? -Infinity : Number(v)) : v;
  const lim = t.oid === Oid.int2 ? 32768 : 2147483648;
  if (!(n >= -lim && n < lim)) throw outOfRange(`${INT_NAMES[t.oid] ?? 'integer'} out of range`);
  return n === 0 ? 0 : n;
}

/** rint: round half to even. */
function rint(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function toInt(d: Datum, from: SqlType, to: SqlType): number | bigint {
  switch (from.family) {
    case 'int':
    case 'oid':
      return checkIntRange(d as number | bigint, to);
    case 'bool':
      return d ? 1 : 0;
    case 'float': {
      const v = d as number;
      if (!Number.isFinite(v)) throw outOfRange(`${INT_NAMES[to.oid]} out of range`);
      const r = rint(v);
      if (to.oid === Oid.int8) {
        if (r < -9223372036854775808 || r >= 9223372036854775808) throw outOfRange('bigint out of range');
        return BigInt(r);
      }
      return checkIntRange(r, to);
    }
    case 'numeric':
      return checkIntRange(numericToBigInt(d as Decimal), to);
    case 'jsonb':
      return checkIntRange(numericToBigInt(jsonbScalar(d as Jsonb, 'number', to) as Decimal), to);
    default:
      throw cannotCoerce(formatType(from), formatType(to));
  }
}

function numericToBigInt(d: Decimal): bigint {
  const b = d.toBigInt();
  if (b === undefined) {
    throw new SqlError('sql.unimplemented', '0A000', d.isNaN() ? 'cannot convert NaN to integer' : 'cannot convert infinity to integer');
  }
  return b;
}

/** float8 → float4 with PostgreSQL's overflow/underflow checks. */
export function toFloat4(v: number): number {
  const r = Math.fround(v);
  if (!Number.isFinite(r) && Number.isFinite(v)) throw outOfRange('value out of range: overflow');
  if (r === 0 && v !== 0) throw outOfRange('value out of range: underflow');
  return r;
}

function toFloat(d: Datum, from: SqlType, to: SqlType): number {
  let v: number;
  switch (from.family) {
    case 'int':
      v = Number(d as number | bigint);
      break;
    case 'float':
      v = d as number;
      break;
    case 'numeric': {
      const x = d as Decimal;
      v = x.toNumber();
      if (x.isFinite() && (!Number.isFinite(v) || (v === 0 && !x.isZero()))) {
        throw outOfRange(`"${x.toString()}" is out of range for type ${to.oid === Oid.float4 ? 'real' : 'double precision'}`);
      }
      break;
    }
    case 'jsonb':
      v = (jsonbScalar(d as Jsonb, 'number', to) as Decimal).toNumber();
      break;
    default:
      throw cannotCoerce(formatType(from), formatType(to));
  }
  return to.oid === Oid.float4 ? toFloat4(v) : v;
}

function toNumeric(d: Datum, from: SqlType): Decimal {
  switch (from.family) {
    case 'int':
      return Decimal.fromInt(d as number | bigint);
    case 'float':
      return Decimal.fromFloat(d as number, from.oid === Oid.float4 ? 6 : 15);
    case 'numeric':
      return d as Decimal;
    case 'jsonb':
      return jsonbScalar(d as Jsonb, 'number', T.numeric) as Decimal;
    default:
      throw cannotCoerce(formatType(from), 'numeric');
  }
}

function jsonbKind(v: JsonValue): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'string') return 'string';
  if (v instanceof Decimal) return 'number';
  return Array.isArray(v) ? 'array' : 'object';
}

function jsonbScalar(j: Jsonb, want: 'number' | 'boolean', to: SqlType): JsonValue {
  const kind = jsonbKind(j.value);
  if (kind !== want) throw new SqlError('sql.invalid_parameter_value', '22023', `cannot cast jsonb ${kind} to type ${formatType(to)}`);
  return j.value;
}

/** Number of characters (code points) in s. */
function charLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) n--;
  }
  return n;
}

/** The first n characters (code points) of s. */
function charPrefix(s: string, n: number): string {
  if (s.length === charLength(s)) return s.slice(0, n);
  let out = '';
  let k = 0;
  for (const ch of s) {
    if (k++ >= n) break;
    out += ch;
  }
  return out;
}

/**
 * Applies a type's modifier to a datum already of that type: varchar(n)/char(n)
 * length rules, numeric(p, s), timestamp(p)/interval(p). `explicit` selects the
 * explicit-cast behaviour (truncate) over assignment (22001).
 */
export function coerceToTypmod(d: Datum, t: SqlType, explicit: boolean): Datum {
  if (d === null) return d;
  if (t.typmod < 0) {
    return d;
  }
  switch (t.family) {
    case 'string': {
      const n = stringLength(t);
      if (n === undefined) return d;
      const s = d as string;
      const len = charLength(s);
      if (len > n) {
        const head = charPrefix(s, n);
        if (!explicit && !/^ *$/.test(s.slice(head.length))) throw stringTooLong(formatType(t));
        return head;
      }
      return t.oid === Oid.bpchar && len < n ? s + ' '.repeat(n - len) : s;
    }
    case 'numeric': {
      const ps = numericPrecisionScale(t);
      return ps === undefined ? d : (d as Decimal).applyTypmod(ps.precision, ps.scale);
    }
    case 'timestamp':
    case 'timestamptz': {
      const p = timePrecision(t);
      return p === undefined ? d : roundMicros(d as number, p);
    }
    case 'interval': {
      const p = timePrecision(t);
      return p === undefined ? d : roundInterval(d as Interval, p);
    }
    case 'array': {
      const et = t.arrayElem as SqlType;
      const walk = (a: readonly Datum[]): Datum[] => a.map((e) => (Array.isArray(e) ? walk(e as readonly Datum[]) : coerceToTypmod(e, et, explicit)));
      return walk(d as readonly Datum[]);
    }
    default:
      return d;
  }
}

/** The type PostgreSQL gives an integer or decimal literal: int4, int8 by magnitude, else numeric. */
export function numericLiteralType(text: string): SqlType {
  if (/^\d+$/.test(text)) {
    if (text.length <= 10 && Number(text) <= 2147483647) return T.int4;
    if (text.length <= 19 && BigInt(text) <= INT8_MAX) return T.int8;
  }
  return T.numeric;
}

/**
 * Resolves an untyped literal: a numeric literal gets numericLiteralType();
 * a string literal takes `target` when the context supplies one (its input
 * function and typmod, as for INSERT values and `col = '…'`), else text
 * (PostgreSQL resolves a lone unknown to text).
 */
export function resolveConstType(literal: { readonly kind: 'number' | 'string'; readonly text: string }, target?: SqlType, ctx: TextFormatContext = DEFAULT_TEXT_CONTEXT): { type: SqlType; datum: Datum } {
  if (literal.kind === 'number') {
    const t = numericLiteralType(literal.text);
    const v: Datum = t === T.int4 ? Number(literal.text) : t === T.int8 ? BigInt(literal.text) : Decimal.parseOrThrow(literal.text);
    if (target === undefined || target.oid === t.oid) return { type: t, datum: v };
    return { type: target, datum: castDatum(v, t, target, 'assignment', ctx) };
  }
  const type = target === undefined || target.family === 'unknown' ? T.text : target;
  return { type, datum: coerceToTypmod(decodeText(literal.text, type, ctx), type, false) };
}
