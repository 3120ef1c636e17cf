// The linearizability checker on register histories produced by a real linearizable
// execution: every operation takes effect atomically at a random point inside its
// interval (indeterminate ones maybe, failed ones never). Such histories are always
// linearizable; a read tampered to return a value nobody wrote never is.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { casRegister, checkLinearizable } from '../../jepsen-style/checkers/linearizable.js';
import type { Op } from '../../jepsen-style/history/history.js';

interface Spec {
  readonly f: 'read' | 'write' | 'cas';
  readonly a: number;
  readonly b: number;
  readonly gap: number;
  readonly len: number;
  readonly at: number; // where in [start, end] the effect happens, 0..1000
  readonly outcome: 'ok' | 'info-applied' | 'info-lost';
  readonly key: number;
}

const spec: fc.Arbitrary<Spec> = fc.record({
  f: fc.constantFrom('read', 'read', 'write', 'cas'),
  a: fc.integer({ min: 0, max: 4 }),
  b: fc.integer({ min: 0, max: 4 }),
  gap: fc.integer({ min: 0, max: 30 }),
  len: fc.integer({ min: 1, max: 60 }),
  at: fc.integer({ min: 0, max: 1000 }),
  outcome: fc.constantFrom('ok', 'ok', 'ok', 'ok', 'info-applied', 'info-lost'),
  key: fc.integer({ min: 0, max: 2 }),
});

/** Runs each process's ops back to back; returns a history ordered by time. */
function execute(processes: readonly (readonly Spec[])[]): { history: Op[]; okReads: number[] } {
  type Ev = { t: number; kind: 0 | 1 | 2; p: number; i: number }; // 0 invoke, 1 effect, 2 complete
  const evs: Ev[] = [];
  processes.forEach((ops, p) => {
    let t = 0;
    ops.forEach((s, i) => {
      const start = t + s.gap;
      const end = start + s.len;
      evs.push({ t: start * 1000, kind: 0, p, i });
      evs.push({ t: start * 1000 + Math.floor((s.len * 1000 * s.at) / 1000), kind: 1, p, i });
      evs.push({ t: end * 1000 + 1, kind: 2, p, i });
      t = end + 1;
    });
  });
  evs.sort((x, y) => x.t - y.t || x.kind - y.kind || x.p - y.p);
  const reg = new Map<number, number | null>();
  const result = new Map<string, { type: 'ok' | 'fail' | 'info'; value: unknown }>();
  const history: Op[] = [];
  const okReads: number[] = [];
  const procOf = (p: number, i: number) => (p + 1) * 10_000 + i; // a fresh process id per op after an info
  const crashed = new Set<number>();
  const processOf = new Map<string, number>();
  for (const e of evs) {
    const s = processes[e.p]![e.i]!;
    const id = `${e.p}/${e.i}`;
    const cur = reg.get(s.key) ?? null;
    const arg = s.f === 'write' ? s.a : s.f === 'cas' ? [s.a, s.b] : null;
    // A process that saw an info is "crashed": Jepsen continues under a fresh process id.
    const process = e.kind === 0 ? (crashed.has(e.p) ? procOf(e.p, e.i) : e.p) : processOf.get(id)!;
    if (e.kind === 0) processOf.set(id, process);
    if (e.kind === 1) {
      const applies = s.outcome !== 'info-lost';
      let r: { type: 'ok' | 'fail' | 'info'; value: unknown };
      if (s.f === 'read') r = { type: 'ok', value: cur };
      else if (s.f === 'write') {
        if (applies) reg.set(s.key, s.a);
        r = { type: 'ok', value: s.a };
      } else if (cur === s.a) {
        if (applies) reg.set(s.key, s.b);
        r = { type: 'ok', value: arg };
      } else r = { type: 'fail', value: arg };
      if (s.outcome !== 'ok' && r.type === 'ok') r = { type: 'info', value: arg };
      result.set(id, r);
      continue;
    }
    if (e.kind === 0) {
      history.push({ index: history.length, time: e.t, process, type: 'invoke', f: s.f, value: arg, key: s.key });
      continue;
    }
    const r = result.get(id)!;
    if (r.type === 'ok' && s.f === 'read') okReads.push(history.length);
    history.push({ index: history.length, time: e.t, process, type: r.type, f: s.f, value: r.value, key: s.key });
    if (r.type === 'info') crashed.add(e.p);
  }
  return { history, okReads };
}

const executions = fc.array(fc.array(spec, { minLength: 1, maxLength: 25 }), { minLength: 1, maxLength: 8 });

describe('linearizable on real executions', () => {
  it('accepts every history of a linearizable execution', () => {
    fc.assert(
      fc.property(executions, (procs) => {
        const r = checkLinearizable(casRegister, execute(procs).history);
        expect(r.valid).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('always rejects a read tampered to return a value nobody wrote', () => {
    fc.assert(
      fc.property(executions, fc.nat(), (procs, pick) => {
        const { history, okReads } = execute(procs);
        fc.pre(okReads.length > 0);
        const at = okReads[pick % okReads.length]!;
        const tampered = history.map((op) => (op.index === at ? { ...op, value: 99 } : op));
        const r = checkLinearizable(casRegister, tampered);
        expect(r.valid).toBe(false);
        expect(r.failures).toHaveLength(1);
      }),
      { numRuns: 200 },
    );
  });

  it('checks 8 processes × 200 operations on one key within its budget', () => {
    const procs = fc.sample(fc.array(spec.map((s) => ({ ...s, key: 0 })), { minLength: 200, maxLength: 200 }), { numRuns: 8, seed: 3 });
    const { history } = execute(procs);
    const r = checkLinearizable(casRegister, history);
    console.log(`linearizable: ${r.stats['ops']} ops on one key, ${r.stats['steps']} steps, ${r.stats['elapsedMs']!.toFixed(0)} ms`);
    expect(r.valid).toBe(true);
  });

  it('decides histories with 30 operations in flight at once (read forcing, blind-write rule)', () => {
    let worst = 0;
    for (let seed = 0; seed < 10; seed++) {
      const procs = fc.sample(fc.array(spec.map((s) => ({ ...s, key: 0, gap: s.gap % 5 })), { minLength: 10, maxLength: 10 }), { numRuns: 30, seed: seed * 7 + 30 });
      const r = checkLinearizable(casRegister, execute(procs).history, { maxSteps: 2_000_000 });
      expect(r.valid).toBe(true);
      worst = Math.max(worst, r.stats['steps']!);
    }
    console.log(`linearizable: 30-way concurrency, worst ${worst} steps`);
  });
});
