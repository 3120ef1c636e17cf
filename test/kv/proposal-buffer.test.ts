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
 *
 * A batch Raft drops at the flush (issue 4; f99abb9 reverted the first
 * buffer for failing such a batch, which lost pipelined writes already
 * answered): with the leaseholder's ticker stopped and its round held, 8 puts
 * and an answered async-consensus write are buffered, then Raft is made to
 * drop the flush — a leadership transfer in progress (Raft §3.10), or no
 * leader at all (the leaseholder cut off steps down by check-quorum, §6.2).
 * Nothing is answered failed; each command is proposed again (leader
 * change), applies exactly once on every replica, and the transaction
 * commits. Also: a flush orders commands by max lease index; a command no
 * copy of which reached Raft answers NotLeaseHolder when the lease moves.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { gateSyncs } from '../support/sync-gate.js';
import { distSender, batch } from '../kv-txn/support.js';
import { decodeRaftCommand } from '../../src/kv/api-codec.js';
import { replicaTestingKnobs, type Replica } from '../../src/kv/replica.js';
import { TxnDB } from '../../src/kv/client/txn-db.js';
import { Prng } from '../../src/util/prng.js';
import { compareTimestamps } from '../../src/util/hlc.js';
import { ProposalDroppedError } from '../../raft/types.js';
import { NotLeaseHolderError } from '../../src/kv/api.js';
import { decodeBatchRepr } from '../../storage/engine.js';
import { decodeMvccKey } from '../../storage/mvcc-key.js';

const startCluster = autoCloseClusters();
const key = (s: string): Buffer => Buffer.from(`\x90pb-${s}`, 'latin1');

/** Cuts node i off from every other node, both ways (or heals it). */
function partition(c: TestCluster, i: number, on: boolean): void {
  for (let j = 0; j < c.size; j++) {
    if (j === i) continue;
    c.node(i).rpc!.faults.setFaults(j + 1, on ? { partition: true } : {});
    c.node(j).rpc!.faults.setFaults(i + 1, on ? { partition: true } : {});
  }
}

/** A 3-node cluster, ticking, whose r1 has its lease on its Raft leader; `lh` is that node. 10 s leases outlast a held round. */
/**
 * sendAppendsDuringSync off: these tests hold commands in the buffer for the
 * round after the held one; with it on, a leader proposes them during the
 * held sync (test/kv/appends-during-sync.test.ts covers that).
 */
async function steadyCluster(electionTicks: number): Promise<{ c: TestCluster; lh: number }> {
  const c = await startCluster({ nodes: 3, settings: { electionTicks, leaseDurationMicros: 10_000_000, sendAppendsDuringSync: false } });
  c.startTicker();
  await c.client(0).put(key('warm'), Buffer.from('w'));
  await c.waitFor(() => c.leader() >= 0 && c.leader() === c.leaseholder(), 20_000, 'leader and leaseholder together');
  return { c, lh: c.leaseholder() };
}

describe('proposal buffer', () => {
  it('proposes the commands evaluated during a round together: a few Raft messages for 32 puts, all applied in order', async () => {
    const { c, lh } = await steadyCluster(300);
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

/** Each batch a replica hands Raft (its entries' cmdIds and max lease indexes) and whether Raft dropped it. */
interface ProposalLog {
  /** Each proposeBatch call; a dropped one records whether any watched write had settled at that moment. */
  readonly batches: { ids: number[]; mlis: number[]; dropped: boolean; settledAtDrop?: boolean }[];
  /** Looked at when a batch is dropped (set once the writes to watch exist). */
  anySettled?: () => boolean;
}

/** Watches the real RawNode.proposeBatch of `r` (a spy; the call goes through unchanged). */
function watchProposals(r: Replica): ProposalLog {
  const raw = r.raw;
  const proposeBatch = raw.proposeBatch.bind(raw);
  const log: ProposalLog = { batches: [] };
  raw.proposeBatch = (datas) => {
    const cmds = datas.map((d) => decodeRaftCommand(d));
    const ids = cmds.map((cmd) => cmd.cmdId);
    const mlis = cmds.map((cmd) => cmd.maxLeaseIndex);
    try {
      proposeBatch(datas);
    } catch (e) {
      if (e instanceof ProposalDroppedError) log.batches.push({ ids, mlis, dropped: true, settledAtDrop: log.anySettled?.() ?? false });
      throw e;
    }
    log.batches.push({ ids, mlis, dropped: false });
  };
  return log;
}

/** A promise whose outcome can be looked at without awaiting it. */
function track<T>(p: Promise<T>): { promise: Promise<T>; settled: boolean } {
  const t = { promise: p, settled: false };
  p.then(
    () => void (t.settled = true),
    () => void (t.settled = true),
  );
  return t;
}

const ZERO = { wall: 0, logical: 0 };

/**
 * A steady 3-node cluster (leaseholder = leader) whose leaseholder's Ready
 * loop is held inside a round while `n` puts and one pipelined transactional
 * write are evaluated: all of them wait in its proposal buffer, the
 * pipelined write already answered. The ticker is stopped: nothing but the
 * test moves Raft from here on.
 */
async function bufferedBehindHeldRound(n: number) {
  const { c, lh } = await steadyCluster(50);
  const store = c.store(lh);
  const r = store.replica(1)!;
  // A fresh lease's timestamp cache starts 2 max offsets ahead: wait for the clock to pass its low water (the txn
  // then commits at its own timestamp) — the condition itself, not a sleep of 2 max offsets a loaded machine outruns.
  const low = r.concurrency.tscache.lowWater;
  await c.waitFor(() => compareTimestamps(c.node(lh).clock.now(), low) > 0, 10_000, "the clock past the lease's timestamp-cache low water");
  c.stopTicker();
  const gate = gateSyncs(c.node(lh).engine);
  const applied = new Map<string, number>();
  replicaTestingKnobs.onApply = (rr, cmd) => {
    const k = `${rr.replica.storeId}/${cmd.cmdId}`;
    applied.set(k, (applied.get(k) ?? 0) + 1);
  };
  gate.close();
  const first = store.send({ header: { rangeId: 1, timestamp: ZERO }, requests: [{ kind: 'put', key: key('first'), value: Buffer.from('f') }] });
  await c.waitFor(() => gate.holding, 10_000, "the leaseholder's sync held");
  const proposals = watchProposals(r);
  const drops0 = store.metrics.proposalBatchesDropped;
  const base = r.pendingProposals;
  const puts = Array.from({ length: n }, (_, i) =>
    track(store.send({ header: { rangeId: 1, timestamp: ZERO }, requests: [{ kind: 'put', key: key(`d${i}`), value: Buffer.from(`v${i}`) }] })),
  );
  proposals.anySettled = () => puts.some((p) => p.settled);
  const db = new TxnDB({ sender: distSender(c, lh), clock: c.node(lh).clock, nodeId: lh + 1, prng: new Prng(7) });
  const txn = db.newTxn();
  // Pipelined (async consensus): answered once its command is queued — here, while nothing reaches Raft.
  await txn.run(batch((b) => b.put(key('txn'), Buffer.from('t'))));
  await c.waitFor(() => r.pendingProposals >= base + n + 1, 10_000, 'all evaluated and pending');
  expect(proposals.batches).toEqual([]); // the pipelined write was answered before its command reached Raft
  expect(puts.some((p) => p.settled)).toBe(false);
  return { c, lh, store, r, gate, applied, first, proposals, puts, txn, n, drops0 };
}
type Buffered = Awaited<ReturnType<typeof bufferedBehindHeldRound>>;

/**
 * Opens the held round, with Raft set up to drop the next flush: waits for
 * the dropped batch (all the buffered commands) and checks nothing was
 * answered "failed" — the commands are still pending (the ticker is
 * stopped: no proposal timeout).
 */
async function releaseIntoDrop(b: Buffered): Promise<{ ids: number[] }> {
  b.gate.open();
  await b.c.waitFor(() => b.proposals.batches.some((x) => x.dropped), 10_000, 'the buffered batch dropped');
  const dropped = b.proposals.batches.find((x) => x.dropped)!;
  expect(dropped.ids.length).toBeGreaterThanOrEqual(b.n + 1);
  expect(b.store.metrics.proposalBatchesDropped).toBeGreaterThan(b.drops0);
  // The drop answered none of them. Checked at the drop itself: by the time this poll sees it, the batch may
  // already be re-proposed and applied (CI of f0a8a2d: a leadership transfer completed within one 5 ms poll).
  expect(dropped.settledAtDrop).toBe(false);
  return dropped;
}

/** Every command of the dropped batch applied exactly once on every replica; every write answered and readable; the txn commits. */
async function expectReproposedOnce(b: Buffered, dropped: { ids: number[] }): Promise<void> {
  const { c, r, applied, puts, txn, n } = b;
  await b.first;
  for (const p of puts) await p.promise;
  await txn.commit();
  const index = r.applied.raftAppliedIndex;
  await c.waitFor(() => [0, 1, 2].every((i) => c.store(i).replica(1)!.applied.raftAppliedIndex >= index), 10_000, 'every replica applied');
  for (const id of dropped.ids) for (let i = 0; i < 3; i++) expect(applied.get(`${c.store(i).ident.storeId}/${id}`), `cmd ${id} on s${i + 1}`).toBe(1);
  const kv = c.client(b.lh);
  for (let i = 0; i < n; i++) expect((await kv.get(key(`d${i}`)))?.toString()).toBe(`v${i}`);
  expect((await kv.get(key('txn')))?.toString()).toBe('t');
  // The same Raft applied index means the same lease applied index on every replica (no command applied twice
  // anywhere) — compared at a moment all three stand at one index: with the ticker running, commands may still be
  // arriving (the txn's async intent resolution, lease upkeep after the heal), and a sample of three replicas at
  // different indexes differed by one at load ~25 ('expected 2 to be 1').
  let lai: number[] = [];
  await c.waitFor(
    () => {
      const a = [0, 1, 2].map((i) => c.store(i).replica(1)!.applied);
      if (new Set(a.map((x) => x.raftAppliedIndex)).size !== 1) return false;
      lai = a.map((x) => x.leaseAppliedIndex);
      return true;
    },
    10_000,
    'the replicas at one applied index',
  );
  expect(new Set(lai).size).toBe(1);
}

describe('proposal buffer: a batch Raft drops stays pending and is proposed again', () => {
  afterEach(() => {
    replicaTestingKnobs.onApply = undefined;
    replicaTestingKnobs.proposalFilter = undefined;
  });

  it('leadership moving: dropped at the flush (transfer in progress), re-proposed to the new leader, applied once', async () => {
    const b = await bufferedBehindHeldRound(8);
    const { c, lh, r, gate, proposals } = b;
    try {
      const target = [0, 1, 2].find((i) => i !== lh) as number;
      // Raft §3.10: a leader transferring leadership takes no proposals.
      r.raw.transferLeader(c.store(target).replica(1)!.replicaId);
      const dropped = await releaseIntoDrop(b);
      await c.waitFor(() => c.leader() === target, 10_000, 'leadership moved');
      await expectReproposedOnce(b, dropped);
      // Re-proposed by the leader change, as a follower forwarding to the new leader.
      const again = proposals.batches.filter((x) => !x.dropped && x.ids.some((id) => dropped.ids.includes(id)));
      expect(again.length).toBeGreaterThan(0);
      expect(r.isLeader()).toBe(false);
    } finally {
      gate.open();
    }
  });

  it('no leader: dropped while the leaseholder is cut off and has stepped down, re-proposed once a leader is known, applied once', async () => {
    const b = await bufferedBehindHeldRound(8);
    const { c, lh, r, gate, proposals } = b;
    try {
      partition(c, lh, true);
      // Check-quorum (Raft §6.2): cut off from both followers, the leader steps down within two election timeouts.
      for (let t = 0; t < 3 * c.settings.electionTicks && r.isLeader(); t++) c.store(lh).tick();
      expect(r.isLeader()).toBe(false);
      expect(r.leaderHint()).toBe(null);
      const dropped = await releaseIntoDrop(b);
      expect(proposals.batches.every((x) => x.dropped)).toBe(true);
      partition(c, lh, false);
      c.startTicker();
      await expectReproposedOnce(b, dropped);
    } finally {
      partition(c, lh, false);
      gate.open();
    }
  });

  it('orders a batch by max lease index: a re-proposal queued after newer commands goes first, and applies once', async () => {
    const b = await bufferedBehindHeldRound(8);
    const { r, gate, proposals } = b;
    try {
      // The held round's command (in the log, unapplied) is queued again behind the 9 newer ones, as a leader change does.
      const inFlight = r.pendingProposals;
      r.onLeaderChange();
      gate.open();
      await b.c.waitFor(() => proposals.batches.length > 0, 10_000, 'the buffer flushed');
      const batch0 = proposals.batches[0]!;
      expect(batch0.dropped).toBe(false);
      expect(batch0.ids.length).toBe(inFlight);
      for (let i = 1; i < batch0.mlis.length; i++) expect(batch0.mlis[i]).toBeGreaterThan(batch0.mlis[i - 1] as number);
      await expectReproposedOnce(b, batch0);
    } finally {
      gate.open();
    }
  });

  it('a command no copy of which reached Raft answers NotLeaseHolder (not ambiguous) when the lease moves away, and never applies', async () => {
    const { c, lh } = await steadyCluster(50);
    const r = c.store(lh).replica(1)!;
    // Held back from Raft (as a dropped batch is until its re-proposal): every copy, so none is in any log.
    let heldId: number | undefined;
    replicaTestingKnobs.proposalFilter = (rr, cmd) => {
      if (rr !== r || cmd.isLeaseRequest) return undefined;
      if (heldId === undefined && decodeBatchRepr(cmd.repr).some((op) => decodeMvccKey(op.key).key.equals(key('held')))) heldId = cmd.cmdId;
      return cmd.cmdId === heldId ? 'hold' : undefined;
    };
    const applied: number[] = [];
    replicaTestingKnobs.onApply = (_rr, cmd) => void applied.push(cmd.cmdId);
    const put = track(c.store(lh).send({ header: { rangeId: 1, timestamp: ZERO }, requests: [{ kind: 'put', key: key('held'), value: Buffer.from('h') }] }));
    await c.waitFor(() => heldId !== undefined, 10_000, 'the put evaluated and held');
    const target = r.desc.replicas.find((d) => d.replicaId !== r.replicaId)!;
    await c.store(lh).transferLease(1, target.replicaId);
    const err = await put.promise.then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(NotLeaseHolderError);
    expect((err as NotLeaseHolderError).ambiguous).toBe(false);
    expect((err as NotLeaseHolderError).retryable).toBe(true);
    expect(applied).not.toContain(heldId);
    expect(await c.client(lh).get(key('held'))).toBe(null);
  });
});
