// Interop with the drivers ORMs use: what Cairn encodes, node-postgres (`pg`)
// decodes to the expected JS values (its binary and text type parsers), and
// the parameter text `pg` and postgres.js send decodes to the intended datum.
//
// NB: pg-types' binary parsers (unused by pg in its default text mode) read
// some fields as unsigned: numeric weights < 0, negative array elements,
// negative and zero timestamps; they lose float −0, subnormals and float4
// infinity. Those cases are left to the PostgreSQL golden vectors
// (golden.test.ts); here the generators stay inside what the parsers read
// correctly.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import pg from 'pg';
import { createRequire } from 'node:module';
import { decodeText, encodeText } from '../../sql/types/text-format.js';
import { encodeBinary } from '../../sql/types/binary-format.js';
import { Decimal } from '../../sql/types/decimal.js';
import { Jsonb } from '../../sql/types/datum.js';
import { Interval } from '../../sql/types/interval.js';
import { UNIX_EPOCH_OFFSET_MICROS } from '../../sql/types/datetime.js';
import { T, arrayOf, type SqlType } from '../../sql/types/type.js';

const require = createRequire(import.meta.url);
const pgUtils = require('pg/lib/utils.js') as { prepareValue(v: unknown): unknown };

const binaryParser = (t: SqlType) => pg.types.getTypeParser(t.oid, 'binary') as (b: Buffer) => unknown;
const textParser = (t: SqlType) => pg.types.getTypeParser(t.oid, 'text') as (s: string) => unknown;

/** A JS Date (ms) for timestamptz µs since 2000, when it is a whole number of ms. */
const msArb = fc.integer({ min: -2_000_000_000_000, max: 4_000_000_000_000 });
const toMicros = (ms: number) => ms * 1000 - UNIX_EPOCH_OFFSET_MICROS;

describe("pg's binary parsers read Cairn's binary encodings", () => {
  it('int2, int4, int8, float4, float8, bool, text', () => {
    fc.assert(
      fc.property(fc.integer({ min: -32768, max: 32767 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.float({ noNaN: true, noDefaultInfinity: true, min: 2 ** -126 }), fc.double({ noNaN: true, noDefaultInfinity: true, min: 2 ** -1022 }), fc.boolean(), fc.string(), (i2, i4, i8, f4, f8, b, s) => {
        expect(binaryParser(T.int2)(encodeBinary(i2, T.int2))).toBe(i2);
        expect(binaryParser(T.int4)(encodeBinary(i4, T.int4))).toBe(i4);
        expect(binaryParser(T.int8)(encodeBinary(i8, T.int8))).toBe(i8.toString());
        expect(binaryParser(T.float4)(encodeBinary(f4, T.float4))).toBe(f4);
        expect(binaryParser(T.float8)(encodeBinary(f8, T.float8))).toBe(f8);
        expect(binaryParser(T.bool)(encodeBinary(b, T.bool))).toBe(b);
        expect(binaryParser(T.text)(encodeBinary(s, T.text))).toBe(s);
      }),
    );
  });
  it('numeric (base-10000 digits, weight, dscale)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e9 }), fc.nat({ max: 999999 }), fc.nat({ max: 6 }), fc.boolean(), (c, k, s, neg) => {
        const coef = BigInt(c) * 10n ** BigInt(s) + (BigInt(k) % 10n ** BigInt(s)); // |d| ≥ 1: weight ≥ 0
        const d = Decimal.of(neg ? -coef : coef, s);
        expect(binaryParser(T.numeric)(encodeBinary(d, T.numeric))).toBe(d.toNumber());
      }),
    );
    expect(binaryParser(T.numeric)(encodeBinary(Decimal.NAN, T.numeric))).toBeNaN();
  });
  it('timestamptz (int64 µs since 2000) → Date', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4_000_000_000_000 }), (msAfter2000) => {
        const ms = msAfter2000 + 946_684_800_000;
        expect((binaryParser(T.timestamptz)(encodeBinary(toMicros(ms), T.timestamptz)) as Date).getTime()).toBe(ms);
      }),
    );
  });
  it('int4[] and text[] (array header, NULL elements)', () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.nat(), { nil: null })), fc.array(fc.option(fc.string(), { nil: null })), (ints, strs) => {
        expect(binaryParser(arrayOf(T.int4))(encodeBinary(ints, arrayOf(T.int4)))).toEqual(ints);
        expect(binaryParser(arrayOf(T.text))(encodeBinary(strs, arrayOf(T.text)))).toEqual(strs);
      }),
    );
  });
});

describe("pg's text parsers read Cairn's text output", () => {
  it('int8, numeric, float8, bool, uuid', () => {
    expect(textParser(T.int8)(encodeText(-(2n ** 63n), T.int8))).toBe('-9223372036854775808');
    expect(textParser(T.numeric)(encodeText(Decimal.parseOrThrow('1.50'), T.numeric))).toBe('1.50');
    expect(textParser(T.float8)(encodeText(0.1, T.float8))).toBe(0.1);
    expect(textParser(T.float8)(encodeText(1e300, T.float8))).toBe(1e300);
    expect(textParser(T.bool)(encodeText(true, T.bool))).toBe(true);
    expect(textParser(T.uuid)(encodeText('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', T.uuid))).toBe('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
  });
  it('timestamptz → Date, in any session time zone', () => {
    fc.assert(
      fc.property(msArb, (ms) => {
        expect((textParser(T.timestamptz)(encodeText(toMicros(ms), T.timestamptz)) as Date).getTime()).toBe(ms);
      }),
    );
  });
  it('bytea hex, jsonb, interval, arrays', () => {
    fc.assert(
      fc.property(fc.uint8Array(), fc.jsonValue(), (u, j) => {
        expect(textParser(T.bytea)(encodeText(Buffer.from(u), T.bytea))).toEqual(Buffer.from(u));
        expect(textParser(T.jsonb)(encodeText(Jsonb.from(j), T.jsonb))).toEqual(JSON.parse(JSON.stringify(j)));
      }),
    );
    const iv = textParser(T.interval)(encodeText(new Interval(14, 3, 4 * 3600e6 + 5 * 60e6 + 6.5e6), T.interval)) as Record<string, number>;
    expect({ ...iv }).toEqual({ years: 1, months: 2, days: 3, hours: 4, minutes: 5, seconds: 6, milliseconds: 500 });
    fc.assert(
      fc.property(fc.array(fc.option(fc.string(), { nil: null })), (strs) => {
        expect(textParser(arrayOf(T.text))(encodeText(strs, arrayOf(T.text)))).toEqual(strs);
      }),
    );
  });
});

describe('parameters as drivers send them decode to the intended datum', () => {
  it("pg's Date, Buffer and array serialisation; postgres.js's toISOString", () => {
    fc.assert(
      fc.property(msArb, (ms) => {
        const date = new Date(ms);
        expect(decodeText(pgUtils.prepareValue(date) as string, T.timestamptz)).toBe(toMicros(ms));
        expect(decodeText(date.toISOString(), T.timestamptz)).toBe(toMicros(ms));
      }),
    );
    expect(decodeText(pgUtils.prepareValue([1, 2, null]) as string, arrayOf(T.int4))).toEqual([1, 2, null]);
    expect(decodeText(pgUtils.prepareValue(['a"b', 'c\\d', '', null]) as string, arrayOf(T.text))).toEqual(['a"b', 'c\\d', '', null]);
    expect(decodeText(`\\x${Buffer.from([0, 255]).toString('hex')}`, T.bytea)).toEqual(Buffer.from([0, 255]));
    expect(decodeText(JSON.stringify({ b: [1, 2.5], a: null }), T.jsonb)).toEqual(Jsonb.from({ a: null, b: [1, 2.5] }));
  });
});
