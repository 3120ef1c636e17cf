/**
 * Issue 7's COPY finding (session 4): one replica lost every row of a range
 * the split queue had split off — its store held a snapshot-initialized
 * replica of the new right-hand range while its own copy of the parent still
 * covered those keys; a later snapshot of the (by then narrower) parent
 * cleared the parent's old, wider span on that store, right-hand rows and
 * all.
 *
 * Made deterministic here: node 3 misses a split of r1 at key(10). When it
 * comes back it hears the right-hand range (a placeholder, then a snapshot)
 * but nothing of r1, whose log has meanwhile been truncated past the split,
 * so r1 can only catch up by snapshot, after the right-hand one was offered.
 *
 * Fix (store.ts, acceptSnapshot): a snapshot that would initialize a replica
 * whose span overlaps another initialized replica on the store is refused
 * (retryable; the sender tries again later), as CockroachDB's
 * canApplySnapshot refuses it. Once r1 has caught up and narrowed, the
 * right-hand snapshot is taken, and every replica of every range agrees.
 */
import { describe, it, expect } from 'vitest';
import { KEY_MAX } from '../../storage/keys.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { Store } from '../../src/kv/store.js';
import type { RangeDescriptor } from '../../src/kv/api.js';
import { checkConsistency, client, distSender, key, val } from './support.js';

const start = autoCloseClusters();

describe('a snapshot that overlaps another replica on the store', () => {
  it('is refused until the overlapping replica has caught up; no replica loses the right-hand range’s rows', async () => {
    const c = await start({ nodes: 3, settings: { raftLogMaxEntries: 4, raftLogHardMaxEntries: 4, truncationIntervalTicks: 2 } });
    c.startTicker();
    const kv = client(c, 0);
    await kv.batch(Array.from({ length: 20 }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    const leftId = 1; // the span starts in r1 (a fresh cluster has one range)
    await c.stopNode(2);
    const right = (await adminSplit(distSender(c, 0), key(10)))?.right as RangeDescriptor;
    expect(right).toBeDefined();
    for (let i = 10; i < 15; i++) await kv.put(key(i), val(i + 100));
    // Enough left-hand writes that its log is truncated past the split: node 3 needs a snapshot of it.
    for (let i = 0; i < 10; i++) await kv.put(key(i), val(i + 200));
    const leftLeader = () => c.store(c.leader(leftId)).replica(leftId);
    const splitApplied = leftLeader()?.applied.raftAppliedIndex as number;
    await c.waitFor(() => (leftLeader()?.storage.truncated.index ?? 0) >= splitApplied, 20_000, 'r1’s log truncated past the split');

    // Node 3 hears nothing of r1 (messages and snapshots) until the right-hand range has offered its snapshot.
    let blockLeft = true;
    const origHandle = Store.prototype.handleRaftMessages;
    const origChunk = Store.prototype.handleSnapshotChunk;
    Store.prototype.handleRaftMessages = function (this: Store, b) {
      if (this.nodeId === 3 && blockLeft) b = { ...b, messages: b.messages.filter((m) => m.rangeId !== leftId) };
      origHandle.call(this, b);
    };
    Store.prototype.handleSnapshotChunk = function (this: Store, ch) {
      if (this.nodeId === 3 && blockLeft && ch.rangeId === leftId) throw new Error('test: r1 held back');
      origChunk.call(this, ch);
    };
    try {
      await c.restartNode(2);
      const s3 = c.store(2);
      await c.waitFor(
        () => s3.metrics.snapshotsRefused > 0 || s3.replica(right.rangeId)?.initialized === true,
        20_000,
        'the right-hand range’s snapshot offered to node 3',
      );
      expect(s3.replica(right.rangeId)?.initialized ?? false, 'the right-hand replica is not initialized over r1’s span').toBe(false);
      expect(s3.replica(leftId)?.desc.endKey.equals(KEY_MAX), 'r1 on node 3 still covers the right-hand keys').toBe(true);
    } finally {
      blockLeft = false;
      Store.prototype.handleRaftMessages = origHandle;
      Store.prototype.handleSnapshotChunk = origChunk;
    }
    const s3 = c.store(2);
    await c.waitFor(() => s3.replica(right.rangeId)?.initialized === true && s3.replica(leftId)?.desc.endKey.equals(key(10)) === true, 30_000, 'node 3 to catch up on both ranges');
    const descs = await checkConsistency(c, kv, 1);
    expect(descs.some((d) => d.rangeId === right.rangeId)).toBe(true);
    for (let i = 10; i < 15; i++) expect((await kv.get(key(i)))?.equals(val(i + 100))).toBe(true);
  }, 90_000);
});
