/**
 * Manual splits are sticky (issue 4 session 2, item 3; CockroachDB's sticky
 * bit): a split with an expiration gives the right-hand descriptor a
 * stickyBit, and the merge queue leaves that boundary alone until the clock
 * passes it, while automatic boundaries next to it are merged away. An
 * explicit AdminMerge still merges a sticky boundary. And the retrying admin
 * merge (Node.adminMerge, /_admin/merge) rides out a concurrent split.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { adminMergeWithRetry } from '../../src/kv/merge.js';
import { newMergeQueue } from '../../src/kv/merge-queue.js';
import { DEFAULT_RANGE_QUEUE_SETTINGS } from '../../src/kv/queue.js';
import { decodeRangeDescriptor, encodeRangeDescriptor } from '../../src/kv/api-codec.js';
import { KvClient } from '../../src/kv/kv-client.js';
import { MAX_TIMESTAMP, tsAddMicros } from '../../src/util/hlc.js';
import type { RangeDescriptor } from '../../src/kv/api.js';
import { checkConsistency, descriptors, distSender, expectAllKeys, key, val } from './support.js';

const start = autoCloseClusters();
const settings = { ...DEFAULT_RANGE_QUEUE_SETTINGS, mergeMaxCombinedBytes: 1 << 30 };

describe('sticky manual splits', () => {
  it('the descriptor codec round-trips the sticky bit and keeps descriptors without one unchanged', () => {
    const d: RangeDescriptor = { rangeId: 7, startKey: key(1), endKey: key(2), replicas: [{ nodeId: 1, storeId: 1, replicaId: 1, type: 0 }], nextReplicaId: 2, generation: 3 };
    expect(decodeRangeDescriptor(encodeRangeDescriptor(d))).toEqual(d);
    expect('stickyBit' in decodeRangeDescriptor(encodeRangeDescriptor(d))).toBe(false);
    const s = { ...d, stickyBit: { wall: 1_700_000_000_000_000, logical: 4 } };
    expect(decodeRangeDescriptor(encodeRangeDescriptor(s))).toEqual(s);
    expect(decodeRangeDescriptor(encodeRangeDescriptor({ ...d, stickyBit: MAX_TIMESTAMP })).stickyBit).toEqual(MAX_TIMESTAMP);
  });

  it('the merge queue merges automatic boundaries but keeps sticky ones until they expire; AdminMerge merges them', async () => {
    const c = await start({ nodes: 3 });
    c.startTicker();
    const ds = distSender(c, 0);
    const kv = new KvClient(ds);
    const N = 60;
    await kv.batch(Array.from({ length: N }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    // Automatic-style boundaries at 10, 30, 50; sticky forever at 20; sticky for 2 s at 40.
    for (const i of [10, 30, 50]) await adminSplit(ds, key(i));
    const forever = (await adminSplit(ds, key(20), { expiration: MAX_TIMESTAMP }))?.right;
    const soon = tsAddMicros(c.node(0).clock.now(), 2_000_000);
    const brief = (await adminSplit(ds, key(40), { expiration: soon }))?.right;
    expect(forever?.stickyBit).toEqual(MAX_TIMESTAMP);
    expect(brief?.stickyBit).toEqual(soon);
    const starts = (): string[] => descriptors(c).map((d) => d.startKey.toString('latin1'));
    const queues = [0, 1, 2].map((i) => newMergeQueue(() => c.store(i), distSender(c, i), settings, 0));
    const mergeUntilStable = async (): Promise<void> => {
      for (let round = 0, prev = -1; round < 30 && descriptors(c).length !== prev; round++) {
        prev = descriptors(c).length;
        await Promise.all(queues.map((q) => q.runOnce()));
      }
    };
    await mergeUntilStable();
    // Only the sticky boundaries are left (the expiring one has not expired yet: the clocks are real, 2 s).
    if (c.node(0).clock.now().wall < soon.wall) expect(starts()).toEqual(['', key(20).toString('latin1'), key(40).toString('latin1')]);
    // Once the clocks pass the expiration, the queue merges that boundary.
    await c.waitFor(() => [0, 1, 2].every((i) => c.node(i).clock.now().wall > soon.wall), 10_000, 'the sticky bit to expire');
    await mergeUntilStable();
    expect(starts()).toEqual(['', key(20).toString('latin1')]);
    // An explicit merge ignores the sticky bit.
    const merged = await adminMergeWithRetry(ds, key(0));
    expect(merged?.endKey.length).toBeGreaterThan(0);
    expect(starts()).toEqual(['']);
    await expectAllKeys(kv, N);
    await checkConsistency(c, kv, 100);
  }, 60_000);

  it('the retrying admin merge rides out splits of the same ranges running at the same time', async () => {
    const c = await start({ nodes: 3 });
    c.startTicker();
    const ds = distSender(c, 0);
    const kv = new KvClient(ds);
    const N = 200;
    await kv.batch(Array.from({ length: N }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    for (let i = 20; i < N; i += 20) await adminSplit(ds, key(i));
    // Merges through node 2 while node 3 splits the same ranges at other keys.
    const splitter = distSender(c, 2);
    const splits = (async () => {
      for (let i = 5; i < N; i += 10) await adminSplit(splitter, key(i));
    })();
    const merger = distSender(c, 1);
    for (let i = 0; i < 8; i++) await adminMergeWithRetry(merger, key(i * 20));
    await splits;
    await expectAllKeys(kv, N);
    await checkConsistency(c, kv, 100);
  }, 60_000);
});
