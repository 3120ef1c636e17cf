/**
 * The byte formats of MVCC values: the per-key *head* record and the
 * historical *version* value. This is the only encoder/decoder of both.
 *
 * Why a head (the read path must be one getSync in the common case): an
 * iterator costs ~135 µs to create in LevelDB, a getSync ~10 µs. So the
 * metadata engine key of every user key (`encodeMvccKey(key)`, no timestamp)
 * holds a head: the intent if any, the newest committed version, and an index
 * of the next older versions (timestamp + value length), at most mvcc.ts's
 * history index limit (default 16) of them. Older versions live at their
 * versioned engine keys (`encodeMvccKey(key, ts)`), newest first. A read of
 * an indexed version is one getSync more (the index names the exact version
 * key); only a read below the index (the *tail*, summarised in the head by
 * count and value bytes) seeks an iterator. The cap keeps a hot key's head
 * small however many versions accumulate before GC.
 *
 * Inline or out of line (issue 2, overwrite cost). The newest committed value
 * is either *inline* in the head — a current read is then ONE getSync — or
 * *out of line*: written once at its own version key, the head keeping its
 * timestamp and length, and a current read is two getSyncs of adjacent keys
 * (the second finds its block cached). mvcc.ts chooses per write by value
 * size (its inline value limit). Why it matters: an inline value is written
 * twice over its life — in the head when written, again at its version key
 * when a newer write displaces it — and LevelDB's compaction cost follows the
 * bytes written (measured, bench/storage.ts header: 60 µs of background CPU
 * per 1 KB MVCC overwrite inline against 20 µs out of line, 8.5 µs for a raw
 * put). An out-of-line value is written once and never moved: displacing it
 * writes nothing.
 *
 *     inline                           out of line
 *     "k"       -> head: ts1 value1    "k"       -> head: ts1 len1
 *     "k"/ts0   -> value0               "k"/ts1   -> value1   (written by the put at ts1)
 *                                       "k"/ts0   -> value0
 *     put at ts2 writes:                put at ts2 writes:
 *       "k"     -> head: ts2 value2      "k"     -> head: ts2 len2   (small)
 *       "k"/ts1 -> value1  (moved)       "k"/ts2 -> value2           (once)
 *
 * Invariant: every committed version except an inline newest one is stored
 * at its version key, and the version stored right after a head is its
 * out-of-line newest version when there is one (it has the largest timestamp
 * of the stored versions), which is what lets a scan take it from the
 * iterator instead of a getSync.
 *
 * Head layout (all integers uvarint unless noted; ts = wall logical):
 *
 *     head     = xxh32:u32le  body
 *     body     = version:u8(=1) flags:u8
 *                [committed]                       flags & COMMITTED
 *                histCount { ts vlen }*            older versions, newest first
 *                [tailCount tailValBytes]          flags & TAIL: versions below the index
 *                [intent]                          flags & INTENT
 *     committed = ts [valLen value]                inline; value absent iff flags & TOMBSTONE
 *               | ts valLen                        flags & OUT_OF_LINE: value at "k"/ts
 *     vlen      = value length + 1, or 0 for a tombstone
 *     flags     = COMMITTED 1 | TOMBSTONE 2 | INTENT 4 | MIN_TS 8 | TAIL 16 | OUT_OF_LINE 32
 *     intent    = txnId:16 bytes  epoch  writeTs  [minTs (flags & MIN_TS)]
 *                 sequence  anchorLen anchor  priority
 *                 nWrites { seq kind:u8 [valLen value] }*     ascending seq;
 *                 kind 0 = tombstone, 1 = value; the last is the current
 *                 provisional value, earlier ones serve savepoint reads.
 *
 * Version layout (the value at `encodeMvccKey(key, ts)`):
 *
 *     version  = xxh32:u32le  kind:u8 (0 tombstone | 1 value)  value
 *
 * Checksums are xxhash32 of the body seeded with FNV-1a of the engine key
 * (one wasm call per value), so a value copied under another key or version
 * also fails. A bad checksum,
 * a truncated or malformed body raises CorruptionError naming the key; a
 * corrupt value is never returned.
 *
 * xxhash-wasm initialises asynchronously; this module awaits it at load
 * (top-level await), so importing it is enough. `initStorage()` is kept as an
 * explicit, idempotent hook for callers that prefer to await it.
 */
import xxhash from 'xxhash-wasm';
import { CorruptionError } from '../src/util/errors.js';
import { assert } from '../src/util/assert.js';
import { formatTimestamp, type Timestamp } from '../src/util/hlc.js';
import { decodeMvccKey } from './mvcc-key.js';

const hasher = await xxhash();

/** Resolves once the storage layer's hashing is ready (it already is once imported). */
export function initStorage(): Promise<void> {
  return Promise.resolve();
}

/** A transaction's metadata as an intent carries it (CockroachDB's enginepb.TxnMeta). */
export interface TxnMeta {
  /** 16 bytes. */
  readonly id: Buffer;
  readonly epoch: number;
  /** The intent's provisional timestamp. */
  readonly writeTimestamp: Timestamp;
  readonly minTimestamp?: Timestamp;
  readonly sequence: number;
  /** The anchor key: where the transaction record lives. */
  readonly key: Buffer;
  readonly priority?: number;
}

/** One write of an intent at a sequence number; value null is a deletion. */
export interface IntentWrite {
  readonly seq: number;
  readonly value: Buffer | null;
}

export interface IntentRecord {
  readonly txn: TxnMeta;
  /** Ascending by seq; never empty; the last is the provisional value. */
  readonly writes: readonly IntentWrite[];
}

export interface CommittedVersion {
  readonly ts: Timestamp;
  /** null: a tombstone. */
  readonly value: Buffer | null;
}

/**
 * The head's newest committed version when its value is stored out of line,
 * at its version key (`encodeMvccKey(key, ts)`): the head knows its length
 * only. Never a tombstone (a tombstone has no bytes to move out).
 */
export interface OutOfLineVersion {
  readonly ts: Timestamp;
  readonly value: undefined;
  /** Value length. */
  readonly len: number;
}

/** The newest committed version as a head holds it: inline, or out of line. */
export type HeadVersion = CommittedVersion | OutOfLineVersion;

/** A version's value length, -1 for a tombstone. */
export function versionLen(v: HeadVersion): number {
  return v.value === undefined ? v.len : v.value === null ? -1 : v.value.length;
}

export interface HistoryEntry {
  readonly ts: Timestamp;
  /** Value length, or -1 for a tombstone. */
  readonly len: number;
}

/** The versions older than the head's index: only counted, not indexed. */
export interface HistoryTail {
  readonly count: number;
  /** Σ value lengths (tombstones count 0). */
  readonly valBytes: number;
}

export interface Head {
  readonly committed: HeadVersion | null;
  /** Older committed versions, newest first, all below committed.ts. */
  readonly history: readonly HistoryEntry[];
  /** Versions older than every indexed one, or null when the index is complete. */
  readonly tail: HistoryTail | null;
  readonly intent: IntentRecord | null;
}

const HEAD_VERSION = 1;
const F_COMMITTED = 1;
const F_TOMBSTONE = 2;
const F_INTENT = 4;
const F_MIN_TS = 8;
const F_TAIL = 16;
const F_OUT_OF_LINE = 32;
export const TXN_ID_LEN = 16;

/** FNV-1a of the engine key: binds a checksum to its key without a second wasm call. */
function keySeed(engineKey: Buffer): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < engineKey.length; i++) h = Math.imul(h ^ (engineKey[i] as number), 0x01000193);
  return h >>> 0;
}

function checksum(engineKey: Buffer, body: Uint8Array): number {
  return hasher.h32Raw(body, keySeed(engineKey));
}

// --- writing ---------------------------------------------------------------

/** The buffer encodeHead is writing (sized by headSizeBound) and the position in it. */
const EMPTY = Buffer.alloc(0);
let scratch = EMPTY;
let pos = 0;

function ensure(n: number): void {
  if (pos + n > scratch.length) assert(false, 'storage: head size bound exceeded');
}

function putByte(b: number): void {
  ensure(1);
  scratch[pos++] = b;
}

function putUvarint(n: number): void {
  // The message is built only on failure: a template literal per call was
  // the largest cost of encodeHead.
  if (!(n >= 0 && Number.isSafeInteger(n))) assert(false, `storage: uvarint out of range: ${n}`);
  ensure(8);
  while (n >= 0x80) {
    scratch[pos++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  scratch[pos++] = n;
}

function putBytes(b: Buffer): void {
  ensure(b.length);
  pos += b.copy(scratch, pos);
}

function putLenBytes(b: Buffer): void {
  putUvarint(b.length);
  putBytes(b);
}

function putTs(t: Timestamp): void {
  putUvarint(t.wall);
  putUvarint(t.logical);
}

/**
 * An upper bound on a head's encoded size (a uvarint takes at most 8 bytes
 * for a safe integer), so encodeHead writes straight into its output buffer:
 * the committed value is copied once.
 */
function headSizeBound(h: Head): number {
  let n = 4 + 2 + 8;
  if (h.committed !== null) n += 16 + 8 + (h.committed.value?.length ?? 0);
  n += h.history.length * 24;
  if (h.tail !== null) n += 16;
  const it = h.intent;
  if (it !== null) {
    n += TXN_ID_LEN + 8 + 16 + 16 + 8 + 8 + it.txn.key.length + 8 + 8;
    for (const w of it.writes) n += 8 + 1 + 8 + (w.value?.length ?? 0);
  }
  return n;
}

/** Encodes a head stored at `metaKey` (= encodeMvccKey(userKey)). */
export function encodeHead(metaKey: Buffer, h: Head): Buffer {
  assert(h.committed !== null || h.intent !== null, 'storage: a head holds a committed version or an intent');
  const out = Buffer.allocUnsafe(headSizeBound(h));
  scratch = out;
  pos = 4;
  encodeHeadBody(h);
  scratch = EMPTY;
  out.writeUInt32LE(checksum(metaKey, new Uint8Array(out.buffer, out.byteOffset + 4, pos - 4)), 0);
  return out.subarray(0, pos);
}

function encodeHeadBody(h: Head): void {
  putByte(HEAD_VERSION);
  let flags = 0;
  const c = h.committed;
  if (c !== null) flags |= F_COMMITTED;
  if (c !== null && c.value === null) flags |= F_TOMBSTONE;
  if (c !== null && c.value === undefined) flags |= F_OUT_OF_LINE;
  if (h.intent !== null) flags |= F_INTENT;
  if (h.intent?.txn.minTimestamp !== undefined) flags |= F_MIN_TS;
  if (h.tail !== null) flags |= F_TAIL;
  putByte(flags);
  if (c !== null) {
    putTs(c.ts);
    if (c.value === undefined) putUvarint(c.len);
    else if (c.value !== null) putLenBytes(c.value);
  }
  putUvarint(h.history.length);
  for (const e of h.history) {
    putTs(e.ts);
    putUvarint(e.len + 1);
  }
  if (h.tail !== null) {
    assert(h.tail.count > 0, 'storage: an empty history tail is null');
    putUvarint(h.tail.count);
    putUvarint(h.tail.valBytes);
  }
  const it = h.intent;
  if (it !== null) {
    assert(it.txn.id.length === TXN_ID_LEN, 'storage: txn id must be 16 bytes');
    assert(it.writes.length > 0, 'storage: an intent has at least one write');
    putBytes(it.txn.id);
    putUvarint(it.txn.epoch);
    putTs(it.txn.writeTimestamp);
    if (it.txn.minTimestamp !== undefined) putTs(it.txn.minTimestamp);
    putUvarint(it.txn.sequence);
    putLenBytes(it.txn.key);
    putUvarint(it.txn.priority ?? 0);
    putUvarint(it.writes.length);
    for (const w of it.writes) {
      putUvarint(w.seq);
      putByte(w.value === null ? 0 : 1);
      if (w.value !== null) putLenBytes(w.value);
    }
  }
}

/** Encodes a historical version stored at `versionKey` (= encodeMvccKey(userKey, ts)). */
export function encodeVersion(versionKey: Buffer, value: Buffer | null): Buffer {
  const out = Buffer.allocUnsafe(5 + (value?.length ?? 0));
  out[4] = value === null ? 0 : 1;
  if (value !== null) value.copy(out, 5);
  out.writeUInt32LE(checksum(versionKey, new Uint8Array(out.buffer, out.byteOffset + 4, out.length - 4)), 0);
  return out;
}

// --- reading ---------------------------------------------------------------

/** A cursor over one value; decodeHead reuses a single instance (decoding is synchronous). */
class Decoder {
  o = 5;
  buf: Buffer = Buffer.alloc(0);
  engineKey: Buffer = Buffer.alloc(0);

  reset(buf: Buffer, engineKey: Buffer): this {
    this.buf = buf;
    this.engineKey = engineKey;
    this.o = 5;
    return this;
  }

  fail(why: string): CorruptionError {
    return new CorruptionError(`storage: corrupt MVCC value at ${prettyEngineKey(this.engineKey)}: ${why}`);
  }

  byte(): number {
    if (this.o >= this.buf.length) throw this.fail('truncated');
    return this.buf[this.o++] as number;
  }

  uvarint(): number {
    let n = 0;
    let mul = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.byte();
      n += (b & 0x7f) * mul;
      if (b < 0x80) return n;
      mul *= 128;
    }
    throw this.fail('varint too long');
  }

  bytes(len: number): Buffer {
    if (this.o + len > this.buf.length) throw this.fail('truncated');
    const b = this.buf.subarray(this.o, this.o + len);
    this.o += len;
    return b;
  }

  lenBytes(): Buffer {
    return this.bytes(this.uvarint());
  }

  ts(): Timestamp {
    const wall = this.uvarint();
    return { wall, logical: this.uvarint() };
  }
}

const decoder = new Decoder();

function verify(engineKey: Buffer, buf: Buffer): void {
  if (buf.length < 5) throw new CorruptionError(`storage: corrupt MVCC value at ${prettyEngineKey(engineKey)}: truncated (${buf.length} bytes)`);
  // A plain Uint8Array view: cheaper to make than Buffer#subarray's FastBuffer, and all the hasher needs.
  if (buf.readUInt32LE(0) !== checksum(engineKey, new Uint8Array(buf.buffer, buf.byteOffset + 4, buf.length - 4))) {
    throw new CorruptionError(`storage: corrupt MVCC value at ${prettyEngineKey(engineKey)}: checksum mismatch`);
  }
}

/** Decodes and verifies a head. Returned buffers are views into `buf`. */
export function decodeHead(metaKey: Buffer, buf: Buffer): Head {
  verify(metaKey, buf);
  const d = decoder.reset(buf, metaKey);
  if (buf[4] !== HEAD_VERSION) throw d.fail(`unknown head version ${buf[4]}`);
  const flags = d.byte();
  let committed: HeadVersion | null = null;
  if (flags & F_COMMITTED) {
    const ts = d.ts();
    if (flags & F_OUT_OF_LINE) {
      if (flags & F_TOMBSTONE) throw d.fail('an out-of-line tombstone');
      committed = { ts, value: undefined, len: d.uvarint() };
    } else committed = { ts, value: flags & F_TOMBSTONE ? null : d.lenBytes() };
  } else if (flags & F_OUT_OF_LINE) throw d.fail('out-of-line flag without a committed version');
  const nHist = d.uvarint();
  const history: HistoryEntry[] = new Array<HistoryEntry>(nHist);
  for (let i = 0; i < nHist; i++) {
    const ts = d.ts();
    history[i] = { ts, len: d.uvarint() - 1 };
  }
  let tail: HistoryTail | null = null;
  if (flags & F_TAIL) {
    const count = d.uvarint();
    if (count === 0) throw d.fail('empty history tail');
    tail = { count, valBytes: d.uvarint() };
  }
  let intent: IntentRecord | null = null;
  if (flags & F_INTENT) {
    const id = d.bytes(TXN_ID_LEN);
    const epoch = d.uvarint();
    const writeTimestamp = d.ts();
    const minTimestamp = flags & F_MIN_TS ? d.ts() : undefined;
    const sequence = d.uvarint();
    const key = d.lenBytes();
    const priority = d.uvarint();
    const n = d.uvarint();
    if (n === 0) throw d.fail('intent without writes');
    const writes: IntentWrite[] = new Array<IntentWrite>(n);
    for (let i = 0; i < n; i++) {
      const seq = d.uvarint();
      const kind = d.byte();
      if (kind > 1) throw d.fail(`bad write kind ${kind}`);
      writes[i] = { seq, value: kind === 1 ? d.lenBytes() : null };
    }
    const txn: TxnMeta = minTimestamp === undefined ? { id, epoch, writeTimestamp, sequence, key, priority } : { id, epoch, writeTimestamp, minTimestamp, sequence, key, priority };
    intent = { txn, writes };
  }
  if (d.o !== buf.length) throw d.fail(`${buf.length - d.o} trailing bytes`);
  if (committed === null && intent === null) throw d.fail('empty head');
  return { committed, history, tail, intent };
}

/** Decodes and verifies a version value: the value, or null for a tombstone. */
export function decodeVersion(versionKey: Buffer, buf: Buffer): Buffer | null {
  verify(versionKey, buf);
  const kind = buf[4];
  if (kind === 0) {
    if (buf.length !== 5) throw new CorruptionError(`storage: corrupt MVCC value at ${prettyEngineKey(versionKey)}: tombstone with a body`);
    return null;
  }
  if (kind !== 1) throw new CorruptionError(`storage: corrupt MVCC value at ${prettyEngineKey(versionKey)}: bad kind ${kind}`);
  return buf.subarray(5);
}

// --- printing --------------------------------------------------------------

/** "abc" for printable ASCII, else 0x-hex. */
export function prettyKey(k: Buffer): string {
  for (let i = 0; i < k.length; i++) {
    const c = k[i] as number;
    if (c < 0x20 || c > 0x7e || c === 0x22) return `0x${k.toString('hex')}`;
  }
  return `"${k.toString('latin1')}"`;
}

/** A user key and version as `"a"/5.000000,0`, decoded from an engine key when possible. */
export function prettyEngineKey(engineKey: Buffer): string {
  try {
    const k = decodeMvccKey(engineKey);
    return k.ts === undefined ? prettyKey(k.key) : `${prettyKey(k.key)}/${formatTimestamp(k.ts)}`;
  } catch {
    return `0x${engineKey.toString('hex')}`;
  }
}
