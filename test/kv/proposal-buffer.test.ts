/**
 * The proposal buffer (replica.ts flushProposals; CockroachDB's propBuf) on
 * a 3-node in-process cluster: the commands a leaseholder evaluates while
 * its Store's Ready loop is busy go to Raft as ONE proposal at the next
 * round — one MsgApp per follower carrying all of them, one MsgAppResp back
 * — instead of a MsgApp per command per follower (and a commit-only MsgApp
 * per acknowledgement). Every command still applies exactly once, in the
 * order it was evaluated, on every replica.
 *
 * The leader's loop is held inside a round by holding its synced write (a
 * slow fsync we control), so the batch is deterministic whatever the load.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { gateSyncs } from '../support/sync-gate.js';
import { decodeRaftCommand } from '../../src/kv/api-codec.js';

const startCluster = autoCloseClusters();
const key = (s: string): Buffer => Buffer.from(`\x90pb-${s}`, 'latin1');

describe('proposal buffer', () => {
  it('proposes the commands evaluated during a round together: a few Raft messages for 32 puts, all applied in order', async () => {
    const c = await startCluster({ nodes: 3, settings: { electionTicks: 300, leaseDurationMicros: 10_000_000 } });
    c.startTicker();
    await c.client(0).put(key('warm'), Buffer.from('w'));
    await c.waitFor(() => c.leader() >= 0 && c.leader() === c.leaseholder(), 20_000, 'leader and leaseholder together');
    const lh = c.leaseholder();
    const leader = () => c.store(lh).replica(1)!;
    const kv = c.client(lh);
    const gate = gateSyncs(c.node(lh).engine);
    try {
      // Hold the leader's loop in a round (its sync), then evaluate 32 puts meanwhile.
      gate.close();
      const first = kv.put(key('first'), Buffer.from('f'));
      await c.waitFor(() => gate.holding, 10_000, "the leader's sync held");
      const n = 32;
      const base = leader().pendingProposals;
      const puts = Array.from({ length: n }, (_, i) => kv.put(key(`p${i}`), Buffer.from(`v${i}`)));
      await c.waitFor(() => leader().pendingProposals >= base + n, 10_000, 'all 32 evaluated and pending');
      const lastBefore = leader().storage.lastIndex();
      const sent0 = c.store(lh).metrics.raftMessagesSent;
      gate.open();
      await first;
      await Promise.all(puts);
      // Before the buffer: ≥ 2 MsgApps per put (one per follower) + a commit MsgApp per follower per ack (≥ 128).
      // With it: one MsgApp per follower for the 32, commit updates and a few heartbeats.
      const sent = c.store(lh).metrics.raftMessagesSent - sent0;
      expect(sent).toBeLessThan(24);
      // One proposal: the 32 entries are consecutive in the log, in evaluation order.
      const ents = leader().storage.entries(lastBefore + 1, lastBefore + 1 + n, Number.MAX_SAFE_INTEGER);
      expect(ents.length).toBe(n);
      const mlis = ents.map((e) => decodeRaftCommand(e.data).maxLeaseIndex);
      for (let i = 1; i < n; i++) expect(mlis[i]).toBe((mlis[i - 1] as number) + 1);
      for (let i = 0; i < n; i++) expect((await kv.get(key(`p${i}`)))?.toString()).toBe(`v${i}`);
      const applied = leader().applied.raftAppliedIndex;
      await c.waitFor(() => [0, 1, 2].every((i) => c.store(i).replica(1)!.applied.raftAppliedIndex >= applied), 10_000, 'every replica applied');
      const lai = [0, 1, 2].map((i) => c.store(i).replica(1)!.applied.leaseAppliedIndex);
      expect(new Set(lai).size).toBe(1);
    } finally {
      gate.open();
    }
  });
});
