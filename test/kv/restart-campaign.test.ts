/**
 * After a restart of every node, the replica that held a range's last lease
 * campaigns on its first tick (src/kv/replica.ts campaignUntilLeader): it is
 * the Raft leader within a few ticks — not after a randomized election
 * timeout of 10–20 ticks — and re-takes the lease: by extension (same
 * sequence) when it is still unexpired, or a fresh one (sequence + 1) when it
 * expired while the cluster was down.
 *
 * In process, manual clocks and ticks by hand: after each tick the test
 * waits (bounded, wall time) for the messages it caused to be exchanged, so
 * the tick count does not depend on load. Without the early campaign no
 * replica campaigns before its 10th tick, and the first assertion fails.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { DEFAULT_KV_SETTINGS } from '../../src/kv/settings.js';

const startCluster = autoCloseClusters();
const key = Buffer.from('\x90rc-k', 'latin1');

/** One tick on every node (manual clocks advanced by the tick interval first). */
function tickAll(c: TestCluster): void {
  for (const i of [0, 1, 2]) c.node(i).physical?.advance(DEFAULT_KV_SETTINGS.tickIntervalMs * 1000);
  c.tick();
}

describe('restart of every node', () => {
  it.each([{ expired: false }, { expired: true }])('the last leaseholder leads within a few ticks and re-takes its lease (lease expired while down: $expired)', async ({ expired }) => {
    const c = await startCluster({ nodes: 3, clock: 'manual' });
    c.startTicker();
    await c.client(0).put(key, Buffer.from('v1'));
    const lh = c.leaseholder();
    expect(lh).toBeGreaterThanOrEqual(0);
    await c.waitFor(() => [0, 1, 2].every((i) => c.store(i).replica(1)!.applied.raftAppliedIndex === c.store(lh).replica(1)!.applied.raftAppliedIndex), 10_000, 'replicas applied');
    const before = c.store(lh).replica(1)!.lease!;
    c.stopTicker();
    for (const i of [0, 1, 2]) await c.stopNode(i);
    if (expired) for (const i of [0, 1, 2]) c.node(i).physical?.advance(DEFAULT_KV_SETTINGS.leaseDurationMicros + 1_000_000);
    for (const i of [0, 1, 2]) await c.restartNode(i);

    let ticks = 0;
    while (c.leader() < 0 && ticks < DEFAULT_KV_SETTINGS.electionTicks - 1) {
      tickAll(c);
      ticks++;
      await c.waitFor(() => c.leader() >= 0, 2_000, 'a leader').catch(() => undefined);
    }
    expect(c.leader(), `no leader after ${ticks} ticks`).toBe(lh);
    expect(ticks).toBeLessThanOrEqual(4); // the first campaign, or its repeat 3 ticks later

    // The leader takes the lease on its next ticks (waiting for each round's apply, not on ticks' timing).
    for (let t = 0; t < 5 && !c.store(lh).replica(1)!.ownsValidLease(c.node(lh).clock.now()); t++) {
      tickAll(c);
      await c.waitFor(() => c.store(lh).replica(1)!.ownsValidLease(c.node(lh).clock.now()), 2_000, 'the lease').catch(() => undefined);
    }
    expect(c.leaseholder()).toBe(lh);
    expect(c.store(lh).replica(1)!.lease!.sequence).toBe(expired ? before.sequence + 1 : before.sequence);
    c.startTicker();
    expect((await c.client((lh + 1) % 3).get(key))?.toString()).toBe('v1');
  }, 60_000);
});
