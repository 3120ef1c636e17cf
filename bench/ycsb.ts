/**
 * `npm run bench:ycsb`: YCSB A–F with the workload tool (src/workload) on a
 * 3-node local Cairn cluster (replication factor 3) that this script starts
 * itself, side by side with a throwaway PostgreSQL 15 (synchronous_commit=on,
 * fsync=on), both loaded by the same tool with the same record count and run
 * with the same concurrency. Writes bench/results/<date>.json, .md (a table
 * per workload: ops/s, p50/p95/p99 over all op types, ratio, CPU seconds of
 * the servers and of this client, resident memory per node) and .svg
 * (throughput and p99 per workload and target).
 *
 *   node dist/bench/ycsb.js [--records 100000] [--concurrency 16,64]
 *        [--duration 10s] [--workloads ABCDEF] [--method prepare]
 *        [--request-distribution zipfian|uniform|latest] [--read-modify-write-in-txn]
 *        [--cairn-only | --skip-postgres] [--skip-cairn]
 *        [--cairn-url URL…] [--splits 12] [--range-queues on|off] [--out bench/results]
 *
 * --splits N (default 12): the loader splits usertable into N ranges before
 * loading (ALTER TABLE … SPLIT AT, then SCATTER), as `cockroach workload init
 * ycsb` does: otherwise one leaseholder does all the work. After the load the
 * bench balances the table's lease counts over the nodes through their HTTP
 * admin hooks (support/scatter.ts) and waits until that holds, so lease moves
 * made during the load are not paid for by the measured runs.
 *
 * --range-queues off starts the nodes without their range queues: measured
 * on the shared machine, the replicate queue's lease-count rebalancing kept
 * moving the table's leases during the runs (29 % of one node's KV batches
 * answered NotLeaseHolder), which this isolates from the request path.
 *
 * Order: one target at a time (the machine's cores are shared): start,
 * load (recording rows/s over time and the last-10 %/first-10 % ratio), then
 * for each concurrency every workload in the order given on the same data (D
 * and E add rows), then stop. --cairn-url measures a running cluster instead
 * of starting one (no server CPU/memory then). Every process started here is
 * stopped in `finally`, also on failure.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import {
  initYcsb,
  parseDistribution,
  parseDuration,
  parseMethod,
  parseWorkloadName,
  runYcsb,
  type Output,
  type QueryMethod,
  type RequestDistribution,
  type WorkloadName,
  type YcsbInitResult,
  type YcsbRunResult,
} from '../src/workload/index.js';
import { startCairn, startPostgresTarget, type BenchTarget, type CairnCluster } from './support/cluster.js';
import { scatterTable } from './support/scatter.js';
import { cpuMeter } from './support/proc-stats.js';
import { perOp, scrapeCounters, type Counters } from './support/node-metrics.js';
import { barPanel, mdTable, mergedPercentiles, ratio, svgDocument, type Percentiles } from './support/report.js';

export interface WorkloadMeasurement extends Percentiles {
  readonly workload: WorkloadName;
  readonly concurrency: number;
  readonly opsPerSec: number;
  readonly errors: number;
  readonly retries: number;
  readonly errorsBySqlState: Record<string, number>;
  readonly serverCpuSec: number | null;
  /** Server CPU per operation, µs; and the same without the servers' idle CPU (measured before the runs) over the run's time. */
  readonly serverUsPerOp: number | null;
  readonly serverUsPerOpIdleOut: number | null;
  readonly clientCpuSec: number;
  readonly rssMiB: number[];
  /** The machine's 1-minute load average at the end of the run (the host is shared: figures are read beside it). */
  readonly loadAvg1: number;
  /** Cairn started here: the nodes' counters over the run, summed over the nodes, per operation (support/node-metrics.ts). */
  readonly kvPerOp: Counters | null;
  readonly run: YcsbRunResult;
}

export interface TargetResult {
  readonly target: string;
  readonly server: string;
  readonly load: YcsbInitResult;
  readonly loadCpu: { serverCpuSec: number; clientCpuSec: number } | null;
  /** The 1-minute load average when the load phase ended. */
  readonly loadPhaseLoadAvg1: number;
  readonly runs: WorkloadMeasurement[];
}

export interface YcsbBenchOptions {
  readonly records: number;
  readonly concurrency: readonly number[];
  readonly durationMs: number;
  readonly workloads: readonly WorkloadName[];
  readonly method: QueryMethod;
  /** Overrides every workload's request distribution (e.g. uniform, to compare contention with zipfian). */
  readonly requestDistribution?: RequestDistribution;
  /** F's read-modify-write as BEGIN; SELECT; UPDATE; COMMIT (default: two implicit statements, as YCSB's JDBC binding with autocommit). */
  readonly readModifyWriteInTxn?: boolean;
  readonly splits: number;
  /** The nodes' --range-queues (split, merge, replicate, replica GC queues); default on. */
  readonly rangeQueues?: boolean;
  readonly cairn: boolean;
  readonly postgres: boolean;
  readonly cairnUrls?: readonly string[];
  readonly out: string;
  readonly log?: (s: string) => void;
}

const quiet: Output = { write: () => undefined };

function p(x: number): string {
  return Math.round(x).toLocaleString('en-US');
}

async function measure(t: Pick<BenchTarget, 'name' | 'urls' | 'pids' | 'rssMiB'>, o: YcsbBenchOptions, measured: boolean, cluster?: CairnCluster): Promise<TargetResult> {
  const log = o.log ?? ((s: string) => void process.stdout.write(s));
  log(`\n== ${t.name}: loading ${p(o.records)} records\n`);
  const lm = cpuMeter(t.pids);
  const load = await initYcsb(
    {
      urls: [...t.urls],
      drop: true,
      insertCount: o.records,
      concurrency: Math.min(Math.max(...o.concurrency), 8),
      batchSize: 200,
      splits: t.name === 'cairn' ? o.splits : 0,
    },
    { output: quiet },
  );
  const loadCpu = measured ? lm.stop() : null;
  const loadPhaseLoadAvg1 = Math.round((loadavg()[0] ?? 0) * 10) / 10;
  log(`${t.name} load: ${p(load.rowsPerSec)} rows/s, last/first 10 % ${load.lastToFirstRatio.toFixed(2)}, batches retried ${load.retries}, load avg ${loadPhaseLoadAvg1}\n`);
  if (measured) {
    const q = await settle(t.pids);
    log(`${t.name}: after the load, servers settled to ${q.cores.toFixed(2)} cores in ${q.waitedSec.toFixed(0)} s${q.settled ? '' : ' (still busy: not settled in time)'}\n`);
  }
  if (cluster !== undefined && o.splits > 1) {
    // Lease moves during the load (replicate queue on stale lease counts) are undone before measuring.
    const s = await scatterTable(cluster, 'usertable', { stableRounds: 4, intervalMs: 750, timeoutMs: 30_000 });
    log(`cairn: before the runs, usertable in ${s.ranges} ranges, leases by node ${JSON.stringify(s.leasesByNode)}${s.balanced ? '' : ' (not balanced in time)'}\n`);
  }
  // The servers' idle CPU, taken out of the per-op figure: at the few hundred ops/s a loaded machine allows,
  // Cairn's ~0.1 core of heartbeats, liveness and queues is 0.4-1 ms per operation.
  const idleCores = measured ? await idle(t.pids) : 0;
  if (measured) log(`${t.name}: idle ${idleCores.toFixed(2)} cores before the runs\n`);
  // Nodes under the CPU profiler (CAIRN_BENCH_CPU_PROF, support/profiled-node.ts) restart their profiles here: runs only.
  if (cluster !== undefined && process.env['CAIRN_BENCH_CPU_PROF'] !== undefined) for (const pid of t.pids()) process.kill(pid, 'SIGUSR2');
  const runs: WorkloadMeasurement[] = [];
  // The record count is handed to each run (the load's, then the last run's insertedUpTo, as D and E add
  // rows): left to itself the runner counts the table with SELECT count(*), a full scan inside the CPU
  // meter — at 100,000 records 146 MB of KV responses and 4–7 CPU-s of the servers per run, ~0.5 ms per
  // operation of a 10 s A run that is no operation's cost.
  let records = o.records;
  for (const c of o.concurrency) {
    for (const w of o.workloads) {
      const before = cluster === undefined ? null : await scrapeCounters(cluster);
      const m = cpuMeter(t.pids);
      const run = await runYcsb({ urls: [...t.urls], workload: w, concurrency: c, durationMs: o.durationMs, method: o.method, seed: 1, tolerateErrors: true, recordCount: records, ...(o.requestDistribution === undefined ? {} : { requestDistribution: o.requestDistribution }), ...(o.readModifyWriteInTxn === true ? { readModifyWriteInTxn: true } : {}) }, { output: quiet });
      const cpu = m.stop();
      records = run.insertedUpTo;
      const kvPerOp = cluster === undefined || before === null ? null : perOp(before, await scrapeCounters(cluster), run.total.count);
      const pct = mergedPercentiles(Object.values(run.ops).flatMap((x) => (x === undefined || x.count === 0 ? [] : [x.histogram])));
      const r: WorkloadMeasurement = {
        workload: w,
        concurrency: c,
        opsPerSec: Math.round(run.total.opsPerSec),
        ...pct,
        errors: run.total.errors,
        retries: run.total.retries,
        errorsBySqlState: run.errorsBySqlState,
        serverCpuSec: measured ? cpu.serverCpuSec : null,
        serverUsPerOp: measured ? Math.round((cpu.serverCpuSec * 1e6) / Math.max(1, run.total.count)) : null,
        serverUsPerOpIdleOut: measured ? Math.round(((cpu.serverCpuSec - idleCores * cpu.elapsedSec) * 1e6) / Math.max(1, run.total.count)) : null,
        clientCpuSec: cpu.clientCpuSec,
        rssMiB: measured ? t.rssMiB() : [],
        loadAvg1: Math.round((loadavg()[0] ?? 0) * 10) / 10,
        kvPerOp,
        run,
      };
      runs.push(r);
      log(`${t.name} ${w} c=${c}: ${p(r.opsPerSec).padStart(7)} ops/s  p50 ${r.p50Ms} p99 ${r.p99Ms} ms  errors ${r.errors}${r.errors > 0 ? ` ${JSON.stringify(r.errorsBySqlState)}` : ''}  retries ${r.retries}  server CPU ${r.serverCpuSec ?? '–'} s${r.serverUsPerOp === null ? '' : ` (${p(r.serverUsPerOp)} µs/op, ${p(r.serverUsPerOpIdleOut ?? 0)} idle out)`}  load ${r.loadAvg1}${kvLine(kvPerOp)}\n`);
    }
  }
  return { target: t.name, server: load.server, load, loadCpu, loadPhaseLoadAvg1, runs };
}

/**
 * Waits (at most `timeoutMs`) until the servers use less than `maxCores` of
 * CPU over a `windowMs` window: a bulk load leaves the storage engine
 * compacting in the background for a while (LevelDB on Cairn, checkpoints
 * and autovacuum on PostgreSQL), which would otherwise be charged to the
 * first workloads measured — YCSB's load and run are separate phases.
 */
async function settle(pids: () => number[], maxCores = 0.25, windowMs = 2000, timeoutMs = 30_000): Promise<{ settled: boolean; cores: number; waitedSec: number }> {
  const start = performance.now();
  for (;;) {
    const m = cpuMeter(pids);
    await new Promise((r) => setTimeout(r, windowMs));
    const cores = m.stop().serverCpuSec / (windowMs / 1000);
    const waitedSec = (performance.now() - start) / 1000;
    if (cores < maxCores || waitedSec * 1000 >= timeoutMs) return { settled: cores < maxCores, cores, waitedSec };
  }
}

/** The servers' CPU while nothing is sent, cores (a 3 s window). */
async function idle(pids: () => number[], windowMs = 3000): Promise<number> {
  const m = cpuMeter(pids);
  await new Promise((r) => setTimeout(r, windowMs));
  const u = m.stop();
  return u.serverCpuSec / u.elapsedSec;
}

/** The per-operation KV counters worth a glance, for the progress log. */
function kvLine(k: Counters | null): string {
  if (k === null) return '';
  return (
    `  per op: batches ${k.distsender_batches} rpcs ${k.distsender_rpcs} NLH ${k.distsender_not_lease_holder} proposals ${k.raft_proposals} syncs ${k.raft_syncs} 1PC ${k.txn_one_phase_commits} restarts ${k.txn_restarts} leader changes ${k.raft_leader_changes}` +
    `\n    contention per op: lock waits ${k.kv_lock_waits} push handoffs ${k.kv_push_handoffs} pushes ${k.txn_pushes} push waits ${k.txn_push_waits} discoveries ${k.kv_intent_discoveries} read bumps ${k.kv_read_bumps} refreshes ${k.txn_refreshes} (failed ${k.txn_refresh_failures}) tscache pushes ${k.kv_tscache_pushes} (refused ${k.kv_tscache_retries}) aborts ${k.txn_aborts}`
  );
}

function find(r: TargetResult | undefined, w: WorkloadName, c: number): WorkloadMeasurement | undefined {
  return r?.runs.find((x) => x.workload === w && x.concurrency === c);
}

export function markdown(results: readonly TargetResult[], o: YcsbBenchOptions, meta: Record<string, unknown>): string {
  const cairn = results.find((r) => r.target === 'cairn');
  const pg = results.find((r) => r.target === 'postgres');
  const out: string[] = [`# YCSB ${String(meta['date'])}`, '', '```', JSON.stringify(meta, null, 2), '```', ''];
  out.push('Latencies in ms over all op types of the workload; CPU in seconds over the measured run (servers: all node processes / all postgres processes; client: this bench process), per operation in µs with and without the servers\' idle CPU measured before the runs; RSS in MiB per node (PostgreSQL: sum over its processes, shared buffers counted once per process).', '');
  for (const c of o.concurrency) {
    for (const w of o.workloads) {
      out.push(`## Workload ${w}, ${c} clients`, '');
      const rows = results.map((r) => {
        const m = find(r, w, c);
        if (m === undefined) return [r.target, '–', '–', '–', '–', '–', '–', '–', '–', '–', '–', '–'];
        const perOp = m.serverUsPerOp === null ? '–' : `${m.serverUsPerOp} (${m.serverUsPerOpIdleOut ?? '–'})`;
        return [r.target, m.opsPerSec, m.p50Ms, m.p95Ms, m.p99Ms, m.errors, m.retries, m.serverCpuSec ?? '–', perOp, m.clientCpuSec, m.rssMiB.join(' / ') || '–', m.loadAvg1];
      });
      out.push(mdTable(['target', 'ops/s', 'p50', 'p95', 'p99', 'errors', 'retries', 'server CPU s', 'server µs/op (idle out)', 'client CPU s', 'RSS MiB', 'load avg'], rows));
      if (cairn !== undefined && pg !== undefined) out.push(`Cairn / PostgreSQL throughput: ${ratio(find(cairn, w, c)?.opsPerSec, find(pg, w, c)?.opsPerSec)}`, '');
      const k = find(cairn, w, c)?.kvPerOp;
      if (k !== undefined && k !== null) {
        out.push('Cairn, per operation (counters summed over the nodes): ' + Object.entries(k).map(([n, v]) => `${n} ${v}`).join(', '), '');
      }
    }
  }
  out.push('## Load phase', '');
  out.push(
    mdTable(
      ['target', 'rows', 'seconds', 'rows/s', 'first 10 % rows/s', 'last 10 % rows/s', 'last/first', 'server CPU s', 'client CPU s', 'load avg'],
      results.map((r) => [r.target, r.load.rows, r.load.elapsedSec.toFixed(1), p(r.load.rowsPerSec), p(r.load.firstTenthRowsPerSec), p(r.load.lastTenthRowsPerSec), r.load.lastToFirstRatio.toFixed(2), r.loadCpu?.serverCpuSec ?? '–', r.loadCpu?.clientCpuSec ?? '–', r.loadPhaseLoadAvg1]),
    ),
  );
  for (const r of results) {
    out.push(`Load rows/s over time (${r.target}): ${r.load.series.map((s) => Math.round(s.rowsPerSec)).join(' ')}`, '');
  }
  out.push('## Summary (ops/s; ratio Cairn / PostgreSQL)', '');
  out.push(
    mdTable(
      ['workload', 'clients', 'cairn', 'postgres', 'ratio', 'cairn p99', 'postgres p99'],
      o.concurrency.flatMap((c) => o.workloads.map((w) => [w, c, find(cairn, w, c)?.opsPerSec ?? '–', find(pg, w, c)?.opsPerSec ?? '–', ratio(find(cairn, w, c)?.opsPerSec, find(pg, w, c)?.opsPerSec), find(cairn, w, c)?.p99Ms ?? '–', find(pg, w, c)?.p99Ms ?? '–'])),
    ),
  );
  return out.join('\n') + '\n';
}

export function svgChart(results: readonly TargetResult[], o: YcsbBenchOptions): string {
  const groups = o.concurrency.flatMap((c) => o.workloads.map((w) => ({ w, c, label: o.concurrency.length > 1 ? `${w}/${c}` : w })));
  const series = results.map((r) => r.target);
  const W = Math.max(420, groups.length * 60);
  const H = 260;
  const at = (g: number, s: number): WorkloadMeasurement | undefined => {
    const gr = groups[g];
    return gr === undefined ? undefined : find(results[s], gr.w, gr.c);
  };
  const labels = groups.map((g) => g.label);
  return svgDocument(
    [
      barPanel(0, W, H, 'throughput (ops/s)', labels, series, (g, s) => at(g, s)?.opsPerSec, 'ops/s'),
      barPanel(W + 20, W, H, 'p99 latency (ms)', labels, series, (g, s) => at(g, s)?.p99Ms, 'ms'),
    ],
    W,
    H,
    series,
  );
}

/** Runs the whole bench; returns the results and the files written. */
export async function runYcsbBench(o: YcsbBenchOptions): Promise<{ results: TargetResult[]; files: string[] }> {
  const results: TargetResult[] = [];
  const targets: { name: string; version?: string }[] = [];
  if (o.cairn) {
    if (o.cairnUrls !== undefined && o.cairnUrls.length > 0) {
      results.push(await measure({ name: 'cairn', urls: o.cairnUrls, pids: () => [], rssMiB: () => [] }, o, false));
      targets.push({ name: 'cairn (external)' });
    } else {
      const t = await startCairn(3, o.rangeQueues === false ? ['--range-queues=off'] : []);
      try {
        results.push(await measure(t, o, true, t));
        targets.push({ name: `cairn: 3 nodes, replication factor 3${o.splits > 1 ? `, usertable pre-split into ${o.splits} ranges, leases spread` : ''}${o.rangeQueues === false ? ', range queues off' : ''}` });
      } finally {
        await t.stop();
      }
    }
  }
  if (o.postgres) {
    const t = await startPostgresTarget();
    try {
      results.push(await measure(t, o, true));
      targets.push({ name: 'postgres', version: t.version });
    } finally {
      await t.stop();
    }
  }
  const date = new Date().toISOString().replace(/[:]/g, '-').replace(/\.\d+Z$/, 'Z');
  const { log: _log, ...cfg } = o;
  const meta = { date, ...cfg, node: process.version, loadAvgAtEnd: loadavg().map((x) => x.toFixed(2)).join(' '), targets };
  mkdirSync(o.out, { recursive: true });
  const base = join(o.out, date);
  const slim = results.map((r) => ({ ...r, runs: r.runs.map(({ run, ...m }) => ({ ...m, ops: run.ops, reconnects: run.reconnects, elapsedSec: run.elapsedSec })) }));
  writeFileSync(`${base}.json`, JSON.stringify({ meta, results: slim }, null, 2) + '\n');
  writeFileSync(`${base}.md`, markdown(results, o, meta));
  writeFileSync(`${base}.svg`, svgChart(results, o));
  return { results, files: [`${base}.json`, `${base}.md`, `${base}.svg`] };
}

async function main(): Promise<void> {
  const program = new Command('bench-ycsb')
    .option('--records <n>', 'records to load', (v) => Number(v), 100_000)
    .option('--concurrency <list>', 'clients, comma-separated (each is a full pass)', (v) => v.split(',').map(Number), [16])
    .option('--duration <d>', 'per workload', parseDuration, 10_000)
    .option('--workloads <list>', 'which workloads, e.g. ABCDEF', 'ABCDEF')
    .option('--method <m>', 'prepare, noprepare or simple', parseMethod, 'prepare' as QueryMethod)
    .option('--request-distribution <d>', "override every workload's distribution: zipfian, uniform or latest", parseDistribution)
    .option('--read-modify-write-in-txn', "F's read-modify-write in an explicit transaction")
    .option('--cairn-only', 'skip PostgreSQL')
    .option('--skip-postgres', 'skip PostgreSQL (same as --cairn-only)')
    .option('--skip-cairn', 'measure only PostgreSQL')
    .option('--cairn-url <urls...>', 'SQL URLs of a running Cairn cluster instead of starting one')
    .option('--splits <n>', 'ranges to split usertable into on Cairn before loading, leases spread over the nodes (0/1: none)', (v) => Number(v), 12)
    .option('--range-queues <on|off>', "Cairn nodes' split/merge/replicate/replica-GC queues (off: no lease rebalancing during the runs)", 'on')
    .option('--out <dir>', 'results directory', 'bench/results')
    .parse();
  const o = program.opts<{ records: number; concurrency: number[]; duration: number; workloads: string; method: QueryMethod; requestDistribution?: RequestDistribution; readModifyWriteInTxn?: boolean; cairnOnly?: boolean; skipPostgres?: boolean; skipCairn?: boolean; cairnUrl?: string[]; splits: number; rangeQueues: string; out: string }>();
  const { files } = await runYcsbBench({
    records: o.records,
    concurrency: o.concurrency.filter((c) => Number.isInteger(c) && c > 0),
    durationMs: o.duration,
    workloads: [...o.workloads.replace(/[^A-Fa-f]/g, '')].map(parseWorkloadName),
    method: o.method,
    ...(o.requestDistribution === undefined ? {} : { requestDistribution: o.requestDistribution }),
    ...(o.readModifyWriteInTxn === true ? { readModifyWriteInTxn: true } : {}),
    splits: o.splits,
    rangeQueues: o.rangeQueues !== 'off',
    cairn: o.skipCairn !== true,
    postgres: o.cairnOnly !== true && o.skipPostgres !== true,
    ...(o.cairnUrl !== undefined ? { cairnUrls: o.cairnUrl } : {}),
    out: o.out,
  });
  process.stdout.write(`\nwrote ${files.join(', ')}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  });
}
