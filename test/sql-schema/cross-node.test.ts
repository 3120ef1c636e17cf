/**
 * Schema changes made on one SQL node are seen by another node over the same
 * KV at its next statement, without restart (the global schema-version key):
 * a new index is used and maintained by node B's writes, a column added with
 * a default is visible with its backfilled value, a dropped index is no
 * longer maintained, and a prepared statement on B replans after the change.
 */
import { describe, it, expect, afterEach } from 'vitest';
import pg from 'pg';
import { MemoryKV } from '../support/memory-kv.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { checkIndexes } from './index-check.js';

const open: { servers: TestSqlServer[]; clients: pg.Client[] } = { servers: [], clients: [] };

afterEach(async () => {
  for (const c of open.clients.splice(0)) await c.end();
  for (const s of open.servers.splice(0)) await s.stop();
});

describe('schema changes across SQL nodes', () => {
  it('node B sees, uses and maintains what node A changed', async () => {
    const kv = new MemoryKV();
    const na = await startSqlServer({ insecure: true, kv });
    const nb = await startSqlServer({ insecure: true, kv });
    open.servers.push(na, nb);
    const a = new pg.Client(na.url);
    const b = new pg.Client(nb.url);
    await a.connect();
    await b.connect();
    open.clients.push(a, b);

    await a.query('CREATE TABLE t (k INT PRIMARY KEY, v INT)');
    await a.query('INSERT INTO t VALUES (1, 10), (2, 20)');
    const byV = { name: 'by-v', text: 'SELECT k FROM t WHERE v = $1' };
    expect((await b.query({ ...byV, values: [20] })).rows).toEqual([{ k: 2 }]); // B caches schema + plan

    await a.query('CREATE UNIQUE INDEX t_v ON t (v)');
    // B's writes maintain the index A created, and B enforces its uniqueness.
    await b.query('INSERT INTO t VALUES (3, 30)');
    await expect(b.query('INSERT INTO t VALUES (4, 30)')).rejects.toMatchObject({ code: '23505' });
    expect((await b.query('EXPLAIN SELECT k FROM t WHERE v = 30')).rows.map((r) => r.info).join('\n')).toContain('t@t_v');
    expect((await b.query({ ...byV, values: [30] })).rows).toEqual([{ k: 3 }]);
    expect((await checkIndexes(kv, 'defaultdb', 't')).problems).toEqual([]);

    await a.query("ALTER TABLE t ADD COLUMN w TEXT NOT NULL DEFAULT 'x'");
    expect((await b.query('SELECT k, w FROM t ORDER BY k')).rows).toEqual([
      { k: 1, w: 'x' },
      { k: 2, w: 'x' },
      { k: 3, w: 'x' },
    ]);
    await expect(b.query('INSERT INTO t (k, v, w) VALUES (5, 50, NULL)')).rejects.toMatchObject({ code: '23502' });

    await a.query('DROP INDEX t_v');
    await b.query('INSERT INTO t VALUES (4, 30)'); // no longer unique
    expect((await b.query({ ...byV, values: [30] })).rows.map((r) => r.k).sort()).toEqual([3, 4]);
    expect(await checkIndexes(kv, 'defaultdb', 't')).toMatchObject({ problems: [], entries: 0 });
  });
});
