/**
 * Replication changes and the replicate queue (issue 4 "Replication",
 * must-show 5): a 4th node joins and replicas and leases rebalance to it
 * (learner → snapshot → promote, via a joint configuration when a voter
 * leaves at the same time); decommissioning it moves them back; a node dead
 * beyond the timeout is replaced and every range returns to 3 voters on live
 * nodes. Every phase ends with the full consistency check (meta2 equal to the
 * descriptors, equal replica checksums) and every key readable.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { TestCluster } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { DEFAULT_RANGE_QUEUE_SETTINGS } from '../../src/kv/queue.js';
import { LocalStorePool } from '../../src/kv/rebalance.js';
import { newReplicateQueue, decommissionProgress } from '../../src/kv/replicate-queue.js';
import { newReplicaGCQueue } from '../../src/kv/replica-change-gc.js';
import { addVoter, changeReplicas, removeVoter, waitForLearner } from '../../src/kv/replica-change.js';
import { ChangeReplicasOp } from '../../src/kv/api.js';
import { newSplitQueue } from '../../src/kv/split-queue.js';
import { KvClient } from '../../src/kv/kv-client.js';
import type { ReplicaQueue } from '../../src/kv/queue.js';
import { checkConsistency, expectAllKeys, repairUntil, descriptors, distSender, getNow, key, putAt, val, SPAN_END, SPAN_START } from './support.js';

let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.close();
  cluster = null;
});


describe('replication changes', () => {
  it('adds a voter through learner + snapshot, swaps voters through a joint configuration, removes one', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3, settings: { snapshotChunkBytes: 2048 } }));
    c.startTicker();
    const ds = distSender(c, 0);
    const kv = new KvClient(ds);
    await kv.batch(Array.from({ length: 200 }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    await adminSplit(ds, key(100));
    await c.addNode();
    await c.addNode();
    const r2 = descriptors(c).find((d) => d.rangeId !== 1)!;
    await c.waitFor(() => c.leaseholder(r2.rangeId) >= 0 || c.leader(r2.rangeId) >= 0, 10_000, 'r2 leader');
    let d = await addVoter(ds, r2, { nodeId: 4, storeId: 4 });
    expect(d.replicas.map((r) => [r.nodeId, r.type])).toEqual([[1, 0], [2, 0], [3, 0], [4, 0]]);
    expect(c.store(3).replica(r2.rangeId)?.initialized).toBe(true);
    // Joint swap: n5 in, a non-leaseholder voter out.
    await c.waitFor(() => c.leaseholder(r2.rangeId) >= 0, 10_000, 'r2 lease');
    const lh = c.leaseholder(r2.rangeId) + 1;
    const out = d.replicas.find((r) => r.nodeId !== lh && r.nodeId !== 4)!;
    d = await addVoter(ds, d, { nodeId: 5, storeId: 5 }, { nodeId: out.nodeId, storeId: out.storeId });
    expect(d.replicas.every((r) => r.type === 0)).toBe(true);
    expect(d.replicas.map((r) => r.nodeId).sort()).toEqual([1, 2, 3, 4, 5].filter((n) => n !== out.nodeId));
    // The removed voter may never hear of its removal: the replica GC queue finds it in meta2.
    const gc = newReplicaGCQueue(() => c.store(out.nodeId - 1), distSender(c, out.nodeId - 1), DEFAULT_RANGE_QUEUE_SETTINGS);
    for (let i = 0; i < 50 && c.store(out.nodeId - 1).replica(r2.rangeId) !== undefined; i++) await gc.runOnce();
    expect(c.store(out.nodeId - 1).replica(r2.rangeId)).toBeUndefined();
    d = await removeVoter(ds, d, { nodeId: 4, storeId: 4 });
    expect(d.replicas.length).toBe(3);
    await putAt(ds, key(150), Buffer.from('after'));
    expect(await getNow(distSender(c, 4), key(150))).toEqual(Buffer.from('after'));
    await checkConsistency(c, kv, 300);
  }, 60_000);

  it('a change driver dying in a joint configuration: after a full restart the replicate queue leaves it (incoming voter in, outgoing out)', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3, engine: 'level' }));
    c.startTicker();
    let ds = distSender(c, 0);
    await new KvClient(ds).batch(Array.from({ length: 50 }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    await adminSplit(ds, key(25));
    await c.addNode();
    await c.addNode();
    const r2 = () => descriptors(c).find((d) => d.rangeId !== 1)!;
    await c.waitFor(() => c.leaseholder(r2().rangeId) >= 0, 10_000, 'r2 lease');
    // Dies after the learner step: a learner on n4 is left.
    let d = await changeReplicas(ds, r2(), ChangeReplicasOp.AddLearners, [{ nodeId: 4, storeId: 4 }], []);
    await waitForLearner(ds, d, { nodeId: 4, storeId: 4 });
    // …and then, in a second change, after entering a joint config (n4 in, a non-leaseholder out).
    await c.waitFor(() => c.leaseholder(d.rangeId) >= 0, 10_000, 'r2 lease');
    const lh = c.leaseholder(d.rangeId) + 1;
    const out = d.replicas.find((r) => r.type === 0 && r.nodeId !== lh)!;
    d = await changeReplicas(ds, d, ChangeReplicasOp.ChangeVoters, [{ nodeId: 4, storeId: 4 }], [{ nodeId: out.nodeId, storeId: out.storeId }]);
    expect(d.replicas.some((r) => r.type === 2) && d.replicas.some((r) => r.type === 3)).toBe(true);
    for (let i = 0; i < 5; i++) await c.stopNode(i);
    for (let i = 0; i < 5; i++) await c.restartNode(i);
    ds = distSender(c, 0);
    const pool = new LocalStorePool(() => Array.from({ length: c.size }, (_, i) => ({ nodeId: i + 1, storeId: i + 1, store: c.isRunning(i) ? c.store(i) : null })));
    const queues = Array.from({ length: 5 }, (_, i) => newReplicateQueue(() => c.store(i), distSender(c, i), pool, DEFAULT_RANGE_QUEUE_SETTINGS, { learnerWaitMs: 5000 }));
    for (let round = 0; round < 100 && r2().replicas.some((r) => r.type !== 0); round++) {
      for (const q of queues) await q.runOnce();
      await new Promise((r) => setTimeout(r, 20));
    }
    const fin = r2();
    expect(fin.replicas.every((r) => r.type === 0)).toBe(true);
    expect(fin.replicas.map((r) => r.nodeId)).toContain(4);
    expect(fin.replicas.map((r) => r.nodeId)).not.toContain(out.nodeId);
    const kv = new KvClient(ds);
    await repairUntil(c, () => new KvClient(distSender(c, 0)), async () => {
      for (let i = 0; i < 5; i++) await newSplitQueue(() => c.store(i), distSender(c, i), DEFAULT_RANGE_QUEUE_SETTINGS).runOnce();
    });
    await expectAllKeys(kv, 50);
    await checkConsistency(c, kv, 700);
  }, 90_000);

  it('a 4th node joins and gets replicas and leases; decommissioning moves them back; a dead node is replaced', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3 }));
    c.startTicker();
    const ds = distSender(c, 0);
    const kv = new KvClient(ds);
    const N = 240;
    await kv.batch(Array.from({ length: N }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    for (let i = 20; i < N; i += 20) await adminSplit(ds, key(i));
    const ranges = descriptors(c).length;
    expect(ranges).toBe(12);
    const pool = new LocalStorePool(() => Array.from({ length: c.size }, (_, i) => ({ nodeId: i + 1, storeId: i + 1, store: c.isRunning(i) ? c.store(i) : null })));
    const settings = { ...DEFAULT_RANGE_QUEUE_SETTINGS, deadNodeTimeoutMs: 1500 };
    const queues: ReplicaQueue[] = [];
    const addQueue = (i: number): void => {
      const store = (): ReturnType<typeof c.store> | null => (c.isRunning(i) ? c.store(i) : null);
      queues.push(newReplicateQueue(store, distSender(c, i), pool, settings, { learnerWaitMs: 5000 }), newReplicaGCQueue(store, distSender(c, i), settings));
    };
    for (let i = 0; i < 3; i++) addQueue(i);
    const drive = async (done: () => boolean, what: string, rounds = 60): Promise<void> => {
      for (let round = 0; round < rounds && !done(); round++) {
        for (const q of queues) await q.runOnce();
        await new Promise((r) => setTimeout(r, 20)); // let leases settle between rounds (the queues act on leaseholders)
      }
      expect(done(), what).toBe(true);
    };
    const st = (nodeId: number) => pool.stores().find((s) => s.nodeId === nodeId)!;
    const fullyReplicatedOn = (live: number[]): boolean =>
      descriptors(c).every((d) => d.replicas.length === 3 && d.replicas.every((r) => r.type === 0 && live.includes(r.nodeId)));

    // Join: the 4th node gets about its share of replicas and some leases.
    await c.addNode();
    addQueue(3);
    await drive(() => st(4).replicaCount >= Math.floor((ranges * 3) / 4) - 2 && st(4).leaseCount >= 1 && fullyReplicatedOn([1, 2, 3, 4]), 'rebalanced onto n4');
    await expectAllKeys(kv, N);
    await checkConsistency(c, kv, 1000);

    // Decommission n4: everything moves back.
    pool.decommission(4);
    await drive(() => decommissionProgress(pool, 4).replicas === 0 && fullyReplicatedOn([1, 2, 3]), 'n4 drained');
    expect(decommissionProgress(pool, 4)).toEqual({ replicas: 0, leases: 0 });
    await expectAllKeys(kv, N);
    await checkConsistency(c, kv, 2000);

    // n4 back in service; n2 dies for longer than the timeout: its replicas are replaced.
    pool.recommission(4);
    await c.stopNode(1);
    const kv3 = new KvClient(distSender(c, 2));
    await drive(() => st(2).deadForMs >= settings.deadNodeTimeoutMs && fullyReplicatedOn([1, 3, 4]), 'n2 replaced', 200);
    await expectAllKeys(kv3, N);
    await checkConsistency(c, kv3, 3000);
  }, 120_000);
});
