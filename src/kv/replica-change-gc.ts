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
 *   - otherwise (member, or meta2 not yet as new as us, or frozen for a merge
 *     that this store's left neighbour has yet to apply) → keep.
 * The lookup bypasses the node's range cache without evicting from it
 * (RangeCache.lookupFresh): the cache's leaseholders route the gateway's
 * requests, and a check must not cost them.
 *
 * How often (CockroachDB checks a suspect replica soon and a quiet follower
 * rarely): a replica is suspect when it is not a Raft follower of a known
 * leader or not a voter of the configuration it applied — a removed replica
 * stops hearing from the leader and campaigns within an election timeout (or
 * applied its own removal), one merged away while down finds no leader —
 * and is checked on every scan; a follower of a known leader is checked on
 * its first scan and then once every HEALTHY_RECHECK_SCANS scans. Checking
 * every follower on every scan cost one meta2 scan per followed range per
 * second on every store (an idle 3-node cluster with 13 ranges: ~23 meta2
 * RPCs/s, 85 % of its DistSender RPCs), growing with the range count.
 * Ownership: one per store; the owner drives it (ReplicaQueue.tick/runOnce).
 */
import type { DistSender } from './dist-sender.js';
import { ReplicaQueue, type RangeQueueSettings } from './queue.js';
import { clearReplicaData } from './replica-change.js';
import type { Store } from './store.js';
import type { Replica } from './replica.js';
import { FROZEN_REPLICA_ID } from './merge-trigger.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { StateType } from '../../raft/types.js';

/** A follower of a known leader is re-checked once per this many scans (10 s at the default queue interval). */
export const HEALTHY_RECHECK_SCANS = 10;

/**
 * Not a Raft follower of a known leader, or not a voter in the configuration it
 * applied: removed (campaigning, or having applied its own removal), a learner,
 * merged away, or cut off — check it now.
 */
export function isSuspectReplica(r: Replica): boolean {
  return r.raw.raft.state !== StateType.Follower || r.leaderHint() === null || !r.raw.raft.promotable();
}

/**
 * A frozen replica (Subsume applied) whose left neighbour on this store has
 * not applied the merge yet: meta2 already shows the merged range, but the
 * merge trigger of that left replica absorbs this one — removing it first
 * crashed the store when the merge applied ("merges r225 into r223 before its
 * replica froze"). The left replica removes it.
 */
function awaitsMerge(s: Store, r: Replica): boolean {
  if (r.lease?.replica.replicaId !== FROZEN_REPLICA_ID) return false;
  return s.allReplicas().some((l) => l.initialized && !l.stopped && compareBytes(l.desc.endKey, r.desc.startKey) === 0);
}

export function newReplicaGCQueue(store: () => Store | null, ds: DistSender, settings: RangeQueueSettings): ReplicaQueue {
  /** rangeId → the scan (queue.metrics.scans) that last checked this store's replica of it. */
  const checkedAt = new Map<number, number>();
  const queue: ReplicaQueue = new ReplicaQueue(
    store,
    {
      name: 'replicaGC',
      shouldQueue(r) {
        if (r.isLeader() || r.ownsValidLease() || r.lease?.replica.replicaId === 0) return 0;
        if (isSuspectReplica(r)) return 2;
        const last = checkedAt.get(r.rangeId);
        return last === undefined || queue.metrics.scans - last >= HEALTHY_RECHECK_SCANS ? 1 : 0;
      },
      async process(r) {
        const s = store();
        if (s === null) return;
        checkedAt.set(r.rangeId, queue.metrics.scans);
        // A fresh meta2 read that leaves the node's range cache as it is: evicting the cached descriptor first (as
        // this did) dropped its leaseholder every scan for every range this store follows — the very ranges its SQL
        // gateway routes to other nodes — so each next request paid a meta2 lookup and a NotLeaseHolder redirect
        // (YCSB with 12 ranges: 0.4 redirects per operation, throughput collapsed to 30–140 ops/s).
        const d = await ds.cache.lookupFresh(r.desc.startKey);
        const stale =
          d.rangeId === r.rangeId
            ? d.generation >= r.desc.generation && !d.replicas.some((x) => x.storeId === s.storeId && x.replicaId === r.replicaId)
            : d.generation > r.desc.generation;
        if (!stale || s.replica(r.rangeId) !== r || awaitsMerge(s, r)) return;
        checkedAt.delete(r.rangeId);
        s.removeReplica(r.rangeId);
        await clearReplicaData(s, r.desc, true);
      },
    },
    settings.queueIntervalTicks,
  );
  return queue;
}
