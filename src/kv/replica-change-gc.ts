/**
 * The replica GC queue (CockroachDB's replica_gc_queue.go): a replica removed
 * from its range may never learn it (the leader stops talking to it once the
 * change applies), and one whose range was merged away while it was down has
 * nobody to tell it. On each store, every replica that is neither leader nor
 * leaseholder is checked against meta2 (a fresh lookup of its start key):
 *   - the range there is this one, at a generation ≥ ours, and this store's
 *     replica is not in it → removed: drop it and clear its data;
 *   - another range covers our start key at a higher generation (we were
 *     merged away, or replaced) → drop it likewise (clearReplicaData keeps user
 *     data that an initialized replica on this store still owns);
 *   - otherwise (member, or meta2 not yet as new as us) → keep.
 * Ownership: one per store; the owner drives it (ReplicaQueue.tick/runOnce).
 */
import type { DistSender } from './dist-sender.js';
import { ReplicaQueue, type RangeQueueSettings } from './queue.js';
import { clearReplicaData } from './replica-change.js';
import type { Store } from './store.js';

export function newReplicaGCQueue(store: () => Store | null, ds: DistSender, settings: RangeQueueSettings): ReplicaQueue {
  return new ReplicaQueue(
    store,
    {
      name: 'replicaGC',
      shouldQueue(r) {
        return r.isLeader() || r.ownsValidLease() || r.lease?.replica.replicaId === 0 ? 0 : 1;
      },
      async process(r) {
        const s = store();
        if (s === null) return;
        const cached = ds.cache.get(r.desc.startKey);
        if (cached !== undefined) ds.cache.evict(cached);
        const d = await ds.cache.lookup(r.desc.startKey);
        const stale =
          d.rangeId === r.rangeId
            ? d.generation >= r.desc.generation && !d.replicas.some((x) => x.storeId === s.storeId && x.replicaId === r.replicaId)
            : d.generation > r.desc.generation;
        if (!stale || s.replica(r.rangeId) !== r) return;
        s.removeReplica(r.rangeId);
        await clearReplicaData(s, r.desc, true);
      },
    },
    settings.queueIntervalTicks,
  );
}
