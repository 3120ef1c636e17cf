/**
 * An AdminMerge whose answer is lost after it applied — the mechanism of the
 * failure that refused session 8's submission (official CI, test/kv-ranges-
 * multiproc/split-merge: `/_admin/merge … 503 kv.merge_timeout … replica 1
 * of r59 on n1 has not applied the merge freeze`, under load, where the
 * DistSender's breaker abandons calls to live but slow nodes: rpc.canceled
 * after sending, ambiguous).
 *
 * The driver (merge.ts adminMergeWithRetry) froze R and sent AdminMerge to L;
 * the merge applied (R's replicas are gone from every store) but the answer
 * was lost, so the driver never fixed meta2 — for any L but the first range
 * only it was going to. Its retry asked meta2 whether R was still there:
 * meta2 still named R, so it waited for R's (deleted) replicas to show the
 * freeze, 10 s per attempt, until it gave up with kv.merge_timeout naming
 * R's first replica. Fixed: the retry asks L's own replicas for L's
 * descriptor; if L now covers R's start, R is merged — meta2 is fixed and
 * the merged range returned.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { TestCluster } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { adminMergeWithRetry } from '../../src/kv/merge.js';
import { KvClient } from '../../src/kv/kv-client.js';
import { FROZEN_REPLICA_ID } from '../../src/kv/merge-trigger.js';
import { ZERO_TIMESTAMP } from '../../src/util/hlc.js';
import { descriptors, distSender, getNow, key, lossyDistSender, expectMeta2MatchesDescriptors, putAt, val } from './support.js';

let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.close();
  cluster = null;
});

describe('an AdminMerge whose answer is lost', () => {
  it('is found applied by the retry from L itself (meta2 still names R), which fixes meta2: no wait for the gone replicas', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3 }));
    c.startTicker();
    let loseNext = false;
    let lost = false;
    let rightId = -1;
    let pollsAfterLoss = 0;
    await putAt(distSender(c), key(5), val(5));
    const ds = lossyDistSender(c, (ba) => {
      if (lost && ba.header.rangeId === rightId && ba.requests[0]?.kind === 'leaseInfo') pollsAfterLoss++;
      if (!loseNext || ba.requests[0]?.kind !== 'adminMerge') return false;
      loseNext = false; // the next AdminMerge's answer (it applies) is lost
      lost = true;
      return true;
    });
    // r1 | L [key(10), key(50)) | R [key(50), key(100)) | [key(100), ..): L is not r1, so meta2 is the driver's to fix.
    for (const k of [10, 50, 100]) await adminSplit(ds, key(k));
    await putAt(ds, key(20), val(20));
    await putAt(ds, key(60), val(60));
    const left = descriptors(c).find((d) => d.startKey.equals(key(10)))!;
    const right = descriptors(c).find((d) => d.startKey.equals(key(50)))!;
    rightId = right.rangeId;
    loseNext = true;
    const merged = await adminMergeWithRetry(ds, key(20));
    expect(loseNext).toBe(false); // the answer was lost
    expect(merged?.rangeId).toBe(left.rangeId);
    expect(merged?.startKey).toEqual(key(10));
    expect(merged?.endKey).toEqual(key(100));
    // Found from L, not by polling R's replicas (gone) for the freeze.
    expect(pollsAfterLoss).toBe(0);
    expect(descriptors(c).some((d) => d.rangeId === right.rangeId)).toBe(false);
    // meta2 is right at once (no merge or split queue runs here), so a fresh router finds the merged range.
    await expectMeta2MatchesDescriptors(c, new KvClient(distSender(c, 1)));
    const fresh = distSender(c, 2);
    expect(await getNow(fresh, key(60))).toEqual(val(60));
    expect(await getNow(fresh, key(20))).toEqual(val(20));
  }, 60_000);

  it('a freeze whose answer is lost, then rolled forward by someone else (the merge queue) who did not fix meta2: the retry asks L, fixes meta2, does not merge the next neighbour', async () => {
    // A loaded run of test/kv-ranges-multiproc/split-merge (node log): /_admin/merge k650 — attempts 1 and 2
    // rpc.canceled, attempts 3-8 'kv.merge_mismatch: r60 does not start at k660': meta2 still named L [k650, k660)
    // and R, but L had absorbed R, so every freeze sent to k660 reached L. Before the fix this test failed the same way.
    const c = (cluster = await TestCluster.start({ nodes: 3 }));
    c.startTicker();
    let loseNext = false;
    await putAt(distSender(c), key(5), val(5));
    const ds = lossyDistSender(c, (ba) => {
      if (!loseNext || ba.requests[0]?.kind !== 'subsume') return false;
      loseNext = false; // the next freeze's answer (it applies) is lost
      return true;
    });
    for (const k of [10, 50, 100]) await adminSplit(ds, key(k));
    await putAt(ds, key(60), val(60));
    const left = descriptors(c).find((d) => d.startKey.equals(key(10)))!;
    const right = descriptors(c).find((d) => d.startKey.equals(key(50)))!;
    const next = descriptors(c).find((d) => d.startKey.equals(key(100)))!;
    const other = distSender(c, 1);
    let rolledForward = false;
    loseNext = true;
    const merged = await adminMergeWithRetry(ds, key(20), {
      sleep: async (ms) => {
        if (ms < 50 || rolledForward) return; // < 50: waitFrozen's polls
        rolledForward = true;
        // Between the driver's attempts: R is frozen on every replica; someone else's AdminMerge absorbs it,
        // and meta2 is left as it was (that driver died, or its answer was lost too).
        await c.waitFor(() => c.replicas(right.rangeId).length === 3 && c.replicas(right.rangeId).every(({ r }) => r.lease?.replica.replicaId === FROZEN_REPLICA_ID), 20_000, 'the freeze applied on every replica of R');
        await other.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'adminMerge', key: left.startKey, right }] });
      },
    });
    expect(loseNext).toBe(false);
    expect(rolledForward).toBe(true);
    expect(merged?.rangeId).toBe(left.rangeId);
    expect(merged?.endKey).toEqual(key(100)); // not past it: the next neighbour was not merged too
    expect(descriptors(c).some((d) => d.rangeId === next.rangeId)).toBe(true);
    await expectMeta2MatchesDescriptors(c, new KvClient(distSender(c, 2)));
    expect(await getNow(distSender(c, 2), key(60))).toEqual(val(60));
  }, 60_000);
});
