/**
 * The replicate queue (CockroachDB's replicate_queue.go): on each store, for
 * every range whose lease it holds, one step at a time toward where the
 * allocator (rebalance.ts planReplication) wants the range: finish a change
 * a dead driver left (joint config, stray learner), hand the lease away from
 * a doomed or overloaded store, replace voters on nodes dead longer than the
 * timeout or decommissioning, up- and down-replicate to targetReplicas,
 * rebalance replica counts toward an under-loaded (e.g. new) node, and
 * move leases for balance only outside the hysteresis band of rebalance.ts
 * (the lease's age comes from its start on the store's clock).
 * Replication steps go through replica-change.ts; lease transfers through
 * the local Store (the queue runs where the lease is).
 *
 * decommission: mark the node in the StorePool (LocalStorePool.decommission,
 * or the node layer's liveness record); this queue then moves its replicas
 * and leases away; decommissionProgress() counts what is left.
 *
 * Ownership: one per store; the owner drives it (ReplicaQueue.tick/runOnce).
 */
import { compareBytes } from '../../storage/encoding/bytes.js';
import type { DistSender } from './dist-sender.js';
import { isFrozen } from './merge-queue.js';
import { ReplicaQueue, type RangeQueueSettings } from './queue.js';
import type { Replica } from './replica.js';
import { planReplication, type StorePool, type StoreStatus } from './rebalance.js';
import { addVoter, finishPendingChange, removeVoter, type ChangeOptions } from './replica-change.js';
import type { Store } from './store.js';

export function newReplicateQueue(store: () => Store | null, ds: DistSender, pool: StorePool, settings: RangeQueueSettings, opts: ChangeOptions = {}): ReplicaQueue {
  // One pool snapshot per scan (the queue asks for every replica in a row).
  let snap: { at: number; stores: readonly StoreStatus[] } | null = null;
  const stores = (): readonly StoreStatus[] => {
    const now = Date.now();
    if (snap === null || now - snap.at > 50) snap = { at: now, stores: pool.stores() };
    return snap.stores;
  };
  const leaseAgeMs = (s: Store, r: Replica): number => (r.lease === null ? Infinity : (s.clock.now().wall - r.lease.start.wall) / 1000);
  return new ReplicaQueue(
    store,
    {
      name: 'replicate',
      shouldQueue(r) {
        const s = store();
        if (s === null) return 0;
        // A quiescent follower whose leader's node is down would never notice:
        // wake it so it elects a new leader (and the queue can act there).
        if (r.quiescent && !r.isLeader()) {
          const lead = r.leaderHint();
          const st = stores().find((x) => x.storeId === lead?.storeId);
          if (lead === null || st === undefined || !st.live) r.wake();
        }
        // The leader of a quiescent range whose lease lapsed acts too (process takes the lease).
        if (!r.ownsValidLease() && !r.isLeader()) return 0;
        // A frozen right neighbour is being merged into this range: keep the replicas colocated.
        if (s.allReplicas().some((x) => x.initialized && isFrozen(x) && compareBytes(x.desc.startKey, r.desc.endKey) === 0)) return 0;
        if (r.desc.replicas.some((x) => x.type !== 0)) return 20;
        const a = planReplication(r.desc, s.storeId, stores(), settings, leaseAgeMs(s, r));
        switch (a.kind) {
          case 'none':
            return 0;
          case 'replace':
          case 'remove':
            return 10;
          case 'add':
            return 15;
          case 'transferLease':
            return 5;
        }
      },
      async process(r) {
        const s = store();
        if (s === null) return;
        if (!r.ownsValidLease()) {
          if (!r.isLeader()) return;
          await r.acquireLease();
        }
        if (r.desc.replicas.some((x) => x.type !== 0)) {
          await finishPendingChange(ds, r.desc);
          return;
        }
        snap = null;
        const a = planReplication(r.desc, s.storeId, stores(), settings, leaseAgeMs(s, r));
        switch (a.kind) {
          case 'none':
            return;
          case 'add':
            await addVoter(ds, r.desc, a.target, null, opts);
            return;
          case 'replace':
            await addVoter(ds, r.desc, a.target, a.old, opts);
            return;
          case 'remove':
            await removeVoter(ds, r.desc, a.old);
            return;
          case 'transferLease':
            await s.transferLease(r.rangeId, a.to.replicaId);
            return;
        }
      },
    },
    settings.queueIntervalTicks,
  );
}

/** Replicas and leases still on a decommissioning node's store. */
export function decommissionProgress(pool: StorePool, nodeId: number): { replicas: number; leases: number } {
  const st = pool.stores().find((x) => x.nodeId === nodeId);
  return { replicas: st?.replicaCount ?? 0, leases: st?.leaseCount ?? 0 };
}
