/**
 * List-append histories from a real serial execution (serial-schedule.ts), for property
 * tests of the Elle checker.
 */
import fc from 'fast-check';
import type { Op } from '../../jepsen-style/history/history.js';
import { scheduleSerial, timing } from './serial-schedule.js';
import type { Timing } from './serial-schedule.js';

type Mop = ['append', string, number] | ['r', string, number[] | null];

export interface GenTxn extends Timing {
  readonly ops: readonly { read: boolean; key: number }[];
}

export const genTxn: fc.Arbitrary<GenTxn> = fc
  .tuple(fc.array(fc.record({ read: fc.boolean(), key: fc.integer({ min: 0, max: 3 }) }), { minLength: 1, maxLength: 4 }), timing)
  .map(([ops, t]) => ({ ops, ...t }));

export interface Generated {
  readonly history: Op[];
  /** Every read micro-op of an ok completion: history index and position. */
  readonly okReads: { index: number; mop: number }[];
}

/**
 * Executes `txns` serially. `keyLifetime`: after that many appends a key is replaced by a
 * fresh one (as the real workload does, keeping lists short).
 */
export function serialHistory(txns: readonly GenTxn[], keyLifetime = Infinity): Generated {
  const state = new Map<string, number[]>();
  const generation = new Map<number, number>();
  let nextValue = 1;
  const { history, okAt } = scheduleSerial(txns, (i, applies) => {
    const invoke: Mop[] = [];
    const result: Mop[] = [];
    for (const o of txns[i]!.ops) {
      const k = `k${o.key}.${generation.get(o.key) ?? 0}`;
      if ((state.get(k)?.length ?? 0) >= keyLifetime) generation.set(o.key, (generation.get(o.key) ?? 0) + 1);
      if (o.read) {
        invoke.push(['r', k, null]);
        result.push(['r', k, [...(state.get(k) ?? [])]]);
      } else {
        const v = nextValue++;
        invoke.push(['append', k, v]);
        result.push(['append', k, v]);
        if (applies) state.set(k, [...(state.get(k) ?? []), v]);
      }
    }
    return { f: 'txn', invoke, result };
  });
  const okReads: Generated['okReads'] = [];
  for (const index of okAt) {
    if (index === undefined) continue;
    (history[index]!.value as Mop[]).forEach((m, j) => {
      if (m[0] === 'r') okReads.push({ index, mop: j });
    });
  }
  return { history, okReads };
}

/** A copy of `history` with the read at okReads[pick] replaced by `tamper(list)`. */
export function tamperRead(g: Generated, pick: number, tamper: (l: number[]) => number[]): Op[] {
  const target = g.okReads[pick % g.okReads.length]!;
  return g.history.map((op) => {
    if (op.index !== target.index) return op;
    const value = (op.value as Mop[]).map((m, j) => (j === target.mop ? (['r', m[1], tamper(m[2] as number[])] as Mop) : m));
    return { ...op, value };
  });
}
