// The timestamp cache (issue 5; DESIGN.md §6 "Timestamp cache after a lease
// transfer"), checked against a reference that remembers every read.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { TimestampCache, type ReadSummary } from '../../src/kv/concurrency/timestamp-cache.js';
import { spansOverlap, type Span } from '../../src/kv/concurrency/span-set.js';
import { compareTimestamps, tsMax, tsNext, ts, ZERO_TIMESTAMP, type Timestamp } from '../../src/util/hlc.js';
import { arbSpan, arbTs, k } from './support.js';

const pt = (a: string): Span => ({ key: k(a) });
const rg = (a: string, b: string): Span => ({ key: k(a), endKey: k(b) });

/** Every read ever added, plus the low-water mark. */
class ReferenceCache {
  reads: { span: Span; ts: Timestamp; txnId: string | undefined }[] = [];
  low: Timestamp = ZERO_TIMESTAMP;
  getMax(span: Span): ReadSummary {
    let best = this.low;
    let id: string | undefined;
    for (const r of this.reads) {
      if (!spansOverlap(r.span, span)) continue;
      const c = compareTimestamps(r.ts, best);
      if (c > 0) {
        best = r.ts;
        id = r.txnId;
      } else if (c === 0 && (compareTimestamps(best, this.low) === 0 || id !== r.txnId)) id = undefined;
    }
    return id === undefined ? { ts: best } : { ts: best, txnId: id };
  }
}

describe('TimestampCache', () => {
  it('answers the highest read over points and ranges', () => {
    const c = new TimestampCache();
    c.add(rg('b', 'd'), ts(5));
    c.add(pt('c'), ts(8), 't1');
    c.add(rg('a', 'z'), ts(3));
    expect(c.getMax(pt('c'))).toEqual({ ts: ts(8), txnId: 't1' });
    expect(c.getMax(pt('b'))).toEqual({ ts: ts(5) });
    expect(c.getMax(rg('a', 'c'))).toEqual({ ts: ts(5) });
    expect(c.getMax(rg('a', 'c\x00'))).toEqual({ ts: ts(8), txnId: 't1' });
    expect(c.getMax(pt('x'))).toEqual({ ts: ts(3) });
    expect(c.getMax(pt('z'))).toEqual({ ts: ZERO_TIMESTAMP });
    c.check();
  });

  it('a transaction is not pushed by its own read, but is by an equal read of another', () => {
    const c = new TimestampCache();
    c.add(pt('a'), ts(5), 'A');
    expect(c.getMax(pt('a')).txnId).toBe('A');
    c.add(pt('a'), ts(5), 'A');
    expect(c.getMax(pt('a')).txnId).toBe('A');
    c.add(rg('a', 'b'), ts(5), 'B');
    expect(c.getMax(pt('a'))).toEqual({ ts: ts(5) });
    c.add(pt('a'), ts(6), 'B');
    expect(c.getMax(pt('a'))).toEqual({ ts: ts(6), txnId: 'B' });
    c.check();
  });

  // DESIGN.md §6: the new leaseholder does not know what the previous one
  // served; its cache starts at the lease start, so a write cannot land
  // below a read the old leaseholder served.
  it('after a lease transfer the low-water mark at the lease start pushes writes above earlier reads', () => {
    const oldHolder = new TimestampCache();
    oldHolder.add(pt('k'), ts(100)); // served by the old leaseholder at 100
    const leaseStart = ts(101);
    const newHolder = new TimestampCache({ lowWater: leaseStart });
    // A write arriving at 50 on the new leaseholder must move above 101 > 100.
    const floor = newHolder.getMax(pt('k')).ts;
    expect(compareTimestamps(floor, ts(100))).toBeGreaterThan(0);
    expect(floor).toEqual(leaseStart);
    // The same through setLowWater on a cache in use; it never falls.
    const c = new TimestampCache();
    c.add(pt('a'), ts(7), 'A');
    c.add(pt('b'), ts(20), 'B');
    c.setLowWater(ts(10));
    expect(c.getMax(pt('a'))).toEqual({ ts: ts(10) });
    expect(c.getMax(pt('b'))).toEqual({ ts: ts(20), txnId: 'B' });
    c.setLowWater(ts(5));
    expect(c.lowWater).toEqual(ts(10));
    c.add(pt('c'), ts(9), 'C'); // below the low-water mark: nothing to remember
    expect(c.metrics().entries).toBe(1);
    c.check();
  });

  it('evicts the oldest reads under a memory budget by raising the low-water mark, losing none', () => {
    const c = new TimestampCache({ maxBytes: 20_000 });
    for (let i = 0; i < 1000; i++) c.add(pt(`key-${String(i).padStart(4, '0')}`), ts(i + 1));
    const m = c.metrics();
    expect(m.evictions).toBeGreaterThan(0);
    expect(m.bytes).toBeLessThanOrEqual(20_000);
    expect(compareTimestamps(m.lowWater, ZERO_TIMESTAMP)).toBeGreaterThan(0);
    for (let i = 0; i < 1000; i++) {
      const got = c.getMax(pt(`key-${String(i).padStart(4, '0')}`)).ts;
      expect(compareTimestamps(got, ts(i + 1))).toBeGreaterThanOrEqual(0);
    }
    // The newest reads are still exact.
    expect(c.getMax(pt('key-0999')).ts).toEqual(ts(1000));
    c.check();
  });

  it('never answers below a reference that remembers every read, and equals it without eviction (property)', () => {
    const op = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('add' as const), span: arbSpan, ts: arbTs, txn: fc.constantFrom(undefined, 'A', 'B') }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('low' as const), ts: arbTs }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('get' as const), span: arbSpan }) },
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), fc.constantFrom(1_000, 2_000, 1 << 20), fc.integer({ min: 1, max: 4 }), (ops, maxBytes, chunkSize) => {
        const c = new TimestampCache({ maxBytes, chunkSize });
        const ref = new ReferenceCache();
        for (const o of ops) {
          if (o.kind === 'add') {
            c.add(o.span, o.ts, o.txn);
            ref.reads.push({ span: o.span, ts: o.ts, txnId: o.txn });
          } else if (o.kind === 'low') {
            c.setLowWater(o.ts);
            ref.low = tsMax(ref.low, o.ts);
          } else {
            const got = c.getMax(o.span);
            const want = ref.getMax(o.span);
            if (c.metrics().evictions === 0) expect(got).toEqual(want);
            else {
              expect(compareTimestamps(got.ts, want.ts)).toBeGreaterThanOrEqual(0);
              // A txnId is only ever claimed for that transaction's own read at exactly that timestamp.
              if (got.txnId !== undefined) expect(got).toEqual(want);
            }
          }
          c.check();
          expect(c.metrics().bytes).toBeLessThanOrEqual(maxBytes);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('a write pushed to getMax().ts.next() lands above every read (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(arbSpan, arbTs), { maxLength: 30 }), arbSpan, (reads, w) => {
        const c = new TimestampCache({ maxBytes: 1_500 });
        for (const [s, t] of reads) c.add(s, t);
        const writeTs = tsNext(c.getMax(w).ts);
        for (const [s, t] of reads) if (spansOverlap(s, w)) expect(compareTimestamps(writeTs, t)).toBeGreaterThan(0);
      }),
      { numRuns: 200 },
    );
  });
});

describe('TimestampCache ownership', () => {
  it('keeps its own copies of the keys it stores', () => {
    const c = new TimestampCache();
    const frame = Buffer.from('xxabyy');
    c.add({ key: frame.subarray(2, 3), endKey: frame.subarray(3, 4) }, ts(5)); // [a, b)
    frame.write('zzzzzz');
    expect(c.getMax(pt('a'))).toEqual({ ts: ts(5) });
    expect(c.getMax(pt('z'))).toEqual({ ts: ZERO_TIMESTAMP });
    c.check();
  });
});
