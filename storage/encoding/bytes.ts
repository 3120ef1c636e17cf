/**
 * Byte-string helpers shared by the tuple encoding and the keyspace: the
 * bytewise order every key obeys, and the successor keys spans are built from.
 *
 * Order: keys compare as unsigned byte strings, lexicographically, a proper
 * prefix sorting before its extensions — LevelDB's default comparator, so the
 * order here is the order on disk.
 *
 * Ownership: every function returns a fresh Buffer unless it says otherwise;
 * inputs are never mutated.
 */
import { CorruptionError } from '../../src/util/errors.js';

/** −1, 0 or 1: the bytewise order of two keys (LevelDB's comparator). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

/** True when the two byte strings are equal. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/**
 * The smallest key above `key` in bytewise order: `key` followed by 0x00.
 * `[key, keyNext(key))` is the span holding exactly `key`.
 */
export function keyNext(key: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(key.length + 1);
  out.set(key, 0);
  out[key.length] = 0;
  return out;
}

/**
 * The smallest key that is above every key having `key` as a prefix: trailing
 * 0xFF bytes are dropped and the last remaining byte is incremented, so
 * `[key, prefixEnd(key))` spans exactly the keys that start with `key`.
 *
 * NB: a key that is empty or made only of 0xFF bytes has no such successor;
 * as in CockroachDB, a copy of the key itself is returned. Within Cairn's
 * keyspace every such span is bounded by KEY_MAX instead (see keys.ts).
 */
export function prefixEnd(key: Uint8Array): Buffer {
  let n = key.length;
  while (n > 0 && key[n - 1] === 0xff) n--;
  if (n === 0) return Buffer.from(key);
  const out = Buffer.allocUnsafe(n);
  out.set(key.subarray(0, n), 0);
  out[n - 1] = (out[n - 1] as number) + 1;
  return out;
}

/** True when `prefix` is a prefix of `key` (every key is a prefix of itself). */
export function hasPrefix(key: Uint8Array, prefix: Uint8Array): boolean {
  if (prefix.length > key.length) return false;
  for (let i = 0; i < prefix.length; i++) if (key[i] !== prefix[i]) return false;
  return true;
}

/** The concatenation of the parts, in one allocation. */
export function concatBytes(...parts: readonly Uint8Array[]): Buffer {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = Buffer.allocUnsafe(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

const MAX_HEX_BYTES = 256;

/** Hex of a key for error messages, cut after 256 bytes. */
export function keyHex(key: Uint8Array): string {
  const b = Buffer.from(key.buffer, key.byteOffset, Math.min(key.length, MAX_HEX_BYTES));
  return key.length > MAX_HEX_BYTES ? `${b.toString('hex')}…(${key.length} bytes)` : b.toString('hex');
}

/** The CorruptionError raised for bytes these decoders cannot have produced; it names the key. */
export function corruptKey(key: Uint8Array, offset: number, why: string): CorruptionError {
  return new CorruptionError(`storage: corrupt key ${keyHex(key)} at offset ${offset}: ${why}`);
}
