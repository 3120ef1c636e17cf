/**
 * AS OF SYSTEM TIME bounded by the GC threshold, over pgwire on a real
 * 3-node cluster (issue 5: "AS OF SYSTEM TIME reads at a historical
 * timestamp (bounded by the GC threshold)"). A row written 'old' and then,
 * 1.5 s later, 'new':
 *   - before GC, `SELECT … AS OF SYSTEM TIME '<old commit ts>'` and
 *     `… AS OF SYSTEM TIME '-Xs'` (X reaching back past the old write) read
 *     'old';
 *   - the GC queue's run on the table's range (TTL shortened to 0.2 s, once
 *     the clock has passed the new write + TTL) raises the threshold above
 *     both writes and collects 'old';
 *   - then the same queries, and BEGIN AS OF SYSTEM TIME, get a clean
 *     ErrorResponse with SQLSTATE 22023 (CockroachDB's class for a timestamp
 *     before the GC threshold) naming both timestamps, and the session stays
 *     usable: the current value, and an AS OF SYSTEM TIME above the threshold,
 *     read 'new'.
 */
import { describe, it, expect, afterEach } from 'vitest';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster } from '../kv-txn/support.js';
import { runGc } from '../../src/kv/gc-queue.js';
import { tsLess, type Timestamp } from '../../src/util/hlc.js';
import { rangeOf, waitThreshold } from './support.js';

const start = autoCloseClusters();
let srv: TestSqlServer | undefined;
afterEach(async () => {
  await srv?.stop();
  srv = undefined;
});

/** cluster_logical_timestamp()'s decimal (wall nanos . logical) as an HLC timestamp. */
function parseDecimalTs(s: string): Timestamp {
  const [nanos, logical] = s.split('.') as [string, string | undefined];
  return { wall: Number(BigInt(nanos) / 1000n), logical: logical === undefined ? 0 : Number(logical) };
}

/** '-Xs' reaching back from now to no earlier than `ts` (X floored to the millisecond). */
function intervalBackTo(ts: Timestamp): string {
  const ms = Math.floor((Date.now() * 1000 - ts.wall) / 1000);
  return `-${(ms / 1000).toFixed(3)}s`;
}

describe('AS OF SYSTEM TIME and the GC threshold over pgwire (issue 5)', () => {
  it('reads the old value before GC; after the threshold passes it, 22023 and the session goes on', async () => {
    const { c, dbs } = await startTxnCluster(start, { nodes: 3 });
    srv = await startSqlServer({ insecure: true, db: dbs[0] });
    const client = new pg.Client(srv.url);
    await client.connect();
    try {
      await client.query('CREATE TABLE t (k INT PRIMARY KEY, v TEXT)');
      const split = await client.query('ALTER TABLE t SPLIT AT VALUES (0)');
      const tableStart = (split.rows[0] as { key: Buffer }).key;
      const oldRaw = (await client.query(`INSERT INTO t VALUES (1, 'old') RETURNING cluster_logical_timestamp()::STRING AS ts`)).rows[0].ts as string;
      const tsOld = parseDecimalTs(oldRaw);
      await c.waitFor(() => c.node(0).clock.now().wall > tsOld.wall + 1_500_000, 5_000, 'the clock 1.5 s past the old write');
      const newRaw = (await client.query(`UPDATE t SET v = 'new' WHERE k = 1 RETURNING cluster_logical_timestamp()::STRING AS ts`)).rows[0].ts as string;
      const tsNew = parseDecimalTs(newRaw);

      expect((await client.query(`SELECT v FROM t AS OF SYSTEM TIME '${oldRaw}' WHERE k = 1`)).rows).toEqual([{ v: 'old' }]);
      expect((await client.query(`SELECT v FROM t AS OF SYSTEM TIME '${intervalBackTo(tsOld)}' WHERE k = 1`)).rows).toEqual([{ v: 'old' }]);
      expect((await client.query(`SELECT v FROM t AS OF SYSTEM TIME '${newRaw}' WHERE k = 1`)).rows).toEqual([{ v: 'new' }]);

      // The GC queue's work on the table's range, TTL 0.2 s, once the clock has passed the new write + TTL.
      const ttl = 0.2;
      const d = rangeOf(c, tableStart);
      await c.waitFor(() => c.leaseholder(d.rangeId) >= 0 && c.node(c.leaseholder(d.rangeId)).clock.now().wall > tsNew.wall + ttl * 1e6 + 1000, 5_000, 'the clock past the new write + TTL');
      const lh = c.leaseholder(d.rangeId);
      const run = await runGc(c.store(lh), c.store(lh).replica(d.rangeId)!, ttl);
      expect(tsLess(tsNew, run.threshold)).toBe(true);
      expect(run.keys).toBeGreaterThanOrEqual(1);
      await waitThreshold(c, d.rangeId, run.threshold);

      for (const asOf of [oldRaw, intervalBackTo(tsOld), newRaw]) {
        const err = await client.query(`SELECT v FROM t AS OF SYSTEM TIME '${asOf}' WHERE k = 1`).then(
          () => null,
          (e: unknown) => e as { code?: string; message?: string },
        );
        expect(err?.code, `AS OF SYSTEM TIME '${asOf}'`).toBe('22023');
        expect(err?.message).toMatch(/batch timestamp \S+ must be after replica GC threshold \S+/);
      }
      // The session is usable: the current value; above the threshold, history still reads.
      expect((await client.query('SELECT v FROM t WHERE k = 1')).rows).toEqual([{ v: 'new' }]);
      const above = `${BigInt(run.threshold.wall + 1) * 1000n}.0000000000`;
      expect((await client.query(`SELECT v FROM t AS OF SYSTEM TIME '${above}' WHERE k = 1`)).rows).toEqual([{ v: 'new' }]);

      // An explicit historical transaction fails the same way and rolls back cleanly.
      await client.query(`BEGIN AS OF SYSTEM TIME '${oldRaw}'`);
      await expect(client.query('SELECT v FROM t WHERE k = 1')).rejects.toMatchObject({ code: '22023' });
      await client.query('ROLLBACK');
      expect((await client.query('SELECT count(*)::INT AS n FROM t')).rows).toEqual([{ n: 1 }]);
    } finally {
      await client.end();
    }
  }, 60_000);
});
