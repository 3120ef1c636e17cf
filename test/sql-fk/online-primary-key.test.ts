/**
 * ALTER TABLE … ADD PRIMARY KEY alone in its transaction rebuilds the table
 * online (sql/schema/primary-key.ts) while other connections keep writing:
 * the future primary index is a write_only unique index the writers
 * maintain, backfilled in many chunk transactions, then swapped in. At the
 * end every row is reachable by its new key, the rebuilt secondary index
 * holds exactly the entries the rows imply, the old rowid-keyed index is
 * empty, and the writers were never blocked for the whole rebuild.
 */
import { describe, it, expect, afterEach } from 'vitest';
import pg from 'pg';
import { KVBatch } from '../../sql/kv.js';
import { tableIndexSpan } from '../../storage/keys.js';
import { startSqlServer } from '../support/sql-server.js';
import { setBackfillChunkRows, backfillChunkRows } from '../../sql/schema/index-backfill.js';
import { checkIndexes } from '../sql-schema/index-check.js';

const ROWS = 2000;

describe('online ADD PRIMARY KEY', () => {
  const saved = backfillChunkRows;
  afterEach(() => setBackfillChunkRows(saved));

  it('ends consistent with writes running during the rebuild', async () => {
    const srv = await startSqlServer();
    const admin = new pg.Client(srv.url);
    const writers = [new pg.Client(srv.url), new pg.Client(srv.url)];
    await admin.connect();
    for (const w of writers) await w.connect();
    try {
      await admin.query('CREATE TABLE t (a INT NOT NULL, b TEXT, n INT)');
      await admin.query('CREATE INDEX t_b ON t (b)');
      await admin.query(`INSERT INTO t SELECT i, 'v' || i::TEXT, i % 7 FROM generate_series(1, ${ROWS}) AS g(i)`);
      const tableId = (Number((await admin.query("SELECT oid::INT8 AS o FROM pg_class WHERE relname = 't'")).rows[0].o) - 1_000_000) / 1000;
      /** Keys left in the rowid-keyed primary index (id 1). */
      const oldPrimaryKeys = async (): Promise<number> => {
        const span = tableIndexSpan(tableId, 1);
        const txn = srv.kv.newTxn();
        const b = new KVBatch();
        b.scan(span.key, span.endKey, { limit: 1 });
        const [res] = await txn.run(b);
        await txn.commit();
        return res?.kind === 'scan' ? res.rows.length : -1;
      };
      expect(await oldPrimaryKeys()).toBe(1);
      setBackfillChunkRows(20); // 100 chunk transactions
      let building = true;
      let writesDuringBuild = 0;
      const work = writers.map(async (c, w) => {
        let i = 0;
        while (building) {
          i++;
          const k = ((i * 7919 + w * 104729) % (ROWS + 100)) + 1;
          try {
            switch (i % 4) {
              case 0:
                await c.query('UPDATE t SET b = $2 WHERE a = $1', [k, `u${w}-${i}`]);
                break;
              case 1:
                await c.query('DELETE FROM t WHERE a = $1', [k]);
                break;
              case 2:
                await c.query('INSERT INTO t VALUES ($1, $2, 0)', [ROWS + 1000 + w * 100000 + i, `n${i}`]);
                break;
              default:
                await c.query('UPDATE t SET a = $2 WHERE a = $1', [k, ROWS + 500000 + w * 100000 + i]);
            }
            if (building) writesDuringBuild++;
          } catch (e) {
            const code = (e as { code?: string }).code;
            if (code !== '40001' && code !== '23505') throw e;
          }
        }
      });
      await admin.query('ALTER TABLE t ADD PRIMARY KEY (a)');
      building = false;
      await Promise.all(work);
      expect(writesDuringBuild).toBeGreaterThan(10);
      const check = await checkIndexes(srv.kv, 'defaultdb', 't');
      expect(check.problems).toEqual([]);
      expect(check.entries).toBe(check.rows);
      const all = (await admin.query('SELECT a, b, n FROM t')).rows as { a: number; b: string; n: number }[];
      expect(all.length).toBe(check.rows);
      expect(new Set(all.map((r) => r.a)).size).toBe(all.length);
      // Every row by its new primary key (point lookups), in one statement per 200 keys.
      for (let i = 0; i < all.length; i += 200) {
        const part = all.slice(i, i + 200);
        const got = (await admin.query('SELECT a, b, n FROM t WHERE a = ANY($1::INT[])', [part.map((r) => r.a)])).rows;
        expect(got.length).toBe(part.length);
      }
      const plan = (await admin.query('EXPLAIN SELECT b FROM t WHERE a = 5')).rows.map((r) => r.info as string).join('\n');
      expect(plan).toContain('t@t_pkey');
      // The rowid-keyed primary index was deleted after the swap.
      expect(await oldPrimaryKeys()).toBe(0);
      await expect(admin.query('INSERT INTO t VALUES ($1, $2, 0)', [all[0]?.a, 'dup'])).rejects.toMatchObject({ code: '23505' });
    } finally {
      for (const w of writers) await w.end();
      await admin.end();
      await srv.stop();
    }
  }, 120_000);
});
