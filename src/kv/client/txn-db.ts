/**
 * TxnDB: a node's transactional KV handle — sql/kv.ts's KVDB over a Sender
 * (the node's DistSender). It owns what the node's transactions share: the
 * intent resolver (asynchronous, batched), the pusher, the txn-id source
 * and the metrics; newTxn() hands out a TxnCoordSender.
 *
 *   const db = new TxnDB({ sender: distSender, clock, nodeId, prng });
 *   const txn = db.newTxn();  await txn.run(batch);  await txn.commit();
 *   await db.runTxn(async (txn) => …)      // retries retryable errors (restart)
 *   await db.admin.adminSplit(key)         // SPLIT AT / SHOW RANGES / SCATTER (kv-admin.ts)
 *
 * `admin` (sql/kv.ts KVAdmin) splits and lists ranges through the same
 * Sender; it moves leases (SCATTER) once the composition root installs a
 * LeaseTransferer (src/server/sql-server.ts mountSql, or the test cluster).
 *
 * Ownership: one per node; time (heartbeat timer, waits) through the
 * injected `every`/`sleep`, randomness through the injected Prng.
 */
import { CairnError } from '../../util/errors.js';
import type { Clock, Timestamp } from '../../util/hlc.js';
import type { Prng } from '../../util/prng.js';
import type { Sender } from '../kv-client.js';
import { IntentResolver } from '../txn-intent-resolver.js';
import { TxnPusher } from '../txn-pusher.js';
import { TxnCoordSender, type TxnMetrics } from './txn-coord-sender.js';
import { KVClusterAdmin, type LeaseTransferer } from './kv-admin.js';
import type { KVTxnOptions } from './kv-txn-types.js';

export interface TxnDBOptions {
  readonly sender: Sender;
  readonly clock: Clock;
  readonly nodeId: number;
  readonly prng: Prng;
  /** Default: setInterval. */
  readonly every?: (ms: number, fn: () => void) => () => void;
  readonly sleep?: (ms: number) => Promise<void>;
  /** How long a pusher waits for a conflicting transaction before giving up (default 30 s). */
  readonly maxLockWaitMs?: number;
  /** How SCATTER moves leases (kv-admin.ts); may also be installed later with admin.useLeaseTransferer. */
  readonly transferLease?: LeaseTransferer;
}

function defaultEvery(ms: number, fn: () => void): () => void {
  const t = setInterval(fn, ms);
  t.unref?.();
  return () => clearInterval(t);
}

export class TxnDB {
  readonly nodeId: number;
  readonly resolver: IntentResolver;
  readonly pusher: TxnPusher;
  /** SPLIT AT, SHOW RANGES, SCATTER (sql/kv.ts KVAdmin). */
  readonly admin: KVClusterAdmin;
  readonly metrics: TxnMetrics = { commits: 0, onePhaseCommits: 0, parallelCommits: 0, aborts: 0, refreshes: 0, refreshFailures: 0, restarts: 0 };

  constructor(private readonly opts: TxnDBOptions) {
    this.nodeId = opts.nodeId;
    this.resolver = new IntentResolver({ sender: opts.sender, ...(opts.sleep === undefined ? {} : { sleep: opts.sleep }) });
    this.admin = new KVClusterAdmin({
      sender: opts.sender,
      prng: opts.prng,
      ...(opts.transferLease === undefined ? {} : { transferLease: opts.transferLease }),
      ...(opts.sleep === undefined ? {} : { sleep: opts.sleep }),
    });
    this.pusher = new TxnPusher({ sender: opts.sender, clock: opts.clock, resolver: this.resolver, ...(opts.sleep === undefined ? {} : { sleep: opts.sleep }), ...(opts.maxLockWaitMs === undefined ? {} : { maxWaitMs: opts.maxLockWaitMs }) });
  }

  newTxn(opts: KVTxnOptions = {}): TxnCoordSender {
    const o = this.opts;
    return new TxnCoordSender(
      {
        sender: o.sender,
        clock: o.clock,
        resolver: this.resolver,
        pusher: this.pusher,
        newTxnId: () => o.prng.bytes(16),
        every: o.every ?? defaultEvery,
        sleep: o.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
        metrics: this.metrics,
      },
      opts,
    );
  }

  now(): Timestamp {
    return this.opts.clock.now();
  }

  /** Runs fn in a transaction and commits, restarting on retryable errors (up to maxAttempts). */
  async runTxn<T>(fn: (txn: TxnCoordSender) => Promise<T>, opts: KVTxnOptions & { maxAttempts?: number } = {}): Promise<T> {
    const txn = this.newTxn(opts);
    const max = opts.maxAttempts ?? 100;
    for (let attempt = 1; ; attempt++) {
      try {
        const v = await fn(txn);
        await txn.commit();
        return v;
      } catch (e) {
        if (!(e instanceof CairnError && e.retryable) || attempt >= max) {
          await txn.rollback();
          throw e;
        }
        await txn.restart();
      }
    }
  }
}
