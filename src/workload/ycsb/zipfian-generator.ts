/**
 * Zipfian-distributed integers, by the algorithm of Gray et al., "Quickly
 * Generating Billion-Record Synthetic Databases" (SIGMOD 1994), as YCSB's
 * ZipfianGenerator implements it.
 *
 * Contract: nextLong(itemcount) returns an integer in [base, base+itemcount)
 * where value base+k has probability ≈ (1/(k+1)^θ) / ζ(itemcount, θ); the
 * two most popular values are exact (the algorithm's special cases), the
 * tail is the paper's continuous approximation. θ defaults to YCSB's 0.99.
 *
 * The item count may grow between calls (inserts extend the key space): ζ is
 * extended incrementally from the last count, O(growth) not O(n). Shrinking is
 * refused, as YCSB does by default.
 *
 * Departure from YCSB: after growth YCSB recomputes η with the item count the
 * generator was built with (a known quirk); we use the current count, which is
 * what the formula asks for.
 *
 * All randomness comes from the injected Prng.
 */
import { assert } from '../../util/assert.js';
import type { Prng } from '../../util/prng.js';

export const ZIPFIAN_CONSTANT = 0.99;

/** ζ(n, θ) = Σ_{i=1..n} 1/i^θ, continued from ζ(st, θ) = initialSum. */
export function zeta(st: number, n: number, theta: number, initialSum: number): number {
  let sum = initialSum;
  for (let i = st; i < n; i++) sum += 1 / Math.pow(i + 1, theta);
  return sum;
}

export class ZipfianGenerator {
  readonly base: number;
  readonly theta: number;
  private readonly zeta2theta: number;
  private readonly alpha: number;
  private zetan: number;
  private countForZeta: number;
  private eta: number;

  /**
   * Values in [min, max]. `zetan`, when given, is ζ(max-min+1, θ) computed
   * beforehand (the scrambled generator passes YCSB's constant for 10^10
   * items, which would take minutes to sum).
   */
  constructor(
    private readonly rng: Prng,
    min: number,
    max: number,
    theta: number = ZIPFIAN_CONSTANT,
    zetan?: number,
  ) {
    assert(max >= min, `workload: zipfian range [${min}, ${max}] is empty`);
    assert(theta > 0 && theta < 1, `workload: zipfian constant must be in (0, 1), got ${theta}`);
    this.base = min;
    this.theta = theta;
    const items = max - min + 1;
    this.zeta2theta = zeta(0, 2, theta, 0);
    this.alpha = 1 / (1 - theta);
    this.zetan = zetan ?? zeta(0, items, theta, 0);
    this.countForZeta = items;
    this.eta = this.computeEta(items);
  }

  /** Number of items the current ζ covers. */
  get itemCount(): number {
    return this.countForZeta;
  }

  private computeEta(items: number): number {
    return (1 - Math.pow(2 / items, 1 - this.theta)) / (1 - this.zeta2theta / this.zetan);
  }

  /** A value in [base, base + itemcount); itemcount defaults to the current count. */
  nextLong(itemcount: number = this.countForZeta): number {
    if (itemcount !== this.countForZeta) {
      assert(itemcount > this.countForZeta, `workload: zipfian item count cannot shrink (${this.countForZeta} → ${itemcount})`);
      this.zetan = zeta(this.countForZeta, itemcount, this.theta, this.zetan);
      this.countForZeta = itemcount;
      this.eta = this.computeEta(itemcount);
    }
    const u = this.rng.float();
    const uz = u * this.zetan;
    if (uz < 1) return this.base;
    if (uz < 1 + Math.pow(0.5, this.theta)) return this.base + 1;
    const k = Math.floor(itemcount * Math.pow(this.eta * u - this.eta + 1, this.alpha));
    return this.base + Math.min(k, itemcount - 1);
  }
}
