/**
 * A range whose Raft rounds take longer than a lease's usable window
 * (duration − max offset) still serves: its leases arrive usable
 * (replica-lease.ts "Commit allowance"). Before, every lease applied already
 * in stasis or expired, the holder asked for the next one at once, and the
 * range served nothing while the rounds stayed that slow — s9/s10 CI,
 * kv-ranges-multiproc/size-split-merge at load 20–40: the liveness range's
 * holder re-took its 2 s lease every 2–5 s for a minute and a node's
 * heartbeat never got through ("not ready after 60000 ms").
 *
 * In process over real RPC: every message between the three nodes is held
 * 1 s by the fault hook, so a Raft round (append, answer) takes ≥ 2 s against
 * 2 s leases with a 500 ms max offset (the process tests' settings). Election
 * and proposal timeouts are long enough not to fire meanwhile.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';

const startCluster = autoCloseClusters();
const key = Buffer.from('\x90lsc-k', 'latin1');
const DELAY_MS = 1_000;

describe('leases whose Raft round outlasts their usable window', () => {
  // CAIRN_KV_LEASE_COMMIT_ALLOWANCE=0 shows the failure: 'no answer in 40 s'.
  it(
    'a write goes through while every round takes 2 s',
    async () => {
      const c = await startCluster({
        nodes: 3,
        maxOffsetMicros: 500_000,
        settings: { leaseDurationMicros: 2_000_000, electionTicks: 300, heartbeatTicks: 20, reproposalTicks: 600, proposalTimeoutTicks: 4_000 },
      });
      c.startTicker();
      await c.client(0).put(key, Buffer.from('v0'));
      await c.waitFor(() => c.leaseholder() >= 0 && c.leader() === c.leaseholder(), 20_000, 'a leaseholder leading r1');
      const lh = c.leaseholder();
      const r = c.store(lh).replica(1)!;
      const seq0 = r.lease!.sequence;
      for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) if (i !== j) c.node(i).rpc!.faults.setFaults(j + 1, { delayMs: DELAY_MS });
      // Through the holder's own node: no RPC hop before the replica, only its Raft rounds are slow.
      const t0 = Date.now();
      const put = c.client(lh).put(key, Buffer.from('v1')).then(
        () => 'ok',
        (e: Error) => `failed: ${e.message}`,
      );
      // Without the allowance the write never goes through while the delay lasts; 40 s is far beyond
      // the ~7 s (a late lease round, a usable one, the write's round) it takes with it, even at load 40.
      const outcome = await Promise.race([put, new Promise<string>((res) => setTimeout(() => res('no answer in 40 s'), 40_000))]);
      const ms = Date.now() - t0;
      const lease = r.lease!;
      console.log(`allowance ${c.settings.leaseCommitAllowance}: ${outcome} after ${ms} ms; lease seq ${seq0} → ${lease.sequence}, last round ${Math.round((r as unknown as { lastLeaseRoundMicros: number }).lastLeaseRoundMicros / 1000)} ms`);
      for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) if (i !== j) c.node(i).rpc!.faults.clearFaults(j + 1);
      expect(outcome).toBe('ok');
      expect((await c.client(lh).get(key))?.toString()).toBe('v1');
    },
    60_000,
  );
});
