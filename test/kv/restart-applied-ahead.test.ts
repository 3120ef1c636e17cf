/**
 * A replica whose applied state on disk is ahead of its persisted Raft
 * commit index restarts (jepsen-style g2 × kill, seed 301: a leader killed
 * after a fast apply pass died at every restart with "raft: applied(1005) is
 * out of range [prevApplied(10), committed(1001)]"). The Store's early and
 * fast apply passes write the applied state for entries whose commit was
 * learned after the round's HardState was staged; a kill before the next
 * round leaves exactly this state. Replica.load raises the commit index to
 * the applied index (those entries were committed and are durable locally).
 *
 * The state is produced directly (the kill's timing is not reproducible in a
 * test): a stopped node's HardState commit is lowered below its applied
 * index, then the node restarts, serves, and agrees with the others.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { raftHardStateKey, rangeAppliedStateKey } from '../../storage/keys.js';
import { decodeAppliedState, decodeHardState, encodeHardState } from '../../src/kv/api-codec.js';

const startCluster = autoCloseClusters();
const key = (s: string): Buffer => Buffer.from(`\x90ra-${s}`, 'latin1');

describe('restart with the applied state ahead of the persisted commit index', () => {
  it('loads the replica with its commit raised to the applied index, rejoins and serves', async () => {
    const c = await startCluster({ nodes: 3 });
    c.startTicker();
    const kv = c.client(0);
    for (let i = 0; i < 10; i++) await kv.put(key(`a${i}`), Buffer.from(`v${i}`));
    // Stop the leaseholder (the jepsen case: the leader was killed).
    const lh = c.leaseholder();
    await c.waitFor(() => [0, 1, 2].every((i) => c.store(i).replica(1)!.applied.raftAppliedIndex === c.store(lh).replica(1)!.applied.raftAppliedIndex), 10_000, 'replicas applied');
    await c.stopNode(lh);
    const e = c.node(lh).engine;
    const applied = decodeAppliedState(e.getSync(encodeMvccKey(rangeAppliedStateKey(1)))!);
    const hsKey = encodeMvccKey(raftHardStateKey(1));
    const hs = decodeHardState(e.getSync(hsKey)!);
    expect(hs.commit).toBeGreaterThanOrEqual(applied.raftAppliedIndex);
    const lowered = applied.raftAppliedIndex - 4;
    const b = e.newBatch();
    b.put(hsKey, encodeHardState({ ...hs, commit: lowered }));
    await e.write(b, { sync: true });

    await c.restartNode(lh);
    const r = c.store(lh).replica(1)!;
    expect(r.raw.status().hardState.commit).toBeGreaterThanOrEqual(applied.raftAppliedIndex);
    // The cluster serves, and the restarted replica catches up with writes made after its restart.
    const kv2 = c.client((lh + 1) % 3);
    for (let i = 0; i < 5; i++) await kv2.put(key(`b${i}`), Buffer.from(`w${i}`));
    const target = Math.max(...[0, 1, 2].filter((i) => i !== lh).map((i) => c.store(i).replica(1)!.applied.raftAppliedIndex));
    await c.waitFor(() => c.store(lh).replica(1)!.applied.raftAppliedIndex >= target, 20_000, 'restarted replica caught up');
    for (let i = 0; i < 10; i++) expect((await c.client(lh).get(key(`a${i}`)))?.toString()).toBe(`v${i}`);
    for (let i = 0; i < 5; i++) expect((await c.client(lh).get(key(`b${i}`)))?.toString()).toBe(`w${i}`);
  });
});
