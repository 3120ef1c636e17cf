/**
 * test/compat/run-against-cairn.ts — manual runner for the compatibility
 * scripts: starts an in-process Cairn SQL server on the in-memory KV, runs
 * `<cmd> <args…> <url>` against it, stops the server and exits with the
 * command's status.
 *
 *   npx tsx test/compat/run-against-cairn.ts node test/compat/orm/typeorm.mjs
 *   npx tsx test/compat/run-against-cairn.ts /usr/bin/python3 test/compat/clients/psycopg2_crud.py
 */
import { startSqlServer } from '../support/sql-server.js';
import { runScript } from './run-script.js';

const [cmd, ...args] = process.argv.slice(2);
if (cmd === undefined) {
  process.stderr.write('usage: run-against-cairn.ts <cmd> [args…]\n');
  process.exit(2);
}
const server = await startSqlServer();
const url = `postgresql://root@${server.host}:${server.port}/defaultdb?sslmode=disable`;
const r = await runScript(cmd, [...args, url], 30 * 60_000);
process.stdout.write(r.output);
await server.stop();
process.exit(r.code ?? 1);
