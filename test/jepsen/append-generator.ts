/**
 * Generates list-append histories from a real serial execution, for property tests of
 * the Elle checker: transactions execute one at a time in a hidden serial order, and
 * each gets an invocation/completion interval that contains its serial point, so the
 * history is strictly serializable by construction — real-time order never contradicts
 * the serial order, and a process never has two overlapping operations.
 *
 * Outcomes: ok (executed, reads reported), fail (not executed), info-committed
 * (executed, client saw a timeout) and info-lost (not executed, client saw a timeout).
 */
import fc from 'fast-check';
import type { Op } from '../../jepsen-style/history/history.js';

type Mop = ['append', string, number] | ['r', string, number[] | null];
export type Outcome = 'ok' | 'fail' | 'info-committed' | 'info-lost';

export interface GenTxn {
  readonly ops: readonly { read: boolean; key: number }[];
  readonly outcome: Outcome;
  readonly before: number;
  readonly after: number;
}

export const genTxn: fc.Arbitrary<GenTxn> = fc.record({
  ops: fc.array(fc.record({ read: fc.boolean(), key: fc.integer({ min: 0, max: 3 }) }), { minLength: 1, maxLength: 4 }),
  outcome: fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'ok', 'fail', 'info-committed', 'info-lost'),
  before: fc.integer({ min: 0, max: 40 }),
  after: fc.integer({ min: 0, max: 40 }),
});

export interface Generated {
  readonly history: Op[];
  /** History index of every ok completion that holds a read. */
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
  type Ev = { time: number; order: number; txn: number; invoke: boolean };
  const events: Ev[] = [];
  const values: { invoke: Mop[]; result: Mop[] }[] = [];
  txns.forEach((t, i) => {
    const point = 10 * i;
    const executes = t.outcome === 'ok' || t.outcome === 'info-committed';
    const invoke: Mop[] = [];
    const result: Mop[] = [];
    for (const o of t.ops) {
      const k = `k${o.key}.${generation.get(o.key) ?? 0}`;
      if ((state.get(k)?.length ?? 0) >= keyLifetime) generation.set(o.key, (generation.get(o.key) ?? 0) + 1);
      if (o.read) {
        invoke.push(['r', k, null]);
        result.push(['r', k, [...(state.get(k) ?? [])]]);
      } else {
        const v = nextValue++;
        invoke.push(['append', k, v]);
        result.push(['append', k, v]);
        if (executes) state.set(k, [...(state.get(k) ?? []), v]);
      }
    }
    values.push({ invoke, result });
    // Completion ties sort after invocations: no realtime edge is invented.
    events.push({ time: point - t.before, order: 0, txn: i, invoke: true });
    if (t.outcome !== 'info-lost' || t.after % 2 === 0) {
      events.push({ time: point + t.after + (t.outcome.startsWith('info') ? 1000 : 0), order: 1, txn: i, invoke: false });
    }
  });
  events.sort((a, b) => a.time - b.time || a.order - b.order || a.txn - b.txn);
  // Processes: reuse one whose last operation completed; info retires a process.
  const free: number[] = [];
  let processes = 0;
  const processOf = new Map<number, number>();
  const history: Op[] = [];
  const okReads: Generated['okReads'] = [];
  for (const e of events) {
    const t = txns[e.txn]!;
    if (e.invoke) {
      const p = free.pop() ?? processes++;
      processOf.set(e.txn, p);
      history.push({ index: history.length, time: e.time, process: p, type: 'invoke', f: 'txn', value: values[e.txn]!.invoke });
      continue;
    }
    const p = processOf.get(e.txn)!;
    const type = t.outcome === 'ok' ? 'ok' : t.outcome === 'fail' ? 'fail' : 'info';
    const value = type === 'ok' ? values[e.txn]!.result : values[e.txn]!.invoke;
    if (type === 'ok') {
      value.forEach((m, j) => {
        if (m[0] === 'r') okReads.push({ index: history.length, mop: j });
      });
    }
    history.push({ index: history.length, time: e.time, process: p, type, f: 'txn', value });
    if (type !== 'info') free.push(p);
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
