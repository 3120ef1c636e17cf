/**
 * Where replicas and leases should be (CockroachDB's allocator + StorePool,
 * reduced to replica and lease counts).
 *
 * StorePool is what the node layer provides (src/server: liveness records in
 * the system keyspace at nodeLivenessKey, decommissioning flags, and per-store
 * replica/lease counts it exchanges between nodes); LocalStorePool is the
 * in-process version for tests and single-process setups: it sees the Store
 * objects themselves and tracks liveness from a callback.
 *
 * The allocator (pure functions over a StorePool snapshot):
 *   - a store is a valid target when live, not decommissioning, and holds no
 *     replica of the range; among them the one with the fewest replicas;
 *   - a voter must be replaced when its node is dead for longer than
 *     deadNodeTimeoutMs or decommissioning; with no valid target it is only
 *     removed when enough healthy voters remain, or when its node is down (a
 *     live decommissioning voter waits for a target, as in CockroachDB);
 *   - extra voters go from dead/decommissioning nodes first, then the most
 *     loaded store, never the leaseholder's;
 *   - rebalance: move a replica from a store above mean + threshold to a
 *     valid target below mean − threshold... or below mean when the source is
 *     above it by ≥ threshold (so a new, empty node fills up);
 *   - leases: the leaseholder hands its lease to a live, non-decommissioning
 *     voter store when it is decommissioning; for balance only with
 *     hysteresis (CockroachDB's lease rebalancing): its store holds more than
 *     mean + max(threshold, 10 % of the mean) leases — or it holds more than
 *     the mean and the target fewer than mean − that band (an underfull store,
 *     e.g. a node that just joined) — the target fewer than the mean, and the
 *     lease is older than LEASE_REBALANCE_MIN_AGE_MS (a
 *     range's lease moves for balance at most that often). Lease counts from
 *     other nodes lag (gossip), and leases of idle ranges lapse; without the
 *     band every node chases the mean and leases move back and forth; with
 *     it a layout a user or SCATTER balanced stays put.
 *
 * Ownership: src/kv; deterministic given the pool's answers.
 */
import type { RangeDescriptor, ReplicaDescriptor } from './api.js';
import type { RangeQueueSettings } from './queue.js';
import type { Store } from './store.js';

export interface StoreStatus {
  readonly nodeId: number;
  readonly storeId: number;
  /** Heartbeating now. */
  readonly live: boolean;
  /** How long it has not been live (0 when live). */
  readonly deadForMs: number;
  readonly decommissioning: boolean;
  readonly replicaCount: number;
  readonly leaseCount: number;
}

export interface StorePool {
  /** Every store of the cluster, as last known. */
  stores(): readonly StoreStatus[];
}

/** In-process StorePool over the Store objects (see the header). */
export class LocalStorePool implements StorePool {
  private readonly downSince = new Map<number, number>();
  private readonly decommissioningNodes = new Set<number>();

  constructor(
    /** Every node's store, null while it is down. */
    private readonly list: () => readonly { nodeId: number; storeId: number; store: Store | null }[],
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Marks a node decommissioning: its replicas and leases move away (replicate queue). */
  decommission(nodeId: number): void {
    this.decommissioningNodes.add(nodeId);
  }

  recommission(nodeId: number): void {
    this.decommissioningNodes.delete(nodeId);
  }

  stores(): StoreStatus[] {
    const now = this.nowMs();
    return this.list().map(({ nodeId, storeId, store }) => {
      const live = store !== null;
      if (live) this.downSince.delete(nodeId);
      else if (!this.downSince.has(nodeId)) this.downSince.set(nodeId, now);
      let replicaCount = 0;
      let leaseCount = 0;
      for (const r of store?.allReplicas() ?? []) {
        if (!r.initialized || r.stopped) continue;
        replicaCount++;
        if (r.ownsValidLease()) leaseCount++;
      }
      return { nodeId, storeId, live, deadForMs: live ? 0 : now - (this.downSince.get(nodeId) as number), decommissioning: this.decommissioningNodes.has(nodeId), replicaCount, leaseCount };
    });
  }
}

/** A lease younger than this never moves for balance (it may for a decommission); CockroachDB's kv.allocator.min_lease_transfer_interval default. */
export const LEASE_REBALANCE_MIN_AGE_MS = 1_000;

/** How far above the mean a store's lease count must be before it sheds leases for balance. */
export function leaseOverfullBand(meanLeases: number, threshold: number): number {
  return Math.max(threshold, 0.1 * meanLeases);
}

export type Target = { readonly nodeId: number; readonly storeId: number };

const target = (s: { nodeId: number; storeId: number }): Target => ({ nodeId: s.nodeId, storeId: s.storeId });

function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** What the replicate queue should do next for one range (at most one action). */
export type ReplicateAction =
  | { readonly kind: 'none' }
  | { readonly kind: 'add'; readonly target: Target }
  | { readonly kind: 'replace'; readonly target: Target; readonly old: Target }
  | { readonly kind: 'remove'; readonly old: Target }
  | { readonly kind: 'transferLease'; readonly to: ReplicaDescriptor };

/** `leaseAgeMs`: how long the lease has been held (its start to now); unknown counts as old. */
export function planReplication(desc: RangeDescriptor, leaseStoreId: number, stores: readonly StoreStatus[], s: RangeQueueSettings, leaseAgeMs = Infinity): ReplicateAction {
  const byStore = new Map(stores.map((x) => [x.storeId, x]));
  const voters = desc.replicas.filter((r) => r.type === 0);
  const usable = (x: StoreStatus | undefined): boolean => x !== undefined && x.live && !x.decommissioning;
  const mustGo = (r: ReplicaDescriptor): boolean => {
    const st = byStore.get(r.storeId);
    return st === undefined || st.decommissioning || (!st.live && st.deadForMs >= s.deadNodeTimeoutMs);
  };
  const candidates = stores.filter((x) => usable(x) && !desc.replicas.some((r) => r.storeId === x.storeId)).sort((a, b) => a.replicaCount - b.replicaCount || a.storeId - b.storeId);
  const best = candidates[0];
  const healthy = voters.filter((r) => !mustGo(r));
  // 1. The leaseholder itself must go: hand the lease to a healthy voter first.
  const me = voters.find((r) => r.storeId === leaseStoreId);
  const leaseTargets = voters.filter((r) => r.storeId !== leaseStoreId && usable(byStore.get(r.storeId)));
  if (me !== undefined && mustGo(me) && leaseTargets.length > 0) return { kind: 'transferLease', to: leaseTargets[0] as ReplicaDescriptor };
  // 2. Replace voters on dead/decommissioning nodes.
  const doomed = voters.find((r) => mustGo(r) && r.storeId !== leaseStoreId);
  if (doomed !== undefined) {
    if (best !== undefined && healthy.length <= s.targetReplicas) return { kind: 'replace', target: target(best), old: target(doomed) };
    // Without a replacement, only a voter that is down on a DECOMMISSIONING node goes (so a decommission
    // can finish): removing one that still serves would leave two voters that survive no failure. With a
    // 4th and 5th node briefly not live in this view (a liveness blip under load), that removal left
    // ranges on [n2, n4]; killing n2 then made them unavailable for good (kv-ranges-multiproc/rebalance,
    // load ~33). The same holds for a voter only "dead" in this view: a blip of more than the dead-node
    // timeout (4 s in that test, load ~30) removed live voters of r12 and r18, leaving [n3, n2] and
    // [n3, n2, +n5 learner], and the kill of n2 stranded them. A voter that is really dead costs nothing
    // by staying (two voters of [A, B, dead] are a quorum exactly when [A, B] is), so, as CockroachDB's
    // allocator does, it waits for a target to be replaced by.
    const st = byStore.get(doomed.storeId);
    const downDecommissioning = st !== undefined && st.decommissioning && !st.live;
    if (voters.length > 1 && (healthy.length >= s.targetReplicas || (best === undefined && downDecommissioning))) return { kind: 'remove', old: target(doomed) };
  }
  // 3. Up-replicate.
  if (voters.length < s.targetReplicas && best !== undefined) return { kind: 'add', target: target(best) };
  // 4. Down-replicate: the most loaded voter that is not the leaseholder.
  if (voters.length > s.targetReplicas) {
    const extra = [...voters].filter((r) => r.storeId !== leaseStoreId).sort((a, b) => (byStore.get(b.storeId)?.replicaCount ?? 0) - (byStore.get(a.storeId)?.replicaCount ?? 0))[0];
    if (extra !== undefined) return { kind: 'remove', old: target(extra) };
  }
  // 5. Rebalance replica counts across usable stores.
  const live = stores.filter(usable);
  const m = mean(live.map((x) => x.replicaCount));
  if (best !== undefined && best.replicaCount < m) {
    const from = [...voters]
      .filter((r) => r.storeId !== leaseStoreId)
      .map((r) => byStore.get(r.storeId))
      .filter((x): x is StoreStatus => x !== undefined)
      .sort((a, b) => b.replicaCount - a.replicaCount)[0];
    if (from !== undefined && from.replicaCount - best.replicaCount > s.rebalanceThreshold && from.replicaCount > m) return { kind: 'replace', target: target(best), old: target(from) };
  }
  // 6. Lease balance, with hysteresis (see the header).
  const lm = mean(live.map((x) => x.leaseCount));
  const mine = byStore.get(leaseStoreId);
  const band = leaseOverfullBand(lm, s.rebalanceThreshold);
  if (mine !== undefined && leaseAgeMs >= LEASE_REBALANCE_MIN_AGE_MS && mine.leaseCount > lm) {
    const to = leaseTargets.map((r) => ({ r, st: byStore.get(r.storeId) as StoreStatus })).sort((a, b) => a.st.leaseCount - b.st.leaseCount)[0];
    // Overfull source, or an underfull target (a new node: without this, 5/5/5/0/0 never moved).
    const unbalanced = mine.leaseCount > lm + band || (to !== undefined && to.st.leaseCount < lm - band);
    if (unbalanced && to !== undefined && to.st.leaseCount < lm && mine.leaseCount - to.st.leaseCount > 1) return { kind: 'transferLease', to: to.r };
  }
  return { kind: 'none' };
}
