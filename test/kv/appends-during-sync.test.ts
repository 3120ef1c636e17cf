/**
 * Appends during the sync (store.ts header; issue 4, replicated put
 * latency) on a 3-node in-process cluster whose engines write like LevelDB
 * (test/support/sync-gate.ts): a command the leaseholder evaluates while its
 * Store's round is held in its synced write reaches the followers during
 * that sync, not at the next round — and nothing is committed on the
 * strength of the leader's own non-durable copy:
 *
 *   - with the leader's sync held, puts evaluated meanwhile are in both
 *     followers' durable logs before the leader's round ends (with
 *     sendAppendsDuringSync off they are not: the control);
 *   - they are not answered before the leader's copy is durable, and no
 *     follower learns a commit index above the leader's durable last index
 *     (raft splitAppendForDurability; Raft §5.3/§5.4: a follower that applied
 *     an entry held durably only by itself could see a new leader overwrite
 *     it after the leader crashed) — checked with one follower's sync held
 *     too, so the commit the leader computes stands on one durable copy;
 *   - once the gates open every put is answered, readable, and applied the
 *     same on every replica;
 *   - under a seeded random schedule of held syncs (any subset of the three
 *     nodes, puts in flight), no follower's commit index and no replica's
 *     applied index ever exceeds what a quorum holds durably (the second
 *     highest durable last index of the three), sampled at every poll.
 *
 * Elections take 300 ticks and leases 10 s: while a loop is held no
 * heartbeat answer reaches the leader (as in ack-at-commit.test.ts).
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { gatedCluster, type SyncGate } from '../support/sync-gate.js';
import { track, type Tracked } from '../support/track.js';
import { Prng } from '../../src/util/prng.js';

const startCluster = autoCloseClusters();
const key = (s: string): Buffer => Buffer.from(`\x90ads-${s}`, 'latin1');


/**
 * Holds the leader's round (a put's sync), runs `whileHeld`, and evaluates
 * `n` more puts meanwhile; returns once they are pending on the leader.
 */
async function putsDuringHeldRound(c: TestCluster, lh: number, gate: SyncGate, n: number, whileHeld?: (durable: number) => Promise<void>) {
  const leader = () => c.store(lh).replica(1)!;
  const kv = c.client(lh);
  gate.close();
  const first = track(kv.put(key('first'), Buffer.from('f')));
  await c.waitFor(() => gate.holding, 10_000, "the leader's sync held");
  const durable = leader().storage.lastIndex();
  await whileHeld?.(durable);
  const base = leader().pendingProposals;
  const puts = Array.from({ length: n }, (_, i) => track(kv.put(key(`p${i}`), Buffer.from(`v${i}`))));
  await c.waitFor(() => leader().pendingProposals >= base + n, 10_000, 'the puts evaluated and pending');
  return { leader, kv, first, puts, durable };
}

/** Opens `gate`; every put is answered, readable, and applied the same on every replica. */
async function releaseAndCheck(c: TestCluster, lh: number, gate: SyncGate, first: Tracked<void>, puts: readonly Tracked<void>[]): Promise<void> {
  gate.open();
  await first.promise;
  for (const p of puts) await p.promise;
  await expectAllApplied(c, lh, c.client(lh), puts.length);
}

async function expectAllApplied(c: TestCluster, lh: number, kv: ReturnType<TestCluster['client']>, n: number): Promise<void> {
  for (let i = 0; i < n; i++) expect((await kv.get(key(`p${i}`)))?.toString()).toBe(`v${i}`);
  const applied = c.store(lh).replica(1)!.applied.raftAppliedIndex;
  await c.waitFor(() => [0, 1, 2].every((i) => c.store(i).replica(1)!.applied.raftAppliedIndex >= applied), 10_000, 'every replica applied');
  const lai = [0, 1, 2].map((i) => c.store(i).replica(1)!.applied.leaseAppliedIndex);
  expect(new Set(lai).size).toBe(1);
}

describe('appends during the sync', () => {
  it("puts evaluated while the leader's round syncs reach both followers' durable logs during that sync; answered once the leader's copy is durable", async () => {
    const { c, lh, followers, gates } = await gatedCluster(startCluster);
    const gate = gates[lh]!;
    try {
      const n = 8;
      const { leader, first, puts, durable } = await putsDuringHeldRound(c, lh, gate, n);
      const last = leader().raw.raft.raftLog.lastIndex();
      expect(last).toBeGreaterThan(durable);
      // The puts' entries are durable on both followers while the leader's round is still held.
      await c.waitFor(() => followers.every((f) => c.store(f).replica(1)!.storage.lastIndex() >= last), 10_000, "the puts in the followers' durable logs");
      expect(gate.holding).toBe(true);
      expect(c.store(lh).metrics.appendsDuringSync).toBeGreaterThan(0);
      // A quorum of followers acknowledged them, yet nothing is answered on the leader's non-durable copy,
      // and no follower was told a commit above the leader's durable log.
      await c.waitFor(() => leader().raw.raft.raftLog.committed >= last, 10_000, 'the puts committed on the leader');
      expect(first.settled).toBe(false);
      expect(puts.filter((p) => p.settled)).toEqual([]);
      for (const f of followers) expect(c.store(f).replica(1)!.raw.raft.raftLog.committed).toBeLessThanOrEqual(durable);
      await releaseAndCheck(c, lh, gate, first, puts);
    } finally {
      for (const g of gates) g.open();
    }
  });

  it('with sendAppendsDuringSync off, the puts wait for the next round (control)', async () => {
    const { c, lh, followers, gates } = await gatedCluster(startCluster, { sendAppendsDuringSync: false });
    const gate = gates[lh]!;
    try {
      const n = 4;
      const { leader, first, puts, durable } = await putsDuringHeldRound(c, lh, gate, n);
      // `first` reaches the followers (its MsgApp left before the held sync); the puts stay in the proposal
      // buffer until the next round: not in the leader's Raft log, so nowhere else either.
      await c.waitFor(() => followers.every((f) => c.store(f).replica(1)!.storage.lastIndex() > durable), 10_000, "`first` in the followers' logs");
      expect(gate.holding).toBe(true);
      expect(leader().raw.raft.raftLog.lastIndex()).toBe(durable + 1);
      for (const f of followers) expect(c.store(f).replica(1)!.storage.lastIndex()).toBe(durable + 1);
      expect(c.store(lh).metrics.appendsDuringSync).toBe(0);
      await releaseAndCheck(c, lh, gate, first, puts);
    } finally {
      for (const g of gates) g.open();
    }
  });

  it("never tells a follower a commit above the leader's durable log: one follower durable, the other and the leader held", async () => {
    const { c, lh, followers, gates } = await gatedCluster(startCluster);
    const [f1, f2] = followers as [number, number];
    try {
      gates[f2]!.close();
      const n = 4;
      // The leader counts its own (non-durable) copy: with f1's acknowledgement of `first` it computes it
      // committed before the puts are evaluated, so the MsgApps carrying the puts are made while the leader's
      // commit index is above its durable log.
      const { leader, kv, first, puts, durable } = await putsDuringHeldRound(c, lh, gates[lh]!, n, (d) =>
        c.waitFor(() => c.store(lh).replica(1)!.raw.raft.raftLog.committed > d, 10_000, '`first` committed on the leader'),
      );
      const last = leader().raw.raft.raftLog.lastIndex();
      // f1 has stepped those MsgApps once it holds their entries.
      await c.waitFor(() => c.store(f1).replica(1)!.storage.lastIndex() >= last, 10_000, "the puts in f1's durable log");
      await c.waitFor(() => leader().raw.raft.raftLog.committed >= last, 10_000, 'the puts committed on the leader');
      // Only f1 holds them durably: f1 must not learn that commit, nor apply them; nobody is answered.
      const r1 = c.store(f1).replica(1)!;
      expect(r1.raw.raft.raftLog.committed).toBeLessThanOrEqual(durable);
      expect(r1.applied.raftAppliedIndex).toBeLessThanOrEqual(durable);
      expect(first.settled).toBe(false);
      expect(puts.filter((p) => p.settled)).toEqual([]);
      // The leader's copy durable: answered; f1 learns the commit after the leader's sync.
      gates[lh]!.open();
      await first.promise;
      for (const p of puts) await p.promise;
      await c.waitFor(() => r1.applied.raftAppliedIndex >= last, 10_000, 'f1 applied the puts');
      gates[f2]!.open();
      await expectAllApplied(c, lh, kv, n);
    } finally {
      for (const g of gates) g.open();
    }
  });

  it('under a seeded random schedule of held syncs, nothing is committed at a follower or applied beyond a durable quorum', async () => {
    const { c, lh, gates } = await gatedCluster(startCluster);
    const prng = new Prng(Number(process.env.APPENDS_DURING_SYNC_SEED ?? 4242));
    const replicas = () => [0, 1, 2].map((i) => c.store(i).replica(1)!);
    const violations: string[] = [];
    // The invariant, checked at every poll of every wait below.
    const check = (): void => {
      const rs = replicas();
      const quorum = rs.map((r) => r.storage.lastIndex()).sort((a, b) => b - a)[1] as number;
      rs.forEach((r, i) => {
        if (i !== lh && r.raw.raft.raftLog.committed > quorum) violations.push(`n${i + 1} commit ${r.raw.raft.raftLog.committed} > durable quorum ${quorum}`);
        if (r.applied.raftAppliedIndex > quorum) violations.push(`n${i + 1} applied ${r.applied.raftAppliedIndex} > durable quorum ${quorum}`);
      });
    };
    const kv = c.client(lh);
    const all: Tracked<void>[] = [];
    let k = 0;
    try {
      for (let step = 0; step < 20; step++) {
        const closed = [0, 1, 2].filter(() => prng.bool(0.5));
        for (const i of closed) gates[i]!.close();
        const puts = Array.from({ length: 1 + prng.intn(6) }, () => track(kv.put(key(`r${k}`), Buffer.from(`v${k++}`))));
        all.push(...puts);
        // Until every closed gate holds a sync (or, with a quorum open, the puts are answered).
        await c.waitFor(() => (check(), closed.every((i) => gates[i]!.holding) || puts.every((p) => p.settled)), 10_000, `step ${step}: gates ${closed.join(',')} holding`);
        // A second wave evaluated while those syncs are held (a held leader sends it during its sync).
        const base = c.store(lh).replica(1)!.pendingProposals;
        const more = Array.from({ length: prng.intn(4) }, () => track(kv.put(key(`r${k}`), Buffer.from(`v${k++}`))));
        all.push(...more);
        await c.waitFor(() => (check(), c.store(lh).replica(1)!.pendingProposals >= base + more.length || more.every((p) => p.settled)), 10_000, `step ${step}: second wave evaluated`);
        check();
        // Opened, the step's writes go on: every put of the step answered before the next step closes any gate
        // (closing again at once would hold the same write step after step and starve the range of a quorum).
        for (const i of closed) gates[i]!.open();
        await c.waitFor(() => (check(), puts.every((p) => p.settled) && more.every((p) => p.settled)), 10_000, `step ${step}: its puts answered`);
      }
      await c.waitFor(() => (check(), all.every((p) => p.settled)), 10_000, 'every put answered');
      for (const p of all) expect(p.error).toBeUndefined();
      expect(violations).toEqual([]);
      for (let i = 0; i < k; i++) expect((await kv.get(key(`r${i}`)))?.toString()).toBe(`v${i}`);
      const applied = c.store(lh).replica(1)!.applied.raftAppliedIndex;
      await c.waitFor(() => (check(), replicas().every((r) => r.applied.raftAppliedIndex >= applied)), 10_000, 'every replica applied');
      expect(violations).toEqual([]);
      console.log(`appends during the sync, random holds: ${k} puts, ${c.store(lh).metrics.appendsDuringSync} MsgApps sent during a sync`);
    } finally {
      for (const g of gates) g.open();
    }
  });
});
