/**
 * test/compat/orm.test.ts — the ORM compatibility scripts of issue 7 part 3
 * (test/compat/orm/*.mjs), each run as a child Node process against an
 * in-process Cairn SQL server: schema creation through the ORM, CRUD, a join
 * and a transaction, with the results checked inside the script.
 */
import { describe, expect, it } from 'vitest';
import { startSqlServer } from '../support/sql-server.js';
import { runScript } from './run-script.js';

const SCRIPTS = ['knex', 'kysely', 'sequelize', 'drizzle', 'typeorm'];

describe('ORM scripts on Cairn', () => {
  // One server per script: drizzle-kit push manages every table of its database.
  for (const name of SCRIPTS) {
    it(`${name}: schema, CRUD, join, transaction`, async () => {
      const cairn = await startSqlServer();
      try {
        const r = await runScript(process.execPath, [`test/compat/orm/${name}.mjs`, `postgresql://root@${cairn.host}:${cairn.port}/defaultdb?sslmode=disable`]);
        expect(r.output).toContain(`${name}: ok`);
        expect(r.code).toBe(0);
      } finally {
        await cairn.stop();
      }
    }, 90_000);
  }
});
