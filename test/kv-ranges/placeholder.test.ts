/**
 * Uninitialized placeholders never outlive their reason (issue 4 session 2:
 * `cairn node decommission` stalled under a write load with "replicas left
 * on n1: 1" for good). The replica left on n1 was a placeholder: a Raft
 * message for the replica a change had just removed arrived while its data
 * was being cleared (before the range tombstone was written), created an
 * uninitialized replica from the Raft state being deleted, and nothing ever
 * removed it — replica GC skips uninitialized replicas — while the node's
 * replica count included it.
 *
 * Fixes: the store creates no placeholder while a removed replica's data is
 * cleared (Store.beginClear/endClear, replica-change.ts clearReplicaData);
 * a placeholder silent for 20 election timeouts is dropped (Store.tick);
 * the node's replica count leaves placeholders out (src/server/node.ts).
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { clearReplicaData } from '../../src/kv/replica-change.js';
import { readRangeTombstone } from '../../src/kv/range-tombstone.js';
import { MessageType, newMessage } from '../../raft/types.js';
import type { Store } from '../../src/kv/store.js';
import type { RangeDescriptor } from '../../src/kv/api.js';
import { client, distSender, key, val } from './support.js';

const start = autoCloseClusters();

function deliver(s: Store, rangeId: number, to: number, from: number, type: MessageType, term: number): void {
  const message = newMessage({ type, to, from, term, index: 12, logTerm: term });
  s.handleRaftMessages({ fromNodeId: 1, fromStoreId: 1, toStoreId: s.storeId, messages: [{ rangeId, fromReplicaId: from, toReplicaId: to, quiesce: false, message }] });
}

describe('uninitialized placeholders', () => {
  it('a stale message during the clear of a removed replica creates no placeholder that outlives it', async () => {
    const c = await start({ nodes: 3 });
    c.startTicker();
    const kv = client(c, 0);
    await kv.batch(Array.from({ length: 20 }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    const right = (await adminSplit(distSender(c, 0), key(10)))?.right as RangeDescriptor;
    await c.waitFor(() => c.store(2).replica(right.rangeId)?.initialized === true, 10_000, 'the right range on node 3');
    const s3 = c.store(2);
    const me = s3.replica(right.rangeId)?.replicaId as number;
    const other = right.replicas.find((x) => x.nodeId === 1)?.replicaId as number;
    // As finishChangeTrigger does for a removed replica: drop it, clear its data.
    s3.removeReplica(right.rangeId);
    deliver(s3, right.rangeId, me, other, MessageType.MsgApp, 50); // before the clear starts: a placeholder is on its way
    const clearing = clearReplicaData(s3, right);
    deliver(s3, right.rangeId, me, other, MessageType.MsgApp, 50); // during the clear
    await clearing;
    expect(readRangeTombstone(s3.engine, right.rangeId)).toBeGreaterThan(me);
    // A round trip through every store later, no placeholder of the range is on node 3.
    await kv.put(key(99), val(99));
    expect(s3.replica(right.rangeId), 'no placeholder outlives the clear').toBeUndefined();
  }, 60_000);

  it('a placeholder that hears nothing for 20 election timeouts is dropped', async () => {
    const c = await start({ nodes: 3 });
    const s = c.store(0);
    // A vote request for a range nobody has: the store makes a placeholder (it could be a replica being added).
    deliver(s, 4242, 7, 8, MessageType.MsgPreVote, 3);
    await c.waitFor(() => s.replica(4242) !== undefined, 5_000, 'the placeholder');
    expect(s.replica(4242)?.initialized).toBe(false);
    for (let i = 0; i < c.settings.electionTicks * 20; i++) c.tick();
    expect(s.replica(4242), 'still there before the limit').toBeDefined();
    for (let i = 0; i < 2; i++) c.tick();
    expect(s.replica(4242)).toBeUndefined();
  }, 30_000);
});
