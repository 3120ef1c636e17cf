// The bank, sets and monotonic checkers on histories of real serial executions (always
// valid, with indeterminate operations that did or did not apply) and on the same
// histories with one read tampered (always flagged).
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { checkBank } from '../../jepsen-style/checkers/bank.js';
import { checkSets } from '../../jepsen-style/checkers/sets.js';
import { checkMonotonic } from '../../jepsen-style/checkers/monotonic.js';
import type { Op } from '../../jepsen-style/history/history.js';
import { scheduleSerial, timing } from './serial-schedule.js';

const RUNS = 150;

/** Replaces the value of the op at history index `at`. */
function tamper(history: readonly Op[], at: number, f: (v: unknown) => unknown): Op[] {
  return history.map((op) => (op.index === at ? { ...op, value: f(op.value) } : op));
}

function okIndexes(okAt: readonly (number | undefined)[], history: readonly Op[], f: string): number[] {
  return okAt.filter((i): i is number => i !== undefined && history[i]!.f === f);
}

describe('bank on serial executions', () => {
  const ops = fc.array(fc.tuple(timing, fc.boolean(), fc.nat(4), fc.nat(4), fc.integer({ min: 1, max: 9 })), { minLength: 1, maxLength: 40 });
  const run = (specs: readonly [unknown, boolean, number, number, number][], timings: Parameters<typeof scheduleSerial>[0]) => {
    const bal = [20, 20, 20, 20, 20];
    return scheduleSerial(timings, (i, applies) => {
      const [, isRead, from, to, amount] = specs[i]!;
      if (isRead) return { f: 'read', invoke: null, result: Object.fromEntries(bal.map((b, k) => [`a${k}`, b])) };
      if (applies) {
        bal[from] -= amount;
        bal[to] += amount;
      }
      const v = { from: `a${from}`, to: `a${to}`, amount };
      return { f: 'transfer', invoke: v, result: v };
    });
  };
  const opts = { total: 100, accounts: ['a0', 'a1', 'a2', 'a3', 'a4'], allowNegative: true };

  it('accepts every history; flags any read with one balance changed', () => {
    fc.assert(
      fc.property(ops, fc.nat(), (specs, pick) => {
        const { history, okAt } = run(specs, specs.map((s) => s[0]));
        const r = checkBank(history, opts);
        expect(r.valid === true || (r.valid === 'unknown' && r.stats['reads'] === 0)).toBe(true);
        const reads = okIndexes(okAt, history, 'read');
        fc.pre(reads.length > 0);
        const bad = tamper(history, reads[pick % reads.length]!, (v) => ({ ...(v as object), a2: (v as Record<string, number>)['a2']! + 1 }));
        expect(checkBank(bad, opts).anomalyTypes).toContain('wrong-total');
      }),
      { numRuns: RUNS },
    );
  });
});

describe('sets on serial executions', () => {
  const ops = fc.array(fc.tuple(timing, fc.boolean()), { minLength: 1, maxLength: 40 });
  const run = (specs: readonly [Parameters<typeof scheduleSerial>[0][number], boolean][]) => {
    const set: number[] = [];
    return scheduleSerial(
      specs.map((s) => s[0]),
      (i, applies) => {
        if (specs[i]![1]) return { f: 'read', invoke: null, result: [...set] };
        if (applies) set.push(i);
        return { f: 'add', invoke: i, result: i };
      },
    );
  };

  it('accepts every history; flags an unexpected or duplicated element, and a dropped acknowledged one', () => {
    fc.assert(
      fc.property(ops, fc.nat(), (specs, pick) => {
        const { history, okAt } = run(specs);
        const r = checkSets(history);
        expect(r.anomalyTypes).toEqual([]);
        const reads = okIndexes(okAt, history, 'read');
        fc.pre(reads.length > 0);
        const at = reads[pick % reads.length]!;
        expect(checkSets(tamper(history, at, (v) => [...(v as number[]), 10_000])).anomalyTypes).toContain('unexpected');
        const list = history[at]!.value as number[];
        if (list.length > 0) {
          expect(checkSets(tamper(history, at, () => [...list, list[0]!])).anomalyTypes).toContain('duplicated');
          // Dropping an element: flagged when its add was acknowledged before the read began.
          const dropped = list[list.length - 1]!;
          const add = history.find((o) => o.f === 'add' && o.type === 'ok' && o.value === dropped);
          const invokedAt = history.findLastIndex((o, i) => i < at && o.process === history[at]!.process && o.type === 'invoke');
          if (add !== undefined && add.index < invokedAt) {
            expect(checkSets(tamper(history, at, () => list.slice(0, -1))).anomalyTypes).toContain('lost');
          }
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe('monotonic on serial executions', () => {
  const ops = fc.array(timing, { minLength: 1, maxLength: 40 });
  const run = (timings: Parameters<typeof scheduleSerial>[0]) => {
    const rows: { value: number; ts: number }[] = [];
    const s = scheduleSerial(timings, (i, applies) => {
      const row = { value: rows.reduce((m, r) => Math.max(m, r.value), 0) + 1, ts: 10 * i };
      if (applies) rows.push(row);
      return { f: 'inc', invoke: null, result: row };
    });
    // The final read, after everything.
    const n = s.history.length;
    s.history.push({ index: n, time: 1e9, process: 1_000_000, type: 'invoke', f: 'read', value: null });
    s.history.push({ index: n + 1, time: 1e9 + 1, process: 1_000_000, type: 'ok', f: 'read', value: rows });
    return s;
  };

  it('accepts every history; flags an acknowledged row missing from the final read', () => {
    fc.assert(
      fc.property(ops, fc.nat(), (timings, pick) => {
        const { history: named } = run(timings);
        const r = checkMonotonic(named);
        expect(r.anomalyTypes).toEqual([]);
        const incs = named.filter((o) => o.f === 'inc' && o.type === 'ok');
        fc.pre(incs.length > 0);
        const gone = incs[pick % incs.length]!.value as { value: number };
        const final = named.length - 1;
        const bad = tamper(named, final, (v) => (v as { value: number }[]).filter((row) => row.value !== gone.value));
        expect(checkMonotonic(bad).anomalyTypes).toContain('lost');
      }),
      { numRuns: RUNS },
    );
  });
});
