/**
 * Availability with a cut-off leaseholder (issue 4; jepsen-style/RESULTS.md):
 * the DistSender must not keep sending to a leaseholder it cannot reach.
 *
 *   - the leaseholder's RPC traffic is dropped both ways (fault hook) for a
 *     whole partition: writes and reads through the two other nodes succeed
 *     again within the lease duration + a few seconds, and keep succeeding;
 *   - a read-only batch whose replica stops answering is retried elsewhere,
 *     never reported ambiguous;
 *   - a non-transactional write sent to the cut-off node is reported
 *     ambiguous (it may have applied), never retried after the send.
 *
 * Real TCP, system clocks, lease 2 s; the DistSender probes a silent node with
 * an RPC ping after 300 ms (node.ts uses a quarter of the lease duration).
 */
import { describe, it, expect } from 'vitest';
import { TestCluster, autoCloseClusters } from '../support/test-cluster.js';
import { DistSender } from '../../src/kv/dist-sender.js';
import { KvClient, RpcNodeDialer } from '../../src/kv/kv-client.js';
import { CairnError } from '../../src/util/errors.js';

const k = (s: string): Buffer => Buffer.from(`\x90${s}`, 'latin1');
const LEASE_MS = 2000;
const PROBE_MS = 300;
/** The longest a partition lasts (a safety cap: it ends earlier once both senders have got through). */
const PARTITION_CAP_MS = 20_000;

const startCluster = autoCloseClusters();

function partition(c: TestCluster, i: number, on: boolean): void {
  for (let j = 0; j < c.size; j++) {
    if (j === i) continue;
    c.node(i).rpc!.faults.setFaults(j + 1, on ? { partition: true } : {});
    c.node(j).rpc!.faults.setFaults(i + 1, on ? { partition: true } : {});
  }
}

/** A DistSender entering the cluster through node i, with breakers (as node.ts builds it). */
function distSender(c: TestCluster, i: number): DistSender {
  const rpc = c.node(i).rpc!;
  return new DistSender(new RpcNodeDialer(rpc), {
    nodes: () => [1, 2, 3],
    maxAttempts: 20,
    now: () => c.node(i).clock.now(),
    probe: (id) => (id === rpc.nodeId ? Promise.resolve() : rpc.ping(id, { timeoutMs: PROBE_MS }).then(() => undefined)),
    probeAfterMs: PROBE_MS,
    breakerMs: 2 * PROBE_MS,
  });
}

async function cluster(): Promise<{ c: TestCluster; L: number; others: number[] }> {
  const c = await startCluster({ nodes: 3, settings: { leaseDurationMicros: LEASE_MS * 1000 } });
  c.startTicker();
  await c.client(0).put(k('warm'), Buffer.from('w'));
  await c.waitFor(() => c.leaseholder() >= 0, 10_000, 'a leaseholder');
  const L = c.leaseholder();
  return { c, L, others: [0, 1, 2].filter((i) => i !== L) };
}

describe('a cut-off leaseholder', () => {
  it('does not make its range unavailable through the other nodes', async () => {
    const { c, L, others } = await cluster();
    const senders = others.map((i) => distSender(c, i));
    const clients = senders.map((s) => new KvClient(s));
    // Each sender learns that L holds the lease.
    for (const [n, kv] of clients.entries()) await kv.put(k(`pre${n}`), Buffer.from('p'));
    for (const s of senders) expect(s.cache.leaseholder(1)?.nodeId).toBe(L + 1);

    partition(c, L, true);
    const cutAt = performance.now();
    // Ops keep running through both other nodes for the whole partition: until both have succeeded and then for
    // another lease duration + 2 s (the new holder renews its lease in that time), at most PARTITION_CAP_MS. The
    // end is a condition, not a fixed window, so that a loaded machine taking longer to fail over cannot end it first.
    const firstOk: number[] = [Infinity, Infinity];
    const failuresAfterOk = [0, 0];
    const errorsAfterOk: string[] = [];
    const timedOut: string[] = [];
    let ambiguousReads = 0;
    let seq = 0;
    const partitioned = (): boolean => {
      const elapsed = performance.now() - cutAt;
      return elapsed < PARTITION_CAP_MS && (firstOk.some((t) => t === Infinity) || elapsed < Math.max(...firstOk) + LEASE_MS + 2000);
    };
    await Promise.all(
      clients.map(async (kv, n) => {
        while (partitioned()) {
          const key = k(`x${n}-${seq++ % 5}`);
          const value = Buffer.from(String(seq));
          try {
            await kv.put(key, value);
            expect((await kv.get(key))?.toString()).toBe(value.toString());
            if (firstOk[n] === Infinity) firstOk[n] = performance.now() - cutAt;
          } catch (e) {
            if (firstOk[n] !== Infinity) {
              failuresAfterOk[n]!++;
              errorsAfterOk.push(`sender ${n} at ${Math.round(performance.now() - cutAt)} ms: ${String(e)}`);
            }
            // A put to the cut-off node may be ambiguous; nothing else may be.
            if (!(e instanceof CairnError)) throw e;
            if (e.code === 'rpc.timeout') timedOut.push(`sender ${n} at ${Math.round(performance.now() - cutAt)} ms: ${String(e)}`);
          }
        }
      }),
    );
    // Reads of the data written before the cut never come back ambiguous.
    for (const kv of clients) {
      try {
        expect((await kv.get(k('pre0')))?.toString()).toBe('p');
      } catch (e) {
        if (e instanceof CairnError && e.ambiguous) ambiguousReads++;
        throw e;
      }
    }
    expect(ambiguousReads).toBe(0);
    // The fault took effect: messages between L and the others were dropped. Counted on both sides — the hooks
    // count what they drop on the way out, and a quiesced L may have had nothing to send all partition long.
    const droppedToL = others.reduce((a, j) => a + c.node(j).rpc!.faults.countersFor(L + 1).dropped, 0);
    expect(c.node(L).rpc!.faults.totals().dropped + droppedToL).toBeGreaterThan(0);
    // Both senders got through, and no call waited out its RPC timeout: the breakers' probes, not the 10 s
    // timeout (nor the lease expiry alone), took L out of the way — the regression this test was written for made
    // every op through the others wait on L (none succeeded in 6 s). Measured in wall time only as a print: at
    // load ~30 a failover's wall time is the machine's, not the mechanism's (1.2–3.5 s for 2 s leases, session 8).
    console.log(`first success through each other node ${firstOk.map((t) => Math.round(t)).join(', ')} ms after the cut (lease ${LEASE_MS} ms)`);
    for (const t of firstOk) expect(t).toBeLessThan(PARTITION_CAP_MS);
    expect(timedOut, timedOut.join('\n')).toEqual([]);
    expect(failuresAfterOk, errorsAfterOk.join('\n')).toEqual([0, 0]);
    // The breakers, not 10 s RPC timeouts, took L out of the way.
    expect(senders.reduce((a, s) => a + s.metrics.abandoned, 0)).toBeGreaterThan(0);
    const newHolder = c.leaseholder();
    expect(newHolder).not.toBe(L);
    expect(newHolder).toBeGreaterThanOrEqual(0);
    partition(c, L, false);
    // After healing, L serves again through the cluster (as a follower: NotLeaseHolder → the new holder).
    const dsL = distSender(c, L);
    const kvL = new KvClient(dsL);
    const t0 = performance.now();
    // Failed here at load 22–30 (session 6; 3 in ~100 runs in session 7) with NotLeaseHolder ('lease held by n2 …
    // not the Raft leader') or 'n3 does not serve: its clock is beyond the max offset' out of the meta lookup: a
    // DistSender probe's ping read back through a stalled event loop (round trip > 800 ms) counted a synchronized
    // peer as beyond the max offset, and a node whose only measured peer was that one stopped serving and renewing
    // its lease (src/rpc/clock-offset.ts, fixed). If it recurs, the failure names each replica's view, L's
    // DistSender metrics and L's RPC connection states.
    await kvL.get(k('pre1')).then(
      (v) => expect(v?.toString()).toBe('p'),
      (e: unknown) => {
        const now = (i: number) => c.node(i).clock.now();
        const view = c.replicas(1).map(({ i, r }) => `n${i + 1}: leader=${r.isLeader()} lease=n${r.lease?.replica.nodeId}#${r.lease?.sequence} valid=${r.ownsValidLease(now(i))}`);
        const rpc = c.node(L).rpc!.status().map((x) => `to n${x.nodeId}: ${x.state} failed=${x.failedAttempts} backoff=${x.backoffRemainingMs}ms ${x.lastError ?? ''}`);
        throw new Error(`after the heal, ${Math.round(performance.now() - t0)} ms: ${String(e)}\n${view.join('\n')}\nL's DistSender ${JSON.stringify(dsL.metrics)}\n${rpc.join('\n')}`);
      },
    );
  }, 60_000);

  it('retries a read-only batch elsewhere, and reports a non-transactional write ambiguous', async () => {
    const { c, L, others } = await cluster();
    const s = distSender(c, others[0]!);
    const kv = new KvClient(s);
    await kv.put(k('r'), Buffer.from('v'));
    expect(s.cache.leaseholder(1)?.nodeId).toBe(L + 1);
    partition(c, L, true);
    // The write goes to L first (cached), may have been applied there: ambiguous, not retried.
    const t0 = performance.now();
    const err = await kv.put(k('w'), Buffer.from('1')).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).ambiguous).toBe(true);
    // Abandoned by the breaker after a failed probe (rpc.canceled, counted), not the 10 s RPC timeout (rpc.timeout):
    // the mechanism, where a wall-clock bound (probe delay × 2 + 1 s) was the load's to break.
    expect((err as CairnError).code, String(err)).toBe('rpc.canceled');
    expect(s.metrics.abandoned).toBe(1);
    console.log(`the write to the cut-off leaseholder answered ambiguous after ${Math.round(performance.now() - t0)} ms (probe delay ${PROBE_MS} ms)`);
    expect(s.cache.leaseholder(1)?.nodeId).not.toBe(L + 1);
    expect(s.isOpen(L + 1)).toBe(true);
    // A fresh sender, still pointing at L: its read is retried on the others, never ambiguous.
    const s2 = distSender(c, others[1]!);
    s2.cache.insert(s.cache.byRangeId(1)!);
    s2.cache.setLeaseholder(1, s.cache.byRangeId(1)!.replicas.find((r) => r.nodeId === L + 1)!);
    const t1 = performance.now();
    expect((await new KvClient(s2).get(k('r')))?.toString()).toBe('v');
    // Abandoned by its breaker (counted once), not the 10 s RPC timeout: the mechanism, where the elapsed wall
    // time (printed) was a bound of lease + 3 s a loaded machine could break.
    console.log(`the read retried elsewhere answered after ${Math.round(performance.now() - t1)} ms`);
    expect(s2.metrics.abandoned).toBe(1);
  }, 30_000);
});
