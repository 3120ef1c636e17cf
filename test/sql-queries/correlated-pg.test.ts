/**
 * Correlated subqueries against PostgreSQL 15 as the reference (issue 7,
 * queries): fast-check generates two small tables with NULLs and duplicates
 * and a query from the correlated forms Cairn plans per outer row — scalar,
 * [NOT] IN, op ANY / ALL, [NOT] EXISTS (equality correlations become semi /
 * anti joins, others run per row), ARRAY(subquery), LATERAL, and an index
 * nested-loop join — and both must return the same rows (ordered totally).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgPair, type PgPair } from './pg-pair.js';

const corr = fc.constantFrom('c.pid = p.id', 'c.pid <> p.id', 'c.pid >= p.id', 'c.pid = p.id AND c.v > p.n', 'c.pid IS NOT DISTINCT FROM p.n');
const cmp = fc.constantFrom('=', '<>', '<', '>=');
const queryArb = fc.oneof(
  fc.tuple(fc.boolean(), corr).map(([not, w]) => `SELECT p.id FROM p WHERE p.n ${not ? 'NOT ' : ''}IN (SELECT c.v FROM c WHERE ${w}) ORDER BY 1`),
  fc.tuple(cmp, fc.constantFrom('ANY', 'ALL'), corr).map(([op, q, w]) => `SELECT p.id, p.n ${op} ${q} (SELECT c.v FROM c WHERE ${w}) FROM p ORDER BY 1`),
  fc.tuple(fc.constantFrom('count(*)', 'sum(c.v)', 'max(c.v)', 'count(c.v)'), corr).map(([agg, w]) => `SELECT p.id, (SELECT ${agg} FROM c WHERE ${w}) FROM p ORDER BY 1`),
  fc.tuple(fc.boolean(), corr).map(([not, w]) => `SELECT p.id FROM p WHERE ${not ? 'NOT ' : ''}EXISTS (SELECT 1 FROM c WHERE ${w}) ORDER BY 1`),
  corr.map((w) => `SELECT p.id, ARRAY(SELECT c.v FROM c WHERE ${w} ORDER BY c.id) FROM p ORDER BY 1`),
  corr.map((w) => `SELECT p.id, s.v FROM p LEFT JOIN LATERAL (SELECT c.v FROM c WHERE ${w} ORDER BY c.v NULLS FIRST, c.id LIMIT 2) s ON true ORDER BY 1, 2 NULLS FIRST`),
  fc.integer({ min: 0, max: 4 }).map((k) => `SELECT p.id, c.id FROM p JOIN c ON c.pid = p.id WHERE p.id IN (${k}, ${k + 2}) ORDER BY 1, 2`),
  fc.constant('SELECT p.n, count(*), (SELECT count(*) FROM c WHERE c.v = p.n) FROM p GROUP BY p.n ORDER BY 1 NULLS FIRST'),
);
const intOrNull = fc.option(fc.integer({ min: 0, max: 4 }), { freq: 4 });
const tablesArb = fc.record({
  p: fc.array(intOrNull, { maxLength: 6 }),
  c: fc.array(fc.record({ pid: intOrNull, v: intOrNull }), { maxLength: 9 }),
});

describe('correlated subqueries agree with PostgreSQL', () => {
  let pair: PgPair;
  beforeAll(async () => {
    pair = await startPgPair(['CREATE TABLE p (id INT PRIMARY KEY, n INT)', 'CREATE TABLE c (id INT PRIMARY KEY, pid INT, v INT)', 'CREATE INDEX c_pid ON c (pid)']);
  }, 90_000);
  afterAll(async () => {
    await pair?.stop();
  });

  it('random correlated queries over random tables', async () => {
    await fc.assert(
      fc.asyncProperty(tablesArb, queryArb, async (t, sql) => {
        const fill = ['DELETE FROM p', 'DELETE FROM c'];
        if (t.p.length > 0) fill.push(`INSERT INTO p VALUES ${t.p.map((n, i) => `(${i}, ${n ?? 'NULL'})`).join(', ')}`);
        if (t.c.length > 0) fill.push(`INSERT INTO c VALUES ${t.c.map((r, i) => `(${i}, ${r.pid ?? 'NULL'}, ${r.v ?? 'NULL'})`).join(', ')}`);
        const answers = await pair.both(fill, sql);
        expect(answers[0], sql).toEqual(answers[1]);
      }),
      { numRuns: 80 },
    );
  }, 120_000);
});
