// The bank, sets, monotonic, sequential and g2 checkers (issue 9), each on histories that
// must pass and on histories with the anomaly it exists to catch (DESIGN.md §6: "every
// checker is tested on histories that must fail").
import { describe, it, expect } from 'vitest';
import { checkBank } from '../../jepsen-style/checkers/bank.js';
import { checkSets } from '../../jepsen-style/checkers/sets.js';
import { checkMonotonic, compareCommitTs } from '../../jepsen-style/checkers/monotonic.js';
import { checkSequential } from '../../jepsen-style/checkers/sequential.js';
import { checkG2 } from '../../jepsen-style/checkers/g2.js';
import { checkAll, composeResults, exitStatus } from '../../jepsen-style/checkers/index.js';
import type { CheckResult } from '../../jepsen-style/checkers/index.js';
import { HistoryBuilder } from './history-builder.js';

describe('bank', () => {
  const opts = { total: 100, accounts: ['a', 'b'] };
  const base = () =>
    new HistoryBuilder()
      .op(0, 'ok', 'read', null, { a: 50, b: 50 })
      .op(1, 'ok', 'transfer', { from: 'a', to: 'b', amount: 10 })
      .op(2, 'info', 'transfer', { from: 'b', to: 'a', amount: 5 }); // may or may not apply

  it('accepts reads that sum to the total, whatever indeterminate transfers did', () => {
    const h = base().op(0, 'ok', 'read', null, { a: 40, b: 60 }).op(3, 'ok', 'read', null, { a: 45, b: 55 }).build();
    const r = checkBank(h, opts);
    expect(r.anomalyTypes).toEqual([]);
    expect(r.valid).toBe(true);
  });

  it('flags a read whose sum is wrong', () => {
    const r = checkBank(base().op(0, 'ok', 'read', null, { a: 40, b: 50 }).build(), opts);
    expect(r.valid).toBe(false);
    expect(r.anomalyTypes).toEqual(['wrong-total']);
  });

  it('flags negative balances and missing accounts', () => {
    const h = base().op(0, 'ok', 'read', null, { a: -10, b: 110 }).op(0, 'ok', 'read', null, { a: 100 }).build();
    expect(checkBank(h, opts).anomalyTypes).toEqual(['missing-account', 'negative-balance']);
    expect(checkBank(h, { ...opts, allowNegative: true }).anomalyTypes).toEqual(['missing-account']);
  });

  it('flags final reads that disagree after every transfer resolved', () => {
    const h = new HistoryBuilder()
      .op(1, 'ok', 'transfer', { from: 'a', to: 'b', amount: 10 })
      .op(0, 'ok', 'read', null, { a: 40, b: 60 })
      .op(0, 'ok', 'read', null, { a: 60, b: 40 })
      .build();
    expect(checkBank(h, opts).anomalyTypes).toEqual(['final-disagreement']);
  });

  // Found in the 300 s bank x pause run: with any indeterminate transfer (every faulty run has some) no read
  // counted as final, and final reads that disagreed passed. The runner's final reads are marked 'final'.
  it('flags marked final reads that disagree even when a transfer is indeterminate', () => {
    const h = base().op(0, 'ok', 'read', 'final', { a: 40, b: 60 }).op(0, 'ok', 'read', 'final', { a: 45, b: 55 }).build();
    expect(checkBank(h, opts).anomalyTypes).toEqual(['final-disagreement']);
    const agree = base().op(0, 'ok', 'read', 'final', { a: 45, b: 55 }).op(0, 'ok', 'read', 'final', { a: 45, b: 55 }).build();
    expect(checkBank(agree, opts).valid).toBe(true);
    expect(checkBank(agree, opts).stats['finalReads']).toBe(2);
  });

  it('flags an acknowledged transfer missing from the final balances', () => {
    const h = () =>
      new HistoryBuilder()
        .op(1, 'ok', 'transfer', { from: 'a', to: 'b', amount: 10 })
        .op(2, 'fail', 'transfer', { from: 'b', to: 'a', amount: 5 });
    const initial = { a: 50, b: 50 };
    expect(checkBank(h().op(0, 'ok', 'read', null, { a: 40, b: 60 }).build(), { ...opts, initial }).valid).toBe(true);
    expect(checkBank(h().op(0, 'ok', 'read', null, { a: 45, b: 55 }).build(), { ...opts, initial }).anomalyTypes).toEqual(['lost-transfer']);
    // With an indeterminate transfer either final state is acceptable.
    const amb = h().op(3, 'info', 'transfer', { from: 'a', to: 'b', amount: 1 }).op(0, 'ok', 'read', null, { a: 39, b: 61 }).build();
    expect(checkBank(amb, { ...opts, initial }).valid).toBe(true);
  });

  it('is unknown, not valid, when nothing was read', () => {
    expect(checkBank(new HistoryBuilder().op(1, 'ok', 'transfer', { from: 'a', to: 'b', amount: 1 }).build(), opts).valid).toBe('unknown');
  });
});

describe('sets', () => {
  const adds = () => new HistoryBuilder().op(0, 'ok', 'add', 1).op(1, 'fail', 'add', 2).op(2, 'info', 'add', 3);

  it('accepts a final read with every acknowledged element, with or without indeterminate ones', () => {
    expect(checkSets(adds().op(3, 'ok', 'read', null, [1, 3]).build()).valid).toBe(true);
    const r = checkSets(adds().op(3, 'ok', 'read', null, [1]).build());
    expect(r.valid).toBe(true);
    expect(r.stats['recovered']).toBe(0);
  });

  it('flags a lost acknowledged element', () => {
    expect(checkSets(adds().op(3, 'ok', 'read', null, [3]).build()).anomalyTypes).toEqual(['lost']);
  });

  it('does not require an element acknowledged after the read began', () => {
    const h = new HistoryBuilder().invoke(0, 'add', 1).invoke(3, 'read', null).ok(0, 'add', 1).ok(3, 'read', []).build();
    expect(checkSets(h).valid).toBe(true);
  });

  it('flags an element that a later read forgot (including an indeterminate one)', () => {
    const h = adds().op(3, 'ok', 'read', null, [1, 3]).op(3, 'ok', 'read', null, [1]).build();
    expect(checkSets(h).anomalyTypes).toEqual(['lost']);
  });

  it('flags duplicates, failed-but-present and unexpected elements', () => {
    const h = adds().op(3, 'ok', 'read', null, [1, 1, 2, 9]).build();
    expect(checkSets(h).anomalyTypes).toEqual(['duplicated', 'failed-but-present', 'unexpected']);
  });

  it('is unknown when nothing was read', () => {
    expect(checkSets(adds().build()).valid).toBe('unknown');
  });
});

describe('monotonic', () => {
  const row = (value: number, ts: number | string) => ({ value, ts });
  /** Two concurrent incs completing with the given rows. */
  const concurrentIncs = (a: ReturnType<typeof row>, b: ReturnType<typeof row>) =>
    new HistoryBuilder().invoke(0, 'inc', null).invoke(1, 'inc', null).ok(0, 'inc', a).ok(1, 'inc', b);

  it('accepts values increasing with commit timestamps, and an indeterminate inc in the final read', () => {
    const h = new HistoryBuilder()
      .op(0, 'ok', 'inc', null, row(1, '100.0000000001'))
      .op(1, 'ok', 'inc', null, row(2, '100.0000000002'))
      .op(2, 'info', 'inc', null)
      .op(3, 'fail', 'inc', null)
      .op(0, 'ok', 'read', null, [row(1, '100.0000000001'), row(2, '100.0000000002'), row(3, '101.0000000000')])
      .build();
    const r = checkMonotonic(h);
    expect(r.anomalyTypes).toEqual([]);
    expect(r.valid).toBe(true);
  });

  it('flags a value that regresses in commit-timestamp order', () => {
    expect(checkMonotonic(concurrentIncs(row(2, 10), row(1, 20)).build()).anomalyTypes).toEqual(['regression']);
  });

  it('flags a later transaction that inserted a smaller value, even at a smaller timestamp', () => {
    // Commit-timestamp order alone is consistent here; real-time order is not.
    const h = new HistoryBuilder().op(0, 'ok', 'inc', null, row(5, 10)).op(1, 'ok', 'inc', null, row(4, 5)).build();
    expect(checkMonotonic(h).anomalyTypes).toEqual(['realtime-regression']);
  });

  it('flags duplicate values and rows lost from the final read', () => {
    const h = concurrentIncs(row(1, 10), row(1, 11)).op(2, 'ok', 'read', null, [row(1, 10)]).build();
    expect(checkMonotonic(h).anomalyTypes).toEqual(['duplicate-value', 'lost']);
  });

  it('orders decimal HLC strings by wall time, then logical', () => {
    expect(compareCommitTs('99.5', '100.0')).toBeLessThan(0);
    expect(compareCommitTs('100.0000000002', '100.00000000010')).toBeGreaterThan(0);
    expect(compareCommitTs({ wall: 1, logical: 2 }, { wall: 1, logical: 1 })).toBeGreaterThan(0);
  });
});

describe('sequential', () => {
  const writes = () => new HistoryBuilder().op(9, 'ok', 'write', ['g', 0]).op(9, 'ok', 'write', ['g', 1]).op(9, 'ok', 'write', ['g', 2]);

  /** A read concurrent with writes of keys 0 and 1 (outcomes given), returning `present`. */
  const during = (w0: 'ok' | 'info', present: boolean[]) =>
    new HistoryBuilder().invoke(0, 'read', ['g', null]).op(9, w0, 'write', ['g', 0]).op(10, 'ok', 'write', ['g', 1]).ok(0, 'read', ['g', present]).build();

  it('accepts reads that see a prefix of the writes', () => {
    expect(checkSequential(during('ok', [true, false, false])).valid).toBe(true);
    expect(checkSequential(writes().op(0, 'ok', 'read', null, ['g', [true, true, true]]).build()).valid).toBe(true);
  });

  it('flags a reader that saw a later key but missed an earlier one', () => {
    expect(checkSequential(during('ok', [false, true])).anomalyTypes).toEqual(['sequential-violation']);
  });

  it('allows a missing key whose write was indeterminate', () => {
    expect(checkSequential(during('info', [false, true])).valid).toBe(true);
  });

  it('flags stale reads, failed writes seen and keys never written', () => {
    expect(checkSequential(writes().op(0, 'ok', 'read', null, ['g', [true, true, false]]).build()).anomalyTypes).toEqual(['stale-read']);
    const h = new HistoryBuilder().op(9, 'fail', 'write', ['g', 0]).op(0, 'ok', 'read', null, ['g', [true, true]]).build();
    expect(checkSequential(h).anomalyTypes).toEqual(['failed-but-present', 'garbage-read']);
  });
});

describe('g2', () => {
  /** Two concurrent predicate-read-then-insert txns on key 1; the second ends `second`. */
  const race = (second: 'ok' | 'fail') =>
    new HistoryBuilder().invoke(0, 'insert', [1, 'a']).invoke(1, 'insert', [1, 'b']).ok(0, 'insert', [1, 'a'])[second](1, 'insert', [1, 'b']);

  it('accepts at most one committed insert per key', () => {
    const h = race('fail')
      .op(2, 'info', 'insert', [2, 'a'])
      .op(3, 'ok', 'insert', [2, 'b']) // the info one may have committed too: not provable
      .build();
    expect(checkG2(h).valid).toBe(true);
  });

  it('flags two committed inserts for one predicate', () => {
    const r = checkG2(race('ok').build());
    expect(r.valid).toBe(false);
    expect(r.anomalyTypes).toEqual(['G2']);
  });

  it('is unknown when nothing committed', () => {
    expect(checkG2(new HistoryBuilder().op(0, 'fail', 'insert', [1, 'a']).build()).valid).toBe('unknown');
  });
});

describe('composing verdicts', () => {
  const res = (valid: CheckResult['valid']): CheckResult => ({ valid, anomalyTypes: [], anomalies: {}, stats: {} });

  it('is valid only when every part is exactly true', () => {
    expect(composeResults({ a: res(true), b: res(true) }).valid).toBe(true);
    expect(composeResults({ a: res(true), b: res('unknown') }).valid).toBe('unknown');
    expect(composeResults({ a: res('unknown'), b: res(false) }).valid).toBe(false);
    expect(composeResults({}).valid).toBe('unknown');
    expect(exitStatus(composeResults({ a: res('unknown') }))).toBe(1);
    expect(exitStatus(composeResults({ a: res(true) }))).toBe(0);
  });

  it('records a checker that throws as unknown, never as a pass', () => {
    const boom = { name: 'boom', check: (): CheckResult => { throw new Error('out of memory'); } };
    const ok = { name: 'ok', check: () => res(true) };
    const r = checkAll([ok, boom], []);
    expect(r.valid).toBe('unknown');
    expect(r.results['boom']!.anomalyTypes).toEqual(['checker-error']);
  });
});
