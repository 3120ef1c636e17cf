/**
 * Non-integer key columns (issue 6: numeric and the other types that were
 * refused as keys): numeric and interval keys through key-decimal.ts's
 * order-preserving bytes, jsonb and arrays through key-containers.ts (in
 * PostgreSQL's orders; array columns themselves are not supported by CREATE
 * TABLE yet, so arrays are checked at the encoding level), composite values (display scale, '1 day' vs
 * '24:00:00', the whole jsonb/array) restored from the row value; json
 * refused as PostgreSQL does (42704, no btree operator class).
 *
 * The order property (STYLE.md §4): for any decimals a, b
 *   sign(compareBytes(key(a), key(b))) = sign(a.cmp(b))
 * through the whole tuple encoding, ascending and descending.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fc from 'fast-check';
import pg from 'pg';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { KeyWriter } from '../../storage/encoding/index.js';
import { Decimal } from '../../sql/types/decimal.js';
import { Interval } from '../../sql/types/interval.js';
import { decodeDecimalKey, encodeDecimalKey } from '../../sql/rowenc/key-decimal.js';
import { encodeArrayKey, encodeJsonbKey } from '../../sql/rowenc/key-containers.js';
import { compareDatums, compareJson } from '../../sql/types/compare.js';
import { Jsonb, type Datum, type JsonValue } from '../../sql/types/datum.js';
import { T, arrayOf, type SqlType } from '../../sql/types/type.js';
import { RowCodec } from '../../sql/rowenc/row-codec.js';
import { PRIMARY_INDEX_ID, type ColumnDesc, type TableDesc } from '../../sql/catalog/descriptor.js';
import { datumToText } from '../../sql/sem/datum.js';
import type { Direction } from '../../storage/encoding/index.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

const sign = (n: number): number => (n < 0 ? -1 : n > 0 ? 1 : 0);

/** Decimals of every shape: specials, zero, tiny and huge exponents, trailing zeros, both signs. */
const decimalArb: fc.Arbitrary<Decimal> = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom(Decimal.NAN, Decimal.POS_INF, Decimal.NEG_INF, Decimal.ZERO, Decimal.of(0n, 3)) },
  { weight: 8, arbitrary: fc.tuple(fc.bigInt(-(10n ** 30n), 10n ** 30n), fc.integer({ min: -40, max: 40 })).map(([c, s]) => Decimal.of(c, s)) },
  { weight: 3, arbitrary: fc.tuple(fc.integer({ min: -999, max: 999 }), fc.integer({ min: 0, max: 4 })).map(([c, s]) => Decimal.of(BigInt(c), s)) },
);

const tupleKey = (d: Decimal, dir: 'asc' | 'desc'): Buffer => new KeyWriter().appendBytes(encodeDecimalKey(d), dir).finish();

describe('numeric key bytes (key-decimal.ts)', () => {
  it('golden vectors', () => {
    const hex = (s: string): string => encodeDecimalKey(Decimal.parseOrThrow(s)).toString('hex');
    expect(hex('NaN')).toBe('06');
    expect(hex('Infinity')).toBe('05');
    expect(hex('-Infinity')).toBe('01');
    expect(hex('0.000')).toBe('03');
    // 1.5 = 0.15 × 10^1: exponent 1 + 2^31, digits 1,5 → 0x02,0x06.
    expect(hex('1.5')).toBe('04800000010206');
    expect(hex('1.50')).toBe(hex('1.5'));
    expect(hex('1200')).toBe('04800000040203');
    // −1.5: exponent 2^31 − 1 − 1, digits 10−1, 10−5, terminator.
    expect(hex('-1.5')).toBe('027ffffffe0905ff');
  });

  it('order and round trip match Decimal.cmp, through the tuple encoding both ways (property)', () => {
    fc.assert(
      fc.property(decimalArb, decimalArb, (a, b) => {
        const want = sign(a.cmp(b));
        expect(sign(compareBytes(encodeDecimalKey(a), encodeDecimalKey(b)))).toBe(want);
        expect(sign(compareBytes(tupleKey(a, 'asc'), tupleKey(b, 'asc')))).toBe(want);
        expect(sign(compareBytes(tupleKey(a, 'desc'), tupleKey(b, 'desc')))).toBe(want === 0 ? 0 : -want);
        const back = decodeDecimalKey(encodeDecimalKey(a));
        expect(back.cmp(a)).toBe(0);
        expect(back.toString()).toBe(a.stripTrailingZeros().toString());
      }),
      { numRuns: 2000 },
    );
  });

  it('interval spans order as interval_cmp_value (months as 30 days)', () => {
    const arb = fc.tuple(fc.integer({ min: -5000, max: 5000 }), fc.integer({ min: -400, max: 400 }), fc.integer({ min: -1e12, max: 1e12 })).map(([m, d, us]) => new Interval(m, d, us));
    fc.assert(
      fc.property(arb, arb, (a, b) => {
        expect(sign(compareBytes(encodeDecimalKey(Decimal.of(a.span())), encodeDecimalKey(Decimal.of(b.span()))))).toBe(sign(a.cmp(b)));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('jsonb and array key bytes (key-containers.ts)', () => {
  const jsonArb: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constant(null),
      fc.boolean(),
      fc.integer({ min: -5, max: 5 }),
      fc.constantFrom(0.5, 1.25, -3.5),
      fc.string({ maxLength: 3 }),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(fc.string({ maxLength: 2 }), tie('value'), { maxKeys: 3 }),
    ),
  })).value;

  it('jsonb bytes order as compareJson (PostgreSQL\'s jsonb btree order) (property)', () => {
    fc.assert(
      fc.property(jsonArb, jsonArb, (x, y) => {
        const a = Jsonb.from(x).value as JsonValue;
        const b = Jsonb.from(y).value as JsonValue;
        expect(sign(compareBytes(encodeJsonbKey(a), encodeJsonbKey(b)))).toBe(sign(compareJson(a, b)));
      }),
      { numRuns: 2000 },
    );
  });

  it('array bytes order as compareDatums on int[] and text[], NULL elements included (property)', () => {
    const intElem = (kw: KeyWriter, d: Datum): void => void kw.appendInt(d as number);
    const textElem = (kw: KeyWriter, d: Datum): void => void kw.appendString(d as string);
    const ints = fc.array(fc.option(fc.integer({ min: -3, max: 3 }), { nil: null }), { maxLength: 4 });
    const texts = fc.array(fc.option(fc.string({ maxLength: 2 }), { nil: null }), { maxLength: 4 });
    fc.assert(
      fc.property(ints, ints, (a, b) => {
        expect(sign(compareBytes(encodeArrayKey(a, intElem), encodeArrayKey(b, intElem)))).toBe(sign(compareDatums(a, b, arrayOf(T.int4))));
      }),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(texts, texts, (a, b) => {
        expect(sign(compareBytes(encodeArrayKey(a, textElem), encodeArrayKey(b, textElem)))).toBe(sign(compareDatums(a, b, arrayOf(T.text))));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('RowCodec with composite key columns (numeric, interval, jsonb) in mixed directions', () => {
  const col = (id: number, name: string, t: SqlType): ColumnDesc => ({ id, name, type: { oid: t.oid, typmod: t.typmod }, typeText: name, nullable: true, defaultExpr: undefined, hidden: false });
  // Column ids deliberately interleave key and value columns: composite values go in column-id order.
  const desc = (dirs: Direction[]): TableDesc => ({
    kind: 'table',
    id: 104,
    name: 't',
    parentId: 50,
    version: 1,
    columns: [col(1, 'v1', T.text), col(2, 'n', T.numeric), col(3, 'v2', T.int8), col(4, 'iv', T.interval), col(5, 'j', T.jsonb), col(6, 'v3', T.numeric)],
    nextColumnId: 7,
    primaryIndex: { id: PRIMARY_INDEX_ID, name: 't_pkey', unique: true, keyColumnIds: [2, 4, 5], directions: dirs, storeColumnIds: [] },
    indexes: [],
    nextIndexId: 2,
    checks: [],
  });
  const numeric = fc.tuple(fc.bigInt(-(10n ** 12n), 10n ** 12n), fc.integer({ min: 0, max: 6 })).map(([c, sc]) => Decimal.of(c, sc));
  const interval = fc.tuple(fc.integer({ min: -30, max: 30 }), fc.integer({ min: -40, max: 40 }), fc.integer({ min: -1e11, max: 1e11 })).map(([m, d, us]) => new Interval(m, d, us));
  const jsonb = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.string({ maxLength: 2 }), fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 2 }), fc.constant(null)).map((v) => Jsonb.from(v));
  const row = fc.tuple(fc.option(fc.string({ maxLength: 3 }), { nil: null }), numeric, fc.option(fc.bigInt(-100n, 100n), { nil: null }), interval, jsonb, fc.option(numeric, { nil: null }));
  const dirs = fc.tuple(...[0, 1, 2].map(() => fc.constantFrom<Direction>('asc', 'desc')));

  it('keys order as the key columns compare (each in its direction); key + value decode to the row as written (property)', () => {
    fc.assert(
      fc.property(dirs, row, row, (ds, a, b) => {
        const codec = new RowCodec(desc(ds));
        const types = [T.numeric, T.interval, T.jsonb];
        let want = 0;
        for (const [k, ord] of [1, 3, 4].entries()) {
          const c = compareDatums(a[ord] as Datum, b[ord] as Datum, types[k] as SqlType);
          if (c !== 0) {
            want = ds[k] === 'desc' ? -sign(c) : sign(c);
            break;
          }
        }
        expect(sign(compareBytes(codec.encodeKey(a), codec.encodeKey(b)))).toBe(want);
        const out: Datum[] = new Array<Datum>(6).fill(null);
        codec.decodeKey(codec.encodeKey(a), out);
        codec.decodeValue(codec.encodeValue(a), out);
        expect(out.map((d, i) => (d === null ? null : datumToText(d, codec.types[i] as SqlType)))).toEqual(a.map((d, i) => (d === null ? null : datumToText(d, codec.types[i] as SqlType))));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('non-integer key columns over SQL', () => {
  let srv: TestSqlServer;
  let c: pg.Client;
  beforeAll(async () => {
    srv = await startSqlServer({ insecure: true });
    c = new pg.Client(srv.url);
    await c.connect();
  });
  afterAll(async () => {
    await c.end();
    await srv.stop();
  });

  const col = async (sql: string, params: unknown[] = []): Promise<unknown[]> => (await c.query({ text: sql, values: params, rowMode: 'array' })).rows.map((r: unknown[]) => r[0]);

  it('numeric primary key: PostgreSQL order, equal values conflict, display scale kept, point and range lookups', async () => {
    await c.query('CREATE TABLE n (k NUMERIC PRIMARY KEY, v TEXT)');
    const keys = ['1.50', '-2', '0', 'NaN', 'Infinity', '-Infinity', '100000000000000000000', '0.001', '-0.0010', '1.499999999999999999999', '12', '-12.5'];
    for (const k of keys) await c.query('INSERT INTO n VALUES ($1::numeric, $1)', [k]);
    expect(await col('SELECT k::text FROM n')).toEqual(['-Infinity', '-12.5', '-2', '-0.0010', '0', '0.001', '1.499999999999999999999', '1.50', '12', '100000000000000000000', 'Infinity', 'NaN']);
    expect(await col('SELECT k::text FROM n ORDER BY k DESC LIMIT 3')).toEqual(['NaN', 'Infinity', '100000000000000000000']);
    await expect(c.query('INSERT INTO n VALUES (1.5, $1)', ['dup'])).rejects.toMatchObject({ code: '23505' });
    await expect(c.query(`INSERT INTO n VALUES ('NaN', 'dup')`)).rejects.toMatchObject({ code: '23505' });
    expect(await col('SELECT v FROM n WHERE k = 1.5')).toEqual(['1.50']);
    expect(await col('SELECT v FROM n WHERE k = $1', ['1.500'])).toEqual(['1.50']);
    expect(await col('SELECT v FROM n WHERE k = 12')).toEqual(['12']);
    expect(await col('SELECT v FROM n WHERE k > -3 AND k < 1.5')).toEqual(['-2', '-0.0010', '0', '0.001', '1.499999999999999999999']);
    expect(await col('SELECT k::text FROM n WHERE k >= 12')).toEqual(['12', '100000000000000000000', 'Infinity', 'NaN']);
    await c.query('UPDATE n SET v = $1 WHERE k = 0.0010', ['updated']);
    expect(await col(`SELECT k::text FROM n WHERE v = 'updated'`)).toEqual(['0.001']);
    await c.query('DELETE FROM n WHERE k < 0');
    expect((await col('SELECT count(*)::int FROM n'))[0]).toBe(8);
  });

  it('numeric(p,s) in a composite key, and ascending/descending secondary indexes on numeric', async () => {
    await c.query('CREATE TABLE m (a NUMERIC(6,2), b TEXT, c NUMERIC, PRIMARY KEY (a, b))');
    await c.query('CREATE INDEX m_c ON m (c)');
    await c.query('CREATE INDEX m_a_desc ON m (a DESC)');
    await c.query(`INSERT INTO m VALUES (1.5, 'x', 3.10), (1.5, 'a', -1), (-7.25, 'q', 0.5), (1000.1, 'z', 3.1)`);
    expect((await c.query('SELECT a::text, b FROM m')).rows).toEqual([
      { a: '-7.25', b: 'q' },
      { a: '1.50', b: 'a' },
      { a: '1.50', b: 'x' },
      { a: '1000.10', b: 'z' },
    ]);
    expect(await col('SELECT a::text FROM m WHERE a > 0 ORDER BY a DESC')).toEqual(['1000.10', '1.50', '1.50']);
    // The index on c: ordered by c; 3.10 and 3.1 equal in order, each shown as written.
    expect((await c.query('SELECT c::text, b FROM m WHERE c >= 0.5 ORDER BY c, b')).rows).toEqual([
      { c: '0.5', b: 'q' },
      { c: '3.10', b: 'x' },
      { c: '3.1', b: 'z' },
    ]);
    expect(await col('SELECT b FROM m WHERE c = 3.1 ORDER BY b')).toEqual(['x', 'z']);
    await c.query('CREATE UNIQUE INDEX m_bc ON m (b, c)');
    await expect(c.query(`INSERT INTO m VALUES (2, 'x', 3.100)`)).rejects.toMatchObject({ code: '23505' });
  });

  it('interval keys compare as PostgreSQL (1 day = 24 hours) and keep how they were written', async () => {
    await c.query('CREATE TABLE iv (k INTERVAL PRIMARY KEY)');
    await c.query(`INSERT INTO iv VALUES ('1 day'), ('-1 mon'), ('36:00:00'), ('00:00:01.5'), ('1 year')`);
    await expect(c.query(`INSERT INTO iv VALUES ('24:00:00')`)).rejects.toMatchObject({ code: '23505' });
    expect(await col('SELECT k::text FROM iv')).toEqual(['-1 mons', '00:00:01.5', '1 day', '36:00:00', '1 year']);
    expect(await col(`SELECT k::text FROM iv WHERE k = '30 days'::interval`)).toEqual([]);
    expect(await col(`SELECT k::text FROM iv WHERE k = '86400 seconds'::interval`)).toEqual(['1 day']);
  });

  it('other key types: oid and uuid work; json is refused as PostgreSQL does', async () => {
    await c.query('CREATE TABLE o (k OID PRIMARY KEY, u UUID, UNIQUE (u))');
    await c.query(`INSERT INTO o VALUES (4000000000, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'), (7, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')`);
    expect(await col('SELECT k::text FROM o')).toEqual(['7', '4000000000']);
    await expect(c.query('CREATE TABLE j (k JSON PRIMARY KEY)')).rejects.toMatchObject({ code: '42704', message: 'data type json has no default operator class for access method "btree"' });
  });

  it('jsonb keys: PostgreSQL\'s jsonb order, equal documents conflict, each value shown as written', async () => {
    await c.query('CREATE TABLE jb (k JSONB PRIMARY KEY, n INT)');
    const docs = ['{"b": 1, "a": [1, 2]}', '[]', '"str"', '1.50', 'null', 'true', '[1, 2]', '[3]', '{}', '{"a": 1}', '2', '"abc"', 'false'];
    for (const [i, d] of docs.entries()) await c.query('INSERT INTO jb VALUES ($1::jsonb, $2)', [d, i]);
    // PostgreSQL 15: SELECT k FROM jb ORDER BY k
    expect(await col('SELECT k::text FROM jb')).toEqual(['[]', 'null', '"abc"', '"str"', '1.50', '2', 'false', 'true', '[3]', '[1, 2]', '{}', '{"a": 1}', '{"a": [1, 2], "b": 1}']);
    await expect(c.query(`INSERT INTO jb VALUES ('{"a": 1.0}', 99)`)).rejects.toMatchObject({ code: '23505' });
    expect(await col(`SELECT n FROM jb WHERE k = '{"a": [1, 2], "b": 1}'`)).toEqual([0]);
    expect(await col(`SELECT k::text FROM jb WHERE k > '[]' AND k < '[3]'`)).toEqual(['null', '"abc"', '"str"', '1.50', '2', 'false', 'true']);
    await c.query('CREATE INDEX jb_n ON jb (n) STORING (k)');
    expect(await col('SELECT k::text FROM jb WHERE n = 3')).toEqual(['1.50']);
  });
});
