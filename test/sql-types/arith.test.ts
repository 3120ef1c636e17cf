// Arithmetic operators against PostgreSQL 15 (golden-pg15-operators.ts):
// result value, result type and error SQLSTATE.
import { describe, it, expect } from 'vitest';
import { OPERATORS } from './golden-pg15-operators.js';
import { errorOf, parseTypeText } from './support.js';
import { binaryOpType, evalBinary, evalNegate, type BinaryOp } from '../../sql/types/arith.js';
import { castDatum } from '../../sql/types/cast.js';
import { encodeText } from '../../sql/types/text-format.js';
import { resolveTimeZone } from '../../sql/types/datetime.js';
import { parseInterval } from '../../sql/types/interval.js';
import { T, formatType, baseType } from '../../sql/types/type.js';
import { CairnError } from '../../src/util/errors.js';

describe('operators match PostgreSQL 15', () => {
  for (const row of OPERATORS) {
    it(`${row.a}::${row.ta} ${row.op} ${row.b}::${row.tb}${row.tz === 'UTC' ? '' : ` (${row.tz})`}`, () => {
      const ctx = { timeZone: resolveTimeZone(row.tz) };
      const ta = parseTypeText(row.ta);
      const tb = parseTypeText(row.tb);
      const op = row.op as BinaryOp;
      let result: { text: string; type: string } | undefined;
      let err: unknown;
      try {
        const a = castDatum(row.a, T.unknown, ta, 'explicit', ctx);
        const b = castDatum(row.b, T.unknown, tb, 'explicit', ctx);
        const rt = binaryOpType(op, ta, tb);
        const v = evalBinary(op, a, ta, b, tb, ctx);
        result = { text: encodeText(v, rt!, ctx), type: formatType(baseType(rt!)) };
      } catch (e) {
        err = e;
      }
      if ('err' in row) {
        expect(err, `expected SQLSTATE ${row.err}`).toBeInstanceOf(CairnError);
        expect((err as CairnError).sqlState).toBe(row.err);
      } else {
        if (err !== undefined) throw err;
        expect(result).toEqual({ text: row.out, type: row.type });
      }
    });
  }
});

describe('unary minus and NULL', () => {
  it('negates with range checks', () => {
    for (const [v, t] of [[-32768, T.int2], [-(2n ** 63n), T.int8]] as const) {
      expect((errorOf(() => evalNegate(v, t)) as CairnError).sqlState).toBe('22003');
    }
    expect(evalNegate(5n, T.int8)).toBe(-5n);
    expect(String(evalNegate(parseInterval('1 day -01:00'), T.interval))).toBe('-1 days +01:00:00');
  });
  it('operators are strict: NULL in, NULL out (after resolving the operator)', () => {
    expect(evalBinary('+', null, T.int4, 1, T.int4)).toBeNull();
    expect(evalBinary('||', 'a', T.text, null, T.int4)).toBeNull();
    expect(() => evalBinary('+', null, T.bool, 1, T.int4)).toThrow(CairnError);
  });
});
