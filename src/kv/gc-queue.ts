/**
 * The MVCC GC queue (CockroachDB's mvccGCQueue, reduced): on the store
 * holding a range's lease, every queue scan scores the range and, when it is
 * worth it, collects the versions older than the TTL:
 *
 *   threshold T = now − gcTtlSeconds
 *   one pass over the range's global keys [max(start, LOCAL_MAX), end) and
 *   one over its range-local keys (descriptor history; transaction records,
 *   which every heartbeat rewrites as a new version — the newest version of
 *   a record is always kept, records are never deleted),
 *   reading heads only (mvccGcCandidates), in pages of ≤ maxKeysPerRequest
 *   keys ─► one GCRequest per page {threshold T, the page's keys}
 *   (batcheval/cmd-gc.ts: evaluated under latches, replicated through Raft;
 *   the first request raises the threshold, the rest find it raised)
 *   nothing to collect ─► no request (the queue's runs only move the
 *   threshold with a collection: a cluster whose data is younger than the
 *   TTL proposes nothing; CockroachDB bumps it regardless — a read below
 *   now − TTL that nothing has been collected under is served here).
 *
 * Score (shouldQueue). CockroachDB scores by GCBytesAge — the non-live bytes
 * times how long they have been non-live — which its MVCC stats keep per
 * range. Our stats (storage/mvcc-stats.ts) do not: adding it would change
 * the stats every Raft command carries. We use what they hold: the non-live
 * bytes (keyBytes + valBytes − liveBytes: old versions and tombstones),
 * weighted by how far the threshold would move (from the last run's, when
 * that collected nothing and left the stored one behind), as a fraction of
 * the TTL (capped at 1), standing in for their age. A range is queued when it has
 * non-live bytes and the threshold would move by at least a tenth of the
 * TTL (or it was never collected) — so a busy range is collected about ten
 * times per TTL, an idle one whose versions are all collected never again.
 * Priority: that score (more garbage, longer uncollected first).
 *
 * Not collected (known gaps): finished transaction records themselves and
 * the abort span (CockroachDB's GC removes old ones; here only their
 * superseded versions go), and old intents (CockroachDB resolves those it
 * finds; here intent resolution stays with the transactions and their
 * pushers).
 *
 * Ownership: one per store; its owner ticks it (ReplicaQueue) or calls
 * runOnce. Time: the store's clock. It sends only to its own replicas.
 */
import { ZERO_TIMESTAMP, tsLess, type Timestamp } from '../util/hlc.js';
import type { Logger } from '../util/log.js';
import { LOCAL_MAX, rangeLocalSpan, type Span } from '../../storage/keys.js';
import { compareBytes, keyNext } from '../../storage/encoding/bytes.js';
import { mvccGcCandidates } from '../../storage/mvcc.js';
import { ReplicaQueue, type RangeQueueSettings } from './queue.js';
import type { Replica } from './replica.js';
import type { Store } from './store.js';

/** Keys per GCRequest: bounds one Raft command's size and the latches it holds. */
export const GC_MAX_KEYS_PER_REQUEST = 256;

/** The threshold a GC run at `now` raises the range to: now − TTL. */
export function gcThresholdAt(now: Timestamp, ttlSeconds: number): Timestamp {
  return { wall: Math.max(0, now.wall - ttlSeconds * 1_000_000), logical: 0 };
}

/**
 * The GC queue's score of a range at `now` (see the header): 0 when not worth
 * collecting, else its non-live bytes weighted by the threshold's advance.
 */
export function gcScore(r: Replica, now: Timestamp, ttlSeconds: number, lastRun: Timestamp = ZERO_TIMESTAMP): number {
  const s = r.applied.stats;
  const nonLive = s.keyBytes + s.valBytes - s.liveBytes;
  if (nonLive <= 0) return 0;
  const next = gcThresholdAt(now, ttlSeconds);
  const from = tsLess(r.gcThreshold, lastRun) ? lastRun : r.gcThreshold;
  if (!tsLess(from, next)) return 0;
  const ttlMicros = Math.max(1, ttlSeconds * 1_000_000);
  const never = from.wall === 0 && from.logical === 0;
  const advance = next.wall - from.wall;
  if (!never && advance < ttlMicros / 10) return 0;
  return nonLive * Math.min(1, advance / ttlMicros);
}

export interface GcRunResult {
  readonly threshold: Timestamp;
  /** GCRequests sent (≥ 1 when the threshold moved). */
  readonly requests: number;
  /** Keys named in them. */
  readonly keys: number;
}

/**
 * Collects `r` (which must hold the lease: the requests go to it) at
 * now − ttlSeconds: one pass over its keys, a GCRequest per page of
 * candidates. Returns what it sent: nothing when the threshold would not
 * move or nothing is collectable.
 */
export function runGc(store: Store, r: Replica, ttlSeconds: number, maxKeysPerRequest = GC_MAX_KEYS_PER_REQUEST): Promise<GcRunResult> {
  return runGcAt(store, r, gcThresholdAt(store.clock.now(), ttlSeconds), maxKeysPerRequest);
}

/** runGc at a given threshold (tests and the kvnemesis GC op choose it: below every live transaction). */
export async function runGcAt(store: Store, r: Replica, threshold: Timestamp, maxKeysPerRequest = GC_MAX_KEYS_PER_REQUEST): Promise<GcRunResult> {
  if (!tsLess(r.gcThreshold, threshold)) return { threshold, requests: 0, keys: 0 };
  const d = r.desc;
  const local = rangeLocalSpan(d.startKey, d.endKey);
  const spans: Span[] = [{ key: compareBytes(d.startKey, LOCAL_MAX) < 0 ? LOCAL_MAX : d.startKey, endKey: d.endKey }, local];
  let requests = 0;
  let keys = 0;
  for (const span of spans) {
    let from: Buffer | null = span.key;
    while (from !== null) {
      const page: { keys: Buffer[]; resumeKey: Buffer | null } = await mvccGcCandidates(store.engine, from, span.endKey, threshold, maxKeysPerRequest);
      from = page.resumeKey;
      if (page.keys.length === 0) break;
      // Bounded by the page's own keys: a range-local span's bounds are not addressable keys (keys.ts addressOf).
      const req = { kind: 'gc' as const, key: page.keys[0] as Buffer, endKey: keyNext(page.keys[page.keys.length - 1] as Buffer), threshold, keys: page.keys };
      await r.send({ header: { rangeId: r.rangeId, timestamp: ZERO_TIMESTAMP }, requests: [req] });
      requests++;
      keys += page.keys.length;
    }
  }
  return { threshold, requests, keys };
}

/** The store's GC queue: ranges whose lease it holds, scored by gcScore, collected by runGc. */
export function newGcQueue(store: () => Store | null, settings: RangeQueueSettings, logger?: Logger): ReplicaQueue {
  const ttl = (): number => settings.gcTtlSeconds;
  /** Per replica, the threshold of this store's last run (it may have collected nothing, leaving the stored one behind); dropped with the replica. */
  const lastRun = new WeakMap<Replica, Timestamp>();
  return new ReplicaQueue(
    store,
    {
      name: 'gc',
      shouldQueue(r: Replica): number {
        const s = store();
        if (s === null || !r.ownsValidLease()) return 0;
        return gcScore(r, s.clock.now(), ttl(), lastRun.get(r));
      },
      async process(r: Replica): Promise<void> {
        const s = store();
        if (s === null || !r.ownsValidLease()) return;
        lastRun.set(r, (await runGc(s, r, ttl())).threshold);
      },
    },
    settings.queueIntervalTicks,
    logger,
  );
}
