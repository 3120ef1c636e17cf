/**
 * A replica change racing a merge (issue 4, task "merge vs replica change";
 * CockroachDB's Subsume checks the LHS's replica set inside the merge
 * transaction, RFC range merges §"Subsume").
 *
 * adminMerge (merge.ts) checks that L and R are colocated on fresh
 * descriptors, then freezes R (Subsume). Before Subsume checked it too, a
 * replica change of R (or of L) landing between the check and the freeze
 * left R frozen — the nobody-lease, durable — and AdminMerge refused the
 * non-colocated pair: R served nothing, forever. Each test interleaves the
 * change deterministically through the driver's beforeFreeze/afterFreeze
 * hooks:
 *   - R moves between the check and the freeze: Subsume refuses
 *     (kv.merge_replicas_changed), R keeps serving; the retrying driver then
 *     answers kv.merge_not_colocated from a fresh lookup.
 *   - L moves between the check and the freeze (applied on R's leaseholder
 *     store): Subsume refuses, R keeps serving.
 *   - L asked to move after the freeze: refused (kv.merge_in_progress); the
 *     merge completes and the merged range serves every key.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { adminMerge, adminMergeWithRetry } from '../../src/kv/merge.js';
import { addVoter } from '../../src/kv/replica-change.js';
import { FROZEN_REPLICA_ID } from '../../src/kv/merge-trigger.js';
import type { RangeDescriptor } from '../../src/kv/api.js';
import { CairnError } from '../../src/util/errors.js';
import { KvClient } from '../../src/kv/kv-client.js';
import { descriptors, expectMeta2MatchesDescriptors, expectRightServes, getNow, key, startSplitPair, val } from './support.js';

const start = autoCloseClusters();
const setup = (): ReturnType<typeof startSplitPair> => startSplitPair(start);

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (e instanceof CairnError) return e.code;
    throw e;
  }
}

const nodesOf = (d: RangeDescriptor): number[] => d.replicas.map((r) => r.nodeId).sort();
const current = (c: TestCluster, rangeId: number): RangeDescriptor => descriptors(c).find((d) => d.rangeId === rangeId) as RangeDescriptor;

describe('merge racing a replica change', () => {
  it("R's replica moves between the colocation check and the freeze: Subsume refuses, R keeps serving", async () => {
    const { c, ds, right } = await setup();
    let moved: RangeDescriptor | null = null;
    const code = await codeOf(
      adminMerge(ds, key(1), {
        beforeFreeze: async (_l, r) => {
          expect(r.rangeId).toBe(right.rangeId);
          moved = await addVoter(ds, r, { nodeId: 4, storeId: 4 }, { nodeId: 1, storeId: 1 });
        },
      }),
    );
    expect(nodesOf(moved!)).toEqual([2, 3, 4]);
    expect(code).toBe('kv.merge_replicas_changed');
    await expectRightServes(ds, 101);
    // The retrying driver decides from a fresh lookup: not colocated, final.
    expect(await codeOf(adminMergeWithRetry(ds, key(1), { sleep: async () => undefined }))).toBe('kv.merge_not_colocated');
    await expectRightServes(ds, 102);
    expect(descriptors(c).some((d) => d.rangeId === right.rangeId)).toBe(true);
  }, 60_000);

  it("L's replica moves between the colocation check and the freeze: Subsume refuses, R keeps serving", async () => {
    const { c, ds, left, right } = await setup();
    const code = await codeOf(
      adminMerge(ds, key(1), {
        beforeFreeze: async (l) => {
          // Move L off a store that holds neither lease, then wait until R's leaseholder store applied it.
          await c.waitFor(() => c.leaseholder(left.rangeId) >= 0 && c.leaseholder(right.rangeId) >= 0, 10_000, 'both leases');
          const keep = new Set([c.leaseholder(left.rangeId), c.leaseholder(right.rangeId)]);
          const from = [0, 1, 2].find((i) => !keep.has(i)) as number;
          const moved = await addVoter(ds, l, { nodeId: 4, storeId: 4 }, { nodeId: from + 1, storeId: from + 1 });
          // Applied on every other store of R (whichever holds R's lease when Subsume evaluates).
          const others = [0, 1, 2].filter((i) => i !== from);
          await c.waitFor(() => others.every((i) => c.store(i).replica(left.rangeId)?.desc.generation === moved.generation), 10_000, "the move applied on R's other stores");
        },
      }),
    );
    expect(code).toBe('kv.merge_replicas_changed');
    await expectRightServes(ds, 101);
    expect(current(c, right.rangeId)).toBeDefined();
  }, 60_000);

  it('L asked to move after the freeze: refused until the merge is done; the merged range serves', async () => {
    const { c, ds, left, right } = await setup();
    let refused = '';
    const merged = await adminMerge(ds, key(1), {
      afterFreeze: async (r) => {
        // Every replica of R applied the freeze (L's leaseholder store has one of them).
        await c.waitFor(() => c.replicas(r.rangeId).every(({ r: x }) => x.lease?.replica.replicaId === FROZEN_REPLICA_ID), 10_000, 'the freeze applied everywhere');
        const l = current(c, left.rangeId);
        const from = [0, 1, 2].find((i) => i !== c.leaseholder(left.rangeId)) as number;
        refused = await codeOf(addVoter(ds, l, { nodeId: 4, storeId: 4 }, { nodeId: from + 1, storeId: from + 1 }));
      },
    });
    expect(refused).toBe('kv.merge_in_progress');
    expect(merged?.rangeId).toBe(left.rangeId);
    expect(nodesOf(merged!)).toEqual([1, 2, 3]);
    expect(descriptors(c).some((d) => d.rangeId === right.rangeId)).toBe(false);
    await expectRightServes(ds, 103);
    expect(await getNow(ds, key(1))).toEqual(val(1));
    await expectMeta2MatchesDescriptors(c, new KvClient(ds));
  }, 60_000);
});
