/**
 * test/compat/orm.test.ts — the ORM compatibility scripts of issue 7 part 3
 * (test/compat/orm/*.mjs), each run as a child Node process against an
 * in-process Cairn SQL server: schema creation through the ORM, CRUD, a join
 * and a transaction, with the results checked inside the script.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

/** Runs `node <script> <url>` (asynchronously: the server lives in this process). */
export function runScript(cmd: string, args: readonly string[], timeoutMs = 60_000): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    p.stdout.on('data', (b: Buffer) => (output += b.toString()));
    p.stderr.on('data', (b: Buffer) => (output += b.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const SCRIPTS = ['knex', 'kysely', 'sequelize', 'drizzle'];

describe('ORM scripts on Cairn', () => {
  let cairn: TestSqlServer;
  let url: string;
  beforeAll(async () => {
    cairn = await startSqlServer();
    url = `postgresql://root@${cairn.host}:${cairn.port}/defaultdb?sslmode=disable`;
  });
  afterAll(async () => {
    await cairn?.stop();
  });
  for (const name of SCRIPTS) {
    it(`${name}: schema, CRUD, join, transaction`, async () => {
      const r = await runScript(process.execPath, [`test/compat/orm/${name}.mjs`, url]);
      expect(r.output).toContain(`${name}: ok`);
      expect(r.code).toBe(0);
    }, 90_000);
  }
});
