/**
 * The query-feature logic tests (join, aggregate, distinct, setop, subquery,
 * cte, values, …) run against a throwaway PostgreSQL 15: the committed
 * expectations are what PostgreSQL returns. SLT_PG_REWRITE=1 rewrites the
 * expected results from PostgreSQL (read the diff before committing).
 * Error directives are checked by SQLSTATE against PostgreSQL too.
 */
import { describe, it, beforeAll, afterAll } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { runSltFile } from '../sql/slt-runner.js';
import pg from 'pg';

const DIR = join(import.meta.dirname, '../../sql/testdata/logic');
const FEATURES = /^(datetime-fields|join|aggregate|distinct|setop|subquery|cte|window|values|array|jsonb|for-update|memory)/;
/** Files of Cairn-only behaviour (limits, unsupported constructs, locking through the KV). */
const CAIRN_ONLY = /^(memory|for-update)|-cairn\.slt$/;
const files = readdirSync(DIR).filter((f) => f.endsWith('.slt') && FEATURES.test(f) && !CAIRN_ONLY.test(f)).sort();

describe('query logic tests agree with PostgreSQL', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
  });
  for (const f of files) {
    it(f, async () => {
      const db = `slt_${f.replace(/\W/g, '_')}`;
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${db}`);
      await admin.query(`CREATE DATABASE ${db}`);
      await admin.end();
      const url = server.url.replace(/\/postgres$/, `/${db}`);
      await runSltFile(join(DIR, f), f, url, process.env.SLT_PG_REWRITE === '1');
    }, 60_000);
  }
});
