/**
 * LevelEngine: the Engine over LevelDB, through `level` (classic-level on
 * Node). One LevelDB per store holds everything (DESIGN.md §3, "Storage").
 *
 * Cost model (DESIGN.md §4) that shapes this file:
 *   - point reads use classic-level's getSync (~10 µs) rather than the async
 *     get that goes through the libuv pool;
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
 * Synced writes (design note, session 6 — write-path latency). LevelDB's own
 * synced write (`WriteOptions.sync`) appends the batch to its WAL and
 * fdatasyncs it while it is the head of LevelDB's writer queue: every write
 * issued meanwhile — the store's unsynced applies of already-committed
 * entries, whose latches are held until that write completes — waits for
 * the fsync too (db_impl.cc DBImpl::Write: one writer at a time; a non-sync
 * writer behind a sync leader is grouped into its fsync). syncMode 'wal' keeps
 * the durability and takes the others off the fsync:
 *
 *     write(batch, {sync})  =  LevelDB write, unsynced   (WAL record appended
 *                                                         and flushed to the OS:
 *                                                         log_writer.cc Flush
 *                                                         after every record)
 *                              then fdatasync of every NNNNNN.log in the store
 *                              directory (fs.promises FileHandle.datasync on
 *                              handles kept open per WAL file)
 *
 * The batch's record is in the WAL that was current when it was written; if
 * LevelDB switched memtables since, both WALs are still there and both are
 * synced, and a WAL already deleted had its memtable written to a table
 * LevelDB synced. So a resolved synced write is on disk exactly as with
 * LevelDB's own sync (which also leaves the directory entry of a new WAL
 * unsynced). The WAL is still written by one writer at a time (LevelDB's
 * queue, unchanged); only the fdatasync runs outside it, beside later
 * unsynced writes. A failed fdatasync leaves the WAL's state unknown
 * (LevelDB itself then refuses every later write): the engine does the same
 * — every later write rejects with `storage.sync_failed`.
 * Measured (bench/write-path.ts): see its header.
 *
 * Opening a directory that another process (or another LevelEngine in this
 * process) holds fails with StoreLockedError (`storage.locked`) naming the
 * directory — LevelDB's LOCK file is the arbiter.
 *
 * Ownership: LevelEngine owns the DB handle; iterators and snapshots it hands
 * out must be closed by the caller before close() resolves.
 */
import { Level } from 'level';
import { readdirSync, statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
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
  /**
   * How `write(batch, { sync: true })` makes the batch durable: 'leveldb'
   * (the default: LevelDB's own sync write, which holds its writer queue
   * through the fsync) or 'wal' (an unsynced write, then fdatasync of the WAL
   * files — see the header, "Synced writes").
   */
  readonly syncMode?: 'leveldb' | 'wal';
}

function isLockError(e: unknown): boolean {
  for (let c: unknown = e; c instanceof Error; c = (c as Error & { cause?: unknown }).cause) {
    if (/lock|already held|LEVEL_LOCKED/i.test(`${(c as Error & { code?: string }).code ?? ''} ${c.message}`)) return true;
  }
  return false;
}

export class LevelEngine implements Engine {
  private closed = false;

  private constructor(
    readonly dir: string,
    private readonly db: LevelDb,
    private readonly chunkBytes: number,
    private readonly syncMode: 'leveldb' | 'wal',
  ) {}

  /** Open handles of LevelDB's WAL files (NNNNNN.log), by name, for syncMode 'wal'. */
  private readonly wals = new Map<string, FileHandle>();
  /** walNames' cached listing: the WAL names, the directory's mtime before it was read, when it was read. */
  private walList: string[] = [];
  private walListMtimeNs = -1n;
  private walListAtMs = 0;
  /** Set by a failed WAL fdatasync: every later write rejects with it. */
  private syncFailure: CairnError | null = null;

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
    return new LevelEngine(dir, db, opts.iteratorChunkBytes ?? 4 << 20, opts.syncMode ?? 'leveldb');
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
    return this.db.getMany(keys as Buffer[]);
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
    if (this.syncFailure !== null) return Promise.reject(this.syncFailure);
    const sync = opts?.sync === true;
    if (sync && this.syncMode === 'wal') return this.submitThenSyncWal(lops);
    return this.db._batch !== undefined ? this.db._batch(lops, { sync }) : this.db.batch(lops, { sync });
  }

  private async submitThenSyncWal(lops: LevelOp[]): Promise<void> {
    await (this.db._batch !== undefined ? this.db._batch(lops, { sync: false }) : this.db.batch(lops, { sync: false }));
    try {
      await this.syncWal();
    } catch (e) {
      this.syncFailure ??= new CairnError('storage.sync_failed', `storage: fdatasync of the WAL in ${this.dir} failed; the store refuses further writes: ${(e as Error).message}`, { cause: e });
      throw this.syncFailure;
    }
  }

  /**
   * The names of LevelDB's WAL files now. Listing the directory costs ~0.1-0.7
   * ms with a 1 GB store's ~500 tables, so the list is kept and re-read only
   * when the directory may have changed since: its mtime moved (a create or
   * delete sets it), or the list was read less than 50 ms after that mtime (the
   * kernel stamps mtime from a coarse clock, so a second create within one
   * tick of it could leave it unchanged). One stat per synced write.
   */
  private walNames(): string[] {
    const mtimeNs = statSync(this.dir, { bigint: true }).mtimeNs;
    if (mtimeNs === this.walListMtimeNs && this.walListAtMs - Number(mtimeNs / 1_000_000n) >= 50) return this.walList;
    this.walListAtMs = Date.now();
    this.walList = readdirSync(this.dir).filter((n) => n.endsWith('.log'));
    this.walListMtimeNs = mtimeNs;
    return this.walList;
  }

  /**
   * fdatasync of every WAL file LevelDB has now: the one the batch just
   * written went to, or — when the memtable was switched since — the older
   * one too (a log already deleted had its memtable flushed to a synced table).
   */
  private async syncWal(): Promise<void> {
    const names = this.walNames();
    for (const [n, fh] of this.wals) {
      if (!names.includes(n)) {
        this.wals.delete(n);
        fh.close().catch(() => undefined); // a WAL already gone: nothing left to flush
      }
    }
    const pending: Promise<void>[] = [];
    for (const n of names) {
      pending.push(
        (async () => {
          let fh = this.wals.get(n);
          if (fh === undefined) {
            try {
              fh = await open(join(this.dir, n), 'r');
            } catch (e) {
              if ((e as { code?: string }).code === 'ENOENT') return; // flushed and deleted meanwhile
              throw e;
            }
            const raced = this.wals.get(n);
            if (raced !== undefined) {
              fh.close().catch(() => undefined); // a second handle of the same WAL, opened concurrently
              fh = raced;
            } else this.wals.set(n, fh);
          }
          await fh.datasync();
        })(),
      );
    }
    await Promise.all(pending);
  }

  iterator(opts: IterOptions): EngineIterator {
    this.check();
    return new LevelIteratorAdapter(this.db.iterator({ ...levelIterOpts(opts), highWaterMarkBytes: this.chunkBytes }));
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
        return this.db.getMany(keys as Buffer[], { snapshot: snap });
      },
      iterator: (opts: IterOptions) => {
        this.check();
        return new LevelIteratorAdapter(this.db.iterator({ ...levelIterOpts(opts), snapshot: snap, highWaterMarkBytes: this.chunkBytes }));
      },
      close: () => snap.close(),
    };
  }

  approximateSize(start: Buffer, end: Buffer): Promise<number> {
    this.check();
    return this.db.approximateSize(start, end);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.close();
    for (const fh of this.wals.values()) await fh.close();
    this.wals.clear();
  }
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
  constructor(private readonly it: LevelIterator) {}

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
    return this.it.close();
  }
}
