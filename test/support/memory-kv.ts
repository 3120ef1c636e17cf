/**
 * MemoryKV: an in-memory KVDB/KVTxn (sql/kv.ts) for SQL unit tests ONLY —
 * a stand-in for the distributed KV of src/kv, never used by a real node.
 *
 * Semantics: serializable by optimistic concurrency control (validation at
 * commit, in the style of Kung & Robinson):
 *   - every committed write gets the next commit sequence number; a key keeps
 *     all its versions (value or tombstone) in commit order;
 *   - a transaction reads the snapshot as of its start sequence, merged with
 *     its own writes (read-your-writes);
 *   - it records the keys and spans it read; at commit it fails with a
 *     retryable TransactionRetryError (40001 at the SQL edge) if any
 *     transaction that committed after its start wrote into its read set.
 *     Otherwise its writes are applied atomically with a new sequence.
 *   The committed history is then equivalent to the commit order.
 *
 * Historical reads (AS OF SYSTEM TIME) are not modelled: every snapshot is
 * taken at the transaction's start sequence.
 *
 * Knobs for tests: `injectRetryErrors(n)` makes the next n commits fail
 * with a retryable error (exercises the server-side retry of implicit
 * transactions); `commitCount` counts successful commits.
 *
 * Admin: SPLIT AT records split points (a no-op otherwise); ranges() shows
 * the ranges those split points make, all on node 1.
 *
 * Keys are held as latin1 strings: one char per byte, so JS string order is
 * byte order.
 */
import { CairnError } from '../../src/util/errors.js';
import type { Timestamp } from '../../src/util/hlc.js';
import type { KVAdmin, KVBatch, KVDB, KVRangeInfo, KVResult, KVSavepoint, KVTxn, KVTxnOptions, KeyValue } from '../../sql/kv.js';
import { ConditionFailedError, TransactionRetryError } from '../../sql/kv.js';

interface Version {
  readonly seq: number;
  readonly value: Buffer | null;
}

function k(b: Buffer): string {
  return b.toString('latin1');
}
function unk(s: string): Buffer {
  return Buffer.from(s, 'latin1');
}

/** Index of the first element ≥ s in the sorted array. */
function lowerBound(arr: readonly string[], s: string): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((arr[mid] as string) < s) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class MemoryKV implements KVDB {
  readonly nodeId = 1;
  private readonly data = new Map<string, Version[]>();
  private readonly sortedKeys: string[] = [];
  /** Keys written by each commit, indexed by seq − 1 − logBase. */
  private readonly commitLog: { seq: number; keys: string[] }[] = [];
  private seq = 0;
  private lastWall = 0;
  private logical = 0;
  private retryInjections = 0;
  commitCount = 0;
  readonly splits: string[] = [];
  readonly admin: KVAdmin;

  /**
   * @param physicalMicros the clock (µs since the epoch)
   * @param batchLatencyMs when set, every batch first waits this long (0: one macrotask,
   *   setImmediate), like a real round trip, so timers (statement_timeout) and cancels
   *   can interleave with statements
   */
  constructor(
    private readonly physicalMicros: () => number = () => Date.now() * 1000,
    readonly batchLatencyMs?: number,
    /** When set, a scan returns at most this many rows (and a resume key), like a small targetBytes. */
    readonly scanPageRows?: number,
  ) {
    const self = this;
    this.admin = {
      async adminSplit(key: Buffer): Promise<void> {
        const s = k(key);
        const i = lowerBound(self.splits, s);
        if (self.splits[i] !== s) self.splits.splice(i, 0, s);
      },
      async ranges(key: Buffer, endKey: Buffer): Promise<KVRangeInfo[]> {
        const bounds = ['', ...self.splits, '\xff\xff'];
        const out: KVRangeInfo[] = [];
        for (let i = 0; i + 1 < bounds.length; i++) {
          const s = bounds[i] as string;
          const e = bounds[i + 1] as string;
          if (e <= k(key) || s >= k(endKey)) continue;
          out.push({ rangeId: i + 1, startKey: unk(s), endKey: unk(e), replicas: [1], leaseholder: 1 });
        }
        return out;
      },
    };
  }

  now(): Timestamp {
    const wall = this.physicalMicros();
    if (wall > this.lastWall) {
      this.lastWall = wall;
      this.logical = 0;
    } else {
      this.logical++;
    }
    return { wall: this.lastWall, logical: this.logical };
  }

  newTxn(opts: KVTxnOptions = {}): KVTxn {
    return new MemoryTxn(this, opts);
  }

  /** The next `n` commits fail with a retryable error. */
  injectRetryErrors(n: number): void {
    this.retryInjections += n;
  }

  // ---- used by MemoryTxn ----

  currentSeq(): number {
    return this.seq;
  }

  /** The value of key as of seq (null: absent or deleted). */
  readAt(key: string, seq: number): Buffer | null {
    const vs = this.data.get(key);
    if (vs === undefined) return null;
    for (let i = vs.length - 1; i >= 0; i--) {
      const v = vs[i] as Version;
      if (v.seq <= seq) return v.value;
    }
    return null;
  }

  /** Committed keys in [start, end) in order (including ones deleted at seq). */
  keysIn(start: string, end: string): string[] {
    const out: string[] = [];
    for (let i = lowerBound(this.sortedKeys, start); i < this.sortedKeys.length; i++) {
      const key = this.sortedKeys[i] as string;
      if (key >= end) break;
      out.push(key);
    }
    return out;
  }

  tryCommit(startSeq: number, reads: ReadSet, writes: Map<string, Buffer | null>): void {
    if (this.retryInjections > 0) {
      this.retryInjections--;
      throw new TransactionRetryError('injected by memory-kv');
    }
    for (const c of this.commitLog) {
      if (c.seq <= startSeq) continue;
      for (const key of c.keys) {
        if (reads.overlaps(key)) throw new TransactionRetryError(`serialization failure on a key written since the transaction began (memory-kv)`);
      }
    }
    if (writes.size === 0) {
      this.commitCount++;
      return;
    }
    const seq = ++this.seq;
    const keys: string[] = [];
    for (const [key, value] of writes) {
      keys.push(key);
      let vs = this.data.get(key);
      if (vs === undefined) {
        vs = [];
        this.data.set(key, vs);
        this.sortedKeys.splice(lowerBound(this.sortedKeys, key), 0, key);
      }
      vs.push({ seq, value });
      if (vs.length > 4) this.pruneVersions(vs);
    }
    this.commitLog.push({ seq, keys });
    this.commitCount++;
    this.trimLog();
  }

  /** Drops versions no open transaction can read: all but the newest at or below the oldest snapshot. */
  private pruneVersions(vs: Version[]): void {
    let min = this.seq;
    for (const s of this.active.values()) if (s < min) min = s;
    let keepFrom = 0;
    for (let i = vs.length - 1; i >= 0; i--) {
      if ((vs[i] as Version).seq <= min) {
        keepFrom = i;
        break;
      }
    }
    if (keepFrom > 0) vs.splice(0, keepFrom);
  }

  private readonly active = new Map<MemoryTxn, number>();
  register(t: MemoryTxn, startSeq: number): void {
    this.active.set(t, startSeq);
  }
  unregister(t: MemoryTxn): void {
    this.active.delete(t);
  }
  /** Drops log entries no active txn can conflict with. */
  private trimLog(): void {
    let min = this.seq;
    for (const s of this.active.values()) if (s < min) min = s;
    let drop = 0;
    while (drop < this.commitLog.length && (this.commitLog[drop] as { seq: number }).seq <= min) drop++;
    if (drop > 0) this.commitLog.splice(0, drop);
  }
}

class ReadSet {
  readonly points = new Set<string>();
  readonly spans: [string, string][] = [];
  overlaps(key: string): boolean {
    if (this.points.has(key)) return true;
    for (const [s, e] of this.spans) if (key >= s && key < e) return true;
    return false;
  }
}

type TxnState = 'open' | 'committed' | 'aborted' | 'needsRestart';

class MemoryTxn implements KVTxn {
  private state: TxnState = 'open';
  private startSeq: number;
  private reads = new ReadSet();
  private writes = new Map<string, Buffer | null>();
  private readTs: Timestamp;
  private fixed = false;

  constructor(
    private readonly db: MemoryKV,
    private readonly opts: KVTxnOptions,
  ) {
    this.startSeq = db.currentSeq();
    this.readTs = opts.asOf ?? db.now();
    db.register(this, this.startSeq);
  }

  private checkOpen(): void {
    if (this.state !== 'open') throw new CairnError('kv.txn_finished', `kv: transaction is ${this.state}`, { sqlState: '25000' });
  }

  private get(key: string): Buffer | null {
    this.reads.points.add(key);
    if (this.writes.has(key)) return this.writes.get(key) as Buffer | null;
    return this.db.readAt(key, this.startSeq);
  }

  async run(batch: KVBatch): Promise<KVResult[]> {
    const lat = this.db.batchLatencyMs;
    if (lat !== undefined) await new Promise<void>((resolve) => (lat === 0 ? setImmediate(resolve) : setTimeout(resolve, lat)));
    this.checkOpen();
    const out: KVResult[] = [];
    for (const r of batch.requests) {
      switch (r.kind) {
        case 'get':
          out.push({ kind: 'get', value: this.get(k(r.key)) });
          break;
        case 'scan': {
          const page = this.db.scanPageRows;
          const limit = page === undefined ? r.limit : r.limit === 0 ? page : Math.min(r.limit, page);
          out.push(this.scan(r.key, r.endKey, r.reverse, limit, r.targetBytes));
          break;
        }
        case 'put':
          this.write(k(r.key), r.value);
          out.push({ kind: 'put' });
          break;
        case 'cput': {
          const key = k(r.key);
          const cur = this.get(key);
          const ok = cur === null ? r.expected === null : r.expected !== null && cur.equals(r.expected);
          if (!ok) throw new ConditionFailedError(r.key, cur);
          this.write(key, r.value);
          out.push({ kind: 'cput' });
          break;
        }
        case 'del':
          this.write(k(r.key), null);
          out.push({ kind: 'del' });
          break;
        case 'delRange': {
          const res = this.scan(r.key, r.endKey, false, 0, 0);
          if (res.kind !== 'scan') throw new Error('unreachable');
          for (const row of res.rows) this.write(k(row.key), null);
          out.push({ kind: 'delRange', deleted: res.rows.length });
          break;
        }
      }
    }
    return out;
  }

  private write(key: string, value: Buffer | null): void {
    if (this.opts.readOnly === true || this.opts.asOf !== undefined) {
      throw new CairnError('kv.read_only', 'kv: cannot write in a read-only transaction', { sqlState: '25006' });
    }
    this.writes.set(key, value);
  }

  private scan(keyB: Buffer, endB: Buffer, reverse: boolean, limit: number, targetBytes: number): KVResult {
    const start = k(keyB);
    const end = k(endB);
    const committed = this.db.keysIn(start, end);
    const local: string[] = [];
    for (const key of this.writes.keys()) if (key >= start && key < end) local.push(key);
    local.sort();
    // merge
    const all: string[] = [];
    let i = 0;
    let j = 0;
    while (i < committed.length || j < local.length) {
      const a = committed[i];
      const b = local[j];
      if (b === undefined || (a !== undefined && a < b)) {
        all.push(a as string);
        i++;
      } else if (a === undefined || b < a) {
        all.push(b);
        j++;
      } else {
        all.push(a);
        i++;
        j++;
      }
    }
    if (reverse) all.reverse();
    const rows: KeyValue[] = [];
    let bytes = 0;
    let resumeKey: Buffer | null = null;
    let lastKey: string | undefined;
    for (const key of all) {
      if ((limit > 0 && rows.length >= limit) || (targetBytes > 0 && bytes >= targetBytes)) {
        resumeKey = reverse ? unk(lastKey as string) : unk(key);
        break;
      }
      const v = this.writes.has(key) ? (this.writes.get(key) as Buffer | null) : this.db.readAt(key, this.startSeq);
      if (v === null) continue;
      rows.push({ key: unk(key), value: v });
      bytes += key.length + v.length;
      lastKey = key;
    }
    // Record what was actually read: up to the resume point.
    if (resumeKey === null) this.reads.spans.push([start, end]);
    else if (reverse) this.reads.spans.push([k(resumeKey), end]);
    else this.reads.spans.push([start, k(resumeKey)]);
    return { kind: 'scan', rows, resumeKey };
  }

  async commitInBatch(batch: KVBatch): Promise<KVResult[]> {
    const res = batch.length > 0 ? await this.run(batch) : [];
    await this.commit();
    return res;
  }

  async commit(): Promise<void> {
    this.checkOpen();
    try {
      this.db.tryCommit(this.startSeq, this.reads, this.writes);
      this.state = 'committed';
      this.db.unregister(this);
    } catch (e) {
      this.state = 'needsRestart';
      throw e;
    }
  }

  async rollback(): Promise<void> {
    if (this.state === 'committed') return;
    this.state = 'aborted';
    this.writes.clear();
    this.db.unregister(this);
  }

  async createSavepoint(): Promise<KVSavepoint> {
    this.checkOpen();
    return new Map(this.writes);
  }
  async rollbackToSavepoint(sp: KVSavepoint): Promise<void> {
    this.checkOpen();
    this.writes = new Map(sp as Map<string, Buffer | null>);
  }
  async releaseSavepoint(_sp: KVSavepoint): Promise<void> {
    this.checkOpen();
  }
  readTimestamp(): Timestamp {
    return this.readTs;
  }
  provisionalCommitTimestamp(): Timestamp {
    return this.readTs;
  }
  setFixedTimestamp(ts: Timestamp): void {
    this.readTs = ts;
    this.fixed = true;
  }
  async restart(): Promise<void> {
    if (this.state === 'committed') throw new CairnError('kv.txn_finished', 'kv: cannot restart a committed transaction');
    this.state = 'open';
    this.writes.clear();
    this.reads = new ReadSet();
    this.startSeq = this.db.currentSeq();
    this.db.register(this, this.startSeq);
    if (!this.fixed) this.readTs = this.db.now();
  }
  setPriority(_p: 'low' | 'normal' | 'high'): void {}
}
