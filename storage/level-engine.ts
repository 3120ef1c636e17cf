/**
 * LevelEngine: the Engine over LevelDB, through `level` (classic-level on
 * Node). One LevelDB per store holds everything (DESIGN.md §3, "Storage").
 *
 * Cost model (DESIGN.md §4) that shapes this file:
 *   - point reads use classic-level's getSync (~10 µs) rather than the async
 *     get that goes through the libuv pool;
 *   - a getMany of GETMANY_SPLIT_MIN keys or more runs as GETMANY_PARTS
 *     getManys at once (one libuv job each, on the pool's 4 threads): one
 *     job reads its keys in sequence, so 100 cold heads cost 100 block reads
 *     back to back. Measured (session 7, 300,000 MVCC heads × 1 KB, batches
 *     of 100 random keys, load 24): µs per key getSync 18.4 wall / 4.7
 *     JS-thread CPU, one getMany 23.6 / 2.7, four at once 8.7 / 2.6.
 *     Missing keys are the other way round: LevelDB answers them from the
 *     bloom filters without a block read, and the split only adds pool jobs
 *     and snapshots (100 fresh keys per call, load ~30, µs per key process
 *     CPU / wall: four jobs 2.9-3.4 / 3.0-3.5, one job 2.2-2.4 / 2.2-2.4).
 *     So the split follows what recent getManys found (foundRate, an
 *     average of the fraction of keys found): while it stays below
 *     SPLIT_FOUND_RATE — fresh keys, inserts — a getMany is one job.
 *     CAIRN_GETMANY_BY_FOUND=0 always splits (the A/B switch);
 *   - an iterator costs ~135 µs to create, so iterators read in chunks with
 *     nextv (one await per chunk, never per key);
 *   - a synced batch costs one fsync: callers group many commands into one
 *     batch (group commit), and `write(batch, { sync: true })` is the only
 *     place this file asks for durability;
 *   - batches go to classic-level's `_batch` (the implementation hook under
 *     abstract-level's `batch`): abstract-level clones and re-validates every
 *     op, which profiled at about as much CPU as the native write itself. Our
 *     ops are already plain Buffers and nothing here uses its hooks or events;
 *     `batch` remains the fallback where `_batch` is absent.
 *     write() builds that op array straight from the batch's index
 *     (WriteBatch.forEachOp): one object per op, no intermediate BatchOp.
 *
 * Synced writes: LevelDB's own (`WriteOptions.sync`: the batch is appended
 * to the WAL and fdatasynced while it heads LevelDB's writer queue).
 * Session 6 added an opt-in syncMode 'wal' (an unsynced write, then
 * fdatasync of the WAL files outside the writer queue, so unsynced applies
 * need not wait behind the fsync); session 7 removed it after an A/B that it
 * did not win (bench:kv put, 3-node cluster, 3 runs alternating, load
 * 24-26: LevelDB sync 494/273/358 puts/s, wal 238/344/477 — medians 358 vs
 * 344; bench/write-path, 3 stores, 3 runs: an unsynced apply beside a synced
 * write 3.0/8.8/9.2 ms vs 1.1/1.7/1.8 ms with wal, but the synced write
 * itself under pool readers 23/64/50 ms LevelDB (applies merged into it,
 * as the store's early applies are) vs 68/114/201 ms wal). The
 * store already issues early applies ahead of the synced write, which took
 * the part of the queueing that mattered (bench/write-path.ts header).
 *
 * Opening a directory that another process (or another LevelEngine in this
 * process) holds fails with StoreLockedError (`storage.locked`) naming the
 * directory — LevelDB's LOCK file is the arbiter.
 *
 * Ownership: LevelEngine owns the DB handle; iterators and snapshots it hands
 * out must be closed by the caller before close() resolves.
 */
import { Level } from 'level';
import { assert } from '../src/util/assert.js';
import { CairnError } from '../src/util/errors.js';
import {
  EngineClosedError,
  StoreLockedError,
  WriteBatch,
  decodeBatchRepr,
  type BatchOp,
  type Engine,
  type EngineIterator,
  type Entry,
  type IterOptions,
  type Snapshot,
  type WriteOptions,
} from './engine.js';

/** One op of a classic-level batch (one object shape for puts and deletes). */
interface LevelOp {
  readonly type: 'put' | 'del';
  readonly key: Buffer;
  readonly value: Buffer | undefined;
}

/** The parts of classic-level's API used here (level's typings omit some). */
interface LevelIterator {
  nextv(size: number): Promise<[Buffer, Buffer][]>;
  /** Synchronous: classic-level repositions its LevelDB iterator on the JS thread; the next nextv reads from there. */
  seek(target: Buffer): void;
  close(): Promise<void>;
}
interface LevelSnapshotHandle {
  close(): Promise<void>;
}
interface LevelDb {
  open(): Promise<void>;
  close(): Promise<void>;
  get(key: Buffer): Promise<Buffer | undefined>;
  getSync(key: Buffer, opts?: { snapshot?: LevelSnapshotHandle }): Buffer | undefined;
  getMany(keys: Buffer[], opts?: { snapshot?: LevelSnapshotHandle }): Promise<(Buffer | undefined)[]>;
  put(key: Buffer, value: Buffer, opts?: { sync?: boolean }): Promise<void>;
  del(key: Buffer, opts?: { sync?: boolean }): Promise<void>;
  batch(ops: LevelOp[], opts?: { sync?: boolean }): Promise<void>;
  /** classic-level's implementation hook under batch(): the native write, without abstract-level's per-op cloning. */
  _batch?(ops: LevelOp[], opts: { sync: boolean }): Promise<void>;
  iterator(opts: { gte?: Buffer; lt?: Buffer; reverse?: boolean; snapshot?: LevelSnapshotHandle; highWaterMarkBytes?: number }): LevelIterator;
  snapshot(): LevelSnapshotHandle;
  approximateSize(start: Buffer, end: Buffer): Promise<number>;
  getProperty(name: string): string;
  compactRange(start: Buffer, end: Buffer): Promise<void>;
}

export interface LevelEngineOptions {
  /** LevelDB block cache bytes (default 64 MiB). */
  readonly cacheSize?: number;
  /** LevelDB write buffer bytes (default 16 MiB). */
  readonly writeBufferSize?: number;
  /**
   * Bytes one nextv may return (classic-level's highWaterMarkBytes, default
   * here 4 MiB). classic-level's own default of 16 KiB would cut a chunk of
   * 1 KB rows after 16 of them and cost one libuv round trip per 16 rows.
   */
  readonly iteratorChunkBytes?: number;
  /** Snappy compression of table blocks (LevelDB's default, on). */
  readonly compression?: boolean;
}

function isLockError(e: unknown): boolean {
  for (let c: unknown = e; c instanceof Error; c = (c as Error & { cause?: unknown }).cause) {
    if (/lock|already held|LEVEL_LOCKED/i.test(`${(c as Error & { code?: string }).code ?? ''} ${c.message}`)) return true;
  }
  return false;
}

export class LevelEngine implements Engine {
  private closed = false;
  /** Average fraction of keys recent getManys found (see the header); starts at 1: split, as before any read. */
  private foundRate = 1;
  /** classic-level getMany calls issued (libuv pool jobs), for benchmarks and tests. */
  poolReads = 0;

  private constructor(
    readonly dir: string,
    private readonly db: LevelDb,
    private readonly chunkBytes: number,
  ) {}

  /** Opens (creating if missing) the store at `dir`. */
  static async open(dir: string, opts: LevelEngineOptions = {}): Promise<LevelEngine> {
    const db = new Level<Buffer, Buffer>(dir, {
      keyEncoding: 'buffer',
      valueEncoding: 'buffer',
      cacheSize: opts.cacheSize ?? 64 << 20,
      writeBufferSize: opts.writeBufferSize ?? 16 << 20,
      compression: opts.compression ?? true,
    } as never) as unknown as LevelDb;
    try {
      await db.open();
    } catch (e) {
      if (isLockError(e)) throw new StoreLockedError(dir, e);
      throw new CairnError('storage.open_failed', `storage: cannot open store directory ${dir}: ${(e as Error).message}`, { cause: e });
    }
    return new LevelEngine(dir, db, opts.iteratorChunkBytes ?? 4 << 20);
  }

  private check(): void {
    if (this.closed) throw new EngineClosedError();
  }

  getSync(key: Buffer): Buffer | undefined {
    this.check();
    return this.db.getSync(key);
  }

  get(key: Buffer): Promise<Buffer | undefined> {
    this.check();
    return this.db.get(key);
  }

  getMany(keys: readonly Buffer[]): Promise<(Buffer | undefined)[]> {
    this.check();
    return this.readMany(keys, (ks) => this.db.getMany(ks));
  }

  private splitParts(): number {
    return SPLIT_BY_FOUND && this.foundRate < SPLIT_FOUND_RATE ? 1 : GETMANY_PARTS;
  }

  private async readMany(keys: readonly Buffer[], read: (keys: Buffer[]) => Promise<(Buffer | undefined)[]>): Promise<(Buffer | undefined)[]> {
    const parts = this.splitParts();
    this.poolReads += getManyJobs(keys.length, parts);
    const out = await getManySplit(keys, parts, read);
    if (out.length > 0) {
      let found = 0;
      for (let i = 0; i < out.length; i++) if (out[i] !== undefined) found++;
      this.foundRate += FOUND_RATE_WEIGHT * (found / out.length - this.foundRate);
    }
    return out;
  }

  put(key: Buffer, value: Buffer, opts?: WriteOptions): Promise<void> {
    this.check();
    return this.submit([{ type: 'put', key, value }], opts);
  }

  delete(key: Buffer, opts?: WriteOptions): Promise<void> {
    this.check();
    return this.submit([{ type: 'del', key, value: undefined }], opts);
  }

  newBatch(): WriteBatch {
    return new WriteBatch(this);
  }

  write(batch: WriteBatch, opts?: WriteOptions): Promise<void> {
    this.check();
    if (batch.count === 0) return Promise.resolve();
    // Straight from the batch's index into classic-level's op array: one object per op.
    const lops = new Array<LevelOp>(batch.count);
    let i = 0;
    batch.forEachOp((key, value) => {
      lops[i++] = value === null ? { type: 'del', key, value: undefined } : { type: 'put', key, value };
    });
    return this.submit(lops, opts);
  }

  applyBatchRepr(repr: Buffer, opts?: WriteOptions): Promise<void> {
    return this.writeOps(decodeBatchRepr(repr), opts);
  }

  private writeOps(ops: readonly BatchOp[], opts?: WriteOptions): Promise<void> {
    this.check();
    if (ops.length === 0) return Promise.resolve();
    const lops = new Array<LevelOp>(ops.length);
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i] as BatchOp;
      lops[i] = op.value === null ? { type: 'del', key: op.key, value: undefined } : { type: 'put', key: op.key, value: op.value };
    }
    return this.submit(lops, opts);
  }

  private submit(lops: LevelOp[], opts?: WriteOptions): Promise<void> {
    const sync = opts?.sync === true;
    return this.db._batch !== undefined ? this.db._batch(lops, { sync }) : this.db.batch(lops, { sync });
  }

  iterator(opts: IterOptions): EngineIterator {
    this.check();
    return new LevelIteratorAdapter(this.db.iterator({ ...levelIterOpts(opts), highWaterMarkBytes: this.chunkBytes }), opts);
  }

  snapshot(): Snapshot {
    this.check();
    const snap = this.db.snapshot();
    return {
      getSync: (key: Buffer) => {
        this.check();
        return this.db.getSync(key, { snapshot: snap });
      },
      getMany: (keys: readonly Buffer[]) => {
        this.check();
        return this.readMany(keys, (ks) => this.db.getMany(ks, { snapshot: snap }));
      },
      iterator: (opts: IterOptions) => {
        this.check();
        return new LevelIteratorAdapter(this.db.iterator({ ...levelIterOpts(opts), snapshot: snap, highWaterMarkBytes: this.chunkBytes }), opts);
      },
      close: () => snap.close(),
    };
  }

  approximateSize(start: Buffer, end: Buffer): Promise<number> {
    this.check();
    return this.db.approximateSize(start, end);
  }

  /**
   * A LevelDB property (`leveldb.stats`, `leveldb.num-files-at-level<N>`,
   * `leveldb.sstables`, `leveldb.approximate-memory-usage`): synchronous, for
   * benchmarks and debugging — what compaction state a figure was taken in.
   */
  getProperty(name: string): string {
    this.check();
    return this.db.getProperty(name);
  }

  /** Compacts the engine keys in [start, end] down the levels (benchmarks and offline maintenance). */
  compactRange(start: Buffer, end: Buffer): Promise<void> {
    this.check();
    return this.db.compactRange(start, end);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.close();
  }
}

/** getMany below this many keys is one pool job; at or above, GETMANY_PARTS jobs (while recent reads found keys). */
export const GETMANY_SPLIT_MIN = 32;
const GETMANY_PARTS = 4;
/** Below this average fraction of keys found, a getMany is not split (header). */
const SPLIT_FOUND_RATE = 0.25;
/** Weight of the latest getMany in foundRate. */
const FOUND_RATE_WEIGHT = 0.25;
/** CAIRN_GETMANY_BY_FOUND=0: split every large getMany, whatever recent reads found (the behaviour before session 10). */
const SPLIT_BY_FOUND = process.env.CAIRN_GETMANY_BY_FOUND !== '0';

/** How many libuv pool jobs (classic-level getMany calls) a getMany of `n` keys runs as, split into at most `parts`. */
export function getManyJobs(n: number, parts = GETMANY_PARTS): number {
  return n < GETMANY_SPLIT_MIN ? 1 : Math.ceil(n / Math.ceil(n / parts));
}

/**
 * Many point reads as up to `nparts` getMany calls at once (see the
 * header's cost model): classic-level runs one getMany as one libuv job that
 * reads its keys one after another, so a batch of cold reads took as long as
 * that many getSyncs. Results align with `keys`.
 */
async function getManySplit(keys: readonly Buffer[], nparts: number, read: (keys: Buffer[]) => Promise<(Buffer | undefined)[]>): Promise<(Buffer | undefined)[]> {
  const n = keys.length;
  if (n < GETMANY_SPLIT_MIN || nparts === 1) return read(keys as Buffer[]);
  const per = Math.ceil(n / nparts);
  const parts: Promise<(Buffer | undefined)[]>[] = [];
  for (let i = 0; i < n; i += per) parts.push(read(keys.slice(i, i + per)));
  assert(parts.length === getManyJobs(n, nparts), 'storage: getManyJobs disagrees with the split');
  const got = await Promise.all(parts);
  const out = new Array<Buffer | undefined>(n);
  let o = 0;
  for (const part of got) for (let i = 0; i < part.length; i++) out[o++] = part[i];
  return out;
}

function levelIterOpts(opts: IterOptions): { gte?: Buffer; lt?: Buffer; reverse?: boolean } {
  const o: { gte?: Buffer; lt?: Buffer; reverse?: boolean } = {};
  if (opts.gte !== undefined) o.gte = opts.gte;
  if (opts.lt !== undefined) o.lt = opts.lt;
  if (opts.reverse) o.reverse = true;
  return o;
}

class LevelIteratorAdapter implements EngineIterator {
  private done = false;
  private closed = false;
  constructor(
    private readonly it: LevelIterator,
    private readonly opts: IterOptions,
  ) {}

  seek(key: Buffer): void {
    assert(this.opts.reverse !== true, 'storage: seek is for forward iterators');
    if (this.closed) return;
    this.done = false;
    // classic-level ends the iterator on a target below gte; the contract (and MemoryEngine) start at gte.
    const gte = this.opts.gte;
    this.it.seek(gte !== undefined && Buffer.compare(key, gte) < 0 ? gte : key);
  }

  async nextBatch(max: number): Promise<Entry[]> {
    if (this.done) return [];
    const rows = await this.it.nextv(max);
    const out = new Array<Entry>(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i] as [Buffer, Buffer];
      out[i] = { key: r[0], value: r[1] };
    }
    if (rows.length === 0) this.done = true;
    return out;
  }

  close(): Promise<void> {
    this.done = true;
    this.closed = true;
    return this.it.close();
  }
}
