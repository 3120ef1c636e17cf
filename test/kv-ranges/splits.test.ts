/**
 * Splits (issue 4 "Ranges", must-show 4; DESIGN.md §6 "Crash in the middle of
 * a split"): size-based splits through the split queue into ≥ 200 ranges keep
 * every key readable and every scan complete and ordered; a node stopped at
 * each step of a split (after the range-id allocation, between the split and
 * the meta2 write, a follower missing the split) comes back consistent:
 * every key readable exactly once, meta2 equal to the descriptors, equal
 * per-replica checksums.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { TestCluster } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { newSplitQueue, rangeBytes } from '../../src/kv/split-queue.js';
import { DEFAULT_RANGE_QUEUE_SETTINGS } from '../../src/kv/queue.js';
import { KvClient } from '../../src/kv/kv-client.js';
import { checkConsistency, expectAllKeys, descriptors, repairUntil, distSender, key, SPAN_END, SPAN_START } from './support.js';

let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.close();
  cluster = null;
});

const bigVal = (i: number): Buffer => Buffer.alloc(240, 97 + (i % 26));


describe('splits', () => {
  it('size-based: the split queue splits a few KiB ranges into ≥ 200 ranges; scans stay complete and ordered', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3 }));
    c.startTicker();
    const ds = distSender(c, 0);
    const kv = new KvClient(ds);
    const N = 2400;
    for (let b = 0; b < N; b += 200) await kv.batch(Array.from({ length: 200 }, (_, j) => ({ kind: 'put' as const, key: key(b + j), value: bigVal(b + j) })));
    const settings = { ...DEFAULT_RANGE_QUEUE_SETTINGS, splitMaxRangeBytes: 4096 };
    const queues = [0, 1, 2].map((i) => newSplitQueue(() => (c.isRunning(i) ? c.store(i) : null), distSender(c, i), settings));
    for (let round = 0; round < 20; round++) {
      const n = (await Promise.all(queues.map((q) => q.runOnce()))).reduce((a, b) => a + b, 0);
      // r1 holds meta2 (a few hundred records by now), which never splits.
      const big = descriptors(c).filter((d) => d.rangeId !== 1 && c.replicas(d.rangeId).some(({ r }) => rangeBytes(r) > 4096));
      if (n > 0 && big.length === 0) break;
    }
    const descs = descriptors(c);
    expect(descs.length).toBeGreaterThanOrEqual(200);
    for (const d of descs) for (const { r } of c.replicas(d.rangeId)) if (d.rangeId !== 1) expect(rangeBytes(r)).toBeLessThanOrEqual(4096);
    expect(queues.reduce((n, q) => n + q.metrics.failures, 0), queues.map((q) => q.metrics.lastFailure).join('; ')).toBe(0);
    await expectAllKeys(new KvClient(distSender(c, 2)), N, bigVal);
    await checkConsistency(c, kv, 100);
    // Timed out at 120 s once at load ~38 (with the other kv-ranges files and two multi-process tests running);
    // the rounds above are bounded, so this is only a backstop.
  }, 300_000);

  it('a node stopped at each step of a split: after restart everything is consistent', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3, engine: 'level' }));
    c.startTicker();
    let ds = distSender(c, 0);
    let kv = new KvClient(ds);
    const N = 300;
    await kv.batch(Array.from({ length: N }, (_, i) => ({ kind: 'put' as const, key: key(i), value: bigVal(i) })));
    // r1 | r2 = [key(100), KEY_MAX): the splits below are of r2, whose meta2 records live in r1.
    await adminSplit(ds, key(100));
    const settings = { ...DEFAULT_RANGE_QUEUE_SETTINGS };
    const repairMeta = async (): Promise<void> => {
      for (let i = 0; i < 3; i++) if (c.isRunning(i)) await newSplitQueue(() => c.store(i), distSender(c, i), settings).runOnce();
    };
    const leaseholderOf = async (k: Buffer): Promise<number> => {
      const d = descriptors(c).find((x) => x.startKey.compare(k) <= 0 && x.endKey.compare(k) > 0)!;
      await c.waitFor(() => c.leaseholder(d.rangeId) >= 0, 10_000, 'a leaseholder');
      return c.leaseholder(d.rangeId);
    };

    // Step 1: the leaseholder dies right after the range id was allocated.
    let victim = await leaseholderOf(key(150));
    const client = victim === 0 ? 1 : 0;
    ds = distSender(c, client);
    kv = new KvClient(ds);
    await adminSplit(ds, key(150), { afterAllocate: async () => c.stopNode(victim) });
    await c.restartNode(victim);
    await repairUntil(c, () => new KvClient(distSender(c, client)), repairMeta);
    await expectAllKeys(kv, N, bigVal);
    await checkConsistency(c, kv, 10);

    // Step 2: the driver dies between the split and the meta2 write; the whole cluster restarts.
    await expect(
      adminSplit(ds, key(200), {
        afterSplit: async () => {
          throw new Error('driver killed');
        },
      }),
    ).rejects.toThrow('driver killed');
    for (let i = 0; i < 3; i++) await c.stopNode(i);
    for (let i = 0; i < 3; i++) await c.restartNode(i);
    ds = distSender(c, 0);
    kv = new KvClient(ds);
    await repairUntil(c, () => new KvClient(distSender(c, 0)), repairMeta);
    await expectAllKeys(kv, N, bigVal);
    await checkConsistency(c, kv, 20);

    // Step 3: a follower is down during the split and catches up from the log afterwards.
    const lh = await leaseholderOf(key(250));
    victim = lh === 2 ? 1 : 2;
    await c.stopNode(victim);
    await adminSplit(ds, key(250));
    await kv.put(key(260), bigVal(260));
    await c.restartNode(victim);
    const n = descriptors(c).length;
    await c.waitFor(() => c.store(victim).allReplicas().filter((r) => r.initialized).length === n, 20_000, 'the follower to apply the split');
    await expectAllKeys(kv, N, bigVal);
    const descs = await checkConsistency(c, kv, 30);
    expect(descs.length).toBe(5);
  }, 120_000);
});
