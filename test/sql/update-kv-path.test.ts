/**
 * What a single-row UPDATE by primary key costs on the real KV (issue 6's
 * bench UPDATE, YCSB A's update): an implicit transaction whose row read is
 * a locking get (sql/exec/mutation.ts, "implicit SELECT FOR UPDATE") served
 * on the leaseholder's point-read fast path (replica.ts serveReadsFast: no
 * latches, no lock-table guard), leaving an unreplicated lock that the
 * commit releases — counted, never timed:
 *   - N UPDATEs of N distinct, unblocked rows: N fast locking gets, no
 *     lock-table waits, no restarts or refreshes (the node's TxnDB also runs
 *     the descriptor-lease ticks, so commits are not counted), every row
 *     updated, and no lock left behind once the writes applied;
 *   - the same inside explicit transactions (BEGIN; SELECT … FOR UPDATE;
 *     UPDATE; COMMIT): the FOR UPDATE read is fast too, and the lock it
 *     leaves is held until COMMIT (another session's UPDATE of the row waits
 *     for it, then applies on top).
 */
import { describe, it, expect } from 'vitest';
import type { TestCluster } from '../support/test-cluster.js';
import type { TestSqlServer } from '../support/sql-server.js';
import type { Replica } from '../../src/kv/replica.js';
import { realKvSql } from './real-kv-support.js';

const sql = realKvSql();

function replicas(c: TestCluster): Replica[] {
  return [0, 1, 2].flatMap((i) => c.node(i).store?.allReplicas() ?? []);
}
const sum = (c: TestCluster, f: (r: Replica) => number): number => replicas(c).reduce((a, r) => a + f(r), 0);

describe('single-row UPDATE on the real KV', () => {
  it('implicit: one fast locking get per UPDATE, nothing waits or restarts, no lock left', async () => {
    // 1 s election timeouts and 10 s leases (as test/kv-locks/lock-wait): a lease that lapsed or moved under load would
    // rightly send a locking get down the sequenced path, and the counts below are about the steady state.
    const { c, dbs } = await sql.start({ settings: { electionTicks: 100, leaseDurationMicros: 10_000_000 } });
    const db = dbs[0]!;
    const a = await sql.client(await sql.server(db));
    await a.query('CREATE TABLE kvu (id INT8 PRIMARY KEY, v TEXT)');
    const n = 20;
    await a.query(`INSERT INTO kvu SELECT i, 'x' FROM generate_series(1, ${n}) AS g(i)`);
    // Every write applied on its leaseholder (latches released), so no UPDATE below finds its row latched.
    await c.waitFor(() => replicas(c).every((r) => r.concurrency.activeRequests === 0), 10_000, 'no request in flight');

    const fast0 = sum(c, (r) => r.concurrency.fastLockingReads);
    const waits0 = sum(c, (r) => r.concurrency.counters.lockWaits);
    const m0 = { ...db.metrics };
    for (let i = 1; i <= n; i++) {
      const res = await a.query({ name: 'upd', text: 'UPDATE kvu SET v = $2 WHERE id = $1', values: [i, `u${i}`] });
      expect(res.rowCount).toBe(1);
    }
    expect(sum(c, (r) => r.concurrency.fastLockingReads) - fast0).toBe(n);
    expect(sum(c, (r) => r.concurrency.counters.lockWaits) - waits0).toBe(0);
    expect(db.metrics.restarts - m0.restarts).toBe(0);
    expect(db.metrics.refreshes - m0.refreshes).toBe(0);
    // The 1PC commits released the unreplicated locks when they applied.
    await c.waitFor(() => replicas(c).every((r) => r.concurrency.lockTable.metrics().held === 0), 10_000, 'no lock held');
    expect((await a.query('SELECT id, v FROM kvu ORDER BY id')).rows).toEqual(Array.from({ length: n }, (_, i) => ({ id: String(i + 1), v: `u${i + 1}` })));
  });

  it('explicit: SELECT … FOR UPDATE is served fast and its lock holds another UPDATE until COMMIT', async () => {
    const c = sql.cluster as TestCluster;
    const srv = sql.servers[0] as TestSqlServer;
    const [a, b] = await Promise.all([sql.client(srv), sql.client(srv)]);
    if (a === undefined || b === undefined) throw new Error('clients');
    await c.waitFor(() => replicas(c).every((r) => r.concurrency.activeRequests === 0), 10_000, 'no request in flight');
    const fast0 = sum(c, (r) => r.concurrency.fastLockingReads);
    await a.query('BEGIN');
    expect((await a.query('SELECT v FROM kvu WHERE id = 3 FOR UPDATE')).rows).toEqual([{ v: 'u3' }]);
    expect(sum(c, (r) => r.concurrency.fastLockingReads) - fast0).toBe(1);
    const waits0 = sum(c, (r) => r.concurrency.counters.lockWaits);
    const other = b.query("UPDATE kvu SET v = v || '+b' WHERE id = 3");
    // The other session's locking read queues on the lock (a wait begins), and nothing lets it past before COMMIT.
    await c.waitFor(() => sum(c, (r) => r.concurrency.counters.lockWaits) > waits0, 10_000, "the other UPDATE's lock wait");
    await a.query("UPDATE kvu SET v = v || '+a' WHERE id = 3");
    await a.query('COMMIT');
    expect((await other).rowCount).toBe(1);
    expect((await a.query('SELECT v FROM kvu WHERE id = 3')).rows).toEqual([{ v: 'u3+a+b' }]);
  });
});
