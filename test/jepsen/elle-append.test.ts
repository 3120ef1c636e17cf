// The list-append checker on hand-made histories, one per anomaly of Elle (Kingsbury &
// Alvaro 2020, §4 and Adya's G0 … G2), plus valid histories it must accept.
import { describe, it, expect } from 'vitest';
import { checkElleAppend } from '../../jepsen-style/checkers/elle-append.js';
import { HistoryBuilder, invokeValue, txnHistory } from './history-builder.js';

type Mop = readonly [string, string | number, unknown];
const A = (k: string, v: number): Mop => ['append', k, v];
const R = (k: string, l: number[] | null): Mop => ['r', k, l];

function verdict(h: ReturnType<typeof txnHistory>) {
  return checkElleAppend(h);
}

describe('elle list-append: valid histories', () => {
  it('accepts a serial history', () => {
    const r = verdict(
      txnHistory(
        [
          [0, 'ok', [A('x', 1)]],
          [1, 'ok', [R('x', [1]), A('x', 2), R('x', [1, 2])]],
          [2, 'ok', [R('x', [1, 2]), R('y', null), A('y', 1)]],
        ],
        false,
      ),
    );
    expect(r.anomalyTypes).toEqual([]);
    expect(r.valid).toBe(true);
    expect(r.strictSerializable).toBe(true);
  });

  it('accepts a committed indeterminate append that was read, and one that was never read', () => {
    // Ambiguous outcomes are possibly-committed, never failed (DESIGN.md §6).
    const r = verdict(
      txnHistory(
        [
          [0, 'info', [A('x', 1)]],
          [1, 'info', [A('y', 1)]],
          [2, 'ok', [R('x', [1]), R('y', [])]],
        ],
        true,
      ),
    );
    expect(r.anomalyTypes).toEqual([]);
    expect(r.valid).toBe(true);
    expect(r.stats['nodes']).toBe(2); // the unread info txn is not in the graph
  });

  it('does not call a failed write that nobody read an anomaly', () => {
    const r = verdict(txnHistory([[0, 'fail', [A('x', 1)]], [1, 'ok', [R('x', [])]]], false));
    expect(r.valid).toBe(true);
  });
});

describe('elle list-append: anomalies', () => {
  const cases: [string, Parameters<typeof txnHistory>[0], boolean][] = [
    [
      'G0', // write cycle: x orders T1 before T2, y the reverse
      [
        [0, 'ok', [A('x', 1), A('y', 1)]],
        [1, 'ok', [A('x', 2), A('y', 2)]],
        [2, 'ok', [R('x', [1, 2]), R('y', [2, 1])]],
      ],
      true,
    ],
    ['G1a', [[0, 'fail', [A('x', 1)]], [1, 'ok', [R('x', [1])]]], false],
    ['G1b', [[0, 'ok', [A('x', 1), A('x', 2)]], [1, 'ok', [R('x', [1])]]], true],
    [
      'G1c', // each reads the other's write
      [
        [0, 'ok', [A('x', 1), R('y', [1])]],
        [1, 'ok', [A('y', 1), R('x', [1])]],
      ],
      true,
    ],
    [
      'G-single', // read skew: T1 sees T2's y but not its x
      [
        [0, 'ok', [R('x', []), R('y', [1])]],
        [1, 'ok', [A('x', 1), A('y', 1)]],
        [2, 'ok', [R('x', [1])]],
      ],
      true,
    ],
    [
      'G2-item', // write skew
      [
        [0, 'ok', [R('x', []), A('y', 1)]],
        [1, 'ok', [R('y', []), A('x', 1)]],
        [2, 'ok', [R('x', [1]), R('y', [1])]],
      ],
      true,
    ],
    ['internal', [[0, 'ok', [R('x', []), A('x', 5), R('x', [])]]], false],
    ['internal', [[0, 'ok', [A('x', 5), R('x', [7])]], [1, 'ok', [A('x', 7)]]], true],
    ['internal', [[0, 'ok', [R('x', [5]), A('x', 5)]]], false], // reads its own future append
    ['duplicate-elements', [[0, 'ok', [A('x', 1)]], [1, 'ok', [R('x', [1, 1])]]], false],
    ['garbage-read', [[0, 'ok', [A('x', 1)]], [1, 'ok', [R('x', [1, 99])]]], false],
    [
      'incompatible-order',
      [
        [0, 'ok', [A('x', 1)]],
        [1, 'ok', [A('x', 2)]],
        [2, 'ok', [R('x', [1, 2])]],
        [3, 'ok', [R('x', [2, 1])]],
      ],
      true,
    ],
    [
      'lost-update', // both read [0] and both appended
      [
        [0, 'ok', [R('x', [0]), A('x', 1)]],
        [1, 'ok', [R('x', [0]), A('x', 2)]],
        [2, 'ok', [R('x', [0, 1, 2])]],
        [3, 'ok', [A('x', 0)]],
      ],
      true,
    ],
  ];
  for (const [type, txns, concurrent] of cases) {
    it(`flags ${type}${concurrent ? ' (concurrent)' : ' (serial)'}`, () => {
      const r = verdict(txnHistory(txns, concurrent));
      expect(r.anomalyTypes).toContain(type);
      expect(r.valid).toBe(false);
      expect(r.serializable).toBe(false);
      expect(r.anomalies[type]!.length).toBeGreaterThan(0);
    });
  }

  it('explains a cycle step by step', () => {
    const r = verdict(txnHistory(cases.find((c) => c[0] === 'G-single')![1], true));
    const ex = r.anomalies['G-single']![0] as { cycle: { rel: string; why: string }[] };
    expect(ex.cycle.map((s) => s.rel).sort()).toEqual(['rw', 'wr']);
    expect(ex.cycle.find((s) => s.rel === 'rw')!.why).toMatch(/read x = \[\]/);
    expect(ex.cycle.find((s) => s.rel === 'wr')!.why).toMatch(/read y = \[1\]/);
  });

  it('a G0 is not also reported as a weaker class', () => {
    const r = verdict(txnHistory(cases[0]![1], true));
    expect(r.anomalyTypes).toEqual(['G0']);
  });
});

describe('elle list-append: real-time and process order (strict serializability)', () => {
  it('flags a stale read after a completed append as G-single-realtime, serializable but not strict', () => {
    const b = new HistoryBuilder();
    b.op(0, 'ok', 'txn', [A('x', 1)]);
    b.op(1, 'ok', 'txn', invokeValue([R('x', [])]), [R('x', [])]); // invoked after T0 completed
    b.op(2, 'ok', 'txn', invokeValue([R('x', [1])]), [R('x', [1])]);
    const r = checkElleAppend(b.build());
    expect(r.anomalyTypes).toEqual(['G-single-realtime']);
    expect(r.serializable).toBe(true);
    expect(r.strictSerializable).toBe(false);
    expect(r.valid).toBe(true);
    expect(checkElleAppend(b.build(), { consistencyModel: 'strict-serializable' }).valid).toBe(false);
  });

  it('names the process variant when both txns ran on one client', () => {
    const b = new HistoryBuilder();
    b.op(0, 'ok', 'txn', [A('x', 1)]);
    b.op(0, 'ok', 'txn', invokeValue([R('x', [])]), [R('x', [])]);
    b.op(2, 'ok', 'txn', invokeValue([R('x', [1])]), [R('x', [1])]);
    expect(checkElleAppend(b.build()).anomalyTypes).toEqual(['G-single-process']);
  });

  it('flags reading the future of an indeterminate txn as G1c-realtime', () => {
    const b = new HistoryBuilder();
    b.op(0, 'ok', 'txn', invokeValue([R('x', [1])]), [R('x', [1])]);
    b.invoke(1, 'txn', [A('x', 1)]).info(1, 'txn', [A('x', 1)]); // invoked after the read completed
    const r = checkElleAppend(b.build());
    expect(r.anomalyTypes).toEqual(['G1c-realtime']);
    expect(r.serializable).toBe(true);
    expect(r.strictSerializable).toBe(false);
  });

  it('flags a G0 that needs a realtime edge to close as G0-realtime', () => {
    // T0 appends x1; T1 (after T0 completed) appends y1; T2's reads order y1 before... via
    // a write of T0 after T1's on y: y = [T1, T0] while T0 →rt T1.
    const b = new HistoryBuilder();
    b.op(0, 'ok', 'txn', [A('y', 2)]);
    b.op(1, 'ok', 'txn', [A('y', 1)]);
    b.op(2, 'ok', 'txn', invokeValue([R('y', [1, 2])]), [R('y', [1, 2])]);
    expect(checkElleAppend(b.build()).anomalyTypes).toEqual(['G0-realtime']);
  });

  it('keeps the verdict sound when the cycle-search budget is exhausted', () => {
    // With no budget the G-single search gives up, but the component is still reported.
    const h = txnHistory(
      [
        [0, 'ok', [R('x', []), R('y', [1])]],
        [1, 'ok', [A('x', 1), A('y', 1)]],
        [2, 'ok', [R('x', [1])]],
      ],
      true,
    );
    const r = checkElleAppend(h, { cycleSearchBudget: -1 });
    expect(r.valid).toBe(false);
    expect(r.stats['cycleSearchTruncated']).toBe(1);
    expect(r.anomalyTypes.length).toBeGreaterThan(0);
  });

  it('reports a nonunique append as unknown rather than valid', () => {
    const r = verdict(txnHistory([[0, 'ok', [A('x', 1)]], [1, 'ok', [A('x', 1)]]], false));
    expect(r.valid).toBe('unknown');
  });
});
