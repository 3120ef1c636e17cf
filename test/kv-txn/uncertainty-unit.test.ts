/**
 * src/kv/uncertainty.ts against simple models (fast-check): the observed
 * timestamps a coordinator keeps are the minimum per node whatever the order
 * of the responses, and the local limit is min(global, max(observed, lease
 * start)) — never above the global limit, never below the lease start unless
 * the global limit is, and the global limit itself without an observation;
 * UncertaintyGuard raises its floor on exactly the batches that may leave a
 * skewed value.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { tsLess, tsLessEq, tsMax, tsMin, type Timestamp } from '../../src/util/hlc.js';
import type { ObservedTimestamp } from '../../src/kv/api.js';
import { UncertaintyGuard, localUncertaintyLimit, mergeObservedTimestamps, observedTimestampOf, observedTimestampsOf, withObservedTimestamp } from '../../src/kv/uncertainty.js';

const ts = fc.record({ wall: fc.nat({ max: 1000 }), logical: fc.nat({ max: 3 }) });
const obs = fc.record({ nodeId: fc.integer({ min: 1, max: 5 }), timestamp: ts });

function modelMin(list: readonly ObservedTimestamp[]): Map<number, Timestamp> {
  const m = new Map<number, Timestamp>();
  for (const o of list) {
    const cur = m.get(o.nodeId);
    m.set(o.nodeId, cur === undefined ? o.timestamp : tsMin(cur, o.timestamp));
  }
  return m;
}

describe('uncertainty (observed timestamps)', () => {
  it('keeps the first (minimum) reading per node, in any order, never moving up', () => {
    fc.assert(
      fc.property(fc.array(obs, { maxLength: 30 }), fc.array(obs, { maxLength: 10 }), (a, b) => {
        let acc: readonly ObservedTimestamp[] | undefined;
        for (const o of a) {
          const before = observedTimestampOf(acc, o.nodeId);
          acc = withObservedTimestamp(acc, o.nodeId, o.timestamp);
          const after = observedTimestampOf(acc, o.nodeId) as Timestamp;
          if (before !== undefined) expect(tsLessEq(after, before)).toBe(true);
        }
        const model = modelMin(a);
        for (const [n, t] of model) expect(observedTimestampOf(acc, n)).toEqual(t);
        expect(acc?.length ?? 0).toBe(model.size);
        // Merging the parts of a split batch: the same as folding every reading.
        const merged = observedTimestampsOf([{ now: ts0, timestamp: ts0, responses: [], observedTimestamps: a }, { now: ts0, timestamp: ts0, responses: [], observedTimestamps: b }]);
        const both = modelMin([...a, ...b]);
        for (const [n, t] of both) expect(observedTimestampOf(merged, n)).toEqual(t);
        expect(mergeObservedTimestamps(acc, undefined)).toBe(acc);
      }),
      { numRuns: 300 },
    );
  });

  it('an unchanged list is returned as is (callers share it)', () => {
    const l = [{ nodeId: 1, timestamp: { wall: 5, logical: 0 } }];
    expect(withObservedTimestamp(l, 1, { wall: 6, logical: 0 })).toBe(l);
    expect(withObservedTimestamp(l, 1, { wall: 4, logical: 0 })).not.toBe(l);
    expect(l[0]?.timestamp.wall).toBe(5);
  });

  it('local limit = min(global, max(observed, lease start)); the global limit without an observation', () => {
    fc.assert(
      fc.property(ts, fc.option(ts, { nil: undefined }), fc.option(ts, { nil: undefined }), (g, o, s) => {
        const l = localUncertaintyLimit(g, o, s);
        expect(tsLessEq(l, g)).toBe(true);
        if (o === undefined) {
          expect(l).toEqual(g);
          return;
        }
        expect(l).toEqual(tsMin(g, s === undefined ? o : tsMax(o, s)));
        if (s !== undefined && tsLess(l, s)) expect(l).toEqual(g);
      }),
      { numRuns: 500 },
    );
  });
});

describe('UncertaintyGuard', () => {
  const T = (wall: number): Timestamp => ({ wall, logical: 0 });
  const meta = (write: number, min?: number) => ({ id: Buffer.alloc(16), epoch: 0, writeTimestamp: T(write), ...(min === undefined ? {} : { minTimestamp: T(min) }), sequence: 1, key: Buffer.from('a') });
  it('starts, and forgets history, at now + 2 max offsets; raises on skewed writes and moved commits only', () => {
    let now = 1_000;
    const g = new UncertaintyGuard({ now: () => T(now), maxOffsetMicros: 100 });
    expect(g.floor).toEqual(T(1_200));
    now = 5_000;
    const h = { rangeId: 1, timestamp: T(4_000) };
    const k = Buffer.from('k');
    // Honest: a write below the clock, a commit at the start timestamp, an aborted resolution, writes and reads.
    g.noteWriteAt(T(4_000), T(now));
    g.noteWriteBatch({ ...h, txn: meta(4_500, 4_500) }, [{ kind: 'endTxn', key: k, commit: true, inFlightWrites: [], lockSpans: [] }]);
    g.noteWriteBatch(h, [{ kind: 'resolveIntent', key: k, txn: meta(6_000, 3_000), status: 'aborted', ignoredSeqNums: [], strict: false }]);
    g.noteWriteBatch(h, [{ kind: 'put', key: k, value: k }, { kind: 'get', key: k }]);
    expect(g.floor).toEqual(T(1_200));
    // A write ahead of the clock (after the timestamp cache's push).
    g.noteWriteAt(T(5_050), T(now));
    expect(g.floor).toEqual(T(5_050));
    // A push of intents above the pushee's start (a pending resolution moves them up).
    g.noteWriteBatch(h, [{ kind: 'resolveIntent', key: k, txn: meta(5_100, 3_000), status: 'pending', ignoredSeqNums: [], strict: false }]);
    expect(g.floor).toEqual(T(5_100));
    // A commit above the transaction's start (its intents may be below it), or with no start known.
    g.noteWriteBatch(h, [{ kind: 'resolveIntentRange', key: k, endKey: Buffer.from('z'), txn: meta(5_300, 4_000), status: 'committed', ignoredSeqNums: [] }]);
    expect(g.floor).toEqual(T(5_300));
    g.noteWriteBatch({ ...h, txn: meta(5_400) }, [{ kind: 'endTxn', key: k, commit: true, inFlightWrites: [], lockSpans: [] }]);
    expect(g.floor).toEqual(T(5_400));
    // Never down.
    g.noteWriteBatch(h, [{ kind: 'resolveIntent', key: k, txn: meta(5_350, 1), status: 'committed', ignoredSeqNums: [], strict: false }]);
    expect(g.floor).toEqual(T(5_400));
    g.forgetHistory(); // now + 200 = 5_200: below the floor, which stays
    expect(g.floor).toEqual(T(5_400));
    now = 6_000;
    g.forgetHistory();
    expect(g.floor).toEqual(T(6_200));
  });
});

const ts0: Timestamp = { wall: 0, logical: 0 };
