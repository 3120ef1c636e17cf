/**
 * A write whose proposal times out (proposalTimeoutTicks) is answered
 * ambiguous, but its request keeps its latches until the command finishes
 * (replica.ts header, "Outcomes"; CockroachDB keeps a cancelled proposal's
 * latches the same way).
 *
 *   (a) The command is in the leaseholder's (= Raft leader's) log, not
 *       committed: the leaseholder is cut off from both followers and only its
 *       own store ticks, by hand, past the timeout. The client gets
 *       ambiguous; a read of the key at a timestamp above the write's, on the
 *       leaseholder, must wait for the write's latches; the partition heals,
 *       the command commits and applies (same lease, valid max lease index)
 *       and the read sees it. Before the fix the latches went at the timeout:
 *       the read answered the old value at once, recorded its timestamp, and
 *       the write then applied below it — kvnemesis's stale-read shape.
 *   (b) A timed-out command that can never apply (held back from Raft by the
 *       proposal filter) still frees its latches when the lease moves away:
 *       a read blocked behind it is answered — the old value — and the
 *       command never applies.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { replicaTestingKnobs, type Replica } from '../../src/kv/replica.js';
import { AmbiguousResultError } from '../../src/util/errors.js';
import type { GetResponse } from '../../src/kv/api.js';
import { decodeBatchRepr } from '../../storage/engine.js';
import { decodeMvccKey } from '../../storage/mvcc-key.js';
import { ZERO_TIMESTAMP, tsLess, type Timestamp } from '../../src/util/hlc.js';

const start = autoCloseClusters();
const key = (s: string): Buffer => Buffer.from(`\x90pt-${s}`, 'latin1');

afterEach(() => {
  replicaTestingKnobs.proposalFilter = undefined;
  replicaTestingKnobs.onApply = undefined;
});

/** Cuts node i off from every other node, both ways (or heals it). */
function partition(c: TestCluster, i: number, on: boolean): void {
  for (let j = 0; j < c.size; j++) {
    if (j === i) continue;
    c.node(i).rpc!.faults.setFaults(j + 1, on ? { partition: true } : {});
    c.node(j).rpc!.faults.setFaults(i + 1, on ? { partition: true } : {});
  }
}

/**
 * Whether a request is answered before it queues behind a conflicting latch of `r`'s range: waits (bounded)
 * until either happens, and tells which.
 */
async function answeredBeforeLatchWait(c: TestCluster, r: Replica, p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void p.then(
    () => (settled = true),
    () => (settled = true),
  );
  await c.waitFor(() => settled || r.concurrency.latches.metrics().waiting > 0, 10_000, 'the request answered or waiting for a latch');
  return settled;
}

/** A 3-node cluster whose r1 lease is on its Raft leader (`lh`), with 10 s leases and the given proposal timeout. */
async function steadyCluster(proposalTimeoutTicks: number): Promise<{ c: TestCluster; lh: number }> {
  // Elections far off: ticking the cut-off leaseholder past the proposal timeout must not make it step down.
  const c = await start({ nodes: 3, settings: { electionTicks: 100, leaseDurationMicros: 10_000_000, proposalTimeoutTicks, reproposalTicks: 5 } });
  c.startTicker();
  await c.client(0).put(key('k'), Buffer.from('old'));
  await c.waitFor(() => c.leader() >= 0 && c.leader() === c.leaseholder(), 20_000, 'leader and leaseholder together');
  return { c, lh: c.leaseholder() };
}

function writesKey(cmd: { repr: Buffer }, k: Buffer): boolean {
  return decodeBatchRepr(cmd.repr).some((op) => decodeMvccKey(op.key).key.equals(k));
}

describe('a timed-out proposal keeps its latches until its command finishes', () => {
  it('(a) a read above the ambiguous write waits for it to apply and sees it', async () => {
    const { c, lh } = await steadyCluster(10);
    const store = c.store(lh);
    const r = store.replica(1)!;
    c.stopTicker();
    partition(c, lh, true);
    const last0 = r.raw.raft.raftLog.lastIndex();
    const put = store.send({ header: { rangeId: 1, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: key('k'), value: Buffer.from('new') }] });
    const outcome = put.then(
      () => null,
      (e: unknown) => e,
    );
    // In the leader's log (appended at the next Ready round), but no follower hears of it: not committed.
    await c.waitFor(() => r.raw.raft.raftLog.lastIndex() > last0, 10_000, "the put in the leader's log");
    expect(r.concurrency.latches.writeLatchedAt(key('k'))).toBe(true);
    for (let t = 0; t < c.settings.proposalTimeoutTicks; t++) store.tick();
    const err = await outcome;
    expect(err).toBeInstanceOf(AmbiguousResultError);
    expect(r.isLeader()).toBe(true);
    const readTs: Timestamp = c.node(lh).clock.now();
    const read = store.send({ header: { rangeId: 1, timestamp: readTs }, requests: [{ kind: 'get', key: key('k') }] });
    const servedBeforeApply = await answeredBeforeLatchWait(c, r, read);
    // The command may still apply: it is still pending, under its latches.
    const latched = r.concurrency.latches.writeLatchedAt(key('k'));
    // Heal: the command commits and applies under the same lease (its max lease index is still valid).
    partition(c, lh, false);
    c.startTicker();
    const got = (await read).responses[0] as GetResponse;
    await c.waitFor(() => r.pendingProposals === 0 && !r.concurrency.latches.writeLatchedAt(key('k')), 10_000, 'the command finished');
    const after = (await store.send({ header: { rangeId: 1, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'get', key: key('k') }] })).responses[0] as GetResponse;
    expect(after.value?.toString()).toBe('new');
    // The write applied below the read's timestamp: the read must have seen it (before the fix: 'old', served at once).
    expect(tsLess(after.ts, readTs)).toBe(true);
    expect(got.value?.toString(), `read at ${readTs.wall},${readTs.logical} vs the write at ${after.ts.wall},${after.ts.logical}`).toBe('new');
    expect(servedBeforeApply).toBe(false);
    expect(latched).toBe(true);
  });

  it('(b) a timed-out command that can never apply frees its latches when the lease moves', async () => {
    const { c, lh } = await steadyCluster(20);
    const store = c.store(lh);
    const r = store.replica(1)!;
    let heldId: number | undefined;
    replicaTestingKnobs.proposalFilter = (rr, cmd) => {
      if (rr !== r || cmd.isLeaseRequest) return undefined;
      if (heldId === undefined && writesKey(cmd, key('k'))) heldId = cmd.cmdId;
      return cmd.cmdId === heldId ? 'hold' : undefined;
    };
    const applied: number[] = [];
    replicaTestingKnobs.onApply = (_rr, cmd) => void applied.push(cmd.cmdId);
    const put = store.send({ header: { rangeId: 1, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: key('k'), value: Buffer.from('held') }] });
    const err = await put.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AmbiguousResultError);
    expect(r.concurrency.latches.writeLatchedAt(key('k'))).toBe(true);
    const read = c.client(lh).get(key('k'));
    expect(await answeredBeforeLatchWait(c, r, read)).toBe(false);
    const target = r.desc.replicas.find((d) => d.replicaId !== r.replicaId)!;
    await store.transferLease(1, target.replicaId);
    // The lease it was proposed under is gone: it can never apply, its latches go, the read is served (elsewhere).
    expect((await read)?.toString()).toBe('old');
    await c.waitFor(() => r.pendingProposals === 0 && !r.concurrency.latches.writeLatchedAt(key('k')), 10_000, 'the command abandoned');
    expect(applied).not.toContain(heldId);
  });
});
