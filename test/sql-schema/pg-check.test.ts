/**
 * The schema feature logic files (sql/testdata/logic/{index,…}.slt) run
 * unchanged against a real PostgreSQL 15: their expectations are
 * PostgreSQL's, not only Cairn's.
 */
import { describe, it } from 'vitest';
import { join } from 'node:path';
import { startPostgres } from '../support/postgres.js';
import { runSltFile } from '../sql/slt-runner.js';

const DIR = join(import.meta.dirname, '../../sql/testdata/logic');
const FILES = ['index.slt', 'alter.slt', 'view.slt', 'sequence.slt'];

describe('schema logic files agree with PostgreSQL 15', () => {
  for (const file of FILES) {
    it(file, async () => {
      const pg = await startPostgres();
      try {
        await runSltFile(join(DIR, file), file, pg.url, false);
      } finally {
        await pg.stop();
      }
    }, 120_000);
  }
});
