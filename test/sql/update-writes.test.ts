/**
 * The KV writes of an UPDATE (sql/exec/mutation.ts addChanges,
 * index-writes.ts update): the row's put, plus a del + put of a secondary
 * index entry only for the indexes holding an assigned column — an UPDATE of
 * a column no index holds writes the row alone (issue 6's bench UPDATE:
 * `UPDATE bench_rows SET v = $2 WHERE id = $1` with indexes on k and g).
 * Counted at the MemoryKV commit; the index reads afterwards show every
 * entry is right.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

let srv: TestSqlServer;
let c: pg.Client;
/** Keys written (put or deleted) by each commit since the last reset. */
let commits: number[] = [];

beforeAll(async () => {
  srv = await startSqlServer();
  const tryCommit = srv.kv.tryCommit.bind(srv.kv);
  srv.kv.tryCommit = (startSeq, reads, writes) => {
    tryCommit(startSeq, reads, writes);
    if (writes.size > 0) commits.push(writes.size);
  };
  c = new pg.Client(srv.url);
  await c.connect();
  await c.query('CREATE TABLE u (id INT8 PRIMARY KEY, k INT8 NOT NULL, g INT8 NOT NULL, v TEXT, w FLOAT8)');
  await c.query('CREATE UNIQUE INDEX u_k ON u (k)');
  await c.query('CREATE INDEX u_g ON u (g) STORING (w)');
  await c.query("INSERT INTO u VALUES (1, 10, 100, 'a', 0.5), (2, 20, 200, 'b', 1.5)");
});
afterAll(async () => {
  await c.end();
  await srv.stop();
});

async function writesOf(sql: string, params: unknown[] = []): Promise<number[]> {
  commits = [];
  await c.query({ text: sql, values: params });
  return commits;
}

describe('UPDATE writes', () => {
  it('writes only the row when no index holds an assigned column', async () => {
    expect(await writesOf('UPDATE u SET v = $2 WHERE id = $1', [1, 'x'])).toEqual([1]);
    // Assigning an indexed column its current value changes no entry either.
    expect(await writesOf('UPDATE u SET k = 10, v = $2 WHERE id = $1', [1, 'y'])).toEqual([1]);
  });

  it('rewrites the entries of the indexes holding an assigned column, and only those', async () => {
    expect(await writesOf('UPDATE u SET k = 11 WHERE id = 1')).toEqual([3]); // row + del/put of u_k's entry
    expect(await writesOf('UPDATE u SET w = 2.5 WHERE id = 1')).toEqual([2]); // row + u_g's entry value (same key)
    expect(await writesOf('UPDATE u SET g = 101 WHERE id = 1')).toEqual([3]); // row + del/put of u_g's entry
    expect((await c.query('SELECT id, v FROM u WHERE k = 11')).rows).toEqual([{ id: '1', v: 'y' }]);
    expect((await c.query('SELECT count(*) AS n FROM u WHERE k = 10')).rows).toEqual([{ n: '0' }]);
    expect((await c.query('SELECT id, w FROM u WHERE g = 101')).rows).toEqual([{ id: '1', w: 2.5 }]);
    expect((await c.query('SELECT count(*) AS n FROM u WHERE g = 100')).rows).toEqual([{ n: '0' }]);
  });

  it('moves a row whose primary key is assigned, with its index entries', async () => {
    // del + cput of the row; u_k's entry (key k) gets its new value (the PK); u_g's entry (key g, id) moves: del + put.
    expect(await writesOf('UPDATE u SET id = 3 WHERE id = 2')).toEqual([5]);
    expect((await c.query('SELECT id, k, g, v FROM u WHERE k = 20')).rows).toEqual([{ id: '3', k: '20', g: '200', v: 'b' }]);
    expect((await c.query('SELECT id FROM u WHERE g = 200')).rows).toEqual([{ id: '3' }]);
    expect((await c.query('SELECT count(*) AS n FROM u WHERE id = 2')).rows).toEqual([{ n: '0' }]);
  });
});
