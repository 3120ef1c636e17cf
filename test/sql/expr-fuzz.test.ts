/**
 * Random scalar expressions through the whole server (property): whatever
 * the expression, the answer is rows or a clean ErrorResponse with a
 * SQLSTATE — never an internal error (XX000 / a dropped connection) — and
 * the session stays usable. Expressions mix literals of every kind, NULLs,
 * parameters, the columns of a table, operators, and the builtins.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fc from 'fast-check';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

let srv: TestSqlServer;
let c: pg.Client;

beforeAll(async () => {
  srv = await startSqlServer();
  c = new pg.Client({ connectionString: srv.url, types: { getTypeParser: () => (v: string) => v } as unknown as pg.CustomTypesConfig });
  await c.connect();
  await c.query('CREATE TABLE f (k INT8 PRIMARY KEY, i INT4, x FLOAT8, n NUMERIC, s TEXT, b BOOL, d DATE)');
  await c.query("INSERT INTO f VALUES (1, 7, 2.5, 1.25, 'abc', true, '2020-01-01'), (2, NULL, NULL, NULL, NULL, NULL, NULL), (3, -2147483648, -0.0, -99.999, '', false, '1999-12-31')");
});
afterAll(async () => {
  await c.end();
  await srv.stop();
});

const leaf = fc.oneof(
  fc.integer({ min: -3, max: 3 }).map(String),
  fc.constantFrom('2147483647', '-2147483648', '9223372036854775807', '99999999999999999999', '0', '1.5', '0.0', '1e308', "'NaN'::FLOAT8"),
  fc.constantFrom("'abc'", "''", "'1'", "'x%'", "'2020-01-01'", "'t'", 'NULL', 'true', 'false'),
  fc.constantFrom('k', 'i', 'x', 'n', 's', 'b', 'd'),
);

const expr: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.tuple(tie('e'), fc.constantFrom('+', '-', '*', '/', '%', '^', '=', '<>', '<', '>=', '||', 'AND', 'OR'), tie('e')).map(([a, op, b]) => `(${a} ${op} ${b})`),
    tie('e').map((a) => `(NOT ${a})`),
    tie('e').map((a) => `(-${a})`),
    tie('e').map((a) => `(${a} IS NULL)`),
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([a, b, d]) => `(${a} BETWEEN ${b} AND ${d})`),
    fc.tuple(tie('e'), fc.array(tie('e'), { minLength: 1, maxLength: 3 })).map(([a, l]) => `(${a} IN (${l.join(', ')}))`),
    fc.tuple(tie('e'), tie('e')).map(([a, b]) => `(${a} LIKE ${b})`),
    fc.tuple(tie('e'), tie('e'), tie('e')).map(([a, b, d]) => `(CASE WHEN ${a} THEN ${b} ELSE ${d} END)`),
    fc.array(tie('e'), { minLength: 1, maxLength: 3 }).map((l) => `COALESCE(${l.join(', ')})`),
    fc.tuple(tie('e'), tie('e')).map(([a, b]) => `NULLIF(${a}, ${b})`),
    fc.tuple(tie('e'), fc.constantFrom('INT2', 'INT4', 'INT8', 'FLOAT4', 'FLOAT8', 'NUMERIC', 'TEXT', 'BOOL', 'DATE', 'VARCHAR(2)', 'BYTEA')).map(([a, t]) => `CAST(${a} AS ${t})`),
    fc.tuple(fc.constantFrom('abs', 'length', 'upper', 'round', 'floor', 'sqrt', 'ln', 'sign', 'trim', 'reverse', 'md5'), tie('e')).map(([f, a]) => `${f}(${a})`),
    fc.tuple(fc.constantFrom('substr', 'left', 'repeat', 'mod', 'power', 'strpos', 'greatest', 'least', 'concat'), tie('e'), tie('e')).map(([f, a, b]) => `${f}(${a}, ${b})`),
  ),
})).e;

describe('expressions (fuzz)', () => {
  it('every random expression yields rows or a clean SQL error', async () => {
    const seen = { rows: 0, errors: 0 };
    await fc.assert(
      fc.asyncProperty(expr, fc.boolean(), async (e, prepared) => {
        const text = `SELECT ${e} FROM f WHERE k >= $1 ORDER BY k`;
        try {
          await c.query({ text, values: [1], ...(prepared ? { name: undefined } : {}) });
          seen.rows++;
        } catch (err) {
          seen.errors++;
          const code = (err as { code?: string }).code;
          expect(code, `${text}: ${(err as Error).message}`).toMatch(/^(22|42|0A|54)[0-9A-Z]{3}$/);
        }
        const ok = await c.query('SELECT 1 AS one');
        expect(ok.rows).toEqual([{ one: '1' }]);
      }),
      // A fixed seed: the outcome counts below are a property of the
      // generated set, so an unseeded run could land on the threshold (CI of
      // c005ba3 saw exactly 40 rows). EXPR_FUZZ_SEED explores other sets.
      { numRuns: 400, seed: Number(process.env['EXPR_FUZZ_SEED'] ?? 20261130) },
    );
    expect(srv.internalErrors).toEqual([]);
    // Both outcomes are exercised.
    expect(seen.rows).toBeGreaterThan(40);
    expect(seen.errors).toBeGreaterThan(40);
  });
});
