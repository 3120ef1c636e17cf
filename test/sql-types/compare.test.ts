// Ordering, equality and hash keys (compare.ts).
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { SCALARS, ARRAYS } from './arbitraries.js';
import { compareDatums, compareNullable, compareStrings, datumKey, datumsEqual, rowKey } from '../../sql/types/compare.js';
import { Jsonb, type Datum } from '../../sql/types/datum.js';
import { Decimal } from '../../sql/types/decimal.js';
import { parseInterval } from '../../sql/types/interval.js';
import { T, bpchar, type SqlType } from '../../sql/types/type.js';

function sign(n: number): number {
  return n < 0 ? -1 : n > 0 ? 1 : 0;
}

describe('compareDatums is a total order and datumKey agrees with it', () => {
  for (const [name, t, arb] of [...SCALARS, ...ARRAYS]) {
    it(name, () => {
      fc.assert(
        fc.property(arb, arb, arb, (a, b, c) => {
          expect(compareDatums(a, a, t)).toBe(0);
          expect(sign(compareDatums(a, b, t)) + sign(compareDatums(b, a, t))).toBe(0);
          if (compareDatums(a, b, t) <= 0 && compareDatums(b, c, t) <= 0) expect(compareDatums(a, c, t)).toBeLessThanOrEqual(0);
          const eq = compareDatums(a, b, t) === 0;
          expect(datumsEqual(a, b, t)).toBe(eq);
          expect(datumKey(a, t) === datumKey(b, t)).toBe(eq);
        }),
        { numRuns: 200 },
      );
    });
  }
});

describe('values PostgreSQL treats as equal share a key', () => {
  const cases: [string, SqlType, Datum, Datum][] = [
    ['numeric 1.0 = 1.00', T.numeric, Decimal.parseOrThrow('1.0'), Decimal.parseOrThrow('1.00')],
    ['numeric NaN = NaN', T.numeric, Decimal.NAN, Decimal.parseOrThrow('NaN')],
    ["interval '1 mon' = '30 days'", T.interval, parseInterval('1 mon'), parseInterval('30 days')],
    ["interval '1 day' = '24:00:00'", T.interval, parseInterval('1 day'), parseInterval('24:00:00')],
    ["char(n) 'a' = 'a  '", bpchar(3), 'a', 'a  '],
    ['float8 -0 = 0', T.float8, -0, 0],
    ['float8 NaN = NaN', T.float8, NaN, NaN],
    ['jsonb key order and duplicates', T.jsonb, Jsonb.parse('{"b":1,"a":2,"a":3}'), Jsonb.parse('{"a":3,"b":1}')],
    ['int8 beyond 2^53', T.int8, 2n ** 60n, 2n ** 60n],
  ];
  for (const [title, t, a, b] of cases) {
    it(title, () => {
      expect(compareDatums(a, b, t)).toBe(0);
      expect(datumsEqual(a, b, t)).toBe(true);
      const m = new Map([[datumKey(a, t), 1]]);
      expect(m.has(datumKey(b, t))).toBe(true);
    });
  }
  it('distinct values keep distinct keys', () => {
    expect(datumKey(2n ** 60n, T.int8)).not.toBe(datumKey(2n ** 60n + 1n, T.int8));
    expect(datumKey(Buffer.from([1, 2]), T.bytea)).not.toBe(datumKey(Buffer.from([1, 2, 0]), T.bytea));
    expect(datumKey(Decimal.parseOrThrow('1.5'), T.numeric)).not.toBe(datumKey(Decimal.parseOrThrow('15'), T.numeric));
  });
});

describe('orders PostgreSQL 15 produces', () => {
  it('float8: -Infinity < … < -0 = 0 < … < Infinity < NaN', () => {
    const vs = [NaN, Infinity, 1, -0, 0, -1, -Infinity, 5e-324];
    const sorted = [...vs].sort((a, b) => compareDatums(a, b, T.float8));
    expect(sorted.map(String)).toEqual(['-Infinity', '-1', '0', '0', '5e-324', '1', 'Infinity', 'NaN']);
  });
  it('numeric: -Infinity < finite < Infinity < NaN', () => {
    const vs = ['NaN', 'Infinity', '1.5', '-Infinity', '-2', '0'].map((s) => Decimal.parseOrThrow(s));
    expect([...vs].sort((a, b) => a.cmp(b)).map(String)).toEqual(['-Infinity', '-2', '0', '1.5', 'Infinity', 'NaN']);
  });
  it('jsonb (SELECT … ORDER BY v in PostgreSQL 15)', () => {
    // prettier-ignore
    const pg = ['[]', 'null', '""', '"a"', '"aa"', '"b"', '-1', '0', '1', '1.5', 'false', 'true', '[null]', '["a"]', '[1]', '[2]', '[true]', '[[1]]', '[{}]', '[1, 2]', '[1, 2, 3]', '{}', '{"a": 1}', '{"a": 2}', '{"a": [1]}', '{"aa": 1}', '{"b": 1}', '{"c": 0}', '{"a": 1, "b": 2}'];
    const shuffled = [...pg].reverse().map((s) => Jsonb.parse(s));
    shuffled.sort((a, b) => compareDatums(a, b, T.jsonb));
    expect(shuffled.map(String)).toEqual(pg);
  });
  it('text in code point order (the C collation), as UTF-8 bytes compare', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        expect(sign(compareStrings(a, b))).toBe(sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
      }),
    );
  });
  it('arrays element-wise, NULL elements last, then by length', () => {
    const t = T.int4;
    const arr = { ...T.int4, family: 'array', oid: 1007, arrayElem: t } as SqlType;
    expect(compareDatums([1, 2], [1, 3], arr)).toBeLessThan(0);
    expect(compareDatums([1, null], [1, 3], arr)).toBeGreaterThan(0);
    expect(compareDatums([1], [1, 0], arr)).toBeLessThan(0);
  });
});

describe('NULL ordering', () => {
  it('defaults: NULLS LAST ascending, NULLS FIRST descending; explicit overrides', () => {
    const sortWith = (o: { desc?: boolean; nullsFirst?: boolean }) => [3, null, 1, 2].sort((a, b) => compareNullable(a, b, T.int4, o));
    expect(sortWith({})).toEqual([1, 2, 3, null]);
    expect(sortWith({ desc: true })).toEqual([null, 3, 2, 1]);
    expect(sortWith({ nullsFirst: true })).toEqual([null, 1, 2, 3]);
    expect(sortWith({ desc: true, nullsFirst: false })).toEqual([3, 2, 1, null]);
  });
});

describe('rowKey', () => {
  it('is injective over rows of strings (length-prefixed, NULL distinct from "")', () => {
    const types = [T.text, T.text];
    fc.assert(
      fc.property(fc.tuple(fc.option(fc.string(), { nil: null }), fc.option(fc.string(), { nil: null })), fc.tuple(fc.option(fc.string(), { nil: null }), fc.option(fc.string(), { nil: null })), (r1, r2) => {
        const same = r1[0] === r2[0] && r1[1] === r2[1];
        expect(rowKey(r1, types) === rowKey(r2, types)).toBe(same);
      }),
    );
    expect(rowKey(['ab', 'c'], types)).not.toBe(rowKey(['a', 'bc'], types));
    expect(rowKey([null, ''], types)).not.toBe(rowKey(['', null], types));
  });
});
