/**
 * Descriptor caching across nodes (sql/catalog/catalog.ts): two SQL servers
 * ("nodes") over one MemoryKV each keep their own cached snapshot. A schema
 * change on one node must be seen by the other's next statement — never a
 * stale or half-applied schema — with at most a transparent retry.
 */
import { describe, it, expect, afterEach } from 'vitest';
import pg from 'pg';
import { MemoryKV } from '../support/memory-kv.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

const open: { servers: TestSqlServer[]; clients: pg.Client[] } = { servers: [], clients: [] };

afterEach(async () => {
  for (const c of open.clients.splice(0)) await c.end();
  for (const s of open.servers.splice(0)) await s.stop();
});

async function twoNodes(): Promise<[pg.Client, pg.Client, TestSqlServer, TestSqlServer]> {
  const kv = new MemoryKV();
  const a = await startSqlServer({ insecure: true, kv });
  const b = await startSqlServer({ insecure: true, kv });
  open.servers.push(a, b);
  const ca = new pg.Client(a.url);
  const cb = new pg.Client(b.url);
  await ca.connect();
  await cb.connect();
  open.clients.push(ca, cb);
  return [ca, cb, a, b];
}

describe('catalog cache across nodes', () => {
  it('a table created on node A is visible to node B at once', async () => {
    const [a, b] = await twoNodes();
    await b.query('SELECT 1'); // B caches the empty schema
    await a.query('CREATE TABLE t (k INT PRIMARY KEY, v TEXT)');
    await a.query("INSERT INTO t VALUES (1, 'one')");
    expect((await b.query('SELECT v FROM t WHERE k = 1')).rows).toEqual([{ v: 'one' }]);
    expect((await b.query('SHOW TABLES')).rows.map((r) => r.table_name)).toEqual(['t']);
  });

  it('a table dropped and re-created with other columns on A is re-planned on B (SchemaChangedError retried)', async () => {
    const [a, b] = await twoNodes();
    await a.query('CREATE TABLE t (k INT PRIMARY KEY, v TEXT)');
    await a.query("INSERT INTO t VALUES (1, 'old')");
    expect((await b.query('SELECT * FROM t')).rows).toEqual([{ k: 1, v: 'old' }]);
    await a.query('DROP TABLE t');
    await a.query('CREATE TABLE t (k INT PRIMARY KEY, w INT)');
    await a.query('INSERT INTO t VALUES (2, 22)');
    expect((await b.query('SELECT * FROM t')).rows).toEqual([{ k: 2, w: 22 }]);
    // A prepared statement planned before the change is re-planned (its columns changed under it: 42703 now).
    await expect(b.query({ name: 'pv', text: 'SELECT v FROM t WHERE k = $1', values: [2] })).rejects.toMatchObject({ code: '42703' });
  });

  it('a transaction that read the schema before a concurrent DDL commits cannot commit after it', async () => {
    const [a, b] = await twoNodes();
    await a.query('CREATE TABLE t (k INT PRIMARY KEY)');
    await b.query('BEGIN');
    await b.query('INSERT INTO t VALUES (1)');
    await a.query('DROP TABLE t');
    await expect(b.query('COMMIT')).rejects.toMatchObject({ code: '40001' });
    await expect(b.query('SELECT * FROM t')).rejects.toMatchObject({ code: '42P01' });
  });

  it('DDL inside an explicit transaction stays invisible to the other node until COMMIT', async () => {
    const [a, b] = await twoNodes();
    await a.query('BEGIN');
    await a.query('CREATE TABLE pending (k INT PRIMARY KEY)');
    await a.query('INSERT INTO pending VALUES (7)');
    await expect(b.query('SELECT * FROM pending')).rejects.toMatchObject({ code: '42P01' });
    await a.query('COMMIT');
    expect((await b.query('SELECT k FROM pending')).rows).toEqual([{ k: 7 }]);
  });
});
