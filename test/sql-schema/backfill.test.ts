/**
 * CREATE INDEX on a populated table while other connections keep writing:
 * the index is write_only during a chunked backfill (many chunk
 * transactions), the writers are never blocked for the whole build, and at
 * the end the index is public and holds exactly the entries the rows imply.
 * A unique backfill that finds a duplicate fails with 23505 and leaves no
 * index (descriptor or entries) behind.
 */
import { describe, it, expect, afterEach } from 'vitest';
import pg from 'pg';
import { startSqlServer } from '../support/sql-server.js';
import { setBackfillChunkRows, backfillChunkRows } from '../../sql/schema/index-backfill.js';
import { checkIndexes } from './index-check.js';

const ROWS = 3000;

describe('online index backfill', () => {
  const saved = backfillChunkRows;
  afterEach(() => setBackfillChunkRows(saved));

  it('ends consistent with writes running during the backfill', async () => {
    const srv = await startSqlServer();
    const admin = new pg.Client(srv.url);
    const writers = [new pg.Client(srv.url), new pg.Client(srv.url)];
    await admin.connect();
    for (const w of writers) await w.connect();
    try {
      await admin.query('CREATE TABLE t (k INT PRIMARY KEY, a INT, b TEXT)');
      await admin.query(`INSERT INTO t SELECT i, i % 97, 'v' || i::TEXT FROM generate_series(1, ${ROWS}) AS g(i)`).catch(async () => {
        // Without set-returning functions: insert in statements of 500 rows.
        for (let i = 1; i <= ROWS; i += 500) {
          const vals: string[] = [];
          for (let j = i; j < i + 500 && j <= ROWS; j++) vals.push(`(${j}, ${j % 97}, 'v${j}')`);
          await admin.query(`INSERT INTO t VALUES ${vals.join(',')}`);
        }
      });
      setBackfillChunkRows(10); // 300 chunk transactions
      let building = true;
      let writesDuringBuild = 0;
      const work = writers.map(async (c, w) => {
        let i = 0;
        while (building) {
          i++;
          const k = ((i * 7919 + w * 104729) % (ROWS + 200)) + 1;
          try {
            switch (i % 4) {
              case 0:
                await c.query('UPDATE t SET a = $2 WHERE k = $1', [k, (i + w) % 97]);
                break;
              case 1:
                await c.query('DELETE FROM t WHERE k = $1', [k]);
                break;
              case 2:
                await c.query('INSERT INTO t VALUES ($1, $2, $3) ON CONFLICT (k) DO UPDATE SET a = excluded.a', [k, i % 97, `w${i}`]);
                break;
              default:
                await c.query('UPDATE t SET k = $2 WHERE k = $1', [k, ROWS + 1000 + w * 100000 + i]);
            }
            if (building) writesDuringBuild++;
          } catch (e) {
            const code = (e as { code?: string }).code;
            if (code !== '40001' && code !== '23505') throw e;
          }
        }
      });
      await admin.query('CREATE INDEX t_a ON t (a) STORING (b)');
      building = false;
      await Promise.all(work);
      expect(writesDuringBuild).toBeGreaterThan(10);
      const check = await checkIndexes(srv.kv, 'defaultdb', 't');
      expect(check.problems).toEqual([]);
      expect(check.entries).toBe(check.rows);
      const plan = (await admin.query('EXPLAIN SELECT k, b FROM t WHERE a = 5')).rows.map((r) => r.info as string).join('\n');
      expect(plan).toContain('t@t_a');
      const viaIndex = (await admin.query('SELECT k FROM t WHERE a = 5')).rows.length;
      const viaFilter = (await admin.query('SELECT k, a FROM t')).rows.filter((r) => r.a === 5).length;
      expect(viaIndex).toBe(viaFilter);
    } finally {
      for (const w of writers) await w.end();
      await admin.end();
      await srv.stop();
    }
  }, 120_000);

  it('a duplicate found by a unique backfill is 23505 and removes the index', async () => {
    const srv = await startSqlServer();
    const c = new pg.Client(srv.url);
    await c.connect();
    try {
      setBackfillChunkRows(10);
      await c.query('CREATE TABLE u (k INT PRIMARY KEY, a INT)');
      const vals: string[] = [];
      for (let i = 1; i <= 100; i++) vals.push(`(${i}, ${i === 77 ? 3 : i})`);
      await c.query(`INSERT INTO u VALUES ${vals.join(',')}`);
      const err = await c.query('CREATE UNIQUE INDEX u_a ON u (a)').then(() => undefined, (e: unknown) => e as { code: string; message: string });
      expect(err?.code).toBe('23505');
      expect(err?.message).toBe('could not create unique index "u_a"');
      const check = await checkIndexes(srv.kv, 'defaultdb', 'u');
      expect(check).toEqual({ problems: [], rows: 100, entries: 0 });
      await c.query('UPDATE u SET a = 1000 WHERE k = 77');
      await c.query('CREATE UNIQUE INDEX u_a ON u (a)');
      await expect(c.query('INSERT INTO u VALUES (101, 5)')).rejects.toMatchObject({ code: '23505' });
      expect((await checkIndexes(srv.kv, 'defaultdb', 'u')).problems).toEqual([]);
    } finally {
      await c.end();
      await srv.stop();
    }
  }, 60_000);
});
