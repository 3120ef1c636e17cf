/**
 * Turns a serial execution into a concurrent-looking history, for property tests of the
 * checkers: operation i takes effect at serial point 10·i, is invoked `before` earlier
 * and completes `after` later (indeterminate ones much later, or never), and runs on a
 * process that had no operation open. Real-time order therefore never contradicts the
 * serial order: the history is strictly serializable / linearizable by construction.
 *
 * Outcomes: ok (executed, result reported), fail (not executed), info-committed
 * (executed, client saw a timeout) and info-lost (not executed, client saw a timeout).
 */
import fc from 'fast-check';
import type { Op } from '../../jepsen-style/history/history.js';

export type Outcome = 'ok' | 'fail' | 'info-committed' | 'info-lost';

export interface Timing {
  readonly outcome: Outcome;
  readonly before: number;
  readonly after: number;
}

export const timing: fc.Arbitrary<Timing> = fc.record({
  outcome: fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'ok', 'fail', 'info-committed', 'info-lost'),
  before: fc.integer({ min: 0, max: 40 }),
  after: fc.integer({ min: 0, max: 40 }),
});

export interface Executed {
  readonly f: string;
  readonly invoke: unknown;
  /** The completion value if ok. */
  readonly result: unknown;
}

/**
 * `execute(i, applies)` runs operation i in serial order (applies = it takes effect).
 * Returns the history and, per operation, the history index of its ok completion.
 */
export function scheduleSerial(timings: readonly Timing[], execute: (i: number, applies: boolean) => Executed): { history: Op[]; okAt: (number | undefined)[] } {
  type Ev = { time: number; order: number; i: number; invoke: boolean };
  const events: Ev[] = [];
  const ran: Executed[] = [];
  timings.forEach((t, i) => {
    ran.push(execute(i, t.outcome === 'ok' || t.outcome === 'info-committed'));
    const point = 10 * i;
    // Completion ties sort after invocations: no realtime order is invented.
    events.push({ time: point - t.before, order: 0, i, invoke: true });
    if (t.outcome !== 'info-lost' || t.after % 2 === 0) {
      events.push({ time: point + t.after + (t.outcome.startsWith('info') ? 1000 : 0), order: 1, i, invoke: false });
    }
  });
  events.sort((a, b) => a.time - b.time || a.order - b.order || a.i - b.i);
  const free: number[] = [];
  let processes = 0;
  const processOf = new Map<number, number>();
  const history: Op[] = [];
  const okAt: (number | undefined)[] = new Array<number | undefined>(timings.length).fill(undefined);
  for (const e of events) {
    const r = ran[e.i]!;
    if (e.invoke) {
      const p = free.pop() ?? processes++;
      processOf.set(e.i, p);
      history.push({ index: history.length, time: e.time, process: p, type: 'invoke', f: r.f, value: r.invoke });
      continue;
    }
    const o = timings[e.i]!.outcome;
    const type = o === 'ok' ? 'ok' : o === 'fail' ? 'fail' : 'info';
    if (type === 'ok') okAt[e.i] = history.length;
    history.push({ index: history.length, time: e.time, process: processOf.get(e.i)!, type, f: r.f, value: type === 'ok' ? r.result : r.invoke });
    if (type !== 'info') free.push(processOf.get(e.i)!); // info retires the process
  }
  return { history, okAt };
}
