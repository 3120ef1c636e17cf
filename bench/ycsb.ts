/**
 * `npm run bench:ycsb`: YCSB A–F with the workload tool (src/workload)
 * against PostgreSQL and, when given, a running Cairn cluster; prints the
 * figures and writes bench/results/<date>.json, .md (tables) and .svg (a
 * chart of throughput and p99 per workload and target).
 *
 *   node dist/bench/ycsb.js [--records 100000] [--concurrency 16]
 *        [--duration 10s] [--workloads ABCDEF] [--method prepare]
 *        [--no-postgres] [--cairn-url URL…] [--splits 12] [--out bench/results]
 *
 * PostgreSQL: a throwaway server (test/support/postgres.ts) in a temporary
 * data directory with fsync=on and synchronous_commit=on; Debian's
 * `postgresql` package is installed with apt-get when no server binaries are
 * found (needs root).
 *
 * Cairn: pass the SQL URLs of a running cluster with --cairn-url. Starting a
 * 3-node cluster from this script waits for the cluster tooling (src/server,
 * `npm run cluster`); until then the Cairn column is absent unless URLs are
 * given.
 *
 * Each target is loaded once (recording the load phase: rows/s over time and
 * the ratio of the last 10 % of rows to the first 10 %), then the workloads
 * run in the order given, on the same data (D and E add rows).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { findPostgresBinDir, startPostgres, type PostgresServer } from '../test/support/postgres.js';
import {
  initYcsb,
  parseDuration,
  parseMethod,
  parseWorkloadName,
  runYcsb,
  type Output,
  type QueryMethod,
  type WorkloadName,
  type YcsbInitResult,
  type YcsbRunResult,
} from '../src/workload/index.js';

interface TargetResult {
  readonly target: string;
  readonly server: string;
  readonly load: YcsbInitResult;
  readonly runs: Partial<Record<WorkloadName, YcsbRunResult>>;
}

const quiet: Output = { write: () => undefined };

function ensurePostgresInstalled(): void {
  if (findPostgresBinDir() !== undefined) return;
  process.stdout.write('PostgreSQL not found: installing Debian\'s postgresql package\n');
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'postgresql'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

async function measure(
  target: string,
  urls: string[],
  o: { records: number; concurrency: number; durationMs: number; workloads: WorkloadName[]; method: QueryMethod; splits: number },
): Promise<TargetResult> {
  process.stdout.write(`\n== ${target}: loading ${o.records.toLocaleString('en-US')} records\n`);
  const load = await initYcsb(
    { urls, drop: true, insertCount: o.records, concurrency: Math.min(o.concurrency, 8), batchSize: 200, splits: target === 'cairn' ? o.splits : 0 },
    { output: { write: (s) => void process.stdout.write(s), isTTY: process.stdout.isTTY === true } },
  );
  const runs: Partial<Record<WorkloadName, YcsbRunResult>> = {};
  for (const w of o.workloads) {
    const r = await runYcsb(
      { urls, workload: w, concurrency: o.concurrency, durationMs: o.durationMs, method: o.method, seed: 1, tolerateErrors: true },
      { output: quiet },
    );
    runs[w] = r;
    const p99 = Math.max(...Object.values(r.ops).map((t) => t?.p99Ms ?? 0));
    process.stdout.write(
      `${target} ${w}: ${Math.round(r.total.opsPerSec).toLocaleString('en-US').padStart(7)} ops/s  p99 ${p99.toFixed(1)} ms  errors ${r.total.errors}  retries ${r.total.retries}\n`,
    );
  }
  return { target, server: load.server, load, runs };
}

function markdown(results: TargetResult[], workloads: WorkloadName[], meta: Record<string, unknown>): string {
  const lines: string[] = [`# YCSB ${String(meta['date'])}`, '', '```', JSON.stringify(meta, null, 2), '```', ''];
  lines.push('## Throughput (ops/s) and p99 latency (ms, worst op type)', '');
  lines.push(`| workload | ${results.map((r) => `${r.target} ops/s | ${r.target} p99`).join(' | ')} |`);
  lines.push(`|---|${results.map(() => '---:|---:').join('|')}|`);
  for (const w of workloads) {
    const cells = results.map((r) => {
      const run = r.runs[w];
      if (run === undefined) return '– | –';
      const p99 = Math.max(...Object.values(run.ops).map((t) => t?.p99Ms ?? 0));
      return `${Math.round(run.total.opsPerSec)} | ${p99.toFixed(1)}`;
    });
    lines.push(`| ${w} | ${cells.join(' | ')} |`);
  }
  lines.push('', '## Load phase', '', '| target | rows | rows/s | first 10 % rows/s | last 10 % rows/s | last/first |', '|---|---:|---:|---:|---:|---:|');
  for (const r of results) {
    const l = r.load;
    lines.push(
      `| ${r.target} | ${l.rows} | ${Math.round(l.rowsPerSec)} | ${Math.round(l.firstTenthRowsPerSec)} | ${Math.round(l.lastTenthRowsPerSec)} | ${l.lastToFirstRatio.toFixed(2)} |`,
    );
  }
  lines.push('', '## Per operation type', '', '| target | workload | op | ops/s | p50 | p95 | p99 | max | errors | retries |', '|---|---|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    for (const w of workloads) {
      const run = r.runs[w];
      if (run === undefined) continue;
      for (const [op, t] of Object.entries(run.ops)) {
        if (t === undefined) continue;
        lines.push(`| ${r.target} | ${w} | ${op} | ${Math.round(t.opsPerSec)} | ${t.p50Ms} | ${t.p95Ms} | ${t.p99Ms} | ${t.maxMs} | ${t.errors} | ${t.retries} |`);
      }
    }
  }
  return lines.join('\n') + '\n';
}

const COLORS = ['#4e79a7', '#e15759', '#59a14f', '#f28e2b'];

/** Two grouped bar charts side by side: ops/s and p99 per workload, one bar per target. */
function svgChart(results: TargetResult[], workloads: WorkloadName[]): string {
  const panelW = 420;
  const panelH = 260;
  const pad = 40;
  const parts: string[] = [];
  const panel = (x0: number, title: string, value: (r: YcsbRunResult) => number, unit: string): void => {
    const values = results.flatMap((t) => workloads.map((w) => (t.runs[w] ? value(t.runs[w]!) : 0)));
    const max = Math.max(1, ...values);
    parts.push(`<text x="${x0 + panelW / 2}" y="20" text-anchor="middle" font-size="14">${title}</text>`);
    parts.push(`<line x1="${x0 + pad}" y1="${panelH}" x2="${x0 + panelW - 10}" y2="${panelH}" stroke="#333"/>`);
    const groupW = (panelW - pad - 10) / workloads.length;
    const barW = (groupW * 0.8) / Math.max(1, results.length);
    workloads.forEach((w, wi) => {
      const gx = x0 + pad + wi * groupW + groupW * 0.1;
      parts.push(`<text x="${gx + groupW * 0.4}" y="${panelH + 16}" text-anchor="middle" font-size="12">${w}</text>`);
      results.forEach((t, ti) => {
        const run = t.runs[w];
        if (run === undefined) return;
        const v = value(run);
        const h = ((panelH - 40) * v) / max;
        const x = gx + ti * barW;
        parts.push(`<rect x="${x.toFixed(1)}" y="${(panelH - h).toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[ti % COLORS.length]}"><title>${t.target} ${w}: ${v.toFixed(1)} ${unit}</title></rect>`);
      });
    });
    parts.push(`<text x="${x0 + pad - 4}" y="44" text-anchor="end" font-size="10">${Math.round(max)}</text>`);
  };
  panel(0, 'throughput (ops/s)', (r) => r.total.opsPerSec, 'ops/s');
  panel(panelW + 20, 'p99 latency (ms, worst op type)', (r) => Math.max(...Object.values(r.ops).map((t) => t?.p99Ms ?? 0)), 'ms');
  results.forEach((t, ti) => {
    parts.push(`<rect x="${10 + ti * 140}" y="${panelH + 30}" width="12" height="12" fill="${COLORS[ti % COLORS.length]}"/>`);
    parts.push(`<text x="${28 + ti * 140}" y="${panelH + 41}" font-size="12">${t.target}</text>`);
  });
  const w = panelW * 2 + 20;
  const h = panelH + 50;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif">\n<rect width="${w}" height="${h}" fill="white"/>\n${parts.join('\n')}\n</svg>\n`;
}

async function main(): Promise<void> {
  const program = new Command('bench-ycsb')
    .option('--records <n>', 'records to load', (v) => Number(v), 100_000)
    .option('--concurrency <c>', 'clients', (v) => Number(v), 16)
    .option('--duration <d>', 'per workload', parseDuration, 10_000)
    .option('--workloads <list>', 'which workloads, e.g. ABCDEF', 'ABCDEF')
    .option('--method <m>', 'prepare, noprepare or simple', parseMethod, 'prepare' as QueryMethod)
    .option('--no-postgres', 'skip PostgreSQL')
    .option('--cairn-url <urls...>', 'SQL URLs of a running Cairn cluster')
    .option('--splits <n>', 'ranges to split usertable into on Cairn', (v) => Number(v), 12)
    .option('--out <dir>', 'results directory', 'bench/results')
    .parse();
  const o = program.opts<{
    records: number;
    concurrency: number;
    duration: number;
    workloads: string;
    method: QueryMethod;
    postgres: boolean;
    cairnUrl?: string[];
    splits: number;
    out: string;
  }>();
  const workloads = [...o.workloads.replace(/[^A-Fa-f]/g, '')].map(parseWorkloadName);
  const cfg = { records: o.records, concurrency: o.concurrency, durationMs: o.duration, workloads, method: o.method, splits: o.splits };
  const results: TargetResult[] = [];

  if (o.cairnUrl !== undefined && o.cairnUrl.length > 0) results.push(await measure('cairn', o.cairnUrl, cfg));
  if (o.postgres) {
    ensurePostgresInstalled();
    let pg: PostgresServer | undefined;
    try {
      pg = await startPostgres();
      results.push(await measure('postgres', [pg.url], cfg));
    } finally {
      await pg?.stop();
    }
  }
  if (results.length === 0) {
    process.stdout.write('nothing measured (pass --cairn-url or drop --no-postgres)\n');
    return;
  }

  const date = new Date().toISOString().replace(/[:]/g, '-').replace(/\.\d+Z$/, 'Z');
  const meta = { date, ...cfg, node: process.version, targets: results.map((r) => ({ target: r.target, server: r.server })) };
  mkdirSync(o.out, { recursive: true });
  const base = join(o.out, date);
  writeFileSync(`${base}.json`, JSON.stringify({ meta, results }, null, 2) + '\n');
  writeFileSync(`${base}.md`, markdown(results, workloads, meta));
  writeFileSync(`${base}.svg`, svgChart(results, workloads));
  process.stdout.write(`\nwrote ${base}.json, .md and .svg\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
