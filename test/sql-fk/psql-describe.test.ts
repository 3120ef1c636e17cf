/**
 * psql's `\d table` prints a table's foreign keys ("Foreign-key constraints:")
 * and the keys referencing it ("Referenced by:") from pg_constraint and
 * pg_get_constraintdef — the same text on Cairn as on PostgreSQL 15 (issue 7,
 * must-show 1), including the implicit index Cairn adds for the referencing
 * columns staying out of "Indexes:".
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { startPostgres } from '../support/postgres.js';
import { runScript } from '../compat/run-script.js';

const SCHEMA = [
  'CREATE TABLE p (id INT PRIMARY KEY, code TEXT UNIQUE)',
  'CREATE TABLE c (id INT PRIMARY KEY, pid INT REFERENCES p ON DELETE CASCADE, pcode TEXT, CONSTRAINT fk2 FOREIGN KEY (pcode) REFERENCES p (code) ON UPDATE SET NULL)',
  'CREATE TABLE m (a INT, b INT, PRIMARY KEY (a, b))',
  'CREATE TABLE mc (k INT PRIMARY KEY, x INT, y INT, FOREIGN KEY (x, y) REFERENCES m MATCH FULL)',
  'ALTER TABLE mc ADD CONSTRAINT mc_self FOREIGN KEY (k) REFERENCES mc (k) NOT VALID',
];

describe('psql \\d shows foreign keys as PostgreSQL does', () => {
  let cairn: TestSqlServer;
  let postgres: Awaited<ReturnType<typeof startPostgres>>;
  beforeAll(async () => {
    [cairn, postgres] = await Promise.all([startSqlServer(), startPostgres()]);
    for (const url of [cairn.url, postgres.url]) {
      const c = new pg.Client(url);
      await c.connect();
      for (const s of SCHEMA) await c.query(s);
      await c.end();
    }
  }, 120_000);
  afterAll(async () => {
    await Promise.all([cairn?.stop(), postgres?.stop()]);
  });

  for (const table of ['p', 'c', 'm', 'mc']) {
    it(`\\d ${table}`, async () => {
      const [ours, theirs] = await Promise.all([cairn.url, postgres.url].map((u) => runScript('psql', ['-X', u, '-c', `\\d ${table}`])));
      expect(ours.code, ours.output).toBe(0);
      expect(ours.output).toBe(theirs.output);
      if (table === 'c' || table === 'mc') expect(ours.output).toContain('Foreign-key constraints:');
      if (table === 'p' || table === 'm') expect(ours.output).toContain('Referenced by:');
    });
  }
});
