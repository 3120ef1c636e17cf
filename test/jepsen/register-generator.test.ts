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

  // register-handoff (the skip-uncertainty-restart canary's workload): a write through n1, then
  // one read of the same key through every other node as soon as the write has ended, then the
  // next write once every read has ended.
  it('register-handoff: write on n1, then a read on every other node, round after round', () => {
    const nodes = 5;
    const gen = WORKLOADS['register-handoff']!.generator(new Prng(7), 7, nodes);
    const readers = [1, 2, 3, 4, 6];
    const rounds: string[] = [];
    for (let round = 1; round <= 120; round++) {
      const w = gen.next(0, 0)!;
      expect(w.f).toBe('write');
      // While the write runs nobody else gets work, and n1's second worker (w = 5) never does.
      for (const r of [...readers, 5]) expect(gen.next(r, r)).toBeUndefined();
      // The write ended: the writer waits, each reader gets exactly one read of the written key.
      expect(gen.next(0, 0)).toBeUndefined();
      const reads = readers.map((r) => gen.next(r, r));
      expect(reads.every((o) => o?.f === 'read' && o.key === w.key)).toBe(true);
      expect(gen.next(5, 5)).toBeUndefined();
      // A reader done early gets nothing more; the writer waits for the last read.
      expect(gen.next(1, 1)).toBeUndefined();
      expect(gen.next(0, 0)).toBeUndefined();
      for (const r of readers.slice(1)) expect(gen.next(r, r)).toBeUndefined();
      rounds.push(`${String(w.key)}:${String(w.value)}`);
    }
    // Values are the round within the key (unique per key); a key gets 50 rounds.
    expect(rounds.slice(0, 2)).toEqual(['0:1', '0:2']);
    expect(rounds[49]).toBe('0:50');
    expect(rounds[50]).toBe('1:1');
    expect(new Set(rounds).size).toBe(120);
  });

  it('register-handoff on one node (PostgreSQL): every other worker reads', () => {
    const gen = WORKLOADS['register-handoff']!.generator(new Prng(7), 3, 1);
    expect(gen.next(0, 0)?.f).toBe('write');
    expect(gen.next(0, 0)).toBeUndefined();
    expect([gen.next(1, 1)?.f, gen.next(2, 2)?.f]).toEqual(['read', 'read']);
  });
});
