/**
 * Write-path micro-benchmark (`npm run bench:write-path`): where the time of a
 * store's synced Raft-log write goes. It reproduces the store's pattern
 * (src/kv/store.ts processRound) on one LevelEngine, without Raft or RPC:
 *
 *   - a loop of rounds, one synced batch in flight at a time: `--entries`
 *     Raft log entries of `--value` bytes at raftLogKey(1, i) plus a hard
 *     state, deleting the entries `--log-keep` indexes behind (log
 *     truncation);
 *   - applies: the previous round's commands as an unsynced batch of MVCC-
 *     sized puts to random data keys plus the applied state — written beside
 *     the synced write ("separate", as the store's late/fast apply passes
 *     do), or merged into it ("merged", as its early applies do);
 *   - JS-thread reads: `--getsync` random getSync of loaded keys per
 *     millisecond (leaseholder reads and MVCC head reads);
 *   - pool readers: `--pool-readers` loops of getMany(50) / iterator nextv(100)
 *     (scans, prefetches), which occupy libuv pool threads.
 *
 * Per scenario it prints the synced write's latency as the store's metric
 * sees it (call → JS callback, cairn_storage_sync_latency_seconds), a probe
 * of the libuv pool's queue (an fs.fstat issued with each synced write: pool
 * wait + event-loop delay), the event-loop delay (perf_hooks
 * monitorEventLoopDelay), and the raw floor (4 KB write + fdatasync of a
 * plain file in the same directory). Each scenario runs in a fresh child
 * process (UV_THREADPOOL_SIZE is read once per process); `--procs N` runs N
 * such children at once on the same disk, as the N nodes of a local cluster
 * do. It prints figures and never fails on them.
 *
 *   node dist/bench/write-path.js [--seconds 5] [--entries 32] [--value 1100]
 *        [--getsync 20] [--pool-readers 2] [--keys 100000] [--procs 1]
 *        [--runs 3] [--only name,name]
 *
 * Findings (session 6, 19:03-19:10 UTC, 3 stores at once, 50,000 keys,
 * 32 × 1,100 B entries per round; one run each at load 13-19, then three
 * runs at load 14-22 for the rows marked *; ms):
 *
 *   scenario                         sync mean  p90  apply mean  pool probe  loop delay  fsync p50
 *   sync alone                         1.9       4.0      –          0.4         1.3        0.5-1.0
 *   + applies separate (LevelDB sync)  2.8       5.4     2.9         0.7         1.5        0.7
 *   + applies separate, wal sync       3.0       5.1     1.1         0.4         1.3        0.5
 *   + reads (getSync 20/ms + pool)    38.0     103.8    38.6        29.8        14.4        0.9
 *   + reads, pool 16                  36.6      95.8    39.7        21.9        11.1        0.8
 *   + reads, wal sync                 44.0     116.3    18.3        14.2         7.5        1.1
 *   + reads, no snappy                15.3      31.0      –          7.2         4.3        0.4
 *
 * So the ~40 ms synced writes seen in the cluster against a 1-6 ms raw
 * fdatasync are reproduced by CPU starvation alone: once the stores' JS
 * threads are busy (reads) on this 2-core machine, a trivial pool job (the
 * fstat probe) takes 15-30 ms and the event loop runs callbacks 5-15 ms
 * late, while the fsync itself stays at ~1 ms. The LevelDB-owned parts are
 * small: the writer queue costs an unsynced apply the fsync it queues
 * behind (2.9 vs 1.1 ms alone; 38.6 vs 18.3 ms under reads — fixed in the
 * store for early applies by issuing them before the synced write; 'wal'
 * sync mode removes it for every write but adds an event-loop hop to the
 * synced write itself, which costs more under load: bench:kv put A/B at load
 * 22-30, medians of 3, synced write 36.1 ms LevelDB vs 45.7 ms wal, put
 * 293 vs 266/s, so LevelDB's sync stays the default); a 16-thread pool and a
 * 64 MB write buffer were within the noise; block compression off looked
 * better in one run (fewer CPU cycles per read: the values here are random
 * letters, which snappy barely compresses) and is not changed on one run.
 *
 * The store change (early applies written ahead of the synced write) is
 * checked by test/kv/ack-at-commit (a read of such a command's key is
 * served while the round's fsync is held; it timed out before). Its effect
 * on YCSB A (5,000 records, 64 connections, 15 s, 3 node processes) was not
 * measurable at load 21-28: the same tree with the early applies merged back
 * into the synced write gave 74, 65, 80 ops/s against 92, 74, 67 (medians
 * 74 and 74).
 *
 * Session 7 (22:00-22:11 UTC, the 'wal' sync mode's A/B before deciding its
 * fate): this bench three times back to back, 3 stores at once (load 1 at
 * the start, 21-26 from the second run on), ms, LevelDB sync vs wal sync:
 *   unsynced apply beside the synced write   3.0 / 8.8 / 9.2  vs 1.1 / 1.7 / 1.8
 *   synced write, applies only                2.9 / 8.5 / 9.0  vs 2.9 / 5.2 / 4.5
 *   synced write + pool readers (LevelDB: applies merged, as the store's
 *   early applies are)                       22.7 / 64.4 / 49.6 vs 68.0 / 114.0 / 201.4
 * and bench:kv put (3 processes, 64 clients, one range, 10 s, modes
 * alternating run by run, load 24-26): LevelDB 494 / 273 / 358 puts/s, wal
 * 238 / 344 / 477 (medians 358 vs 344; synced write means 22-34 vs 27-56 ms).
 * No clear win, so the mode, its scenarios here and CAIRN_STORAGE_SYNC_MODE
 * were removed (storage/level-engine.ts header); the rows above that name
 * it are history.
 *
 * Ownership: every child and temporary directory started here is ended and
 * removed before exit.
 */
import { spawn } from 'node:child_process';
import { closeSync, fdatasyncSync, fstat, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { LevelEngine } from '../storage/level-engine.js';
import { raftHardStateKey, raftLogKey, rangeAppliedStateKey } from '../storage/keys.js';
import { Prng } from '../src/util/prng.js';

interface Scenario {
  readonly name: string;
  readonly applies: 'none' | 'separate' | 'merged';
  readonly getsync: boolean;
  readonly poolReaders: boolean;
  readonly threadpool?: number;
  /** LevelDB options under test. */
  readonly writeBufferSize?: number;
  readonly compression?: boolean;
}

const SCENARIOS: readonly Scenario[] = [
  { name: 'sync alone', applies: 'none', getsync: false, poolReaders: false },
  { name: '+ applies separate', applies: 'separate', getsync: false, poolReaders: false },
  { name: '+ applies merged', applies: 'merged', getsync: false, poolReaders: false },
  { name: '+ getSync reads', applies: 'separate', getsync: true, poolReaders: false },
  { name: '+ pool readers', applies: 'separate', getsync: true, poolReaders: true },
  { name: '+ pool readers, pool 16', applies: 'separate', getsync: true, poolReaders: true, threadpool: 16 },
  { name: '+ pool readers, merged', applies: 'merged', getsync: true, poolReaders: true },
  { name: '+ pool readers, merged, wb 64M', applies: 'merged', getsync: true, poolReaders: true, writeBufferSize: 64 << 20 },
  { name: '+ pool readers, merged, no snappy', applies: 'merged', getsync: true, poolReaders: true, compression: false },
];

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}
function strArg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const SECONDS = arg('seconds', 5);
const ENTRIES = arg('entries', 32);
const VALUE = arg('value', 1100);
const GETSYNC_PER_MS = arg('getsync', 20);
const POOL_READERS = arg('pool-readers', 2);
const KEYS = arg('keys', 100_000);
const LOG_KEEP = arg('log-keep', 2000);

interface ChildResult {
  rounds: number;
  sync: number[];
  /** Latency of the separate unsynced apply write issued beside each synced one. */
  apply: number[];
  probe: number[];
  loopMeanMs: number;
  loopP99Ms: number;
  cpuUsPerRound: number;
  fsync: number[];
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
}
function mean(xs: number[]): number {
  return xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}
function median(xs: number[]): number {
  return pct(xs, 50);
}
const f1 = (x: number): string => (Number.isFinite(x) ? x.toFixed(1) : '–');

// ---- child: one scenario on one store -------------------------------------------------

function dataKey(k: number): Buffer {
  const b = Buffer.allocUnsafe(9);
  b[0] = 0xf0;
  b.writeUInt32BE(0, 1);
  b.writeUInt32BE(k, 5);
  return b;
}

/** The raw floor: `n` 4 KB writes + fdatasync of a plain file in `dir`, ms each. */
function rawFsync(dir: string, n: number): number[] {
  const fd = openSync(join(dir, 'fsync-probe'), 'w');
  const buf = Buffer.alloc(4096, 7);
  const out: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      writeSync(fd, buf);
      fdatasyncSync(fd);
      out.push(performance.now() - t);
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

async function child(s: Scenario): Promise<ChildResult> {
  const dir = mkdtempSync(join(process.env['WRITE_PATH_DIR'] ?? tmpdir(), 'cairn-write-path-'));
  const engine = await LevelEngine.open(dir, { ...(s.writeBufferSize !== undefined ? { writeBufferSize: s.writeBufferSize } : {}), ...(s.compression !== undefined ? { compression: s.compression } : {}) });
  const prng = new Prng(process.pid);
  const value = Buffer.alloc(VALUE, 0x61);
  for (let i = 0; i < VALUE; i++) value[i] = 0x61 + (prng.nextUint32() % 26);
  try {
    // Load the data keys (unsynced batches), so reads and applies hit a real LSM.
    for (let b = 0; b < KEYS; b += 1000) {
      const wb = engine.newBatch();
      for (let k = b; k < Math.min(KEYS, b + 1000); k++) wb.put(dataKey(k), value);
      await engine.write(wb);
    }
    const fsync = rawFsync(dir, 50);
    const probeFd = openSync(join(dir, 'stat-probe'), 'w');
    let stop = false;
    const side: Promise<void>[] = [];
    if (s.getsync) {
      side.push(
        (async () => {
          let last = performance.now();
          while (!stop) {
            await new Promise<void>((r) => setImmediate(r));
            const now = performance.now();
            const n = Math.min(200, Math.round((now - last) * GETSYNC_PER_MS));
            last = now;
            for (let i = 0; i < n; i++) engine.getSync(dataKey(prng.nextUint32() % KEYS));
          }
        })(),
      );
    }
    if (s.poolReaders) {
      for (let p = 0; p < POOL_READERS; p++) {
        side.push(
          (async () => {
            for (let i = 0; !stop; i++) {
              if (i % 2 === 0) {
                await engine.getMany(Array.from({ length: 50 }, () => dataKey(prng.nextUint32() % KEYS)));
              } else {
                const start = prng.nextUint32() % KEYS;
                const it = engine.iterator({ gte: dataKey(start), lt: dataKey(start + 100) });
                await it.nextBatch(100);
                await it.close();
              }
            }
          })(),
        );
      }
    }
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const sync: number[] = [];
    const probe: number[] = [];
    const apply: number[] = [];
    const cpu0 = process.cpuUsage();
    const end = performance.now() + SECONDS * 1000;
    let index = 1;
    let rounds = 0;
    let pendingApply: Buffer[] = [];
    while (performance.now() < end) {
      const wb = engine.newBatch();
      for (let e = 0; e < ENTRIES; e++) wb.put(raftLogKey(1, index + e), value);
      if (index > LOG_KEEP) for (let e = 0; e < ENTRIES; e++) wb.delete(raftLogKey(1, index - LOG_KEEP + e));
      index += ENTRIES;
      wb.put(raftHardStateKey(1), Buffer.from(`hs${index}`));
      const ab = engine.newBatch();
      if (s.applies !== 'none') {
        for (const k of pendingApply) ab.put(k, value);
        ab.put(rangeAppliedStateKey(1), Buffer.from(`as${index}`));
        if (s.applies === 'merged') ab.forEachOp((k, v) => (v === null ? wb.delete(k) : wb.put(k, v)));
      }
      const t0 = performance.now();
      const pr = new Promise<number>((resolve) => fstat(probeFd, () => resolve(performance.now() - t0)));
      const synced = engine.write(wb, { sync: true }).then(() => performance.now() - t0);
      const applied = s.applies === 'separate' ? engine.write(ab).then(() => performance.now() - t0) : null;
      sync.push(await synced);
      if (applied !== null) apply.push(await applied);
      probe.push(await pr);
      rounds++;
      pendingApply = Array.from({ length: ENTRIES }, () => dataKey(prng.nextUint32() % KEYS));
    }
    const cpu = process.cpuUsage(cpu0);
    stop = true;
    await Promise.all(side);
    h.disable();
    closeSync(probeFd);
    return { rounds, sync, apply, probe, loopMeanMs: h.mean / 1e6, loopP99Ms: h.percentile(99) / 1e6, cpuUsPerRound: (cpu.user + cpu.system) / Math.max(1, rounds), fsync };
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- parent: every scenario, --procs children at once, --runs times ----------------

function runChild(s: Scenario, idx: number): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    if (s.threadpool !== undefined) env['UV_THREADPOOL_SIZE'] = String(s.threadpool);
    else delete env['UV_THREADPOOL_SIZE'];
    const c = spawn(process.execPath, [fileURLToPath(import.meta.url), ...process.argv.slice(2), '--child', String(idx)], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    c.on('error', reject);
    c.on('exit', (code) => {
      if (code !== 0) reject(new Error(`bench/write-path: child for '${s.name}' exited ${code}`));
      else resolve(JSON.parse(out) as ChildResult);
    });
  });
}

async function main(): Promise<void> {
  const childIdx = process.argv.indexOf('--child');
  if (childIdx >= 0) {
    const s = SCENARIOS[Number(process.argv[childIdx + 1])] as Scenario;
    process.stdout.write(JSON.stringify(await child(s)));
    return;
  }
  const procs = arg('procs', 1);
  const runs = arg('runs', 1);
  const only = strArg('only')?.split(',');
  console.log(`bench/write-path: ${ENTRIES} entries × ${VALUE} B per synced round, ${KEYS.toLocaleString('en-US')} keys, ${SECONDS} s per scenario, ${procs} store(s) at once, ${runs} run(s); getSync ${GETSYNC_PER_MS}/ms, ${POOL_READERS} pool readers; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  console.log('medians over runs of each figure (ms; CPU µs per round of the main thread)');
  console.log(['scenario'.padEnd(36), 'rounds/s', 'sync mean', 'p50', 'p90', 'p99', 'apply mean', 'p90', 'probe mean', 'p90', 'loop mean', 'p99', 'CPU/round', 'fsync p50', 'p90', 'load'].join('  '));
  for (let i = 0; i < SCENARIOS.length; i++) {
    const s = SCENARIOS[i] as Scenario;
    if (only !== undefined && !only.some((o) => s.name.includes(o))) continue;
    const per: ChildResult[] = [];
    for (let r = 0; r < runs; r++) per.push(...(await Promise.all(Array.from({ length: procs }, () => runChild(s, i)))));
    const m = (f: (c: ChildResult) => number): number => median(per.map(f));
    console.log(
      [
        s.name.padEnd(36),
        f1(m((c) => c.rounds / SECONDS)).padStart(8),
        f1(m((c) => mean(c.sync))).padStart(9),
        f1(m((c) => pct(c.sync, 50))).padStart(3),
        f1(m((c) => pct(c.sync, 90))).padStart(3),
        f1(m((c) => pct(c.sync, 99))).padStart(3),
        f1(m((c) => mean(c.apply))).padStart(10),
        f1(m((c) => pct(c.apply, 90))).padStart(3),
        f1(m((c) => mean(c.probe))).padStart(10),
        f1(m((c) => pct(c.probe, 90))).padStart(3),
        f1(m((c) => c.loopMeanMs)).padStart(9),
        f1(m((c) => c.loopP99Ms)).padStart(3),
        f1(m((c) => c.cpuUsPerRound)).padStart(9),
        f1(m((c) => pct(c.fsync, 50))).padStart(9),
        f1(m((c) => pct(c.fsync, 90))).padStart(3),
        loadavg()[0]?.toFixed(1) ?? '',
      ].join('  '),
    );
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
