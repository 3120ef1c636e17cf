/**
 * The replicated write path's acknowledgement rules (issue 4), on a 3-node
 * in-process cluster whose engines write like LevelDB: in submission order,
 * a write queued behind a synced one completing after it. Each node's
 * synced writes can be held at a gate (a slow fsync we control).
 *
 *   - No acknowledgement before a quorum has the write durably: with both
 *     followers' syncs held, a put durable on the leader alone stays
 *     unanswered (Raft §5.3: committed = stored on a majority).
 *   - Acknowledgement at commit (replica.ts) + the Store's fast apply pass:
 *     a put whose followers' acks arrive while the leader's NEXT fsync is in
 *     flight is answered right then — not after that fsync, not after its
 *     own apply batch (which queues behind it) is written.
 *   - Its latches are held until it applies: a read of the key through the
 *     leaseholder answers the new value.
 *
 *   - A command committed before a round (durable here, its commit learnt
 *     while the previous round synced) is applied in its own write issued
 *     ahead of that round's synced one (store.ts processRound, 1b): its
 *     latches are released while the round's fsync is still held, so a
 *     read of its key does not wait for that fsync (session 6; before, its
 *     apply rode in the synced write).
 *
 * Elections take 300 ticks and leases 10 s here: while the followers' loops
 * are held no heartbeat answer reaches the leader, and with the defaults a
 * slow machine let the leader step down (check-quorum, 10 ticks) or its
 * 1 s lease lapse before the held phase ended.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { gatedCluster } from '../support/sync-gate.js';
import { track } from '../support/track.js';

const startCluster = autoCloseClusters();
const key = (s: string): Buffer => Buffer.from(`\x90ack-${s}`, 'latin1');


describe('replicated write acknowledgement', () => {
  it('answers a put once a quorum holds it durably, while the leader is still syncing its next round', async () => {
    const { c, lh, followers, gates } = await gatedCluster(startCluster);
    const leader = () => c.store(lh).replica(1)!;
    const kv = c.client(lh);
    try {
      // Followers cannot sync: A becomes durable on the leader only.
      for (const f of followers) gates[f]!.close();
      const last0 = leader().storage.lastIndex();
      const a = track(kv.put(key('a'), Buffer.from('a')));
      await c.waitFor(() => leader().storage.lastIndex() > last0, 10_000, 'A durable on the leader');
      await c.waitFor(() => followers.every((f) => gates[f]!.holding), 10_000, "the followers' syncs of A held");
      expect(a.settled).toBe(false);

      // The leader's next fsync (B's round) is held; then the followers persist A and acknowledge it.
      gates[lh]!.close();
      const b = track(kv.put(key('b'), Buffer.from('b')));
      await c.waitFor(() => gates[lh]!.holding, 10_000, "the leader's sync of B held");
      for (const f of followers) gates[f]!.open();
      await c.waitFor(() => a.settled, 10_000, 'A answered while the leader syncs B');
      expect(a.error).toBeUndefined();
      expect(gates[lh]!.holding).toBe(true);

      // A's apply batch is queued behind the held sync: a read of A waits for A's latches and then sees it.
      const read = kv.get(key('a'));
      gates[lh]!.open();
      await b.promise;
      expect((await read)?.toString()).toBe('a');
      expect((await kv.get(key('b')))?.toString()).toBe('b');
      // Every replica applies both.
      await c.waitFor(() => [0, 1, 2].every((i) => c.store(i).replica(1)!.applied.raftAppliedIndex >= leader().applied.raftAppliedIndex), 10_000, 'replicas applied');
      expect(c.store(lh).metrics.fastApplies).toBeGreaterThan(0);
    } finally {
      for (const g of gates) g.open(); // a failed wait must not leave a store's loop stuck at a closed gate
    }
  });

  it("applies a command committed before a round without waiting for that round's fsync", async () => {
    const { c, lh, followers, gates } = await gatedCluster(startCluster);
    const leader = () => c.store(lh).replica(1)!;
    const kv = c.client(lh);
    try {
      // Round R_B: B's entry, its sync held on every node.
      for (const g of gates) g.close();
      const b = track(kv.put(key('b'), Buffer.from('b')));
      await c.waitFor(() => gates.every((g) => g.holding), 10_000, "every node's sync of B held");
      const bIndex = leader().raw.raft.raftLog.lastIndex();
      // C waits in the proposal buffer for the next round, which will then have entries to sync.
      const cw = track(kv.put(key('c'), Buffer.from('c')));
      // The followers persist B and acknowledge it: the leader learns B committed while its own R_B is held.
      for (const f of followers) gates[f]!.open();
      await c.waitFor(() => leader().raw.raft.raftLog.committed >= bIndex, 10_000, 'B committed on the leader');
      // R_B's sync goes on; the next round (B applied early, C's entry synced) is held at the gate.
      gates[lh]!.passOne();
      await c.waitFor(() => leader().storage.lastIndex() >= bIndex, 10_000, 'R_B durable on the leader');
      await c.waitFor(() => gates[lh]!.holding, 10_000, "the leader's next round (C) held");
      await b.promise;
      // B's latches are released with its apply write, which went ahead of the held sync: a read is served now.
      const read = track(kv.get(key('b')));
      await c.waitFor(() => read.settled, 10_000, "a read of B served while the round's fsync is held");
      expect(read.error).toBeUndefined();
      expect((await read.promise)?.toString()).toBe('b');
      expect(gates[lh]!.holding).toBe(true);
      expect(cw.settled).toBe(false);
      gates[lh]!.open();
      await cw.promise;
      expect((await kv.get(key('c')))?.toString()).toBe('c');
    } finally {
      for (const g of gates) g.open();
    }
  });

  it('answers nothing while only the leader holds a write durably, and answers once one follower does', async () => {
    const { c, lh, followers, gates } = await gatedCluster(startCluster);
    const kv = c.client(lh);
    try {
      for (const f of followers) gates[f]!.close();
      const writes = Array.from({ length: 8 }, (_, i) => track(kv.put(key(`q${i}`), Buffer.from(`v${i}`))));
      await c.waitFor(() => followers.every((f) => gates[f]!.holding), 10_000, "the followers' syncs held");
      // Let the leader run rounds (ticks, heartbeats) with the writes durable on it alone.
      const rounds = c.store(lh).metrics.readyRounds;
      await c.waitFor(() => c.store(lh).metrics.readyRounds >= rounds + 2, 10_000, 'leader rounds');
      expect(writes.filter((w) => w.settled)).toEqual([]);
      gates[followers[0] as number]!.open();
      await Promise.all(writes.map((w) => w.promise));
      for (let i = 0; i < writes.length; i++) expect((await kv.get(key(`q${i}`)))?.toString()).toBe(`v${i}`);
    } finally {
      for (const g of gates) g.open();
    }
  });
});
