/**
 * The transaction layer's part of a Replica's request path on the
 * leaseholder (CockroachDB's replica_send + concurrency_manager hooks):
 *
 *   send(ba) ─► ensureLease ─► sequence: latches (concurrency/latch-manager.ts,
 *                              interval trees) + lock table (concurrency/
 *                              lock-table.ts): a request that meets another
 *                              transaction's lock waits in the key's queue with
 *                              its latches released, and is woken when the lock
 *                              is released (resolution, commit, abort)
 *            ─► prepare(h): request timestamp bounds (non-txn: ≤ now + max
 *                           offset); writes pushed above the timestamp cache
 *            ─► evaluate ─► an intent the lock table did not know
 *                           (WriteIntentError) becomes a discovered lock and the
 *                           request waits for it (handleWriteIntentError)
 *            ─► finish(h): the batch's reads enter the timestamp cache (with the
 *                          keys conditional puts read: their intents may be rolled
 *                          back by a savepoint and removed at commit); push/query
 *                          responses get the waiters' ids (deadlock detection);
 *                          onApplied: locks acquired (intents written, FOR UPDATE)
 *                          and released (ResolveIntent, EndTxn's local resolution)
 *            ─► finishReq: latches released, the request leaves the lock table
 *
 * Pushing stays with the client (departure, see below): a waiter that has
 * been blocked by one and the same transaction for `pushAfterDelays` push
 * delays of `pushDelayMs` (300 ms) leaves the queue with a WriteIntentError
 * naming the blocker, and the client's TxnPusher pushes it (priority,
 * liveness, STAGING recovery, waits-for cycles) and resends. The common case
 * — the holder commits or aborts meanwhile, e.g. a hot key's holders
 * succeeding each other — never leaves the server: waiters are woken in
 * queue order, keeping their places, and evaluate at once.
 *
 * Locking reads (GetRequest/ScanRequest.lock 'exclusive', SELECT FOR
 * UPDATE) queue like writers and leave an unreplicated lock, which blocks
 * other transactions' writes and locking reads, and their plain reads at or
 * above it (CockroachDB's exclusive locks; PostgreSQL lets plain reads pass,
 * but here a stream of reads above the holder would push its writes above
 * them forever). One that meets a newer committed version is
 * evaluated again just above it, with its batch, and the response's
 * timestamp tells the coordinator to refresh its earlier reads
 * (evaluateReads; CockroachDB's server-side refresh) — so a woken waiter
 * reads its predecessor's write without a round trip to its client.
 *
 * Lock-table contents are leaseholder memory: cleared (waiters woken to
 * re-scan and rediscover intents; unreplicated FOR UPDATE locks lost) when a
 * lease of another holder applies, when the range's bounds change (split: each side
 * rediscovers its intents; merge: the right-hand side's locks were never
 * here) and when the replica stops (removal).
 *
 * Timestamp cache (kv/concurrency/timestamp-cache.ts): one per replica,
 * keyed by user keys (range-local keys — txn records — are never cached).
 * Its low-water mark is raised to the lease start whenever a new lease
 * (new sequence) applies — unless it is the same replica's lapsed lease
 * taken again (onLeaseApplied) — (DESIGN.md §6) — and further, to a horizon above
 * any read another holder can have served (see horizon()); a lease handed to
 * this replica by a transfer carries the outgoing holder's read summary
 * instead, and the cache starts over there — and to that
 * horizon when the replica is created (a restart or a split forgets the
 * reads served before it) or its descriptor widens (a merge brings in reads
 * the right-hand range served).
 * A write below a read is pushed to just above it (a read of its own
 * transaction too, when above the write: the cache's one maximum per key may
 * hide other reads beneath it). A transactional batch then returns its new timestamp (BatchResponse.timestamp), which the
 * coordinator refreshes to; a batch that commits (EndTxn) is refused with
 * TxnRetryError(RETRY_SERIALIZABLE) instead, since its reads were not
 * validated at the pushed timestamp.
 *
 * Waiters: PushTxn requests that could not push register (pushee ← pusher
 * + the pusher's own dependents) for a few seconds; PushTxn and QueryTxn
 * responses carry the transitive set of waiters of their transaction, which
 * the pusher uses to detect a waits-for cycle across ranges
 * (txn-pusher.ts). The registry is leaseholder memory: a lease move
 * loses it, and pushers re-register on their next push.
 *
 * Departures (known gaps): the push runs on the client (the Store has no
 * KV sender to address a pushee's record from the server), so a waiter
 * keeps its place only while its blocker changes; deadlocks are found
 * about pushAfterDelays × pushDelayMs after they form, by the clients'
 * pushers, and a waiter that went back to its client re-queues at the end.
 * Latches are not MVCC-aware (a read and a write of one key are serialized
 * whatever their timestamps, as the stand-in they replaced did). *
 * Ownership: one per Replica; called only from Replica.send (and its
 * lease/descriptor/stop hooks). Time comes from the injected clock and sleep.
 */
import { ZERO_TIMESTAMP, compareTimestamps, tsLess, tsLessEq, tsMax, tsNext, type Clock, type Timestamp } from '../util/hlc.js';
import { isLocal } from '../../storage/keys.js';
import { ConditionFailedError, WriteIntentError, WriteTooOldError, type Intent, type TxnMeta } from '../../storage/mvcc.js';
import type { Lease, Request, Response, ScanResponse } from './api.js';
import type { DeclaredSpan, EvalHeader } from './batcheval/command.js';
import { ConcurrencyManager, type Pusher, type RequestGuard, type SequencedRequest } from './concurrency/concurrency-manager.js';
import type { LatchGuard, LatchManager } from './concurrency/latch-manager.js';
import type { LockTable, LockTxn, LockUpdate } from './concurrency/lock-table.js';
import type { DeclaredSpan as LatchSpan } from './concurrency/span-set.js';
import { TimestampCache } from './concurrency/timestamp-cache.js';
import { DEFAULT_KV_SETTINGS } from './settings.js';
import { TimestampInFutureError, TxnRetryError, type TxnRecordResponse } from './txn-api.js';

/** The requests that go through the lock table: clients' MVCC reads and writes (record, resolution, refresh, lease and admin commands never wait for locks). */
const LOCK_TABLE_KINDS: ReadonlySet<string> = new Set(['get', 'scan', 'reverseScan', 'put', 'cput', 'delete', 'deleteRange']);

/** How often a waiter checks whether it is still blocked by the same transaction (ms; KvSettings.lockPushDelayMs). */
export const DEFAULT_PUSH_DELAY_MS = DEFAULT_KV_SETTINGS.lockPushDelayMs;

/**
 * Push delays a waiter spends behind one and the same blocking transaction
 * before it goes back to its client, which pushes it: a hot key's holders
 * change every few milliseconds and their waiters keep their places; a
 * deadlocked or abandoned holder does not.
 */
export const DEFAULT_PUSH_AFTER_DELAYS = 3;

/**
 * The most intents of one blocker a waiter hands its client in one
 * WriteIntentError (CockroachDB's max_intents_per_error is 5,000): the
 * client pushes once and resolves them in one batch (IntentResolver pages it).
 */
const MAX_INTENTS_PER_PUSH = 5_000;

/** Server-side timestamp bumps of a read batch whose locking reads met newer versions. */
const MAX_READ_BUMPS = 3;

/** Evaluations of one request that may meet intents unknown to the lock table before the client handles them. */
const MAX_DISCOVERY_ROUNDS = 3;

export interface ReplicaConcurrencyOptions {
  /** Timer of the push delay (default setTimeout). */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly pushDelayMs?: number;
  readonly pushAfterDelays?: number;
}

/** A request sequenced through latches and the lock table; hand it back to finishReq. */
export interface SequencedGuard {
  readonly guard: RequestGuard;
  /** The spans every request of the batch declared (batcheval), in order. */
  readonly spans: readonly DeclaredSpan[];
  /** Evaluations that met intents the lock table did not know. */
  discoveries: number;
}

function latchSpan(s: DeclaredSpan): LatchSpan {
  return { access: s.write ? 'write' : 'read', span: s };
}

/** Whether a request reads with an exclusive lock (SELECT FOR UPDATE). */
function isLockingRead(q: Request): q is Extract<Request, { kind: 'get' | 'scan' | 'reverseScan' }> {
  return (q.kind === 'get' || q.kind === 'scan' || q.kind === 'reverseScan') && q.lock === 'exclusive';
}

/** Transactional requests may run this many max offsets ahead of the serving clock (non-transactional: one). */
export const MAX_FUTURE_OFFSETS = 1;

/** The requests whose writes the timestamp cache pushes. */
const PUSHED_KINDS: ReadonlySet<string> = new Set(['put', 'cput', 'delete', 'deleteRange', 'endTxn']);

/** Writes that read nothing: a transactional batch of only these is pushed silently (the response timestamp tells). */
const BLIND_KINDS: ReadonlySet<string> = new Set(['put', 'delete', 'endTxn', 'beginTxn', 'heartbeatTxn']);

/** How long an unanswered push keeps its waiter registered (µs). */
const WAITER_TTL_MICROS = 2_000_000;

interface Waiter {
  deps: readonly string[];
  at: number;
}

export class ReplicaConcurrency {
  readonly tscache: TimestampCache;
  /** Latches and the lock table, sequenced together (concurrency/concurrency-manager.ts). */
  readonly manager: ConcurrencyManager;
  private readonly waiters = new Map<string, Map<string, Waiter>>();
  /** Point reads served on Replica's fast path (unsequenced), since creation. */
  fastPointReads = 0;
  /** Of those, locking gets (FOR UPDATE, an implicit UPDATE's row read), since creation. */
  fastLockingReads = 0;
  /**
   * What contention cost this replica since creation (node metrics sum them
   * over replicas): sequenced batches that waited in the lock table at least
   * once (counted when the wait begins: also a wait for an intent met in
   * evaluation, and one that ends handed back to the client); waits handed back to the client's pusher (WriteIntentError after
   * pushAfterDelays); intents met in evaluation the table did not know;
   * locking reads evaluated again above a newer version (server-side
   * refresh); writes pushed by the timestamp cache, and of those the ones
   * refused (RETRY_SERIALIZABLE: the batch read, or committed).
   */
  readonly counters = { lockWaits: 0, pushHandoffs: 0, discoveries: 0, readBumps: 0, tscachePushes: 0, tscacheRetries: 0 };
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly pushDelayMs: number;
  /** Planted-bug switch for the randomized test: skip the timestamp-cache push of writes. */
  static skipTsCacheBump = false;

  constructor(
    private readonly clock: Clock,
    opts: ReplicaConcurrencyOptions = {},
  ) {
    this.tscache = new TimestampCache({ lowWater: this.horizon() });
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.pushDelayMs = opts.pushDelayMs ?? DEFAULT_PUSH_DELAY_MS;
    const pushAfter = opts.pushAfterDelays ?? DEFAULT_PUSH_AFTER_DELAYS;
    const blockedBy = new WeakMap<SequencedRequest, { key: Buffer; txn: Buffer; delays: number }>();
    const pusher: Pusher = {
      push: (req, o) => {
        let b = blockedBy.get(req);
        if (b === undefined || !b.key.equals(o.key) || !b.txn.equals(o.pushee.id)) blockedBy.set(req, (b = { key: o.key, txn: o.pushee.id, delays: 0 }));
        if (++b.delays >= pushAfter) {
          blockedBy.delete(req);
          this.counters.pushHandoffs++;
          // The push itself is the client's (see the header): name the blocker to it, with every intent of the
          // blocker in this request's way — one push then resolves them all in one batch (a reader behind a bulk
          // writer's thousands of intents would otherwise pay push delays and a push per intent).
          const keys = this.manager.lockTable.intentsHeldBy(o.pushee, req.lockSpans, MAX_INTENTS_PER_PUSH);
          if (!keys.some((k) => k.equals(o.key))) keys.unshift(o.key);
          return Promise.reject(new WriteIntentError(keys.map((key) => ({ key, txn: o.pushee as TxnMeta }))));
        }
        // Keep the place in the queue and wait another delay (sequenceReq re-scans with the same guard).
        return Promise.resolve();
      },
      pushDelay: () => this.sleep(this.pushDelayMs),
    };
    this.manager = new ConcurrencyManager({ pusher, onFirstWait: () => this.counters.lockWaits++ });
  }

  get latches(): LatchManager {
    return this.manager.latches;
  }

  get lockTable(): LockTable {
    return this.manager.lockTable;
  }

  /** Requests holding or waiting for latches. */
  get activeRequests(): number {
    const m = this.manager.latches.metrics();
    return m.held + m.waiting;
  }

  /** Latches alone, for the replica's own commands (lease requests), which never wait for locks. */
  acquireLatches(spans: readonly DeclaredSpan[], signal?: AbortSignal): Promise<LatchGuard> {
    return this.manager.latches.acquire(spans.map(latchSpan), signal);
  }

  /**
   * Sequences a batch: returns once it holds its latches and no other
   * transaction's lock blocks it (waiting, with latches released, in the
   * lock table's queues). `declare` adds one request's spans (batcheval's
   * declareKeys). Rejects with WriteIntentError when a blocker outlives the
   * push delay (the client pushes it), having left the lock table.
   */
  async sequence(h: EvalHeader, reqs: readonly Request[], declare: (q: Request, out: DeclaredSpan[]) => void): Promise<SequencedGuard> {
    const spans: DeclaredSpan[] = [];
    const lockSpans: LatchSpan[] = [];
    for (const q of reqs) {
      const from = spans.length;
      declare(q, spans);
      if (!LOCK_TABLE_KINDS.has(q.kind)) continue;
      for (let i = from; i < spans.length; i++) {
        const s = spans[i] as DeclaredSpan;
        if (!isLocal(s.key)) lockSpans.push(latchSpan(s));
      }
    }
    const zero = compareTimestamps(h.timestamp, ZERO_TIMESTAMP) === 0;
    // A read must also wait for intents in its uncertainty window (evaluation would meet them), as CockroachDB's.
    const ts = zero ? this.clock.now() : h.uncertaintyLimit === undefined ? h.timestamp : tsMax(h.timestamp, h.uncertaintyLimit);
    const guard = await this.manager.sequenceReq({
      ...(h.txn === undefined ? {} : { txn: h.txn }),
      timestamp: ts,
      latchSpans: spans.map(latchSpan),
      lockSpans,
    });
    return { guard, spans, discoveries: 0 };
  }

  /**
   * The point-read fast path (Replica.serveReadsFast): whether a plain read
   * of the user key `key` may evaluate at once, unsequenced — no write latch,
   * held or queued, and no lock-table entry covers it, which is exactly when
   * sequence() would neither wait nor leave anything behind. Valid only in the
   * caller's synchronous step: it evaluates and calls recordPointRead before
   * yielding, so nothing can latch or lock the key in between.
   */
  pointReadUnblocked(key: Buffer): boolean {
    return !this.manager.latches.writeLatchedAt(key) && !this.manager.lockTable.hasLockAt(key);
  }

  /** Whether checkRequestTimestamp(ts) would return at once (no wait for the clock, no error). */
  timestampServableNow(ts: Timestamp, now: Timestamp): boolean {
    return ts.wall - now.wall <= MAX_FUTURE_OFFSETS * this.clock.maxOffsetMicros;
  }

  /**
   * A fast-path locking get (Replica.serveReadsFast) leaves its transaction's
   * unreplicated lock, as onApplied does for a sequenced one. Only in the
   * caller's synchronous step after pointReadUnblocked(key) held.
   */
  acquireFastLock(txn: LockTxn, key: Buffer): void {
    this.fastLockingReads++;
    this.manager.lockTable.acquireLock(txn, key, 'unreplicated');
  }

  /** A fast-path point read at `ts` enters the timestamp cache, as finish() records a sequenced one. */
  recordPointRead(key: Buffer, ts: Timestamp, txnId: string | undefined): void {
    this.fastPointReads++;
    this.tscache.add({ key, endKey: null }, ts, txnId);
  }

  /**
   * Evaluation met intents the lock table did not know: records them as locks
   * and waits for them as for any lock (latches released meanwhile). Returns
   * false when the request should hand the intents to its client instead
   * (it met fresh intents too often, or it does not use the lock table).
   */
  async handleWriteIntentError(sg: SequencedGuard, intents: readonly Intent[]): Promise<boolean> {
    if (sg.guard.req.lockSpans.length === 0 || ++sg.discoveries > MAX_DISCOVERY_ROUNDS) return false;
    this.counters.discoveries++;
    this.manager.handleWriterIntentError(sg.guard, intents);
    await this.manager.sequenceReq(sg.guard.req, sg.guard);
    return true;
  }

  /** The request is done: latches released, out of the lock table. */
  finishReq(sg: SequencedGuard): void {
    this.manager.finishReq(sg.guard);
  }

  /**
   * After a batch took effect on the leaseholder (a read answered, a write
   * applied), under its latches: its transaction's locks are acquired
   * (intents written: replicated; locking reads: unreplicated) and the
   * locks its resolutions and EndTxn released are released, waking waiters.
   */
  onApplied(h: EvalHeader, reqs: readonly Request[], responses: readonly Response[]): void {
    const lt = this.manager.lockTable;
    for (let i = 0; i < reqs.length; i++) {
      const q = reqs[i] as Request;
      switch (q.kind) {
        case 'put':
        case 'cput':
        case 'delete':
          if (h.txn !== undefined) lt.tryAcquireLock(h.txn, q.key, 'replicated');
          break;
        case 'get':
          if (h.txn !== undefined && q.lock === 'exclusive') lt.tryAcquireLock(h.txn, q.key, 'unreplicated');
          break;
        case 'scan':
        case 'reverseScan':
          if (h.txn !== undefined && q.lock === 'exclusive') for (const row of (responses[i] as ScanResponse).rows) lt.tryAcquireLock(h.txn, row.key, 'unreplicated');
          break;
        case 'resolveIntent':
        case 'resolveIntentRange':
          lt.updateLocks({ span: { key: q.key, endKey: q.kind === 'resolveIntentRange' ? q.endKey : null }, txn: q.txn, status: q.status });
          break;
        case 'endTxn': {
          // EndTxn resolved its local intents (and, 1PC, never wrote any): its locks here go.
          const rec = (responses[i] as TxnRecordResponse | undefined)?.record;
          if (rec === null || rec === undefined || (rec.status !== 'committed' && rec.status !== 'aborted') || h.txn === undefined) break;
          const txn = { ...h.txn, epoch: rec.epoch, writeTimestamp: rec.writeTimestamp };
          for (const s of q.lockSpans) lt.updateLocks({ span: s, txn, status: rec.status } satisfies LockUpdate);
          break;
        }
        default:
          break;
      }
    }
  }

  /**
   * Evaluates a read-only batch. A transaction's locking read that meets a
   * newer committed version (WriteTooOldError) is evaluated again, with the
   * whole batch, just above it (CockroachDB's server-side refresh): the
   * response's timestamp tells the coordinator, which refreshes its earlier
   * reads to it — no round trip back and forth while holding the lock.
   */
  async evaluateReads(h: EvalHeader, reqs: readonly Request[], evaluate: (h: EvalHeader) => Promise<Response[]>): Promise<{ h: EvalHeader; responses: Response[] }> {
    for (let attempt = 0; ; attempt++) {
      try {
        return { h, responses: await evaluate(h) };
      } catch (e) {
        if (!(e instanceof WriteTooOldError) || h.txn === undefined || attempt >= MAX_READ_BUMPS || !reqs.some(isLockingRead)) throw e;
        const ts = e.actualTimestamp;
        this.counters.readBumps++;
        await this.checkRequestTimestamp(ts, true);
        h = { ...h, timestamp: ts, txn: { ...h.txn, writeTimestamp: ts } };
      }
    }
  }

  /** Forgets every lock and wakes the waiters (lease change, bounds change, replica stopped). */
  clearLocks(): void {
    this.manager.lockTable.clear();
  }

  /**
   * Above every read another replica (or this one before a restart) can have
   * served: those reads ran at most MAX_FUTURE_OFFSETS max offsets ahead of
   * that node's clock, which is at most one max offset ahead of ours.
   */
  private horizon(): Timestamp {
    const n = this.clock.now();
    return { wall: n.wall + (MAX_FUTURE_OFFSETS + 1) * this.clock.maxOffsetMicros, logical: 0 };
  }

  /**
   * A new lease applied: the cache starts above the lease start and above
   * what the previous holder may have served. Transactional timestamps run
   * ahead of clocks (pushes, refreshes), so the lease start alone would let a
   * write slip under a future-timestamp read the previous holder served.
   * A transfer carries the previous holder's read summary (`priorReadSummary`,
   * its maxRead() taken under a latch over the whole range, so no read of its
   * lease can come after it — Replica.proposeLease): the new holder's cache
   * starts over there (the replica passes it only for its own lease).
   * Any other change of hands (an expired lease taken over, a lease installed
   * by a snapshot) knows nothing of what was served: the horizon stands in
   * (writes right after it are pushed up to 2 max offsets ahead, and a
   * non-transactional one waits for the clock to pass it — about 1 s at the
   * default max offset, which a drain or rebalancing transfer must not cost).
   *
   * Not when the lease stays with its replica: the holder's own lapsed lease
   * re-acquired (sequence prev+1, same replica — no other lease can lie
   * between two consecutive sequences) leaves the lock table and the cache
   * as they are: this replica served every read and wrote every lock of the
   * range since its lease began, and nobody served in the gap (CockroachDB
   * bumps the cache only when a lease changes hands). Bumping there pushed
   * every write of the next 2 max offsets into the future, each waiting for
   * the clock (retryNonTxnWriteTooOld's commit wait; up to 1 s at the default
   * 500 ms max offset) — on every active range whose lease lapsed while it
   * was quiescent between bursts of requests (bench:kv with 6 ranges).
   */
  onLeaseApplied(lease: Lease, prev: Lease | null, priorReadSummary?: Timestamp): void {
    if (prev !== null && prev.sequence === lease.sequence) return;
    if (prev !== null && lease.sequence === prev.sequence + 1 && lease.replica.replicaId === prev.replica.replicaId) return;
    this.clearLocks();
    if (priorReadSummary !== undefined) {
      // The summary covers every read served on the range (each holder's cache starts above its predecessors'):
      // whatever this cache was raised to while others held the lease (a horizon at a lease it applied while
      // catching up, at its creation) is subsumed.
      this.tscache.reset(tsMax(priorReadSummary, lease.start));
      return;
    }
    this.tscache.setLowWater(lease.start);
    this.tscache.setLowWater(this.horizon());
  }

  /** What this holder has served, for a lease transfer (see onLeaseApplied): call only under the transfer's latches. */
  readSummary(): Timestamp {
    return this.tscache.maxRead();
  }

  /** The range's bounds changed: a merge absorbed reads served elsewhere; locks of either side are rediscovered. */
  onDescriptorChanged(widened: boolean): void {
    this.clearLocks();
    if (widened) this.tscache.setLowWater(this.horizon());
  }

  /**
   * A non-transactional request may not read or write beyond now + max
   * offset (no clock could have produced it). Transactional timestamps may
   * legitimately run ahead (pushes above a reader's uncertainty limit, a
   * fresh range's timestamp-cache horizon): beyond MAX_FUTURE_OFFSETS max
   * offsets ahead they wait for the clock (up to 10 max offsets ahead; past
   * that, TimestampInFutureError), so no read is ever served further ahead
   * of its clock than horizon() assumes. The HLC itself is updated from the
   * RPC's clock reading, never from request timestamps.
   */
  async checkRequestTimestamp(ts: Timestamp, transactional: boolean): Promise<void> {
    if (ts.wall === 0 && ts.logical === 0) return;
    const offset = this.clock.maxOffsetMicros;
    for (;;) {
      const now = this.clock.now();
      const ahead = ts.wall - now.wall;
      if (!transactional && ahead > offset) throw new TimestampInFutureError(ts, now, offset);
      if (ahead <= MAX_FUTURE_OFFSETS * offset) return;
      // A transaction pushed far ahead waits for the clock (bounded) instead of being served further ahead than the horizon covers.
      if (ahead > 10 * offset) throw new TimestampInFutureError(ts, now, 10 * offset);
      await new Promise((r) => setTimeout(r, Math.ceil((ahead - MAX_FUTURE_OFFSETS * offset) / 1000) + 1));
    }
  }

  /**
   * Parallel commit: an EndTxn's in-flight writes that travel in the same
   * batch are durable with the record (one Raft command), so they leave the
   * list; every write left is in flight elsewhere. Decided by batch
   * membership, never by key range: a stale client cache may send a merged
   * range the record and a write in two separate batches.
   */
  rewriteBatch(reqs: readonly Request[]): readonly Request[] {
    let end = -1;
    for (let i = 0; i < reqs.length; i++) if ((reqs[i] as Request).kind === 'endTxn') end = i;
    if (end < 0) return reqs;
    const q = reqs[end] as Extract<Request, { kind: 'endTxn' }>;
    if (q.inFlightWrites.length === 0) return reqs;
    const here = new Set<string>();
    for (const r of reqs) if (r.kind === 'put' || r.kind === 'cput' || r.kind === 'delete') here.add(r.key.toString('latin1'));
    const rest = q.inFlightWrites.filter((w) => !here.has(w.key.toString('latin1')));
    if (rest.length === q.inFlightWrites.length) return reqs;
    const out = [...reqs];
    out[end] = { ...q, inFlightWrites: rest };
    return out;
  }

  /** Pushes a write batch above the reads already served on its spans. */
  prepare(h: EvalHeader, reqs: readonly Request[], isWrite: boolean): EvalHeader {
    if (!isWrite || ReplicaConcurrency.skipTsCacheBump) return h;
    // Only MVCC writes of clients move; admin, lease, resolution and record commands keep their timestamps.
    if (!reqs.some((q) => PUSHED_KINDS.has(q.kind))) return h;
    const own = h.txn === undefined ? undefined : h.txn.id.toString('hex');
    let max: Timestamp | null = null;
    for (const q of reqs) {
      // The keys this batch writes. Not an EndTxn's lock spans: their intents were pushed above earlier reads when
      // they were written, and later readers met them (so the record, not the cache, tells of pushes) — pushing the
      // finalization of an implicitly committed (STAGING) transaction would strand its intents.
      if (!PUSHED_KINDS.has(q.kind) || q.kind === 'endTxn') continue;
      const s = q as { key: Buffer; endKey?: Buffer };
      if (isLocal(s.key)) continue;
      const r = this.tscache.getMax({ key: s.key, endKey: s.endKey ?? null });
      // The transaction's own read is no reason to move — unless it lies above the write: the cache keeps one maximum
      // per key, so it may hide other transactions' reads between the two (a read its coordinator never learnt of: a
      // locking read bumped by evaluateReads in a batch whose other part failed elsewhere).
      if (own !== undefined && r.txnId === own && tsLessEq(r.ts, h.timestamp)) continue;
      if (tsLessEq(h.timestamp, r.ts) && (max === null || tsLess(max, r.ts))) max = r.ts;
    }
    if (max === null) return h;
    const ts = tsNext(max);
    this.counters.tscachePushes++;
    if (h.txn === undefined) return { ...h, timestamp: ts };
    for (const q of reqs) {
      if ((q.kind === 'endTxn' && q.commit) || !BLIND_KINDS.has(q.kind)) this.counters.tscacheRetries++;
      if (q.kind === 'endTxn' && q.commit) throw new TxnRetryError('RETRY_SERIALIZABLE', 'a write of the committing batch was pushed by the timestamp cache', ts);
      // Nothing is read at a pushed timestamp the coordinator does not know of (a failed cput would report a value
      // from its future; and it may lie beyond what horizon() covers): it refreshes first and retries.
      if (!BLIND_KINDS.has(q.kind)) throw new TxnRetryError('RETRY_SERIALIZABLE', `a ${q.kind} was pushed by the timestamp cache`, ts);
    }
    return { ...h, timestamp: ts, txn: { ...h.txn, writeTimestamp: ts } };
  }

  /**
   * Runs a write batch's evaluation. A failed conditional put still enters
   * the timestamp cache. A non-transactional write that meets a newer version is evaluated again
   * at the timestamp the error names (CockroachDB's server-side bump), so a
   * pushed non-transactional write does not fail on its own push.
   */
  async retryNonTxnWriteTooOld<T>(h: EvalHeader, evaluate: (h: EvalHeader) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await evaluate(h);
        // Server-side commit wait: a non-transactional write pushed ahead of the clock is acknowledged once the clock passes it.
        if (h.txn === undefined) {
          for (let ahead = h.timestamp.wall - this.clock.now().wall; ahead >= 0; ahead = h.timestamp.wall - this.clock.now().wall) {
            await new Promise((r) => setTimeout(r, Math.ceil(ahead / 1000) + 1));
          }
        }
        return res;
      } catch (e) {
        // A failed conditional put has read its key: that read must hold against later writers (CockroachDB's updatesTSCacheOnErr).
        if (e instanceof ConditionFailedError) this.tscache.add({ key: e.key, endKey: null }, h.timestamp, h.txn?.id.toString('hex'));
        if (h.txn !== undefined || !(e instanceof WriteTooOldError) || attempt >= 3) throw e;
        h = { ...h, timestamp: e.actualTimestamp };
      }
    }
  }

  /** After a successful evaluation: records reads; annotates push/query responses with waiters. */
  finish(h: EvalHeader, reqs: readonly Request[], spans: readonly DeclaredSpan[], responses: Response[]): void {
    const own = h.txn === undefined ? undefined : h.txn.id.toString('hex');
    for (const s of spans) {
      if (s.write || isLocal(s.key)) continue;
      this.tscache.add({ key: s.key, endKey: s.endKey }, h.timestamp, own);
    }
    for (let i = 0; i < reqs.length; i++) {
      const q = reqs[i] as Request;
      // A locking read declares its key as written (latches, lock table), but it read it all the same.
      if (isLockingRead(q)) this.tscache.add({ key: q.key, endKey: q.kind === 'get' ? null : q.endKey }, h.timestamp, own);
      // A conditional put read its key too. Its intent guards that read only while it stands: a savepoint rollback
      // ignores the write, and resolution at commit removes the intent — a write below the read could then land
      // unpushed (kvnemesis; CockroachDB #175036). So the read enters the cache, as a failed cput's does.
      else if (q.kind === 'cput' && !isLocal(q.key)) this.tscache.add({ key: q.key, endKey: null }, h.timestamp, own);
      if (q.kind !== 'pushTxn' && q.kind !== 'queryTxn') continue;
      const res = responses[i] as TxnRecordResponse;
      const pushee = (q.kind === 'pushTxn' ? q.pushee.id : q.txnId).toString('hex');
      if (q.kind === 'pushTxn') {
        if (res.pushed) this.waiters.delete(pushee);
        else if (q.pusherId.length > 0) this.register(pushee, q.pusherId.toString('hex'), q.dependents);
      }
      responses[i] = { ...res, dependents: this.dependents(pushee) };
    }
  }

  private register(pushee: string, pusher: string, deps: readonly string[]): void {
    let m = this.waiters.get(pushee);
    if (m === undefined) this.waiters.set(pushee, (m = new Map()));
    m.set(pusher, { deps, at: this.clock.now().wall });
  }

  private dependents(pushee: string): string[] {
    const m = this.waiters.get(pushee);
    if (m === undefined) return [];
    const now = this.clock.now().wall;
    const out = new Set<string>();
    for (const [pusher, w] of m) {
      if (now - w.at > WAITER_TTL_MICROS) {
        m.delete(pusher);
        continue;
      }
      out.add(pusher);
      for (const d of w.deps) out.add(d);
    }
    if (m.size === 0) this.waiters.delete(pushee);
    return [...out];
  }
}
