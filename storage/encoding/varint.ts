/**
 * Varints for value encodings (not keys: these do NOT sort). Little-endian
 * base-128 groups, the low 7 bits first, the high bit of each byte set when
 * more bytes follow — the protobuf / Go `encoding/binary` layout:
 *
 *     300 = 0b1_0010_1100  →  ac 02
 *           ^ 1010_1100 (low 7 bits | 0x80)   ^ 0000_0010 (next 7 bits)
 *
 * Signed values are zig-zag mapped first (0→0, −1→1, 1→2, −2→3, …) so that
 * small magnitudes stay short: zz(v) = 2v for v ≥ 0, −2v − 1 for v < 0.
 *
 * Range: unsigned values are uint64 (at most 10 bytes), signed values int64.
 * `number` paths take and return safe integers and never allocate a bigint;
 * `…Big` paths cover the full 64 bits. A decoder that meets a value above
 * 2^53 − 1 on the number path throws CorruptionError rather than round it.
 *
 * Invariants: the encoding of a value is canonical (no trailing 0x80 groups);
 * decoders reject non-canonical, truncated and over-long input with a
 * CorruptionError naming the bytes in hex.
 *
 * Ownership: put* write into a caller-owned buffer that must have room
 * (`uvarintSize`); get* never copy.
 */
import { assert } from '../../src/util/assert.js';
import { corruptKey } from './bytes.js';

const TWO_POW_7 = 128;
const MAX_UINT64 = (1n << 64n) - 1n;
const MIN_INT64 = -(1n << 63n);
const MAX_INT64 = (1n << 63n) - 1n;

/** A decoded varint and the offset just after it. */
export interface DecodedVarint<T extends number | bigint = number> {
  readonly value: T;
  readonly next: number;
}

/** Bytes needed for the unsigned varint of a non-negative safe integer. */
export function uvarintSize(n: number): number {
  let size = 1;
  while (n >= TWO_POW_7) {
    n = Math.floor(n / TWO_POW_7);
    size++;
  }
  return size;
}

/** Writes the unsigned varint of a non-negative safe integer at `off`; returns the offset after it. */
export function putUvarint(buf: Uint8Array, off: number, n: number): number {
  if (!(Number.isSafeInteger(n) && n >= 0)) assert(false, `encoding: uvarint of ${n} is not a non-negative safe integer`);
  // Fast path: below 2^31 the bit operators are exact.
  while (n >= 0x80000000) {
    buf[off++] = (n % TWO_POW_7) | 0x80;
    n = Math.floor(n / TWO_POW_7);
  }
  while (n >= 0x80) {
    buf[off++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  buf[off++] = n;
  return off;
}

/** Writes the unsigned varint of a uint64 at `off`; returns the offset after it. */
export function putUvarintBig(buf: Uint8Array, off: number, n: bigint): number {
  if (!(n >= 0n && n <= MAX_UINT64)) assert(false, `encoding: uvarint of ${n} is outside uint64`);
  while (n >= 0x80n) {
    buf[off++] = Number(n & 0x7fn) | 0x80;
    n >>= 7n;
  }
  buf[off++] = Number(n);
  return off;
}

/** Reads an unsigned varint that must fit a safe integer. */
export function getUvarint(buf: Uint8Array, off: number): DecodedVarint<number> {
  let result = 0;
  let scale = 1;
  const start = off;
  for (let i = 0; ; i++) {
    if (off >= buf.length) throw corruptKey(buf, start, 'truncated varint');
    const b = buf[off++] as number;
    result += (b & 0x7f) * scale;
    if (b < 0x80) {
      if (b === 0 && i > 0) throw corruptKey(buf, start, 'non-canonical varint');
      if (result > Number.MAX_SAFE_INTEGER) throw corruptKey(buf, start, 'varint exceeds 2^53 - 1');
      return { value: result, next: off };
    }
    if (i >= 7) throw corruptKey(buf, start, 'varint exceeds 2^53 - 1');
    scale *= TWO_POW_7;
  }
}

/** Reads an unsigned varint of up to 64 bits. */
export function getUvarintBig(buf: Uint8Array, off: number): DecodedVarint<bigint> {
  let result = 0n;
  let shift = 0n;
  const start = off;
  for (let i = 0; i < 10; i++) {
    if (off >= buf.length) throw corruptKey(buf, start, 'truncated varint');
    const b = buf[off++] as number;
    result |= BigInt(b & 0x7f) << shift;
    if (b < 0x80) {
      if (b === 0 && i > 0) throw corruptKey(buf, start, 'non-canonical varint');
      if (result > MAX_UINT64) throw corruptKey(buf, start, 'varint exceeds 64 bits');
      return { value: result, next: off };
    }
    shift += 7n;
  }
  throw corruptKey(buf, start, 'varint longer than 10 bytes');
}

/** Zig-zag: maps a signed safe integer to a non-negative one (may reach 2^54 − 1, exact in a double). */
function zigzag(n: number): number {
  return n >= 0 ? n * 2 : -n * 2 - 1;
}

/** Bytes needed for the signed (zig-zag) varint of a safe integer. */
export function varintSize(n: number): number {
  return uvarintSize(zigzag(n));
}

/** Writes the zig-zag varint of a safe integer at `off`; returns the offset after it. */
export function putVarint(buf: Uint8Array, off: number, n: number): number {
  if (!Number.isSafeInteger(n)) assert(false, `encoding: varint of ${n} is not a safe integer`);
  const z = zigzag(n);
  if (z <= Number.MAX_SAFE_INTEGER) return putUvarint(buf, off, z);
  // |n| ≥ 2^52: zigzag(n) is past the exact range of a double, take the bigint path.
  return putVarintBig(buf, off, BigInt(n));
}

/** Writes the zig-zag varint of an int64 at `off`; returns the offset after it. */
export function putVarintBig(buf: Uint8Array, off: number, n: bigint): number {
  if (!(n >= MIN_INT64 && n <= MAX_INT64)) assert(false, `encoding: varint of ${n} is outside int64`);
  return putUvarintBig(buf, off, n >= 0n ? n << 1n : (-n << 1n) - 1n);
}

/** Reads a zig-zag varint that must decode to a safe integer. */
export function getVarint(buf: Uint8Array, off: number): DecodedVarint<number> {
  // Fast path: up to 7 bytes (zig-zag value below 2^49) decode exactly in a double.
  let zz = 0;
  let scale = 1;
  for (let i = 0, o = off; i < 7 && o < buf.length; i++) {
    const b = buf[o++] as number;
    zz += (b & 0x7f) * scale;
    if (b < 0x80) {
      if (b === 0 && i > 0) throw corruptKey(buf, off, 'non-canonical varint');
      return { value: zz % 2 === 0 ? zz / 2 : -(zz + 1) / 2, next: o };
    }
    scale *= TWO_POW_7;
  }
  const big = getUvarintBig(buf, off);
  const z = big.value;
  const v = (z & 1n) === 0n ? z >> 1n : -((z + 1n) >> 1n);
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw corruptKey(buf, off, 'varint outside the safe integer range');
  }
  return { value: Number(v), next: big.next };
}

/** Reads a zig-zag varint of up to 64 bits. */
export function getVarintBig(buf: Uint8Array, off: number): DecodedVarint<bigint> {
  const big = getUvarintBig(buf, off);
  const z = big.value;
  return { value: (z & 1n) === 0n ? z >> 1n : -((z + 1n) >> 1n), next: big.next };
}
