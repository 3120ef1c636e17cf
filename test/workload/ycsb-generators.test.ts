// The YCSB generators against YCSB's published behaviour (core/.../generator/*
// and Utils.fnvhash64 in brianfrankcooper/YCSB). Statistical checks use fixed
// seeds and bounds several standard deviations wide, so they are deterministic.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Prng } from '../../src/util/prng.js';
import { fnvhash64, fnvhash64BigInt, hashMod, keyName } from '../../src/workload/ycsb/fnv64.js';
import { AcknowledgedCounter, CounterGenerator } from '../../src/workload/ycsb/counter-generator.js';
import { ZipfianGenerator, zeta, ZIPFIAN_CONSTANT } from '../../src/workload/ycsb/zipfian-generator.js';
import { ScrambledZipfianGenerator, SCRAMBLED_ZETAN } from '../../src/workload/ycsb/scrambled-zipfian-generator.js';
import { SkewedLatestGenerator } from '../../src/workload/ycsb/skewed-latest-generator.js';
import { UniformGenerator } from '../../src/workload/ycsb/uniform-generator.js';
import { FieldGenerator, FIELD_COUNT, FIELD_LENGTH } from '../../src/workload/ycsb/field-generator.js';
import { KeyChooser, OperationChooser, WORKLOADS } from '../../src/workload/ycsb/workload-spec.js';
import { Statement, READ, SCAN, UPDATES } from '../../src/workload/ycsb/ycsb-sql.js';
import { parseDuration } from '../../src/workload/duration.js';
import { splitKeys } from '../../src/workload/ycsb/loader.js';
import { redactPassword } from '../../src/workload/ycsb/runner.js';

function counts(n: number, draws: number, draw: () => number): number[] {
  const c = new Array<number>(n).fill(0);
  let outside = 0;
  for (let i = 0; i < draws; i++) {
    const v = draw();
    if (v >= 0 && v < n && Number.isInteger(v)) c[v]!++;
    else outside++;
  }
  expect(outside).toBe(0);
  return c;
}

/** |observed - expected| within k binomial standard deviations. */
function expectBinomial(observed: number, trials: number, p: number, k = 5): void {
  const sd = Math.sqrt(trials * p * (1 - p));
  expect(Math.abs(observed - trials * p)).toBeLessThanOrEqual(k * sd);
}

describe('fnv64 key hashing (YCSB Utils.fnvhash64, CoreWorkload.buildKeyName)', () => {
  it('names the first records as YCSB does', () => {
    // The first keys of every YCSB load with hashed inserts.
    expect(keyName(0)).toBe('user6284781860667377211');
    expect(keyName(1)).toBe('user8517097267634966620');
    expect(keyName(2)).toBe('user1820151046732198393');
    expect(keyName(3)).toBe('user4052466453699787802');
  });

  it('the limb version agrees with the BigInt reference', () => {
    fc.assert(
      fc.property(fc.oneof(fc.nat(1_000_000), fc.maxSafeNat()), (v) => {
        const h = fnvhash64(v);
        const ref = fnvhash64BigInt(v);
        expect((BigInt(h.hi) << 32n) | BigInt(h.lo)).toBe(ref);
        expect(keyName(v)).toBe(`user${ref}`);
      }),
      { numRuns: 2000, seed: 42 },
    );
  });

  it('hashMod is the exact remainder', () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), fc.integer({ min: 1, max: 2 ** 37 - 1 }), (v, n) => {
        expect(BigInt(hashMod(fnvhash64(v), n))).toBe(fnvhash64BigInt(v) % BigInt(n));
      }),
      { numRuns: 2000, seed: 7 },
    );
  });
});

describe('counters', () => {
  it('CounterGenerator hands out consecutive values', () => {
    const c = new CounterGenerator(5);
    expect(c.lastValue()).toBe(4);
    expect([c.next(), c.next(), c.next()]).toEqual([5, 6, 7]);
    expect(c.lastValue()).toBe(7);
  });

  it('AcknowledgedCounter exposes only the contiguous acknowledged prefix', () => {
    const a = new AcknowledgedCounter(100);
    expect(a.lastValue()).toBe(99);
    const [x, y, z] = [a.next(), a.next(), a.next()];
    expect([x, y, z]).toEqual([100, 101, 102]);
    a.acknowledge(101);
    expect(a.lastValue()).toBe(99); // 100 still in flight
    a.acknowledge(100);
    expect(a.lastValue()).toBe(101);
    a.acknowledge(102);
    expect(a.lastValue()).toBe(102);
    expect(() => a.acknowledge(102)).toThrow(/not outstanding/);
  });

  it('AcknowledgedCounter: any acknowledgement order ends at the last value, never exposing an unacknowledged one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.integer(), (n, seed) => {
        const a = new AcknowledgedCounter(10);
        const handed = Array.from({ length: n }, () => a.next());
        const order = new Prng(seed).shuffle([...handed]);
        const done = new Set<number>();
        for (const v of order) {
          a.acknowledge(v);
          done.add(v);
          for (let k = 10; k <= a.lastValue(); k++) if (!done.has(k)) expect.fail(`exposed unacknowledged ${k}`);
        }
        expect(a.lastValue()).toBe(9 + n);
      }),
      { numRuns: 200, seed: 3 },
    );
  });
});

/** Draws from a fresh zipfian over [0, n) and the ζ(n) it should follow. */
function zipfianCounts(seed: number, n: number, draws: number): { c: number[]; zetan: number } {
  const g = new ZipfianGenerator(new Prng(seed), 0, n - 1);
  return { c: counts(n, draws, () => g.nextLong()), zetan: zeta(0, n, ZIPFIAN_CONSTANT, 0) };
}

describe('AcknowledgedCounter across its window', () => {
  it('keeps exposing the acknowledged prefix after the ring wraps several times', () => {
    const a = new AcknowledgedCounter(0);
    const n = 3 * (1 << 20) + 17;
    let lagging = -1;
    for (let i = 0; i < n; i++) {
      const v = a.next();
      if (i % 100_000 === 50) {
        lagging = v; // hold one back for a while
        continue;
      }
      a.acknowledge(v);
      if (lagging >= 0 && i % 100_000 === 90) {
        if (a.lastValue() !== lagging - 1) expect.fail(`limit ${a.lastValue()} passed the unacknowledged ${lagging}`);
        a.acknowledge(lagging);
        lagging = -1;
      }
    }
    expect(a.lastValue()).toBe(n - 1);
  });
});

describe('ZipfianGenerator (Gray et al. 1994, YCSB θ = 0.99)', () => {
  it('the two hottest items have exactly the zipfian probabilities', () => {
    const draws = 200_000;
    const { c, zetan } = zipfianCounts(11, 1000, draws);
    expectBinomial(c[0]!, draws, 1 / zetan); // ≈ 13.4 % for 1,000 items
    expectBinomial(c[1]!, draws, 1 / Math.pow(2, ZIPFIAN_CONSTANT) / zetan);
    expect(c[0]! / draws).toBeGreaterThan(0.12);
    expect(c[0]! / draws).toBeLessThan(0.15);
  });

  it('the tail follows 1/(k+1)^θ (the paper\'s approximation: within 20 % for ranks 3–10)', () => {
    const draws = 400_000;
    const { c, zetan } = zipfianCounts(12, 1000, draws);
    for (let k = 3; k <= 10; k++) {
      const expected = (draws / Math.pow(k + 1, ZIPFIAN_CONSTANT)) / zetan;
      expect(Math.abs(c[k]! - expected) / expected).toBeLessThan(0.2);
    }
    // Popularity falls with rank across decades.
    const decade = (lo: number, hi: number): number => c.slice(lo, hi).reduce((a, b) => a + b, 0) / (hi - lo);
    expect(decade(10, 20)).toBeGreaterThan(decade(100, 200));
    expect(decade(100, 200)).toBeGreaterThan(decade(900, 1000));
  });

  it('growing the item count extends ζ incrementally to the same value as computing it afresh', () => {
    const rng = new Prng(13);
    const grown = new ZipfianGenerator(rng, 0, 999);
    for (const n of [1500, 4000, 10_000]) {
      const v = grown.nextLong(n);
      expect(v >= 0 && v < n).toBe(true);
    }
    expect(grown.itemCount).toBe(10_000);
    const fresh = zeta(0, 10_000, ZIPFIAN_CONSTANT, 0);
    const incremental = zeta(4000, 10_000, ZIPFIAN_CONSTANT, zeta(1500, 4000, ZIPFIAN_CONSTANT, zeta(1000, 1500, ZIPFIAN_CONSTANT, zeta(0, 1000, ZIPFIAN_CONSTANT, 0))));
    expect(incremental).toBeCloseTo(fresh, 9);
    // After growth the hottest item's share matches the new ζ.
    const draws = 100_000;
    const c = counts(10_000, draws, () => grown.nextLong(10_000));
    expectBinomial(c[0]!, draws, 1 / fresh);
    expect(() => grown.nextLong(5000)).toThrow(/cannot shrink/);
  });
});

describe('ScrambledZipfianGenerator', () => {
  it('uses YCSB\'s precomputed ζ(10^10) and scatters the hottest item by FNV hashing', () => {
    const n = 1000;
    const draws = 200_000;
    const g = new ScrambledZipfianGenerator(new Prng(21));
    const c = counts(n, draws, () => g.next(n));
    // The zipfian's item 0 hashes to bucket fnvhash64(0) mod n; it is the hottest.
    const hot = hashMod(fnvhash64(0), n);
    const maxCount = Math.max(...c);
    expect(c[hot]).toBe(maxCount);
    // Its share: 1/ζ(10^10) ≈ 3.78 %, plus colliding tail items (≈ 0.1 %).
    expect(c[hot]! / draws).toBeGreaterThan(1 / SCRAMBLED_ZETAN - 0.003);
    expect(c[hot]! / draws).toBeLessThan(1 / SCRAMBLED_ZETAN + 0.006);
    // Hot items are not clustered at the start of the key space.
    expect(hot).not.toBe(0);
  });

  it('follows a growing item count without bias against new items', () => {
    const g = new ScrambledZipfianGenerator(new Prng(22));
    let sawNew = 0;
    for (let i = 0; i < 50_000; i++) if (g.next(2000) >= 1000) sawNew++;
    expect(sawNew / 50_000).toBeGreaterThan(0.3);
  });
});

describe('SkewedLatestGenerator', () => {
  it('favours the newest acknowledged record and follows new acknowledgements', () => {
    const acked = new AcknowledgedCounter(1000);
    const g = new SkewedLatestGenerator(new Prng(31), acked);
    const draws = 100_000;
    const c = counts(1000, draws, () => g.next());
    expect(c[999]).toBe(Math.max(...c));
    expect(c[0]).toBe(0); // [1, L]: index 0 is never chosen, as in YCSB
    const zetan = zeta(0, 999, ZIPFIAN_CONSTANT, 0);
    expectBinomial(c[999]!, draws, 1 / zetan);
    for (let i = 0; i < 10; i++) acked.acknowledge(acked.next());
    const c2 = counts(1010, draws, () => g.next());
    expect(c2[1009]).toBe(Math.max(...c2));
  });
});

describe('UniformGenerator', () => {
  it('passes a chi-square test over 100 buckets', () => {
    const g = new UniformGenerator(new Prng(41));
    const draws = 100_000;
    const c = counts(100, draws, () => g.next(100));
    const e = draws / 100;
    const chi2 = c.reduce((s, o) => s + ((o - e) * (o - e)) / e, 0);
    expect(chi2).toBeLessThan(148.2); // χ²(99 dof), p = 0.001
  });

  it('scan lengths cover [min, max] inclusive', () => {
    const g = new UniformGenerator(new Prng(42));
    const seen = new Set<number>();
    for (let i = 0; i < 5000; i++) seen.add(g.between(1, 100));
    expect(Math.min(...seen)).toBe(1);
    expect(Math.max(...seen)).toBe(100);
    expect(seen.size).toBe(100);
  });
});

describe('FieldGenerator (YCSB RandomByteIterator)', () => {
  it('makes values of 100 characters in 0x20–0x5f, covering the range', () => {
    const f = new FieldGenerator(new Prng(51));
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const v = f.value();
      expect(v).toHaveLength(FIELD_LENGTH);
      for (let j = 0; j < v.length; j++) seen.add(v.charCodeAt(j));
    }
    expect(seen.size).toBe(64);
    expect(Math.min(...seen)).toBe(0x20);
    expect(Math.max(...seen)).toBe(0x5f);
    expect(f.values()).toHaveLength(FIELD_COUNT);
  });

  it('the same seed gives the same values', () => {
    expect(new FieldGenerator(new Prng(9)).values()).toEqual(new FieldGenerator(new Prng(9)).values());
  });
});

describe('workload mixes', () => {
  it('draws operations in the standard proportions', () => {
    const draws = 100_000;
    for (const spec of Object.values(WORKLOADS)) {
      const chooser = new OperationChooser(new Prng(61), spec);
      const seen = new Map<string, number>();
      for (let i = 0; i < draws; i++) {
        const op = chooser.next();
        seen.set(op, (seen.get(op) ?? 0) + 1);
      }
      expect([...seen.keys()].sort()).toEqual(Object.keys(spec.mix).sort());
      for (const [op, p] of Object.entries(spec.mix)) expectBinomial(seen.get(op) ?? 0, draws, p);
    }
  });

  it('reads target acknowledged records only, for every distribution', () => {
    for (const dist of ['zipfian', 'uniform', 'latest'] as const) {
      const acked = new AcknowledgedCounter(50);
      const keys = new KeyChooser(new Prng(71), dist, acked);
      const inFlight = acked.next(); // 50, not acknowledged
      let max = 0;
      for (let i = 0; i < 5000; i++) max = Math.max(max, keys.next());
      expect(max).toBeLessThan(inFlight);
    }
  });
});

describe('statements and flags', () => {
  it('inlines literals for the simple protocol, doubling quotes', () => {
    expect(READ.inline(["user1'x"])).toBe("SELECT * FROM usertable WHERE ycsb_key = 'user1''x'");
    expect(SCAN.inline(['user1', 20])).toBe("SELECT * FROM usertable WHERE ycsb_key >= 'user1' ORDER BY ycsb_key LIMIT 20");
    expect(UPDATES[3]!.inline(['k', 'v\\'])).toBe("UPDATE usertable SET field3 = 'v\\' WHERE ycsb_key = 'k'");
    expect(new Statement('s', 'SELECT $2, $1, $10').inline(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'])).toBe("SELECT 'b', 'a', 'j'");
  });

  it('keeps passwords out of written results', () => {
    expect(redactPassword('postgres://bob:s3cr@t@db:5432/x')).toBe('postgres://bob:***@db:5432/x');
    expect(redactPassword('postgresql://bob@db/x')).toBe('postgresql://bob@db/x');
    expect(redactPassword('postgres://db:5432/x?user=a')).toBe('postgres://db:5432/x?user=a');
  });

  it('parses durations', () => {
    expect(parseDuration('60s')).toBe(60_000);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('1m30s')).toBe(90_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('5')).toBe(5000);
    expect(() => parseDuration('5 parsecs')).toThrow(/cannot parse duration/);
  });
});

describe('keyName edge cases', () => {
  it('prints values with zeros in the low base-10^6 digits and small hashes exactly', () => {
    // Scan for indexes whose hash has a zero-padded low part; compare with BigInt.
    let padded = 0;
    for (let i = 0; i < 20_000; i++) {
      const ref = fnvhash64BigInt(i);
      if (ref % 1_000_000n < 100_000n) padded++;
      if (keyName(i) !== `user${ref}`) expect.fail(`index ${i}: ${keyName(i)} ≠ user${ref}`);
    }
    expect(padded).toBeGreaterThan(0);
  });
});

describe('split points', () => {
  it('divide the loaded keys into ranges of equal row counts', () => {
    const keys = Array.from({ length: 1000 }, (_, i) => keyName(i)).sort();
    const splits = splitKeys(1000, 4);
    expect(splits).toHaveLength(3);
    expect([...splits].sort()).toEqual(splits);
    const bounds = ['', ...splits, '\uffff'];
    for (let r = 0; r < 4; r++) {
      const inRange = keys.filter((k) => k >= bounds[r]! && k < bounds[r + 1]!).length;
      expect(inRange).toBe(250);
    }
    expect(splitKeys(1000, 1)).toEqual([]);
    expect(splitKeys(3, 10)).toEqual([]);
  });
});
