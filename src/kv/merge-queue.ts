/**
 * The merge queue (CockroachDB's merge_queue.go): on each store, a range
 * whose lease it holds (or, quiescent, whose leader it is) is merged with its
 * right neighbour when
 *   - the neighbour is frozen (a merge whose driver died: roll it forward,
 *     merge.ts completeMerge — first priority), or
 *   - both are small (combined MVCC bytes below mergeMaxCombinedBytes and
 *     below half of splitMaxRangeBytes, so a merge never feeds a split), cold
 *     (no command applied on either for coldMicros of the store's clock) and
 *     colocated (replicas on the same stores, all voters — the replicate
 *     queue does not relocate replicas for merges yet), and
 *   - the boundary between them is not sticky: a manual split
 *     (/_admin/split, SPLIT AT) gives the right range a stickyBit
 *     (api.ts RangeDescriptor) and the queue leaves that boundary alone until
 *     the store's clock passes it (MAX_TIMESTAMP: never). An explicit
 *     AdminMerge (merge.ts, /_admin/merge) still merges it.
 * Ownership: one per store; the owner drives it (ReplicaQueue.tick/runOnce).
 */
import { compareBytes } from '../../storage/encoding/bytes.js';
import { tsLess, type Timestamp } from '../util/hlc.js';
import { KEY_MAX } from '../../storage/keys.js';
import type { DistSender } from './dist-sender.js';
import { adminMerge, completeMerge } from './merge.js';
import { FROZEN_REPLICA_ID } from './merge-trigger.js';
import { ReplicaQueue, type RangeQueueSettings } from './queue.js';
import type { Replica } from './replica.js';
import { rangeBytes } from './split-queue.js';
import { fixMeta2 } from './split.js';
import type { Store } from './store.js';

function colocated(a: Replica, b: Replica): boolean {
  const key = (r: Replica): string =>
    r.desc.replicas
      .map((x) => (x.type === 0 ? x.storeId : -x.storeId))
      .sort((p, q) => p - q)
      .join(',');
  return key(a) === key(b) && a.desc.replicas.every((x) => x.type === 0);
}

/** Whether the range's start is a manual split point the merge queue must keep at `now`. */
export function isSticky(r: Replica, now: Timestamp): boolean {
  return r.desc.stickyBit !== undefined && tsLess(now, r.desc.stickyBit);
}

export function isFrozen(r: Replica): boolean {
  return r.lease !== null && r.lease.replica.replicaId === FROZEN_REPLICA_ID;
}

export function newMergeQueue(store: () => Store | null, ds: DistSender, settings: RangeQueueSettings, coldMicros = 10_000_000): ReplicaQueue {
  /** rangeId → the lease-applied index last seen and since when (store clock µs). */
  const activity = new Map<number, { lai: number; since: number }>();
  const cold = (r: Replica, now: number): boolean => {
    const a = activity.get(r.rangeId);
    if (a === undefined || a.lai !== r.applied.leaseAppliedIndex) {
      activity.set(r.rangeId, { lai: r.applied.leaseAppliedIndex, since: now });
      return coldMicros === 0;
    }
    return now - a.since >= coldMicros;
  };
  const rightOf = (s: Store, l: Replica): Replica | undefined => s.allReplicas().find((x) => x.initialized && !x.stopped && compareBytes(x.desc.startKey, l.desc.endKey) === 0);
  return new ReplicaQueue(
    store,
    {
      name: 'merge',
      shouldQueue(l) {
        const s = store();
        if (s === null || isFrozen(l) || compareBytes(l.desc.endKey, KEY_MAX) >= 0) return 0;
        if (!l.ownsValidLease() && !l.isLeader()) return 0;
        const r = rightOf(s, l);
        if (r === undefined) return 0;
        if (isFrozen(r)) return 10;
        if (isSticky(r, s.clock.now())) return 0;
        // Never merge into something the split queue would split again.
        const maxCombined = Math.min(settings.mergeMaxCombinedBytes, settings.splitMaxRangeBytes / 2);
        if (maxCombined <= 0) return 0;
        const now = s.clock.now().wall;
        const lc = cold(l, now);
        const rc = cold(r, now);
        return lc && rc && colocated(l, r) && rangeBytes(l) + rangeBytes(r) < maxCombined ? 1 : 0;
      },
      async process(l) {
        const s = store();
        if (s === null) return;
        const r = rightOf(s, l);
        if (r === undefined) return;
        const end = l.desc.endKey;
        try {
          if (isFrozen(r)) await completeMerge(ds, l.desc.startKey, r.desc, {}, l.desc);
          else await adminMerge(ds, l.desc.startKey);
        } catch (e) {
          // The merge may have applied with its answer lost (the DistSender breaker's rpc.canceled on a
          // slow node: ambiguous). Only this driver was going to fix meta2, which still names the absorbed
          // range: every lookup of its keys answers a range that no longer exists (RangeNotFound on each
          // replica) until the split queue's next check. L's lease is here, so L's replica here has applied
          // the merge: fix meta2 from its descriptor (as merge.ts adminMergeWithRetry does).
          if (compareBytes(l.desc.endKey, end) > 0) await fixMeta2(ds, l.desc).catch(() => undefined);
          throw e;
        }
      },
    },
    settings.queueIntervalTicks,
  );
}
