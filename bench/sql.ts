/**
 * `npm run bench:sql`: SQL statements over pgwire with prepared statements
 * on a 3-node local Cairn cluster (started here; replication factor 3) and on
 * PostgreSQL 15 (synchronous_commit=on) in the same run, side by side with
 * the ratio:
 *
 *   point-select   SELECT by primary key                 (bench_rows, 10,000 rows)
 *   update         single-row UPDATE by primary key
 *   insert-10col   10-column INSERT (fresh keys)          (bench_ins)
 *   index-lookup   point lookup on a secondary index     (bench_rows.k, unique)
 *   join-10        2-table join returning 10 rows        (bench_parent ⋈ bench_rows on g)
 *   group-by       GROUP BY over the 10,000 rows         (100 groups)
 *   copy           COPY FROM STDIN of 100,000 YCSB-shaped rows (one stream; rows/s)
 *
 *   node dist/bench/sql.js [--conns 64] [--duration 5s] [--warmup 2s] [--rows 10000]
 *        [--copy-rows 100000] [--skip-postgres] [--cairn-only]
 *        [--only join-10,group-by,copy] [--out bench/results]
 *
 * A statement that fails with SQLSTATE 0A000 is reported "unsupported".
 * Clients are spread over the nodes (client i on node i % 3). Server CPU
 * seconds per statement come from /proc. Writes bench/results/sql-<date>.md
 * and .json. Every process started here is stopped in `finally`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import pg from 'pg';
import postgres from 'postgres';
import { parseDuration } from '../src/workload/index.js';
import { closedLoop, type LoopResult } from './support/closed-loop.js';
import { startCairn, startPostgresTarget, type BenchTarget } from './support/cluster.js';
import { cpuMeter } from './support/proc-stats.js';
import { mdTable, ratio } from './support/report.js';

interface Opts {
  conns: number;
  duration: number;
  /** Unrecorded run of each statement before it is measured (ms). */
  warmup: number;
  rows: number;
  copyRows: number;
  cairnOnly?: boolean;
  skipPostgres?: boolean;
  /** Comma-separated statement names to run (copy included); all when absent. */
  only?: string;
  out: string;
}

type StatementResult = (LoopResult & { readonly serverCpuSec: number }) | { readonly unsupported: string } | { readonly failed: string };

interface Statement {
  readonly name: string;
  readonly text: string;
  readonly args: (client: number, seq: number, rows: number) => unknown[];
}

const FIELD = 'x'.repeat(100);

function statements(o: Opts): Statement[] {
  const rnd = (): number => Math.floor(Math.random() * o.rows);
  return [
    { name: 'point-select', text: 'SELECT id, k, g, v FROM bench_rows WHERE id = $1', args: () => [rnd()] },
    { name: 'update', text: 'UPDATE bench_rows SET v = $2 WHERE id = $1', args: (c, s) => [rnd(), `u${c}-${s}`] },
    {
      name: 'insert-10col',
      text: 'INSERT INTO bench_ins (id, c1, c2, c3, c4, c5, c6, c7, c8, c9) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
      args: (c, s) => [c * 100_000_000 + s, s, c, FIELD, FIELD, FIELD, 'a', 'b', 'c', 1.5],
    },
    { name: 'index-lookup', text: 'SELECT id, v FROM bench_rows WHERE k = $1', args: () => [rnd() * 7] },
    { name: 'join-10', text: 'SELECT p.name, r.id, r.v FROM bench_parent p JOIN bench_rows r ON r.g = p.pid WHERE p.pid = $1', args: () => [Math.floor(Math.random() * (o.rows / 10))] },
    { name: 'group-by', text: 'SELECT id % 100 AS b, count(*), sum(k) FROM bench_rows GROUP BY id % 100', args: () => [] },
  ];
}

async function setup(url: string, rows: number): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (const t of ['bench_rows', 'bench_ins', 'bench_parent', 'bench_copy']) await c.query(`DROP TABLE IF EXISTS ${t}`);
    await c.query('CREATE TABLE bench_rows (id INT8 PRIMARY KEY, k INT8 NOT NULL, g INT8 NOT NULL, v TEXT)');
    await c.query('CREATE UNIQUE INDEX bench_rows_k ON bench_rows (k)');
    await c.query('CREATE INDEX bench_rows_g ON bench_rows (g)');
    await c.query('CREATE TABLE bench_parent (pid INT8 PRIMARY KEY, name TEXT)');
    await c.query('CREATE TABLE bench_ins (id INT8 PRIMARY KEY, c1 INT8, c2 INT8, c3 TEXT, c4 TEXT, c5 TEXT, c6 TEXT, c7 TEXT, c8 TEXT, c9 FLOAT8)');
    const fields = Array.from({ length: 10 }, (_, i) => `field${i} TEXT`).join(', ');
    await c.query(`CREATE TABLE bench_copy (ycsb_key VARCHAR(255) PRIMARY KEY, ${fields})`);
    for (let i = 0; i < rows; i += 500) {
      const n = Math.min(500, rows - i);
      const vals = Array.from({ length: n }, (_, j) => `(${i + j}, ${(i + j) * 7}, ${Math.floor((i + j) / 10)}, 'v${i + j}')`);
      await c.query(`INSERT INTO bench_rows (id, k, g, v) VALUES ${vals.join(', ')}`);
    }
    for (let i = 0; i < rows / 10; i += 500) {
      const n = Math.min(500, rows / 10 - i);
      await c.query(`INSERT INTO bench_parent (pid, name) VALUES ${Array.from({ length: n }, (_, j) => `(${i + j}, 'p${i + j}')`).join(', ')}`);
    }
  } finally {
    await c.end();
  }
}

async function runStatement(t: BenchTarget, o: Opts, s: Statement): Promise<StatementResult> {
  const clients = await Promise.all(
    Array.from({ length: o.conns }, async (_, i) => {
      const c = new pg.Client({ connectionString: t.urls[i % t.urls.length] });
      await c.connect();
      return c;
    }),
  );
  try {
    // One probe first: an unsupported statement fails at once with 0A000.
    try {
      await (clients[0] as pg.Client).query({ name: s.name, text: s.text, values: s.args(0, -1, o.rows) });
    } catch (e) {
      const code = (e as { code?: string }).code;
      return code === '0A000' ? { unsupported: (e as Error).message } : { failed: `${code ?? ''} ${(e as Error).message}` };
    }
    // seqBase keeps the warm-up's fresh keys (insert-10col: client × 10^8 + seq) apart from the measured run's.
    const run = (ms: number, seqBase: number): Promise<LoopResult> =>
      closedLoop(o.conns, ms, (c, seq) => (clients[c] as pg.Client).query({ name: s.name, text: s.text, values: s.args(c, seqBase + seq, o.rows) }));
    // Unrecorded warm-up (as `cockroach workload --ramp`): JIT, range caches, lease placement settling.
    if (o.warmup > 0) await run(o.warmup, 50_000_000);
    const m = cpuMeter(t.pids);
    const r = await run(o.duration, 0);
    return { ...r, serverCpuSec: m.stop().serverCpuSec };
  } finally {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  }
}

/**
 * COPY of YCSB-shaped rows (a 23-character key and 10 fields of 100 bytes) through one connection; rows/s.
 *
 * NB: postgres.js settles a COPY stream by CommandComplete ('finish') or, while the stream is still open, by
 * destroying it on an error. An ErrorResponse that arrives after stream.end() — Cairn reports a failed COPY once it
 * has read the client's CopyDone; PostgreSQL does too for a failure at the end — reaches only the query's reject(),
 * on a promise already resolved with the stream, and 'finish' never comes: the COPY would wait forever. So the wait
 * also ends through the query's reject() (postgres.js 3.4: called at ReadyForQuery after an ErrorResponse, and when
 * the connection fails).
 */
async function runCopy(t: BenchTarget, rows: number): Promise<StatementResult> {
  const sql = postgres(t.urls[0] as string, { max: 1, onnotice: () => undefined });
  try {
    const m = cpuMeter(t.pids);
    const t0 = performance.now();
    const q = sql.unsafe('COPY bench_copy (ycsb_key, field0, field1, field2, field3, field4, field5, field6, field7, field8, field9) FROM STDIN');
    const settled = copySettled(q);
    const stream = await q.writable();
    stream.on('finish', settled.ok);
    stream.on('error', settled.fail);
    const fields = `\t${FIELD}`.repeat(10);
    for (let i = 0; i < rows && !stream.destroyed; i += 1000) {
      let chunk = '';
      for (let j = i; j < Math.min(rows, i + 1000); j++) chunk += `user${String(j).padStart(19, '0')}${fields}\n`;
      if (!stream.write(chunk)) await Promise.race([new Promise((r) => stream.once('drain', r)), settled.done]);
    }
    stream.end();
    await settled.done;
    const sec = (performance.now() - t0) / 1000;
    const [{ n }] = (await sql.unsafe('SELECT count(*) AS n FROM bench_copy')) as unknown as [{ n: string }];
    if (Number(n) !== rows) return { failed: `copied ${n} of ${rows} rows` };
    return { ops: rows, opsPerSec: Math.round(rows / sec), p50Ms: 0, p99Ms: 0, errors: 0, errorCodes: {}, serverCpuSec: m.stop().serverCpuSec };
  } catch (e) {
    const code = (e as { code?: string }).code;
    return code === '0A000' ? { unsupported: (e as Error).message } : { failed: `${code ?? ''} ${(e as Error).message}` };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** The end of a postgres.js COPY FROM STDIN: ok() at 'finish', fail() on a stream error or the query's reject() (see runCopy). */
function copySettled(query: object): { readonly done: Promise<void>; readonly ok: () => void; readonly fail: (e: unknown) => void } {
  let ok: () => void = () => undefined;
  let fail: (e: unknown) => void = () => undefined;
  const done = new Promise<void>((res, rej) => {
    ok = res;
    fail = rej;
  });
  done.catch(() => undefined); // awaited by the caller; a failure while it still writes is not an unhandled rejection
  const q = query as { reject?: unknown };
  if (typeof q.reject !== 'function') throw new Error('bench: postgres.js changed: its query has no reject() to observe a failed COPY by');
  const reject = q.reject as (e: unknown) => void;
  q.reject = (e: unknown): void => {
    fail(e);
    reject(e);
  };
  return { done, ok, fail };
}

async function measure(t: BenchTarget, o: Opts): Promise<Record<string, StatementResult>> {
  const out: Record<string, StatementResult> = {};
  process.stdout.write(`\n== ${t.name}: setting up ${o.rows} rows\n`);
  await setup(t.urls[0] as string, o.rows);
  const wanted = (name: string): boolean => o.only === undefined || o.only.split(',').includes(name);
  for (const s of statements(o)) {
    if (!wanted(s.name)) continue;
    out[s.name] = await runStatement(t, o, s);
    process.stdout.write(`${t.name} ${s.name}: ${cell(out[s.name]).join('  ')}\n`);
  }
  if (wanted('copy')) {
    out['copy'] = await runCopy(t, o.copyRows);
    process.stdout.write(`${t.name} copy: ${cell(out['copy']).join('  ')}\n`);
  }
  return out;
}

function cell(r: StatementResult | undefined): (string | number)[] {
  if (r === undefined) return ['–', '–', '–', '–'];
  if ('unsupported' in r) return ['unsupported', '', '', ''];
  if ('failed' in r) return [`failed: ${r.failed.slice(0, 60)}`, '', '', ''];
  return [r.opsPerSec, r.p50Ms, r.p99Ms, r.errors === 0 ? r.serverCpuSec : `${r.serverCpuSec} (${r.errors} errors: ${Object.keys(r.errorCodes).join(',')})`];
}

function ops(r: StatementResult | undefined): number | undefined {
  return r !== undefined && 'opsPerSec' in r ? r.opsPerSec : undefined;
}

async function main(): Promise<void> {
  const o = new Command('bench-sql')
    .option('--conns <n>', 'connections', (v) => Number(v), 64)
    .option('--duration <d>', 'per statement', parseDuration, 5_000)
    .option('--warmup <d>', 'unrecorded run of each statement before its measurement', parseDuration, 2_000)
    .option('--rows <n>', 'rows in bench_rows', (v) => Number(v), 10_000)
    .option('--copy-rows <n>', 'rows to COPY', (v) => Number(v), 100_000)
    .option('--cairn-only', 'skip PostgreSQL')
    .option('--skip-postgres', 'skip PostgreSQL')
    .option('--only <names>', 'comma-separated statements to run (e.g. join-10,group-by,copy)')
    .option('--out <dir>', 'results directory', 'bench/results')
    .parse()
    .opts<Opts>();
  const results: Record<string, Record<string, StatementResult>> = {};
  const cairn = await startCairn(3);
  try {
    results['cairn'] = await measure(cairn, o);
  } finally {
    await cairn.stop();
  }
  if (o.cairnOnly !== true && o.skipPostgres !== true) {
    const pgt = await startPostgresTarget();
    try {
      results['postgres'] = await measure(pgt, o);
    } finally {
      await pgt.stop();
    }
  }
  const names = [...statements(o).map((s) => s.name), 'copy'].filter((n) => o.only === undefined || o.only.split(',').includes(n));
  const header = ['statement', 'cairn ops/s', 'p50 ms', 'p99 ms', 'server CPU s', 'postgres ops/s', 'p50 ms', 'p99 ms', 'server CPU s', 'ratio'];
  const table = mdTable(
    header,
    names.map((n) => [n, ...cell(results['cairn']?.[n]), ...cell(results['postgres']?.[n]), ratio(ops(results['cairn']?.[n]), ops(results['postgres']?.[n]))]),
  );
  const date = new Date().toISOString().replace(/[:]/g, '-').replace(/\.\d+Z$/, 'Z');
  const meta = { date, conns: o.conns, durationMs: o.duration, warmupMs: o.warmup, rows: o.rows, copyRows: o.copyRows, node: process.version, cairn: '3 nodes, replication factor 3', postgres: 'PostgreSQL 15, synchronous_commit=on' };
  mkdirSync(o.out, { recursive: true });
  const base = join(o.out, `sql-${date}`);
  writeFileSync(`${base}.json`, JSON.stringify({ meta, results }, null, 2) + '\n');
  writeFileSync(`${base}.md`, `# bench:sql ${date}\n\n\`\`\`\n${JSON.stringify(meta, null, 2)}\n\`\`\`\n\n(copy: rows/s of one COPY stream)\n\n${table}`);
  process.stdout.write(`\n${table}\nwrote ${base}.json and .md\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
