/**
 * Window frames against PostgreSQL 15 as the reference (issue 7, queries;
 * STYLE.md "a fast version and a simple version"): fast-check generates a
 * table (with NULLs and ties) and a frame — ROWS / RANGE / GROUPS, any valid
 * pair of bounds with offsets, any EXCLUDE — and the same query must return
 * the same rows on Cairn and on PostgreSQL. The aggregates are the
 * order-insensitive ones (sum, count, min, max), so rows that tie in the
 * window's ORDER BY may be visited in any order without changing the answer.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgPair, type PgPair } from './pg-pair.js';

type Bound = { rank: number; text: (k: number) => string };
// Ranks order the bounds: a frame's end never ranks below its start (PostgreSQL rejects that).
const BOUNDS: Bound[] = [
  { rank: 0, text: () => 'UNBOUNDED PRECEDING' },
  { rank: 1, text: (k) => `${k} PRECEDING` },
  { rank: 2, text: () => 'CURRENT ROW' },
  { rank: 3, text: (k) => `${k} FOLLOWING` },
  { rank: 4, text: () => 'UNBOUNDED FOLLOWING' },
];

const frameArb = fc
  .record({
    mode: fc.constantFrom('ROWS', 'RANGE', 'GROUPS'),
    start: fc.integer({ min: 0, max: 3 }),
    endDelta: fc.integer({ min: 0, max: 4 }),
    k1: fc.integer({ min: 0, max: 3 }),
    k2: fc.integer({ min: 0, max: 3 }),
    exclude: fc.constantFrom('', ' EXCLUDE CURRENT ROW', ' EXCLUDE GROUP', ' EXCLUDE TIES', ' EXCLUDE NO OTHERS'),
    desc: fc.boolean(),
    nullsFirst: fc.boolean(),
    partition: fc.boolean(),
  })
  .map((f) => {
    const start = BOUNDS[f.start] as Bound;
    const end = BOUNDS[Math.max(1, Math.min(4, f.start + f.endDelta))] as Bound;
    const dir = `${f.desc ? ' DESC' : ''} NULLS ${f.nullsFirst ? 'FIRST' : 'LAST'}`;
    // ROWS orders totally (x, id); RANGE / GROUPS by x alone, so peers exist.
    const order = f.mode === 'ROWS' ? `x${dir}, id` : `x${dir}`;
    return `${f.partition ? 'PARTITION BY p ' : ''}ORDER BY ${order} ${f.mode} BETWEEN ${start.text(f.k1)} AND ${end.text(f.k2)}${f.exclude}`;
  });

const rowsArb = fc.array(fc.record({ p: fc.integer({ min: 0, max: 2 }), x: fc.option(fc.integer({ min: 0, max: 6 }), { freq: 5 }) }), { minLength: 0, maxLength: 14 });

describe('window frames agree with PostgreSQL', () => {
  let pair: PgPair;
  beforeAll(async () => {
    pair = await startPgPair(['CREATE TABLE wf (id INT PRIMARY KEY, p INT, x INT)']);
  }, 90_000);
  afterAll(async () => {
    await pair?.stop();
  });

  it('sum / count / min / max over random frames and tables', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, frameArb, async (rows, frame) => {
        const values = rows.map((r, i) => `(${i}, ${r.p}, ${r.x ?? 'NULL'})`).join(', ');
        const sql = `SELECT id, sum(id) OVER w, count(*) OVER w, min(id) OVER w, max(x) OVER w FROM wf WINDOW w AS (${frame}) ORDER BY id`;
        const answers = await pair.both(['DELETE FROM wf', ...(rows.length > 0 ? [`INSERT INTO wf VALUES ${values}`] : [])], sql);
        expect(answers[0], sql).toEqual(answers[1]);
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});
