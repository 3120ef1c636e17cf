/**
 * test/compat/clients.test.ts — driver compatibility scripts of issue 7 part 3
 * against an in-process Cairn SQL server: psycopg2 and psycopg 3 (Debian's
 * python3-psycopg2 / python3-psycopg, run with /usr/bin/python3) and PgJDBC
 * (Debian's libpostgresql-jdbc-java with the machine's Java 17). Each script
 * runs CRUD, a join and transactions and checks the results itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { runScript } from './run-script.js';

const CLIENTS: readonly { name: string; cmd: string; args: readonly string[] }[] = [
  { name: 'psycopg2', cmd: '/usr/bin/python3', args: ['test/compat/clients/psycopg2_crud.py'] },
  { name: 'psycopg3', cmd: '/usr/bin/python3', args: ['test/compat/clients/psycopg3_crud.py'] },
  { name: 'jdbc', cmd: 'java', args: ['-cp', '/usr/share/java/postgresql.jar', 'test/compat/clients/JdbcCrud.java'] },
];

describe('driver scripts on Cairn', () => {
  let cairn: TestSqlServer;
  let url: string;
  beforeAll(async () => {
    cairn = await startSqlServer();
    url = `postgresql://root@${cairn.host}:${cairn.port}/defaultdb?sslmode=disable`;
  });
  afterAll(async () => {
    await cairn?.stop();
  });
  for (const c of CLIENTS) {
    it(`${c.name}: CRUD, join, transactions`, async () => {
      const r = await runScript(c.cmd, [...c.args, url]);
      expect(r.output).toContain(`${c.name}: ok`);
      expect(r.code).toBe(0);
    }, 90_000);
  }
});
