/**
 * Issue 4 bug 2: every replica computes a ComputeChecksum over the state at
 * the command's own apply position. The snapshot used to be taken when the
 * whole apply round was written, so a replica that applied the checksum and
 * later writes in one round hashed a later state than one that applied them
 * in separate rounds, and consistency checks disagreed without divergence.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { TestCluster } from '../support/test-cluster.js';
import { ZERO_TIMESTAMP } from '../../src/util/hlc.js';
import { distSender, key, val } from '../kv-ranges/support.js';

let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.close();
  cluster = null;
});

describe('consistency checksums', () => {
  it('a follower catching up from the log applies the checksum and later writes in one round: it hashes the checksum position', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3 }));
    c.startTicker();
    let ds = distSender(c, 0);
    const desc = await ds.cache.lookup(key(0));
    const put = (i: number): Promise<unknown> => ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: key(i), value: val(i) }] });
    await put(0);
    const lagging = [0, 1, 2].find((i) => i !== c.leaseholder(desc.rangeId) && i !== c.leader(desc.rangeId)) ?? 2;
    ds = distSender(c, (lagging + 1) % 3);
    await c.stopNode(lagging);
    // The running replicas apply the checksum, then (in later rounds) the writes.
    const id = 4242;
    await ds.send({ header: { rangeId: desc.rangeId, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'computeChecksum', checksumId: id }] });
    for (let i = 1; i <= 5; i++) await put(i);
    // The lagging replica gets all of them in one append and applies them in one round.
    await c.restartNode(lagging);
    const sums = await Promise.all([0, 1, 2].map((i) => c.store(i).checksum(desc.rangeId, id)));
    expect(new Set(sums).size, sums.join(' ')).toBe(1);
  }, 60_000);

  it('a checksum covered by a snapshot fails clearly (retryable) instead of hanging', async () => {
    const c = (cluster = await TestCluster.start({ nodes: 3, engine: 'level', settings: { raftLogMaxEntries: 50, truncationIntervalTicks: 2 } }));
    c.startTicker();
    await c.waitFor(() => c.leaseholder(1) >= 0, 10_000, 'a leaseholder');
    const victim = (c.leaseholder(1) + 1) % 3;
    const gw = c.client((victim + 1) % 3);
    await gw.put(key(0), val(0));
    await c.stopNode(victim);
    const id = 777;
    await gw.batch([{ kind: 'computeChecksum', checksumId: id }]);
    const at = c.store(c.leader(1)).replica(1)!.applied.raftAppliedIndex;
    for (let i = 1; i <= 200; i++) await gw.put(key(i), val(i));
    const lead = c.leader(1);
    await c.waitFor(() => c.store(lead).replica(1)!.storage.firstIndex() > at + 1, 10_000, 'log truncation past the checksum');
    await c.restartNode(victim);
    // Asked before the snapshot arrives: it never applies the command.
    const asked = c.store(victim).checksum(1, id);
    const outcome = await Promise.race([
      asked.then(
        () => 'computed',
        (e: unknown) => (e as { code?: string }).code ?? 'error',
      ),
      new Promise<string>((r) => setTimeout(() => r('hung'), 10_000)),
    ]);
    expect(outcome).toBe('kv.checksum_superseded');
    expect(c.store(victim).metrics.snapshotsApplied).toBeGreaterThan(0);
  }, 60_000);
});
