/**
 * SQL executor micro-benchmark (prints figures; never part of `npm test`):
 * point SELECT by primary key and single-row UPDATE through prepared
 * statements over pgwire, against the in-process server over MemoryKV.
 *
 *   npm run build && node dist/test/sql/sql-bench.js [--conns 16] [--seconds 5] [--rows 10000] [--real-kv]
 *
 * --real-kv serves SQL from node 1 of a 3-node in-process cluster (src/kv's
 * TxnDB over Raft and MVCC on memory engines) instead of MemoryKV.
 *
 * The server runs in a child process (this file with `--server`), the pg
 * clients in this one, so client and server do not share an event loop.
 * Reports ops/s, p50/p99 latency and the server process's CPU time per
 * statement (the figure least disturbed by other load on the machine). SQL_BENCH_PROF=<dir>
 * writes a CPU profile of the server process.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startSqlServer } from '../support/sql-server.js';
import type { KVDB } from '../../sql/kv.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}

async function server(): Promise<void> {
  let db: KVDB | undefined;
  if (process.argv.includes('--real-kv')) {
    // The real transactional KV: a 3-node in-process cluster, SQL on node 1.
    const { TestCluster } = await import('../support/test-cluster.js');
    const { startTxnCluster } = await import('../kv-txn/support.js');
    const { dbs } = await startTxnCluster((o) => TestCluster.start(o));
    db = dbs[0];
  }
  const srv = await startSqlServer({ insecure: true, ...(db !== undefined ? { db } : {}) });
  process.send?.({ port: srv.port });
  process.on('message', async (m) => {
    if (m === 'cpu') process.send?.({ cpu: process.cpuUsage() });
    if (m === 'stop') {
      await srv.stop();
      process.exit(0);
    }
  });
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

type Child = ReturnType<typeof fork>;

/** The server process's CPU time so far (user + system, µs). */
function serverCpu(child: Child): Promise<number> {
  return new Promise((resolve) => {
    const on = (m: unknown): void => {
      const cpu = (m as { cpu?: { user: number; system: number } }).cpu;
      if (cpu === undefined) return;
      child.off('message', on);
      resolve(cpu.user + cpu.system);
    };
    child.on('message', on);
    child.send('cpu');
  });
}

async function run(child: Child, url: string, conns: number, seconds: number, rows: number, name: string, text: string, params: () => unknown[]): Promise<void> {
  const clients = await Promise.all(
    Array.from({ length: conns }, async () => {
      const c = new pg.Client(url);
      await c.connect();
      return c;
    }),
  );
  const lat: number[] = [];
  let ops = 0;
  const cpu0 = await serverCpu(child);
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    clients.map(async (c, i) => {
      const q = { name: `${name}${i}`, text, values: [] as unknown[] };
      while (performance.now() < end) {
        q.values = params();
        const t0 = performance.now();
        await c.query(q);
        lat.push(performance.now() - t0);
        ops++;
      }
    }),
  );
  const cpu = (await serverCpu(child)) - cpu0;
  lat.sort((a, b) => a - b);
  console.log(
    `${name.padEnd(14)} ${conns} conns, ${rows} rows: ${Math.round(ops / seconds).toLocaleString('en-US')} ops/s  p50 ${pct(lat, 50).toFixed(2)} ms  p99 ${pct(lat, 99).toFixed(2)} ms  server CPU ${(cpu / ops).toFixed(1)} µs/op`,
  );
  await Promise.all(clients.map((c) => c.end()));
}

async function main(): Promise<void> {
  const conns = arg('conns', 16);
  const seconds = arg('seconds', 5);
  const rows = arg('rows', 10_000);
  // SQL_BENCH_PROF=<dir> writes a CPU profile of the server process there.
  const prof = process.env.SQL_BENCH_PROF;
  const child = fork(fileURLToPath(import.meta.url), ['--server', ...(process.argv.includes('--real-kv') ? ['--real-kv'] : [])], { stdio: 'inherit', execArgv: prof !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : [] });
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve((m as { port: number }).port)));
  const url = `postgresql://root@127.0.0.1:${port}/defaultdb`;
  const c = new pg.Client(url);
  await c.connect();
  await c.query('CREATE TABLE usertable (ycsb_key INT8 PRIMARY KEY, field0 TEXT, field1 TEXT, field2 INT8)');
  for (let i = 0; i < rows; i += 500) {
    const vals: string[] = [];
    for (let j = i; j < Math.min(rows, i + 500); j++) vals.push(`(${j}, '${'x'.repeat(100)}', '${'y'.repeat(100)}', ${j})`);
    await c.query(`INSERT INTO usertable VALUES ${vals.join(',')}`);
  }
  await c.end();
  const key = (): number => Math.floor(Math.random() * rows);
  await run(child, url, conns, 1, rows, 'warmup', 'SELECT field0, field1, field2 FROM usertable WHERE ycsb_key = $1', () => [key()]);
  const only = process.env.SQL_BENCH_ONLY;
  if (only === undefined || only === 'select') await run(child, url, conns, seconds, rows, 'point-select', 'SELECT field0, field1, field2 FROM usertable WHERE ycsb_key = $1', () => [key()]);
  if (only === undefined || only === 'update') await run(child, url, conns, seconds, rows, 'update', 'UPDATE usertable SET field2 = field2 + 1 WHERE ycsb_key = $1', () => [key()]);
  child.send('stop');
}

if (process.argv.includes('--server')) void server();
else void main();
