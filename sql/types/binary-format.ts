/**
 * PostgreSQL's binary wire format (typsend/typrecv) for every Cairn type.
 * Integers are big-endian two's complement throughout.
 *
 *   bool          1 byte, 0 or 1
 *   int2/4/8      2/4/8 bytes;  oid, reg*: uint32
 *   float4/8      IEEE-754 binary32/binary64
 *   numeric       ndigits:int16 weight:int16 sign:uint16 dscale:int16 digit:int16…
 *                 (base 10000; decimal.ts draws it)
 *   text, varchar, bpchar, name, json, unknown      UTF-8 bytes, no terminator
 *   "char"        1 byte
 *   bytea         the bytes
 *   date          int32 days since 2000-01-01; infinity = INT32_MAX, −infinity = INT32_MIN
 *   timestamp(tz) int64 µs since 2000-01-01 UTC; ±infinity = INT64_MAX / INT64_MIN
 *   interval      µs:int64 days:int32 months:int32
 *   uuid          16 bytes
 *   jsonb         version byte 0x01, then the text
 *   array         ndim:int32 hasnull:int32 elemoid:int32 (dim:int32 lbound:int32)×ndim
 *                 then each element: len:int32 (−1 = NULL) bytes…
 *                 (int2vector/oidvector use the same layout)
 *
 * decodeBinary rejects malformed input with 22P03 (invalid_binary_representation),
 * as PostgreSQL's recv functions do ("insufficient data left in message").
 */
import { assert, assertNever } from '../../src/util/assert.js';
import { SqlError } from '../parser/sql-error.js';
import { DATE_MAX_DAYS, DATE_MIN_DAYS, timestampInRange } from './datetime.js';
import { Decimal } from './decimal.js';
import { Jsonb, parseJson, type Datum } from './datum.js';
import { Interval } from './interval.js';
import { utf8Bytes } from './text-format.js';
import { Oid, type SqlType } from './type.js';

const TWO32 = 4294967296;
const INT32_MAX = 2147483647;
const INT32_MIN = -2147483648;

function binaryError(message: string): SqlError {
  return new SqlError('sql.invalid_binary_representation', '22P03', message);
}

/** Writes an integer-valued double as int64 big-endian (exact for every double integer in range). */
function writeInt64Number(buf: Buffer, v: number, off: number): void {
  const hi = Math.floor(v / TWO32);
  buf.writeInt32BE(hi, off);
  buf.writeUInt32BE(v - hi * TWO32, off + 4);
}

function readInt64Number(buf: Buffer, off: number): number {
  return buf.readInt32BE(off) * TWO32 + buf.readUInt32BE(off + 4);
}

function timestampBytes(v: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  if (v === Infinity) b.writeBigInt64BE(0x7fffffffffffffffn);
  else if (v === -Infinity) b.writeBigInt64BE(-0x8000000000000000n);
  else writeInt64Number(b, v, 0);
  return b;
}

/** The binary form of a non-NULL datum of type `t`. */
export function encodeBinary(d: Datum, t: SqlType): Buffer {
  assert(d !== null, 'types: encodeBinary of NULL');
  switch (t.family) {
    case 'bool':
      return Buffer.from([d ? 1 : 0]);
    case 'int': {
      if (t.oid === Oid.int8) {
        const b = Buffer.allocUnsafe(8);
        b.writeBigInt64BE(d as bigint);
        return b;
      }
      if (t.oid === Oid.int2) {
        const b = Buffer.allocUnsafe(2);
        b.writeInt16BE(d as number);
        return b;
      }
      const b = Buffer.allocUnsafe(4);
      b.writeInt32BE(d as number);
      return b;
    }
    case 'oid': {
      const b = Buffer.allocUnsafe(4);
      b.writeUInt32BE(d as number);
      return b;
    }
    case 'void':
      return Buffer.alloc(0);
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
    case 'numeric':
      return encodeNumeric(d as Decimal);
    case 'string':
      return t.oid === Oid.char ? Buffer.from(d as string, 'latin1') : utf8Bytes(d as string);
    case 'unknown':
    case 'json':
      return utf8Bytes(d as string);
    case 'bytes':
      return d as Buffer;
    case 'date': {
      const b = Buffer.allocUnsafe(4);
      const v = d as number;
      b.writeInt32BE(v === Infinity ? INT32_MAX : v === -Infinity ? INT32_MIN : v);
      return b;
    }
    case 'timestamp':
    case 'timestamptz':
      return timestampBytes(d as number);
    case 'interval': {
      const iv = d as Interval;
      const b = Buffer.allocUnsafe(16);
      writeInt64Number(b, iv.micros, 0);
      b.writeInt32BE(iv.days, 8);
      b.writeInt32BE(iv.months, 12);
      return b;
    }
    case 'uuid':
      return Buffer.from((d as string).replace(/-/g, ''), 'hex');
    case 'jsonb': {
      const text = utf8Bytes((d as Jsonb).toString());
      const b = Buffer.allocUnsafe(text.length + 1);
      b[0] = 1;
      text.copy(b, 1);
      return b;
    }
    case 'array':
      return encodeArray(d as readonly Datum[], t.arrayElem as SqlType, t.oid === Oid.int2vector || t.oid === Oid.oidvector);
    case 'record':
      throw new SqlError('sql.unimplemented', '0A000', 'unimplemented: record send');
    default:
      return assertNever(t.family);
  }
}

/** encodeBinary, NULL as null: what a DataRow column holds. */
export function encodeBinaryBytes(d: Datum, t: SqlType): Buffer | null {
  return d === null ? null : encodeBinary(d, t);
}

function encodeNumeric(d: Decimal): Buffer {
  const n = d.toBinary();
  const b = Buffer.allocUnsafe(8 + 2 * n.digits.length);
  b.writeInt16BE(n.digits.length, 0);
  b.writeInt16BE(n.weight, 2);
  b.writeUInt16BE(n.sign, 4);
  b.writeInt16BE(n.dscale, 6);
  for (let i = 0; i < n.digits.length; i++) b.writeInt16BE(n.digits[i] as number, 8 + 2 * i);
  return b;
}

function arrayShape(a: readonly Datum[]): number[] {
  const dims: number[] = [];
  let cur: Datum = a;
  while (Array.isArray(cur)) {
    dims.push(cur.length);
    if (cur.length === 0) break;
    cur = (cur as readonly Datum[])[0] as Datum;
  }
  return dims;
}

/** `vector`: int2vector/oidvector, always one dimension with lower bound 0. */
function encodeArray(a: readonly Datum[], elem: SqlType, vector: boolean): Buffer {
  const dims = vector ? [a.length] : a.length === 0 ? [] : arrayShape(a);
  const parts: Buffer[] = [];
  let hasNull = 0;
  const walk = (x: readonly Datum[], depth: number) => {
    if (x.length !== dims[depth]) {
      throw new SqlError('sql.invalid_text_representation', '2202E', 'multidimensional arrays must have array expressions with matching dimensions');
    }
    for (const e of x) {
      if (depth + 1 < dims.length) {
        if (!Array.isArray(e)) throw new SqlError('sql.invalid_text_representation', '2202E', 'multidimensional arrays must have array expressions with matching dimensions');
        walk(e as readonly Datum[], depth + 1);
        continue;
      }
      const len = Buffer.allocUnsafe(4);
      if (e === null) {
        hasNull = 1;
        len.writeInt32BE(-1);
        parts.push(len);
      } else {
        const body = encodeBinary(e, elem);
        len.writeInt32BE(body.length);
        parts.push(len, body);
      }
    }
  };
  if (dims.length > 0 && a.length > 0) walk(a, 0);
  const head = Buffer.allocUnsafe(12 + 8 * dims.length);
  head.writeInt32BE(dims.length, 0);
  head.writeInt32BE(hasNull, 4);
  head.writeUInt32BE(elem.oid, 8);
  dims.forEach((n, i) => {
    head.writeInt32BE(n, 12 + 8 * i);
    head.writeInt32BE(vector ? 0 : 1, 16 + 8 * i);
  });
  return Buffer.concat([head, ...parts]);
}

function need(buf: Buffer, n: number, exact = true): void {
  if (exact ? buf.length !== n : buf.length < n) {
    throw binaryError(buf.length < n ? 'insufficient data left in message' : 'incorrect binary data format');
  }
}

/** The datum for binary bytes `buf` of type `t` (typrecv). */
export function decodeBinary(buf: Buffer, t: SqlType): Datum {
  switch (t.family) {
    case 'bool':
      need(buf, 1);
      return buf[0] !== 0;
    case 'int':
      if (t.oid === Oid.int8) {
        need(buf, 8);
        return buf.readBigInt64BE(0);
      }
      if (t.oid === Oid.int2) {
        need(buf, 2);
        return buf.readInt16BE(0);
      }
      need(buf, 4);
      return buf.readInt32BE(0);
    case 'oid':
      need(buf, 4);
      return buf.readUInt32BE(0);
    case 'void':
      return null;
    case 'float':
      if (t.oid === Oid.float4) {
        need(buf, 4);
        return buf.readFloatBE(0);
      }
      need(buf, 8);
      return buf.readDoubleBE(0);
    case 'numeric': {
      need(buf, 8, false);
      const ndigits = buf.readInt16BE(0);
      if (ndigits < 0 || buf.length !== 8 + 2 * ndigits) throw binaryError('insufficient data left in message');
      const digits: number[] = [];
      for (let i = 0; i < ndigits; i++) digits.push(buf.readInt16BE(8 + 2 * i));
      return Decimal.fromBinary({ weight: buf.readInt16BE(2), sign: buf.readUInt16BE(4), dscale: buf.readInt16BE(6), digits });
    }
    case 'string':
      if (t.oid === Oid.char) return buf.length === 0 ? '' : String.fromCharCode(buf[0] as number);
      return decodeUtf8(buf);
    case 'unknown':
      return decodeUtf8(buf);
    case 'json': {
      const s = decodeUtf8(buf);
      parseJson(s, 'json');
      return s;
    }
    case 'bytes':
      return Buffer.from(buf);
    case 'date': {
      need(buf, 4);
      const v = buf.readInt32BE(0);
      if (v === INT32_MAX) return Infinity;
      if (v === INT32_MIN) return -Infinity;
      if (v < DATE_MIN_DAYS || v > DATE_MAX_DAYS) throw new SqlError('sql.datetime_field_overflow', '22008', 'date out of range');
      return v;
    }
    case 'timestamp':
    case 'timestamptz': {
      need(buf, 8);
      const hi = buf.readInt32BE(0);
      const lo = buf.readUInt32BE(4);
      if (hi === INT32_MAX && lo === 0xffffffff) return Infinity;
      if (hi === INT32_MIN && lo === 0) return -Infinity;
      const v = hi * TWO32 + lo;
      if (!timestampInRange(v)) throw new SqlError('sql.datetime_field_overflow', '22008', 'timestamp out of range');
      return v;
    }
    case 'interval':
      need(buf, 16);
      return new Interval(buf.readInt32BE(12), buf.readInt32BE(8), readInt64Number(buf, 0));
    case 'uuid': {
      need(buf, 16);
      const h = buf.toString('hex');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }
    case 'jsonb':
      need(buf, 1, false);
      if (buf[0] !== 1) throw binaryError(`unsupported jsonb version number ${buf[0]}`);
      return Jsonb.parse(decodeUtf8(buf.subarray(1)));
    case 'array':
      return decodeArray(buf, t.arrayElem as SqlType);
    case 'record':
      throw new SqlError('sql.unimplemented', '0A000', 'unimplemented: record receive');
    default:
      return assertNever(t.family);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Strict UTF-8 (22021 on invalid bytes or NUL), as PostgreSQL checks client text. */
export function decodeUtf8(buf: Buffer): string {
  if (buf.includes(0)) throw new SqlError('sql.character_not_in_repertoire', '22021', 'invalid byte sequence for encoding "UTF8": 0x00');
  try {
    return utf8.decode(buf);
  } catch {
    throw new SqlError('sql.character_not_in_repertoire', '22021', 'invalid byte sequence for encoding "UTF8"');
  }
}

function decodeArray(buf: Buffer, elem: SqlType): Datum[] {
  need(buf, 12, false);
  const ndim = buf.readInt32BE(0);
  const flags = buf.readInt32BE(4);
  const elemOid = buf.readUInt32BE(8);
  if (ndim < 0 || ndim > 6) throw binaryError(`invalid number of dimensions: ${ndim}`);
  if (flags !== 0 && flags !== 1) throw binaryError('invalid array flags');
  if (elemOid !== elem.oid) throw binaryError(`binary data has array element type ${elemOid} instead of expected ${elem.oid}`);
  need(buf, 12 + 8 * ndim, false);
  const dims: number[] = [];
  for (let i = 0; i < ndim; i++) {
    const n = buf.readInt32BE(12 + 8 * i);
    if (n < 0) throw binaryError('invalid array dimension');
    dims.push(n);
  }
  let off = 12 + 8 * ndim;
  const build = (depth: number): Datum[] => {
    const n = dims[depth] as number;
    const out: Datum[] = [];
    for (let i = 0; i < n; i++) {
      if (depth + 1 < dims.length) {
        out.push(build(depth + 1));
        continue;
      }
      if (off + 4 > buf.length) throw binaryError('insufficient data left in message');
      const len = buf.readInt32BE(off);
      off += 4;
      if (len === -1) {
        out.push(null);
        continue;
      }
      if (len < 0 || off + len > buf.length) throw binaryError('insufficient data left in message');
      out.push(decodeBinary(buf.subarray(off, off + len), elem));
      off += len;
    }
    return out;
  };
  const v = ndim === 0 ? [] : build(0);
  if (off !== buf.length) throw binaryError('incorrect binary data format in array');
  return v;
}
