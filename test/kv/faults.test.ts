/**
 * Faults against the replicated KV core (DESIGN.md §6):
 *   - a command whose Raft messages were dropped is re-proposed and applies
 *     exactly once (the max-lease-index rule rejects the second copy;
 *     incremental stats would double-count a second application);
 *   - a leaseholder cut off with a command in flight, once another replica
 *     takes the lease and it applies that lease entry (in log order: its own
 *     uncommitted copy was overwritten, none can pass the lease check
 *     after), answers NotLeaseHolder — retryable at the new holder — and the
 *     command never applies; only a catch-up by snapshot (which skips the
 *     log) may leave it ambiguous. Never "applied" or a silent failure;
 *   - an admin lease transfer moves the lease (sequence + 1, the hook sees
 *     the new start for the timestamp cache) and leadership follows it;
 *   - an idle range quiesces (no Raft traffic while ticking) and wakes on a request.
 */
import { describe, it, expect } from 'vitest';
import { TestCluster, autoCloseClusters } from '../support/test-cluster.js';
import type { Lease } from '../../src/kv/api.js';

const k = (s: string): Buffer => Buffer.from(`\x90${s}`, 'latin1');
const ZERO = { wall: 0, logical: 0 };

const startCluster = autoCloseClusters();

function partition(c: TestCluster, i: number, on: boolean): void {
  for (let j = 0; j < c.size; j++) {
    if (j === i) continue;
    c.node(i).rpc!.faults.setFaults(j + 1, on ? { partition: true } : {});
    c.node(j).rpc!.faults.setFaults(i + 1, on ? { partition: true } : {});
  }
}

async function expectStatsMatchRecount(c: TestCluster): Promise<void> {
  for (const { i, r } of c.replicas(1)) expect(r.applied.stats).toEqual(await c.recountStats(i));
}

describe('faults', () => {
  it('a re-proposed command applies exactly once', async () => {
    const c = await startCluster({ nodes: 3, settings: { reproposalTicks: 2, electionTicks: 40 } });
    c.startTicker();
    await c.waitFor(() => c.leaseholder() >= 0 && c.leader() === c.leaseholder(), 10_000, 'a leaseholder on the leader');
    const L = c.leaseholder();
    const store = c.store(L);
    // Drop everything the leader sends to its followers (and their answers):
    // the first copy of the command cannot commit, so it is re-proposed.
    partition(c, L, true);
    const before = { repro: store.metrics.reproposals, rejected: c.replicas(1).map(({ r }) => r) };
    const put = store.send({ header: { rangeId: 1, timestamp: ZERO }, requests: [{ kind: 'put', key: k('once'), value: Buffer.from('v') }] });
    await c.waitFor(() => store.metrics.reproposals >= before.repro + 2, 5_000, 're-proposals');
    const dropped = c.node(L).rpc!.faults.countersFor(L === 0 ? 2 : 1).dropped;
    expect(dropped).toBeGreaterThan(0); // the fault took effect
    partition(c, L, false);
    await put;
    await c.waitFor(() => c.replicas(1).every(({ r }) => r.applied.raftAppliedIndex === store.replica(1)!.applied.raftAppliedIndex), 5_000, 'replicas to apply');
    // Several copies were committed; all but one were rejected by the lease-index rule.
    let rejected = 0;
    for (let i = 0; i < c.size; i++) rejected += c.store(i).metrics.rejectedCommands;
    expect(rejected).toBeGreaterThan(0);
    expect((await c.client(L).get(k('once')))?.toString()).toBe('v');
    await expectStatsMatchRecount(c);
  });

  it('a leaseholder that loses its lease with a command in flight answers NotLeaseHolder once it applies the new lease; the command never applies', async () => {
    const c = await startCluster({ nodes: 3 });
    c.startTicker();
    await c.waitFor(() => c.leaseholder() >= 0, 10_000, 'a leaseholder');
    const L = c.leaseholder();
    partition(c, L, true);
    const outcome = c
      .store(L)
      .send({ header: { rangeId: 1, timestamp: ZERO }, requests: [{ kind: 'put', key: k('amb'), value: Buffer.from('x') }] })
      .then(
        () => null,
        (e: unknown) => e as { code: string; ambiguous: boolean; retryable: boolean },
      );
    // The others elect a leader and take the lease once the old one expires.
    await c.waitFor(() => c.leaseholder() >= 0 && c.leaseholder() !== L, 15_000, 'a new leaseholder');
    const snapshots = c.store(L).metrics.snapshotsApplied;
    partition(c, L, false);
    const e = await outcome;
    expect(e).not.toBeNull();
    if (c.store(L).metrics.snapshotsApplied === snapshots) {
      // Caught up from the log: it applied the new lease entry with the put pending.
      expect(e?.code).toBe('kv.not_lease_holder');
      expect(e?.ambiguous).toBe(false);
      expect(e?.retryable).toBe(true);
    } else {
      expect(e?.code).toBe('kv.ambiguous_result');
    }
    // Either way it never applied (the partition began before it was sent: no copy reached the others).
    expect(await c.client(L).get(k('amb'))).toBe(null);
  });

  it('transfers the lease; the new holder gets the leadership and the timestamp-cache hook sees the lease start', async () => {
    const seen: { nodeId: number; lease: Lease }[] = [];
    const c = await startCluster({ nodes: 3, onLeaseApplied: (nodeId, _r, lease) => seen.push({ nodeId, lease }) });
    c.startTicker();
    await c.waitFor(() => c.leaseholder() >= 0 && c.leader() === c.leaseholder(), 10_000, 'a leaseholder on the leader');
    const L = c.leaseholder();
    const target = (L + 1) % 3;
    const prev = c.store(L).replica(1)!.lease!;
    await c.store(L).transferLease(1, target + 1);
    await c.waitFor(() => c.leaseholder() === target && c.leader() === target, 10_000, 'lease and leadership on the target');
    const lease = c.store(target).replica(1)!.lease!;
    expect(lease.sequence).toBeGreaterThan(prev.sequence);
    expect(lease.replica.nodeId).toBe(target + 1);
    expect(seen.some((s) => s.nodeId === target + 1 && s.lease.sequence === lease.sequence && s.lease.start.wall === lease.start.wall)).toBe(true);
    expect(lease.start.wall).toBeGreaterThanOrEqual(prev.start.wall);
    await c.client(target).put(k('t'), Buffer.from('1'));
  });

  it('an idle range quiesces and wakes on a request', async () => {
    const c = await startCluster({ nodes: 3, clock: 'manual' });
    c.startTicker();
    await c.client(0).put(k('q'), Buffer.from('1'));
    await c.waitFor(() => c.replicas(1).every(({ r }) => r.quiescent), 10_000, 'quiescence');
    c.stopTicker();
    const sent = (): number => [0, 1, 2].reduce((n, i) => n + c.store(i).metrics.raftMessagesSent, 0);
    const before = sent();
    for (let t = 0; t < 50; t++) c.tick();
    expect(sent()).toBe(before);
    c.startTicker();
    await c.client(0).put(k('q2'), Buffer.from('2'));
    expect((await c.client(1).get(k('q2')))?.toString()).toBe('2');
  });

  it('a quiesced range whose leader dies elects a new leader and serves again when a request wakes it', async () => {
    // Manual clocks advanced by the ticker: the failover is measured in the cluster's own time (ticks), which a
    // loaded machine slows down along with everything else, not in wall time it does not control.
    const c = await startCluster({ nodes: 3, clock: 'manual' });
    c.startTicker();
    await c.client(0).put(k('before'), Buffer.from('1'));
    await c.waitFor(() => c.replicas(1).every(({ r }) => r.quiescent), 10_000, 'quiescence');
    const old = c.leader();
    await c.stopNode(old);
    const gw = (old + 1) % 3;
    const clockMs = (): number => c.node(gw).physical!.micros / 1000;
    const t0 = clockMs();
    const w0 = performance.now();
    await c.client(gw).put(k('after'), Buffer.from('2'));
    const ms = clockMs() - t0;
    console.log(`failover of a quiesced range: ${ms} ms of cluster time (${(performance.now() - w0).toFixed(0)} ms wall)`);
    expect(c.leader()).not.toBe(old);
    expect((await c.client(gw).get(k('before')))?.toString()).toBe('1');
    const s = c.settings;
    // Lease expiry + up to two election timeouts + 1 s of cluster time for the Raft rounds (~1 s measured at load 24,
    // 1.5–3.5 s wall: the wall-clock bound of 5.2 s was within reach of load alone).
    expect(ms).toBeLessThan(s.leaseDurationMicros / 1000 + 2 * s.electionTicks * s.tickIntervalMs + 1_000);
  });
});
