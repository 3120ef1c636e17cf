/**
 * The storage Engine interface: an ordered byte-key → byte-value store with
 * atomic write batches, bounded forward/reverse iterators and consistent
 * snapshots. Two implementations pass one conformance suite
 * (test/storage/engine.test.ts): LevelEngine (LevelDB through `level` /
 * classic-level, level-engine.ts) and MemoryEngine (memory-engine.ts).
 *
 * Also here, because both engines and MVCC share them:
 *   - SkipList: the ordered structure (O(log n) seek, doubly linked at level 0)
 *     under the memory engine and under every batch's index;
 *   - WriteBatch: an *indexed* batch that reads its own writes. It is the
 *     ReadWriter MVCC write commands evaluate into (DESIGN.md §1): getSync
 *     looks in the batch first, then in the engine; iterators merge the
 *     batch's pending keys with an engine iterator (batch wins on equal keys,
 *     a pending delete hides the engine's entry);
 *   - the batch repr: the batch's operations as bytes, so replication ships
 *     them in a Raft entry and followers apply them with
 *     engine.applyBatchRepr without re-evaluating.
 *
 * Batch repr layout (ops sorted by key, one op per key — the last write wins
 * inside a batch, so the deduplicated form applies identically):
 *
 *     repr = 'C' 'B' version:u8(=1) count:uvarint op*
 *     op   = kind:u8 keyLen:uvarint key [valLen:uvarint value]   (value iff kind = PUT)
 *     kind = 0x01 PUT | 0x00 DELETE
 *
 * A truncated or malformed repr raises CorruptionError (`storage.corruption`).
 *
 * Contracts:
 *   - Point reads are synchronous (getSync) or batched (getMany: one trip to
 *     the LevelDB thread pool for many keys); iteration is asynchronous in
 *     chunks (nextBatch(n)), never one await per key.
 *   - WriteBatch.prefetch(keys) reads keys ahead with one getMany so that a
 *     batch of commands evaluates without a getSync per key.
 *   - An iterator sees a consistent view as of its creation (LevelDB's
 *     implicit snapshot); a Snapshot sees the engine as of snapshot() until
 *     closed. Buffers returned by reads must be treated as read-only (the
 *     memory engine and batches return the buffers they store).
 *   - Bounds are [gte, lt); a reverse iterator yields the same entries in
 *     descending order.
 *   - Buffers passed to put/delete must not be mutated afterwards (batches
 *     keep references, not copies).
 *
 * Ownership: the engine owns its files / memory; callers own batches,
 * iterators and snapshots and must close the latter two.
 */
import { CairnError, CorruptionError } from '../src/util/errors.js';
import { assert } from '../src/util/assert.js';

export interface Entry {
  readonly key: Buffer;
  readonly value: Buffer;
}

export interface IterOptions {
  /** Inclusive lower bound. */
  readonly gte?: Buffer;
  /** Exclusive upper bound. */
  readonly lt?: Buffer;
  readonly reverse?: boolean;
}

export interface EngineIterator {
  /** Up to `max` next entries in iteration order; an empty array once exhausted. */
  nextBatch(max: number): Promise<Entry[]>;
  /**
   * Forward iterators that offer it: the next entry returned is the first at
   * or after `key` (still within the bounds, as of the iterator's view) —
   * synchronous, no new iterator. Not to be called while a nextBatch is
   * pending. MVCC scans use it to skip a key's long history.
   */
  seek?(key: Buffer): void;
  close(): Promise<void>;
}

/** Synchronous point reads, asynchronous batched point reads, asynchronous bounded iteration. */
export interface Reader {
  getSync(key: Buffer): Buffer | undefined;
  /**
   * Many point reads in one call (LevelDB: one trip through the libuv pool,
   * the reads running off the JS thread). Results align with `keys`.
   */
  getMany(keys: readonly Buffer[]): Promise<(Buffer | undefined)[]>;
  iterator(opts: IterOptions): EngineIterator;
}

export interface Writer {
  put(key: Buffer, value: Buffer): void;
  delete(key: Buffer): void;
}

/** What MVCC write commands evaluate into: an engine view plus a pending batch. */
export interface ReadWriter extends Reader, Writer {}

export interface Snapshot extends Reader {
  close(): Promise<void>;
}

export interface WriteOptions {
  /** fsync before acknowledging (LevelDB); the memory engine ignores it. */
  readonly sync?: boolean;
}

export interface Engine extends Reader {
  get(key: Buffer): Promise<Buffer | undefined>;
  put(key: Buffer, value: Buffer, opts?: WriteOptions): Promise<void>;
  delete(key: Buffer, opts?: WriteOptions): Promise<void>;
  /** A new indexed batch that reads through to this engine. */
  newBatch(): WriteBatch;
  /** Applies the batch atomically. The batch may be discarded afterwards. */
  write(batch: WriteBatch, opts?: WriteOptions): Promise<void>;
  /** Applies a batch shipped as its repr (a follower applying a Raft entry). */
  applyBatchRepr(repr: Buffer, opts?: WriteOptions): Promise<void>;
  snapshot(): Snapshot;
  /** Approximate bytes stored in [start, end). */
  approximateSize(start: Buffer, end: Buffer): Promise<number>;
  close(): Promise<void>;
}

/** A store directory already held by another process (LevelDB's LOCK). */
export class StoreLockedError extends CairnError {
  override name = 'StoreLockedError';
  constructor(dir: string, cause?: unknown) {
    super('storage.locked', `storage: store directory ${dir} is in use by another process (its LevelDB LOCK is held); stop that process or choose another directory`, { sqlState: '55006', cause });
  }
}

export class EngineClosedError extends CairnError {
  override name = 'EngineClosedError';
  constructor() {
    super('storage.closed', 'storage: engine is closed');
  }
}

// ---------------------------------------------------------------------------
// SkipList

/**
 * Bytewise comparison. A JS loop beats Buffer.compare (a native call) 3–5×
 * on the short keys MVCC uses; long keys go to the native compare.
 */
export function compareKeys(a: Buffer, b: Buffer): number {
  const n = a.length < b.length ? a.length : b.length;
  if (n > 64) return Buffer.compare(a, b);
  for (let i = 0; i < n; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

const MAX_LEVEL = 24;
const EMPTY_KEY = Buffer.alloc(0);

export class SkipNode<V> {
  readonly next: (SkipNode<V> | null)[];
  prev: SkipNode<V> | null = null;
  constructor(
    readonly key: Buffer,
    public value: V,
    level: number,
  ) {
    this.next = new Array<SkipNode<V> | null>(level).fill(null);
  }
}

/**
 * The search path of the set/delete in progress: the last node < key at each
 * level. Shared by every SkipList — set and delete fill it and use it within
 * one synchronous call, so no two lists ever hold it at once — instead of a
 * 24-slot array per list (a WriteBatch builds a list per batch, most of them
 * small: session 8 counted ~5.7 KiB of a SQL UPDATE's ~130 KiB in empty or
 * near-empty batch indexes).
 */
const searchPath: (SkipNode<unknown> | null)[] = new Array<SkipNode<unknown> | null>(MAX_LEVEL).fill(null);

/**
 * An ordered map keyed by Buffer (bytewise order) with O(log n) expected seek,
 * insert and delete. Level 0 is doubly linked for reverse iteration. Level
 * choice uses a fixed-seed xorshift, so the structure is deterministic.
 *
 * The head's next array grows with the list's level (a list of n entries
 * reaches level ~log4 n, not MAX_LEVEL); the search path is module-wide
 * (searchPath).
 */
export class SkipList<V> {
  private readonly head = new SkipNode<V>(EMPTY_KEY, undefined as V, 1);
  private tail: SkipNode<V> | null = null;
  private level = 1;
  private rnd = 0x9e3779b9;
  private readonly update = searchPath as (SkipNode<V> | null)[];
  size = 0;

  private randomLevel(): number {
    let l = 1;
    for (;;) {
      let x = this.rnd;
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      this.rnd = x >>> 0;
      if ((this.rnd & 3) !== 0 || l >= MAX_LEVEL) return l;
      l++;
    }
  }

  /** Fills `update` with the last node < key at each level; returns the first node ≥ key. */
  private findGE(key: Buffer, fillUpdate: boolean): SkipNode<V> | null {
    let x = this.head;
    for (let i = this.level - 1; i >= 0; i--) {
      for (;;) {
        const n = x.next[i] as SkipNode<V> | null;
        if (n === null || compareKeys(n.key, key) >= 0) break;
        x = n;
      }
      if (fillUpdate) this.update[i] = x;
    }
    return x.next[0] as SkipNode<V> | null;
  }

  get(key: Buffer): SkipNode<V> | null {
    const n = this.findGE(key, false);
    return n !== null && compareKeys(n.key, key) === 0 ? n : null;
  }

  /** Inserts or replaces; returns the node. */
  set(key: Buffer, value: V): SkipNode<V> {
    const found = this.findGE(key, true);
    if (found !== null && compareKeys(found.key, key) === 0) {
      this.releasePath();
      found.value = value;
      return found;
    }
    const lvl = this.randomLevel();
    if (lvl > this.level) {
      for (let i = this.level; i < lvl; i++) {
        if (i >= this.head.next.length) this.head.next.push(null);
        this.update[i] = this.head;
      }
      this.level = lvl;
    }
    const node = new SkipNode<V>(key, value, lvl);
    for (let i = 0; i < lvl; i++) {
      const u = this.update[i] as SkipNode<V>;
      node.next[i] = u.next[i] as SkipNode<V> | null;
      u.next[i] = node;
    }
    const before = this.update[0] as SkipNode<V>;
    node.prev = before === this.head ? null : before;
    if (found !== null) found.prev = node;
    else this.tail = node;
    this.size++;
    this.releasePath();
    return node;
  }

  /** Clears the shared search path, so that it keeps no node of this list (and its buffers) alive. */
  private releasePath(): void {
    for (let i = 0; i < this.level; i++) this.update[i] = null;
  }

  delete(key: Buffer): boolean {
    const found = this.findGE(key, true);
    if (found === null || compareKeys(found.key, key) !== 0) {
      this.releasePath();
      return false;
    }
    for (let i = 0; i < found.next.length; i++) {
      const u = this.update[i] as SkipNode<V>;
      if (u.next[i] === found) u.next[i] = found.next[i] as SkipNode<V> | null;
    }
    this.releasePath();
    const after = found.next[0] as SkipNode<V> | null;
    if (after !== null) after.prev = found.prev;
    else this.tail = found.prev;
    while (this.level > 1 && this.head.next[this.level - 1] === null) this.level--;
    this.size--;
    return true;
  }

  first(): SkipNode<V> | null {
    return this.head.next[0] as SkipNode<V> | null;
  }

  last(): SkipNode<V> | null {
    return this.tail;
  }

  seekGE(key: Buffer): SkipNode<V> | null {
    return this.findGE(key, false);
  }

  /** The last node with key < `key`. */
  seekLT(key: Buffer): SkipNode<V> | null {
    const ge = this.findGE(key, false);
    return ge === null ? this.tail : ge.prev;
  }

  /** The first node in iteration order within bounds, for a cursor. */
  start(opts: IterOptions): SkipNode<V> | null {
    if (opts.reverse) return opts.lt !== undefined ? this.seekLT(opts.lt) : this.tail;
    return opts.gte !== undefined ? this.seekGE(opts.gte) : this.first();
  }
}

/** Whether `key` is still inside the bounds on the side iteration moves towards. */
export function withinBounds(key: Buffer, opts: IterOptions): boolean {
  if (opts.reverse) return opts.gte === undefined || compareKeys(key, opts.gte) >= 0;
  return opts.lt === undefined || compareKeys(key, opts.lt) < 0;
}

// ---------------------------------------------------------------------------
// WriteBatch

/** A pending op: the value to put, or null for a delete. */
type Pending = Buffer | null;

export interface BatchOp {
  readonly key: Buffer;
  /** null: delete. */
  readonly value: Buffer | null;
}

/**
 * An indexed write batch over a Reader (the engine). Reads see the batch's own
 * writes layered over the engine. Not thread-safe (one evaluating command).
 */
export class WriteBatch implements ReadWriter {
  /** The pending ops by key; built at the first write (many batches stay empty: read-only commands, no-op rounds). */
  private index: SkipList<Pending> | null = null;
  private bytes = 0;
  /** Engine values read ahead by prefetch, keyed by latin1 key; null: absent. */
  private readAhead: Map<string, Buffer | null> | null = null;

  constructor(private readonly base: Reader) {}

  put(key: Buffer, value: Buffer): void {
    (this.index ??= new SkipList<Pending>()).set(key, value);
    this.bytes += key.length + value.length;
  }

  delete(key: Buffer): void {
    (this.index ??= new SkipList<Pending>()).set(key, null);
    this.bytes += key.length;
  }

  /** Distinct keys written. */
  get count(): number {
    return this.index === null ? 0 : this.index.size;
  }

  /** Approximate bytes written (counts overwritten ops too). */
  get byteSize(): number {
    return this.bytes;
  }

  isEmpty(): boolean {
    return this.index === null || this.index.size === 0;
  }

  getSync(key: Buffer): Buffer | undefined {
    const n = this.index === null ? null : this.index.get(key);
    if (n !== null) return n.value === null ? undefined : n.value;
    if (this.readAhead !== null) {
      const v = this.readAhead.get(key.toString('latin1'));
      if (v !== undefined) return v ?? undefined;
    }
    return this.base.getSync(key);
  }

  async getMany(keys: readonly Buffer[]): Promise<(Buffer | undefined)[]> {
    const out = await this.base.getMany(keys);
    const index = this.index;
    if (index === null) return out;
    for (let i = 0; i < keys.length; i++) {
      const n = index.get(keys[i] as Buffer);
      if (n !== null) out[i] = n.value ?? undefined;
    }
    return out;
  }

  /**
   * Reads `keys` from the engine in one getMany and keeps the values, so that
   * the synchronous evaluation that follows finds them without a getSync each
   * (a store prefetches the keys of a batch of commands while the previous
   * batch is being synced). The values are the engine's at prefetch time:
   * valid while the caller keeps other writers off those keys (latches).
   */
  async prefetch(keys: readonly Buffer[]): Promise<void> {
    const vals = await this.base.getMany(keys);
    const m = this.readAhead ?? new Map<string, Buffer | null>();
    for (let i = 0; i < keys.length; i++) m.set((keys[i] as Buffer).toString('latin1'), vals[i] ?? null);
    this.readAhead = m;
  }

  iterator(opts: IterOptions): EngineIterator {
    if (this.index === null || this.index.size === 0) return this.base.iterator(opts);
    return new MergingIterator(this.index, this.base.iterator(opts), opts);
  }

  /** The batch's operations, one per key, in key order. */
  ops(): BatchOp[] {
    const out: BatchOp[] = [];
    if (this.index === null) return out;
    for (let n = this.index.first(); n !== null; n = n.next[0] as SkipNode<Pending> | null) out.push({ key: n.key, value: n.value });
    return out;
  }

  /**
   * Calls `fn` for each op in key order (value null: a delete) without making
   * an object per op — how an engine hands the batch to its native write.
   */
  forEachOp(fn: (key: Buffer, value: Buffer | null) => void): void {
    if (this.index === null) return;
    for (let n = this.index.first(); n !== null; n = n.next[0] as SkipNode<Pending> | null) fn(n.key, n.value);
  }

  repr(): Buffer {
    return encodeBatchRepr(this.ops());
  }

  clear(): void {
    this.index = null;
    this.bytes = 0;
    this.readAhead = null;
  }
}

const ITER_CHUNK = 256;

/** Merges a batch index (sync) with an engine iterator (async, chunked). */
class MergingIterator implements EngineIterator {
  private cur: SkipNode<Pending> | null;
  private buf: Entry[] = [];
  private bufPos = 0;
  private baseDone = false;
  private readonly dir: number;

  constructor(
    index: SkipList<Pending>,
    private readonly base: EngineIterator,
    private readonly opts: IterOptions,
  ) {
    this.cur = index.start(opts);
    this.dir = opts.reverse ? -1 : 1;
  }

  private advanceCur(): void {
    const c = this.cur as SkipNode<Pending>;
    this.cur = this.dir > 0 ? (c.next[0] as SkipNode<Pending> | null) : c.prev;
  }

  async nextBatch(max: number): Promise<Entry[]> {
    const out: Entry[] = [];
    while (out.length < max) {
      if (this.bufPos >= this.buf.length && !this.baseDone) {
        this.buf = await this.base.nextBatch(Math.max(max, ITER_CHUNK));
        this.bufPos = 0;
        if (this.buf.length === 0) this.baseDone = true;
      }
      const c = this.cur !== null && withinBounds(this.cur.key, this.opts) ? this.cur : null;
      const b = this.bufPos < this.buf.length ? (this.buf[this.bufPos] as Entry) : null;
      if (c === null && b === null) break;
      const cmp = c === null ? 1 : b === null ? -1 : compareKeys(c.key, b.key) * this.dir;
      if (cmp < 0 || cmp === 0) {
        const cn = c as SkipNode<Pending>;
        if (cmp === 0) this.bufPos++;
        this.advanceCur();
        if (cn.value !== null) out.push({ key: cn.key, value: cn.value });
      } else {
        out.push(b as Entry);
        this.bufPos++;
      }
    }
    return out;
  }

  close(): Promise<void> {
    return this.base.close();
  }
}

// ---------------------------------------------------------------------------
// Batch repr codec

const REPR_MAGIC0 = 0x43; // 'C'
const REPR_MAGIC1 = 0x42; // 'B'
const REPR_VERSION = 1;
const OP_PUT = 1;
const OP_DELETE = 0;

function uvarintLen(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

function writeUvarint(buf: Buffer, off: number, n: number): number {
  while (n >= 0x80) {
    buf[off++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[off++] = n;
  return off;
}

export function encodeBatchRepr(ops: readonly BatchOp[]): Buffer {
  let size = 3 + uvarintLen(ops.length);
  for (const op of ops) {
    size += 1 + uvarintLen(op.key.length) + op.key.length;
    if (op.value !== null) size += uvarintLen(op.value.length) + op.value.length;
  }
  const buf = Buffer.allocUnsafe(size);
  buf[0] = REPR_MAGIC0;
  buf[1] = REPR_MAGIC1;
  buf[2] = REPR_VERSION;
  let o = writeUvarint(buf, 3, ops.length);
  for (const op of ops) {
    buf[o++] = op.value === null ? OP_DELETE : OP_PUT;
    o = writeUvarint(buf, o, op.key.length);
    o += op.key.copy(buf, o);
    if (op.value !== null) {
      o = writeUvarint(buf, o, op.value.length);
      o += op.value.copy(buf, o);
    }
  }
  assert(o === size, 'storage: batch repr size mismatch');
  return buf;
}

/** Decodes a repr; keys and values are views into `repr` (no copies). */
export function decodeBatchRepr(repr: Buffer): BatchOp[] {
  const ops: BatchOp[] = [];
  forEachBatchReprOp(repr, (key, value) => void ops.push({ key, value }));
  return ops;
}

/**
 * Calls `fn` for each op of a batch repr in order (value null: a delete),
 * the keys and values views into `repr` — how a replica applies a command
 * without an object per op. Throws CorruptionError on a malformed repr
 * before calling `fn` for any op past the damage (ops before it were
 * already passed on: apply is a bug-or-corruption stop either way).
 */
export function forEachBatchReprOp(repr: Buffer, fn: (key: Buffer, value: Buffer | null) => void): void {
  const bad = (why: string): CorruptionError => new CorruptionError(`storage: corrupt batch repr (${repr.length} bytes): ${why}`);
  if (repr.length < 4 || repr[0] !== REPR_MAGIC0 || repr[1] !== REPR_MAGIC1) throw bad('bad magic');
  if (repr[2] !== REPR_VERSION) throw bad(`unknown version ${repr[2]}`);
  const end = repr.length;
  // Position after a uvarint at `o` in the high bits, its value decoded into `uv` (no closure per call).
  let uv = 0;
  const readUvarint = (o: number): number => {
    let n = 0;
    let mul = 1;
    for (let i = 0; i < 8; i++) {
      if (o >= end) throw bad('truncated varint');
      const b = repr[o++] as number;
      n += (b & 0x7f) * mul;
      if (b < 0x80) {
        uv = n;
        return o;
      }
      mul *= 128;
    }
    throw bad('varint too long');
  };
  let o = readUvarint(3);
  const count = uv;
  for (let i = 0; i < count; i++) {
    if (o >= end) throw bad(`truncated at op ${i} of ${count}`);
    const kind = repr[o++];
    if (kind !== OP_PUT && kind !== OP_DELETE) throw bad(`unknown op kind ${kind}`);
    o = readUvarint(o);
    if (o + uv > end) throw bad('truncated bytes');
    const key = repr.subarray(o, o + uv);
    o += uv;
    let value: Buffer | null = null;
    if (kind === OP_PUT) {
      o = readUvarint(o);
      if (o + uv > end) throw bad('truncated bytes');
      value = repr.subarray(o, o + uv);
      o += uv;
    }
    fn(key, value);
  }
  if (o !== end) throw bad(`${end - o} trailing bytes`);
}
