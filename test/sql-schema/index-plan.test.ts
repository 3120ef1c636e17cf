/**
 * Index selection as EXPLAIN shows it: a primary-key predicate keeps the
 * primary index; an equality / range on an indexed column scans that index —
 * alone when it covers the query (key, PK and STORING columns), through an
 * index join otherwise; a write-locking read joins to lock primary rows;
 * results are the same either way.
 */
import { describe, it, expect } from 'vitest';
import pg from 'pg';
import { startSqlServer } from '../support/sql-server.js';

async function explain(c: pg.Client, q: string): Promise<string> {
  return (await c.query(`EXPLAIN ${q}`)).rows.map((r) => r.info as string).join('\n');
}

describe('index selection (EXPLAIN)', () => {
  it('chooses the primary key, a covering index or an index join', async () => {
    const srv = await startSqlServer();
    const c = new pg.Client(srv.url);
    await c.connect();
    try {
      await c.query('CREATE TABLE t (k INT PRIMARY KEY, a INT, b TEXT, c INT)');
      await c.query('CREATE INDEX t_a ON t (a) STORING (b)');
      await c.query('CREATE INDEX t_c_desc ON t (c DESC, a)');
      await c.query("INSERT INTO t VALUES (1, 5, 'x', 10), (2, 5, 'y', 20), (3, 6, 'z', 30)");

      const pk = await explain(c, 'SELECT b FROM t WHERE k = 2 AND a = 5');
      expect(pk).toContain('table: t@t_pkey');
      expect(pk).not.toContain('index join');

      const covering = await explain(c, 'SELECT k, b FROM t WHERE a = 5');
      expect(covering).toContain('table: t@t_a');
      expect(covering).toContain('spans: /5');
      expect(covering).not.toContain('index join');

      const join = await explain(c, 'SELECT c FROM t WHERE a = 5');
      expect(join).toMatch(/index join[\s\S]*table: t@t_pkey[\s\S]*scan[\s\S]*table: t@t_a/);

      const range = await explain(c, 'SELECT k FROM t WHERE c > 15 AND c <= 30');
      expect(range).toContain('table: t@t_c_desc');

      const locked = await explain(c, 'SELECT k, b FROM t WHERE a = 5 FOR UPDATE');
      expect(locked).toContain('index join');

      expect((await c.query('SELECT c FROM t WHERE a = 5 ORDER BY c')).rows).toEqual([{ c: 10 }, { c: 20 }]);
      expect((await c.query('SELECT k FROM t WHERE c > 15 AND c <= 30 ORDER BY k')).rows).toEqual([{ k: 2 }, { k: 3 }]);
      expect((await c.query('UPDATE t SET b = $1 WHERE a = 5', ['w'])).rowCount).toBe(2);
      expect((await c.query("SELECT k FROM t WHERE a = 5 AND b = 'w' ORDER BY k")).rows).toEqual([{ k: 1 }, { k: 2 }]);
    } finally {
      await c.end();
      await srv.stop();
    }
  });
});
