// The SQL CI runs of issue 9 against a real 3-node Cairn cluster (node processes on
// 127.0.<a free subnet>.11–13 started through the CLI, clients over the PostgreSQL wire protocol):
//   - append (Elle list-append, serializable transactions) and register (CAS register over
//     SQL, linearizability) for 30 s each under kill + partition — both must be valid;
//   - bank (transfers, constant total) under clock skew below the max offset — valid;
//   - canaries: builds with CAIRN_CANARY=skip-timestamp-cache (append, lease transfers),
//     skip-uncertainty-restart (register-handoff, 5 nodes, n1's clock ahead) and
//     expired-lease-reads (kv-register-n1-reads, leaseholder cut off) must be caught.
// Every run is a whole `npm run jepsen` run (runJepsen); the test files of this folder run
// one after another inside a file, so the clusters never overlap here.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot, runJepsen, type RunOptions, type RunResult } from '../../jepsen-style/runner.js';
import { expectExercised } from './support.js';

// Runs go under jepsen-style/store/ci/ (git-ignored); a run whose verdict is not the
// expected one is kept there for the post-mortem, the others are removed.
const store = join(repoRoot(), 'jepsen-style', 'store', 'ci');
const remove: string[] = [];
afterAll(() => {
  for (const d of remove) rmSync(d, { recursive: true, force: true });
});

const base = { nodes: 3, concurrency: 6, target: 'cairn', storeRoot: store, recoveryTimeoutMs: 20_000 } as const;

async function run(o: Pick<RunOptions, 'workload' | 'nemesis' | 'timeSec' | 'seed'> & Partial<RunOptions>, expected: boolean): Promise<RunResult> {
  const r = await runJepsen({ ...base, faultIntervalMs: 3000, faultDurationMs: 4000, ...o });
  if (r.valid === expected) remove.push(r.dir);
  console.log(`jepsen: ${r.summary}`);
  return r;
}

function expectValid(r: RunResult): void {
  expect(r.valid, `${r.summary} (kept in ${r.dir})`).toBe(true);
  expect(r.faults.length, JSON.stringify(r.faults, null, 1)).toBeGreaterThanOrEqual(2);
  expect(r.faults.every((f) => f.bit), JSON.stringify(r.faults, null, 1)).toBe(true);
}

describe('jepsen-style SQL CI runs on a 3-node Cairn cluster', () => {
  it('append, 30 s of kill + partition: no Elle anomaly', async () => {
    const r = await run({ workload: 'append', nemesis: 'kill,partition', timeSec: 30, seed: 9 }, true);
    expectValid(r);
    // A kill of every node leaves SQL unmounted for the rest of the run (RESULTS.md), so
    // the oks come from before it; this only proves the workload ran.
    expect(r.counts.ok, r.summary).toBeGreaterThan(20);
  }, 180_000);

  it('register over SQL, 30 s of kill + partition: linearizable', async () => {
    const r = await run({ workload: 'register', nemesis: 'kill,partition', timeSec: 30, seed: 9 }, true);
    expectValid(r);
    // As for append: seed 9's second fault kills all three nodes ~12 s into the workload and SQL stays unmounted
    // for most of the rest (RESULTS.md's availability finding; s7: ECONNREFUSED for the ~4 s restart, then 'not
    // mounted' until 48 s of a 49 s run), so the oks come from those ~12 s: 42–254 in 11 runs at load 21–30.
    expectExercised(r, ['read', 'write', 'cas']);
  }, 180_000);

  it('bank, 20 s of clock skew at 0.4× and 0.8× the max offset: total conserved', async () => {
    const r = await run({ workload: 'bank', nemesis: 'clock-safe', timeSec: 20, seed: 5 }, true);
    expectValid(r);
    expect(r.faults.every((f) => f.evidence.some((e) => /clock offset set to -?\d+ ms/.test(e)))).toBe(true);
    // 120 oks at load 29, 37 in the next run (66 ops in 20 s): the old bound of 50 was a load figure.
    expectExercised(r, ['read', 'transfer']);
  }, 150_000);

  // The bound: a canary must be caught "within a 60-second run". At 20 s append
  // caught this one in 4 of 5 seeds, at 30 s in 4 of 4; the full 60 s leaves margin.
  it('canary skip-timestamp-cache, append for 60 s under lease transfers: caught (Elle anomalies)', async () => {
    const r = await run({ workload: 'append', nemesis: 'lease', timeSec: 60, seed: 1, faultIntervalMs: 2000, faultDurationMs: 2000, canary: 'skip-timestamp-cache' }, false);
    expect(r.valid, `${r.summary} (kept in ${r.dir})`).toBe(false);
    const types = r.checks.results['elle-append']?.anomalyTypes ?? [];
    expect(types.some((t) => /^G-single|^G2|^G1|^G0|lost-update/.test(t)), types.join(', ')).toBe(true);
  }, 210_000);

  // register-handoff on 5 nodes: a write through n1, whose clock runs 0.6× the max offset ahead, then a read
  // through each other node as soon as the write is acknowledged. Without the uncertainty restart the reads of the
  // gateways that heard nothing from n1 since the write began are served below it: stale. RESULTS.md: caught in
  // every 60 s run (hundreds of stale reads each), the correct build valid in the same runs; 20 s is plenty.
  it('canary skip-uncertainty-restart, register-handoff for 20 s with n1 ahead: caught (stale reads)', async () => {
    const r = await run({ workload: 'register-handoff', nemesis: 'clock-writer', nodes: 5, concurrency: 5, timeSec: 20, seed: 1, faultIntervalMs: 1000, faultDurationMs: 30_000, canary: 'skip-uncertainty-restart' }, false);
    expect(r.valid, `${r.summary} (kept in ${r.dir})`).toBe(false);
    expect(r.checks.results['linearizable(register)']?.anomalyTypes).toContain('nonlinearizable');
  }, 150_000);

  // kv-register-n1-reads under partition-leaseholder (the newest range's lease moved to n1, then n1 cut off for
  // 2× the 3 s lease + 12 s; n1's clients only read): the majority takes the range over and writes, n1 keeps
  // answering reads from its expired lease. RESULTS.md: caught in 5 of 5 runs of 60 s (40 s missed once: its
  // first transfer to n1 was refused, now retried, and the second cut was cut short by the end of the run).
  it('canary expired-lease-reads, kv-register-n1-reads for 60 s, leaseholder cut off: caught (stale reads)', async () => {
    const r = await run({ workload: 'kv-register-n1-reads', nemesis: 'partition-leaseholder', concurrency: 9, timeSec: 60, seed: 1, faultIntervalMs: 3000, nodeArgs: ['--lease-duration=3s'], opTimeoutMs: 15_000, canary: 'expired-lease-reads' }, false);
    expect(r.valid, `${r.summary} (kept in ${r.dir})`).toBe(false);
    expect(r.checks.results['linearizable(register)']?.anomalyTypes).toContain('nonlinearizable');
  }, 210_000);
});
