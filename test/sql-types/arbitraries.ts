// fast-check arbitraries of datums per type, shared by the property tests.
import fc from 'fast-check';
import { Decimal } from '../../sql/types/decimal.js';
import { Interval } from '../../sql/types/interval.js';
import { Jsonb, type Datum } from '../../sql/types/datum.js';
import { DATE_MAX_DAYS, DATE_MIN_DAYS } from '../../sql/types/datetime.js';
import { T, arrayOf, bpchar, varchar, type SqlType } from '../../sql/types/type.js';

const MAX_EXACT_MICROS = 2 ** 53 - 1;

/** Text without NUL (PostgreSQL text cannot hold it) and without lone surrogates. */
export const textArb = fc
  .oneof(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.string({ unit: 'binary-ascii', maxLength: 12 }), fc.constantFrom('', ' ', 'NULL', 'null', '"', '\\', '{a,b}', ' x '))
  .map((s) => s.replace(/\0/g, ''));

export const decimalArb: fc.Arbitrary<Decimal> = fc.oneof(
  { weight: 10, arbitrary: fc.tuple(fc.bigInt({ min: -(10n ** 45n), max: 10n ** 45n }), fc.nat({ max: 40 })).map(([c, s]) => Decimal.of(c, s)) },
  { weight: 5, arbitrary: fc.tuple(fc.integer({ min: -100000, max: 100000 }), fc.nat({ max: 6 })).map(([c, s]) => Decimal.of(BigInt(c), s)) },
  { weight: 1, arbitrary: fc.constantFrom(Decimal.NAN, Decimal.POS_INF, Decimal.NEG_INF, Decimal.ZERO) },
);

export const intervalArb = fc
  .tuple(fc.integer({ min: -2147483648, max: 2147483647 }), fc.integer({ min: -2147483648, max: 2147483647 }), fc.integer({ min: -MAX_EXACT_MICROS, max: MAX_EXACT_MICROS }))
  .map(([m, d, us]) => new Interval(m, d, us));

const jsonbArb = fc.jsonValue({ maxDepth: 3 }).map((v) => Jsonb.from(v));

/** [type, datum arbitrary] for every scalar type Cairn supports. */
export const SCALARS: readonly [string, SqlType, fc.Arbitrary<Datum>][] = [
  ['bool', T.bool, fc.boolean()],
  ['int2', T.int2, fc.integer({ min: -32768, max: 32767 })],
  ['int4', T.int4, fc.integer({ min: -2147483648, max: 2147483647 })],
  ['int8', T.int8, fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })],
  ['float4', T.float4, fc.float()],
  ['float8', T.float8, fc.double()],
  ['numeric', T.numeric, decimalArb],
  ['text', T.text, textArb],
  ['varchar', T.varchar, textArb],
  ['varchar(5)', varchar(5), textArb.map((s) => [...s].slice(0, 5).join(''))],
  ['char(4)', bpchar(4), fc.string({ unit: 'binary-ascii', maxLength: 4 }).map((s) => s.replace(/\0/g, 'x').padEnd(4, ' '))],
  ['name', T.name, fc.string({ unit: 'binary-ascii', maxLength: 20 }).map((s) => s.replace(/\0/g, ''))],
  ['bytea', T.bytea, fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u))],
  ['date', T.date, fc.oneof(fc.integer({ min: DATE_MIN_DAYS, max: DATE_MAX_DAYS }), fc.constantFrom(Infinity, -Infinity))],
  ['timestamp', T.timestamp, fc.oneof(fc.integer({ min: -MAX_EXACT_MICROS, max: MAX_EXACT_MICROS }), fc.constantFrom(Infinity, -Infinity))],
  ['timestamptz', T.timestamptz, fc.oneof(fc.integer({ min: -MAX_EXACT_MICROS, max: MAX_EXACT_MICROS }), fc.constantFrom(Infinity, -Infinity))],
  ['interval', T.interval, intervalArb],
  ['uuid', T.uuid, fc.uuid()],
  ['jsonb', T.jsonb, jsonbArb],
  ['oid', T.oid, fc.integer({ min: 0, max: 4294967295 })],
];

/** Arrays (with NULLs, one or two dimensions) over a few element types. */
export const ARRAYS: readonly [string, SqlType, fc.Arbitrary<Datum>][] = [
  ['int4[]', arrayOf(T.int4), fc.array(fc.option(fc.integer(), { nil: null }), { maxLength: 8 })],
  ['text[]', arrayOf(T.text), fc.array(fc.option(textArb, { nil: null }), { maxLength: 6 })],
  ['int8[][]', arrayOf(T.int8), fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 3 })).chain(([r, c]) => fc.array(fc.array(fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: null }), { minLength: c, maxLength: c }), { minLength: r, maxLength: r }))],
  ['numeric[]', arrayOf(T.numeric), fc.array(fc.option(decimalArb, { nil: null }), { maxLength: 5 })],
  ['timestamptz[]', arrayOf(T.timestamptz), fc.array(fc.integer({ min: -MAX_EXACT_MICROS, max: MAX_EXACT_MICROS }), { maxLength: 5 })],
  ['jsonb[]', arrayOf(T.jsonb), fc.array(jsonbArb, { maxLength: 3 })],
  ['int2vector', T.int2vector, fc.array(fc.integer({ min: -32768, max: 32767 }), { maxLength: 6 })],
  ['oidvector', T.oidvector, fc.array(fc.integer({ min: 0, max: 4294967295 }), { maxLength: 6 })],
];
