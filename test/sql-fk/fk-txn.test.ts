/**
 * Foreign keys are enforced inside the writing transaction (issue 7,
 * sql/exec/fk-actions.ts): the check reads the other side in the same
 * serializable transaction, so a concurrent change of that side either is
 * seen or makes one of the two transactions fail with 40001 — never both
 * commit into an orphaned child. Over pgwire on MemoryKV and on the real KV (3-node in-process cluster).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { TestCluster, type TestClusterOptions } from '../support/test-cluster.js';
import { startTxnCluster } from '../kv-txn/support.js';

async function client(url: string): Promise<pg.Client> {
  const c = new pg.Client(url);
  await c.connect();
  return c;
}

/** Runs `f`, returning the SQLSTATE it failed with, or 'ok'. */
async function outcome(f: () => Promise<unknown>): Promise<string> {
  try {
    await f();
    return 'ok';
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

/**
 * A inserts a child of parent i (reading p(i)) while B deletes p(i) (ON
 * DELETE CASCADE: reading c's FK index); B's DELETE is sent before A commits
 * and awaited after (on the real KV it may wait on A's lock). Whatever
 * commits, no child is left without its parent; on MemoryKV (optimistic)
 * exactly one of the two commits.
 */
async function raceChildInsertParentDelete(url: string, base: number, optimistic = true): Promise<void> {
  const setup = await client(url);
  const a = await client(url);
  const b = await client(url);
  try {
    for (let i = base; i < base + 5; i++) {
      await setup.query('INSERT INTO p VALUES ($1)', [i]);
      await a.query('BEGIN');
      await b.query('BEGIN');
      await a.query('INSERT INTO c VALUES ($1, $2)', [100 + i, i]); // reads p(i): present
      const del = outcome(() => b.query('DELETE FROM p WHERE id = $1', [i]));
      const ra = await outcome(() => a.query('COMMIT'));
      const rd = await del;
      const rb = rd === 'ok' ? await outcome(() => b.query('COMMIT')) : rd;
      if (ra !== 'ok') await a.query('ROLLBACK').catch(() => undefined);
      if (rb !== 'ok') await b.query('ROLLBACK').catch(() => undefined);
      for (const r of [ra, rb]) expect(['ok', '40001']).toContain(r);
      if (optimistic) expect([ra, rb].filter((x) => x === 'ok').length, `${ra} ${rb}`).toBe(1);
      const orphans = await setup.query('SELECT count(*)::INT AS n FROM c WHERE pid NOT IN (SELECT id FROM p)');
      expect(orphans.rows[0].n).toBe(0);
      const parent = (await setup.query('SELECT count(*)::INT AS n FROM p WHERE id = $1', [i])).rows[0].n;
      const child = (await setup.query('SELECT count(*)::INT AS n FROM c WHERE id = $1', [100 + i])).rows[0].n;
      expect(parent, `${ra} ${rb}`).toBe(rb === 'ok' ? 0 : 1);
      expect(child, `${ra} ${rb}`).toBe(ra === 'ok' && rb !== 'ok' ? 1 : 0);
    }
  } finally {
    await Promise.all([setup.end(), a.end(), b.end()]);
  }
}

describe('foreign keys under concurrent transactions', () => {
  let srv: TestSqlServer;
  beforeAll(async () => {
    srv = await startSqlServer();
    const c = await client(srv.url);
    await c.query('CREATE TABLE p (id INT PRIMARY KEY)');
    await c.query('CREATE TABLE c (id INT PRIMARY KEY, pid INT REFERENCES p ON DELETE CASCADE)');
    await c.end();
  });
  afterAll(async () => {
    await srv?.stop();
  });

  it('insert of a child racing the delete of its parent: never an orphan', async () => {
    await raceChildInsertParentDelete(srv.url, 0);
  });

  it('a failed check rolls back the statement only; the transaction reports 25P02 after it', async () => {
    const c = await client(srv.url);
    try {
      await c.query('INSERT INTO p VALUES (50)');
      await c.query('BEGIN');
      await c.query('INSERT INTO c VALUES (500, 50)');
      const err = await outcome(() => c.query('INSERT INTO c VALUES (501, 51)'));
      expect(err).toBe('23503');
      expect(await outcome(() => c.query('SELECT 1'))).toBe('25P02');
      await c.query('ROLLBACK');
      const n = await c.query('SELECT count(*)::INT AS n FROM c WHERE id >= 500');
      expect(n.rows[0].n).toBe(0);
    } finally {
      await c.end();
    }
  });

  it('SHOW CREATE TABLE lists the foreign keys', async () => {
    const c = await client(srv.url);
    try {
      const r = await c.query('SHOW CREATE TABLE c');
      expect(r.rows[0].create_statement).toContain('CONSTRAINT c_pid_fkey FOREIGN KEY (pid) REFERENCES p(id) ON DELETE CASCADE');
    } finally {
      await c.end();
    }
  });

  it('the error carries PostgreSQL detail and constraint fields', async () => {
    const c = await client(srv.url);
    try {
      const e = await c.query('INSERT INTO c VALUES (600, 12345)').catch((x: unknown) => x as pg.DatabaseError);
      expect((e as pg.DatabaseError).code).toBe('23503');
      expect((e as pg.DatabaseError).detail).toBe('Key (pid)=(12345) is not present in table "p".');
      await c.query('INSERT INTO p VALUES (60)');
      await c.query('CREATE TABLE r (id INT PRIMARY KEY, pid INT REFERENCES p)');
      await c.query('INSERT INTO r VALUES (1, 60)');
      const d = await c.query('DELETE FROM p WHERE id = 60').catch((x: unknown) => x as pg.DatabaseError);
      expect((d as pg.DatabaseError).message).toBe('update or delete on table "p" violates foreign key constraint "r_pid_fkey" on table "r"');
      expect((d as pg.DatabaseError).detail).toBe('Key (id)=(60) is still referenced from table "r".');
    } finally {
      await c.end();
    }
  });
});

describe('foreign keys under concurrent transactions on the real KV (3-node in-process cluster)', () => {
  let cluster: TestCluster | undefined;
  let srv: TestSqlServer;
  beforeAll(async () => {
    const { dbs } = await startTxnCluster(async (opts: TestClusterOptions) => {
      cluster = await TestCluster.start(opts);
      return cluster;
    });
    srv = await startSqlServer({ insecure: true, db: dbs[0] });
    const c = await client(srv.url);
    await c.query('CREATE TABLE p (id INT PRIMARY KEY)');
    await c.query('CREATE TABLE c (id INT PRIMARY KEY, pid INT REFERENCES p ON DELETE CASCADE)');
    await c.end();
  }, 120_000);
  afterAll(async () => {
    await srv?.stop();
    await cluster?.close();
  });

  it('insert of a child racing the delete of its parent: never an orphan (locks may order them)', async () => {
    await raceChildInsertParentDelete(srv.url, 0, false);
  }, 60_000);
});
