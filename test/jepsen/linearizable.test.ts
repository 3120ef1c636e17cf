// The WGL linearizability checker (Wing & Gong 1993; Lowe 2017) against hand-made register
// histories and the public histories with known verdicts in ../shared/testdata (Knossos
// cas-register good/bad; Porcupine's etcd histories with verdicts.tsv).
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { casRegister, checkLinearizable, register } from '../../jepsen-style/checkers/linearizable.js';
import { parseEdnHistory, parseJepsenLog } from '../../jepsen-style/history/jepsen-formats.js';
import type { Op } from '../../jepsen-style/history/history.js';
import { HistoryBuilder } from './history-builder.js';
import { linearizabilityData } from './support.js';

describe('linearizable: hand-made register histories', () => {
  it('accepts overlapping operations that can be ordered', () => {
    const h = new HistoryBuilder()
      .invoke(0, 'write', 1)
      .invoke(1, 'read', null)
      .ok(1, 'read', 1) // linearized after the concurrent write
      .ok(0, 'write', 1)
      .op(1, 'ok', 'cas', [1, 2])
      .op(0, 'ok', 'read', null, 2)
      .build();
    expect(checkLinearizable(casRegister, h).valid).toBe(true);
  });

  it('rejects a stale read after a completed write, naming the read', () => {
    const h = new HistoryBuilder().op(0, 'ok', 'write', 1).op(0, 'ok', 'write', 2).op(1, 'ok', 'read', null, 1).build();
    const r = checkLinearizable(register, h);
    expect(r.valid).toBe(false);
    expect(r.anomalyTypes).toEqual(['nonlinearizable']);
    expect(r.failures[0]!.op.f).toBe('read');
    expect(r.failures[0]!.op.value).toBe(1);
    expect(r.failures[0]!.state).toBe(2); // the longest legal order ended with write 2
  });

  it('rejects a cas that succeeded from a value the register never held', () => {
    const h = new HistoryBuilder().op(0, 'ok', 'write', 1).op(1, 'ok', 'cas', [3, 4]).build();
    expect(checkLinearizable(casRegister, h).valid).toBe(false);
  });

  it('treats an indeterminate write as possibly applied, at any later time', () => {
    // Ambiguous outcomes are pending forever, never failed (DESIGN.md §6).
    const h = new HistoryBuilder()
      .invoke(0, 'write', 7)
      .info(0, 'write', 7)
      .op(1, 'ok', 'read', null, null)
      .op(1, 'ok', 'read', null, 7) // took effect long after its invocation
      .build();
    expect(checkLinearizable(register, h).valid).toBe(true);
  });

  it('treats an indeterminate write as possibly never applied, but not as un-applied once seen', () => {
    const h = new HistoryBuilder()
      .invoke(0, 'write', 7)
      .info(0, 'write', 7)
      .op(1, 'ok', 'read', null, 7)
      .op(1, 'ok', 'read', null, null) // a value cannot vanish: the write happened once
      .build();
    expect(checkLinearizable(register, h).valid).toBe(false);
  });

  it('does not let a failed write take effect', () => {
    const h = new HistoryBuilder().op(0, 'fail', 'write', 7).op(1, 'ok', 'read', null, 7).build();
    expect(checkLinearizable(register, h).valid).toBe(false);
  });

  it('splits by key (P-compositionality) and rejects when one key is bad', () => {
    const h = new HistoryBuilder()
      .op(0, 'ok', 'write', 1, 1, 'a')
      .op(1, 'ok', 'read', null, 1, 'a')
      .op(0, 'ok', 'write', 5, 5, 'b')
      .op(1, 'ok', 'read', null, 6, 'b')
      .build();
    const r = checkLinearizable(register, h);
    expect(r.stats['keys']).toBe(2);
    expect(r.valid).toBe(false);
    expect(r.failures.map((f) => f.key)).toEqual(['b']);
  });

  it('prunes indeterminate writes nobody observed, so many timeouts stay cheap', () => {
    // 40 timed-out writes: 2^40 subsets to place, unless pruned. The one that was read
    // (7) is kept, and the history is still judged on it.
    const b = new HistoryBuilder();
    for (let p = 0; p < 40; p++) b.invoke(p, 'write', 100 + p);
    b.invoke(40, 'write', 7);
    for (let p = 0; p <= 40; p++) b.info(p, 'write', p === 40 ? 7 : 100 + p);
    const good = b.build().concat(new HistoryBuilder().op(41, 'ok', 'read', null, 7).op(41, 'ok', 'read', null, 7).build().map((o, i) => ({ ...o, index: 82 + i })));
    expect(checkLinearizable(register, good, { maxSteps: 10_000 }).valid).toBe(true);
    const bad = good.concat([{ index: 84, time: 84, process: 41, type: 'invoke', f: 'read', value: null }, { index: 85, time: 85, process: 41, type: 'ok', f: 'read', value: null }]);
    const r = checkLinearizable(register, bad, { maxSteps: 10_000 });
    expect(r.valid).toBe(false);
    expect(r.stats['steps']).toBeLessThan(100);
  });

  it('returns unknown, not valid, when the step budget runs out', () => {
    const b = new HistoryBuilder();
    for (let p = 0; p < 12; p++) b.invoke(p, 'write', p);
    for (let p = 0; p < 12; p++) b.ok(p, 'write', p);
    b.op(0, 'ok', 'read', null, 99);
    const r = checkLinearizable(register, b.build(), { maxSteps: 10 });
    expect(r.valid).toBe('unknown');
    expect(r.anomalyTypes).toEqual(['budget-exhausted']);
  });

  it('returns unknown when the search cache would outgrow its memory budget', () => {
    const b = new HistoryBuilder();
    for (let p = 0; p < 12; p++) b.invoke(p, 'write', p);
    for (let p = 0; p < 12; p++) b.ok(p, 'write', p);
    b.op(0, 'ok', 'read', null, 99);
    expect(checkLinearizable(register, b.build(), { maxCacheBytes: 64 * 1024 }).valid).toBe('unknown');
  });

  it('returns unknown when the injected clock passes the deadline', () => {
    const b = new HistoryBuilder();
    for (let p = 0; p < 14; p++) b.invoke(p, 'write', p);
    for (let p = 0; p < 14; p++) b.ok(p, 'write', p);
    b.op(0, 'ok', 'read', null, 99);
    let t = 0;
    const r = checkLinearizable(register, b.build(), { deadlineMs: 5, now: () => (t += 1) });
    expect(r.valid).toBe('unknown');
  });

  it('agrees with brute-force enumeration of orders on small random histories', () => {
    // STYLE.md: the fast algorithm against a simple version.
    fc.assert(
      fc.property(smallHistory, (h) => {
        expect(checkLinearizable(casRegister, h).valid).toBe(bruteForce(h));
      }),
      { numRuns: 300 },
    );
  });

  it('gives the same verdict with and without pruning indeterminate writes', () => {
    const { prune: _prune, ...unpruned } = casRegister;
    fc.assert(
      fc.property(registerHistory(14), (h) => {
        expect(checkLinearizable(casRegister, h).valid).toBe(checkLinearizable(unpruned, h).valid);
      }),
      { numRuns: 300 },
    );
  });
});

describe('linearizable: public histories with known verdicts', () => {
  it("reproduces every verdict of Porcupine's etcd histories", () => {
    const dir = join(linearizabilityData, 'porcupine-etcd');
    const verdicts = readFileSync(join(dir, 'verdicts.tsv'), 'utf8').trim().split('\n').slice(1);
    expect(verdicts).toHaveLength(102);
    const start = performance.now();
    const wrong: string[] = [];
    for (const line of verdicts) {
      const [file, expected] = line.split('\t') as [string, string];
      const r = checkLinearizable(casRegister, parseJepsenLog(readFileSync(join(dir, file), 'utf8')));
      if (String(r.valid) !== expected) wrong.push(`${file}: ${String(r.valid)}, expected ${expected}`);
    }
    console.log(`porcupine etcd: 102 histories in ${(performance.now() - start).toFixed(0)} ms`);
    expect(wrong).toEqual([]);
  });

  it('reproduces every Knossos cas-register verdict (good and bad)', () => {
    const start = performance.now();
    const wrong: string[] = [];
    let files = 0;
    for (const kind of ['good', 'bad'] as const) {
      const dir = join(linearizabilityData, 'knossos-cas-register', kind);
      for (const file of readdirSync(dir).filter((f) => f.endsWith('.edn'))) {
        files++;
        const r = checkLinearizable(casRegister, parseEdnHistory(readFileSync(join(dir, file), 'utf8')));
        if (r.valid !== (kind === 'good')) wrong.push(`${kind}/${file}: ${String(r.valid)}`);
        if (kind === 'bad') expect(r.failures[0]!.linearized.length).toBeGreaterThanOrEqual(0);
      }
    }
    console.log(`knossos: ${files} histories in ${(performance.now() - start).toFixed(0)} ms`);
    expect(files).toBeGreaterThan(100);
    expect(wrong).toEqual([]);
  });
});

// --- A brute-force reference: try every order of the operations that respects real time.

type Val = number | null;

const smallHistory = registerHistory(7);

/** Random register histories of up to `maxOps` operations on one key. */
function registerHistory(maxOps: number): fc.Arbitrary<Op[]> {
  return fc
    .array(
      fc.record({
        f: fc.constantFrom('read', 'write', 'cas'),
        a: fc.integer({ min: 0, max: 2 }),
        b: fc.integer({ min: 0, max: 2 }),
        read: fc.option(fc.integer({ min: 0, max: 2 }), { nil: null }),
        outcome: fc.constantFrom('ok', 'ok', 'ok', 'info', 'fail'),
        start: fc.integer({ min: 0, max: 20 }),
        len: fc.integer({ min: 1, max: 8 }),
      }),
      { minLength: 1, maxLength: maxOps },
    )
    .map((specs) => {
      type Ev = { t: number; o: number; p: number; type: 'invoke' | 'ok' | 'fail' | 'info'; f: string; value: unknown };
      const evs: Ev[] = [];
      specs.forEach((s, p) => {
        const arg = s.f === 'write' ? s.a : s.f === 'cas' ? [s.a, s.b] : null;
        evs.push({ t: s.start, o: 0, p, type: 'invoke', f: s.f, value: arg });
        const result = s.f === 'read' ? s.read : arg;
        if (s.outcome !== 'info' || s.len % 2 === 0) evs.push({ t: s.start + s.len, o: 1, p, type: s.outcome as Ev['type'], f: s.f, value: result });
      });
      evs.sort((x, y) => x.t - y.t || x.o - y.o || x.p - y.p);
      return evs.map((e, i) => ({ index: i, time: e.t, process: e.p, type: e.type, f: e.f, value: e.value }));
    });
}

function bruteForce(h: readonly Op[]): boolean {
  type O = { f: string; value: unknown; inv: number; ret: number; ok: boolean };
  const open = new Map<number | string, O>();
  const ops: O[] = [];
  for (const e of h) {
    if (e.type === 'invoke') {
      const o = { f: e.f, value: e.value, inv: e.index, ret: Infinity, ok: false };
      open.set(e.process, o);
      ops.push(o);
    } else {
      const o = open.get(e.process)!;
      if (e.type === 'ok') Object.assign(o, { ok: true, ret: e.index, value: e.value });
      if (e.type === 'fail') ops.splice(ops.indexOf(o), 1);
    }
  }
  const used = new Array<boolean>(ops.length).fill(false);
  const step = (s: Val, o: O): Val | undefined => {
    if (o.f === 'write') return o.value as Val;
    if (o.f === 'read') return !o.ok || o.value === s ? s : undefined;
    const [from, to] = o.value as [Val, Val];
    return from === s ? to : undefined;
  };
  const search = (s: Val): boolean => {
    if (ops.every((o, i) => used[i] || !o.ok)) return true;
    for (let i = 0; i < ops.length; i++) {
      if (used[i]) continue;
      // i may go next only if no unused op completed before i was invoked.
      if (ops.some((o, j) => !used[j] && j !== i && o.ret < ops[i]!.inv)) continue;
      const n = step(s, ops[i]!);
      if (n === undefined) continue;
      used[i] = true;
      if (search(n)) return true;
      used[i] = false;
    }
    return false;
  };
  return search(null);
}
