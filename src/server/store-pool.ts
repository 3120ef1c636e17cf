/**
 * The cluster-wide StorePool the KV layer's allocator and replicate queue
 * read (src/kv/rebalance.ts): one StoreStatus per node, built from
 *
 *   - node liveness records (liveness.ts): live = expiration in the future;
 *     deadForMs = now − expiration when not live; decommissioning flag;
 *   - per-store replica and lease counts each node reports about itself in
 *     the directory exchange (node-directory.ts StoreLoad), refreshed every
 *     second; a node whose store id is not known yet is left out (it cannot
 *     be a target before it reported).
 *
 * Ownership: src/server. Pure over its injected sources.
 */
import type { StorePool, StoreStatus } from '../kv/rebalance.js';
import type { LivenessRecord } from './liveness.js';
import type { StoreLoad } from './node-directory.js';

export interface StorePoolSources {
  readonly liveness: () => ReadonlyMap<number, LivenessRecord>;
  /** Latest load report by node id (this node's own included). */
  readonly loads: () => ReadonlyMap<number, StoreLoad>;
  /** Wall clock, µs (the clock liveness expirations are written in). */
  readonly nowMicros: () => number;
}

export class NodeStorePool implements StorePool {
  constructor(private readonly src: StorePoolSources) {}

  stores(): StoreStatus[] {
    const now = this.src.nowMicros();
    const loads = this.src.loads();
    const out: StoreStatus[] = [];
    for (const [nodeId, rec] of this.src.liveness()) {
      const load = loads.get(nodeId);
      if (load === undefined) continue;
      const live = rec.expirationMicros > now;
      out.push({
        nodeId,
        storeId: load.storeId,
        live,
        deadForMs: live ? 0 : Math.max(0, (now - rec.expirationMicros) / 1000),
        decommissioning: rec.decommissioning,
        replicaCount: load.replicaCount,
        leaseCount: load.leaseCount,
      });
    }
    return out.sort((a, b) => a.nodeId - b.nodeId);
  }
}
