/**
 * A replica added to a range on a node that has never seen it: the leader's
 * first message creates an uninitialized replica there, a snapshot (streamed
 * in chunks) initializes it with the range's data and descriptor, and from
 * then on it applies the log like any other replica (issue 4: "snapshots for
 * lagging or new replicas"). The descriptor change and the conf change are
 * done here by hand, as the replication engineer's ChangeReplicas will do.
 */
import { describe, it, expect } from 'vitest';
import { KEY_MAX, KEY_MIN, meta2Key, rangeDescriptorKey } from '../../storage/keys.js';
import { ConfChangeTransition, ConfChangeType } from '../../raft/types.js';
import { encodeRangeDescriptor } from '../../src/kv/api-codec.js';
import type { RangeDescriptor } from '../../src/kv/api.js';
import { autoCloseClusters } from '../support/test-cluster.js';

const k = (i: number): Buffer => Buffer.from(`\x90n${String(i).padStart(5, '0')}`, 'latin1');

const startCluster = autoCloseClusters();

describe('new replica', () => {
  it('a learner added on a new node is created on demand and initialized by a chunked snapshot', async () => {
    const c = await startCluster({ nodes: 3, settings: { snapshotChunkBytes: 4096 } });
    c.startTicker();
    const kv = c.client(0);
    await Promise.all(Array.from({ length: 300 }, (_, i) => kv.put(k(i), Buffer.alloc(100, i % 256))));
    const n4 = await c.addNode();
    expect(c.store(n4).replica(1)).toBeUndefined();
    await c.waitFor(() => c.leader() >= 0 && c.leader() === c.leaseholder(), 10_000, 'a leaseholder on the leader');
    const leader = c.store(c.leader()).replica(1)!;
    const old = leader.desc;
    const desc: RangeDescriptor = { ...old, replicas: [...old.replicas, { nodeId: 4, storeId: 4, replicaId: 4, type: 1 }], nextReplicaId: 5, generation: old.generation + 1 };
    const enc = encodeRangeDescriptor(desc);
    await kv.batch([
      { kind: 'put', key: rangeDescriptorKey(KEY_MIN), value: enc },
      { kind: 'put', key: meta2Key(KEY_MAX), value: enc },
    ]);
    for (const { r } of c.replicas(1)) r.setDescriptor(desc);
    leader.raw.proposeConfChange({ transition: ConfChangeTransition.Auto, changes: [{ type: ConfChangeType.AddLearnerNode, nodeId: 4 }], context: new Uint8Array(0) });
    c.store(c.leader()).enqueueReady(leader);
    await c.waitFor(() => c.store(n4).replica(1)?.initialized === true && c.store(n4).replica(1)!.applied.raftAppliedIndex >= leader.applied.raftAppliedIndex, 20_000, 'the learner to catch up');
    expect(c.store(n4).metrics.snapshotsApplied).toBe(1);
    await c.waitFor(() => [0, 1, 2].some((i) => c.store(i).metrics.snapshotsSent > 0), 5_000, 'the sender to count the snapshot');
    expect([0, 1, 2].reduce((n, i) => n + c.store(i).metrics.snapshotChunksSent, 0)).toBeGreaterThan(3); // ~30 KB in 4 KiB chunks
    expect(c.store(n4).replica(1)!.desc.replicas.length).toBe(4);
    await kv.put(k(1000), Buffer.from('after'));
    await kv.batch([{ kind: 'computeChecksum', checksumId: 11 }]);
    const sums = await Promise.all([0, 1, 2, 3].map((i) => c.store(i).checksum(1, 11)));
    expect(new Set(sums).size).toBe(1);
    expect(c.store(n4).replica(1)!.applied.stats).toEqual(await c.recountStats(n4));
  });
});
