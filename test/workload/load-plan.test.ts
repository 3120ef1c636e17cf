// The loader's batching (src/workload/ycsb/loader.ts loadPlan): every record
// loaded exactly once, batches no larger than asked, and with split points
// every batch inside one future range (so each INSERT is a single-range
// transaction), the ranges' batches interleaved (issue 8: load throughput).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { keyName } from '../../src/workload/ycsb/fnv64.js';
import { loadPlan, splitKeys } from '../../src/workload/ycsb/loader.js';

/** The range (0-based) a key falls in: the number of split keys ≤ it — by a linear scan, the simple version. */
function rangeOf(key: string, splits: readonly string[]): number {
  return splits.filter((s) => s <= key).length;
}

describe('loadPlan', () => {
  it('without splits: consecutive indexes, batch by batch', () => {
    expect(loadPlan(7, 3)).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    expect(loadPlan(0, 3)).toEqual([]);
  });

  it('covers every record once, batches ≤ batchSize, each batch inside one range', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 600 }), fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 9 }), (total, batchSize, nSplits) => {
        const splits = splitKeys(total, nSplits);
        const plan = loadPlan(total, batchSize, splits);
        const seen = plan.flat().sort((a, b) => a - b);
        expect(seen).toEqual(Array.from({ length: total }, (_, i) => i));
        for (const b of plan) {
          expect(b.length).toBeGreaterThan(0);
          expect(b.length).toBeLessThanOrEqual(batchSize);
          const r = rangeOf(keyName(b[0]!), splits);
          for (const i of b) expect(rangeOf(keyName(i), splits)).toBe(r);
        }
      }),
      { numRuns: 60, seed: 8 },
    );
  });

  it('interleaves the ranges: the first batches touch every range', () => {
    const splits = splitKeys(10_000, 12);
    const plan = loadPlan(10_000, 100, splits);
    const firstRanges = new Set(plan.slice(0, 12).map((b) => rangeOf(keyName(b[0]!), splits)));
    expect(firstRanges.size).toBe(12);
  });
});
