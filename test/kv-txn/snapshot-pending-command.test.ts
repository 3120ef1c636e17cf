/**
 * A leaseholder's pending command covered by a Raft snapshot (issue 5;
 * 06852b9, replica.ts header "Outcomes").
 *
 * The shape: a leaseholder X that is not the Raft leader proposes a write W
 * (max lease index m). The leader L and the third replica F commit and apply
 * it; X, cut off from L's messages, does not. X then catches up by a snapshot
 * whose lease applied index is ≥ m: W is inside it. Before 06852b9, W stayed
 * pending on X; its next copy met the MLI check and — the lease still X's —
 * was proposed again under a new MLI and applied a second time on every
 * replica (its write batch re-applied over its own result: MVCC stats counted
 * twice). With 06852b9 the snapshot answers W ambiguous and drops it.
 *
 * (a) Our own log truncation never produces this shape. Truncation is a
 *     replicated command evaluated by the leaseholder, at an index it has
 *     applied itself (Store.runTruncationQueue runs on a leader that holds
 *     the lease and truncates to ≤ its applied index; cmd-truncate-log reads
 *     the term from the proposer's log), and a truncation proposed under an
 *     earlier lease applies only before the entry that gave X its lease. So
 *     under X's lease no log loses an entry X has not applied, and the leader
 *     never needs to send X a snapshot. The test builds the lagging leaseholder
 *     with the truncation queue at its most eager (1-entry log limit, every
 *     tick) and shows: nothing is truncated past X's applied index, X catches
 *     up from the log (no snapshot), W applies once, the client gets success.
 * (b) The guard itself, with the one step (a) shows our system never takes
 *     done by hand: L's Raft log is compacted locally past W (as etcd-style
 *     per-node compaction, CockroachDB's loosely coupled truncation, or a
 *     bounded log cache would). X gets a snapshot covering W; the client gets
 *     ambiguous (or success), W applies exactly once on every replica that
 *     applies it from the log and never on X, and every replica's MVCC stats
 *     equal a recount. With 06852b9 reverted this fails, every time: the
 *     client is told success, W applies twice on L and F and once on X (on
 *     top of the snapshot that holds it already) — "applications of W on L:
 *     expected 2 to be 1"; the stats then differ from a recount (keyBytes
 *     189 vs 177, valCount 9 vs 8).
 *
 * Deterministic: no ticker while the shape is built (Raft replicates on
 * message arrival; ticks only re-propose, renew and time out), X is cut off
 * by dropping the range's Raft messages arriving at its store.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { replicaTestingKnobs, type Replica } from '../../src/kv/replica.js';
import { Store } from '../../src/kv/store.js';
import { AmbiguousResultError } from '../../src/util/errors.js';
import { ZERO_TIMESTAMP } from '../../src/util/hlc.js';
import { decodeBatchRepr } from '../../storage/engine.js';
import { decodeMvccKey } from '../../storage/mvcc-key.js';
import { mvccGetSync } from '../../storage/mvcc.js';
import type { RaftCommand } from '../../src/kv/api-codec.js';

const start = autoCloseClusters();
const key = (s: string): Buffer => Buffer.from(`\x90sp-${s}`, 'latin1');
const origHandle = Store.prototype.handleRaftMessages;

afterEach(() => {
  replicaTestingKnobs.proposalFilter = undefined;
  replicaTestingKnobs.onApply = undefined;
  Store.prototype.handleRaftMessages = origHandle;
});

const writesKey = (cmd: RaftCommand, k: Buffer): boolean => decodeBatchRepr(cmd.repr).some((op) => decodeMvccKey(op.key).key.equals(k));

interface Shape {
  c: TestCluster;
  /** Node indexes: leader, leaseholder, third replica. */
  l: number;
  x: number;
  f: number;
  rl: Replica;
  rx: Replica;
  rf: Replica;
  /** W: its cmdId and MLI (set when X proposes it), its applications per node index. */
  w: { id: number; mli: number };
  appliedW: number[];
  /** The client's outcome of W: 'ok' or the error. */
  outcome: Promise<unknown>;
  /** Stops dropping the range's messages to X. */
  heal: () => void;
}

/**
 * Builds the lagging leaseholder: a 3-node cluster, r1's lease moved from its
 * leader L to X (ticker stopped first, so X does not ask for leadership and
 * nothing renews or re-proposes), X cut off from L's messages, then X
 * proposes W = put(k, 'new'); returns once L and F have applied W.
 */
async function laggingLeaseholder(settings: Parameters<typeof start>[0]['settings']): Promise<Shape> {
  // Long leases (no renewal needed while the ticker is off); elections far off (ticking X after the heal must not
  // make it hand the lease back before W is settled).
  const c = await start({ nodes: 3, settings: { electionTicks: 100, leaseDurationMicros: 60_000_000, reproposalTicks: 5, ...settings } });
  c.startTicker();
  await c.client(0).put(key('k'), Buffer.from('old'));
  await c.waitFor(() => c.leader() >= 0 && c.leader() === c.leaseholder(), 20_000, 'leader and leaseholder together');
  c.stopTicker();
  const l = c.leader();
  const x = (l + 1) % 3;
  const f = (l + 2) % 3;
  const rl = c.store(l).replica(1)!;
  const rx = c.store(x).replica(1)!;
  const rf = c.store(f).replica(1)!;
  await c.store(l).transferLease(1, rx.replicaId);
  await c.waitFor(() => rx.ownsValidLease() && c.leaseholder() === x, 10_000, 'X holds the lease');
  await c.waitFor(() => rx.applied.raftAppliedIndex === rl.applied.raftAppliedIndex && rf.applied.raftAppliedIndex === rl.applied.raftAppliedIndex, 10_000, 'all replicas caught up');
  expect(rl.isLeader()).toBe(true);

  // X hears nothing of the range from now on; its own messages (the forwarded proposal, responses) still go out.
  let drop = true;
  const xNode = c.node(x).nodeId;
  Store.prototype.handleRaftMessages = function (this: Store, b) {
    if (this.nodeId === xNode && drop) b = { ...b, messages: b.messages.filter((m) => m.rangeId !== 1) };
    origHandle.call(this, b);
  };
  const w = { id: -1, mli: -1 };
  replicaTestingKnobs.proposalFilter = (r, cmd) => {
    if (r === rx && w.id < 0 && writesKey(cmd, key('k'))) {
      w.id = cmd.cmdId;
      w.mli = cmd.maxLeaseIndex;
    }
    return undefined;
  };
  const appliedW = [0, 0, 0];
  const nodeOf = new Map<Replica, number>([
    [rl, l],
    [rx, x],
    [rf, f],
  ]);
  replicaTestingKnobs.onApply = (r, cmd) => {
    if (cmd.cmdId === w.id) appliedW[nodeOf.get(r) as number]++;
  };
  const outcome = c
    .store(x)
    .send({ header: { rangeId: 1, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: key('k'), value: Buffer.from('new') }] })
    .then(
      () => 'ok',
      (e: unknown) => e,
    );
  await c.waitFor(() => appliedW[l] === 1 && appliedW[f] === 1, 10_000, 'L and F applied W');
  expect(appliedW[x]).toBe(0);
  expect(rx.applied.leaseAppliedIndex).toBeLessThan(w.mli);
  expect(rx.pendingProposals).toBe(1);
  return { c, l, x, f, rl, rx, rf, w, appliedW, outcome, heal: () => void (drop = false) };
}

/** Ticks every store until X has nothing pending and every replica has applied L's whole log. */
async function settle(s: Shape): Promise<void> {
  const { c, rl, rx, rf } = s;
  c.startTicker();
  const caughtUp = (): boolean => {
    const last = rl.raw.raft.raftLog.lastIndex();
    return rx.pendingProposals === 0 && rl.pendingProposals === 0 && [rl, rx, rf].every((r) => r.applied.raftAppliedIndex === last);
  };
  await c.waitFor(caughtUp, 20_000, 'X settled and every replica caught up');
  c.stopTicker();
  await c.waitFor(caughtUp, 10_000, 'still caught up with the ticker off');
}

/** Every replica holds what one application of W gives: its MVCC stats equal a recount, k reads 'new', no intent. */
async function checkData(c: TestCluster): Promise<void> {
  for (const { i, r } of c.replicas(1)) {
    expect(r.applied.stats, `node ${i}: MVCC stats vs a recount`).toEqual(await c.recountStats(i));
    // The data one application gives: k reads 'new' above W, no intent.
    const got = mvccGetSync(c.node(i).engine, key('k'), { wall: c.node(i).clock.now().wall + 60_000_000, logical: 0 }, { inconsistent: true }); // above W (a new lease's writes land up to 2 max offsets ahead)
    expect(got.value?.value?.toString(), `node ${i}: k`).toBe('new');
    expect(got.intent).toBeNull();
  }
}

describe('a pending command of a lagging leaseholder (06852b9)', () => {
  it('(a) our truncation never makes the leaseholder catch up by snapshot: it catches up from the log, W applies once', async () => {
    const s = await laggingLeaseholder({ raftLogMaxEntries: 1, truncationIntervalTicks: 1 });
    const { c, l, x, f, rl, rx } = s;
    const snaps0 = c.store(x).metrics.snapshotsApplied;
    // The truncation queue at its most eager, many rounds, on every store but X: nothing may go past X's applied index.
    for (let t = 0; t < 50; t++) {
      c.store(l).tick();
      c.store(f).tick();
    }
    await c.waitFor(() => c.replicas(1).every(({ r }) => r.concurrency.activeRequests === 0 || r === rx), 10_000, 'no request running on L or F');
    expect(rl.storage.truncated.index).toBeLessThanOrEqual(rx.applied.raftAppliedIndex);
    expect(rl.storage.firstIndex()).toBeLessThanOrEqual(rx.applied.raftAppliedIndex + 1);
    s.heal();
    await settle(s);
    expect(c.store(x).metrics.snapshotsApplied, 'X caught up from the log').toBe(snaps0);
    expect(await s.outcome).toBe('ok');
    expect(s.appliedW).toEqual([1, 1, 1]);
    await checkData(c);
  }, 60_000);

  it('(b) a snapshot covering the pending command answers it ambiguous; the command applies exactly once', async () => {
    const s = await laggingLeaseholder({});
    const { c, l, x, f, rl, rx } = s;
    const snaps0 = c.store(x).metrics.snapshotsApplied;
    // The step our system never takes (see (a)): L's log compacted locally past W.
    const applied = rl.applied.raftAppliedIndex;
    const ts = { index: applied, term: rl.storage.term(applied) };
    const wb = c.node(l).engine.newBatch();
    rl.storage.stageTruncation(wb, ts);
    await c.node(l).engine.write(wb);
    rl.storage.commitTruncation(ts);
    expect(rl.storage.firstIndex()).toBeGreaterThan(rx.applied.raftAppliedIndex + 1);
    s.heal();
    // L's next append to X (a heartbeat's response shows X behind) finds the entries gone: a snapshot.
    await settle(s);
    expect(c.store(x).metrics.snapshotsApplied, 'X caught up by a snapshot').toBe(snaps0 + 1);
    const outcome = await s.outcome;
    console.log(`snapshot-pending-command (b): client outcome ${outcome === 'ok' ? 'success' : String(outcome)}; applications of W by node [L ${s.appliedW[l]}, X ${s.appliedW[x]}, F ${s.appliedW[f]}]`);
    if (outcome !== 'ok') expect(outcome).toBeInstanceOf(AmbiguousResultError);
    // Exactly once: L and F applied it from the log, X got it inside the snapshot (before 06852b9: twice on each).
    expect(s.appliedW[l], 'applications of W on L').toBe(1);
    expect(s.appliedW[f], 'applications of W on F').toBe(1);
    expect(s.appliedW[x], 'applications of W on X').toBe(0);
    await checkData(c);
  }, 60_000);
});
