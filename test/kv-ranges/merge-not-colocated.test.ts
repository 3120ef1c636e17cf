/**
 * A merge asked for two ranges on different stores must leave both ranges
 * serving (found by the kvnemesis run with replica moves, TXN_NEMESIS_MOVES=1:
 * every worker stalled within 20 s on ranges whose lease was the merge
 * freeze's nobody-lease).
 *
 * Mechanism: adminMerge (merge.ts) freezes the right neighbour R (Subsume:
 * durable nobody-lease) BEFORE anything checks that L and R are colocated;
 * only the AdminMerge command on L checks it (cmd-admin-merge.ts,
 * kv.merge_not_colocated) — after the freeze. R then stays frozen forever:
 * no replica can acquire a lease, so it can change neither its replica set
 * nor its data, and every request to its keys is retried until it times out.
 *
 * Fixed: adminMerge checks colocation on fresh descriptors before it
 * freezes R. A replica change racing between that check and the freeze is
 * refused by Subsume itself, which checks the left's store set under R's
 * latches (test/kv-ranges/merge-replica-change-race.test.ts).
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { adminMerge } from '../../src/kv/merge.js';
import { addVoter } from '../../src/kv/replica-change.js';
import { CairnError } from '../../src/util/errors.js';
import { KvClient } from '../../src/kv/kv-client.js';
import { expectMeta2MatchesDescriptors, expectRightServes, key, startSplitPair } from './support.js';

const start = autoCloseClusters();

describe('merge of ranges that are not colocated', () => {
  it('refuses without freezing the right range: its keys stay readable and writable', async () => {
    const { c, ds, right } = await startSplitPair(start);
    // Move R's replica on n1 to n4: L stays on n1,n2,n3, R is now on n2,n3,n4.
    const moved = await addVoter(ds, right, { nodeId: 4, storeId: 4 }, { nodeId: 1, storeId: 1 });
    expect(moved.replicas.map((r) => r.nodeId).sort()).toEqual([2, 3, 4]);
    let err: unknown = null;
    try {
      await adminMerge(ds, key(1));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).code).toBe('kv.merge_not_colocated');
    // R must still serve: a read and a write of one of its keys within a few seconds.
    await expectRightServes(ds, 101);
    await expectMeta2MatchesDescriptors(c, new KvClient(ds));
  }, 60_000);
});
