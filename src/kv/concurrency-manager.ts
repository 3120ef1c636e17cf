/**
 * The transaction layer's part of a Replica's request path on the
 * leaseholder (CockroachDB's replica_send / concurrency hooks):
 *
 *   send(ba) ─► ensureLease ─► latches ─► prepare(h): request timestamp bounds
 *                                          (non-txn: ≤ now + max offset); writes pushed
 *                                          above the timestamp cache
 *                                       ─► evaluate ─► finish(h): the batch's
 *                                          reads enter the timestamp cache;
 *                                          push/query responses get the
 *                                          waiters' ids (deadlock detection)
 *
 * Timestamp cache (kv/concurrency/timestamp-cache.ts): one per replica,
 * keyed by user keys (range-local keys — txn records — are never cached).
 * Its low-water mark is raised to the lease start whenever a new lease
 * (new sequence) applies (DESIGN.md §6) — and further, to a horizon above
 * any read another holder can have served (see horizon()) — and to that
 * horizon when the replica is created (a restart or a split forgets the
 * reads served before it) or its descriptor widens (a merge brings in reads
 * the right-hand range served).
 * A write below a read is pushed to just above it: a transactional batch
 * then returns its new timestamp (BatchResponse.timestamp), which the
 * coordinator refreshes to; a batch that commits (EndTxn) is refused with
 * TxnRetryError(RETRY_SERIALIZABLE) instead, since its reads were not
 * validated at the pushed timestamp.
 *
 * Waiters: PushTxn requests that could not push register (pushee ← pusher
 * + the pusher's own dependents) for a few seconds; PushTxn and QueryTxn
 * responses carry the transitive set of waiters of their transaction, which
 * the pusher uses to detect a waits-for cycle across ranges
 * (client/txn-pusher.ts). The registry is leaseholder memory: a lease move
 * loses it, and pushers re-register on their next push.
 *
 * Departures (known gaps): the lock table and its fair wait queue of
 * kv/concurrency are not yet in this path — a conflicting intent is returned
 * to the client as WriteIntentError and the client pushes (txn-pusher.ts);
 * latches are still the stand-in replica-latches.ts.
 *
 * Ownership: one per Replica; called only from Replica.send.
 */
import { tsLess, tsLessEq, tsNext, type Clock, type Timestamp } from '../util/hlc.js';
import { isLocal } from '../../storage/keys.js';
import { ConditionFailedError, WriteTooOldError } from '../../storage/mvcc.js';
import type { Lease, Request, Response } from './api.js';
import type { DeclaredSpan, EvalHeader } from './batcheval/command.js';
import { TimestampCache } from './concurrency/timestamp-cache.js';
import { TimestampInFutureError, TxnRetryError, type TxnRecordResponse } from './txn-api.js';

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
  private readonly waiters = new Map<string, Map<string, Waiter>>();
  /** Planted-bug switch for the randomized test: skip the timestamp-cache push of writes. */
  static skipTsCacheBump = false;

  constructor(private readonly clock: Clock) {
    this.tscache = new TimestampCache({ lowWater: this.horizon() });
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
   * write slip under a future-timestamp read the previous holder served;
   * without read summaries travelling with the lease (CockroachDB's), the
   * horizon stands in for them (writes right after a lease change are pushed).
   */
  onLeaseApplied(lease: Lease, prev: Lease | null): void {
    if (prev !== null && prev.sequence === lease.sequence) return;
    this.tscache.setLowWater(lease.start);
    this.tscache.setLowWater(this.horizon());
  }

  /** The range's bounds changed (a merge absorbed reads served elsewhere). */
  onDescriptorChanged(): void {
    this.tscache.setLowWater(this.horizon());
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
  prepare(h: EvalHeader, reqs: readonly Request[], spans: readonly DeclaredSpan[], isWrite: boolean): EvalHeader {
    if (!isWrite || ReplicaConcurrency.skipTsCacheBump) return h;
    // Only MVCC writes of clients move; admin, lease, resolution and record commands keep their timestamps.
    if (!reqs.some((q) => PUSHED_KINDS.has(q.kind))) return h;
    const own = h.txn === undefined ? undefined : h.txn.id.toString('hex');
    let max: Timestamp | null = null;
    for (const s of spans) {
      if (!s.write || isLocal(s.key)) continue;
      const r = this.tscache.getMax({ key: s.key, endKey: s.endKey });
      if (own !== undefined && r.txnId === own) continue;
      if (tsLessEq(h.timestamp, r.ts) && (max === null || tsLess(max, r.ts))) max = r.ts;
    }
    if (max === null) return h;
    const ts = tsNext(max);
    if (h.txn === undefined) return { ...h, timestamp: ts };
    for (const q of reqs) {
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
