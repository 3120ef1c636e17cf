/**
 * Issue 4 bug 4: the split queue counted a failure under load, with no way to
 * tell what failed. A retryable error (a benign conflict) is retried and
 * counted under `retries`; a failure is recorded in metrics.lastFailure.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { TestCluster } from '../support/test-cluster.js';
import { ReplicaQueue } from '../../src/kv/queue.js';
import { CairnError } from '../../src/util/errors.js';

let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.close();
  cluster = null;
});

describe('replica queue failures', () => {
  it('retries a retryable error, counts and names a real one', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 1 }));
    c.startTicker();
    let calls = 0;
    const flaky = new ReplicaQueue(() => c.store(0), {
      name: 'flaky',
      shouldQueue: (r) => (r.rangeId === 1 ? 1 : 0),
      async process() {
        if (++calls === 1) throw new CairnError('kv.test_conflict', 'kv: conflict', { retryable: true });
      },
    }, 1);
    expect(await flaky.runOnce()).toBe(1);
    expect(flaky.metrics).toMatchObject({ processed: 1, failures: 0, retries: 1, lastFailure: null });

    const broken = new ReplicaQueue(() => c.store(0), {
      name: 'broken',
      shouldQueue: (r) => (r.rangeId === 1 ? 1 : 0),
      async process() {
        throw new CairnError('kv.test_broken', 'kv: broken');
      },
    }, 1);
    expect(await broken.runOnce()).toBe(0);
    expect(broken.metrics).toMatchObject({ processed: 0, failures: 1, retries: 0, lastFailure: 'r1: kv.test_broken: kv: broken' });
  }, 30_000);
});
