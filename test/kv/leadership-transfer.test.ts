/**
 * Replica.transferLeadership: the Raft leadership handoff of a drain
 * (src/server/node.ts drainLeases — a clean shutdown hands its leases, then
 * its Raft leadership, to live replicas). Raft abandons a transfer whose
 * target it has not caught up within an election timeout (thesis §3.10,
 * raft/raft.ts tickHeartbeat); on a loaded machine that happens, and the
 * stopping node then stayed leader (session 8: "leadershipHandedOff 0"). The
 * replica asks again while its caller waits.
 *
 * In-process cluster, memory engines; the abandonment is driven by manual
 * ticks of the leader alone, the catch-up after the heal by the ticker.
 */
import { describe, expect, it } from 'vitest';
import { NONE } from '../../raft/types.js';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';

const start = autoCloseClusters();

function partitionPair(c: TestCluster, a: number, b: number, on: boolean): void {
  c.node(a).rpc!.faults.setFaults(b + 1, on ? { partition: true } : {});
  c.node(b).rpc!.faults.setFaults(a + 1, on ? { partition: true } : {});
}

describe('Replica.transferLeadership (drain)', () => {
  it('a handoff Raft abandoned (target cut off for an election timeout) is asked for again: the target leads once reachable', async () => {
    const c = await start({ nodes: 3, settings: { leaseDurationMicros: 5_000_000 } });
    c.startTicker();
    const kv = c.client(0);
    await kv.put(Buffer.from('\x90warm'), Buffer.from('w'));
    await c.waitFor(() => c.leader() >= 0 && c.leader() === c.leaseholder(), 10_000, 'leader = leaseholder');
    c.stopTicker();
    const lh = c.leader();
    const [target, third] = [0, 1, 2].filter((i) => i !== lh) as [number, number];
    const r = c.store(lh).replica(1)!;
    partitionPair(c, lh, target, true);
    // The target falls behind: this write commits with the third replica.
    await c.client(third).put(Buffer.from('\x90behind'), Buffer.from('b'));
    const lastIndex = (i: number): number => c.store(i).replica(1)!.raw.raft.raftLog.lastIndex();
    expect(lastIndex(lh)).toBeGreaterThan(lastIndex(target));
    let handedOff = false;
    void r.transferLeadership(c.store(target).replica(1)!.replicaId).then(() => (handedOff = true));
    expect(r.raw.raft.leadTransferee).not.toBe(NONE);
    // An election timeout of the leader's ticks with the target unreachable: Raft abandons the transfer
    // (tickHeartbeat). Only the leader ticks, so nobody campaigns meanwhile.
    let abandoned = false;
    for (let t = 0; t <= c.settings.electionTicks; t++) {
      r.raw.tick();
      if (r.raw.raft.leadTransferee === NONE) abandoned = true;
    }
    expect(abandoned).toBe(true);
    expect(r.isLeader()).toBe(true);
    c.store(lh).tick();
    partitionPair(c, lh, target, false);
    c.startTicker();
    // Nothing else moves leadership here: the leader holds the lease, and no node stops.
    await c.waitFor(() => handedOff && c.leader() === target, 10_000, 'the target leading');
    expect(r.isLeader()).toBe(false);
  }, 30_000);
});
