/**
 * The schema feature logic files (sql/testdata/logic/{index,alter,view,
 * sequence,fk,fk-primary-key}.slt) run unchanged against a real PostgreSQL 15: their
 * expectations are PostgreSQL's, not only Cairn's. One server, one database
 * per file.
 */
import { describe, it, beforeAll, afterAll } from 'vitest';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres } from '../support/postgres.js';
import { runSltFile } from '../sql/slt-runner.js';

const DIR = join(import.meta.dirname, '../../sql/testdata/logic');
const FILES = ['index.slt', 'alter.slt', 'view.slt', 'sequence.slt', 'fk.slt', 'fk-primary-key.slt'];

describe('schema logic files agree with PostgreSQL 15', () => {
  let server: Awaited<ReturnType<typeof startPostgres>> | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  for (const file of FILES) {
    it(file, async () => {
      const url = (server as { url: string }).url;
      const db = `slt_${file.replace('.slt', '').replace(/-/g, '_')}`;
      const admin = new pg.Client(url);
      await admin.connect();
      await admin.query(`CREATE DATABASE ${db}`);
      await admin.end();
      const u = new URL(url);
      u.pathname = `/${db}`;
      await runSltFile(join(DIR, file), file, u.toString(), false);
    }, 60_000);
  }
});
