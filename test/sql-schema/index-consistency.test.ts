/**
 * Secondary-index consistency under random DML: a table with a unique, a
 * non-unique composite (DESC), and a STORING index gets random INSERT /
 * UPSERT / UPDATE (incl. primary-key changes) / DELETE statements through
 * pgwire; after every run each index must hold exactly the entries the
 * primary rows imply (checkIndexes scans both), and index-driven SELECTs
 * must return what a full scan filtered in JS returns.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import pg from 'pg';
import { startSqlServer } from '../support/sql-server.js';
import { checkIndexes } from './index-check.js';

type Op =
  | { kind: 'insert'; k: number; a: number | null; b: number | null; c: string }
  | { kind: 'upsert'; k: number; a: number | null; b: number | null; c: string }
  | { kind: 'update'; lo: number; hi: number; a: number | null }
  | { kind: 'updateKey'; k: number; to: number }
  | { kind: 'updateB'; k: number; b: number | null }
  | { kind: 'delete'; a: number };

const small = fc.integer({ min: 0, max: 12 });
const nullable = fc.option(fc.integer({ min: 0, max: 6 }), { nil: null, freq: 4 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), k: small, a: nullable, b: nullable, c: fc.constantFrom('p', 'q', 'r') }),
  fc.record({ kind: fc.constant('upsert' as const), k: small, a: nullable, b: nullable, c: fc.constantFrom('p', 'q', 'r') }),
  fc.record({ kind: fc.constant('update' as const), lo: small, hi: small, a: nullable }),
  fc.record({ kind: fc.constant('updateKey' as const), k: small, to: small }),
  fc.record({ kind: fc.constant('updateB' as const), k: small, b: nullable }),
  fc.record({ kind: fc.constant('delete' as const), a: fc.integer({ min: 0, max: 6 }) }),
);

function sqlOf(op: Op): { text: string; values: unknown[] } {
  switch (op.kind) {
    case 'insert':
      return { text: 'INSERT INTO t VALUES ($1, $2, $3, $4)', values: [op.k, op.a, op.b, op.c] };
    case 'upsert':
      return { text: 'INSERT INTO t VALUES ($1, $2, $3, $4) ON CONFLICT (k) DO UPDATE SET a = excluded.a, b = excluded.b, c = excluded.c', values: [op.k, op.a, op.b, op.c] };
    case 'update':
      return { text: 'UPDATE t SET a = $3 WHERE k >= $1 AND k <= $2', values: [op.lo, op.hi, op.a] };
    case 'updateKey':
      return { text: 'UPDATE t SET k = $2 WHERE k = $1', values: [op.k, op.to] };
    case 'updateB':
      return { text: 'UPDATE t SET b = $2 WHERE k = $1', values: [op.k, op.b] };
    case 'delete':
      return { text: 'DELETE FROM t WHERE a = $1', values: [op.a] };
  }
}

describe('secondary indexes stay consistent with the primary rows', () => {
  it('random DML (property)', async () => {
    const srv = await startSqlServer();
    const c = new pg.Client(srv.url);
    await c.connect();
    try {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), fc.boolean(), async (ops, inTxn) => {
          const name = `t`;
          await c.query(`DROP TABLE IF EXISTS ${name}`);
          await c.query(`CREATE TABLE ${name} (k INT PRIMARY KEY, a INT, b INT UNIQUE, c TEXT)`);
          await c.query(`CREATE INDEX t_a_c ON ${name} (a DESC, c)`);
          await c.query(`CREATE INDEX t_c_s ON ${name} (c) STORING (a)`);
          run++;
          if (inTxn) await c.query('BEGIN');
          for (const op of ops) {
            if (inTxn) await c.query('SAVEPOINT s');
            try {
              const q = sqlOf(op);
              await c.query(q.text, q.values);
              if (inTxn) await c.query('RELEASE SAVEPOINT s');
            } catch (e) {
              const code = (e as { code?: string }).code;
              expect(['23505', '21000']).toContain(code);
              if (inTxn) await c.query('ROLLBACK TO SAVEPOINT s');
            }
          }
          if (inTxn) await c.query('COMMIT');
          const check = await checkIndexes(srv.kv, 'defaultdb', name);
          expect(check.problems).toEqual([]);
          const all = (await c.query('SELECT k, a, b, c FROM t')).rows as { k: number; a: number | null; b: number | null; c: string }[];
          for (let a = 0; a <= 6; a++) {
            const got = (await c.query('SELECT k FROM t WHERE a = $1', [a])).rows.map((r) => r.k as number).sort((x, y) => x - y);
            expect(got).toEqual(all.filter((r) => r.a === a).map((r) => r.k).sort((x, y) => x - y));
            const viaB = (await c.query('SELECT k, c FROM t WHERE b = $1', [a])).rows;
            expect(viaB.map((r) => r.k)).toEqual(all.filter((r) => r.b === a).map((r) => r.k));
          }
          const viaC = (await c.query("SELECT k, a FROM t WHERE c = 'q'")).rows.map((r) => `${r.k}:${r.a}`).sort();
          expect(viaC).toEqual(all.filter((r) => r.c === 'q').map((r) => `${r.k}:${r.a}`).sort());
        }),
        { numRuns: 40 },
      );
      expect(run).toBeGreaterThan(0);
    } finally {
      await c.end();
      await srv.stop();
    }
  }, 120_000);
});
