/**
 * A 3-node in-process cluster over real TCP (test/support/test-cluster.ts):
 * replication, leases on the Raft leader, catch-up of a restarted follower
 * from the log and from a snapshot after log truncation, leaseholder
 * failover without losing acknowledged writes, and identical per-replica
 * checksums (issue 4, "Must show" 1–3, in process).
 */
import { describe, it, expect } from 'vitest';
import { TestCluster, autoCloseClusters } from '../support/test-cluster.js';
import type { KvClient } from '../../src/kv/kv-client.js';

const k = (i: number): Buffer => Buffer.from(`\x90key${String(i).padStart(6, '0')}`, 'latin1');
const SPAN_START = Buffer.from('\x90', 'latin1');
const SPAN_END = Buffer.from('\x91', 'latin1');

const startCluster = autoCloseClusters();

/** Runs `n` operations with `concurrency` workers; op(i) for i in [0, n). */
async function pool(n: number, concurrency: number, op: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await op(next++);
    }),
  );
}

/** Asks every replica of r1 for its checksum at one applied index; all must agree. */
export async function checksums(c: TestCluster, kv: KvClient, id: number): Promise<string[]> {
  await kv.batch([{ kind: 'computeChecksum', checksumId: id }]);
  const out: string[] = [];
  for (let i = 0; i < c.size; i++) if (c.isRunning(i)) out.push(await c.store(i).checksum(1, id));
  return out;
}

async function caughtUp(c: TestCluster, i: number): Promise<void> {
  await c.waitFor(() => {
    const lead = c.leader();
    if (lead < 0 || !c.isRunning(i)) return false;
    const want = c.store(lead).replica(1)!.applied.raftAppliedIndex;
    return c.store(i).replica(1)!.applied.raftAppliedIndex >= want;
  }, 20_000, `n${i + 1} to catch up`);
}

describe('3-node cluster', () => {
  it('replicates 10,000 keys written through one node; the lease sits on the leader; replicas agree', async () => {
    const c = await startCluster({ nodes: 3 });
    c.startTicker();
    const kv = c.client(0);
    await pool(10_000, 64, (i) => kv.put(k(i), Buffer.from(`v${i}`)));
    const lh = c.leaseholder();
    expect(lh).toBeGreaterThanOrEqual(0);
    const rows = await c.client(lh).scan(SPAN_START, SPAN_END);
    expect(rows.length).toBe(10_000);
    for (let i = 0; i < 10_000; i += 997) expect(rows[i]?.value.toString()).toBe(`v${i}`);
    const viaLh = c.client(lh);
    for (let i = 0; i < 10_000; i += 331) expect((await viaLh.get(k(i)))?.toString()).toBe(`v${i}`);
    // Leases follow the leader.
    await c.waitFor(() => c.leader() === c.leaseholder(), 5_000, 'leader and leaseholder together');
    // Group commit: far fewer synced writes than proposals.
    const m = c.store(lh).metrics;
    expect(m.syncs).toBeLessThan(m.proposals / 4);
    const sums = await checksums(c, kv, 1);
    expect(new Set(sums).size).toBe(1);
    // Incremental stats agree with a recount on every replica.
    for (const { i, r } of c.replicas(1)) expect(r.applied.stats).toEqual(await c.recountStats(i));
  });

  it('a restarted follower catches up from the log, and from a snapshot after truncation', async () => {
    const c = await startCluster({ nodes: 3, engine: 'level', settings: { raftLogMaxEntries: 50, truncationIntervalTicks: 2 } });
    c.startTicker();
    const kv = c.client(0);
    await c.waitFor(() => c.leaseholder() >= 0, 10_000, 'a leaseholder');
    const victim = (c.leaseholder() + 1) % 3;
    const gw = c.client((victim + 1) % 3);
    await c.stopNode(victim);
    await pool(30, 8, (i) => gw.put(k(i), Buffer.from(`a${i}`)));
    await c.restartNode(victim);
    await caughtUp(c, victim);
    expect(c.store(victim).metrics.snapshotsApplied).toBe(0);
    expect(new Set(await checksums(c, gw, 2)).size).toBe(1);

    await c.stopNode(victim);
    await pool(400, 16, (i) => gw.put(k(i), Buffer.from(`b${i}`)));
    const lead = c.leader();
    await c.waitFor(() => c.store(lead).replica(1)!.storage.firstIndex() > 300, 10_000, 'log truncation');
    await c.restartNode(victim);
    await caughtUp(c, victim);
    expect(c.store(victim).metrics.snapshotsApplied).toBeGreaterThan(0);
    expect(new Set(await checksums(c, gw, 3)).size).toBe(1);
    const rows = await c.client(victim).scan(SPAN_START, SPAN_END);
    expect(rows.length).toBe(400);
    expect(rows[123]?.value.toString()).toBe('b123');
    void kv;
  });

  it('stopping the leaseholder: a new one serves within lease + election timeout, no acknowledged write lost', async () => {
    // Manual clocks advanced by the ticker: the failover is measured in the cluster's own time (ticks), which a
    // loaded machine slows down along with everything else, not in wall time it does not control.
    const c = await startCluster({ nodes: 3, clock: 'manual' });
    c.startTicker();
    await c.waitFor(() => c.leaseholder() >= 0, 10_000, 'a leaseholder');
    const old = c.leaseholder();
    const gwIdx = (old + 1) % 3;
    const gw = c.client(gwIdx);
    const acked: number[] = [];
    await pool(500, 16, async (i) => {
      await gw.put(k(i), Buffer.from(`w${i}`));
      acked.push(i);
    });
    const clockMs = (): number => c.node(gwIdx).physical!.micros / 1000;
    const t0 = clockMs();
    const w0 = performance.now();
    await c.stopNode(old);
    // The first attempt may hit the dying node's connection (ambiguous): the
    // write is idempotent, so the test may retry it.
    for (;;) {
      try {
        await gw.put(k(999_999), Buffer.from('after'));
        break;
      } catch (e) {
        if (!(e as { ambiguous?: boolean }).ambiguous) throw e;
      }
    }
    const failoverMs = clockMs() - t0;
    console.log(`failover after stopping the leaseholder: ${failoverMs} ms of cluster time (${(performance.now() - w0).toFixed(0)} ms wall)`);
    const s = c.settings;
    // lease duration + 2 × election timeout (randomized up to 2×) + 1 s of cluster time for the Raft rounds (~1 s
    // measured at load 24, 1.4–2.8 s wall: the wall-clock bound of 5.2 s was within reach of load alone)
    expect(failoverMs).toBeLessThan(s.leaseDurationMicros / 1000 + 2 * s.electionTicks * s.tickIntervalMs + 1_000);
    const newLh = c.leaseholder();
    expect(newLh).not.toBe(old);
    expect(newLh).toBeGreaterThanOrEqual(0);
    const rows = new Map((await gw.scan(SPAN_START, SPAN_END)).map((r) => [r.key.toString('latin1'), r.value.toString()]));
    for (const i of acked) expect(rows.get(k(i).toString('latin1'))).toBe(`w${i}`);
    expect(rows.get(k(999_999).toString('latin1'))).toBe('after');
  });
});
