/**
 * The query-feature logic tests (joins, aggregation, DISTINCT, set operations,
 * subqueries, CTEs, VALUES, …) on the real transactional KV: an in-process
 * 3-node cluster (src/kv TxnDB) serving SQL through pgwire — the same files
 * logic.test.ts runs on MemoryKV.
 *
 * SELECT … FOR UPDATE over a join reads both inputs with the exclusive lock
 * (EXPLAIN shows it) and a concurrent UPDATE of a locked row never makes the
 * locker's read-modify-write lose an update. (Today's KV lets the writer
 * through and fails the locker with 40001 rather than queueing the writer.)
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { TestCluster, type TestClusterOptions } from '../support/test-cluster.js';
import { startTxnCluster } from '../kv-txn/support.js';
import { runSltFile } from '../sql/slt-runner.js';

const DIR = join(import.meta.dirname, '../../sql/testdata/logic');
const FILES = readdirSync(DIR).filter((f) => f.endsWith('.slt') && /^(join|aggregate|distinct|setop|subquery|cte|window|values|array|jsonb|for-update|memory)/.test(f)).sort();
let cluster: TestCluster | undefined;
const startCluster = async (opts: TestClusterOptions): Promise<TestCluster> => {
  cluster = await TestCluster.start(opts);
  return cluster;
};

describe('query logic tests on the real KV (3-node in-process cluster)', () => {
  let srv: TestSqlServer;
  beforeAll(async () => {
    const { dbs } = await startTxnCluster(startCluster);
    srv = await startSqlServer({ insecure: true, db: dbs[0] });
  }, 120_000);
  afterAll(async () => {
    await srv?.stop();
    await cluster?.close();
  });

  for (const file of FILES) {
    it(file, async () => {
      const db = `slt_${file.replace(/\W/g, '_')}`;
      const admin = new pg.Client(srv.url);
      await admin.connect();
      await admin.query(`CREATE DATABASE ${db}`);
      await admin.end();
      await runSltFile(join(DIR, file), file, srv.url.replace(/\/defaultdb$/, `/${db}`));
      expect(srv.internalErrors).toEqual([]);
    }, 120_000);
  }

  it('reads both join inputs with the exclusive lock; no lost update', async () => {
    const a = new pg.Client(srv.url);
    const b = new pg.Client(srv.url);
    await a.connect();
    await b.connect();
    try {
      await a.query('CREATE TABLE acct (id INT PRIMARY KEY, owner INT, bal INT)');
      await a.query('CREATE TABLE owner (id INT PRIMARY KEY, name TEXT)');
      await a.query("INSERT INTO owner VALUES (1, 'ann'), (2, 'bob')");
      await a.query('INSERT INTO acct VALUES (10, 1, 100), (11, 2, 50)');
      const plan = (await a.query('EXPLAIN SELECT acct.bal FROM acct JOIN owner ON owner.id = acct.owner WHERE acct.id = 10 FOR UPDATE')).rows.map((r: Record<string, string>) => Object.values(r)[0]).join('\n');
      expect(plan).toMatch(/lookup join[\s\S]*locking strength: for update/);
      expect(plan).toMatch(/scan[\s\S]*locking strength: for update/);

      await a.query('BEGIN');
      const r = await a.query("SELECT acct.bal FROM acct JOIN owner ON owner.id = acct.owner WHERE owner.name = 'ann' FOR UPDATE");
      expect(r.rows).toEqual([{ bal: 100 }]);
      // A concurrent write of a locked row: either it waits for A (A's
      // read-modify-write commits first), or A fails with 40001 — never a lost update.
      const order: string[] = [];
      const other = b.query('UPDATE acct SET bal = 0 WHERE id = 10').then(() => order.push('b updated'));
      let aErr: string | undefined;
      try {
        await a.query('UPDATE acct SET bal = bal + 1 WHERE id = 10');
        await a.query('COMMIT');
        order.push('a committed');
      } catch (e) {
        aErr = (e as { code?: string }).code;
        await a.query('ROLLBACK');
      }
      await other;
      const bal = (await a.query('SELECT bal FROM acct WHERE id = 10')).rows[0].bal as number;
      if (aErr === undefined) {
        expect(order[0]).toBe('a committed');
        expect(bal).toBe(0);
      } else {
        expect(aErr).toBe('40001');
        expect(bal).toBe(0);
      }
      expect(srv.internalErrors).toEqual([]);
    } finally {
      await a.end();
      await b.end();
    }
  }, 60_000);
});
