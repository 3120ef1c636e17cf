/**
 * `node dist/bench/ycsb-ab.js --base <dist dir of another build>`: two builds
 * of Cairn side by side on this machine, each a 3-node process cluster loaded
 * with the same YCSB records, and the same workloads run against them in
 * alternation (base, new, new, base, …), so both see the same machine load
 * minute by minute. Prints per run the ops/s, p99 and — the figure least
 * distorted by a shared, loaded machine — the servers' CPU per operation
 * (user + system of the three node processes, from /proc), with each
 * cluster's idle CPU (measured before the runs) taken out, and the client's
 * CPU per operation; then the medians per build and workload.
 *
 *   node dist/bench/ycsb-ab.js --base /path/to/other/dist [--records 10000]
 *        [--workloads C] [--duration 10s] [--pairs 3] [--concurrency 16] [--splits 12]
 *
 * The base build is any compiled dist/ tree of this repository (e.g. a copy of
 * dist/ made before a change, kept inside the worktree so its imports resolve
 * node_modules): its bench/support/cluster.js starts its own cairn binary.
 * Every process started here is stopped in `finally`.
 */
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { initYcsb, parseDuration, parseWorkloadName, runYcsb, type Output, type WorkloadName } from '../src/workload/index.js';
import { startCairn, type CairnCluster } from './support/cluster.js';
import { cpuMeter } from './support/proc-stats.js';
import { mergedPercentiles } from './support/report.js';
import { scatterTable } from './support/scatter.js';

interface Side {
  readonly name: 'base' | 'new';
  readonly cluster: CairnCluster;
  /** The three nodes' CPU when idle, cores. */
  idleCores: number;
  /** Records in usertable: the load's, then the last run's insertedUpTo (D and E add rows). */
  records: number;
  readonly runs: Map<WorkloadName, { serverUsPerOp: number; clientUsPerOp: number; opsPerSec: number; p99Ms: number }[]>;
}

const quiet: Output = { write: () => undefined };

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? (s[(s.length - 1) >> 1] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
}

async function idleCores(c: CairnCluster, ms = 3000): Promise<number> {
  const m = cpuMeter(() => c.pids());
  await new Promise((r) => setTimeout(r, ms));
  const u = m.stop();
  return u.serverCpuSec / u.elapsedSec;
}

async function main(): Promise<void> {
  const o = new Command()
    .requiredOption('--base <dir>', 'dist/ directory of the base build')
    .option('--records <n>', 'records to load', (v) => Number(v), 10_000)
    .option('--workloads <list>', 'workloads, e.g. CBD', 'C')
    .option('--duration <d>', 'per run', parseDuration, 10_000)
    .option('--pairs <n>', 'alternating pairs of runs per workload', (v) => Number(v), 3)
    .option('--concurrency <n>', 'clients', (v) => Number(v), 16)
    .option('--splits <n>', 'ranges usertable is split into', (v) => Number(v), 12)
    .parse()
    .opts<{ base: string; records: number; workloads: string; duration: number; pairs: number; concurrency: number; splits: number }>();
  const workloads = [...o.workloads].map(parseWorkloadName);
  const baseMod = (await import(pathToFileURL(resolve(o.base, 'bench/support/cluster.js')).href)) as { startCairn: typeof startCairn };
  const sides: Side[] = [];
  try {
    sides.push({ name: 'base', cluster: await baseMod.startCairn(3), idleCores: 0, records: o.records, runs: new Map() });
    sides.push({ name: 'new', cluster: await startCairn(3), idleCores: 0, records: o.records, runs: new Map() });
    for (const s of sides) {
      const load = await initYcsb({ urls: [...s.cluster.urls], drop: true, insertCount: o.records, concurrency: 8, batchSize: 200, splits: o.splits }, { output: quiet });
      const sc = o.splits > 1 ? await scatterTable(s.cluster, 'usertable', { stableRounds: 4, intervalMs: 750, timeoutMs: 30_000 }) : null;
      process.stdout.write(`${s.name}: loaded ${o.records} rows at ${Math.round(load.rowsPerSec)} rows/s${sc === null ? '' : `, leases by node ${JSON.stringify(sc.leasesByNode)}`}\n`);
    }
    for (const s of sides) s.idleCores = await idleCores(s.cluster);
    process.stdout.write(`idle cores: base ${sides[0]?.idleCores.toFixed(3)} new ${sides[1]?.idleCores.toFixed(3)}\n`);
    for (let pair = 0; pair < o.pairs; pair++) {
      // ABBA order: neither build always runs first.
      const order = pair % 2 === 0 ? sides : [...sides].reverse();
      for (const w of workloads) {
        for (const s of order) {
          const m = cpuMeter(() => s.cluster.pids());
          // recordCount given: the runner would otherwise count the table (a full scan) inside the CPU meter.
          const run = await runYcsb({ urls: [...s.cluster.urls], workload: w, concurrency: o.concurrency, durationMs: o.duration, method: 'prepare', seed: 1 + pair, tolerateErrors: true, recordCount: s.records }, { output: quiet });
          const u = m.stop();
          s.records = run.insertedUpTo;
          const n = Math.max(1, run.total.count);
          const pct = mergedPercentiles(Object.values(run.ops).flatMap((x) => (x === undefined || x.count === 0 ? [] : [x.histogram])));
          const r = {
            serverUsPerOp: ((u.serverCpuSec - s.idleCores * u.elapsedSec) * 1e6) / n,
            clientUsPerOp: (u.clientCpuSec * 1e6) / n,
            opsPerSec: run.total.opsPerSec,
            p99Ms: pct.p99Ms,
          };
          const list = s.runs.get(w) ?? [];
          list.push(r);
          s.runs.set(w, list);
          process.stdout.write(
            `${w} ${s.name.padEnd(4)}: ${Math.round(r.opsPerSec).toString().padStart(6)} ops/s  p99 ${r.p99Ms} ms  server ${r.serverUsPerOp.toFixed(1)} µs/op (idle out)  client ${r.clientUsPerOp.toFixed(1)} µs/op  errors ${run.total.errors}  load ${(loadavg()[0] ?? 0).toFixed(1)}\n`,
          );
        }
      }
    }
    for (const w of workloads) {
      const line = sides.map((s) => {
        const rs = s.runs.get(w) ?? [];
        return `${s.name} server ${median(rs.map((r) => r.serverUsPerOp)).toFixed(1)} µs/op, ${Math.round(median(rs.map((r) => r.opsPerSec)))} ops/s`;
      });
      process.stdout.write(`median ${w}: ${line.join(' | ')}\n`);
    }
  } finally {
    for (const s of sides) await s.cluster.stop();
  }
}

await main();
