/**
 * Join and subquery plan choices that the issue-7 benchmark depends on
 * (bench:sql join-10 timed out while the join scanned the whole right table):
 * a join whose left side is a point lookup reads the right table through its
 * index per left row (index nested loop); a left side of many rows keeps the
 * hash join; equality on the right's whole primary key keeps the batched
 * lookup join; a correlated subquery reads through the index too.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

describe('join choice', () => {
  let srv: TestSqlServer;
  let c: pg.Client;
  const explain = async (sql: string): Promise<string> => (await c.query(`EXPLAIN ${sql}`)).rows.map((r: Record<string, string>) => Object.values(r)[0]).join('\n');
  beforeAll(async () => {
    srv = await startSqlServer();
    c = new pg.Client(srv.url);
    await c.connect();
    await c.query('CREATE TABLE jp (pid INT8 PRIMARY KEY, name TEXT)');
    await c.query('CREATE TABLE jr (id INT8 PRIMARY KEY, g INT8 NOT NULL, v TEXT)');
    await c.query('CREATE INDEX jr_g ON jr (g)');
    await c.query("INSERT INTO jp SELECT i, 'p' || i FROM generate_series(0, 9) i");
    await c.query("INSERT INTO jr SELECT i, i / 10, 'v' || i FROM generate_series(0, 99) i");
  });
  afterAll(async () => {
    await c?.end();
    await srv?.stop();
  });

  it('a point-lookup left side reads the right table through its index per left row', async () => {
    const q = 'SELECT p.name, r.id, r.v FROM jp p JOIN jr r ON r.g = p.pid WHERE p.pid = $1';
    const plan = await explain(q.replace('$1', '7'));
    expect(plan).toMatch(/apply \(lateral join\)[\s\S]*index nested loop/);
    expect(plan).toMatch(/table: jr@jr_g\s+spans: \/p\.pid/);
    const r = await c.query(q, [7]);
    expect(r.rows.map((x: { id: string }) => Number(x.id))).toEqual([70, 71, 72, 73, 74, 75, 76, 77, 78, 79]);
  });

  it('a many-row left side keeps the hash join; the whole right primary key keeps the lookup join', async () => {
    expect(await explain('SELECT * FROM jp p JOIN jr r ON r.g = p.pid')).toMatch(/hash join/);
    expect(await explain('SELECT * FROM jr r JOIN jp p ON p.pid = r.g')).toMatch(/lookup join/);
    expect(await explain('SELECT * FROM jr r JOIN jp p ON p.pid = r.g WHERE r.id = 5')).toMatch(/lookup join/);
  });

  it('a correlated subquery reads the inner table through its index', async () => {
    const plan = await explain('SELECT p.pid, (SELECT count(*) FROM jr WHERE jr.g = p.pid) FROM jp p');
    expect(plan).toMatch(/apply \(correlated subquery\)[\s\S]*table: jr@jr_g\s+spans: \/p\.pid/);
    const r = await c.query('SELECT p.pid, (SELECT count(*) FROM jr WHERE jr.g = p.pid) AS n FROM jp p ORDER BY 1 LIMIT 2');
    expect(r.rows).toEqual([{ pid: '0', n: '10' }, { pid: '1', n: '10' }]);
  });
});
