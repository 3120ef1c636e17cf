/**
 * sql/sem/datum.ts — the executor's value representation and its wire I/O.
 *
 * The Datum representation and the text/binary wire formats are sql/types'
 * (datum.ts, text-format.ts, binary-format.ts); this file adapts them for
 * the executor and adds what the executor needs on top until sql/types
 * provides it: integer range checks, assignment casts (varchar(n) 22001,
 * numeric(p,s)), explicit casts between families, and a total order.
 */
import { Decimal } from '../types/decimal.js';
import type { Datum } from '../types/datum.js';
import { Oid, T, formatType, stringLength, numericPrecisionScale, type SqlType } from '../types/type.js';
import { datatypeMismatch, outOfRange, stringTooLong, cannotCoerce } from '../types/type-error.js';
import { encodeText, decodeText } from '../types/text-format.js';
import { encodeBinary, decodeBinary } from '../types/binary-format.js';

export type { Datum };
const INT8_MIN = -(2n ** 63n);
const INT8_MAX = 2n ** 63n - 1n;

export function isIntType(t: SqlType): boolean {
  return t.family === 'int';
}

/** Range-checks an integer result for the int type (22003). */
export function checkInt(t: SqlType, v: bigint | number): number | bigint {
  switch (t.oid) {
    case Oid.int2:
      if (typeof v === 'bigint') v = Number(v);
      if (v < -32768 || v > 32767) throw outOfRange('smallint out of range');
      return v;
    case Oid.int4:
      if (typeof v === 'bigint') v = Number(v);
      if (v < -2147483648 || v > 2147483647) throw outOfRange('integer out of range');
      return v;
    default: {
      const b = typeof v === 'bigint' ? v : BigInt(v);
      if (b < INT8_MIN || b > INT8_MAX) throw outOfRange('bigint out of range');
      return b;
    }
  }
}

// ---- wire formats: sql/types ------------------------------------------------------

/** PostgreSQL's text output of a non-null datum of type t (TimeZone UTC). */
export function datumToText(d: Exclude<Datum, null>, t: SqlType): string {
  return encodeText(d, t);
}
export function datumToBinary(d: Exclude<Datum, null>, t: SqlType): Buffer {
  return encodeBinary(d, t);
}
export function datumFromText(s: string, t: SqlType): Exclude<Datum, null> {
  const d = decodeText(s, t);
  if (d === null) throw cannotCoerce('text', formatType(t));
  return d;
}
export function datumFromBinary(b: Uint8Array, t: SqlType): Exclude<Datum, null> {
  const d = decodeBinary(Buffer.from(b.buffer, b.byteOffset, b.byteLength), t);
  if (d === null) throw cannotCoerce('bytea', formatType(t));
  return d;
}

// ---- comparison --------------------------------------------------------------------

/** Total order of two non-null datums of the same family (NaN largest for floats, as PostgreSQL sorts). */
export function compareDatums(a: Exclude<Datum, null>, b: Exclude<Datum, null>): number {
  if (typeof a === 'number' && typeof b === 'number') {
    if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : 1;
    if (Number.isNaN(b)) return -1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (typeof a === 'bigint' || typeof b === 'bigint') {
    if (typeof a === 'object' || typeof b === 'object') return toDecimal(a).cmp(toDecimal(b));
    const x = typeof a === 'bigint' ? a : BigInt(a as number);
    const y = typeof b === 'bigint' ? b : BigInt(b as number);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a instanceof Decimal || b instanceof Decimal) return toDecimal(a).cmp(toDecimal(b));
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return Buffer.compare(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  throw datatypeMismatch('cannot compare values of different types');
}

export function toDecimal(v: Exclude<Datum, null>): Decimal {
  if (v instanceof Decimal) return v;
  if (typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) return Decimal.fromInt(v);
  if (typeof v === 'number') return Decimal.fromFloat(v);
  throw datatypeMismatch('not a number');
}

// ---- assignment ----------------------------------------------------------------------

/**
 * Converts a value of type `from` for storage in a column of type `to`
 * (assignment cast): ints range-checked, numeric(p,s) rounded, varchar(n)
 * checked (22001), char(n) padded.
 */
export function assignCast(d: Datum, from: SqlType, to: SqlType): Datum {
  if (d === null) return null;
  const v = castDatum(d, from, to);
  if (to.family === 'string') {
    const n = stringLength(to);
    if (n !== undefined) {
      let s = v as string;
      if ([...s].length > n) {
        const trimmed = s.replace(/ +$/, '');
        if ([...trimmed].length > n) throw stringTooLong(formatType(to));
        s = [...s].slice(0, n).join('');
      }
      if (to.oid === Oid.bpchar) s = s.padEnd(n, ' ');
      return s;
    }
  }
  if (to.family === 'numeric') {
    const ps = numericPrecisionScale(to);
    if (ps !== undefined) return (v as Decimal).applyTypmod(ps.precision, ps.scale);
  }
  return v;
}

/** An explicit or implicit cast between families (22P02/22003 on bad values, 42846 if no cast). */
export function castDatum(d: Exclude<Datum, null>, from: SqlType, to: SqlType): Exclude<Datum, null> {
  if (from.family === to.family && from.oid === to.oid) return d;
  const tf = to.family;
  if (from.family === 'unknown' || from.family === 'string') {
    if (tf === 'string') return d as string;
    return datumFromText(d as string, to);
  }
  if (tf === 'string') return datumToText(d, from);
  switch (from.family) {
    case 'int':
      if (tf === 'int') return checkInt(to, d as number | bigint);
      if (tf === 'float') return to.oid === Oid.float4 ? Math.fround(Number(d)) : Number(d);
      if (tf === 'numeric') return Decimal.fromInt(d as number | bigint);
      if (tf === 'bool') return BigInt(d as number) !== 0n;
      break;
    case 'float': {
      const n = d as number;
      if (tf === 'float') return to.oid === Oid.float4 ? Math.fround(n) : n;
      if (tf === 'int') {
        if (!Number.isFinite(n)) throw outOfRange(`${formatType(to)} out of range`);
        return checkInt(to, BigInt(roundHalfEven(n)));
      }
      if (tf === 'numeric') return Decimal.fromFloat(n, from.oid === Oid.float4 ? 6 : 15);
      break;
    }
    case 'numeric': {
      const x = d as Decimal;
      if (tf === 'numeric') return x;
      if (tf === 'float') return x.toNumber();
      if (tf === 'int') {
        const r = x.round(0).toBigInt();
        if (r === undefined) throw outOfRange(`${formatType(to)} out of range`);
        return checkInt(to, r);
      }
      break;
    }
    case 'bool':
      if (tf === 'int') return d ? 1 : 0;
      break;
    case 'timestamp':
    case 'timestamptz':
      if (tf === 'timestamp' || tf === 'timestamptz') return d;
      if (tf === 'date') return Math.floor((d as number) / 86_400_000_000);
      break;
    case 'date':
      if (tf === 'timestamp' || tf === 'timestamptz') return (d as number) * 86_400_000_000;
      break;
    case 'json':
    case 'jsonb':
      if (tf === 'json' || tf === 'jsonb') return d;
      break;
    default:
      break;
  }
  throw cannotCoerce(formatType(from), formatType(to));
}

function roundHalfEven(n: number): number {
  const r = Math.round(n);
  return Math.abs(n % 1) === 0.5 ? 2 * Math.round(n / 2) : r;
}

export { T };
