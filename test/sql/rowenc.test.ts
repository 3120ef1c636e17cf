/**
 * Row encoding (sql/rowenc/row-codec.ts): rows round-trip through their KV
 * pair, keys sort like their primary-key tuples (ascending and descending),
 * values decode only the requested columns, and NULLs cost no bytes.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { compareBytes } from '../../storage/encoding/index.js';
import { RowCodec } from '../../sql/rowenc/row-codec.js';
import { PRIMARY_INDEX_ID, type ColumnDesc, type TableDesc } from '../../sql/catalog/descriptor.js';
import { Decimal } from '../../sql/types/decimal.js';
import { T, varchar, type SqlType } from '../../sql/types/type.js';
import type { Datum } from '../../sql/sem/datum.js';

function col(id: number, name: string, t: SqlType, nullable = true): ColumnDesc {
  return { id, name, type: { oid: t.oid, typmod: t.typmod }, typeText: name, nullable, defaultExpr: undefined, hidden: false };
}

function table(cols: ColumnDesc[], pk: number[], dirs: ('asc' | 'desc')[] = pk.map(() => 'asc')): TableDesc {
  return {
    kind: 'table',
    id: 104,
    name: 't',
    parentId: 50,
    version: 1,
    columns: cols,
    nextColumnId: Math.max(...cols.map((c) => c.id)) + 1,
    primaryIndex: { id: PRIMARY_INDEX_ID, name: 't_pkey', unique: true, keyColumnIds: pk, directions: dirs, storeColumnIds: [] },
    indexes: [],
    nextIndexId: 2,
    checks: [],
  };
}

const wide = table(
  [
    col(1, 'k', T.int8, false),
    col(2, 's', T.text, false),
    col(3, 'i4', T.int4),
    col(5, 'f', T.float8),
    col(6, 'b', T.bool),
    col(7, 'n', T.numeric),
    col(8, 'v', varchar(20)),
    col(9, 'by', T.bytea),
    col(10, 'ts', T.timestamptz),
    col(11, 'i8', T.int8),
  ],
  [1, 2],
);

const rowArb = fc.tuple(
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.string(),
  fc.option(fc.integer({ min: -2147483648, max: 2147483647 })),
  fc.option(fc.double({ noNaN: false })),
  fc.option(fc.boolean()),
  fc.option(fc.tuple(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.integer({ min: 0, max: 12 })).map(([c, s]) => Decimal.of(c, s))),
  fc.option(fc.string({ maxLength: 20 })),
  fc.option(fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u))),
  fc.option(fc.integer({ min: -1e15, max: 1e15 })),
  fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
);

function sameDatum(a: Datum, b: Datum): boolean {
  if (a instanceof Decimal && b instanceof Decimal) return a.equals(b) && a.toString() === b.toString();
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (typeof a === 'number' && typeof b === 'number') return Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));
  return a === b;
}

describe('RowCodec', () => {
  const codec = new RowCodec(wide);

  it('round-trips every column, NULLs included (property)', () => {
    fc.assert(
      fc.property(rowArb, (r) => {
        const row = [...r] as Datum[];
        const key = codec.encodeKey(row);
        const value = codec.encodeValue(row);
        const out: Datum[] = new Array(row.length).fill('junk');
        codec.decodeKey(key, out);
        codec.decodeValue(value, out);
        for (let i = 0; i < row.length; i++) expect(sameDatum(out[i] as Datum, row[i] as Datum), `column ${i}`).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('text values are written as UTF-8 straight into the row (multi-byte text, values across the writer slab) and round-trip (property)', () => {
    // encodeValue writes a string's UTF-8 in place (KeyWriter.appendUtf8): its byte length, not its character count,
    // sizes the field, and a value may straddle or outgrow the writer's 4 KiB slab.
    const text = table([col(1, 'k', T.int8, false), col(2, 'a', T.text), col(3, 'b', varchar(5000)), col(4, 'c', T.text)], [1]);
    const tc = new RowCodec(text);
    const piece = fc.constantFrom('a', 'é', '€', '😀', 'ﬀ', '\u0000', 'z'.repeat(100), 'ü'.repeat(700));
    const long = fc.array(piece, { maxLength: 40 }).map((ps) => ps.join(''));
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 40n }), fc.option(long), fc.option(fc.string({ unit: 'grapheme', maxLength: 30 })), fc.option(long), (k, a, b, c) => {
        const row: Datum[] = [k, a, b, c];
        const value = tc.encodeValue(row);
        const out: Datum[] = [null, 'junk', 'junk', 'junk'];
        tc.decodeValue(value, out);
        expect(out.slice(1)).toEqual([a, b, c]);
      }),
      { numRuns: 200, seed: 8 },
    );
    for (const n of [4094, 4095, 4096, 4097, 12_000]) {
      const s = '€'.repeat(Math.ceil(n / 3)).slice(0, Math.ceil(n / 3));
      const out: Datum[] = [null, null, null, null];
      tc.decodeValue(tc.encodeValue([1n, s, 'x', s]), out);
      expect(out.slice(1)).toEqual([s, 'x', s]);
    }
  });

  it('decodes only the columns asked for', () => {
    const row: Datum[] = [1n, 'k', 7, 1.5, true, Decimal.parse('1.50') as Decimal, 'v', Buffer.from([1]), 5, 9n];
    const out: Datum[] = new Array(row.length).fill(null);
    const needed = new Uint8Array(row.length);
    needed[3] = 1;
    needed[9] = 1;
    codec.decodeValue(codec.encodeValue(row), out, needed);
    expect(out).toEqual([null, null, null, 1.5, null, null, null, null, null, 9n]);
  });

  it('skips an undecoded int8 column of any size', () => {
    const row: Datum[] = [1n, 'k', 7, null, null, null, null, null, null, -(2n ** 63n)];
    const out: Datum[] = new Array(row.length).fill(null);
    const needed = new Uint8Array(row.length);
    needed[2] = 1;
    codec.decodeValue(codec.encodeValue(row), out, needed);
    expect(out[2]).toBe(7);
    // a wide value before a needed column
    const row2: Datum[] = [1n, 'k', null, null, null, null, null, null, null, 2n ** 62n];
    const t2 = new RowCodec(table([col(1, 'k', T.int8, false), col(2, 'big', T.int8), col(3, 'after', T.int4)], [1]));
    const out2: Datum[] = [null, null, null];
    t2.decodeValue(t2.encodeValue([1n, -(2n ** 63n), 5]), out2, Uint8Array.from([0, 0, 1]));
    expect(out2).toEqual([null, null, 5]);
    void row2;
  });

  it('omits NULL columns from the value (one format byte for an all-NULL row)', () => {
    const row: Datum[] = [1n, 'k', null, null, null, null, null, null, null, null];
    expect(codec.encodeValue(row)).toEqual(Buffer.from([0x01]));
    const small: Datum[] = [1n, 'k', 5, null, null, null, null, null, null, null];
    // format byte, Δid=3 (column i4), int tag, zig-zag varint 5 → 10
    expect(codec.encodeValue(small).toString('hex')).toBe('0103030a');
  });

  it('keys sort like the primary-key tuples, ascending and descending (property)', () => {
    const asc = new RowCodec(table([col(1, 'a', T.int8, false), col(2, 'b', T.text, false), col(3, 'c', T.float8)], [1, 2]));
    const mixed = new RowCodec(table([col(1, 'a', T.int8, false), col(2, 'b', T.text, false), col(3, 'c', T.float8)], [1, 2], ['desc', 'asc']));
    const pkArb = fc.tuple(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.string());
    const cmpStr = (x: string, y: string): number => compareBytes(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8'));
    fc.assert(
      fc.property(pkArb, pkArb, ([a1, b1], [a2, b2]) => {
        const want = a1 < a2 ? -1 : a1 > a2 ? 1 : Math.sign(cmpStr(b1, b2));
        const k1 = asc.encodeKey([a1, b1, null]);
        const k2 = asc.encodeKey([a2, b2, null]);
        expect(Math.sign(compareBytes(k1, k2))).toBe(want);
        const wantMixed = a1 < a2 ? 1 : a1 > a2 ? -1 : Math.sign(cmpStr(b1, b2));
        expect(Math.sign(compareBytes(mixed.encodeKey([a1, b1, null]), mixed.encodeKey([a2, b2, null])))).toBe(wantMixed);
      }),
      { numRuns: 500 },
    );
  });

  it('key prefixes bound the keys that extend them', () => {
    const key = codec.encodeKey([42n, 'abc', null, null, null, null, null, null, null, null]);
    const prefix = codec.encodeKeyPrefix([42n]);
    expect(key.subarray(0, prefix.length)).toEqual(prefix);
    expect(compareBytes(codec.encodeKeyPrefix([41n]), key)).toBeLessThan(0);
    expect(compareBytes(codec.encodeKeyPrefix([43n]), key)).toBeGreaterThan(0);
  });

  it('numeric primary-key columns round-trip with their display scale (composite value); json keys are 42704', () => {
    const n = new RowCodec(table([col(1, 'n', T.numeric, false), col(2, 'v', T.text)], [1]));
    for (const text of ['1.50', '-0.0010', '12', 'NaN']) {
      const row = [Decimal.parseOrThrow(text), 'x'];
      const out: Datum[] = [null, null];
      n.decodeKey(n.encodeKey(row), out);
      n.decodeValue(n.encodeValue(row), out);
      expect(String(out[0])).toBe(text);
    }
    expect(() => new RowCodec(table([col(1, 'j', T.json, false)], [1]))).toThrow(/data type json has no default operator class/);
  });
});
