/**
 * PostgreSQL's text wire/input format for every Cairn type: encodeText is
 * the type's output function, decodeText its input function.
 *
 * Output is what PostgreSQL 15 prints with DateStyle = 'ISO, MDY',
 * IntervalStyle = postgres, extra_float_digits = 1 (shortest round-trip
 * floats, "%g"-style exponent switch at 10^15 for float8 and 10^6 for float4),
 * bytea_output = hex, timestamptz in the session time zone.
 *
 * Input accepts PostgreSQL's syntax (see each parser); errors carry
 * PostgreSQL's SQLSTATE and message (type-error.ts). decodeText does not
 * apply length limits of varchar(n)/char(n) or numeric(p, s): that is a cast
 * (cast.ts coerceToTypmod), as in PostgreSQL where the typmod is applied
 * by the cast after the input function runs.
 *
 * Arrays: '{1,2,NULL}', '{{1,2},{3,4}}', elements double-quoted when empty,
 * "NULL", or containing  { } , " \  or whitespace. int2vector/oidvector:
 * space-separated, '1 2 3'.
 */
import { assert, assertNever } from '../../src/util/assert.js';
import { SqlError } from '../parser/sql-error.js';
import { formatDate, formatTimestamp, formatTimestampTz, parseDate, parseTimestamp, parseTimestampTz, UTC, roundMicros, type DateTimeContext, type TimeZone } from './datetime.js';
import { Decimal, isSpaceCode } from './decimal.js';
import { Jsonb, parseJson, type Datum } from './datum.js';
import { Interval, parseInterval, roundInterval } from './interval.js';
import { invalidParameterValue, invalidTextRepresentation, outOfRange } from './type-error.js';
import { NAME_MAX_BYTES, Oid, formatType, timePrecision, typeFromName, typeFromOid, type SqlType } from './type.js';

/** Session settings the text format depends on. */
export interface TextFormatContext extends DateTimeContext {
  readonly timeZone: TimeZone;
}

export const DEFAULT_TEXT_CONTEXT: TextFormatContext = { timeZone: UTC };

// ---------------------------------------------------------------------------
// Output

/** The text form of a non-NULL datum of type `t`. */
export function encodeText(d: Datum, t: SqlType, ctx: TextFormatContext = DEFAULT_TEXT_CONTEXT): string {
  assert(d !== null, 'types: encodeText of NULL');
  switch (t.family) {
    case 'bool':
      return d ? 't' : 'f';
    case 'int':
      return typeof d === 'bigint' ? d.toString() : String(d as number);
    case 'oid':
      if (t.oid === Oid.regtype) {
        const rt = typeFromOid(d as number);
        return rt === undefined ? String(d as number) : rt.oid === Oid.bpchar ? 'character' : formatType(rt);
      }
      if (t.oid === Oid.regclass) return regclassNames.nameOf?.(d as number) ?? String(d as number);
      return String(d as number);
    case 'void':
      return '';
    case 'float':
      return t.oid === Oid.float4 ? formatFloat4(d as number) : formatFloat8(d as number);
    case 'numeric':
      return (d as Decimal).toString();
    case 'string':
      return t.oid === Oid.char ? charToText(d as string) : (d as string);
    case 'unknown':
    case 'json':
    case 'uuid':
      return d as string;
    case 'bytes':
      return `\\x${(d as Buffer).toString('hex')}`;
    case 'date':
      return formatDate(d as number);
    case 'timestamp':
      return formatTimestamp(d as number);
    case 'timestamptz':
      return formatTimestampTz(d as number, ctx.timeZone);
    case 'interval':
      return (d as Interval).toString();
    case 'jsonb':
      return (d as Jsonb).toString();
    case 'array':
      if (t.oid === Oid.int2vector || t.oid === Oid.oidvector) return (d as readonly number[]).join(' ');
      return encodeArrayText(d as readonly Datum[], t.arrayElem as SqlType, ctx);
    case 'record':
      throw new SqlError('sql.unimplemented', '0A000', 'unimplemented: record output');
    default:
      return assertNever(t.family);
  }
}

/** encodeText as UTF-8 bytes, NULL as null: what a DataRow column holds. */
export function encodeTextBytes(d: Datum, t: SqlType, ctx: TextFormatContext = DEFAULT_TEXT_CONTEXT): Buffer | null {
  if (d === null) return null;
  const s = encodeText(d, t, ctx);
  return ASCII_OUTPUT.has(t.family) ? Buffer.from(s, 'latin1') : utf8Bytes(s);
}

/** Families whose text output is always ASCII (Buffer.from latin1 is ~3× faster than utf8 for short strings). */
const ASCII_OUTPUT: ReadonlySet<string> = new Set(['bool', 'int', 'oid', 'float', 'numeric', 'bytes', 'date', 'timestamp', 'timestamptz', 'interval', 'uuid', 'void']);

/** UTF-8 bytes of s, taking the latin1 fast path when s is ASCII. */
export function utf8Bytes(s: string): Buffer {
  return Buffer.byteLength(s) === s.length ? Buffer.from(s, 'latin1') : Buffer.from(s, 'utf8');
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The points halfway between float32 v and its neighbours (exact in a double). */
function float32Midpoints(v: number): [number, number] {
  f32[0] = v;
  const bits = u32[0] as number;
  u32[0] = bits - 1;
  const lo = f32[0] as number;
  u32[0] = bits + 1;
  const hi = f32[0] as number;
  return [(v + lo) / 2, (v + hi) / 2];
}

function padExponent(e: string): string {
  // "1e+6" → "1e+06", as C's %g prints
  const k = e.indexOf('e');
  const exp = e.slice(k + 2);
  return exp.length >= 2 ? e : `${e.slice(0, k + 2)}0${exp}`;
}

/** float8 output (extra_float_digits = 1): shortest round-trip, exponent form when exp < −4 or ≥ 15. */
export function formatFloat8(v: number): string {
  if (v !== v) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  const a = Math.abs(v);
  if (a >= 1e-4 && a < 1e15) return String(v); // JS prints these in fixed notation, shortest digits
  let e = v.toExponential();
  if (a >= 2 ** 53 && a !== Infinity && isDoubleMidpoint(e, v)) {
    // PostgreSQL's Ryu never prints a decimal lying exactly halfway to a
    // neighbour (JS may, as it rounds back by ties-to-even): take more digits.
    const shortest = e.slice(0, e.indexOf('e')).replace(/[-.]/g, '').length;
    for (let p = shortest + 1; p <= 17; p++) {
      const c = v.toExponential(p - 1);
      if (Number(c) === v && !isDoubleMidpoint(c, v)) {
        e = c.replace(/\.?0+e/, 'e');
        break;
      }
    }
  }
  return padExponent(e);
}

/** Whether decimal `e` (from toExponential, an integer since |v| ≥ 2^53) is exactly halfway between v and a neighbour. */
function isDoubleMidpoint(e: string, v: number): boolean {
  const k = e.indexOf('e');
  const neg = e.charCodeAt(0) === 45;
  const digits = e.slice(neg ? 1 : 0, k).replace('.', '');
  const shift = Number(e.slice(k + 1)) - (digits.length - 1);
  if (shift < 0) return false;
  const exact = BigInt(digits) * 10n ** BigInt(shift);
  const x = BigInt(Math.abs(v));
  const ulpBits = x.toString(2).length - 53; // spacing above x is 2^ulpBits
  const half = 1n << BigInt(ulpBits - 1);
  const powerOfTwo = (x & (x - 1n)) === 0n;
  return exact === x + half || exact === x - (powerOfTwo ? half >> 1n : half);
}

/** float4 output: the shortest decimal that rounds back to the same float32. */
export function formatFloat4(v: number): string {
  if (v !== v) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  let e = '';
  const [below, above] = float32Midpoints(v);
  for (let p = 1; p <= 9; p++) {
    e = v.toExponential(p - 1);
    const c = Number(e);
    // PostgreSQL's Ryu never prints a decimal exactly halfway to a neighbour.
    if (Math.fround(c) === v && c !== below && c !== above) break;
  }
  const k = e.indexOf('e');
  const exp = Number(e.slice(k + 1));
  if (exp < -4 || exp >= 6) return padExponent(e);
  const neg = e.charCodeAt(0) === 45;
  const digits = e.slice(neg ? 1 : 0, k).replace('.', '');
  let out: string;
  if (exp < 0) out = `0.${'0'.repeat(-exp - 1)}${digits}`;
  else if (digits.length <= exp + 1) out = digits + '0'.repeat(exp + 1 - digits.length);
  else out = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  return neg ? `-${out}` : out;
}

function arrayElemNeedsQuotes(s: string): boolean {
  if (s.length === 0) return true;
  if (s.length === 4 && s.toLowerCase() === 'null') return true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x7b || c === 0x7d || c === 0x2c || c === 0x22 || c === 0x5c || c === 0x20 || (c >= 9 && c <= 13)) return true;
  }
  return false;
}

function encodeArrayText(a: readonly Datum[], elem: SqlType, ctx: TextFormatContext): string {
  let out = '{';
  for (let i = 0; i < a.length; i++) {
    if (i > 0) out += ',';
    const e = a[i] as Datum;
    if (e === null) out += 'NULL';
    else if (Array.isArray(e)) out += encodeArrayText(e as readonly Datum[], elem, ctx);
    else {
      const s = encodeText(e, elem, ctx);
      out += arrayElemNeedsQuotes(s) ? `"${s.replace(/["\\]/g, '\\$&')}"` : s;
    }
  }
  return `${out}}`;
}

// ---------------------------------------------------------------------------
// Input

/** The datum for text `s` of type `t` (PostgreSQL's input function; typmods are not applied). */
export function decodeText(s: string, t: SqlType, ctx: TextFormatContext = DEFAULT_TEXT_CONTEXT): Datum {
  switch (t.family) {
    case 'bool':
      return parseBool(s);
    case 'int':
      return t.oid === Oid.int8 ? parseInt8(s) : parseInt32(s, t.oid === Oid.int2 ? 'smallint' : 'integer');
    case 'oid':
      return parseOid(s, t);
    case 'float':
      return parseFloat(s, t.oid === Oid.float4);
    case 'numeric':
      return Decimal.parseOrThrow(s);
    case 'string':
      return decodeString(s, t);
    case 'unknown':
      return s;
    case 'bytes':
      return parseBytea(s);
    case 'date':
      return parseDate(s, ctx);
    case 'timestamp': {
      const p = timePrecision(t);
      const v = parseTimestamp(s, ctx);
      return p === undefined ? v : roundMicros(v, p);
    }
    case 'timestamptz': {
      const p = timePrecision(t);
      const v = parseTimestampTz(s, ctx);
      return p === undefined ? v : roundMicros(v, p);
    }
    case 'interval': {
      const p = timePrecision(t);
      const v = parseInterval(s);
      return p === undefined ? v : roundInterval(v, p);
    }
    case 'uuid':
      return parseUuid(s);
    case 'json':
      parseJson(s, 'json');
      return s;
    case 'jsonb':
      return Jsonb.parse(s);
    case 'array':
      if (t.oid === Oid.int2vector || t.oid === Oid.oidvector) {
        const elem = t.arrayElem as SqlType;
        return s.split(/\s+/).filter((w) => w !== '').map((w) => decodeText(w, elem, ctx));
      }
      return parseArray(s, t.arrayElem as SqlType, ctx);
    case 'void':
      return null;
    case 'record':
      throw new SqlError('sql.unimplemented', '0A000', 'unimplemented: record input');
    default:
      return assertNever(t.family);
  }
}

function decodeString(s: string, t: SqlType): string {
  if (t.oid === Oid.name) return truncateName(s);
  if (t.oid === Oid.char) return /^\\[0-3][0-7][0-7]$/.test(s) ? String.fromCharCode(parseInt(s.slice(1), 8)) : firstByteChar(s);
  return s;
}

/**
 * "char" holds one byte: its datum is a string of at most one code unit
 * below 256 (the byte). From text it takes the first UTF-8 byte, as
 * PostgreSQL's charin does.
 */
export function firstByteChar(s: string): string {
  if (s.length === 0) return '';
  const c = s.charCodeAt(0);
  return c < 0x80 ? s[0] as string : String.fromCharCode(Buffer.from(s.slice(0, 2), 'utf8')[0] as number);
}

/** "char" output: the byte itself when ASCII, else '\ooo' (PostgreSQL's charout). */
export function charToText(s: string): string {
  const c = s.charCodeAt(0);
  return s.length === 0 || c < 0x80 ? s : `\\${c.toString(8).padStart(3, '0')}`;
}

/** `name` keeps at most 63 bytes, cut on a character boundary. */
export function truncateName(s: string): string {
  if (s.length <= NAME_MAX_BYTES / 3 || Buffer.byteLength(s) <= NAME_MAX_BYTES) return s;
  let out = '';
  let bytes = 0;
  for (const ch of s) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > NAME_MAX_BYTES) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/** PostgreSQL's parse_bool: any unambiguous prefix of true/false/yes/no, on/off, 1/0, surrounding space ignored. */
export function parseBool(s: string): boolean {
  const w = s.trim().toLowerCase();
  if (w.length > 0) {
    switch (w[0]) {
      case 't':
        if ('true'.startsWith(w)) return true;
        break;
      case 'f':
        if ('false'.startsWith(w)) return false;
        break;
      case 'y':
        if ('yes'.startsWith(w)) return true;
        break;
      case 'n':
        if ('no'.startsWith(w)) return false;
        break;
      case 'o':
        if (w === 'on') return true;
        if (w === 'of' || w === 'off') return false;
        break;
      case '1':
        if (w === '1') return true;
        break;
      case '0':
        if (w === '0') return false;
        break;
      default:
        break;
    }
  }
  throw invalidTextRepresentation('boolean', s);
}

/** Trimmed sign+digits, or undefined. */
function intText(s: string): string | undefined {
  let i = 0;
  let end = s.length;
  while (i < end && isSpaceCode(s.charCodeAt(i))) i++;
  while (end > i && isSpaceCode(s.charCodeAt(end - 1))) end--;
  let j = i;
  const c = s.charCodeAt(j);
  if (c === 43 || c === 45) j++;
  if (j === end) return undefined;
  for (let k = j; k < end; k++) {
    const d = s.charCodeAt(k);
    if (d < 48 || d > 57) return undefined;
  }
  return i === 0 && end === s.length ? s : s.slice(i, end);
}

/** PostgreSQL reads digits first: a digit run that overflows is 22003 even when junk follows. */
function badInt(s: string, typeName: string, max: bigint): Error {
  const m = /^\s*([+-]?\d+)/.exec(s);
  if (m !== null) {
    const v = BigInt(m[1] as string);
    if (v > max || v < -max - 1n) return outOfRange(`value "${s}" is out of range for type ${typeName}`);
  }
  return invalidTextRepresentation(typeName, s);
}

function parseInt32(s: string, typeName: 'smallint' | 'integer'): number {
  const w = intText(s);
  if (w === undefined) throw badInt(s, typeName, typeName === 'smallint' ? 32767n : 2147483647n);
  const v = w.length > 16 ? Infinity : Number(w);
  const max = typeName === 'smallint' ? 32767 : 2147483647;
  if (v > max || v < -max - 1) throw outOfRange(`value "${s}" is out of range for type ${typeName}`);
  return v === 0 ? 0 : v; // no −0
}

const INT8_MIN = -(2n ** 63n);
const INT8_MAX = 2n ** 63n - 1n;

function parseInt8(s: string): bigint {
  const w = intText(s);
  if (w === undefined) throw badInt(s, 'bigint', INT8_MAX);
  const v = BigInt(w);
  if (v > INT8_MAX || v < INT8_MIN) throw outOfRange(`value "${s}" is out of range for type bigint`);
  return v;
}

/**
 * Relation name ↔ OID lookups for regclass input and output; sql/vtable
 * installs them (the catalog lives above sql/types). Unset: regclass reads and
 * prints numbers only.
 */
export const regclassNames: { oidOf?: (name: string) => number | undefined; nameOf?: (oid: number) => string | undefined } = {};

/** A reg* name as written: `"Quoted"` keeps its case, otherwise lower-cased; a pg_catalog./public. qualifier is dropped. */
function regName(s: string): string {
  const parts = s.trim().match(/"(?:[^"]|"")*"|[^.]+/g) ?? [];
  const last = parts.length === 0 ? '' : (parts[parts.length - 1] as string).trim();
  return last.startsWith('"') ? last.slice(1, -1).replace(/""/g, '"') : last.toLowerCase();
}

function parseOid(s: string, t: SqlType): number {
  const w = intText(s);
  if (w === undefined) {
    if (t.oid === Oid.regtype) {
      const m = /^\s*(.*?)\s*(?:\((\d+)(?:\s*,\s*(\d+))?\))?\s*(\[\])?\s*$/.exec(s.replace(/^\s*(pg_catalog\.)/, ''));
      const name = regName(m?.[1] ?? s);
      return typeFromName(name, [], m?.[4] === undefined ? 0 : 1).oid;
    }
    if (t.oid === Oid.regclass) {
      const oid = regclassNames.oidOf?.(regName(s));
      if (oid === undefined) throw new SqlError('sql.undefined_table', '42P01', `relation "${s}" does not exist`);
      return oid;
    }
    if (t.oid !== Oid.oid) throw new SqlError('sql.unimplemented', '0A000', `unimplemented: ${formatType(t)} input by name: "${s}"`);
    throw invalidTextRepresentation('oid', s);
  }
  const v = Number(w);
  if (v > 4294967295 || v < -2147483648) throw outOfRange(`value "${s}" is out of range for type oid`);
  return v < 0 ? v + 4294967296 : v;
}

const FLOAT_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

function parseFloat(s: string, float4: boolean): number {
  const w = s.trim();
  const typeName = float4 ? 'real' : 'double precision';
  if (!FLOAT_RE.test(w)) {
    switch (w.toLowerCase()) {
      case 'nan':
        return NaN;
      case 'infinity':
      case '+infinity':
      case 'inf':
      case '+inf':
        return Infinity;
      case '-infinity':
      case '-inf':
        return -Infinity;
      default:
        throw invalidTextRepresentation(typeName, s);
    }
  }
  let v = Number(w);
  if (float4) v = Math.fround(v);
  if (!Number.isFinite(v) || (v === 0 && /[1-9]/.test(w.slice(0, w.search(/[eE]|$/))))) {
    throw outOfRange(`"${s}" is out of range for type ${typeName}`);
  }
  return v;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** bytea input: '\x' hex (blanks allowed between digit pairs) or the escape format ('\\', '\ooo'). */
export function parseBytea(s: string): Buffer {
  if (s.length >= 2 && s.charCodeAt(0) === 92 && (s.charCodeAt(1) === 120 || s.charCodeAt(1) === 88)) {
    if (/^\\[xX][0-9a-fA-F]*$/.test(s) && s.length % 2 === 0) return Buffer.from(s.slice(2), 'hex');
    const out: number[] = [];
    let i = 2;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (isSpaceCode(c)) {
        i++;
        continue;
      }
      const hi = hexValue(c);
      if (hi < 0) throw invalidParameterValue(`invalid hexadecimal digit: "${s[i]}"`);
      if (i + 1 >= s.length) throw invalidParameterValue('invalid hexadecimal data: odd number of digits');
      const lo = hexValue(s.charCodeAt(i + 1));
      if (lo < 0) throw invalidParameterValue(`invalid hexadecimal digit: "${s[i + 1]}"`);
      out.push(hi * 16 + lo);
      i += 2;
    }
    return Buffer.from(out);
  }
  if (!s.includes('\\')) return Buffer.from(s, 'utf8');
  const parts: Buffer[] = [];
  let start = 0;
  let i = 0;
  while (i < s.length) {
    if (s.charCodeAt(i) !== 92) {
      i++;
      continue;
    }
    parts.push(Buffer.from(s.slice(start, i), 'utf8'));
    if (s[i + 1] === '\\') {
      parts.push(Buffer.from([92]));
      i += 2;
    } else if (/^[0-3][0-7][0-7]$/.test(s.slice(i + 1, i + 4))) {
      parts.push(Buffer.from([parseInt(s.slice(i + 1, i + 4), 8)]));
      i += 4;
    } else {
      throw invalidTextRepresentation('bytea', s);
    }
    start = i;
  }
  parts.push(Buffer.from(s.slice(start), 'utf8'));
  return Buffer.concat(parts);
}

/** uuid input: 32 hex digits, optional '-' after any group of four, optionally in braces; output form lower-case 8-4-4-4-12. */
export function parseUuid(s: string): string {
  let body = s;
  if (body.startsWith('{')) {
    if (!body.endsWith('}')) throw invalidTextRepresentation('uuid', s);
    body = body.slice(1, -1);
  }
  if (!/^[0-9a-fA-F]{4}(?:-?[0-9a-fA-F]{4}){7}$/.test(body)) throw invalidTextRepresentation('uuid', s);
  const h = body.replace(/-/g, '').toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Every level of a nested array holds either only sub-arrays of one shape or only elements. */
export function isRectangular(a: readonly Datum[]): boolean {
  const shape: number[] = [];
  for (let cur: Datum = a; Array.isArray(cur) && cur.length > 0; cur = (cur as readonly Datum[])[0] as Datum) shape.push(cur.length);
  const check = (x: readonly Datum[], depth: number): boolean => {
    if (x.length !== (shape[depth] ?? 0)) return false;
    for (const e of x) {
      const nested = Array.isArray(e);
      if (nested !== depth + 1 < shape.length) return false;
      if (nested && !check(e as readonly Datum[], depth + 1)) return false;
    }
    return true;
  };
  return a.length === 0 || check(a, 0);
}

/** Array input: '{…}' with quoting and backslash escapes, nested braces, NULL. */
function trimAsciiSpace(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isSpaceCode(s.charCodeAt(a))) a++;
  while (b > a && isSpaceCode(s.charCodeAt(b - 1))) b--;
  return s.slice(a, b);
}

function parseArray(s: string, elem: SqlType, ctx: TextFormatContext): Datum[] {
  const bad = (detail: string) =>
    new SqlError('sql.invalid_text_representation', '22P02', `malformed array literal: "${s}"`, { detail });
  let i = 0;
  const skipWs = () => {
    while (i < s.length && isSpaceCode(s.charCodeAt(i))) i++;
  };
  skipWs();
  if (s[i] === '[') {
    // explicit bounds "[1:3]=" — the lower bound is ignored
    const eq = s.indexOf('=', i);
    if (eq < 0) throw bad('Missing "=" after array dimensions.');
    i = eq + 1;
    skipWs();
  }
  const level = (): Datum[] => {
    if (s[i] !== '{') throw bad('Array value must start with "{" or dimension information.');
    i++;
    const out: Datum[] = [];
    skipWs();
    if (s[i] === '}') {
      i++;
      return out;
    }
    for (;;) {
      skipWs();
      if (s[i] === '{') {
        out.push(level());
      } else {
        let text = '';
        let quoted = false;
        if (s[i] === '"') {
          quoted = true;
          i++;
          for (;;) {
            if (i >= s.length) throw bad('Unexpected end of input.');
            const c = s[i] as string;
            if (c === '"') {
              i++;
              break;
            }
            if (c === '\\') {
              i++;
              if (i >= s.length) throw bad('Unexpected end of input.');
            }
            text += s[i];
            i++;
          }
          skipWs();
        } else {
          let raw = '';
          while (i < s.length && s[i] !== ',' && s[i] !== '}') {
            const c = s[i] as string;
            if (c === '{' || c === '"') throw bad('Unexpected array element.');
            if (c === '\\') {
              i++;
              if (i >= s.length) throw bad('Unexpected end of input.');
            }
            raw += s[i];
            i++;
          }
          text = trimAsciiSpace(raw); // PostgreSQL's array_in trims only ASCII white space
          if (text === '') throw bad('Unexpected "," character.');
        }
        out.push(!quoted && text.toLowerCase() === 'null' ? null : decodeText(text, elem, ctx));
      }
      skipWs();
      const c = s[i++];
      if (c === '}') break;
      if (c !== ',') throw bad('Unexpected end of input.');
    }
    return out;
  };
  const v = level();
  skipWs();
  if (i !== s.length) throw bad('Junk after closing right brace.');
  if (!isRectangular(v)) throw bad('Multidimensional arrays must have sub-arrays with matching dimensions.');
  return v;
}
