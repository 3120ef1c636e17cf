/**
 * The planner's key spans against the simple version (property): a WHERE
 * clause of random primary-key predicates (=, <, <=, >, >=, IN, BETWEEN,
 * with NULLs and parameters) answered through point lookups / spans must
 * return exactly what the same predicate returns as a plain filter over the
 * whole table (`NOT NOT (…)` hides it from the span chooser), with ORDER BY
 * in either direction and LIMIT pushed down.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fc from 'fast-check';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

let srv: TestSqlServer;
let c: pg.Client;

beforeAll(async () => {
  srv = await startSqlServer();
  c = new pg.Client(srv.url);
  await c.connect();
  await c.query('CREATE TABLE t (a INT, b TEXT, c INT, PRIMARY KEY (a, b))');
  const rows: string[] = [];
  let n = 0;
  for (let a = -3; a <= 3; a++) for (const b of ['', 'a', 'ab', 'b', 'b\u00e9']) rows.push(`(${a}, '${b}', ${n++ % 5})`);
  await c.query(`INSERT INTO t VALUES ${rows.join(', ')}`);
});
afterAll(async () => {
  await c.end();
  await srv.stop();
});

const aVal = fc.oneof(fc.integer({ min: -4, max: 4 }).map(String), fc.constant('NULL'), fc.constant('2147483648'));
const bVal = fc.constantFrom("''", "'a'", "'aa'", "'ab'", "'b'", "'c'", 'NULL');
const op = fc.constantFrom('=', '<', '<=', '>', '>=', '<>');
const atom = fc.oneof(
  fc.tuple(op, aVal).map(([o, v]) => `a ${o} ${v}`),
  fc.tuple(op, aVal).map(([o, v]) => `${v} ${o} a`),
  fc.tuple(op, bVal).map(([o, v]) => `b ${o} ${v}`),
  fc.array(aVal, { minLength: 1, maxLength: 4 }).map((vs) => `a IN (${vs.join(', ')})`),
  fc.array(bVal, { minLength: 1, maxLength: 3 }).map((vs) => `b IN (${vs.join(', ')})`),
  fc.tuple(aVal, aVal).map(([x, y]) => `a BETWEEN ${x} AND ${y}`),
  fc.tuple(op, fc.integer({ min: 0, max: 4 })).map(([o, v]) => `c ${o} ${v}`),
);

describe('primary-key spans', () => {
  it('spans and point lookups return what a full-scan filter returns (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(atom, { minLength: 1, maxLength: 3 }),
        fc.constantFrom('', ' ORDER BY a, b', ' ORDER BY a DESC, b DESC', ' ORDER BY a DESC'),
        fc.option(fc.integer({ min: 0, max: 6 })),
        async (atoms, order, limit) => {
          const pred = atoms.join(' AND ');
          const lim = limit === null ? '' : ` LIMIT ${limit}`;
          // Without a full ORDER BY a LIMIT picks arbitrary rows: only compare it when ordered by the whole key.
          const useLimit = order.includes('b') ? lim : '';
          const fast = await c.query({ text: `SELECT a, b, c FROM t WHERE ${pred}${order}${useLimit}`, rowMode: 'array' });
          const slow = await c.query({ text: `SELECT a, b, c FROM t WHERE NOT NOT (${pred})${order}${useLimit}`, rowMode: 'array' });
          const norm = (rows: unknown[][]): string[] => (order === '' || order === ' ORDER BY a DESC' ? rows.map((r) => JSON.stringify(r)).sort() : rows.map((r) => JSON.stringify(r)));
          expect(norm(fast.rows), pred + order + useLimit).toEqual(norm(slow.rows));
        },
      ),
      { numRuns: 250 },
    );
  });

  it('the same with the constants as parameters of a prepared statement', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -4, max: 4 }), fc.integer({ min: -4, max: 4 }), fc.constantFrom('', 'a', 'ab', 'b'), async (lo, hi, b) => {
        const fast = await c.query({ name: 'pspan', text: 'SELECT a, b FROM t WHERE a >= $1 AND a < $2 AND b = $3 ORDER BY a', values: [lo, hi, b], rowMode: 'array' });
        const slow = await c.query({ text: 'SELECT a, b FROM t WHERE NOT NOT (a >= $1 AND a < $2 AND b = $3) ORDER BY a', values: [lo, hi, b], rowMode: 'array' });
        expect(fast.rows).toEqual(slow.rows);
        const pts = await c.query({ name: 'ppts', text: 'SELECT a, b FROM t WHERE a IN ($1, $2) AND b = $3 ORDER BY a DESC', values: [lo, hi, b], rowMode: 'array' });
        const ptsSlow = await c.query({ text: 'SELECT a, b FROM t WHERE NOT NOT (a IN ($1, $2) AND b = $3) ORDER BY a DESC', values: [lo, hi, b], rowMode: 'array' });
        expect(pts.rows).toEqual(ptsSlow.rows);
      }),
      { numRuns: 60 },
    );
  });

  it('ORDER BY another column with LIMIT/OFFSET (top-K) equals sorting everything and slicing (property)', async () => {
    // 700 rows: more than the top-K buffer (2K + 128), so it trims while reading.
    await c.query('CREATE TABLE topk (a INT PRIMARY KEY, c INT, v TEXT)');
    await c.query(`INSERT INTO topk VALUES ${Array.from({ length: 700 }, (_, i) => `(${i}, ${(i * 7919) % 101}, ${i % 13 === 0 ? 'NULL' : `'v${(i * 31) % 17}'`})`).join(', ')}`);
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 5 }), fc.constantFrom('c, a', 'c DESC, a', 'v, c DESC, a'), async (limit, offset, order) => {
        const all = await c.query({ text: `SELECT a, c, v FROM topk ORDER BY ${order}`, rowMode: 'array' });
        const top = await c.query({ text: `SELECT a, c, v FROM topk ORDER BY ${order} LIMIT $1 OFFSET $2`, values: [limit, offset], rowMode: 'array' });
        expect(top.rows).toEqual(all.rows.slice(offset, offset + limit));
      }),
      { numRuns: 40 },
    );
    const plan = (await c.query('EXPLAIN SELECT * FROM t ORDER BY c LIMIT 3')).rows.map((r) => r.info).join('\n');
    expect(plan).toContain('top-k');
  });

  it('EXPLAIN shows the chosen spans', async () => {
    const plan = async (q: string): Promise<string> => (await c.query(`EXPLAIN ${q}`)).rows.map((r) => r.info).join('\n');
    expect(await plan("SELECT * FROM t WHERE a = 1 AND b = 'x'")).toContain("spans: /1/'x'");
    expect(await plan("SELECT * FROM t WHERE a IN (2, 1) AND b IN ('x', 'y')")).toContain("spans: /2/'x', /2/'y', /1/'x', /1/'y'");
    expect(await plan('SELECT * FROM t WHERE a > 1 AND a <= 3')).toContain('spans: /1 (excl) – /3');
    // An IN list on the leading column of a longer key: one span per value.
    expect(await plan("SELECT * FROM t WHERE a IN (2, 1) AND b >= 'k'")).toContain("spans: /2/'k' – /2/…, /1/'k' – /1/…");
    expect(await plan('SELECT * FROM t WHERE c = 1')).toContain('spans: FULL SCAN');
  });
});
