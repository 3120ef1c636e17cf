/**
 * A replica change whose leaseholder loses the lease with the change in
 * flight (session 6's flaky rebalance test: `AmbiguousResultError: r2: lease
 * transferred to r2/1 with the command in flight` out of changeReplicas, at
 * load ~22, when maintainLease handed the lease to the Raft leader while the
 * change was pending).
 *
 * The old holder learns of the new lease by APPLYING its entry, in log order:
 * every entry before it has applied there, and every copy of the pending
 * change after it fails the lease check. So the change never applied and
 * never will: the replica answers NotLeaseHolder (replica.ts installLease),
 * and the DistSender carries the change out at the new holder — exactly once
 * (one generation step). Before the fix the answer was ambiguous and the
 * driver (replicate queue, relocate) gave up.
 *
 * Deterministic: the proposal filter cuts the holder off at the moment the
 * change is handed to Raft, so its entry reaches no follower; the others
 * take the lease after it expires (requests wake them); then the holder is
 * healed.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { TestCluster } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { changeReplicas } from '../../src/kv/replica-change.js';
import { ChangeReplicasOp } from '../../src/kv/api.js';
import { replicaTestingKnobs } from '../../src/kv/replica.js';
import { descriptors, distSender, key, putAt, val } from './support.js';

let cluster: TestCluster | null = null;
afterEach(async () => {
  replicaTestingKnobs.proposalFilter = undefined;
  await cluster?.close();
  cluster = null;
});

function partition(c: TestCluster, i: number, on: boolean): void {
  for (let j = 0; j < c.size; j++) {
    if (j === i) continue;
    c.node(i).rpc!.faults.setFaults(j + 1, on ? { partition: true } : {});
    c.node(j).rpc!.faults.setFaults(i + 1, on ? { partition: true } : {});
  }
}

describe('a replica change whose leaseholder loses the lease mid-flight', () => {
  it('is answered NotLeaseHolder by the old holder and applied once at the new one — not reported ambiguous', async () => {
    // Proposal timeout 30 s: the old holder must answer from the lease it applies, not from a timeout.
    const c = (cluster = await TestCluster.start({ nodes: 3, settings: { proposalTimeoutTicks: 3000 } }));
    c.startTicker();
    await putAt(distSender(c), key(5), val(5));
    await adminSplit(distSender(c), key(25));
    await c.addNode();
    const r2 = () => descriptors(c).find((d) => d.rangeId !== 1)!;
    const rangeId = r2().rangeId;
    await c.waitFor(() => c.leaseholder(rangeId) >= 0, 10_000, 'r2 lease');
    const L = c.leaseholder(rangeId);
    const G = [0, 1, 2].find((i) => i !== L)!;
    const ds = distSender(c, G, 30_000);
    await putAt(ds, key(30), val(30)); // ds now routes r2 to L
    expect(ds.cache.leaseholder(rangeId)?.nodeId).toBe(L + 1);
    const before = r2();

    // Cut L off as the change is handed to Raft: its entry stays in L's log alone.
    let cut = false;
    replicaTestingKnobs.proposalFilter = (r, cmd) => {
      if (!cut && r.rangeId === rangeId && cmd.sideEffects.trigger !== undefined /* the only trigger after the split: the change */) {
        cut = true;
        partition(c, L, true);
      }
      return undefined;
    };
    const change = changeReplicas(ds, before, ChangeReplicasOp.AddLearners, [{ nodeId: 4, storeId: 4 }], []).then(
      (d) => ({ d, e: null }),
      (e: unknown) => ({ d: null, e }),
    );
    await c.waitFor(() => cut, 10_000, 'the change proposed on L');
    // Requests to the others wake their replicas (a quiesced range elects no leader on its own) and, once L's lease
    // has expired, make the new leader take it.
    const poke = setInterval(() => {
      for (const j of [0, 1, 2]) {
        if (j === L) continue;
        c.store(j)
          .send({ header: { rangeId, timestamp: { wall: 0, logical: 0 } }, requests: [{ kind: 'get', key: key(30) }] })
          .catch(() => undefined);
      }
    }, 50);
    try {
      await c.waitFor(() => c.leaseholder(rangeId) >= 0 && c.leaseholder(rangeId) !== L, 15_000, 'another replica holding the lease');
    } finally {
      clearInterval(poke);
    }
    const nlhBefore = ds.metrics.notLeaseHolder;
    partition(c, L, false);
    const { d, e } = await change;
    expect(e).toBe(null);
    expect(ds.metrics.notLeaseHolder).toBeGreaterThan(nlhBefore); // L's answer, followed to the new holder
    // Applied exactly once: one generation step, one new replica id, a learner on n4.
    expect(d!.generation).toBe(before.generation + 1);
    expect(d!.nextReplicaId).toBe(before.nextReplicaId + 1);
    expect(d!.replicas.filter((r) => r.nodeId === 4).map((r) => r.type)).toEqual([1]);
    await c.waitFor(() => c.store(L).replica(rangeId)?.desc.generation === d!.generation, 10_000, 'L applying the change');
  }, 60_000);
});
