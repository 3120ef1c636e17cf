// Decimal arithmetic checked against bigint reference characterisations
// (exact sums/products; quotients within half a unit in the last place with
// PostgreSQL's select_div_scale computed from base-10000 digits; remainders
// by their defining properties).
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { Decimal } from '../../sql/types/decimal.js';
import { CairnError } from '../../src/util/errors.js';
import { errorOf } from './support.js';

const finite = fc
  .tuple(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.nat({ max: 25 }))
  .map(([c, s]) => Decimal.of(c, s));
const nonZero = finite.filter((d) => !d.isZero());
const p10 = (n: number) => 10n ** BigInt(n);
const abs = (v: bigint) => (v < 0n ? -v : v);
const sgn = (v: bigint) => (v > 0n ? 1 : v < 0n ? -1 : 0);

/** PostgreSQL's select_div_scale, literally, over numeric_send's base-10000 digits. */
function referenceDivScale(a: Decimal, b: Decimal): number {
  const lead = (d: Decimal) => {
    const bin = d.toBinary();
    return bin.digits.length === 0 ? { w: 0, f: 0 } : { w: bin.weight, f: bin.digits[0] as number };
  };
  const x = lead(a);
  const y = lead(b);
  let qweight = x.w - y.w;
  if (x.f <= y.f) qweight--;
  return Math.min(Math.max(16 - qweight * 4, a.scale, b.scale, 0), 1000);
}

describe('Decimal arithmetic against bigint references', () => {
  it('add/sub are exact at scale max(sa, sb)', () => {
    fc.assert(
      fc.property(finite, finite, (a, b) => {
        const s = Math.max(a.scale, b.scale);
        const A = a.coef * p10(s - a.scale);
        const B = b.coef * p10(s - b.scale);
        expect([a.add(b).coef, a.add(b).scale]).toEqual([A + B, s]);
        expect([a.sub(b).coef, a.sub(b).scale]).toEqual([A - B, s]);
      }),
    );
  });
  it('mul is exact at scale sa + sb', () => {
    fc.assert(
      fc.property(finite, finite, (a, b) => {
        const r = a.mul(b);
        expect([r.coef, r.scale]).toEqual([a.coef * b.coef, a.scale + b.scale]);
      }),
    );
  });
  it('div: select_div_scale, within half an ulp, ties away from zero', () => {
    fc.assert(
      fc.property(finite, nonZero, (a, b) => {
        const r = a.div(b);
        const rs = referenceDivScale(a, b);
        expect(r.scale).toBe(rs);
        // exact quotient = N / D at scale rs
        const N = a.coef * p10(b.scale + rs);
        const D = b.coef * p10(a.scale);
        const err = N - r.coef * D;
        const twice = 2n * abs(err);
        expect(twice <= abs(D)).toBe(true);
        if (twice === abs(D)) expect(abs(r.coef) * abs(D) > abs(N)).toBe(true);
      }),
    );
  });
  it('mod: |r| < |b|, r has the sign of a (or is 0), a − r is a multiple of b', () => {
    fc.assert(
      fc.property(finite, nonZero, (a, b) => {
        const r = a.mod(b);
        const s = Math.max(a.scale, b.scale);
        expect(r.scale).toBe(s);
        const A = a.coef * p10(s - a.scale);
        const B = b.coef * p10(s - b.scale);
        expect(abs(r.coef) < abs(B)).toBe(true);
        if (r.coef !== 0n) expect(sgn(r.coef)).toBe(sgn(A));
        expect((A - r.coef) % B).toBe(0n);
      }),
    );
  });
  it('cmp is the sign of the cross-multiplied difference', () => {
    fc.assert(
      fc.property(finite, finite, (a, b) => {
        expect(a.cmp(b)).toBe(sgn(a.coef * p10(b.scale) - b.coef * p10(a.scale)));
      }),
    );
  });
  it('round(s): within half a unit of the last kept digit, ties away from zero', () => {
    fc.assert(
      fc.property(finite, fc.nat({ max: 30 }), (a, s) => {
        const r = a.round(s);
        expect(r.scale).toBe(s);
        // compare at scale max(a.scale, s)
        const k = Math.max(a.scale, s);
        const A = a.coef * p10(k - a.scale);
        const R = r.coef * p10(k - s);
        const half = s >= a.scale ? 0n : p10(k - s);
        expect(2n * abs(A - R) <= half).toBe(true);
        if (half !== 0n && 2n * abs(A - R) === half) expect(abs(R) > abs(A)).toBe(true);
      }),
    );
  });
  it('text and binary round trips keep value and display scale', () => {
    fc.assert(
      fc.property(finite, (a) => {
        const t = Decimal.parseOrThrow(a.toString());
        expect([t.coef, t.scale]).toEqual([a.coef, a.scale]);
        const b = Decimal.fromBinary(a.toBinary());
        expect([b.coef, b.scale]).toEqual([a.coef, a.scale]);
      }),
    );
  });
  it('toNumber is the correctly rounded double', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
        expect(Decimal.parseOrThrow(String(x)).toNumber()).toBe(x === 0 ? 0 : x);
      }),
    );
  });
});

describe('Decimal edge cases', () => {
  it('division and modulo by zero raise 22012', () => {
    for (const f of [() => Decimal.ONE.div(Decimal.ZERO), () => Decimal.ONE.mod(Decimal.ZERO), () => Decimal.POS_INF.div(Decimal.ZERO)]) {
      expect((errorOf(f) as CairnError).sqlState).toBe('22012');
    }
  });
  it('numeric(p, s) overflow is 22003 with PostgreSQL\'s detail', () => {
    const err = errorOf(() => Decimal.parseOrThrow('1000').applyTypmod(5, 2));
    expect((err as CairnError).sqlState).toBe('22003');
    expect((err as { detail?: string }).detail).toBe('A field with precision 5, scale 2 must round to an absolute value less than 10^3.');
  });
  it('fromFloat uses 15 significant digits like float8_numeric', () => {
    expect(Decimal.fromFloat(0.1).toString()).toBe('0.1');
    expect(Decimal.fromFloat(1 / 3).toString()).toBe('0.333333333333333');
    expect(Decimal.fromFloat(1e20).toString()).toBe('100000000000000000000');
    expect(Decimal.fromFloat(Math.fround(0.1), 6).toString()).toBe('0.1');
  });
  it('bad text is 22P02', () => {
    for (const s of ['', 'abc', '1.2.3', '1e', '--1', '+NaN']) expect(Decimal.parse(s)).toBeUndefined();
  });
});
