/**
 * Merges (issue 4 "Ranges", must-show 4 "merging back too"; DESIGN.md §6
 * "every multi-step change … atomic on disk"): ranges split apart are merged
 * back by the merge queue (subsume → wait for the freeze → merge trigger →
 * meta2) until one range is left, every key readable and every scan complete
 * and ordered throughout; a driver killed after the freeze or before the
 * meta2 write, with the whole cluster restarted, is rolled forward by the
 * queues; a follower down during the freeze delays the merge but does not
 * break it.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { TestCluster } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { adminMerge } from '../../src/kv/merge.js';
import { newMergeQueue } from '../../src/kv/merge-queue.js';
import { newSplitQueue } from '../../src/kv/split-queue.js';
import { DEFAULT_RANGE_QUEUE_SETTINGS } from '../../src/kv/queue.js';
import { KvClient } from '../../src/kv/kv-client.js';
import { checkConsistency, expectAllKeys, descriptors, repairUntil, distSender, getNow, key, putAt, val, SPAN_END, SPAN_START } from './support.js';

let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.close();
  cluster = null;
});


const settings = { ...DEFAULT_RANGE_QUEUE_SETTINGS, mergeMaxCombinedBytes: 1 << 30 };

describe('merges', () => {
  it('the merge queue merges 60 ranges back into one; scans stay complete and ordered', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3 }));
    c.startTicker();
    const ds = distSender(c, 0);
    const kv = new KvClient(ds);
    const N = 600;
    await kv.batch(Array.from({ length: N }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    for (let i = 10; i < N; i += 10) await adminSplit(ds, key(i));
    expect(descriptors(c).length).toBe(60);
    const queues = [0, 1, 2].map((i) => newMergeQueue(() => c.store(i), distSender(c, i), settings, 0));
    const reader = new KvClient(distSender(c, 1));
    for (let round = 0; round < 80 && descriptors(c).length > 1; round++) {
      await Promise.all(queues.map((q) => q.runOnce()));
      await expectAllKeys(reader, N);
    }
    expect(descriptors(c).length).toBe(1);
    await putAt(ds, key(N), val(N));
    expect(await getNow(ds, key(N))).toEqual(val(N));
    await expectAllKeys(kv, N + 1);
    await checkConsistency(c, kv, 500);
    // Stats of the merged range agree with a recount.
    for (const { i, r } of c.replicas(1)) expect(r.applied.stats).toEqual(await c.recountStats(i));
  }, 120_000);

  it('a merge killed after the freeze, or before meta2, is rolled forward after a full restart', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3, engine: 'level' }));
    c.startTicker();
    let ds = distSender(c, 0);
    const N = 200;
    await new KvClient(ds).batch(Array.from({ length: N }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    for (const i of [50, 100, 150]) await adminSplit(ds, key(i));
    const restartAll = async (): Promise<void> => {
      for (let i = 0; i < 3; i++) await c.stopNode(i);
      for (let i = 0; i < 3; i++) await c.restartNode(i);
      ds = distSender(c, 0);
    };
    const runQueues = async (): Promise<void> => {
      for (let i = 0; i < 3; i++) await newMergeQueue(() => c.store(i), distSender(c, i), { ...settings, mergeMaxCombinedBytes: 0 }).runOnce();
      for (let i = 0; i < 3; i++) await newSplitQueue(() => c.store(i), distSender(c, i), settings).runOnce();
    };
    const killed = (): Promise<void> => Promise.reject(new Error('driver killed'));

    // Killed after the freeze of [150, max): the queues complete the merge into [100, 150).
    await expect(adminMerge(ds, key(100), { afterFreeze: killed })).rejects.toThrow('driver killed');
    await restartAll();
    // After a full restart the ranges elect leaders only as requests wake them: a queue round that found no leader
    // did nothing, so each round waits for leaders first (20 rounds that all ran before any election proved nothing).
    for (let i = 0; i < 20 && descriptors(c).length > 3; i++) {
      await c.waitFor(() => descriptors(c).every((d) => c.leader(d.rangeId) >= 0), 10_000, 'a leader on every range');
      await runQueues();
    }
    expect(descriptors(c).length).toBe(3);
    await repairUntil(c, () => new KvClient(distSender(c, 0)), runQueues);
    await expectAllKeys(new KvClient(ds), N);
    await checkConsistency(c, new KvClient(ds), 10);

    // Killed after the merge of [50, 100) into r?[..50) (not r1: [0,50) is r1, which writes meta2 itself) — use [100, max) + nothing: merge [50,100) with [100,max).
    await expect(adminMerge(ds, key(50), { afterMerge: killed })).rejects.toThrow('driver killed');
    await restartAll();
    await repairUntil(c, () => new KvClient(distSender(c, 0)), runQueues);
    expect(descriptors(c).length).toBe(2);
    await expectAllKeys(new KvClient(ds), N);
    await checkConsistency(c, new KvClient(ds), 20);

    // A follower down while the right range freezes: the merge waits for it to apply the freeze.
    const lh = c.leaseholder(1) >= 0 ? c.leaseholder(1) : 0;
    const victim = (lh + 1) % 3;
    ds = distSender(c, lh);
    const merged = await adminMerge(ds, key(0), {
      afterFreeze: async () => {
        await c.stopNode(victim);
        setTimeout(() => void c.restartNode(victim), 300);
      },
    });
    expect(merged?.endKey).toEqual(Buffer.from([0xff, 0xff]));
    await c.waitFor(() => c.isRunning(victim) && descriptors(c).length === 1 && c.store(victim).allReplicas().filter((r) => r.initialized).length === 1, 20_000, 'the follower to apply the merge');
    await expectAllKeys(new KvClient(ds), N);
    await checkConsistency(c, new KvClient(ds), 30);
  }, 120_000);
});
