// bench/support/proc-stats: the per-operation CPU line, with and without the servers' idle CPU taken out
// (figures are printed by the benches, never asserted; this checks the arithmetic and the /proc reading).
import { describe, expect, it } from 'vitest';
import { cpuPerOp, idleCores, type CpuUse } from '../../bench/support/proc-stats.js';

describe('bench/support/proc-stats', () => {
  const run: CpuUse = { serverCpuSec: 3, clientCpuSec: 0.5, perPidCpuSec: [1, 2], elapsedSec: 10 };

  it('cpuPerOp: per process, client and total µs per operation', () => {
    expect(cpuPerOp(run, 1000, (i) => `n${i + 1}`)).toBe('n1 1000 + n2 2000 + client 500 = 3500 µs/op');
    expect(cpuPerOp(run, 1000)).toBe('server 3000 + client 500 = 3500 µs/op');
    expect(cpuPerOp(run, 0)).toBe('no operations');
  });

  it('cpuPerOp with idle: each process loses its idle cores × the run time (never below zero)', () => {
    // n1: 1 − 0.05 × 10 = 0.5 s; n2: 2 − 0.3 × 10 < 0 → 0; client 0.5 s: 1.0 s over 1000 ops.
    expect(cpuPerOp(run, 1000, (i) => `n${i + 1}`, [0.05, 0.3])).toBe('n1 1000 + n2 2000 + client 500 = 3500 µs/op; without idle 1000 µs/op (idle 0.05 + 0.30 cores)');
    expect(cpuPerOp(run, 1000, undefined, [])).toBe('server 3000 + client 500 = 3500 µs/op');
  });

  it('idleCores reads each live process from /proc (a gone one counts zero)', async () => {
    const cores = await idleCores(() => [process.pid, 2 ** 22 + 1], 200);
    expect(cores).toHaveLength(2);
    expect(cores[0]).toBeGreaterThanOrEqual(0);
    expect(cores[1]).toBe(0);
  });
});
