/**
 * sql/catalog/lease-manager.ts — descriptor leases: a node runs its implicit
 * statements against a cached catalog snapshot without reading any catalog
 * key (CockroachDB's lease.Manager, reduced to the one global schema version
 * of catalog.ts and kept strict: a statement never runs on a version other
 * than the one current at its commit timestamp).
 *
 * Before leases every transaction read the schema-version key in its first
 * batch (sql-txn.ts) — a second range, so a point SELECT cost two RPCs.
 *
 *   lease record   /System/desc-lease/<nodeId> → the version the node serves and
 *                  the lease's expiration E (value layout below). Written by
 *                  acquisition/renewal in a transaction that also READS the
 *                  version key and the fence list (one range, 1PC).
 *   fence list     /System/desc-fence/"list" → every schema change's fence:
 *                  its token and expiration F (value layout below). A schema
 *                  change adds its fence (read-modify-write of the one key)
 *                  before it touches the version key; while a live fence is
 *                  listed no node takes or renews a lease, and nodes that hold
 *                  one release it.
 *
 * A statement using lease (V, E) runs with commit deadline E (KVTxn.setDeadline:
 * its commit timestamp is < E; a read-only one checks its read timestamp after
 * every batch, sql-txn.ts). Its timestamp is ≥ the acquisition's read of V, so
 * ≥ the commit of V.
 *
 * A schema change (fence(), before its first write of the version key):
 *   1. writes its fence (own transaction, visible to every node);
 *   2. releases this node's lease: no new users, wait for the users in flight,
 *      then rewrite the record with E' = max(now, their commit timestamps);
 *      other nodes do the same when their tick sees the fence;
 *   3. polls: a read-only transaction at timestamp q scans the lease records
 *      and reads the version key, until every record's E < q;
 *   4. runs the DDL with commit deadline F, writing the version key V+1.
 * Why V+1 commits above every use of V: each user of a lease committed below
 * its E (deadline), every E < q, and the poll's read of the version key at q
 * makes the timestamp cache push the DDL's write of that key above q. A lease
 * taken after the poll would need the fence gone: it is removed only by its
 * owner after the DDL, or by an acquirer once F has passed — and the DDL's
 * deadline F keeps it from committing after that. An acquisition racing the
 * fence write either commits first (the poll then sees its record) or reads
 * the fence (serializability: both read and write the fence list key).
 *
 * Design note (session 8): the fences used to be one key per token under
 * /System/desc-fence/, and every tick of every node (10 a second each)
 * scanned that span. The scan found nothing almost always but cost a LevelDB
 * iterator: ~5 ms of the system range leaseholder's time per scan on a
 * bench cluster (the seek walks deleted entries), ~30 % of an idle cluster's
 * CPU. All fences now live in ONE key that the tick point-reads (the
 * leaseholder's fast read path, no iterator); the safety argument above is
 * unchanged — the tick and every acquisition read the key every fence()
 * writes, as they read the span every fence wrote before. Fences are rare
 * (schema changes), so two of them contending on the key just retry.
 *
 * Leases are used only by implicit statements (the hot path); explicit
 * transactions keep the schema-version read of sql-txn.ts, which is correct
 * on its own. No lease is used while a fence is known or a statement on this
 * node holds one, when the lease is within `minRemaining` of expiring, or when
 * the KVTxn has no setDeadline (MemoryKV).
 *
 * Lease record value (16 bytes, big-endian):
 *
 *     0        4                12        16
 *     ┌────────┬─────────────────┬─────────┐
 *     │version │ E.wall (µs, u64)│E.logical│
 *     └────────┴─────────────────┴─────────┘
 *
 * Fence list value (big-endian), n fences, each its expiration and token:
 *
 *     0      4                  12          16      18
 *     ┌──────┬──────────────────┬───────────┬───────┬──────────────┬─ …
 *     │  n   │ F.wall (µs, u64) │ F.logical │ len   │ token (utf8) │  n−1 more
 *     │ u32  │                  │   u32     │ u16   │ len bytes    │
 *     └──────┴──────────────────┴───────────┴───────┴──────────────┴─ …
 *
 * An empty list is no key (deleted).
 *
 * Ownership: one LeaseManager per node (server-entry.ts), shared by its
 * sessions. Time comes from the KVDB's clock; ticks and sleeps are injected.
 */
import { CairnError } from '../../src/util/errors.js';
import { ZERO_TIMESTAMP, tsAddMicros, tsLess, tsMax, type Timestamp } from '../../src/util/hlc.js';
import { DESC_LEASE_SPAN, descFenceKey, descLeaseKey } from '../../storage/keys.js';
import { KVBatch, type KVDB, type KVTxn } from '../kv.js';
import { SCHEMA_VERSION_KEY, loadSnapshot, type Catalog, type CatalogSnapshot } from './catalog.js';
import { decodeUint } from './descriptor.js';

export interface LeaseManagerOptions {
  /** Lease duration (default 30 s); renewed when less than half is left. */
  readonly durationMs?: number;
  /** Background tick: watch for fences, renew (default 100 ms). */
  readonly tickMs?: number;
  /** How long a fence stays live at most (default 5 min): the schema change's commit deadline. */
  readonly fenceTtlMs?: number;
  /** Poll interval while a schema change waits for leases (default 10 ms). */
  readonly pollMs?: number;
  /** A statement takes the lease only if at least this much of it is left (default durationMs / 4). */
  readonly minRemainingMs?: number;
  readonly sleep: (ms: number) => Promise<void>;
  /** Schedules the next tick; returns a cancel function. */
  readonly schedule: (fn: () => void, ms: number) => () => void;
}

/** A statement's use of the lease: run against `snapshot`, commit below `deadline`. */
export interface LeaseUse {
  readonly snapshot: CatalogSnapshot;
  readonly deadline: Timestamp;
}

/** A schema change's fence; `deadline` bounds its commit. */
export interface SchemaFence {
  readonly token: string;
  readonly deadline: Timestamp;
}

interface Lease {
  readonly version: number;
  readonly expiration: Timestamp;
  readonly snapshot: CatalogSnapshot;
}

export function encodeLeaseRecord(version: number, e: Timestamp): Buffer {
  const b = Buffer.allocUnsafe(16);
  b.writeUInt32BE(version >>> 0, 0);
  b.writeBigUInt64BE(BigInt(e.wall), 4);
  b.writeUInt32BE(e.logical >>> 0, 12);
  return b;
}

export function decodeLeaseRecord(b: Buffer): { version: number; expiration: Timestamp } {
  if (b.length !== 16) throw new CairnError('sql.lease_corrupt', `sql: lease record of ${b.length} bytes`);
  return { version: b.readUInt32BE(0), expiration: { wall: Number(b.readBigUInt64BE(4)), logical: b.readUInt32BE(12) } };
}

/** The one key holding every schema change's fence. */
export const FENCE_LIST_KEY: Buffer = descFenceKey('list');

/** One schema change's fence in the list: its token and expiration. */
export interface FenceEntry {
  readonly token: string;
  readonly expiration: Timestamp;
}

/** The fence list's value (layout in the header); null for an empty list (the key is deleted). */
export function encodeFenceList(fences: readonly FenceEntry[]): Buffer | null {
  if (fences.length === 0) return null;
  const tokens = fences.map((f) => Buffer.from(f.token, 'utf8'));
  const b = Buffer.allocUnsafe(4 + tokens.reduce((n, t) => n + 14 + t.length, 0));
  b.writeUInt32BE(fences.length, 0);
  let o = 4;
  fences.forEach((f, i) => {
    const t = tokens[i] as Buffer;
    if (t.length > 0xffff) throw new CairnError('sql.lease_corrupt', `sql: fence token of ${t.length} bytes`);
    b.writeBigUInt64BE(BigInt(f.expiration.wall), o);
    b.writeUInt32BE(f.expiration.logical >>> 0, o + 8);
    b.writeUInt16BE(t.length, o + 12);
    t.copy(b, o + 14);
    o += 14 + t.length;
  });
  return b;
}

export function decodeFenceList(b: Buffer | null): FenceEntry[] {
  if (b === null) return [];
  const corrupt = (): CairnError => new CairnError('sql.lease_corrupt', `sql: fence list of ${b.length} bytes is malformed`);
  if (b.length < 4) throw corrupt();
  const n = b.readUInt32BE(0);
  const out: FenceEntry[] = [];
  let o = 4;
  for (let i = 0; i < n; i++) {
    if (o + 14 > b.length) throw corrupt();
    const len = b.readUInt16BE(o + 12);
    if (o + 14 + len > b.length) throw corrupt();
    out.push({ expiration: { wall: Number(b.readBigUInt64BE(o)), logical: b.readUInt32BE(o + 8) }, token: b.toString('utf8', o + 14, o + 14 + len) });
    o += 14 + len;
  }
  if (o !== b.length) throw corrupt();
  return out;
}

/** Writes `fences` as the list (deletes the key when empty). */
function putFenceList(b: KVBatch, fences: readonly FenceEntry[]): void {
  const v = encodeFenceList(fences);
  if (v === null) b.del(FENCE_LIST_KEY);
  else b.put(FENCE_LIST_KEY, v);
}

/** The list read by `txn` (one point read). */
async function readFenceList(txn: KVTxn): Promise<FenceEntry[]> {
  const b = new KVBatch();
  b.get(FENCE_LIST_KEY);
  const [r] = await txn.run(b);
  if (r?.kind !== 'get') throw new Error('lease: unexpected results');
  return decodeFenceList(r.value);
}

const MAX_ATTEMPTS = 50;

export class LeaseManager {
  private readonly durationMicros: number;
  private readonly tickMs: number;
  private readonly fenceTtlMicros: number;
  private readonly pollMs: number;
  private readonly minRemainingMicros: number;
  private lease: Lease | undefined;
  /** Statements running on the lease. */
  private inUse = 0;
  /** The highest commit timestamp a finished user reported. */
  private maxEndedTs: Timestamp = ZERO_TIMESTAMP;
  /** The last tick saw a live fence. */
  private fenceSeen = false;
  /** Fences held by this node's sessions. */
  private localFences = 0;
  /** Serializes this node's writes of its lease record (tick, release). */
  private recordMu: Promise<void> = Promise.resolve();
  private ticking = false;
  private cancelTick: (() => void) | undefined;
  private stopped = false;
  private fenceSeq = 0;
  /** Counters for tests and metrics. */
  readonly stats = { acquisitions: 0, releases: 0, uses: 0, fallbacks: 0, fences: 0 };

  constructor(
    private readonly db: KVDB,
    private readonly catalog: Catalog,
    private readonly opts: LeaseManagerOptions,
  ) {
    this.durationMicros = (opts.durationMs ?? 30_000) * 1000;
    this.tickMs = opts.tickMs ?? 100;
    this.fenceTtlMicros = (opts.fenceTtlMs ?? 300_000) * 1000;
    this.pollMs = opts.pollMs ?? 10;
    this.minRemainingMicros = (opts.minRemainingMs ?? (opts.durationMs ?? 30_000) / 4) * 1000;
  }

  /** Starts the background tick (the first one at once). */
  start(): void {
    this.stopped = false;
    this.scheduleTick(0);
  }

  stop(): void {
    this.stopped = true;
    this.cancelTick?.();
    this.cancelTick = undefined;
  }

  /** The lease for a new implicit statement, or undefined: read the schema version instead. */
  acquire(): LeaseUse | undefined {
    const l = this.lease;
    if (l === undefined || this.fenceSeen || this.localFences > 0 || !tsLess(tsAddMicros(this.db.now(), this.minRemainingMicros), l.expiration)) {
      this.stats.fallbacks++;
      return undefined;
    }
    this.inUse++;
    this.stats.uses++;
    return { snapshot: l.snapshot, deadline: l.expiration };
  }

  /** The statement of `acquire` ended; `ts` is at least its commit timestamp (its provisional one). */
  release(ts: Timestamp): void {
    this.inUse--;
    this.maxEndedTs = tsMax(this.maxEndedTs, ts);
  }

  /** The version currently leased (tests). */
  leasedVersion(): number | undefined {
    return this.lease?.version;
  }

  /**
   * Fences a schema change (steps 1–3 of the header): on return no node uses
   * a lease any more and the caller's write of the version key will commit
   * above every earlier use. Call unfence() once the change's transaction ended.
   */
  async fence(): Promise<SchemaFence> {
    this.localFences++;
    this.stats.fences++;
    try {
      const token = `${this.db.nodeId}.${++this.fenceSeq}.${Math.floor(this.db.now().wall)}`;
      const deadline = tsAddMicros(this.db.now(), this.fenceTtlMicros);
      await this.runTxn(async (txn) => {
        const at = txn.readTimestamp();
        // Expired fences (their schema changes cannot commit any more) are dropped on the way.
        const live = (await readFenceList(txn)).filter((f) => tsLess(at, f.expiration));
        const b = new KVBatch();
        putFenceList(b, [...live, { token, expiration: deadline }]);
        await txn.commitInBatch(b);
      });
      await this.releaseLease();
      await this.waitForLeases(deadline);
      return { token, deadline };
    } catch (e) {
      this.localFences--;
      throw e;
    }
  }

  /** Removes the fence (best effort: a fence left behind expires) and lets leases be taken again. */
  async unfence(f: SchemaFence): Promise<void> {
    try {
      await this.runTxn(async (txn) => {
        const fences = await readFenceList(txn);
        const rest = fences.filter((e) => e.token !== f.token);
        if (rest.length === fences.length) return txn.commit();
        const b = new KVBatch();
        putFenceList(b, rest);
        await txn.commitInBatch(b);
      });
    } catch {
      // Expires at f.deadline.
    } finally {
      this.localFences--;
    }
    if (this.localFences === 0 && !this.stopped) void this.tick();
  }

  /** One tick: watch for fences, take or renew the lease (or release it under a fence). */
  async tick(): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      await this.withRecordMu(() => this.tickLocked());
    } catch {
      // Transient KV trouble: the next tick tries again; meanwhile statements read the version.
    } finally {
      this.ticking = false;
    }
    if (this.fenceSeen && this.lease !== undefined) await this.releaseLease().catch(() => undefined);
  }

  private async tickLocked(): Promise<void> {
    const txn = this.db.newTxn();
    try {
      const b = new KVBatch();
      b.get(SCHEMA_VERSION_KEY);
      b.get(FENCE_LIST_KEY);
      const [v, f] = await txn.run(b);
      if (v?.kind !== 'get' || f?.kind !== 'get') throw new Error('lease: unexpected results');
      const version = decodeUint(v.value);
      const at = txn.readTimestamp();
      const w = new KVBatch();
      const fences = decodeFenceList(f.value);
      const live = fences.some((e) => tsLess(at, e.expiration));
      // All listed fences expired: their schema changes cannot commit any more (deadline F); the list goes.
      if (!live && fences.length > 0) putFenceList(w, []);
      this.fenceSeen = live || this.localFences > 0;
      const l = this.lease;
      const renew = l === undefined || l.version !== version || tsLess(l.expiration, tsAddMicros(this.db.now(), this.durationMicros / 2));
      if (this.fenceSeen || !renew || version === 0) {
        await txn.commitInBatch(live ? new KVBatch() : w);
        return;
      }
      const snapshot = l?.version === version ? l.snapshot : this.catalog.cached()?.version === version ? (this.catalog.cached() as CatalogSnapshot) : await loadSnapshot(txn);
      const expiration = tsAddMicros(at, this.durationMicros);
      w.put(descLeaseKey(this.db.nodeId), encodeLeaseRecord(version, expiration));
      await txn.commitInBatch(w);
      // Installed even when a fence of this node began meanwhile: acquire() hands it to nobody then, and the fence's
      // release, queued behind this tick on recordMu, shortens the record just written.
      this.lease = { version, expiration, snapshot };
      this.stats.acquisitions++;
      this.catalog.offer(snapshot);
    } catch (e) {
      await txn.rollback();
      throw e;
    }
  }

  /** Step 2: stop using the lease, wait for its users (at most until it expires), rewrite the record with E'. */
  private async releaseLease(): Promise<void> {
    await this.withRecordMu(async () => {
      const l = this.lease;
      if (l === undefined) return;
      this.lease = undefined;
      this.fenceSeen = true;
      while (this.inUse > 0 && tsLess(this.db.now(), l.expiration)) await this.opts.sleep(this.pollMs);
      if (this.inUse > 0) return; // expired: nothing to shorten
      const shortened = tsMax(this.db.now(), this.maxEndedTs);
      await this.runTxn(async (txn) => {
        const b = new KVBatch();
        b.put(descLeaseKey(this.db.nodeId), encodeLeaseRecord(l.version, shortened));
        await txn.commitInBatch(b);
      });
      this.stats.releases++;
    });
  }

  /** Step 3: polls until every lease record expired below the poll's timestamp (which also reads the version key). */
  private async waitForLeases(deadline: Timestamp): Promise<void> {
    for (;;) {
      const done = await this.runTxn(async (txn) => {
        const b = new KVBatch();
        b.get(SCHEMA_VERSION_KEY);
        b.scan(DESC_LEASE_SPAN.key, DESC_LEASE_SPAN.endKey);
        const [, s] = await txn.run(b);
        if (s?.kind !== 'scan') throw new Error('lease: unexpected results');
        const q = txn.readTimestamp();
        await txn.commit();
        return s.rows.every((r) => tsLess(decodeLeaseRecord(r.value).expiration, q));
      }, { readOnly: true });
      if (done) return;
      if (!tsLess(this.db.now(), deadline)) throw new CairnError('sql.lease_wait_timeout', 'restart transaction: schema change timed out waiting for descriptor leases', { retryable: true, sqlState: '40001' });
      await this.opts.sleep(this.pollMs);
    }
  }

  private async runTxn<T>(fn: (txn: KVTxn) => Promise<T>, txnOpts?: { readOnly: boolean }): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const txn = this.db.newTxn(txnOpts);
      try {
        return await fn(txn);
      } catch (e) {
        await txn.rollback();
        if (!(e instanceof CairnError && e.retryable) || attempt >= MAX_ATTEMPTS) throw e;
      }
    }
  }

  private withRecordMu(fn: () => Promise<void>): Promise<void> {
    const next = this.recordMu.then(fn);
    this.recordMu = next.catch(() => undefined);
    return next;
  }

  private scheduleTick(ms: number): void {
    if (this.stopped) return;
    this.cancelTick = this.opts.schedule(() => {
      void this.tick().finally(() => this.scheduleTick(this.tickMs));
    }, ms);
  }
}
