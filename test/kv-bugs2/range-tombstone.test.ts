/**
 * Issue 4 bug 1: a stale Raft message for a range whose replica was removed
 * here (merged away, removed by a replication change) must never re-create
 * the replica — an empty replica told by a heartbeat to commit index 13 hit
 * raft's `tocommit(13) is out of range [lastIndex(0)]` assertion and crashed
 * the process (merges.test.ts after a full restart). The removal writes a
 * range tombstone (range-tombstone.ts); the store drops messages below it.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { TestCluster } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { adminMerge } from '../../src/kv/merge.js';
import { KvClient } from '../../src/kv/kv-client.js';
import { MERGED_TOMBSTONE, readRangeTombstone } from '../../src/kv/range-tombstone.js';
import { MessageType, newMessage } from '../../raft/types.js';
import type { Store } from '../../src/kv/store.js';
import { distSender, key, val } from '../kv-ranges/support.js';

let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.close();
  cluster = null;
});

/** Delivers a stale heartbeat (commit 13) and a stale append for r`rangeId` to `s`, as from replica `from` on node 1. */
function deliverStale(s: Store, rangeId: number, toReplicaId: number, from: number): void {
  const msgs = [
    newMessage({ type: MessageType.MsgHeartbeat, to: toReplicaId, from, term: 50, commit: 13 }),
    newMessage({ type: MessageType.MsgApp, to: toReplicaId, from, term: 50, index: 12, logTerm: 50, commit: 13 }),
  ];
  for (const message of msgs) {
    s.handleRaftMessages({ fromNodeId: 1, fromStoreId: 1, toStoreId: s.storeId, messages: [{ rangeId, fromReplicaId: from, toReplicaId, quiesce: false, message }] });
  }
}

describe('range tombstones', () => {
  it('stale messages for a merged-away range are dropped and never re-create it', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3 }));
    c.startTicker();
    const ds = distSender(c, 0);
    const kv = new KvClient(ds);
    await kv.batch(Array.from({ length: 20 }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    const right = (await adminSplit(ds, key(10)))!.right;
    await adminMerge(ds, key(0));
    await c.waitFor(() => [0, 1, 2].every((i) => c.store(i).replica(right.rangeId) === undefined), 10_000, 'every store to apply the merge');
    for (let i = 0; i < 3; i++) {
      const s = c.store(i);
      expect(readRangeTombstone(s.engine, right.rangeId)).toBe(MERGED_TOMBSTONE);
      const me = right.replicas.find((r) => r.storeId === s.storeId);
      const other = right.replicas.find((r) => r.storeId !== s.storeId);
      deliverStale(s, right.rangeId, me!.replicaId, other!.replicaId);
    }
    // A full round trip through every store later, none re-created the range (and nothing crashed).
    await kv.put(key(99), val(99));
    expect((await kv.get(key(99)))?.equals(val(99))).toBe(true);
    for (let i = 0; i < 3; i++) expect(c.store(i).replica(right.rangeId)).toBeUndefined();
  }, 60_000);

  it('a heartbeat with a commit index never creates a replica (an empty log cannot take it)', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3 }));
    c.startTicker();
    const s = c.store(2);
    s.handleRaftMessages({
      fromNodeId: 1,
      fromStoreId: 1,
      toStoreId: s.storeId,
      messages: [{ rangeId: 777, fromReplicaId: 1, toReplicaId: 3, quiesce: false, message: newMessage({ type: MessageType.MsgHeartbeat, to: 3, from: 1, term: 5, commit: 13 }) }],
    });
    const kv = new KvClient(distSender(c, 2));
    await kv.put(key(1), val(1));
    expect((await kv.get(key(1)))?.equals(val(1))).toBe(true);
    expect(s.replica(777)).toBeUndefined();
  }, 30_000);
});
