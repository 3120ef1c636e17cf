// Casts, numeric arithmetic and cross-type comparison against PostgreSQL 15
// (golden-pg15-ops.ts), plus the assignment-cast rules of issue 6.
import { describe, it, expect } from 'vitest';
import { ARITH, CASTS, COMPARE, type Outcome } from './golden-pg15-ops.js';
import { errorOf, parseTypeText } from './support.js';
import { T, bpchar, numeric, varchar, type SqlType } from '../../sql/types/type.js';
import { castDatum, castContext, coerceToTypmod, numericLiteralType, resolveConstType } from '../../sql/types/cast.js';
import { encodeText } from '../../sql/types/text-format.js';
import { compareMixed } from '../../sql/types/compare.js';
import { Decimal } from '../../sql/types/decimal.js';
import { resolveTimeZone } from '../../sql/types/datetime.js';
import { CairnError } from '../../src/util/errors.js';

function expectOutcome(run: () => string, want: Outcome): void {
  if ('err' in want) {
    const err = errorOf(run);
    expect(err, `expected SQLSTATE ${want.err}`).toBeInstanceOf(CairnError);
    expect((err as CairnError).sqlState).toBe(want.err);
  } else {
    expect(run()).toBe(want.out);
  }
}

describe('explicit casts match PostgreSQL 15', () => {
  for (const row of CASTS) {
    it(`'${row.v}'::${row.frm}::${row.to}${row.tz === 'UTC' ? '' : ` (${row.tz})`}`, () => {
      const ctx = { timeZone: resolveTimeZone(row.tz) };
      const from = parseTypeText(row.frm);
      const to = parseTypeText(row.to);
      expectOutcome(() => {
        const d = castDatum(row.v, T.unknown, from, 'explicit', ctx);
        return encodeText(castDatum(d, from, to, 'explicit', ctx), to, ctx);
      }, row);
    });
  }
});

describe('numeric arithmetic matches PostgreSQL 15 (result scales, rounding, specials)', () => {
  for (const row of ARITH) {
    it(`${row.a} ${row.op} ${row.b}`, () => {
      expectOutcome(() => {
        const a = Decimal.parseOrThrow(row.a);
        const b = Decimal.parseOrThrow(row.b);
        switch (row.op) {
          case '+':
            return a.add(b).toString();
          case '-':
            return a.sub(b).toString();
          case '*':
            return a.mul(b).toString();
          case '/':
            return a.div(b).toString();
          default:
            return a.mod(b).toString();
        }
      }, row);
    });
  }
});

describe('cross-type comparison matches PostgreSQL 15', () => {
  for (const row of COMPARE) {
    it(`${row.a}::${row.ta} vs ${row.b}::${row.tb}`, () => {
      const ta = parseTypeText(row.ta);
      const tb = parseTypeText(row.tb);
      expectOutcome(() => {
        const a = castDatum(row.a, T.unknown, ta);
        const b = castDatum(row.b, T.unknown, tb);
        return String(Math.sign(compareMixed(a, ta, b, tb)));
      }, row);
    });
  }
});

function sqlStateOf(f: () => unknown): string | undefined {
  const e = errorOf(f);
  if (e === undefined || e instanceof CairnError) return e?.sqlState;
  throw e;
}

describe('assignment casts (INSERT/UPDATE targets)', () => {
  it('varchar(n): 22001 unless only spaces are cut; explicit casts truncate', () => {
    expect(sqlStateOf(() => castDatum('abcd', T.text, varchar(3), 'assignment'))).toBe('22001');
    expect(castDatum('ab    ', T.text, varchar(3), 'assignment')).toBe('ab ');
    expect(castDatum('abcd', T.text, varchar(3), 'explicit')).toBe('abc');
  });
  it('char(n): pads; 22001 for non-space excess', () => {
    expect(castDatum('a', T.text, bpchar(3), 'assignment')).toBe('a  ');
    expect(castDatum('a    ', T.text, bpchar(3), 'assignment')).toBe('a  ');
    expect(sqlStateOf(() => castDatum('abcd', T.text, bpchar(3), 'assignment'))).toBe('22001');
  });
  it('numeric(p, s): rounds, 22003 on overflow (PostgreSQL: 1.005 → 1.01 in numeric(5,2); 1000 overflows)', () => {
    expect(String(castDatum(Decimal.parseOrThrow('1.005'), T.numeric, numeric(5, 2), 'assignment'))).toBe('1.01');
    expect(sqlStateOf(() => castDatum(Decimal.fromInt(1000), T.numeric, numeric(5, 2), 'assignment'))).toBe('22003');
  });
  it('text → int is explicit only (42804 in assignment); int8 → int4 is assignment (42804 implicitly)', () => {
    expect(sqlStateOf(() => castDatum('1', T.text, T.int4, 'assignment'))).toBe('42804');
    expect(castDatum('1', T.text, T.int4, 'explicit')).toBe(1);
    expect(castDatum(5n, T.int8, T.int4, 'assignment')).toBe(5);
    expect(sqlStateOf(() => castDatum(5n, T.int8, T.int4, 'implicit'))).toBe('42804');
    expect(sqlStateOf(() => castDatum(Buffer.from('x'), T.bytea, T.int4, 'explicit'))).toBe('42846');
  });
  it('pg_cast contexts', () => {
    const cases: [SqlType, SqlType, string | undefined][] = [
      [T.int4, T.int8, 'implicit'],
      [T.int8, T.int4, 'assignment'],
      [T.int4, T.numeric, 'implicit'],
      [T.numeric, T.float8, 'implicit'],
      [T.float8, T.numeric, 'assignment'],
      [T.float8, T.int4, 'assignment'],
      [T.int4, T.bool, 'explicit'],
      [T.varchar, T.text, 'implicit'],
      [T.int4, T.text, 'assignment'],
      [T.text, T.date, 'explicit'],
      [T.date, T.timestamptz, 'implicit'],
      [T.timestamptz, T.date, 'assignment'],
      [T.bytea, T.int4, undefined],
      [T.unknown, T.uuid, 'implicit'],
    ];
    for (const [from, to, want] of cases) expect(castContext(from, to)).toBe(want);
  });
  it('NULL casts to NULL', () => {
    expect(castDatum(null, T.text, T.int4, 'explicit')).toBeNull();
    expect(coerceToTypmod(null, varchar(1), false)).toBeNull();
  });
});

describe('untyped literals', () => {
  it('integer literals are int4, then int8, then numeric by magnitude', () => {
    expect(numericLiteralType('2147483647')).toBe(T.int4);
    expect(numericLiteralType('2147483648')).toBe(T.int8);
    expect(numericLiteralType('9223372036854775808')).toBe(T.numeric);
    expect(numericLiteralType('1.5')).toBe(T.numeric);
  });
  it('string literals take the target type (assignment rules) or text', () => {
    expect(resolveConstType({ kind: 'string', text: '42' }, T.int8)).toEqual({ type: T.int8, datum: 42n });
    expect(resolveConstType({ kind: 'string', text: 'x' })).toEqual({ type: T.text, datum: 'x' });
    expect(sqlStateOf(() => resolveConstType({ kind: 'string', text: 'abcd' }, varchar(3)))).toBe('22001');
    expect(sqlStateOf(() => resolveConstType({ kind: 'string', text: 'x' }, T.int4))).toBe('22P02');
    expect(resolveConstType({ kind: 'number', text: '7' }, T.float8)).toEqual({ type: T.float8, datum: 7 });
  });
});
