/**
 * Uniform integers (YCSB's UniformLongGenerator), from the injected Prng.
 * next(itemcount) is uniform over [min, min + itemcount); the count may change
 * between calls (inserts extend the key space). Also used for scan lengths,
 * uniform over [minScanLength, maxScanLength] inclusive.
 */
import { assert } from '../../util/assert.js';
import type { Prng } from '../../util/prng.js';

export class UniformGenerator {
  constructor(
    private readonly rng: Prng,
    private readonly min = 0,
  ) {}

  next(itemcount: number): number {
    assert(itemcount > 0, `workload: uniform over ${itemcount} items`);
    return this.min + this.rng.intn(itemcount);
  }

  /** Uniform in [lo, hi], both inclusive. */
  between(lo: number, hi: number): number {
    assert(lo <= hi, `workload: uniform range [${lo}, ${hi}] is empty`);
    return this.rng.between(lo, hi);
  }
}
