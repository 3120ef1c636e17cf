/**
 * The apply rules of replica.ts, driven directly: hand-built Raft commands
 * proposed straight into a single-node range's Raft group.
 *   - copies of one command (same max lease index) apply exactly once: the
 *     lease-applied index rule rejects the rest (CockroachDB's MLI rule);
 *   - a command evaluated under another lease sequence never applies;
 *   - a lease request applies only over the lease it names as previous.
 * Rejected commands leave data and MVCC stats untouched (stats = recount).
 */
import { describe, it, expect } from 'vitest';
import { emptyStats } from '../../storage/mvcc-stats.js';
import { mvccPut } from '../../storage/mvcc.js';
import { encodeRaftCommand, type RaftCommand } from '../../src/kv/api-codec.js';
import { autoCloseClusters } from '../support/test-cluster.js';

const k = (s: string): Buffer => Buffer.from(`\x90${s}`, 'latin1');

const startCluster = autoCloseClusters();

describe('apply rules', () => {
  it('applies a command once however often it is proposed, and never under a stale lease', async () => {
    const c = await startCluster({ nodes: 1 });
    c.startTicker();
    const kv = c.client(0);
    await kv.put(k('warm'), Buffer.from('w'));
    const store = c.store(0);
    const r = store.replica(1)!;
    const lease = r.lease!;
    const command = (key: string, leaseSeq: number, mli: number): Buffer => {
      const b = c.node(0).engine.newBatch();
      const stats = emptyStats();
      mvccPut(b, k(key), c.node(0).clock.now(), Buffer.from(key), { stats });
      const cmd: RaftCommand = { cmdId: store.nextCmdId(), leaseSeq, maxLeaseIndex: mli, isLeaseRequest: false, prevLease: null, repr: b.repr(), stats, sideEffects: {} };
      return encodeRaftCommand(cmd);
    };
    const proposeAndWait = async (datas: Buffer[]): Promise<void> => {
      const target = r.applied.raftAppliedIndex + datas.length;
      r.raw.proposeBatch(datas);
      store.enqueueReady(r);
      await c.waitFor(() => r.applied.raftAppliedIndex >= target, 5_000, 'the entries to apply');
    };
    const rejected0 = store.metrics.rejectedCommands;
    const dup = command('dup', lease.sequence, r.applied.leaseAppliedIndex + 1);
    await proposeAndWait([dup, dup, dup]);
    expect(store.metrics.rejectedCommands - rejected0).toBe(2);
    expect((await kv.get(k('dup')))?.toString()).toBe('dup');

    const rejected1 = store.metrics.rejectedCommands;
    await proposeAndWait([command('stale', lease.sequence + 7, r.applied.leaseAppliedIndex + 1)]);
    expect(store.metrics.rejectedCommands - rejected1).toBe(1);
    expect(await kv.get(k('stale'))).toBeNull();
    expect(r.applied.stats).toEqual(await c.recountStats(0));

    // A lease request naming a lease that is not the one in force is rejected.
    const cur = r.lease!;
    const bogusPrev = { ...cur, sequence: cur.sequence + 3 };
    const leaseCmd: RaftCommand = {
      cmdId: store.nextCmdId(),
      leaseSeq: bogusPrev.sequence,
      maxLeaseIndex: 0,
      isLeaseRequest: true,
      prevLease: bogusPrev,
      repr: c.node(0).engine.newBatch().repr(),
      stats: emptyStats(),
      sideEffects: { newLease: { ...cur, sequence: cur.sequence + 4 } },
    };
    await proposeAndWait([encodeRaftCommand(leaseCmd)]);
    expect(r.lease?.sequence).toBe(cur.sequence);
  });
});
