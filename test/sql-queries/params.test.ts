/**
 * Query features with bound parameters through node-postgres (extended
 * protocol): `= ANY($1)` with a JS array (parameter inferred as int4[] /
 * text[]), a join with parameters in both leaves' spans, GROUP BY / HAVING
 * with a parameter, a subquery with a parameter, jsonb parameters, and
 * EXPLAIN naming the join algorithm the cost rule picked.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

describe('query features with parameters', () => {
  let srv: TestSqlServer;
  let c: pg.Client;
  beforeAll(async () => {
    srv = await startSqlServer();
    c = new pg.Client(srv.url);
    await c.connect();
    await c.query('CREATE TABLE users (id INT PRIMARY KEY, name TEXT, meta JSONB)');
    await c.query('CREATE TABLE posts (id INT PRIMARY KEY, user_id INT, title TEXT)');
    await c.query(`INSERT INTO users VALUES (1, 'ann', '{"role": "admin"}'), (2, 'bob', '{"role": "user"}'), (3, 'cy', NULL)`);
    await c.query(`INSERT INTO posts VALUES (10, 1, 'a'), (11, 1, 'b'), (12, 2, 'c'), (13, 9, 'orphan')`);
  }, 30_000);
  afterAll(async () => {
    await c?.end();
    await srv?.stop();
  });

  it('= ANY($1) takes an array parameter', async () => {
    const r = await c.query('SELECT name FROM users WHERE id = ANY($1) ORDER BY id', [[1, 3, 42]]);
    expect(r.rows.map((x) => x.name)).toEqual(['ann', 'cy']);
    const t = await c.query('SELECT id FROM users WHERE name = ANY($1::TEXT[]) ORDER BY id', [['bob', 'zed']]);
    expect(t.rows).toEqual([{ id: 2 }]);
  });

  it('joins, aggregates and subqueries take parameters', async () => {
    const j = await c.query('SELECT u.name, p.title FROM posts p JOIN users u ON u.id = p.user_id WHERE p.id >= $1 AND p.id < $2 ORDER BY p.id', [10, 12]);
    expect(j.rows).toEqual([
      { name: 'ann', title: 'a' },
      { name: 'ann', title: 'b' },
    ]);
    const g = await c.query('SELECT user_id, count(*)::INT AS n FROM posts GROUP BY user_id HAVING count(*) >= $1 ORDER BY user_id', [2]);
    expect(g.rows).toEqual([{ user_id: 1, n: 2 }]);
    const s = await c.query('SELECT title FROM posts WHERE user_id IN (SELECT id FROM users WHERE name = $1) ORDER BY id', ['bob']);
    expect(s.rows).toEqual([{ title: 'c' }]);
    const e = await c.query('SELECT name FROM users u WHERE EXISTS (SELECT 1 FROM posts p WHERE p.user_id = u.id AND p.title <> $1) ORDER BY id', ['a']);
    expect(e.rows).toEqual([{ name: 'ann' }, { name: 'bob' }]);
  });

  it('jsonb operators take parameters', async () => {
    const r = await c.query('SELECT name FROM users WHERE meta @> $1::JSONB ORDER BY id', [JSON.stringify({ role: 'admin' })]);
    expect(r.rows).toEqual([{ name: 'ann' }]);
    const k = await c.query('SELECT meta ->> $1 AS role FROM users ORDER BY id', ['role']);
    expect(k.rows.map((x) => x.role)).toEqual(['admin', 'user', null]);
  });

  it('EXPLAIN names the join algorithm', async () => {
    const explain = async (q: string): Promise<string> => (await c.query(`EXPLAIN ${q}`)).rows.map((x: Record<string, string>) => Object.values(x)[0]).join('\n');
    expect(await explain('SELECT * FROM posts p JOIN users u ON u.id = p.user_id')).toContain('lookup join');
    expect(await explain('SELECT * FROM posts p JOIN users u ON u.name = p.title')).toContain('hash join');
    expect(await explain('SELECT * FROM posts p, users u')).toContain('cross join');
    expect(await explain('SELECT user_id, count(*) FROM posts GROUP BY user_id')).toContain('group (hash)');
  });
});
