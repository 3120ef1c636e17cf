/**
 * YCSB's SkewedLatestGenerator ("latest" request distribution, workload D):
 * zipfian popularity ranked by recency. With L = basis.lastValue() (the newest
 * acknowledged insertion index),
 *   next() = L - zipfian.nextLong(L)
 * so L itself is the most popular value, L-1 the next, and so on; the result
 * lies in [1, L] (index 0 is never chosen, as in YCSB). The zipfian's item
 * count follows L as inserts are acknowledged (incremental ζ).
 */
import { assert } from '../../util/assert.js';
import type { Prng } from '../../util/prng.js';
import type { AcknowledgedCounter } from './counter-generator.js';
import { ZipfianGenerator } from './zipfian-generator.js';

export class SkewedLatestGenerator {
  private readonly zipfian: ZipfianGenerator;

  constructor(
    rng: Prng,
    private readonly basis: Pick<AcknowledgedCounter, 'lastValue'>,
  ) {
    const last = basis.lastValue();
    assert(last >= 1, 'workload: the latest distribution needs at least two records');
    this.zipfian = new ZipfianGenerator(rng, 0, last - 1);
  }

  next(): number {
    const max = this.basis.lastValue();
    return max - this.zipfian.nextLong(max);
  }
}
