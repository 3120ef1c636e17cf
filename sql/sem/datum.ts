/**
 * sql/sem/datum.ts — the executor's value representation and its wire I/O.
 *
 * A Datum is held according to its static SqlType's family (the executor
 * always knows the type of every expression, so the JS value need not carry
 * it):
 *     bool          boolean
 *     int2, int4    number            int8   bigint
 *     float4/8      number            numeric Decimal (sql/types/decimal.ts)
 *     string family string (varchar/char/text/name)
 *     bytes         Buffer
 *     date          number: days since 1970-01-01
 *     timestamp(tz) number: microseconds since 1970-01-01 00:00 UTC
 *     uuid          string (canonical lower-case)
 *     jsonb, json   string (the normalised JSON text)
 *     NULL          null (any type)
 *
 * NB: this is the SQL core's stopgap for the value codecs sql/types is still
 * writing (its datum/text/binary modules had not landed when the executor
 * was built); it covers the types of issue 6 except interval. When sql/types'
 * codecs land, this file should become a thin adapter over them.
 *
 * Text output follows PostgreSQL 15 (DateStyle ISO, TimeZone UTC,
 * extra_float_digits 1); binary follows the *_send/*_recv functions.
 */
import { Decimal } from '../types/decimal.js';
import { Oid, T, formatType, stringLength, numericPrecisionScale, type SqlType } from '../types/type.js';
import { datatypeMismatch, invalidTextRepresentation, outOfRange, stringTooLong, cannotCoerce } from '../types/type-error.js';
import { SqlError } from '../parser/sql-error.js';

export type Datum = null | boolean | number | bigint | string | Buffer | Decimal;

const PG_EPOCH_DAYS = 10957; // 2000-01-01 − 1970-01-01
const PG_EPOCH_MICROS = 946684800000000;
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

// ---- text output -------------------------------------------------------------------

function pad(n: number, w: number): string {
  return String(n).padStart(w, '0');
}

export function formatFloat(v: number, t: SqlType): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  if (Object.is(v, -0)) return '-0';
  let s = t.oid === Oid.float4 ? String(Math.fround(v) === v ? shortestFloat4(v) : v) : String(v);
  const e = s.indexOf('e');
  if (e >= 0) {
    const mant = s.slice(0, e);
    let exp = s.slice(e + 1);
    const sign = exp[0] === '-' ? '-' : '+';
    exp = exp.replace(/^[+-]/, '');
    s = `${mant}e${sign}${exp.padStart(2, '0')}`;
  } else if (Math.abs(v) >= 1e15 && Number.isInteger(v)) {
    // PostgreSQL switches to exponent form beyond 15 digits (shortest-exact %g).
    const [m, x] = v.toExponential().split('e') as [string, string];
    const sign = x[0] === '-' ? '-' : '+';
    s = `${m}e${sign}${x.replace(/^[+-]/, '').padStart(2, '0')}`;
  }
  return s;
}

function shortestFloat4(v: number): string {
  for (let p = 1; p <= 9; p++) {
    const s = v.toPrecision(p);
    if (Math.fround(Number(s)) === v) return String(Number(s));
  }
  return String(v);
}

export function formatDate(days: number): string {
  const d = new Date(days * 86400000);
  const y = d.getUTCFullYear();
  const ys = y <= 0 ? `${pad(1 - y, 4)}` : pad(y, 4);
  return `${ys}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}${y <= 0 ? ' BC' : ''}`;
}

export function formatTimestamp(us: number, tz: boolean): string {
  const ms = Math.floor(us / 1000);
  const d = new Date(ms);
  const micros = ((us % 1000000) + 1000000) % 1000000;
  let s = `${formatDate(Math.floor(ms / 86400000))} ${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
  if (micros !== 0) s += '.' + pad(micros, 6).replace(/0+$/, '');
  return tz ? s + '+00' : s;
}

/** PostgreSQL's text output of a non-null datum of type t. */
export function datumToText(d: Exclude<Datum, null>, t: SqlType): string {
  switch (t.family) {
    case 'bool':
      return d ? 't' : 'f';
    case 'int':
      return String(d);
    case 'float':
      return formatFloat(d as number, t);
    case 'numeric':
      return (d as Decimal).toString();
    case 'bytes':
      return '\\x' + (d as Buffer).toString('hex');
    case 'date':
      return formatDate(d as number);
    case 'timestamp':
      return formatTimestamp(d as number, false);
    case 'timestamptz':
      return formatTimestamp(d as number, true);
    default:
      return String(d);
  }
}

/** Binary (send) form of a non-null datum. */
export function datumToBinary(d: Exclude<Datum, null>, t: SqlType): Buffer {
  switch (t.family) {
    case 'bool':
      return Buffer.from([d ? 1 : 0]);
    case 'int': {
      if (t.oid === Oid.int2) {
        const b = Buffer.allocUnsafe(2);
        b.writeInt16BE(d as number);
        return b;
      }
      if (t.oid === Oid.int4) {
        const b = Buffer.allocUnsafe(4);
        b.writeInt32BE(d as number);
        return b;
      }
      const b = Buffer.allocUnsafe(8);
      b.writeBigInt64BE(BigInt(d as bigint));
      return b;
    }
    case 'float': {
      if (t.oid === Oid.float4) {
        const b = Buffer.allocUnsafe(4);
        b.writeFloatBE(d as number);
        return b;
      }
      const b = Buffer.allocUnsafe(8);
      b.writeDoubleBE(d as number);
      return b;
    }
    case 'numeric': {
      const nb = (d as Decimal).toBinary();
      const b = Buffer.allocUnsafe(8 + 2 * nb.digits.length);
      b.writeInt16BE(nb.digits.length, 0);
      b.writeInt16BE(nb.weight, 2);
      b.writeUInt16BE(nb.sign, 4);
      b.writeInt16BE(nb.dscale, 6);
      nb.digits.forEach((x, i) => b.writeInt16BE(x, 8 + 2 * i));
      return b;
    }
    case 'bytes':
      return d as Buffer;
    case 'date': {
      const b = Buffer.allocUnsafe(4);
      b.writeInt32BE((d as number) - PG_EPOCH_DAYS);
      return b;
    }
    case 'timestamp':
    case 'timestamptz': {
      const b = Buffer.allocUnsafe(8);
      b.writeBigInt64BE(BigInt((d as number) - PG_EPOCH_MICROS));
      return b;
    }
    case 'uuid':
      return Buffer.from((d as string).replace(/-/g, ''), 'hex');
    case 'jsonb':
      return Buffer.concat([Buffer.from([1]), Buffer.from(d as string, 'utf8')]);
    default:
      return Buffer.from(String(d), 'utf8');
  }
}

// ---- input -------------------------------------------------------------------------

const INT_RE = /^\s*[+-]?\d+\s*$/;
const UUID_RE = /^\{?([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})\}?$/i;
const TS_RE = /^\s*(\d{4,})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6})\d*)?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?\s*$/i;

function parseTimestamp(s: string, t: SqlType, tz: boolean): number {
  const lower = s.trim().toLowerCase();
  if (lower === 'epoch') return 0;
  const m = TS_RE.exec(s);
  if (m === null) throw new SqlError('sql.invalid_datetime_format', '22007', `invalid input syntax for type ${formatType(t)}: "${s}"`);
  const [, y, mo, d, h, mi, sec, frac, zone] = m;
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h ?? 0), Number(mi ?? 0), Number(sec ?? 0));
  if (Number(mo) < 1 || Number(mo) > 12 || Number(d) < 1 || Number(d) > 31 || Number(h ?? 0) > 24 || Number(mi ?? 0) > 59 || Number(sec ?? 0) > 60) {
    throw new SqlError('sql.datetime_field_overflow', '22008', `date/time field value out of range: "${s}"`);
  }
  let us = ms * 1000 + (frac !== undefined ? Number(frac.padEnd(6, '0')) : 0);
  if (tz && zone !== undefined && zone.toUpperCase() !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const off = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0');
    us -= sign * off * 60_000_000;
  }
  return us;
}

/** Parses PostgreSQL text input for type t (22P02 and friends on bad input). */
export function datumFromText(s: string, t: SqlType): Exclude<Datum, null> {
  switch (t.family) {
    case 'bool': {
      const v = s.trim().toLowerCase();
      if (['t', 'true', 'yes', 'y', 'on', '1'].includes(v)) return true;
      if (['f', 'false', 'no', 'n', 'off', '0'].includes(v)) return false;
      throw invalidTextRepresentation('boolean', s);
    }
    case 'int': {
      if (!INT_RE.test(s)) throw invalidTextRepresentation(formatType(t), s);
      return checkIntText(t, BigInt(s.trim()));
    }
    case 'float': {
      const v = s.trim().toLowerCase();
      let n: number;
      if (v === 'nan') n = NaN;
      else if (v === 'infinity' || v === '+infinity' || v === 'inf') n = Infinity;
      else if (v === '-infinity' || v === '-inf') n = -Infinity;
      else if (v === '' || !/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(v)) throw invalidTextRepresentation(formatType(t), s);
      else n = Number(v);
      if (!Number.isFinite(n) && /\d/.test(v)) throw outOfRange(`"${s}" is out of range for type ${formatType(t)}`);
      return t.oid === Oid.float4 ? Math.fround(n) : n;
    }
    case 'numeric':
      return Decimal.parseOrThrow(s);
    case 'string':
      return s;
    case 'bytes': {
      if (s.startsWith('\\x')) {
        const hex = s.slice(2);
        if (!/^([0-9a-fA-F]{2})*$/.test(hex)) throw invalidTextRepresentation('bytea', s);
        return Buffer.from(hex, 'hex');
      }
      return Buffer.from(s, 'utf8');
    }
    case 'date': {
      const us = parseTimestamp(s, t, false);
      return Math.floor(us / 86_400_000_000);
    }
    case 'timestamp':
      return parseTimestamp(s, t, false);
    case 'timestamptz':
      return parseTimestamp(s, t, true);
    case 'uuid': {
      const m = UUID_RE.exec(s.trim());
      if (m === null) throw invalidTextRepresentation('uuid', s);
      return `${m[1]}-${m[2]}-${m[3]}-${m[4]}-${m[5]}`.toLowerCase();
    }
    case 'json':
    case 'jsonb': {
      try {
        return JSON.stringify(JSON.parse(s));
      } catch {
        throw invalidTextRepresentation('json', s);
      }
    }
    default:
      throw cannotCoerce('text', formatType(t));
  }
}

function checkIntText(t: SqlType, v: bigint): number | bigint {
  if (t.oid === Oid.int8) return checkInt(t, v);
  return checkInt(t, v);
}

/** Parses a binary-format parameter (recv). */
export function datumFromBinary(b: Uint8Array, t: SqlType): Exclude<Datum, null> {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const need = (n: number): void => {
    if (buf.length !== n) throw new SqlError('sql.invalid_binary_representation', '22P03', `incorrect binary data format in bind parameter`);
  };
  switch (t.family) {
    case 'bool':
      need(1);
      return buf[0] !== 0;
    case 'int':
      if (t.oid === Oid.int2) {
        need(2);
        return buf.readInt16BE(0);
      }
      if (t.oid === Oid.int4) {
        need(4);
        return buf.readInt32BE(0);
      }
      need(8);
      return buf.readBigInt64BE(0);
    case 'float':
      if (t.oid === Oid.float4) {
        need(4);
        return buf.readFloatBE(0);
      }
      need(8);
      return buf.readDoubleBE(0);
    case 'numeric': {
      const n = buf.readInt16BE(0);
      const digits: number[] = [];
      for (let i = 0; i < n; i++) digits.push(buf.readInt16BE(8 + 2 * i));
      return Decimal.fromBinary({ weight: buf.readInt16BE(2), sign: buf.readUInt16BE(4), dscale: buf.readInt16BE(6), digits });
    }
    case 'bytes':
      return Buffer.from(buf);
    case 'date':
      need(4);
      return buf.readInt32BE(0) + PG_EPOCH_DAYS;
    case 'timestamp':
    case 'timestamptz':
      need(8);
      return Number(buf.readBigInt64BE(0)) + PG_EPOCH_MICROS;
    case 'uuid': {
      need(16);
      const h = buf.toString('hex');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }
    case 'jsonb':
      return datumFromText(buf.subarray(1).toString('utf8'), t);
    default:
      return datumFromText(buf.toString('utf8'), t);
  }
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
