/**
 * A session reuses the plan of its last Parse for the next Parse of the same
 * text (sql/session/session.ts prepareResult: unnamed statements — the YCSB
 * loader's 100-row INSERTs, node-postgres queries without a name — are parsed
 * again for every execution). What may never happen is a stale plan: these
 * tests change what the same text must mean between two Parses and check the
 * next execution follows — a schema change made through another connection,
 * a schema change inside the session's own transaction, another database.
 * Issue 8 (YCSB load) / issue 6 (prepared and unnamed statements).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

let srv: TestSqlServer;
let a: pg.Client;
let b: pg.Client;

beforeAll(async () => {
  srv = await startSqlServer();
  a = new pg.Client(srv.url);
  b = new pg.Client(srv.url);
  await a.connect();
  await b.connect();
});
afterAll(async () => {
  await a.end();
  await b.end();
  await srv.stop();
});

/** An unnamed extended-protocol statement (node-postgres sends Parse/Bind/Execute/Sync with no name). */
const run = (c: pg.Client, text: string, values: unknown[]): Promise<pg.QueryResult> => c.query({ text, values });

describe('plan reuse for unnamed statements', () => {
  it('the same text after a schema change made elsewhere is planned against the new schema', async () => {
    await a.query('CREATE TABLE r1 (id INT8 PRIMARY KEY, v TEXT)');
    const ins = 'INSERT INTO r1 (id, v) VALUES ($1, $2)';
    for (let i = 1; i <= 3; i++) await run(a, ins, [i, `v${i}`]);
    await b.query('ALTER TABLE r1 ADD COLUMN z INT8 NOT NULL DEFAULT 7');
    await run(a, ins, [4, 'v4']);
    const sel = 'SELECT * FROM r1 WHERE id = $1';
    expect((await run(a, sel, [4])).rows).toEqual([{ id: '4', v: 'v4', z: '7' }]);
    await b.query('ALTER TABLE r1 DROP COLUMN v');
    expect((await run(a, sel, [4])).rows).toEqual([{ id: '4', z: '7' }]);
    await expect(run(a, ins, [5, 'v5'])).rejects.toMatchObject({ code: '42703' });
  });

  it('inside a transaction that changes the schema, the same text sees the change', async () => {
    await a.query('CREATE TABLE r2 (id INT8 PRIMARY KEY, v TEXT)');
    const ins = 'INSERT INTO r2 (id, v) VALUES ($1, $2)';
    await run(a, ins, [1, 'x']);
    await a.query('BEGIN');
    await run(a, ins, [2, 'y']);
    await a.query("ALTER TABLE r2 ADD COLUMN z TEXT NOT NULL DEFAULT 'd'");
    await run(a, ins, [3, 'z']);
    expect((await run(a, 'SELECT id, z FROM r2 WHERE id >= $1 ORDER BY id', [2])).rows).toEqual([
      { id: '2', z: 'd' },
      { id: '3', z: 'd' },
    ]);
    await a.query('COMMIT');
    await run(a, ins, [4, 'w']);
    expect((await run(a, 'SELECT id, z FROM r2 WHERE id >= $1 ORDER BY id', [1])).rows.map((r: { z: string }) => r.z)).toEqual(['d', 'd', 'd', 'd']);
  });

  it('a reused plan evaluates volatile functions and parameters at each execution', async () => {
    const text = 'SELECT gen_random_uuid()::STRING AS u, $1::INT8 * 2 AS p';
    const rows = [];
    for (let i = 1; i <= 3; i++) rows.push((await run(a, text, [i])).rows[0] as { u: string; p: string });
    expect(rows.map((r) => r.p)).toEqual(['2', '4', '6']);
    expect(new Set(rows.map((r) => r.u)).size).toBe(3);
  });

  it('the same text in another database reaches that database’s table', async () => {
    await a.query('CREATE DATABASE other');
    await a.query('CREATE TABLE r3 (id INT8 PRIMARY KEY, v TEXT)');
    await a.query("CREATE TABLE other.public.r3 (id INT8 PRIMARY KEY, v TEXT, tag TEXT NOT NULL DEFAULT 'other')");
    const ins = 'INSERT INTO r3 (id, v) VALUES ($1, $2)';
    await run(a, ins, [1, 'here']);
    await a.query('SET database = other');
    try {
      await run(a, ins, [1, 'there']);
      expect((await run(a, 'SELECT * FROM r3 WHERE id = $1', [1])).rows).toEqual([{ id: '1', v: 'there', tag: 'other' }]);
    } finally {
      await a.query('SET database = defaultdb');
    }
    expect((await run(a, 'SELECT * FROM r3 WHERE id = $1', [1])).rows).toEqual([{ id: '1', v: 'here' }]);
  });
});
