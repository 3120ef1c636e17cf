// NULL semantics: comparisons, IS DISTINCT FROM, = ANY / ALL, three-valued
// logic, and the pgwire entry points. Expectations are PostgreSQL 15's:
//   SELECT 1 = ANY(ARRAY[2,NULL]), 1 = ANY(ARRAY[1,NULL]), NULL::int = ANY('{}'),
//          1 = ALL('{}'), 1 = ALL(ARRAY[1,NULL]), 2 = ALL(ARRAY[1,NULL]),
//          NULL IS DISTINCT FROM NULL, 1 IS DISTINCT FROM NULL,
//          1 < ANY('{{0,5},{1,1}}'), 3::int8 = ANY('{1.5,3.0}'::numeric[])
//   →  NULL | t | f | t | NULL | f | f | t | t | t
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { and3, evalArrayCompare, evalCompare, isDistinctFrom, not3, or3 } from '../../sql/types/compare.js';
import { decodeWire, encodeWire } from '../../sql/types/wire-format.js';
import { Decimal } from '../../sql/types/decimal.js';
import { T, arrayOf } from '../../sql/types/type.js';
import { CairnError } from '../../src/util/errors.js';
import { errorOf } from './support.js';

const INTS = arrayOf(T.int4);

describe('NULL semantics', () => {
  it('= ANY / ALL as PostgreSQL evaluates them', () => {
    expect(evalArrayCompare('=', 'any', 1, T.int4, [2, null], INTS)).toBeNull();
    expect(evalArrayCompare('=', 'any', 1, T.int4, [1, null], INTS)).toBe(true);
    expect(evalArrayCompare('=', 'any', null, T.int4, [], INTS)).toBe(false);
    expect(evalArrayCompare('=', 'all', 1, T.int4, [], INTS)).toBe(true);
    expect(evalArrayCompare('=', 'all', 1, T.int4, [1, null], INTS)).toBeNull();
    expect(evalArrayCompare('=', 'all', 2, T.int4, [1, null], INTS)).toBe(false);
    expect(evalArrayCompare('<', 'any', 1, T.int4, [[0, 5], [1, 1]], INTS)).toBe(true);
    expect(evalArrayCompare('=', 'any', 3n, T.int8, [Decimal.parseOrThrow('1.5'), Decimal.parseOrThrow('3.0')], arrayOf(T.numeric))).toBe(true);
    expect(evalArrayCompare('=', 'any', 1, T.int4, null, INTS)).toBeNull();
  });
  it('IS DISTINCT FROM treats NULL as a value', () => {
    expect(isDistinctFrom(null, T.int4, null, T.int4)).toBe(false);
    expect(isDistinctFrom(1, T.int4, null, T.int4)).toBe(true);
    expect(isDistinctFrom(1, T.int4, 1n, T.int8)).toBe(false);
  });
  it('comparisons with NULL are NULL', () => {
    expect(evalCompare('=', null, T.int4, 1, T.int4)).toBeNull();
    expect(evalCompare('<', 1, T.int4, 1.5, T.float8)).toBe(true);
    expect(evalCompare('<>', 'a', T.text, 'b', T.text)).toBe(true);
  });
  it('three-valued logic (truth tables)', () => {
    const vals = [true, false, null] as const;
    const kleeneAnd = (a: boolean | null, b: boolean | null) => (a === false || b === false ? false : a === true && b === true ? true : null);
    for (const a of vals) {
      expect(not3(a)).toBe(a === null ? null : !a);
      for (const b of vals) {
        expect(and3(a, b)).toBe(kleeneAnd(a, b));
        expect(or3(a, b)).toBe(not3(kleeneAnd(not3(a), not3(b)))); // De Morgan
      }
    }
  });
});

describe('wire entry points', () => {
  it('text and binary, NULL as null', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.constantFrom(0 as const, 1 as const), (v, f) => {
        expect(decodeWire(encodeWire(v, T.int8, f), T.int8, f)).toBe(v);
      }),
    );
    expect(encodeWire(null, T.text, 0)).toBeNull();
    expect(decodeWire(null, T.text, 1)).toBeNull();
  });
  it('text parameters must be valid UTF-8 (22021)', () => {
    expect((errorOf(() => decodeWire(Buffer.from([0x61, 0xff]), T.text, 0)) as CairnError).sqlState).toBe('22021');
  });
});
