/**
 * Referential actions against a model (issue 7; sql/exec/fk-actions.ts):
 * random inserts, deletes and key updates on a parent with three children —
 * ON DELETE CASCADE ON UPDATE CASCADE, ON DELETE SET NULL, and NO ACTION —
 * run through pgwire on MemoryKV and through a plain in-memory model of
 * PostgreSQL's semantics; after every statement the SQLSTATE (or success)
 * and, at the end, all four tables must agree.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fc from 'fast-check';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

type Op =
  | { readonly kind: 'insP'; readonly id: number }
  | { readonly kind: 'delP'; readonly id: number }
  | { readonly kind: 'updP'; readonly id: number; readonly to: number }
  | { readonly kind: 'insC'; readonly child: 1 | 2 | 3; readonly id: number; readonly pid: number | null };

const key = fc.integer({ min: 0, max: 5 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.tuple(fc.constantFrom(1 as const, 2 as const, 3 as const), fc.integer({ min: 0, max: 9 }), fc.option(key, { nil: null, freq: 5 })).map(([child, id, pid]) => ({ kind: 'insC' as const, child, id, pid })), weight: 3 },
  key.map((id) => ({ kind: 'insP' as const, id })),
  key.map((id) => ({ kind: 'delP' as const, id })),
  fc.tuple(key, key).map(([id, to]) => ({ kind: 'updP' as const, id, to })),
);

/** PostgreSQL's outcome of each op, applied to plain maps. */
class Model {
  readonly p = new Set<number>();
  readonly c = [new Map<number, number | null>(), new Map<number, number | null>(), new Map<number, number | null>()];

  apply(o: Op): string {
    const [c1, c2, c3] = this.c as [Map<number, number | null>, Map<number, number | null>, Map<number, number | null>];
    const refs = (m: Map<number, number | null>, k: number): number[] => [...m].filter(([, v]) => v === k).map(([id]) => id);
    switch (o.kind) {
      case 'insP':
        if (this.p.has(o.id)) return '23505';
        this.p.add(o.id);
        return 'ok';
      case 'insC': {
        const m = this.c[o.child - 1] as Map<number, number | null>;
        if (m.has(o.id)) return '23505';
        if (o.pid !== null && !this.p.has(o.pid)) return '23503';
        m.set(o.id, o.pid);
        return 'ok';
      }
      case 'delP':
        if (!this.p.has(o.id)) return 'ok';
        if (refs(c3, o.id).length > 0) return '23503';
        this.p.delete(o.id);
        for (const id of refs(c1, o.id)) c1.delete(id);
        for (const id of refs(c2, o.id)) c2.set(id, null);
        return 'ok';
      case 'updP':
        if (!this.p.has(o.id) || o.id === o.to) return 'ok';
        if (this.p.has(o.to)) return '23505';
        if (refs(c3, o.id).length > 0 || refs(c2, o.id).length > 0) return '23503';
        this.p.delete(o.id);
        this.p.add(o.to);
        for (const id of refs(c1, o.id)) c1.set(id, o.to);
        return 'ok';
    }
  }
}

function sqlOf(o: Op): [string, unknown[]] {
  switch (o.kind) {
    case 'insP':
      return ['INSERT INTO p VALUES ($1)', [o.id]];
    case 'delP':
      return ['DELETE FROM p WHERE id = $1', [o.id]];
    case 'updP':
      return ['UPDATE p SET id = $2 WHERE id = $1', [o.id, o.to]];
    case 'insC':
      return [`INSERT INTO c${o.child} VALUES ($1, $2)`, [o.id, o.pid]];
  }
}

describe('foreign-key actions agree with a model', () => {
  let srv: TestSqlServer;
  let c: pg.Client;
  beforeAll(async () => {
    srv = await startSqlServer();
    c = new pg.Client(srv.url);
    await c.connect();
    await c.query('CREATE TABLE p (id INT PRIMARY KEY)');
    await c.query('CREATE TABLE c1 (id INT PRIMARY KEY, pid INT REFERENCES p ON DELETE CASCADE ON UPDATE CASCADE)');
    await c.query('CREATE TABLE c2 (id INT PRIMARY KEY, pid INT REFERENCES p ON DELETE SET NULL)');
    await c.query('CREATE TABLE c3 (id INT PRIMARY KEY, pid INT REFERENCES p)');
  });
  afterAll(async () => {
    await c?.end();
    await srv?.stop();
  });

  it('random statements: same outcomes and same final tables', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        await c.query('TRUNCATE p, c1, c2, c3');
        const m = new Model();
        // Parents 0..3 exist at the start, so most child inserts and parent changes have something to act on.
        for (const o of [0, 1, 2, 3].map((id) => ({ kind: 'insP' as const, id })).concat(ops as never[])) {
          const want = m.apply(o);
          const [sql, params] = sqlOf(o);
          const got = await c.query(sql, params).then(
            () => 'ok',
            (e: { code?: string }) => e.code ?? 'error',
          );
          expect(got, `${sql} ${JSON.stringify(params)}`).toBe(want);
        }
        const rows = async (t: string): Promise<string[]> => (await c.query(`SELECT * FROM ${t}`)).rows.map((r: Record<string, unknown>) => JSON.stringify(Object.values(r))).sort();
        expect(await rows('p')).toEqual([...m.p].map((id) => JSON.stringify([id])).sort());
        for (let i = 0; i < 3; i++) {
          expect(await rows(`c${i + 1}`)).toEqual([...(m.c[i] as Map<number, number | null>)].map(([id, pid]) => JSON.stringify([id, pid])).sort());
        }
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
