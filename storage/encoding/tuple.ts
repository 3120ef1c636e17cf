/**
 * Order-preserving tuple encoding for keys (modelled on CockroachDB's
 * util/encoding; our own tag layout). A key is a concatenation of encoded
 * values; comparing two keys bytewise compares their tuples column by column:
 *
 *     sign(compareBytes(enc(a), enc(b))) === sign(compare(a, b))
 *
 * for values of the same kind and direction in each column, and an encoded
 * value is never a proper prefix of another one, so (a, b) compares as a, then b.
 *
 * Every value starts with a tag byte that names its kind AND direction, so a
 * key decodes without its schema (the pretty-printer relies on this):
 *
 *     tag        kind          body
 *     00         NULL          —            ascending: NULL first
 *     01         (not-NULL marker: a span bound just above NULL; never a value)
 *     02         float NaN     —            NaN sorts below every other float
 *     03         float < 0     ~bits(|f|)   8 bytes, IEEE-754 big-endian, complemented
 *     04         float ±0      —            −0 encodes as +0: they compare equal
 *     05         float > 0     bits(f)      8 bytes (±Inf are ordinary values here)
 *     06/07/08   float desc    > 0: ~bits(f) | ±0 | < 0: bits(|f|)
 *     09         float NaN desc             (last when descending)
 *     0a 0b      false true                 ascending
 *     0c 0d      true false                 descending
 *     12 / 13    bytes asc / desc           escaped body + terminator (below)
 *     14 / 15    string asc / desc          UTF-8, escaped like bytes
 *     20–7f      int desc      as ascending ints of ~v = −v−1, tags 0x20 + …
 *     80–fd      int asc       (below)
 *     fe         (not-NULL marker, descending)
 *     ff         NULL desc                  descending: NULL last
 *
 * Ints (the same scheme with a base tag B and a small-value limit S: ascending
 * B=0x80, S=109; descending B=0x20, S=79, applied to ~v):
 *
 *     B+8−n   v < 0 in n bytes (n = 1..8): v + 256^n, big-endian, n minimal
 *     B+8+v   0 ≤ v ≤ S, the tag alone
 *     B+8+S+n v > S in n bytes (n = 1..8): v big-endian, n minimal
 *
 *   e.g. ascending 0 → 88, 1 → 89, 109 → f5, 110 → f6 6e, 1000 → f7 03 e8,
 *   −1 → 87 ff, −256 → 87 00, −257 → 86 fe ff, int64 min → 80 80 00…00.
 *
 * Bytes and strings: 0x00 in the body becomes 00 ff, then a terminator 00 01:
 *
 *     "a\x00b" asc  → 12 | 61 00 ff 62 | 00 01
 *                desc → 13 | 9e ff 00 9d | ff fe   (every body byte complemented)
 *
 *   The terminator sorts below every escaped byte, so "ab" < "ab\x00" < "abc".
 *   Strings compare by Unicode code point (= UTF-8 byte order), not by
 *   JavaScript's UTF-16 code-unit order; they must be well-formed (lone
 *   surrogates would be replaced by U+FFFD by the UTF-8 encoder).
 *
 * Comparison semantics, ascending; descending reverses each kind's whole order:
 *   NULL < every non-NULL value;  ints by numeric value over int64;
 *   NaN < −Inf < … < −0 = +0 < … < +Inf;  false < true;
 *   bytes lexicographically (unsigned), strings by code point.
 *
 * Int decoding returns a `number` when the value is a safe integer
 * (|v| ≤ 2^53 − 1) and a `bigint` otherwise; `readIntBig`/`decodeIntBig`
 * always return a bigint. Encoders take safe-integer numbers or int64 bigints.
 *
 * Decoders reject bytes these encoders cannot produce (unknown tag, truncated
 * value, bad escape, non-minimal int, an 8-byte int outside int64,
 * non-canonical float, invalid UTF-8, a not-NULL marker where a value is due) with
 * a CorruptionError naming the key in hex.
 *
 * Ownership: KeyWriter hands out views into a slab it never rewrites (so a
 * finished key stays valid and cheap, but pins its slab); decoded bytes values
 * are views into the input key when no unescaping was needed — copy them
 * before mutating either.
 */
import { isUtf8 } from 'node:buffer';
import { assert, assertNever } from '../../src/util/assert.js';
import { corruptKey } from './bytes.js';
import type { DecodedVarint } from './varint.js';
import { getUvarint, getUvarintBig, getVarint, getVarintBig, putUvarint, putUvarintBig, putVarint, putVarintBig } from './varint.js';

export type Direction = 'asc' | 'desc';
export type ValueKind = 'null' | 'int' | 'float' | 'bool' | 'bytes' | 'string';
/** What a decoder returns for one value (bytes decode to a Buffer). */
export type KeyValue = null | number | bigint | boolean | string | Buffer;

/** A typed value for encoding: JavaScript numbers alone cannot tell an int from a float. */
export type KeyDatum =
  | { readonly kind: 'null' }
  | { readonly kind: 'int'; readonly value: number | bigint }
  | { readonly kind: 'float'; readonly value: number }
  | { readonly kind: 'bool'; readonly value: boolean }
  | { readonly kind: 'bytes'; readonly value: Uint8Array }
  | { readonly kind: 'string'; readonly value: string };

export interface DecodedValue {
  readonly kind: ValueKind;
  readonly dir: Direction;
  readonly value: KeyValue;
  /** Offset just after the value. */
  readonly next: number;
}

export const TAG_NULL = 0x00;
export const TAG_NOT_NULL = 0x01;
export const TAG_FLOAT_NAN = 0x02;
export const TAG_FLOAT_NEG = 0x03;
export const TAG_FLOAT_ZERO = 0x04;
export const TAG_FLOAT_POS = 0x05;
export const TAG_FLOAT_POS_DESC = 0x06;
export const TAG_FLOAT_ZERO_DESC = 0x07;
export const TAG_FLOAT_NEG_DESC = 0x08;
export const TAG_FLOAT_NAN_DESC = 0x09;
export const TAG_FALSE = 0x0a;
export const TAG_TRUE = 0x0b;
export const TAG_TRUE_DESC = 0x0c;
export const TAG_FALSE_DESC = 0x0d;
export const TAG_BYTES = 0x12;
export const TAG_BYTES_DESC = 0x13;
export const TAG_STRING = 0x14;
export const TAG_STRING_DESC = 0x15;
export const TAG_INT_DESC_MIN = 0x20;
export const TAG_INT_DESC_MAX = 0x7f;
export const TAG_INT_MIN = 0x80;
export const TAG_INT_MAX = 0xfd;
export const TAG_NOT_NULL_DESC = 0xfe;
export const TAG_NULL_DESC = 0xff;

interface IntTags {
  /** Tag of a value with no bytes of its own: zero + v for 0 ≤ v ≤ smallMax. */
  readonly zero: number;
  readonly smallMax: number;
  readonly smallMaxBig: bigint;
}
const INT_ASC: IntTags = { zero: TAG_INT_MIN + 8, smallMax: 109, smallMaxBig: 109n };
const INT_DESC: IntTags = { zero: TAG_INT_DESC_MIN + 8, smallMax: 79, smallMaxBig: 79n };

/** Largest ascending int encoded in its tag alone (table and index ids up to it take one byte). */
export const INT_SMALL_MAX = INT_ASC.smallMax;

const TWO_POW_32 = 4294967296;
const MIN_INT64 = -(1n << 63n);
const MAX_INT64 = (1n << 63n) - 1n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
/** ASCII strings and byte arrays up to this length are copied by a JS loop; longer ones natively. */
const SHORT = 48;

// Kind of each tag byte; 0 = not a value tag.
const K_NULL = 1;
const K_INT = 2;
const K_FLOAT = 3;
const K_BOOL = 4;
const K_BYTES = 5;
const K_STRING = 6;
const KIND_OF_TAG = new Uint8Array(256);
KIND_OF_TAG[TAG_NULL] = K_NULL;
KIND_OF_TAG[TAG_NULL_DESC] = K_NULL;
for (let t = TAG_FLOAT_NAN; t <= TAG_FLOAT_NAN_DESC; t++) KIND_OF_TAG[t] = K_FLOAT;
for (let t = TAG_FALSE; t <= TAG_FALSE_DESC; t++) KIND_OF_TAG[t] = K_BOOL;
KIND_OF_TAG[TAG_BYTES] = K_BYTES;
KIND_OF_TAG[TAG_BYTES_DESC] = K_BYTES;
KIND_OF_TAG[TAG_STRING] = K_STRING;
KIND_OF_TAG[TAG_STRING_DESC] = K_STRING;
for (let t = TAG_INT_DESC_MIN; t <= TAG_INT_MAX; t++) KIND_OF_TAG[t] = K_INT;
const KIND_NAMES: readonly (ValueKind | undefined)[] = [undefined, 'null', 'int', 'float', 'bool', 'bytes', 'string'];

function isDescTag(tag: number): boolean {
  switch (KIND_OF_TAG[tag]) {
    case K_NULL:
      return tag === TAG_NULL_DESC;
    case K_INT:
      return tag <= TAG_INT_DESC_MAX;
    case K_FLOAT:
      return tag >= TAG_FLOAT_POS_DESC;
    case K_BOOL:
      return tag >= TAG_TRUE_DESC;
    default:
      return tag === TAG_BYTES_DESC || tag === TAG_STRING_DESC;
  }
}

/** Minimal big-endian byte count (1..8) of the uint64 hi:lo. */
function byteLength(hi: number, lo: number): number {
  if (hi === 0) return lo < 0x100 ? 1 : lo < 0x10000 ? 2 : lo < 0x1000000 ? 3 : 4;
  return hi < 0x100 ? 5 : hi < 0x10000 ? 6 : hi < 0x1000000 ? 7 : 8;
}

/**
 * A growable buffer that keys are encoded into. Append values, then `finish()`
 * returns the key (a view into the current slab) and starts the next key right
 * after it; bytes already handed out are never rewritten. Appends return
 * `this`, so `w.appendInt(52).appendInt(1).appendString('x').finish()`.
 */
export class KeyWriter {
  private buf: Buffer;
  private start = 0;
  private pos = 0;

  constructor(private readonly slabSize = 4096) {
    this.buf = Buffer.allocUnsafe(slabSize);
  }

  /** Bytes in the key being built. */
  get length(): number {
    return this.pos - this.start;
  }

  /** The key built so far, and a fresh start for the next one. */
  finish(): Buffer {
    // Buffer.from(arrayBuffer, …) makes the same view as subarray(), measurably faster.
    const b = this.buf;
    const out = Buffer.from(b.buffer, b.byteOffset + this.start, this.pos - this.start);
    this.start = this.pos;
    return out;
  }

  /** Drops the key being built. */
  reset(): this {
    this.pos = this.start;
    return this;
  }

  private reserve(n: number): void {
    if (this.pos + n > this.buf.length) this.grow(n);
  }

  private grow(n: number): void {
    const used = this.pos - this.start;
    const next = Buffer.allocUnsafe(Math.max(this.slabSize, 2 * (used + n)));
    this.buf.copy(next, 0, this.start, this.pos);
    this.buf = next;
    this.start = 0;
    this.pos = used;
  }

  appendByte(b: number): this {
    this.reserve(1);
    this.buf[this.pos++] = b;
    return this;
  }

  /** Raw bytes, not a tuple value (prefixes, fixed suffixes, embedded keys). */
  appendRaw(bytes: Uint8Array): this {
    this.reserve(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
    return this;
  }

  /** Raw UTF-8 bytes of `s`, `byteLength` = Buffer.byteLength(s, 'utf8') (value encodings: no intermediate Buffer). */
  appendUtf8(s: string, byteLength: number): this {
    this.reserve(byteLength);
    this.pos += this.buf.write(s, this.pos, byteLength, 'utf8');
    return this;
  }

  /** A fixed 8-byte big-endian unsigned integer (order-preserving; no tag). */
  appendUint64(n: number): this {
    if (!(Number.isSafeInteger(n) && n >= 0)) assert(false, `encoding: uint64 ${n} is not a non-negative safe integer`);
    this.reserve(8);
    const hi = Math.floor(n / TWO_POW_32);
    this.buf.writeUInt32BE(hi, this.pos);
    this.buf.writeUInt32BE(n - hi * TWO_POW_32, this.pos + 4);
    this.pos += 8;
    return this;
  }

  /** An unsigned varint for value encodings (does not sort; see varint.ts). */
  appendUvarint(n: number | bigint): this {
    this.reserve(10);
    this.pos = typeof n === 'number' ? putUvarint(this.buf, this.pos, n) : putUvarintBig(this.buf, this.pos, n);
    return this;
  }

  /** A zig-zag signed varint for value encodings (does not sort; see varint.ts). */
  appendVarint(n: number | bigint): this {
    this.reserve(10);
    this.pos = typeof n === 'number' ? putVarint(this.buf, this.pos, n) : putVarintBig(this.buf, this.pos, n);
    return this;
  }

  appendNull(dir: Direction = 'asc'): this {
    return this.appendByte(dir === 'asc' ? TAG_NULL : TAG_NULL_DESC);
  }

  /** The span bound just past NULL (`> NULL` on an index column); never decoded as a value. */
  appendNotNullMarker(dir: Direction = 'asc'): this {
    return this.appendByte(dir === 'asc' ? TAG_NOT_NULL : TAG_NOT_NULL_DESC);
  }

  appendBool(v: boolean, dir: Direction = 'asc'): this {
    return this.appendByte(dir === 'asc' ? (v ? TAG_TRUE : TAG_FALSE) : v ? TAG_TRUE_DESC : TAG_FALSE_DESC);
  }

  /**
   * A safe-integer number or an int64 bigint.
   * NB: here and in every hot encoder, an assert's message is built only once
   * the check has failed (`if (!ok) assert(false, …)`), never per call.
   */
  appendInt(v: number | bigint, dir: Direction = 'asc'): this {
    const tags = dir === 'asc' ? INT_ASC : INT_DESC;
    let hi: number;
    let lo: number;
    let neg: boolean;
    if (typeof v === 'number') {
      if (!Number.isSafeInteger(v)) assert(false, `encoding: int ${v} is not a safe integer (pass a bigint)`);
      const w = dir === 'asc' ? v : -v - 1;
      if (w >= 0 && w <= tags.smallMax) return this.appendByte(tags.zero + w);
      neg = w < 0;
      if (neg ? w >= -TWO_POW_32 : w < TWO_POW_32) {
        // Fits 32 bits (two's complement below zero): no division needed.
        hi = neg ? 0xffffffff : 0;
        lo = neg ? w + TWO_POW_32 : w;
      } else {
        const h = Math.floor(w / TWO_POW_32);
        lo = w - h * TWO_POW_32;
        hi = h >>> 0;
      }
    } else {
      if (!(v >= MIN_INT64 && v <= MAX_INT64)) assert(false, `encoding: int ${v} is outside int64`);
      const w = dir === 'asc' ? v : -v - 1n;
      if (w >= 0n && w <= tags.smallMaxBig) return this.appendByte(tags.zero + Number(w));
      neg = w < 0n;
      const u = BigInt.asUintN(64, w);
      hi = Number(u >> 32n);
      lo = Number(u & 0xffffffffn);
    }
    // A negative w takes as many bytes as its complement ~w needs (w ≥ −256^n ⟺ ~w < 256^n).
    const n = neg ? byteLength(~hi >>> 0, ~lo >>> 0) : byteLength(hi, lo);
    this.reserve(9);
    const b = this.buf;
    let p = this.pos;
    b[p++] = neg ? tags.zero - n : tags.zero + tags.smallMax + n;
    for (let i = n - 1; i >= 4; i--) b[p++] = (hi >>> ((i - 4) * 8)) & 0xff;
    for (let i = Math.min(n, 4) - 1; i >= 0; i--) b[p++] = (lo >>> (i * 8)) & 0xff;
    this.pos = p;
    return this;
  }

  /** Any double; −0 encodes as +0, every NaN as the one NaN. */
  appendFloat(v: number, dir: Direction = 'asc'): this {
    const desc = dir === 'desc';
    if (v !== v) return this.appendByte(desc ? TAG_FLOAT_NAN_DESC : TAG_FLOAT_NAN);
    if (v === 0) return this.appendByte(desc ? TAG_FLOAT_ZERO_DESC : TAG_FLOAT_ZERO);
    const neg = v < 0;
    this.reserve(9);
    const b = this.buf;
    const p = this.pos;
    b[p] = desc ? (neg ? TAG_FLOAT_NEG_DESC : TAG_FLOAT_POS_DESC) : neg ? TAG_FLOAT_NEG : TAG_FLOAT_POS;
    b.writeDoubleBE(neg ? -v : v, p + 1);
    if (neg !== desc) for (let i = p + 1; i < p + 9; i++) b[i] = ~(b[i] as number) & 0xff;
    this.pos = p + 9;
    return this;
  }

  appendString(s: string, dir: Direction = 'asc'): this {
    const len = s.length;
    // UTF-8 needs at most 3 bytes per UTF-16 unit; an escaped 0x00 (1 unit) takes 2.
    this.reserve(3 * len + 3);
    const b = this.buf;
    b[this.pos] = dir === 'asc' ? TAG_STRING : TAG_STRING_DESC;
    const bodyStart = this.pos + 1;
    let p = bodyStart;
    let i = 0;
    if (len <= SHORT) {
      for (; i < len; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        b[p++] = c;
        if (c === 0) b[p++] = 0xff;
      }
    }
    if (i < len) p = escapeInPlace(b, bodyStart, bodyStart + b.write(s, bodyStart, 'utf8'));
    return this.terminate(p, bodyStart, dir);
  }

  appendBytes(v: Uint8Array, dir: Direction = 'asc'): this {
    const len = v.length;
    this.reserve(2 * len + 3);
    const b = this.buf;
    b[this.pos] = dir === 'asc' ? TAG_BYTES : TAG_BYTES_DESC;
    const bodyStart = this.pos + 1;
    let p = bodyStart;
    if (len <= SHORT) {
      for (let i = 0; i < len; i++) {
        const c = v[i] as number;
        b[p++] = c;
        if (c === 0) b[p++] = 0xff;
      }
    } else {
      b.set(v, bodyStart);
      p = escapeInPlace(b, bodyStart, bodyStart + len);
    }
    return this.terminate(p, bodyStart, dir);
  }

  private terminate(p: number, bodyStart: number, dir: Direction): this {
    const b = this.buf;
    b[p++] = 0x00;
    b[p++] = 0x01;
    if (dir === 'desc') for (let i = bodyStart; i < p; i++) b[i] = ~(b[i] as number) & 0xff;
    this.pos = p;
    return this;
  }

  appendDatum(d: KeyDatum, dir: Direction = 'asc'): this {
    switch (d.kind) {
      case 'null':
        return this.appendNull(dir);
      case 'int':
        return this.appendInt(d.value, dir);
      case 'float':
        return this.appendFloat(d.value, dir);
      case 'bool':
        return this.appendBool(d.value, dir);
      case 'bytes':
        return this.appendBytes(d.value, dir);
      case 'string':
        return this.appendString(d.value, dir);
      default:
        return assertNever(d);
    }
  }
}

/**
 * Escapes the 0x00 bytes of b[start, end) in place (each becomes 00 ff),
 * growing the run to the right; the caller reserved the room. Returns the new end.
 */
function escapeInPlace(b: Buffer, start: number, end: number): number {
  let zeros = 0;
  for (let i = start; i < end; i++) if (b[i] === 0) zeros++;
  if (zeros === 0) return end;
  let src = end - 1;
  let dst = end - 1 + zeros;
  const newEnd = end + zeros;
  while (zeros > 0) {
    const c = b[src--] as number;
    if (c === 0) {
      b[dst--] = 0xff;
      b[dst--] = 0x00;
      zeros--;
    } else {
      b[dst--] = c;
    }
  }
  return newEnd;
}

let scratch = Buffer.allocUnsafe(256);
function scratchOf(n: number): Buffer {
  if (scratch.length < n) scratch = Buffer.allocUnsafe(Math.max(n, 2 * scratch.length));
  return scratch;
}
const floatScratch = Buffer.allocUnsafe(8);

// Set by scanBody for its caller: the escapes in the body, and whether any unescaped byte is ≥ 0x80.
let scanEscapes = 0;
let scanHigh = false;

/**
 * Finds the terminator of the escaped bytes/string body starting at `start`
 * (00 01, or ff fe when descending), checking every escape on the way;
 * returns the terminator's offset and sets scanEscapes and scanHigh.
 */
function scanBody(b: Uint8Array, start: number, desc: boolean): number {
  // XOR with `flip` turns a descending body into its ascending form, so one tight loop serves both.
  const flip = desc ? 0xff : 0x00;
  const last = b.length - 1;
  let escapes = 0;
  let acc = 0; // OR of the unescaped bytes
  for (let i = start; i <= last; i++) {
    const c = (b[i] as number) ^ flip;
    if (c !== 0) {
      acc |= c;
      continue;
    }
    if (i === last) throw corruptKey(b, i, 'truncated escaped value');
    const next = (b[i + 1] as number) ^ flip;
    if (next === 0xff) {
      escapes++;
      i++;
    } else if (next === 0x01) {
      scanEscapes = escapes;
      scanHigh = acc >= 0x80;
      return i;
    } else {
      throw corruptKey(b, i, `bad escape ${(b[i] as number).toString(16)} ${(b[i + 1] as number).toString(16)}`);
    }
  }
  throw corruptKey(b, start - 1, 'unterminated bytes or string');
}

/**
 * Reads encoded values one after another from a key, starting at `pos`.
 * Typed reads return null for a NULL of either direction, accept either
 * direction of their kind (the tag says which), and throw CorruptionError on
 * a value of another kind or on malformed bytes.
 */
export class KeyReader {
  pos: number;

  constructor(
    public buf: Buffer,
    pos = 0,
  ) {
    this.pos = pos;
  }

  /** Points the reader at another key, so one reader serves a whole scan without allocating. */
  reset(buf: Buffer, pos = 0): this {
    this.buf = buf;
    this.pos = pos;
    return this;
  }

  /** True when every byte has been read. */
  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  private corrupt(why: string, at = this.pos): Error {
    return corruptKey(this.buf, at, why);
  }

  private tag(): number {
    if (this.pos >= this.buf.length) throw this.corrupt('expected a value, found the end of the key');
    return this.buf[this.pos] as number;
  }

  /** The kind of the next value, without reading it. */
  peekKind(): ValueKind {
    const k = KIND_NAMES[KIND_OF_TAG[this.tag()] as number];
    if (k === undefined) throw this.corrupt(`unknown tag 0x${this.tag().toString(16)}`);
    return k;
  }

  /** The direction of the next value, without reading it. */
  peekDirection(): Direction {
    this.peekKind();
    return isDescTag(this.tag()) ? 'desc' : 'asc';
  }

  /** True (and consumed) when the next value is a NULL of either direction. */
  readNull(): boolean {
    if (KIND_OF_TAG[this.tag()] !== K_NULL) return false;
    this.pos++;
    return true;
  }

  private expect(kind: number): boolean {
    const k = KIND_OF_TAG[this.tag()] as number;
    if (k === kind) return true;
    if (k === K_NULL) {
      this.pos++;
      return false;
    }
    throw this.corrupt(`expected ${KIND_NAMES[kind]}, found tag 0x${this.tag().toString(16)}`);
  }

  /** An int as a number when it is a safe integer, else as a bigint. */
  readInt(): number | bigint | null {
    if (!this.expect(K_INT)) return null;
    const tag = this.tag();
    const w = this.readIntWord(tag);
    if (tag > TAG_INT_DESC_MAX) return w;
    if (typeof w === 'number') {
      const v = -w - 1;
      return Number.isSafeInteger(v) ? v : -BigInt(w) - 1n;
    }
    const v = -w - 1n;
    return v >= MIN_SAFE && v <= MAX_SAFE ? Number(v) : v;
  }

  /** An int, always as a bigint. */
  readIntBig(): bigint | null {
    const v = this.readInt();
    return v === null ? null : BigInt(v);
  }

  /** The int stored under `tag` (before undoing the descending complement). */
  private readIntWord(tag: number): number | bigint {
    const tags = tag > TAG_INT_DESC_MAX ? INT_ASC : INT_DESC;
    const start = this.pos;
    if (tag >= tags.zero && tag <= tags.zero + tags.smallMax) {
      this.pos++;
      return tag - tags.zero;
    }
    const neg = tag < tags.zero;
    const n = neg ? tags.zero - tag : tag - tags.zero - tags.smallMax;
    const b = this.buf;
    if (start + 1 + n > b.length) throw this.corrupt('truncated int');
    let p = start + 1;
    let hi = 0;
    let lo = 0;
    for (let i = n; i > 4; i--) hi = hi * 256 + (b[p++] as number);
    for (let i = Math.min(n, 4); i > 0; i--) lo = lo * 256 + (b[p++] as number);
    this.pos = p;
    const first = b[start + 1] as number;
    if (neg ? n > 1 && first === 0xff : n > 1 ? first === 0 : lo <= tags.smallMax) {
      throw this.corrupt('non-minimal int', start);
    }
    if (n === 8 && (neg ? first < 0x80 : first >= 0x80)) throw this.corrupt('int outside int64', start);
    // v = hi·2^32 + lo (positive) or that minus 256^n (negative); exact whenever it is safe.
    let v: number;
    if (n > 4) v = (neg ? hi - 256 ** (n - 4) : hi) * TWO_POW_32 + lo;
    else v = neg ? lo - 256 ** n : lo;
    if (Number.isSafeInteger(v)) return v;
    const big = (BigInt(hi) << 32n) | BigInt(lo);
    return neg ? big - (1n << BigInt(8 * n)) : big;
  }

  readFloat(): number | null {
    if (!this.expect(K_FLOAT)) return null;
    const tag = this.tag();
    const start = this.pos;
    switch (tag) {
      case TAG_FLOAT_NAN:
      case TAG_FLOAT_NAN_DESC:
        this.pos++;
        return NaN;
      case TAG_FLOAT_ZERO:
      case TAG_FLOAT_ZERO_DESC:
        this.pos++;
        return 0;
    }
    if (start + 9 > this.buf.length) throw this.corrupt('truncated float');
    const neg = tag === TAG_FLOAT_NEG || tag === TAG_FLOAT_NEG_DESC;
    const complemented = tag === TAG_FLOAT_NEG || tag === TAG_FLOAT_POS_DESC;
    let mag: number;
    if (complemented) {
      for (let i = 0; i < 8; i++) floatScratch[i] = ~(this.buf[start + 1 + i] as number) & 0xff;
      mag = floatScratch.readDoubleBE(0);
    } else {
      mag = this.buf.readDoubleBE(start + 1);
    }
    if (!(mag > 0)) throw this.corrupt('non-canonical float', start);
    this.pos = start + 9;
    return neg ? -mag : mag;
  }

  readBool(): boolean | null {
    if (!this.expect(K_BOOL)) return null;
    const tag = this.buf[this.pos++];
    return tag === TAG_TRUE || tag === TAG_TRUE_DESC;
  }

  readString(): string | null {
    if (!this.expect(K_STRING)) return null;
    const desc = this.tag() === TAG_STRING_DESC;
    const start = this.pos + 1;
    const end = scanBody(this.buf, start, desc);
    const high = scanHigh;
    let out: string;
    if (scanEscapes === 0 && !desc) {
      if (high && !isUtf8(this.buf.subarray(start, end))) throw this.corrupt('invalid UTF-8 in string');
      out = this.buf.toString(high ? 'utf8' : 'latin1', start, end);
    } else {
      const tmp = scratchOf(end - start);
      const n = this.unescape(tmp, start, end, desc);
      if (high && !isUtf8(tmp.subarray(0, n))) throw this.corrupt('invalid UTF-8 in string');
      out = tmp.toString(high ? 'utf8' : 'latin1', 0, n);
    }
    this.pos = end + 2;
    return out;
  }

  /** Bytes: a view into the key when no unescaping was needed, else a fresh Buffer. */
  readBytes(): Buffer | null {
    if (!this.expect(K_BYTES)) return null;
    const desc = this.tag() === TAG_BYTES_DESC;
    const start = this.pos + 1;
    const end = scanBody(this.buf, start, desc);
    let out: Buffer;
    if (scanEscapes === 0 && !desc) {
      out = this.buf.subarray(start, end);
    } else {
      out = Buffer.allocUnsafe(end - start - scanEscapes);
      this.unescape(out, start, end, desc);
    }
    this.pos = end + 2;
    return out;
  }

  /** Copies the escaped body b[start, end) into `out` unescaped (and un-complemented); returns its length. */
  private unescape(out: Buffer, start: number, end: number, desc: boolean): number {
    const b = this.buf;
    let o = 0;
    const flip = desc ? 0xff : 0x00;
    for (let i = start; i < end; i++) {
      const c = (b[i] as number) ^ flip;
      out[o++] = c;
      if (c === 0) i++;
    }
    return o;
  }

  /** The next value, whatever its kind. */
  readValue(): DecodedValue {
    const kind = this.peekKind();
    const dir: Direction = isDescTag(this.tag()) ? 'desc' : 'asc';
    let value: KeyValue;
    switch (kind) {
      case 'null':
        this.pos++;
        value = null;
        break;
      case 'int':
        value = this.readInt();
        break;
      case 'float':
        value = this.readFloat();
        break;
      case 'bool':
        value = this.readBool();
        break;
      case 'bytes':
        value = this.readBytes();
        break;
      case 'string':
        value = this.readString();
        break;
      default:
        return assertNever(kind);
    }
    return { kind, dir, value, next: this.pos };
  }

  private take<T extends number | bigint>(d: DecodedVarint<T>): T {
    this.pos = d.next;
    return d.value;
  }

  /** A value varint written by KeyWriter.appendUvarint (not a tuple value: no tag). */
  readUvarint(): number {
    return this.take(getUvarint(this.buf, this.pos));
  }

  readUvarintBig(): bigint {
    return this.take(getUvarintBig(this.buf, this.pos));
  }

  /** A zig-zag value varint written by KeyWriter.appendVarint. */
  readVarint(): number {
    return this.take(getVarint(this.buf, this.pos));
  }

  readVarintBig(): bigint {
    return this.take(getVarintBig(this.buf, this.pos));
  }

  /** Skips the next value without decoding it. */
  skip(): this {
    this.pos += peekLength(this.buf, this.pos);
    return this;
  }
}

const sharedReader = new KeyReader(Buffer.alloc(0));

/** Decodes the value at `offset`: its kind, direction, value and the offset after it. */
export function decodeValue(buf: Buffer, offset = 0): DecodedValue {
  return sharedReader.reset(buf, offset).readValue();
}

/** Decodes every value from `offset` to the end of the key. */
export function decodeValues(buf: Buffer, offset = 0): DecodedValue[] {
  const r = new KeyReader(buf, offset);
  const out: DecodedValue[] = [];
  while (!r.done) out.push(r.readValue());
  return out;
}

/** The encoded length of the value at `offset`, found without decoding it. */
export function peekLength(buf: Uint8Array, offset: number): number {
  if (offset >= buf.length) throw corruptKey(buf, offset, 'expected a value, found the end of the key');
  const tag = buf[offset] as number;
  let n: number;
  switch (KIND_OF_TAG[tag]) {
    case K_NULL:
    case K_BOOL:
      return 1;
    case K_FLOAT:
      n = tag === TAG_FLOAT_NAN || tag === TAG_FLOAT_NAN_DESC || tag === TAG_FLOAT_ZERO || tag === TAG_FLOAT_ZERO_DESC ? 1 : 9;
      break;
    case K_INT: {
      const tags = tag > TAG_INT_DESC_MAX ? INT_ASC : INT_DESC;
      if (tag < tags.zero) n = 1 + tags.zero - tag;
      else if (tag <= tags.zero + tags.smallMax) n = 1;
      else n = 1 + tag - tags.zero - tags.smallMax;
      break;
    }
    case K_BYTES:
    case K_STRING: {
      const desc = tag === TAG_BYTES_DESC || tag === TAG_STRING_DESC;
      return scanBody(buf, offset + 1, desc) + 2 - offset;
    }
    default:
      throw corruptKey(buf, offset, `unknown tag 0x${tag.toString(16)}`);
  }
  if (offset + n > buf.length) throw corruptKey(buf, offset, 'truncated value');
  return n;
}

/** The offset after `count` values starting at `offset` (to split a key into its columns). */
export function skipValues(buf: Uint8Array, offset: number, count: number): number {
  for (let i = 0; i < count; i++) offset += peekLength(buf, offset);
  return offset;
}

const shared = new KeyWriter();

/** One encoded value as its own Buffer (a view into a shared slab). */
export function encodeDatum(d: KeyDatum, dir: Direction = 'asc'): Buffer {
  return shared.reset().appendDatum(d, dir).finish();
}

/** A tuple of values, each in its column's direction (ascending when `dirs` is absent or short). */
export function encodeTuple(datums: readonly KeyDatum[], dirs?: readonly Direction[]): Buffer {
  shared.reset();
  for (let i = 0; i < datums.length; i++) shared.appendDatum(datums[i] as KeyDatum, dirs?.[i] ?? 'asc');
  return shared.finish();
}

export function encodeInt(v: number | bigint, dir: Direction = 'asc'): Buffer {
  return shared.reset().appendInt(v, dir).finish();
}

export function encodeFloat(v: number, dir: Direction = 'asc'): Buffer {
  return shared.reset().appendFloat(v, dir).finish();
}

export function encodeString(v: string, dir: Direction = 'asc'): Buffer {
  return shared.reset().appendString(v, dir).finish();
}

export function encodeBytes(v: Uint8Array, dir: Direction = 'asc'): Buffer {
  return shared.reset().appendBytes(v, dir).finish();
}

/** Decodes the int at `offset` (number when safe, else bigint); NULL decodes to null. */
export function decodeInt(buf: Buffer, offset = 0): { value: number | bigint | null; next: number } {
  const r = sharedReader.reset(buf, offset);
  const value = r.readInt();
  return { value, next: r.pos };
}

/** Decodes the int at `offset` as a bigint; NULL decodes to null. */
export function decodeIntBig(buf: Buffer, offset = 0): { value: bigint | null; next: number } {
  const r = sharedReader.reset(buf, offset);
  const value = r.readIntBig();
  return { value, next: r.pos };
}
