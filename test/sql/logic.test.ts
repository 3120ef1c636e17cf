/**
 * SQL logic tests: runs every sql/testdata/logic/*.slt against a real pgwire
 * server (in-process, over MemoryKV) through the `pg` client over TCP.
 *
 * File format (sqllogictest / CockroachDB logic-test style):
 *
 *   # comment
 *   statement ok
 *   CREATE TABLE t (a INT PRIMARY KEY)
 *
 *   statement error <regex on the message>
 *   statement error pgcode 23505 [<regex>]
 *   INSERT …
 *
 *   query IT [rowsort|valuesort|nosort] [colnames]
 *   SELECT a, b FROM t
 *   ----
 *   1 x
 *
 *   query error pgcode 22012 [<regex>]
 *   SELECT 1/0
 *
 * A statement runs until a blank line (or `----`). Values are PostgreSQL's
 * text output; NULL prints as NULL, the empty string as ·, and a value's
 * spaces as _ so columns stay separable (except in one-column results). The type letters only fix the
 * column count. Each file gets a fresh server (and so a fresh database).
 * SLT_REWRITE=1 rewrites the expected results from the actual ones (read the
 * diff before committing).
 */
import { describe, it, expect } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startSqlServer } from '../support/sql-server.js';
import { runSltFile } from './slt-runner.js';

const DIR = join(import.meta.dirname, '../../sql/testdata/logic');
const REWRITE = process.env.SLT_REWRITE === '1';
const files = readdirSync(DIR).filter((f) => f.endsWith('.slt')).sort();

describe('sql logic tests', () => {
  for (const file of files) {
    it(file, async () => {
      const srv = await startSqlServer();
      try {
        await runSltFile(join(DIR, file), file, srv.url, REWRITE);
      } finally {
        await srv.stop();
      }
      expect(srv.internalErrors).toEqual([]);
    }, 60_000);
  }
});
