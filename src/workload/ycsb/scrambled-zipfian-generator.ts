/**
 * YCSB's ScrambledZipfianGenerator: zipfian popularity, but the popular items
 * are scattered over the key space instead of clustered at its start.
 *
 * A zipfian value v over a fixed universe of 10^10 items (θ = 0.99, with
 * YCSB's precomputed ζ(10^10) = 26.46902820178302) is hashed:
 *   next(itemcount) = min + fnvhash64(v) mod itemcount.
 * Because the universe is fixed, the item count may grow freely between calls
 * (inserts extend the key space) at no cost: only the modulus changes. The
 * hottest item has probability ≈ 1/ζ(10^10) ≈ 3.8 % (plus its share of
 * colliding tail items), as in YCSB.
 */
import type { Prng } from '../../util/prng.js';
import { fnvhash64, hashMod, type Hash64 } from './fnv64.js';
import { ZIPFIAN_CONSTANT, ZipfianGenerator } from './zipfian-generator.js';

export const SCRAMBLED_ITEM_COUNT = 10_000_000_000;
/** ζ(10^10 + 1, 0.99), YCSB's ScrambledZipfianGenerator.ZETAN. */
export const SCRAMBLED_ZETAN = 26.46902820178302;

export class ScrambledZipfianGenerator {
  private readonly gen: ZipfianGenerator;
  private readonly hash: Hash64 = { hi: 0, lo: 0 };

  constructor(
    rng: Prng,
    private readonly min = 0,
  ) {
    this.gen = new ZipfianGenerator(rng, 0, SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN);
  }

  /** A value in [min, min + itemcount). */
  next(itemcount: number): number {
    const v = this.gen.nextLong();
    return this.min + hashMod(fnvhash64(v, this.hash), itemcount);
  }
}
