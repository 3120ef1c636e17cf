/**
 * Unique-index point lookups read with gets (sql/exec/operators.ts
 * UniqueIndexPointScan, issue 6's index-lookup): equality on every key
 * column of a unique index, no bounds, no lock. Checked against the answers
 * the same queries must give — short-form entries only, NULL keys never
 * matching, IN lists in index order, LIMIT, covering and non-covering
 * (index join) reads, a composite unique index bound on every column and on
 * a prefix only (still a scan), and a locking read (still a scan) — and
 * against a full-table filter over random data (same rows).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { Prng } from '../../src/util/prng.js';

let srv: TestSqlServer;
let c: pg.Client;

beforeAll(async () => {
  srv = await startSqlServer({ insecure: true });
  c = new pg.Client(srv.url);
  await c.connect();
  await c.query('CREATE TABLE t (id INT8 PRIMARY KEY, k INT8, a INT8, b TEXT, v TEXT)');
  await c.query('CREATE UNIQUE INDEX t_k ON t (k)');
  await c.query('CREATE UNIQUE INDEX t_ab ON t (a, b) STORING (v)');
  await c.query(`INSERT INTO t VALUES (1, 10, 1, 'x', 'one'), (2, 20, 1, 'y', 'two'), (3, NULL, 2, 'x', 'three'), (4, NULL, NULL, 'x', 'four'), (5, 50, 2, NULL, 'five')`);
});

afterAll(async () => {
  await c.end();
  await srv.stop();
});

const rows = async (sql: string, params: unknown[] = []): Promise<unknown[][]> => (await c.query({ text: sql, values: params, rowMode: 'array' })).rows as unknown[][];

describe('unique-index point lookups', () => {
  it('finds the one row of a key, none for a missing or NULL key', async () => {
    expect(await rows('SELECT id, v FROM t WHERE k = $1', [20])).toEqual([['2', 'two']]);
    expect(await rows('SELECT id, v FROM t WHERE k = $1', [30])).toEqual([]);
    expect(await rows('SELECT id, v FROM t WHERE k = $1', [null])).toEqual([]);
    expect(await rows('SELECT k FROM t WHERE k = 10')).toEqual([['10']]);
  });

  it('IN lists come back in index order; LIMIT applies', async () => {
    expect(await rows('SELECT id FROM t WHERE k IN (50, 10, 20, 99)')).toEqual([['1'], ['2'], ['5']]);
    expect(await rows('SELECT id FROM t WHERE k IN (50, 10, 20) LIMIT 2')).toEqual([['1'], ['2']]);
    expect(await rows('SELECT id FROM t WHERE k = 10 LIMIT 0')).toEqual([]);
  });

  it('composite unique index: every column bound is a point, a prefix stays a scan', async () => {
    expect(await rows(`SELECT id, v FROM t WHERE a = 1 AND b = 'y'`)).toEqual([['2', 'two']]);
    expect(await rows(`SELECT v FROM t WHERE a = 2 AND b = 'x'`)).toEqual([['three']]);
    expect(await rows('SELECT id FROM t WHERE a = 2 ORDER BY id')).toEqual([['3'], ['5']]);
    expect(await rows(`SELECT id FROM t WHERE a IS NULL AND b = 'x'`)).toEqual([['4']]);
  });

  it('sees its own transaction’s writes and locks with FOR UPDATE', async () => {
    await c.query('BEGIN');
    await c.query(`INSERT INTO t VALUES (6, 60, 3, 'z', 'six')`);
    expect(await rows('SELECT id FROM t WHERE k = 60')).toEqual([['6']]);
    expect(await rows('SELECT id FROM t WHERE k = 60 FOR UPDATE')).toEqual([['6']]);
    await c.query('ROLLBACK');
    expect(await rows('SELECT id FROM t WHERE k = 60')).toEqual([]);
  });

  it('answers as a full-table filter does over random data', async () => {
    const rnd = new Prng(6);
    await c.query('CREATE TABLE r (id INT8 PRIMARY KEY, k INT8, v TEXT)');
    await c.query('CREATE UNIQUE INDEX r_k ON r (k)');
    const ks = new Set<number>();
    const vals: string[] = [];
    for (let i = 0; i < 200; i++) {
      const k = rnd.intn(400);
      const dup = ks.has(k);
      ks.add(k);
      vals.push(`(${i}, ${dup || rnd.intn(10) === 0 ? 'NULL' : k}, 'v${i}')`);
    }
    await c.query(`INSERT INTO r VALUES ${vals.join(', ')}`);
    for (let q = 0; q < 60; q++) {
      const k = rnd.intn(420);
      const viaIndex = await rows('SELECT id, v FROM r WHERE k = $1', [k]);
      const viaFilter = await rows('SELECT id, v FROM r WHERE k + 0 = $1', [k]);
      expect(viaIndex).toEqual(viaFilter);
    }
  });
});
