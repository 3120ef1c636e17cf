/**
 * The transaction layer's part of a Replica's request path on the
 * leaseholder (CockroachDB's replica_send / concurrency hooks):
 *
 *   send(ba) ─► ensureLease ─► latches ─► prepare(h): request timestamp bounds
 *                                          (≤ now + max offset, then the HLC
 *                                          moves up to it); writes pushed
 *                                          above the timestamp cache
 *                                       ─► evaluate ─► finish(h): the batch's
 *                                          reads enter the timestamp cache;
 *                                          push/query responses get the
 *                                          waiters' ids (deadlock detection)
 *
 * Timestamp cache (kv/concurrency/timestamp-cache.ts): one per replica,
 * keyed by user keys (range-local keys — txn records — are never cached).
 * Its low-water mark is raised to the lease start whenever a new lease
 * (new sequence) applies (DESIGN.md §6), and to now + max offset when the
 * replica is created (a restart forgets the reads served before it) or its
 * descriptor changes (a merge brings in reads the right-hand range served).
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
import type { Lease, Request, Response } from './api.js';
import type { DeclaredSpan, EvalHeader } from './batcheval/command.js';
import { TimestampCache } from './concurrency/timestamp-cache.js';
import { TimestampInFutureError, TxnRetryError, type TxnRecordResponse } from './txn-api.js';

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

  private horizon(): Timestamp {
    const n = this.clock.now();
    return { wall: n.wall + this.clock.maxOffsetMicros, logical: 0 };
  }

  /** A lease applied on this replica: a new holder's cache starts at the lease start. */
  onLeaseApplied(lease: Lease, prev: Lease | null): void {
    if (prev === null || prev.sequence !== lease.sequence) this.tscache.setLowWater(lease.start);
  }

  /** The range's bounds changed (a merge absorbed reads served elsewhere). */
  onDescriptorChanged(): void {
    this.tscache.setLowWater(this.horizon());
  }

  /** Checks the request timestamp and moves the HLC up to it. */
  checkRequestTimestamp(ts: Timestamp): void {
    if (ts.wall === 0 && ts.logical === 0) return;
    const now = this.clock.now();
    if (ts.wall - now.wall > this.clock.maxOffsetMicros) throw new TimestampInFutureError(ts, now, this.clock.maxOffsetMicros);
    this.clock.update(ts);
  }

  /** Pushes a write batch above the reads already served on its spans. */
  prepare(h: EvalHeader, reqs: readonly Request[], spans: readonly DeclaredSpan[], isWrite: boolean): EvalHeader {
    if (!isWrite || ReplicaConcurrency.skipTsCacheBump) return h;
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
      if (q.kind === 'endTxn' && q.commit) throw new TxnRetryError('RETRY_SERIALIZABLE', 'a write of the committing batch was pushed by the timestamp cache');
    }
    return { ...h, timestamp: ts, txn: { ...h.txn, writeTimestamp: ts } };
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
