/**
 * Schema-feature benchmark (prints figures; never part of `npm test`):
 *   1. secondary-index point lookups — prepared SELECT by an indexed
 *      non-key column, covering (index-only) and non-covering (index join),
 *      over pgwire with N connections;
 *   2. COPY FROM STDIN of YCSB-shaped rows (ycsb_key + field0..field9 of
 *      100 bytes) through psql.
 * against the in-process Cairn server over MemoryKV and a throwaway
 * PostgreSQL 15, in the same run.
 *
 *   npx tsx test/sql-schema/schema-bench.ts [--conns 8] [--seconds 3] [--rows 10000] [--copy-rows 100000]
 *
 * Caveat: Cairn's server shares this process's event loop with the pg
 * clients (PostgreSQL runs in its own processes), which flatters PostgreSQL.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startSqlServer } from '../support/sql-server.js';
import { startPostgres } from '../support/postgres.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}

const CONNS = arg('conns', 8);
const SECONDS = arg('seconds', 3);
const ROWS = arg('rows', 10_000);
const COPY_ROWS = arg('copy-rows', 100_000);

function psqlFile(url: string, sql: string, file: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const p = spawn('psql', [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', `\\copy ${sql} FROM '${file}'`], { stdio: ['ignore', 'ignore', 'inherit'] });
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`psql exited ${code}`))));
  });
}

async function lookups(url: string, text: string): Promise<number> {
  const clients = await Promise.all(Array.from({ length: CONNS }, async () => {
    const c = new pg.Client(url);
    await c.connect();
    return c;
  }));
  const end = performance.now() + SECONDS * 1000;
  let ops = 0;
  await Promise.all(clients.map(async (c, w) => {
    let i = w;
    while (performance.now() < end) {
      i = (i * 1103515245 + 12345) % 2147483648;
      const r = await c.query({ name: 'lk', text, values: [i % ROWS] });
      if (r.rows.length !== 1) throw new Error('lookup missed');
      ops++;
    }
  }));
  await Promise.all(clients.map((c) => c.end()));
  return ops / SECONDS;
}

async function bench(name: string, url: string, dir: string): Promise<void> {
  const c = new pg.Client(url);
  await c.connect();
  await c.query('CREATE TABLE t (k INT PRIMARY KEY, a INT, v TEXT)');
  for (let i = 0; i < ROWS; i += 1000) {
    const vals: string[] = [];
    for (let j = i; j < i + 1000 && j < ROWS; j++) vals.push(`(${j}, ${(j * 7919) % ROWS}, 'value-${j}')`);
    await c.query(`INSERT INTO t VALUES ${vals.join(',')}`);
  }
  await c.query('CREATE INDEX t_a ON t (a)');
  await c.query('ANALYZE t').catch(() => undefined);
  const covering = await lookups(url, 'SELECT k FROM t WHERE a = $1');
  const join_ = await lookups(url, 'SELECT k, v FROM t WHERE a = $1');
  const fields = Array.from({ length: 10 }, (_, i) => `field${i} TEXT`).join(', ');
  await c.query(`CREATE TABLE usertable (ycsb_key VARCHAR(255) PRIMARY KEY, ${fields})`);
  await c.end();
  const file = join(dir, 'ycsb.tsv');
  const ms = await psqlFile(url, 'usertable', file);
  console.log(`${name.padEnd(10)} index lookup (covering) ${covering.toFixed(0).padStart(7)} ops/s | index join ${join_.toFixed(0).padStart(7)} ops/s | COPY ${COPY_ROWS} YCSB rows ${(COPY_ROWS / (ms / 1000)).toFixed(0).padStart(7)} rows/s (${(ms / 1000).toFixed(2)} s)`);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-schema-bench-'));
  const pad = 'x'.repeat(100);
  const lines: string[] = [];
  for (let i = 0; i < COPY_ROWS; i++) lines.push([`user${String(i).padStart(10, '0')}`, ...Array.from({ length: 10 }, (_, f) => `${f}${pad.slice(1)}`)].join('\t'));
  writeFileSync(join(dir, 'ycsb.tsv'), lines.join('\n') + '\n');
  console.log(`conns=${CONNS} seconds=${SECONDS} rows=${ROWS} copy-rows=${COPY_ROWS}`);
  const srv = await startSqlServer();
  try {
    await bench('cairn', srv.url, dir);
  } finally {
    await srv.stop();
  }
  const p = await startPostgres();
  try {
    await bench('postgres', p.url, dir);
  } finally {
    await p.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
