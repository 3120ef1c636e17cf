/**
 * The on-disk layout of MVCC keys: how a (user key, timestamp) pair becomes one
 * LevelDB key. LevelDB compares keys bytewise and `level` offers no custom
 * comparator, so the encoding itself must sort (key ascending, then timestamp
 * descending: newest version first, as DESIGN.md §3 requires).
 *
 *     engine key = escape(userKey) 0x00 0x01 [ ~wall:8 ~logical:4 ]
 *
 *   escape(k):  every 0x00 byte of k becomes 0x00 0xFF; the terminator 0x00 0x01
 *               then sorts below any continuation of k, so for user keys a < b
 *               (bytewise, a a prefix of b included) every engine key of a sorts
 *               below every engine key of b.
 *   no suffix:  the "metadata" key of userKey — where its intent lives, and how
 *               unversioned data (Raft log, hard state, applied state) is stored.
 *               It is a prefix of the versioned keys, so it sorts before them.
 *   suffix:     12 bytes, the bitwise complement of wall (uint64 big-endian) and
 *               logical (uint32 big-endian): larger timestamps sort first.
 *
 * Example: user key "a\x00b" at 1700000000.000001,0 →
 *   61 00ff 62 0001 | ff f9 f5 4f 2f ee 1b fe | ff ff ff ff
 *
 * Decoding rejects any byte string this encoder cannot produce (a 0x00 not
 * followed by 0xFF or the terminator, a suffix of the wrong length) with a
 * CorruptionError naming the key in hex.
 */
import { CorruptionError } from '../src/util/errors.js';
import type { Timestamp } from '../src/util/hlc.js';

export interface MvccKey {
  readonly key: Buffer;
  /** Absent for a metadata / unversioned key. */
  readonly ts?: Timestamp;
}

const SUFFIX_LEN = 12;
const TWO_POW_32 = 4294967296;

function escapedLength(key: Buffer): number {
  let n = key.length;
  for (let i = 0; i < key.length; i++) if (key[i] === 0) n++;
  return n;
}

function writeEscaped(key: Buffer, out: Buffer): number {
  let o = 0;
  for (let i = 0; i < key.length; i++) {
    const b = key[i] as number;
    out[o++] = b;
    if (b === 0) out[o++] = 0xff;
  }
  out[o++] = 0x00;
  out[o++] = 0x01;
  return o;
}

/** The engine key of a user key's metadata (or unversioned) entry, or of one version. */
export function encodeMvccKey(key: Buffer, ts?: Timestamp): Buffer {
  const base = escapedLength(key) + 2;
  const out = Buffer.allocUnsafe(ts === undefined ? base : base + SUFFIX_LEN);
  const o = writeEscaped(key, out);
  if (ts !== undefined) writeTsSuffix(out, o, ts);
  return out;
}

function writeTsSuffix(out: Buffer, o: number, ts: Timestamp): void {
  const hi = Math.floor(ts.wall / TWO_POW_32);
  const lo = ts.wall - hi * TWO_POW_32;
  out.writeUInt32BE(~hi >>> 0, o);
  out.writeUInt32BE(~lo >>> 0, o + 4);
  out.writeUInt32BE(~ts.logical >>> 0, o + 8);
}

/**
 * The version key at `ts` of the user key whose metadata key is `metaKey`
 * (= encodeMvccKey(key)): equal to encodeMvccKey(key, ts), built by copying
 * the already escaped prefix instead of escaping the user key again (the
 * write path has the metadata key in hand for every version it writes).
 */
export function mvccVersionKey(metaKey: Buffer, ts: Timestamp): Buffer {
  const out = Buffer.allocUnsafe(metaKey.length + SUFFIX_LEN);
  metaKey.copy(out, 0);
  writeTsSuffix(out, metaKey.length, ts);
  return out;
}

/**
 * The smallest engine key above every entry (metadata and versions) of `key`:
 * the exclusive upper bound when iterating over one user key's history.
 */
export function mvccKeyHistoryEnd(key: Buffer): Buffer {
  const out = encodeMvccKey(key);
  out[out.length - 1] = 0x02;
  return out;
}

export function decodeMvccKey(engineKey: Buffer): MvccKey {
  const parts: number[] = [];
  let i = 0;
  for (;;) {
    if (i >= engineKey.length) throw corrupt(engineKey, 'missing terminator');
    const b = engineKey[i] as number;
    if (b !== 0) {
      parts.push(b);
      i++;
      continue;
    }
    const next = engineKey[i + 1];
    if (next === 0xff) {
      parts.push(0);
      i += 2;
      continue;
    }
    if (next === 0x01) {
      i += 2;
      break;
    }
    throw corrupt(engineKey, `bad escape 00 ${next === undefined ? 'EOF' : next.toString(16)}`);
  }
  const key = Buffer.from(parts);
  const rest = engineKey.length - i;
  if (rest === 0) return { key };
  if (rest !== SUFFIX_LEN) throw corrupt(engineKey, `timestamp suffix of ${rest} bytes`);
  const hi = ~engineKey.readUInt32BE(i) >>> 0;
  const lo = ~engineKey.readUInt32BE(i + 4) >>> 0;
  const logical = ~engineKey.readUInt32BE(i + 8) >>> 0;
  return { key, ts: { wall: hi * TWO_POW_32 + lo, logical } };
}

/**
 * The timestamp of an engine key whose prefix length is `prefixLen` (from
 * mvccKeyPrefixLen), without decoding its user key; undefined for a metadata
 * key. Throws CorruptionError for a suffix of the wrong length.
 */
export function mvccKeyTs(engineKey: Buffer, prefixLen: number): Timestamp | undefined {
  const rest = engineKey.length - prefixLen;
  if (rest === 0) return undefined;
  if (rest !== SUFFIX_LEN) throw corrupt(engineKey, `timestamp suffix of ${rest} bytes`);
  const hi = ~engineKey.readUInt32BE(prefixLen) >>> 0;
  const lo = ~engineKey.readUInt32BE(prefixLen + 4) >>> 0;
  return { wall: hi * TWO_POW_32 + lo, logical: ~engineKey.readUInt32BE(prefixLen + 8) >>> 0 };
}

function corrupt(engineKey: Buffer, why: string): CorruptionError {
  return new CorruptionError(`storage: corrupt MVCC key ${engineKey.toString('hex')}: ${why}`);
}

/**
 * The length of the escaped-key-plus-terminator prefix of an engine key: the
 * engine key is a metadata key iff the result equals its length. Throws
 * CorruptionError when the terminator is missing.
 */
export function mvccKeyPrefixLen(engineKey: Buffer): number {
  // Short keys (every row of a scan): a JS loop, no native indexOf call per 0x00.
  if (engineKey.length <= 64) {
    for (let j = 0; j < engineKey.length; j++) {
      if (engineKey[j] !== 0) continue;
      const next = engineKey[j + 1];
      if (next === 0x01) return j + 2;
      if (next !== 0xff) throw corrupt(engineKey, `bad escape 00 ${next === undefined ? 'EOF' : next.toString(16)}`);
      j++;
    }
    throw corrupt(engineKey, 'missing terminator');
  }
  let i = engineKey.indexOf(0);
  while (i >= 0) {
    const next = engineKey[i + 1];
    if (next === 0x01) return i + 2;
    if (next !== 0xff) throw corrupt(engineKey, `bad escape 00 ${next === undefined ? 'EOF' : next.toString(16)}`);
    i = engineKey.indexOf(0, i + 2);
  }
  throw corrupt(engineKey, 'missing terminator');
}

/** Whether an engine key is a metadata (unversioned) key rather than a version. */
export function isMvccMetaKey(engineKey: Buffer): boolean {
  return mvccKeyPrefixLen(engineKey) === engineKey.length;
}

/**
 * The user key of an engine key whose prefix length is `prefixLen` (from
 * mvccKeyPrefixLen). When the key holds no 0x00 byte the result is a view
 * into `engineKey` (no copy).
 */
export function mvccUserKey(engineKey: Buffer, prefixLen: number): Buffer {
  const end = prefixLen - 2;
  for (let i = 0; i < end; i++) if (engineKey[i] === 0) return decodeMvccKey(engineKey.subarray(0, prefixLen)).key;
  return engineKey.subarray(0, end);
}
