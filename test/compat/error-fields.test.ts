/**
 * test/compat/error-fields.test.ts — integrity violations carry PostgreSQL's
 * ErrorResponse fields (issue 7, ORMs): 23503 names the constraint ('n') and
 * the referencing table ('t') with the detail `Key (col)=(v) is not present in
 * table "parent".`; 23505 / 23514 the constraint and table; 23502 the column
 * ('c') and table; 23502 / 23514 the detail `Failing row contains (…).`
 * Each statement runs on Cairn and on PostgreSQL 15 and every field read by
 * node-postgres must agree.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

const SCHEMA = [
  'CREATE TABLE parent (id INT PRIMARY KEY, name TEXT)',
  'CREATE TABLE child (id INT PRIMARY KEY, pid INT REFERENCES parent (id), note TEXT NOT NULL, qty INT CHECK (qty > 0))',
  'CREATE TABLE u (id INT PRIMARY KEY, email TEXT UNIQUE, a INT, b INT, UNIQUE (a, b))',
  'CREATE TABLE pair (a INT, b TEXT, PRIMARY KEY (a, b))',
  'CREATE TABLE ref2 (id INT PRIMARY KEY, a INT, b TEXT, CONSTRAINT ref2_pair FOREIGN KEY (a, b) REFERENCES pair (a, b))',
  "INSERT INTO parent VALUES (1, 'p')",
  "INSERT INTO child VALUES (1, 1, 'n', 1)",
  "INSERT INTO u VALUES (1, 'x@y', 1, 2)",
  "INSERT INTO pair VALUES (1, 'one')",
  "INSERT INTO ref2 VALUES (1, 1, 'one')",
];

const VIOLATIONS = [
  "INSERT INTO child VALUES (2, 7, 'n', 1)",
  'UPDATE child SET pid = 9 WHERE id = 1',
  'DELETE FROM parent WHERE id = 1',
  'UPDATE parent SET id = 5 WHERE id = 1',
  "INSERT INTO ref2 VALUES (2, 1, 'two')",
  "DELETE FROM pair WHERE b = 'one'",
  'INSERT INTO child VALUES (3, 1, NULL, 1)',
  'UPDATE child SET note = NULL',
  "INSERT INTO child VALUES (4, 1, 'n', 0)",
  `INSERT INTO child (id, pid, note, qty) VALUES (9, NULL, '${'é'.repeat(40)}', -1)`,
  "INSERT INTO child VALUES (1, 1, 'n', 1)",
  "INSERT INTO u VALUES (2, 'x@y', 3, 4)",
  "INSERT INTO u VALUES (3, 'z', 1, 2)",
  "UPDATE u SET email = 'x@y', a = 7 WHERE id = 1 AND false",
  "INSERT INTO u VALUES (4, 'w', 5, 6), (5, 'w', 7, 8)",
];

type Fields = Record<string, string | undefined>;

async function violations(url: string): Promise<Fields[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (const s of SCHEMA) await c.query(s);
    const out: Fields[] = [];
    for (const q of VIOLATIONS) {
      try {
        await c.query(q);
        out.push({ q, outcome: 'ok' });
      } catch (e) {
        const f = e as pg.DatabaseError;
        out.push({ q, code: f.code, message: f.message, detail: f.detail, schema: f.schema, table: f.table, column: f.column, constraint: f.constraint });
      }
    }
    return out;
  } finally {
    await c.end();
  }
}

describe('integrity violation fields', () => {
  let cairn: TestSqlServer;
  let pgs: PostgresServer;
  beforeAll(async () => {
    [cairn, pgs] = await Promise.all([startSqlServer(), startPostgres()]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([cairn?.stop(), pgs?.stop()]);
  });

  it('23502 / 23503 / 23505 / 23514 carry the same code, message, detail, schema, table, column and constraint as PostgreSQL', async () => {
    const [a, b] = await Promise.all([violations(`postgresql://root@${cairn.host}:${cairn.port}/defaultdb?sslmode=disable`), violations(pgs.url)]);
    for (let i = 0; i < VIOLATIONS.length; i++) expect(a[i]).toEqual(b[i]);
    // The fields ORMs read, spelled out once.
    expect(a[0]).toMatchObject({ code: '23503', constraint: 'child_pid_fkey', table: 'child', detail: 'Key (pid)=(7) is not present in table "parent".' });
    expect(a[6]).toMatchObject({ code: '23502', column: 'note', table: 'child' });
  }, 60_000);
});
