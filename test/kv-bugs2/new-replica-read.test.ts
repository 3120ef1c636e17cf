/**
 * Issue 4 bug 3: a new range (the right-hand side of a split, a just-merged
 * range) starts its timestamp cache at a horizon above the clocks, so its
 * first writes are acknowledged at a timestamp ahead of every clock. A
 * non-transactional read right after the acknowledged write must still see
 * it (read-your-writes through any node), without waiting for clocks.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { TestCluster } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { adminMerge } from '../../src/kv/merge.js';
import { KvClient } from '../../src/kv/kv-client.js';
import { distSender, key, val } from '../kv-ranges/support.js';

let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.close();
  cluster = null;
});

describe('reads right after writes on new ranges', () => {
  it('a get right after an acknowledged put on a fresh split or merge sees it', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3 }));
    c.startTicker();
    const ds = distSender(c, 0);
    const kv = new KvClient(ds);
    const readers = [0, 1, 2].map((i) => new KvClient(distSender(c, i)));
    await kv.put(key(0), val(0));
    for (let round = 1; round <= 5; round++) {
      await adminSplit(ds, key(round * 100));
      const k = key(round * 100 + 1);
      await kv.put(k, val(round));
      for (const r of readers) expect((await r.get(k))?.equals(val(round)), `split ${round}`).toBe(true);
    }
    for (let round = 4; round >= 1; round--) {
      await adminMerge(ds, key(round * 100));
      const k = key(round * 100 + 2);
      await kv.put(k, val(round));
      for (const r of readers) expect((await r.get(k))?.equals(val(round)), `merge ${round}`).toBe(true);
    }
  }, 60_000);
});
