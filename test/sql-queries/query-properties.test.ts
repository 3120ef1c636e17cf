/**
 * Property tests of the query operators through pgwire on MemoryKV, against
 * naive references written from the SQL definitions (fast-check over random
 * small tables with NULLs and duplicate keys):
 *   - hash join (ON a = a) and nested-loop join (the same condition written as
 *     a non-equality) vs a nested-loop reference, for INNER / LEFT / RIGHT / FULL;
 *   - the lookup join (ON t2.id = t1.a) vs the same reference;
 *   - GROUP BY aggregation vs a naive grouping;
 *   - row_number / rank / dense_rank / running sum vs a naive window evaluation;
 *   - UNION / INTERSECT / EXCEPT [ALL] vs multiset references.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fc from 'fast-check';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

type Row = { id: number; a: number | null; b: number | null };

const rowsArb = fc.uniqueArray(
  fc.record({ id: fc.integer({ min: 1, max: 40 }), a: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null, freq: 5 }), b: fc.option(fc.integer({ min: -5, max: 5 }), { nil: null, freq: 5 }) }),
  { selector: (r) => r.id, maxLength: 14 },
);

let srv: TestSqlServer;
let c: pg.Client;

async function load(table: string, rows: readonly Row[]): Promise<void> {
  await c.query(`DELETE FROM ${table}`);
  if (rows.length === 0) return;
  const vals = rows.map((r) => `(${r.id}, ${r.a ?? 'NULL'}, ${r.b ?? 'NULL'})`).join(', ');
  await c.query(`INSERT INTO ${table} VALUES ${vals}`);
}

async function rows(sql: string): Promise<string[]> {
  const r = await c.query({ text: sql, rowMode: 'array' });
  return (r.rows as unknown[][]).map((x) => x.map((v) => (v === null ? 'NULL' : String(v))).join('|')).sort();
}

const show = (v: number | null | undefined): string => (v === null || v === undefined ? 'NULL' : String(v));

function refJoin(type: 'inner' | 'left' | 'right' | 'full', l: readonly Row[], r: readonly Row[], on: (x: Row, y: Row) => boolean): string[] {
  const out: string[] = [];
  const matchedR = new Set<number>();
  for (const x of l) {
    let any = false;
    for (const y of r) {
      if (!on(x, y)) continue;
      any = true;
      matchedR.add(y.id);
      out.push(`${x.id}|${y.id}`);
    }
    if (!any && (type === 'left' || type === 'full')) out.push(`${x.id}|NULL`);
  }
  if (type === 'right' || type === 'full') for (const y of r) if (!matchedR.has(y.id)) out.push(`NULL|${y.id}`);
  return out.sort();
}

describe('query operators vs naive references', () => {
  beforeAll(async () => {
    srv = await startSqlServer();
    c = new pg.Client(srv.url);
    await c.connect();
    await c.query('CREATE TABLE t1 (id INT PRIMARY KEY, a INT, b INT)');
    await c.query('CREATE TABLE t2 (id INT PRIMARY KEY, a INT, b INT)');
  }, 30_000);
  afterAll(async () => {
    await c?.end();
    await srv?.stop();
  });

  it('hash join and nested-loop join match a nested-loop reference', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, rowsArb, fc.constantFrom('inner', 'left', 'right', 'full') as fc.Arbitrary<'inner' | 'left' | 'right' | 'full'>, async (l, r, type) => {
        await load('t1', l);
        await load('t2', r);
        const eq = (x: Row, y: Row): boolean => x.a !== null && y.a !== null && x.a === y.a;
        const expected = refJoin(type, l, r, eq);
        const j = type.toUpperCase();
        expect(await rows(`SELECT t1.id, t2.id FROM t1 ${j} JOIN t2 ON t1.a = t2.a`)).toEqual(expected);
        expect(await rows(`SELECT t1.id, t2.id FROM t1 ${j} JOIN t2 ON t1.a <= t2.a AND t1.a >= t2.a`)).toEqual(expected);
        // An extra non-equality condition in ON (kept inside the join, not a filter).
        const eqB = (x: Row, y: Row): boolean => eq(x, y) && x.b !== null && y.b !== null && x.b < y.b;
        expect(await rows(`SELECT t1.id, t2.id FROM t1 ${j} JOIN t2 ON t1.a = t2.a AND t1.b < t2.b`)).toEqual(refJoin(type, l, r, eqB));
      }),
      { numRuns: 40 },
    );
  }, 60_000);

  it('lookup join into the primary index matches the reference', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, rowsArb, fc.constantFrom('inner', 'left') as fc.Arbitrary<'inner' | 'left'>, async (l, r, type) => {
        await load('t1', l);
        await load('t2', r);
        const plan = (await c.query(`EXPLAIN SELECT t1.id, t2.id FROM t1 ${type.toUpperCase()} JOIN t2 ON t2.id = t1.a`)).rows.map((x: Record<string, string>) => Object.values(x)[0]).join('\n');
        expect(plan).toContain('lookup join');
        const expected = refJoin(type, l, r, (x, y) => x.a !== null && x.a === y.id);
        expect(await rows(`SELECT t1.id, t2.id FROM t1 ${type.toUpperCase()} JOIN t2 ON t2.id = t1.a`)).toEqual(expected);
      }),
      { numRuns: 30 },
    );
  }, 60_000);

  it('GROUP BY aggregation matches a naive grouping', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, async (l) => {
        await load('t1', l);
        const groups = new Map<string, Row[]>();
        for (const r of l) {
          const k = show(r.a);
          groups.set(k, [...(groups.get(k) ?? []), r]);
        }
        const expected = [...groups].map(([k, rs]) => {
          const bs = rs.map((r) => r.b).filter((b): b is number => b !== null);
          const distinct = new Set(bs).size;
          const sum = bs.length === 0 ? null : bs.reduce((x, y) => x + y, 0);
          const min = bs.length === 0 ? null : Math.min(...bs);
          const max = bs.length === 0 ? null : Math.max(...bs);
          return `${k}|${rs.length}|${bs.length}|${distinct}|${show(sum)}|${show(min)}|${show(max)}`;
        });
        expect(await rows('SELECT a, count(*), count(b), count(DISTINCT b), sum(b), min(b), max(b) FROM t1 GROUP BY a')).toEqual(expected.sort());
      }),
      { numRuns: 40 },
    );
  }, 60_000);

  it('window functions match a naive evaluation', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, async (l) => {
        await load('t1', l);
        // ORDER BY b NULLS LAST within each partition of a; peers are equal b.
        const expected = l.map((r) => {
          const part = l.filter((x) => show(x.a) === show(r.a));
          const before = (x: Row): boolean => (r.b === null ? x.b !== null : x.b !== null && x.b < r.b);
          const peer = (x: Row): boolean => show(x.b) === show(r.b);
          const rowNumber = part.filter((x) => before(x) || (peer(x) && x.id <= r.id)).length;
          const rank = part.filter(before).length + 1;
          const dense = new Set(part.filter(before).map((x) => show(x.b))).size + 1;
          const frame = part.filter((x) => before(x) || peer(x)).map((x) => x.b).filter((b): b is number => b !== null);
          const sum = frame.length === 0 ? null : frame.reduce((x, y) => x + y, 0);
          return `${r.id}|${rowNumber}|${rank}|${dense}|${show(sum)}`;
        });
        const got = await rows(
          'SELECT id, row_number() OVER (PARTITION BY a ORDER BY b NULLS LAST, id), rank() OVER (PARTITION BY a ORDER BY b NULLS LAST), dense_rank() OVER (PARTITION BY a ORDER BY b NULLS LAST), sum(b) OVER (PARTITION BY a ORDER BY b NULLS LAST) FROM t1',
        );
        expect(got).toEqual(expected.sort());
      }),
      { numRuns: 40 },
    );
  }, 60_000);

  it('set operations match multiset references', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, rowsArb, async (l, r) => {
        await load('t1', l);
        await load('t2', r);
        const L = l.map((x) => show(x.a));
        const R = r.map((x) => show(x.a));
        const count = (xs: string[]): Map<string, number> => {
          const m = new Map<string, number>();
          for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
          return m;
        };
        const cl = count(L);
        const cr = count(R);
        const keys = new Set([...L, ...R]);
        const rep = (k: string, n: number): string[] => Array.from({ length: Math.max(0, n) }, () => k);
        const ref = {
          'UNION': [...keys],
          'UNION ALL': [...L, ...R],
          'INTERSECT': [...keys].filter((k) => cl.has(k) && cr.has(k)),
          'INTERSECT ALL': [...keys].flatMap((k) => rep(k, Math.min(cl.get(k) ?? 0, cr.get(k) ?? 0))),
          'EXCEPT': [...new Set(L)].filter((k) => !cr.has(k)),
          'EXCEPT ALL': [...cl].flatMap(([k, n]) => rep(k, n - (cr.get(k) ?? 0))),
        };
        for (const [op, exp] of Object.entries(ref)) expect(await rows(`SELECT a FROM t1 ${op} SELECT a FROM t2`), op).toEqual(exp.sort());
      }),
      { numRuns: 30 },
    );
  }, 60_000);
});
