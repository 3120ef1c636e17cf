/**
 * Deferred commit-only appends (src/kv/store.ts header, settings
 * deferCommitOnlyAppends; issue 4, Raft messages per replicated put) on a
 * 3-node in-process cluster whose engines write like LevelDB
 * (test/support/sync-gate.ts), ticker stopped once a leader holds the lease
 * (no heartbeat can carry a commit index; nothing else runs on the cluster):
 *
 *   - the empty MsgApps that broadcast a leader's new commit index leave after
 *     the leader's next sync, not before it: with that sync held the
 *     followers have not learned the commit (control, knob off: they have);
 *   - an append with entries sent during that sync carries the commit to the
 *     followers, and the deferred empty appends it covers are left out of the
 *     post-sync batch (Store.metrics.raftMessagesElided);
 *   - every put is answered, readable, and applied by every replica.
 *
 * The sequence: put A with the leader's sync held (round k); the followers
 * acknowledge A, so the leader commits A and Raft queues an empty MsgApp per
 * follower announcing it (bcastAppend); put B is sent during round k's sync
 * (its MsgApp's commit capped at the leader's durable log, below A). passOne
 * lets round k finish; round k+1 (B's append, the empty MsgApps) is held in
 * its sync; then put C's append leaves during it, carrying commit ≥ A.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { gatedCluster } from '../support/sync-gate.js';
import { track } from '../support/track.js';

const startCluster = autoCloseClusters();
const key = (s: string): Buffer => Buffer.from(`\x90dca-${s}`, 'latin1');

async function scenario(defer: boolean) {
  const { c, lh, followers, gates } = await gatedCluster(startCluster, { deferCommitOnlyAppends: defer });
  c.stopTicker();
  const gate = gates[lh]!;
  const leader = () => c.store(lh).replica(1)!;
  const commitOf = (i: number): number => c.store(i).replica(1)!.raw.raft.raftLog.committed;
  const kv = c.client(lh);
  try {
    gate.close();
    const a = track(kv.put(key('a'), Buffer.from('va')));
    await c.waitFor(() => gate.holding, 10_000, "round k (A's append) held in the leader's sync");
    const aIndex = leader().raw.raft.raftLog.lastIndex();
    await c.waitFor(() => commitOf(lh) >= aIndex, 10_000, 'A committed on the leader (the followers acknowledged it)');
    const b = track(kv.put(key('b'), Buffer.from('vb')));
    await c.waitFor(() => followers.every((f) => c.store(f).replica(1)!.storage.lastIndex() > aIndex), 10_000, "B's append sent during round k's sync");
    const bIndex = leader().raw.raft.raftLog.lastIndex();
    const sent0 = c.store(lh).metrics.raftMessagesSent;
    gate.passOne();
    await a.promise;
    await c.waitFor(() => gate.holding && leader().storage.lastIndex() >= aIndex, 10_000, "round k+1 (B's append) held in the leader's sync");
    // Raft messages the leader sent from the end of round k's sync until round k+1's sync (held).
    const sentBeforeSync = c.store(lh).metrics.raftMessagesSent - sent0;
    // With the knob off those include the empty appends announcing A's commit: the followers learn it during the sync.
    if (!defer) await c.waitFor(() => followers.every((f) => commitOf(f) >= aIndex), 10_000, "the followers learn A's commit during round k+1's sync");
    const followerCommitsHeld = followers.map(commitOf);
    const elided0 = c.store(lh).metrics.raftMessagesElided;
    const cPut = track(kv.put(key('c'), Buffer.from('vc')));
    await c.waitFor(() => followers.every((f) => c.store(f).replica(1)!.storage.lastIndex() > bIndex), 10_000, "C's append sent during round k+1's sync");
    const followerCommitsAfterC = followers.map(commitOf);
    expect(gate.holding).toBe(true);
    gate.open();
    for (const p of [b, cPut]) await p.promise;
    for (const [k, v] of [['a', 'va'], ['b', 'vb'], ['c', 'vc']] as const) expect((await kv.get(key(k)))?.toString()).toBe(v);
    const applied = leader().applied.raftAppliedIndex;
    c.startTicker();
    await c.waitFor(() => [0, 1, 2].every((i) => c.store(i).replica(1)!.applied.raftAppliedIndex >= applied), 10_000, 'every replica applied');
    return { aIndex, sentBeforeSync, followerCommitsHeld, followerCommitsAfterC, elided: c.store(lh).metrics.raftMessagesElided - elided0 };
  } finally {
    for (const g of gates) g.open();
  }
}

describe('deferred commit-only appends', () => {
  it("a new commit index reaches the followers after the leader's next sync, or with an append sent during it; the empty appends it covers are left out", async () => {
    const s = await scenario(true);
    // Round k+1 held: the empty MsgApps announcing A's commit have not left (nothing has), so no follower knows it.
    expect(s.sentBeforeSync).toBe(0);
    for (const commit of s.followerCommitsHeld) expect(commit).toBeLessThan(s.aIndex);
    // C's append, sent during that sync, carries it (capped at the leader's durable log, which now holds A).
    for (const commit of s.followerCommitsAfterC) expect(commit).toBeGreaterThanOrEqual(s.aIndex);
    // Left out after the sync: per follower, the empty append announcing A and B's commit-only remainder
    // (both covered by C's append).
    expect(s.elided).toBeGreaterThanOrEqual(4);
  }, 60_000);

  it('with deferCommitOnlyAppends off the empty appends leave before the sync (control)', async () => {
    const s = await scenario(false);
    expect(s.sentBeforeSync).toBeGreaterThanOrEqual(2);
    for (const commit of s.followerCommitsHeld) expect(commit).toBeGreaterThanOrEqual(s.aIndex);
    console.log('knob off: Raft messages sent before round k+1 synced', s.sentBeforeSync, 'elided after it', s.elided);
  }, 60_000);
});
