/**
 * YCSB's key hashing: FNV-1a 64-bit over the eight little-endian octets of a
 * record's insertion index, as YCSB's `Utils.fnvhash64(long)`, followed by
 * Java's `Math.abs` on the signed result. Record i is named
 * `"user" + fnvhash64(i)` in decimal (CoreWorkload.buildKeyName with hashed
 * inserts and the default zero padding of 1), so keys are scattered over the
 * key space instead of arriving in order.
 *
 *   val (int64, little-endian octets)   o0 o1 o2 o3 o4 o5 o6 o7
 *   h = 0xcbf29ce484222325
 *   for each octet o:  h = (h XOR o) * 0x100000001b3   (mod 2^64)
 *   result = |h as int64|
 *
 * Two versions with one contract: `fnvhash64` works on four 16-bit limbs in
 * doubles (no allocation, used per operation), `fnvhash64BigInt` is the
 * simple BigInt reference the tests compare it against.
 *
 * Contract: the input is a non-negative safe integer (< 2^53). The output is a
 * non-negative 63-bit integer returned as unsigned 32-bit halves { hi, lo }.
 * Java's Math.abs(Long.MIN_VALUE) stays negative; the limb version returns
 * 2^63 in that case (hi = 0x80000000) — no index below 2^53 is known to
 * hash there, and the tests pin the agreement with the reference.
 */
import { assert } from '../../util/assert.js';

const FNV_OFFSET_BASIS_64 = 0xcbf29ce484222325n;
const FNV_PRIME_64 = 0x100000001b3n;
const MASK_64 = (1n << 64n) - 1n;

/** The 64-bit hash as two unsigned 32-bit halves. */
export interface Hash64 {
  hi: number;
  lo: number;
}

/** Reference implementation (BigInt), for tests. */
export function fnvhash64BigInt(val: number): bigint {
  let v = BigInt(val);
  let h = FNV_OFFSET_BASIS_64;
  for (let i = 0; i < 8; i++) {
    h ^= v & 0xffn;
    v >>= 8n;
    h = (h * FNV_PRIME_64) & MASK_64;
  }
  // Java: Math.abs of the signed 64-bit value.
  if (h >= 1n << 63n) h = (1n << 64n) - h;
  return h;
}

/**
 * FNV-1a 64 of a non-negative safe integer, with Java's Math.abs applied;
 * writes into `out` (reused across calls) and returns it.
 */
export function fnvhash64(val: number, out: Hash64 = { hi: 0, lo: 0 }): Hash64 {
  assert(Number.isSafeInteger(val) && val >= 0, `workload: fnvhash64 needs a non-negative safe integer, got ${val}`);
  let lo32 = val >>> 0;
  let hi32 = Math.floor(val / 4294967296);
  // h as 16-bit limbs, least significant first: 0xcbf2_9ce4_8422_2325.
  let h0 = 0x2325;
  let h1 = 0x8422;
  let h2 = 0x9ce4;
  let h3 = 0xcbf2;
  for (let i = 0; i < 8; i++) {
    const octet = i < 4 ? lo32 & 0xff : hi32 & 0xff;
    if (i < 4) lo32 >>>= 8;
    else hi32 >>>= 8;
    h0 ^= octet;
    // h * (2^40 + 0x1b3) = h*0x1b3 + (h << 40): the shift lands h0 and h1 in
    // limbs 2 and 3 (8 bits up); anything above bit 63 is dropped.
    let r0 = h0 * 0x1b3;
    let r1 = h1 * 0x1b3 + (r0 >>> 16);
    r0 &= 0xffff;
    let r2 = h2 * 0x1b3 + h0 * 256 + (r1 >>> 16);
    r1 &= 0xffff;
    const r3 = h3 * 0x1b3 + h1 * 256 + (r2 >>> 16);
    r2 &= 0xffff;
    h0 = r0;
    h1 = r1;
    h2 = r2;
    h3 = r3 & 0xffff;
  }
  if (h3 & 0x8000) {
    // Two's-complement negation: invert and add one.
    h0 = (~h0 & 0xffff) + 1;
    h1 = (~h1 & 0xffff) + (h0 >>> 16);
    h0 &= 0xffff;
    h2 = (~h2 & 0xffff) + (h1 >>> 16);
    h1 &= 0xffff;
    h3 = ((~h3 & 0xffff) + (h2 >>> 16)) & 0xffff;
    h2 &= 0xffff;
  }
  out.hi = h3 * 65536 + h2;
  out.lo = h1 * 65536 + h0;
  return out;
}

/** (hi·2^32 + lo) mod n, exact for n < 2^37. */
export function hashMod(h: Hash64, n: number): number {
  assert(Number.isInteger(n) && n > 0 && n < 2 ** 37, `workload: hashMod modulus out of range: ${n}`);
  let r = h.hi % n;
  r = (r * 65536 + (h.lo >>> 16)) % n;
  r = (r * 65536 + (h.lo & 0xffff)) % n;
  return r;
}

const scratch: Hash64 = { hi: 0, lo: 0 };

/**
 * The YCSB key of the record with insertion index `index`: "user" + fnvhash64(index)
 * in decimal. The 63-bit value hi·2^32 + lo is printed exactly without BigInt,
 * in base 10^6: 2^32 = 4294·10^6 + 967296, so
 *   value = (hi·4294 + ⌊low/10^6⌋)·10^6 + low mod 10^6,  low = hi·967296 + lo,
 * where low < 2.1·10^15 and the high part < 9.3·10^12 are exact doubles.
 */
export function keyName(index: number): string {
  const h = fnvhash64(index, scratch);
  const low = h.hi * 967296 + h.lo;
  const high = h.hi * 4294 + Math.floor(low / 1e6);
  const rem = low % 1e6;
  if (high === 0) return `user${rem}`;
  return `user${high}${String(rem).padStart(6, '0')}`;
}
