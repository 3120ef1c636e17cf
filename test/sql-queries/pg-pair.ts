/**
 * test/sql-queries/pg-pair.ts — one client on an in-process Cairn SQL server
 * and one on a throwaway PostgreSQL 15, for tests that run the same SQL on
 * both and compare (PostgreSQL is the reference). `schema` runs on both.
 */
import pg from 'pg';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

export interface PgPair {
  /** [Cairn, PostgreSQL] */
  readonly clients: readonly [pg.Client, pg.Client];
  /** Runs `sql` on both (after `prepare`, on each) and returns both answers as arrays of row arrays. */
  both(prepare: readonly string[], sql: string): Promise<[unknown[], unknown[]]>;
  stop(): Promise<void>;
}

export async function startPgPair(schema: readonly string[]): Promise<PgPair> {
  const [cairn, pgs]: [TestSqlServer, PostgresServer] = await Promise.all([startSqlServer(), startPostgres()]);
  const a = new pg.Client(cairn.url);
  const b = new pg.Client(pgs.url);
  await Promise.all([a.connect(), b.connect()]);
  for (const c of [a, b]) for (const s of schema) await c.query(s);
  return {
    clients: [a, b],
    async both(prepare, sql) {
      const out: unknown[][] = [];
      for (const c of [a, b]) {
        for (const p of prepare) await c.query(p);
        out.push((await c.query({ text: sql, rowMode: 'array' })).rows);
      }
      return [out[0] as unknown[], out[1] as unknown[]];
    },
    async stop() {
      await Promise.all([a.end(), b.end()]);
      await Promise.all([cairn.stop(), pgs.stop()]);
    },
  };
}
