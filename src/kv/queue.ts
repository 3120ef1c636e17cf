/**
 * Store-level replica queues (CockroachDB's kvserver/queue.go, reduced): a
 * queue looks at the store's replicas on a cadence, picks the ones that need
 * work (shouldQueue → a priority, 0 = no) and processes them one at a time,
 * highest priority first. The split, merge and replicate queues are built on
 * it.
 *
 *   owner's timer ──tick()──► every intervalTicks: scan() ─► [r7 (9), r2 (3)] ─► process(r7) ─► process(r2)
 *
 * Time comes from outside (tick(), called by the server's timer or a test
 * driver; or runOnce() directly); a queue never starts timers. Only one scan
 * runs at a time; a tick while one runs is skipped. A failed process() is
 * counted and logged at debug; the replica is looked at again next scan.
 *
 * Settings for the range queues live here too (RangeQueueSettings) — they are
 * CockroachDB's kv.range_split.*, kv.range_merge.*, server.time_until_store_dead,
 * gc.ttlseconds.
 *
 * Ownership: the queue's owner (server or test) calls tick/runOnce; the queue
 * holds no replicas between scans.
 */
import { CairnError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { silentLogger } from '../util/log.js';
import type { Replica } from './replica.js';
import type { Store } from './store.js';

export interface RangeQueueSettings {
  /** A range whose MVCC bytes exceed this is split (CockroachDB's range_max_bytes; default 64 MiB). */
  readonly splitMaxRangeBytes: number;
  /** Adjacent ranges whose combined bytes are below this are merged (default 16 MiB; 0 disables). */
  readonly mergeMaxCombinedBytes: number;
  /** Replicas per range (default 3). */
  readonly targetReplicas: number;
  /** A node not live for this long is dead: its replicas are replaced (default 5 minutes). */
  readonly deadNodeTimeoutMs: number;
  /** Scans happen every this many ticks (default 10). */
  readonly queueIntervalTicks: number;
  /** Rebalance when a node holds this many more replicas (or leases) than the mean (default 2). */
  readonly rebalanceThreshold: number;
  /**
   * MVCC versions older than this many seconds are garbage collected
   * (gc-queue.ts; CockroachDB's zone config gc.ttlseconds, default 4 h — our
   * CONFIGURE ZONE parses but does not execute, so it is one setting per node).
   */
  readonly gcTtlSeconds: number;
}

export const DEFAULT_RANGE_QUEUE_SETTINGS: RangeQueueSettings = {
  splitMaxRangeBytes: 64 * 1024 * 1024,
  mergeMaxCombinedBytes: 16 * 1024 * 1024,
  targetReplicas: 3,
  deadNodeTimeoutMs: 5 * 60_000,
  queueIntervalTicks: 10,
  rebalanceThreshold: 2,
  gcTtlSeconds: 14_400,
};

export interface QueueImpl {
  readonly name: string;
  /** 0: nothing to do; otherwise the priority (higher first). */
  shouldQueue(r: Replica): number;
  process(r: Replica): Promise<void>;
}

export interface QueueMetrics {
  scans: number;
  processed: number;
  /** Replicas whose processing failed (after the retries of retryable errors). */
  failures: number;
  /** Retryable errors (a benign conflict, e.g. a concurrent split of the range) retried, not counted as failures. */
  retries: number;
  /** The last failure: `r<rangeId>: <code>: <message>` (tests and status pages). */
  lastFailure: string | null;
}

/** Attempts per replica and scan when processing fails with a retryable error. */
const MAX_ATTEMPTS = 3;

export class ReplicaQueue {
  readonly metrics: QueueMetrics = { scans: 0, processed: 0, failures: 0, retries: 0, lastFailure: null };
  private ticks = 0;
  private running: Promise<number> | null = null;
  private readonly log: Logger;
  /** The last failure (for tests and status pages). */
  lastError: Error | null = null;

  constructor(
    private readonly store: () => Store | null,
    private readonly impl: QueueImpl,
    private readonly intervalTicks: number,
    logger?: Logger,
  ) {
    this.log = logger ?? silentLogger();
  }

  get name(): string {
    return this.impl.name;
  }

  tick(): void {
    if (++this.ticks % this.intervalTicks !== 0 || this.running !== null) return;
    void this.runOnce();
  }

  /** One scan: processes every replica that needs it; returns how many were processed. */
  runOnce(): Promise<number> {
    if (this.running !== null) return this.running;
    const p = this.scan().finally(() => {
      this.running = null;
    });
    this.running = p;
    return p;
  }

  private async scan(): Promise<number> {
    const store = this.store();
    if (store === null) return 0;
    this.metrics.scans++;
    const picked: { r: Replica; prio: number }[] = [];
    for (const r of store.allReplicas()) {
      if (r.stopped || !r.initialized) continue;
      const prio = this.impl.shouldQueue(r);
      if (prio > 0) picked.push({ r, prio });
    }
    picked.sort((a, b) => b.prio - a.prio);
    let n = 0;
    for (const { r } of picked) {
      if (this.store() !== store) break;
      if (r.stopped) continue;
      for (let attempt = 1; ; attempt++) {
        try {
          await this.impl.process(r);
          this.metrics.processed++;
          n++;
          break;
        } catch (e) {
          const retryable = e instanceof CairnError && e.retryable;
          if (retryable && attempt < MAX_ATTEMPTS && !r.stopped && this.store() === store) {
            this.metrics.retries++;
            continue;
          }
          this.metrics.failures++;
          this.lastError = e as Error;
          this.metrics.lastFailure = `r${r.rangeId}: ${e instanceof CairnError ? e.code : 'error'}: ${(e as Error).message}`;
          this.log.debug({ queue: this.impl.name, rangeId: r.rangeId, err: (e as Error).message }, 'kv: queue processing failed');
          break;
        }
      }
    }
    return n;
  }
}
