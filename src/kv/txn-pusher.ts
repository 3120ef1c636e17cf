/**
 * TxnPusher: what a transaction does when a request of it comes back with
 * another transaction's lock (WriteIntentError) — the push half of
 * CockroachDB's lock-table waiter + txnwait queue, run by the waiting side.
 * The waiting half is on the leaseholder: a request blocked by a lock waits
 * in the key's queue there (concurrency-manager.ts) and only comes back here
 * when the blocker outlived the push delay, or when it was met outside the
 * lock table:
 *
 *   for each conflicting transaction T (by its intents):
 *     loop
 *       PushTxn(T, abort | timestamp above our read, our priority, our waiters)
 *         pushed / finalized ─► resolve the intents we met (committed at T's
 *                               commit ts, aborted, or moved above our read) —
 *                               which also releases T's locks on the leaseholder
 *         T STAGING and expired ─► recover it (txn-recovery.ts), loop
 *         otherwise: if T is among T's own waiters, or among ours, it is a
 *           waits-for cycle (the waiters travel with every push, so a cycle
 *           of any length closes at every member): the member of higher rank
 *           (priority, then id) force-pushes; the others keep waiting for it
 *         T has no record: after WAIT_PUSHES unsuccessful pushes, return —
 *           the caller resends the request, which queues on the leaseholder
 *           again (T may have finished without a record to show it: a
 *           one-phase commit); otherwise sleep (backoff 2..50 ms), learn who
 *           waits on us (QueryTxn), loop
 *
 * Waiting is bounded by `maxWaitMs` (then a retryable LockWaitTimeout
 * error), ends early when the pusher's `checkCancel` throws (checked before
 * every sleep: a cancelled statement, a client gone) and is observable
 * through `metrics`.
 * Ownership: one per TxnDB; time through the injected clock and sleep.
 */
import { CairnError } from '../util/errors.js';
import { tsLess, tsNext, ZERO_TIMESTAMP, type Clock, type Timestamp } from '../util/hlc.js';
import type { Intent, TxnMeta, TxnStatus } from '../../storage/mvcc.js';
import type { Sender } from './kv-client.js';
import type { TxnRecord, TxnRecordResponse } from './txn-api.js';
import { isTxnExpired } from './concurrency/push-policy.js';
import { txnLiveness } from './txn-record.js';
import { recoverTxn } from './txn-recovery.js';
import type { IntentResolver } from './txn-intent-resolver.js';

/** The waiting side, as the pusher needs it. */
export interface PusherTxn {
  readonly id: Buffer;
  readonly priority: number;
  /** The anchor of the pusher's own record (null: it wrote nothing, so nobody waits on it). */
  readonly anchor: Buffer | null;
  /** A timestamp push moves the pushee to this (above the pusher's read timestamp and uncertainty limit). */
  readonly pushTo: Timestamp;
  /** Called before every wait between pushes; throws to give up (the statement was cancelled: client gone, timeout). */
  readonly checkCancel?: (() => void) | undefined;
}

export class LockWaitTimeoutKvError extends CairnError {
  override name = 'LockWaitTimeoutKvError';
  constructor(what: string) {
    super('kv.lock_wait_timeout', `kv: gave up waiting for ${what}`, { retryable: true, sqlState: '40001' });
  }
}

export interface TxnPusherOptions {
  readonly sender: Sender;
  readonly clock: Clock;
  readonly resolver: IntentResolver;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly maxWaitMs?: number;
}

/** Unsuccessful pushes (≈ 0.3 s) of a blocker without a record before the request goes back to the leaseholder's queue. */
const WAIT_PUSHES = 10;

function rankAbove(a: { priority: number; id: Buffer }, b: { priority: number; id: Buffer }): boolean {
  return a.priority !== b.priority ? a.priority > b.priority : Buffer.compare(a.id, b.id) > 0;
}

export class TxnPusher {
  /** inFlight: conflicts being pushed right now (a gauge: requests of this node's transactions waiting on another's). */
  readonly metrics = { pushes: 0, waits: 0, deadlocksBroken: 0, recoveries: 0, lockWaitTimeouts: 0, inFlight: 0 };

  constructor(private readonly opts: TxnPusherOptions) {}

  private sleep(ms: number): Promise<void> {
    return (this.opts.sleep ?? ((t) => new Promise((r) => setTimeout(r, t))))(ms);
  }

  /** Gets every intent out of the way of `pusher` (null: a non-transactional request); `write` picks abort over timestamp pushes. */
  async handle(intents: readonly Intent[], pusher: PusherTxn | null, write: boolean): Promise<void> {
    const byTxn = new Map<string, Intent[]>();
    for (const i of intents) {
      const k = i.txn.id.toString('hex');
      const l = byTxn.get(k);
      if (l === undefined) byTxn.set(k, [i]);
      else l.push(i);
    }
    this.metrics.inFlight++;
    try {
      for (const list of byTxn.values()) await this.pushOne(list, pusher, write);
    } finally {
      this.metrics.inFlight--;
    }
  }

  private async pushOne(intents: readonly Intent[], pusher: PusherTxn | null, write: boolean): Promise<void> {
    const pushee = (intents[0] as Intent).txn;
    const { sender, clock } = this.opts;
    const deadline = Date.now() + (this.opts.maxWaitMs ?? 30_000);
    const pushTo = pusher === null ? tsNext(clock.now()) : pusher.pushTo;
    // Who waits on us travels with every push (the first too: a registration without it would hide a cycle).
    let deps: string[] = pusher !== null && pusher.anchor !== null ? await this.waitersOf(pusher) : [];
    let force = false;
    let backoff = 2;
    for (let waited = 0; ; ) {
      this.metrics.pushes++;
      const res = await sender.send({
        header: { rangeId: 0, timestamp: ZERO_TIMESTAMP },
        requests: [
          {
            kind: 'pushTxn',
            key: pushee.key,
            pushee,
            pusherId: pusher?.id ?? Buffer.alloc(0),
            pusherPriority: pusher?.priority ?? 1,
            pushType: write ? 'abort' : 'timestamp',
            pushTo,
            now: clock.now(),
            force,
            dependents: deps,
          },
        ],
      });
      const r = res.responses[0] as TxnRecordResponse;
      if (r.pushed && r.record !== null) {
        await this.resolve(intents, pushee, r.record);
        return;
      }
      const rec = r.record;
      if (rec !== null && rec.status === 'staging' && (force || isTxnExpired(rec.lastHeartbeat, clock.now(), txnLiveness.expiryMicros))) {
        this.metrics.recoveries++;
        const done = await recoverTxn(sender, rec);
        if (done !== null && (done.status === 'committed' || done.status === 'aborted')) {
          await this.resolve(intents, pushee, done);
          return;
        }
        continue;
      }
      // A cycle closes when the pushee waits (transitively) on itself through us. Not "we are among its waiters":
      // this very push registered us there.
      const pusheeId = pushee.id.toString('hex');
      if (pusher !== null && (r.dependents.includes(pusheeId) || deps.includes(pusheeId)) && rankAbove(pusher, { priority: pushee.priority ?? 0, id: pushee.id })) {
        if (!force) this.metrics.deadlocksBroken++;
        force = true;
        continue;
      }
      if (Date.now() > deadline) {
        this.metrics.lockWaitTimeouts++;
        throw new LockWaitTimeoutKvError(`txn ${pushee.id.toString('hex').slice(0, 8)}`);
      }
      this.metrics.waits++;
      // A pushee without a record may have committed in one phase (nothing would ever show it): let the request
      // queue on the leaseholder again, whose lock table learns of the commit. With a record, wait on it.
      if (r.record === null && ++waited >= WAIT_PUSHES) return;
      pusher?.checkCancel?.();
      await this.sleep(backoff);
      backoff = Math.min(50, backoff * 2);
      if (pusher !== null && pusher.anchor !== null) deps = await this.waitersOf(pusher);
    }
  }

  private async waitersOf(p: PusherTxn): Promise<string[]> {
    const res = await this.opts.sender.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'queryTxn', key: p.anchor as Buffer, txnId: p.id }] });
    return [...(res.responses[0] as TxnRecordResponse).dependents];
  }

  private async resolve(intents: readonly Intent[], pushee: TxnMeta, rec: TxnRecord): Promise<void> {
    let status: TxnStatus;
    if (rec.status === 'committed') status = 'committed';
    else if (rec.status === 'aborted') status = 'aborted';
    else {
      // Pushed, still pending: move our intents above the push (nothing to do if the push did not move it).
      if (!tsLess(pushee.writeTimestamp, rec.writeTimestamp)) return;
      status = 'pending';
    }
    const txn: TxnMeta = { ...pushee, epoch: rec.epoch, writeTimestamp: rec.writeTimestamp };
    await this.opts.resolver.resolveNow(
      { txn, status, ignoredSeqNums: rec.ignoredSeqNums },
      intents.map((i) => ({ key: i.key, endKey: null })),
    );
  }
}
