/**
 * SQL's range statements against three real `cairn start` processes over TCP,
 * driven by `pg`: SPLIT AT through one node, SHOW RANGES and the rows through
 * another, SCATTER through a third — the lease moves go through each holder's
 * own node (src/server/sql-server.ts nodeLeaseTransferer); the boundaries
 * outlive the merge queue's cold time (sticky manual splits) and the leases
 * are still spread after it. Issue 6: "SHOW
 * RANGES FROM TABLE t, ALTER TABLE t SPLIT AT VALUES (…)"; CockroachDB's
 * ALTER TABLE … SCATTER.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { bounds, type RangeRow } from './support.js';
import { ProcessCluster } from '../support/process-cluster.js';

let c: ProcessCluster;

beforeAll(async () => {
  c = await ProcessCluster.start({ nodes: 3 });
}, 120_000);

afterAll(async () => {
  await c?.close();
});

async function connect(i: number): Promise<pg.Client> {
  const client = new pg.Client({ host: '127.0.0.1', port: c.node(i).spec.sqlPort, user: 'root', database: 'defaultdb' });
  await client.connect();
  return client;
}

describe('SPLIT AT, SHOW RANGES and SCATTER on three processes', () => {
  it('splits a loaded table, shows replicas and leaseholders, keeps every row readable everywhere, and spreads the leases', async () => {
    const [a, b, d] = [await connect(0), await connect(1), await connect(2)];
    try {
      await a.query('CREATE TABLE usertable (k INT PRIMARY KEY, v TEXT NOT NULL)');
      for (let i = 0; i < 1000; i += 250) {
        const vals = Array.from({ length: 250 }, (_, j) => `(${i + j}, 'row-${i + j}')`).join(', ');
        await a.query(`INSERT INTO usertable VALUES ${vals}`);
      }
      const split = await a.query('ALTER TABLE usertable SPLIT AT VALUES (250), (500), (750)');
      expect(split.rowCount).toBe(3);

      const ranges = (await b.query<RangeRow>('SHOW RANGES FROM TABLE usertable')).rows;
      expect(bounds(ranges)).toEqual([
        ['…', '/1/250'],
        ['/1/250', '/1/500'],
        ['/1/500', '/1/750'],
        ['/1/750', '…'],
      ]);
      for (const r of ranges) {
        expect(r.replicas).toBe('{1,2,3}');
        expect(['1', '2', '3']).toContain(r.lease_holder);
      }
      // Every row, through every node.
      for (const client of [a, b, d]) {
        const n = await client.query<{ n: number; s: string }>('SELECT count(*)::int AS n, sum(k)::text AS s FROM usertable');
        expect(n.rows[0]).toEqual({ n: 1000, s: String((999 * 1000) / 2) });
      }

      const scattered = (await d.query<RangeRow>('ALTER TABLE usertable SCATTER')).rows;
      expect(scattered.length).toBe(4);
      const after = (await a.query<RangeRow>('SHOW RANGES FROM TABLE usertable')).rows;
      expect(bounds(after)).toEqual(bounds(ranges));
      expect(new Set(after.map((r) => r.lease_holder)).size).toBeGreaterThan(1);

      // Over the merge queue's cold time (10 s, then its scan): the manual boundaries are sticky — not
      // merged back. The leases are still spread afterwards (a moved lease pulls the Raft leadership along;
      // allowed a bounded moment to settle should a liveness blip under load have moved one meanwhile).
      const until = Date.now() + 13_000;
      let spread = 0;
      while (Date.now() < until) {
        const now = (await b.query<RangeRow>('SHOW RANGES FROM TABLE usertable')).rows;
        expect(bounds(now)).toEqual(bounds(ranges));
        spread = new Set(now.map((r) => r.lease_holder)).size;
        await new Promise((r) => setTimeout(r, 1_000));
      }
      for (const deadline = Date.now() + 10_000; spread <= 1 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
        spread = new Set((await b.query<RangeRow>('SHOW RANGES FROM TABLE usertable')).rows.map((r) => r.lease_holder)).size;
      }
      expect(spread).toBeGreaterThan(1);

      // Reads and writes with the leases spread: point reads on every range, an update across all of them.
      for (const k of [0, 300, 600, 999]) expect((await b.query('SELECT v FROM usertable WHERE k = $1', [k])).rows).toEqual([{ v: `row-${k}` }]);
      expect((await d.query(`UPDATE usertable SET v = 'x' WHERE k % 100 = 0`)).rowCount).toBe(10);
      expect((await a.query(`SELECT count(*)::int AS n FROM usertable WHERE v = 'x'`)).rows).toEqual([{ n: 10 }]);
    } finally {
      await Promise.all([a.end(), b.end(), d.end()]);
    }
  }, 120_000);
});
