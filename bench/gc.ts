/**
 * MVCC GC cost (`npm run bench:gc [-- --keys N --versions V --runs R]`): on a
 * LevelEngine, N keys (default 20,000) with V versions each (default 5, 100-byte
 * values, inline), the GC queue's work at a threshold above every version
 * (src/kv/gc-queue.ts runGc without the Raft round): one candidate scan
 * (mvccGcCandidates, heads only) in pages of 256 keys, each page collected
 * into one write batch (mvccGarbageCollect, what a GCRequest evaluates, with
 * its stats delta) and written. Beside it, in the same run, a plain mvccScan
 * of the same keys at now (reading every head) as the reference cost of one
 * pass. Prints per run and medians: µs of process CPU (process.cpuUsage:
 * all threads) per key scanned and per version removed, and versions removed
 * per wall second, with the load average. Never asserted anywhere.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelEngine } from '../storage/level-engine.js';
import { emptyStats, mvccGarbageCollect, mvccGcCandidates, mvccPut, mvccScan } from '../storage/mvcc.js';
import type { Timestamp } from '../src/util/hlc.js';

function flag(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

const KEYS = flag('keys', 20_000);
const VERSIONS = flag('versions', 5);
const RUNS = flag('runs', 3);
const PAGE = 256;
const key = (i: number): Buffer => Buffer.from(`\x90k${String(i).padStart(8, '0')}`, 'latin1');
const ts = (wall: number): Timestamp => ({ wall, logical: 0 });
const cpuMicros = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

interface RunResult {
  scanCpuPerKey: number;
  gcCpuPerVersion: number;
  gcCpuPerKey: number;
  removedPerSec: number;
}

async function run(): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-gc-'));
  const e = await LevelEngine.open(dir);
  try {
    const value = Buffer.alloc(100, 0x61);
    for (let v = 1; v <= VERSIONS; v++) {
      for (let lo = 0; lo < KEYS; lo += 1000) {
        const b = e.newBatch();
        for (let i = lo; i < Math.min(KEYS, lo + 1000); i++) mvccPut(b, key(i), ts(v * 1000), value);
        await e.write(b);
      }
    }
    const start = key(0);
    const end = key(KEYS);
    // Reference: one plain scan of every head at now.
    let c0 = cpuMicros();
    await mvccScan(e, start, end, ts(1e9));
    const scanCpu = cpuMicros() - c0;
    // The GC queue's work: pages of candidates, each collected into one batch.
    const threshold = ts((VERSIONS + 1) * 1000);
    c0 = cpuMicros();
    const w0 = performance.now();
    let removed = 0;
    let from: Buffer | null = start;
    while (from !== null) {
      const page: { keys: Buffer[]; resumeKey: Buffer | null } = await mvccGcCandidates(e, from, end, threshold, PAGE);
      from = page.resumeKey;
      if (page.keys.length === 0) break;
      const b = e.newBatch();
      removed += await mvccGarbageCollect(b, page.keys, threshold, emptyStats());
      await e.write(b);
    }
    const gcCpu = cpuMicros() - c0;
    const wall = performance.now() - w0;
    if (removed !== KEYS * (VERSIONS - 1)) throw new Error(`bench: removed ${removed}, expected ${KEYS * (VERSIONS - 1)}`);
    return { scanCpuPerKey: scanCpu / KEYS, gcCpuPerVersion: gcCpu / removed, gcCpuPerKey: gcCpu / KEYS, removedPerSec: removed / (wall / 1000) };
  } finally {
    await e.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`bench:gc — ${KEYS} keys × ${VERSIONS} versions (100 B, inline), pages of ${PAGE}; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  const results: RunResult[] = [];
  for (let r = 0; r < RUNS; r++) {
    const x = await run();
    results.push(x);
    console.log(
      `run ${r + 1}: reference scan ${x.scanCpuPerKey.toFixed(1)} µs CPU/key; GC ${x.gcCpuPerKey.toFixed(1)} µs CPU/key, ${x.gcCpuPerVersion.toFixed(1)} µs CPU/version removed, ${Math.round(x.removedPerSec)} versions removed/s (load ${loadavg()[0]?.toFixed(1)})`,
    );
  }
  const m = (f: (x: RunResult) => number): number => median(results.map(f));
  console.log(`median: reference scan ${m((x) => x.scanCpuPerKey).toFixed(1)} µs/key; GC ${m((x) => x.gcCpuPerKey).toFixed(1)} µs/key = ${m((x) => x.gcCpuPerVersion).toFixed(1)} µs/version; ${Math.round(m((x) => x.removedPerSec))} versions/s`);
}

await main();
