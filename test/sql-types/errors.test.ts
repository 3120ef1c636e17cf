// Error SQLSTATEs and message texts as PostgreSQL 15 prints them (psql,
// VERBOSITY default) — clients and ORMs match on both.
import { describe, it, expect } from 'vitest';
import { T, arrayOf, varchar } from '../../sql/types/type.js';
import { castDatum } from '../../sql/types/cast.js';
import { evalBinary } from '../../sql/types/arith.js';
import { Decimal } from '../../sql/types/decimal.js';
import { CairnError } from '../../src/util/errors.js';
import type { SqlType } from '../../sql/types/type.js';
import { errorOf } from './support.js';

const lit = (s: string, t: SqlType) => () => castDatum(s, T.unknown, t);

const CASES: [string, () => unknown, string, string][] = [
  ["'abc'::int4", lit('abc', T.int4), '22P02', 'invalid input syntax for type integer: "abc"'],
  ["'99999999999'::int4", lit('99999999999', T.int4), '22003', 'value "99999999999" is out of range for type integer'],
  ["'1e400'::float8", lit('1e400', T.float8), '22003', '"1e400" is out of range for type double precision'],
  ["'x'::numeric", lit('x', T.numeric), '22P02', 'invalid input syntax for type numeric: "x"'],
  ['1/0', () => evalBinary('/', 1, T.int4, 0, T.int4), '22012', 'division by zero'],
  ["'abc'::date", lit('abc', T.date), '22007', 'invalid input syntax for type date: "abc"'],
  ["'2020-02-30'::date", lit('2020-02-30', T.date), '22008', 'date/time field value out of range: "2020-02-30"'],
  ["'x'::bool", lit('x', T.bool), '22P02', 'invalid input syntax for type boolean: "x"'],
  ["'x'::uuid", lit('x', T.uuid), '22P02', 'invalid input syntax for type uuid: "x"'],
  ["'{1,'::int[]", lit('{1,', arrayOf(T.int4)), '22P02', 'malformed array literal: "{1,"'],
  ["'nope'::interval", lit('nope', T.interval), '22007', 'invalid input syntax for type interval: "nope"'],
  ["'{'::jsonb", lit('{', T.jsonb), '22P02', 'invalid input syntax for type json'],
  ['2147483647::int4 + 1', () => evalBinary('+', 2147483647, T.int4, 1, T.int4), '22003', 'integer out of range'],
  ['1e308::float8 * 10', () => evalBinary('*', 1e308, T.float8, 10, T.float8), '22003', 'value out of range: overflow'],
  ["'NaN'::numeric::int4", () => castDatum(Decimal.NAN, T.numeric, T.int4), '0A000', 'cannot convert NaN to integer'],
  ["'\\xzz'::bytea", lit('\\xzz', T.bytea), '22023', 'invalid hexadecimal digit: "z"'],
  ['1::bytea', () => castDatum(1, T.int4, T.bytea), '42846', 'cannot cast type integer to bytea'],
  ["INSERT 'abcd' INTO varchar(3)", () => castDatum('abcd', T.text, varchar(3), 'assignment'), '22001', 'value too long for type character varying(3)'],
];

describe('errors carry PostgreSQL\'s SQLSTATE and message', () => {
  for (const [title, f, state, message] of CASES) {
    it(title, () => {
      const err = errorOf(f);
      expect(err).toBeInstanceOf(CairnError);
      expect([(err as CairnError).sqlState, (err as Error).message]).toEqual([state, message]);
      expect((err as CairnError).code).toMatch(/^sql\./);
    });
  }
});
