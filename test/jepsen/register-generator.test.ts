// The register generators of jepsen-style/workloads (issue 9): kv-register-n1-reads gives
// the clients of n1 (worker w with w mod nodes = 0) reads only — the expired-lease-reads
// canary's path needs n1's gateway to keep routing to its own replica, which one refused
// write would end — while every other client still reads and writes.
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/util/index.js';
import { WORKLOADS } from '../../jepsen-style/workloads/index.js';
import type { OpRequest } from '../../jepsen-style/workloads/index.js';

function draw(workload: string, nodes: number, concurrency: number, n: number): Map<number, OpRequest[]> {
  const gen = WORKLOADS[workload]!.generator(new Prng(7), concurrency, nodes);
  const byWorker = new Map<number, OpRequest[]>();
  for (let i = 0; i < n; i++) {
    const w = i % concurrency;
    const op = gen.next(w, w)!;
    byWorker.set(w, [...(byWorker.get(w) ?? []), op]);
  }
  return byWorker;
}

describe('register generators', () => {
  it('kv-register-n1-reads: the clients of n1 only read; the others read and write', () => {
    const byWorker = draw('kv-register-n1-reads', 3, 9, 900);
    for (const [w, ops] of byWorker) {
      const fs = new Set(ops.map((o) => o.f));
      if (w % 3 === 0) expect([...fs]).toEqual(['read']);
      else expect([...fs].sort()).toEqual(['read', 'write']);
    }
  });

  it('kv-register: every client reads and writes (no CAS through the KV endpoint)', () => {
    for (const ops of draw('kv-register', 3, 6, 600).values()) expect([...new Set(ops.map((o) => o.f))].sort()).toEqual(['read', 'write']);
  });

  it('keys rotate: each key gets a bounded number of operations', () => {
    const counts = new Map<unknown, number>();
    for (const ops of draw('kv-register-n1-reads', 3, 9, 2000).values()) for (const o of ops) counts.set(o.key, (counts.get(o.key) ?? 0) + 1);
    expect(counts.size).toBeGreaterThan(5);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(200);
  });
});
