// Order-preserving tuple encoding (storage/encoding/tuple.ts), issue 2 "Foundation":
// golden hex vectors, round trip, and the order property
// sign(compareBytes(enc(a), enc(b))) === sign(compare(a, b)) over 10,000 cases per type and direction.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import assert from 'node:assert/strict';
import {
  KeyReader,
  KeyWriter,
  compareBytes,
  decodeInt,
  decodeIntBig,
  decodeValue,
  decodeValues,
  encodeDatum,
  encodeTuple,
  keyNext,
  peekLength,
  prefixEnd,
  skipValues,
} from '../../storage/encoding/index.js';
import type { Direction, KeyDatum, KeyValue, ValueKind } from '../../storage/encoding/index.js';
import { CorruptionError } from '../../src/util/errors.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const RUNS = 10_000;

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const sign = (n: number): number => (n < 0 ? -1 : n > 0 ? 1 : 0);

// ---- The simple reference order the encoding must agree with ----------------

function compareCodePoints(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0) as number);
  const y = Array.from(b, (c) => c.codePointAt(0) as number);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return (x[i] as number) < (y[i] as number) ? -1 : 1;
  }
  return x.length - y.length;
}

function compareByteArrays(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  }
  return a.length - b.length;
}

/** Ascending comparison of two values of the same kind (or NULL), as tuple.ts's header defines it. */
function compareDatums(a: KeyDatum, b: KeyDatum): number {
  if (a.kind === 'null' || b.kind === 'null') return (a.kind === 'null' ? 0 : 1) - (b.kind === 'null' ? 0 : 1);
  switch (a.kind) {
    case 'int': {
      const x = BigInt(a.value);
      const y = BigInt(b.value as number | bigint);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 'float': {
      const x = a.value;
      const y = b.value as number;
      if (Number.isNaN(x) || Number.isNaN(y)) return (Number.isNaN(x) ? 0 : 1) - (Number.isNaN(y) ? 0 : 1);
      return x < y ? -1 : x > y ? 1 : 0; // −0 === +0
    }
    case 'bool':
      return Number(a.value) - Number(b.value as boolean);
    case 'bytes':
      return compareByteArrays(a.value, b.value as Uint8Array);
    case 'string':
      return compareCodePoints(a.value, b.value as string);
  }
}

function compareTuples(a: readonly KeyDatum[], b: readonly KeyDatum[], dirs: readonly Direction[]): number {
  for (let i = 0; i < a.length; i++) {
    const c = compareDatums(a[i] as KeyDatum, b[i] as KeyDatum);
    if (c !== 0) return dirs[i] === 'desc' ? -c : c;
  }
  return 0;
}

/** What decoding `d` must give back. */
function expectedValue(d: KeyDatum): KeyValue {
  switch (d.kind) {
    case 'null':
      return null;
    case 'int': {
      const v = BigInt(d.value);
      return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    }
    case 'float':
      return d.value === 0 ? 0 : d.value; // −0 decodes as +0
    case 'bool':
      return d.value;
    case 'bytes':
      return Buffer.from(d.value);
    case 'string':
      return d.value;
  }
}

// ---- A simple reference encoder, written straight from tuple.ts's header ----

function simpleEncode(d: KeyDatum, dir: Direction): Buffer {
  const desc = dir === 'desc';
  const flip = (bytes: number[]): number[] => bytes.map((x) => 255 - x);
  switch (d.kind) {
    case 'null':
      return Buffer.from([desc ? 0xff : 0x00]);
    case 'bool':
      return Buffer.from([desc ? (d.value ? 0x0c : 0x0d) : d.value ? 0x0b : 0x0a]);
    case 'int': {
      const [zero, small] = desc ? [0x28n, 79n] : [0x88n, 109n];
      const w = desc ? -BigInt(d.value) - 1n : BigInt(d.value);
      if (w >= 0n && w <= small) return Buffer.from([Number(zero + w)]);
      let n = 1n;
      if (w < 0n) while (w < -(256n ** n)) n++;
      else while (w >= 256n ** n) n++;
      const u = w < 0n ? w + 256n ** n : w;
      const body = Array.from({ length: Number(n) }, (_, k) => Number((u >> (8n * (n - 1n - BigInt(k)))) & 0xffn));
      return Buffer.from([Number(w < 0n ? zero - n : zero + small + n), ...body]);
    }
    case 'float': {
      const v = d.value;
      if (Number.isNaN(v)) return Buffer.from([desc ? 0x09 : 0x02]);
      if (v === 0) return Buffer.from([desc ? 0x07 : 0x04]);
      const bits = Buffer.alloc(8);
      bits.writeDoubleBE(Math.abs(v));
      const tag = desc ? (v < 0 ? 0x08 : 0x06) : v < 0 ? 0x03 : 0x05;
      return Buffer.from([tag, ...(v < 0 !== desc ? flip([...bits]) : [...bits])]);
    }
    case 'bytes':
    case 'string': {
      const raw = d.kind === 'string' ? [...Buffer.from(d.value, 'utf8')] : [...d.value];
      const body = [...raw.flatMap((x) => (x === 0 ? [0x00, 0xff] : [x])), 0x00, 0x01];
      const tag = (d.kind === 'string' ? 0x14 : 0x12) + (desc ? 1 : 0);
      return Buffer.from([tag, ...(desc ? flip(body) : body)]);
    }
  }
}

// ---- Generators --------------------------------------------------------------

const intEdge = fc.constantFrom<number | bigint>(
  0, 1, -1, 109, 110, -256, -257, 255, 256, 65535, 65536,
  Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2n ** 53n, -(2n ** 53n), INT64_MIN, INT64_MAX,
);
const intArb: fc.Arbitrary<number | bigint> = fc.oneof(
  intEdge,
  fc.integer({ min: -300, max: 300 }),
  fc.maxSafeInteger(),
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.integer({ min: 0, max: 62 }).chain((e) => fc.bigInt({ min: -(2n ** BigInt(e)) - 2n, max: 2n ** BigInt(e) + 2n })),
);
const floatArb = fc.oneof(
  fc.double(),
  fc.constantFrom(0, -0, NaN, Infinity, -Infinity, Number.MIN_VALUE, -Number.MIN_VALUE, Number.MAX_VALUE),
);
// Byte strings rich in the escape-relevant bytes 0x00, 0x01, 0xfe and 0xff.
const bytesArb = fc.uint8Array({ maxLength: 24 }).chain((b) =>
  fc.constantFrom(b, b.map((x) => [0x00, 0x01, 0xfe, 0xff, x][x % 5] as number)),
);
const stringArb = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\u0001', 'a', '\u00ff', '\uffff', '\u{10000}', '\ue000'), maxLength: 12 }),
  fc.string({ maxLength: 60 }),
);

const datumArb: Record<Exclude<ValueKind, 'null'>, fc.Arbitrary<KeyDatum>> = {
  int: intArb.map((value) => ({ kind: 'int', value })),
  float: floatArb.map((value) => ({ kind: 'float', value })),
  bool: fc.boolean().map((value) => ({ kind: 'bool', value })),
  bytes: bytesArb.map((value) => ({ kind: 'bytes', value })),
  string: stringArb.map((value) => ({ kind: 'string', value })),
};
const NULL: KeyDatum = { kind: 'null' };
/** Mostly values of the kind, sometimes NULL. */
const nullable = (arb: fc.Arbitrary<KeyDatum>): fc.Arbitrary<KeyDatum> =>
  fc.oneof({ arbitrary: arb, weight: 9 }, { arbitrary: fc.constant(NULL), weight: 1 });

interface Column {
  readonly kind: keyof typeof datumArb;
  readonly dir: Direction;
}

/** A schema of 1..maxCols columns, two rows of it, and a column count in [minCount, columns]. */
function schemaAndRows(maxCols: number, minCount: number): fc.Arbitrary<[Column[], KeyDatum[], KeyDatum[], number]> {
  const kinds = Object.keys(datumArb) as (keyof typeof datumArb)[];
  const column = fc.record({ kind: fc.constantFrom(...kinds), dir: fc.constantFrom<Direction>('asc', 'desc') });
  return fc.array(column, { minLength: 1, maxLength: maxCols }).chain((cols) => {
    const row = fc.tuple(...cols.map((c) => nullable(datumArb[c.kind])));
    return fc.tuple(fc.constant(cols), row, row, fc.integer({ min: minCount, max: cols.length }));
  });
}

// ---- Golden vectors ------------------------------------------------------------

const i = (value: number | bigint): KeyDatum => ({ kind: 'int', value });
const f = (value: number): KeyDatum => ({ kind: 'float', value });
const s = (value: string): KeyDatum => ({ kind: 'string', value });
const by = (h: string): KeyDatum => ({ kind: 'bytes', value: Buffer.from(h, 'hex') });
const b = (value: boolean): KeyDatum => ({ kind: 'bool', value });

// [value, ascending hex, descending hex]
const GOLDEN: readonly [string, KeyDatum, string, string][] = [
  ['NULL', NULL, '00', 'ff'],
  ['int 0', i(0), '88', '27ff'],
  ['int 1', i(1), '89', '27fe'],
  ['int -1', i(-1), '87ff', '28'],
  ['int 109 (largest one-byte)', i(109), 'f5', '2792'],
  ['int 110', i(110), 'f66e', '2791'],
  ['int 1000', i(1000), 'f703e8', '26fc17'],
  ['int -256', i(-256), '8700', '78ff'],
  ['int -257', i(-257), '86feff', '790100'],
  ['int MAX_SAFE', i(Number.MAX_SAFE_INTEGER), 'fc1fffffffffffff', '21e0000000000000'],
  ['int MIN_SAFE', i(Number.MIN_SAFE_INTEGER), '81e0000000000001', '7e1ffffffffffffe'],
  ['int64 max', i(INT64_MAX), 'fd7fffffffffffffff', '208000000000000000'],
  ['int64 min', i(INT64_MIN), '808000000000000000', '7f7fffffffffffffff'],
  ['float +0', f(0), '04', '07'],
  ['float -0', f(-0), '04', '07'],
  ['float 1.5', f(1.5), '053ff8000000000000', '06c007ffffffffffff'],
  ['float -1.5', f(-1.5), '03c007ffffffffffff', '083ff8000000000000'],
  ['float +Inf', f(Infinity), '057ff0000000000000', '06800fffffffffffff'],
  ['float -Inf', f(-Infinity), '03800fffffffffffff', '087ff0000000000000'],
  ['float NaN', f(NaN), '02', '09'],
  ['float smallest subnormal', f(5e-324), '050000000000000001', '06fffffffffffffffe'],
  ['false', b(false), '0a', '0d'],
  ['true', b(true), '0b', '0c'],
  ['empty string', s(''), '140001', '15fffe'],
  ['string "a\\x00b"', s('a\u0000b'), '146100ff620001', '159eff009dfffe'],
  ['string "héllo"', s('héllo'), '1468c3a96c6c6f0001', '15973c56939390fffe'],
  ['string U+1F600', s('\u{1F600}'), '14f09f98800001', '150f60677ffffe'],
  ['string U+00FF (UTF-8 has no 0xFF byte)', s('\u00ff'), '14c3bf0001', '153c40fffe'],
  ['string U+FFFF', s('\uffff'), '14efbfbf0001', '15104040fffe'],
  ['string of NULs', s('\u0000\u0000'), '1400ff00ff0001', '15ff00ff00fffe'],
  ['empty bytes', by(''), '120001', '13fffe'],
  ['bytes 00 ff', by('00ff'), '1200ffff0001', '13ff0000fffe'],
  ['bytes ff 00 01', by('ff0001'), '12ff00ff010001', '1300ff00fefffe'],
  ['bytes ff', by('ff'), '12ff0001', '1300fffe'],
];

describe('tuple encoding: golden vectors', () => {
  for (const [name, d, asc, desc] of GOLDEN) {
    it(`${name}: asc ${asc}, desc ${desc}`, () => {
      expect(hex(encodeDatum(d, 'asc'))).toBe(asc);
      expect(hex(encodeDatum(d, 'desc'))).toBe(desc);
      for (const [dir, h] of [['asc', asc], ['desc', desc]] as const) {
        const got = decodeValue(Buffer.from(h, 'hex'));
        expect(got.kind).toBe(d.kind);
        expect(got.dir).toBe(dir);
        expect(got.value).toEqual(expectedValue(d));
        expect(got.next).toBe(h.length / 2);
        expect(peekLength(Buffer.from(h, 'hex'), 0)).toBe(h.length / 2);
      }
    });
  }

  it('a tuple is the concatenation of its values', () => {
    const t = encodeTuple([i(52), i(1), s('user42'), i(7), NULL], ['asc', 'asc', 'asc', 'desc', 'asc']);
    expect(hex(t)).toBe('bc8914' + Buffer.from('user42').toString('hex') + '0001' + '27f8' + '00');
    expect(decodeValues(t).map((v) => v.value)).toEqual([52, 1, 'user42', 7, null]);
  });
});

describe('tuple encoding: round trip, order and the reference encoder, 10,000 cases per type and direction', () => {
  for (const kind of Object.keys(datumArb) as (keyof typeof datumArb)[]) {
    for (const dir of ['asc', 'desc'] as const) {
      it(`${kind} ${dir}`, () => {
        const arb = nullable(datumArb[kind]);
        fc.assert(
          fc.property(arb, arb, (x, y) => {
            // node:assert rather than expect() in the 10,000-run loops: the same checks, a tenth of the cost.
            const ex = encodeDatum(x, dir);
            const ey = encodeDatum(y, dir);
            const c = compareDatums(x, y);
            assert.equal(sign(compareBytes(ex, ey)), sign(dir === 'desc' ? -c : c), 'order');
            assert.equal(hex(ex), hex(simpleEncode(x, dir)), 'reference encoder');
            const got = decodeValue(ex);
            assert.deepEqual(got, { kind: x.kind, dir, value: expectedValue(x), next: ex.length });
            assert.equal(peekLength(ex, 0), ex.length, 'peekLength');
          }),
          { numRuns: RUNS },
        );
      });
    }
  }

  it('mixed tuples of several columns compare column by column, each in its direction', () => {
    fc.assert(
      // Rows sharing a prefix test the later columns too.
      fc.property(schemaAndRows(4, 0), ([cols, a, b0, shared]) => {
        const bRow = [...a.slice(0, shared), ...b0.slice(shared)];
        const dirs = cols.map((c) => c.dir);
        const ea = encodeTuple(a, dirs);
        const eb = encodeTuple(bRow, dirs);
        assert.equal(sign(compareBytes(ea, eb)), sign(compareTuples(a, bRow, dirs)), 'tuple order');
        assert.deepEqual(decodeValues(ea).map((v) => v.value), a.map(expectedValue));
        assert.equal(skipValues(ea, 0, cols.length), ea.length, 'skipValues');
      }),
      { numRuns: RUNS },
    );
  });
});

describe('tuple encoding: prefix spans', () => {
  const TABLE_INDEX = encodeTuple([i(52), i(1)]);
  it('[enc(p), prefixEnd(enc(p))) holds exactly the tuples whose first columns are p (index spans)', () => {
    fc.assert(
      fc.property(schemaAndRows(3, 1), ([cs, t, u, k]) => {
        const dirs = cs.map((c) => c.dir);
        // Keys carry a table/index prefix; without one, a key made only of 0xFF bytes (a descending
        // NULL) would have no prefix end at all (see prefixEnd).
        const key = (row: readonly KeyDatum[]): Buffer => Buffer.concat([TABLE_INDEX, encodeTuple(row, dirs)]);
        const start = key(t.slice(0, k));
        const end = prefixEnd(start);
        const within = (x: Buffer): boolean => compareBytes(x, start) >= 0 && compareBytes(x, end) < 0;
        assert.ok(within(key(t)), 'a tuple lies in its own prefix span');
        const samePrefix = t.slice(0, k).every((d, j) => compareDatums(d, u[j] as KeyDatum) === 0);
        assert.equal(within(key(u)), samePrefix, 'another tuple lies in the span iff it shares the prefix');
      }),
      { numRuns: 5000 },
    );
  });
});

describe('tuple encoding: ints', () => {
  it('decodeInt returns a number when safe and a bigint beyond; decodeIntBig always a bigint', () => {
    expect(decodeInt(encodeDatum(i(2n ** 53n - 1n))).value).toBe(Number.MAX_SAFE_INTEGER);
    expect(decodeInt(encodeDatum(i(2n ** 53n))).value).toBe(2n ** 53n);
    expect(decodeInt(encodeDatum(i(-(2n ** 53n)), 'desc')).value).toBe(-(2n ** 53n));
    expect(decodeInt(encodeDatum(i(Number.MAX_SAFE_INTEGER), 'desc')).value).toBe(Number.MAX_SAFE_INTEGER);
    expect(decodeIntBig(encodeDatum(i(5))).value).toBe(5n);
    expect(decodeInt(encodeDatum(NULL))).toEqual({ value: null, next: 1 });
  });

  it('a number and the equal bigint encode identically', () => {
    fc.assert(
      fc.property(fc.maxSafeInteger(), fc.constantFrom<Direction>('asc', 'desc'), (v, dir) => {
        expect(hex(encodeDatum(i(v), dir))).toBe(hex(encodeDatum(i(BigInt(v)), dir)));
      }),
      { numRuns: 2000 },
    );
  });

  it('rejects unsafe numbers and values outside int64 as bugs (assert)', () => {
    expect(() => encodeDatum(i(2 ** 60))).toThrow(/not a safe integer/);
    expect(() => encodeDatum(i(1.5))).toThrow(/not a safe integer/);
    expect(() => encodeDatum(i(2n ** 63n))).toThrow(/outside int64/);
  });
});

describe('KeyReader', () => {
  it('reads typed columns, NULLs as null, and reports kind and direction', () => {
    const key = encodeTuple([i(52), s('k'), NULL, f(2.5), b(true), by('00')], ['asc', 'desc', 'asc', 'desc', 'asc', 'desc']);
    const r = new KeyReader(key);
    expect(r.readInt()).toBe(52);
    expect(r.peekKind()).toBe('string');
    expect(r.peekDirection()).toBe('desc');
    expect(r.readString()).toBe('k');
    expect(r.readInt()).toBe(null);
    expect(r.readFloat()).toBe(2.5);
    expect(r.readNull()).toBe(false);
    expect(r.readBool()).toBe(true);
    expect(r.readBytes()).toEqual(Buffer.from([0]));
    expect(r.done).toBe(true);
  });

  it('skip() steps over values without decoding them', () => {
    const key = encodeTuple([s('a\u0000'), i(-1000), f(-1)], ['desc', 'desc', 'asc']);
    const r = new KeyReader(key);
    r.skip().skip();
    expect(r.readFloat()).toBe(-1);
    expect(skipValues(key, 0, 2)).toBe(key.length - 9);
  });

  it('returns an escape-free ascending bytes value as a view of the key', () => {
    const key = encodeDatum(by('616263'));
    const v = new KeyReader(key).readBytes() as Buffer;
    expect(v.buffer).toBe(key.buffer);
    expect(v.toString()).toBe('abc');
  });
});

describe('corrupt and truncated keys raise CorruptionError naming the key', () => {
  const cases: [string, string][] = [
    ['empty', ''],
    ['unknown tag', '16'],
    ['not-null marker is not a value', '01'],
    ['truncated int', 'f703'],
    ['truncated negative int', '80ffff'],
    ['non-minimal int (fits the tag)', 'f605'],
    ['non-minimal int (leading zero)', 'f70005'],
    ['non-minimal negative int', '86ff00'],
    ['int below int64 min', '800000000000000000'],
    ['int above int64 max', 'fd8000000000000000'],
    ['descending int outside int64', '207fffffffffffffff'],
    ['truncated float', '053ff8'],
    ['float with a zero magnitude', '050000000000000000'],
    ['float NaN bit pattern', '057ff8000000000000'],
    ['unterminated string', '146162'],
    ['bad escape in bytes', '12610002'],
    ['escape cut off at the end', '126100'],
    ['bad escape in descending bytes', '13ff05'],
    ['invalid UTF-8 in a string', '14c3280001'],
    ['invalid UTF-8 in an escaped string', '1400ffc3280001'],
  ];
  for (const [name, h] of cases) {
    it(name, () => {
      const decode = (): unknown => decodeValue(Buffer.from(h, 'hex'));
      expect(decode).toThrow(CorruptionError);
      expect(decode).toThrow(expect.objectContaining({ code: 'storage.corruption' }));
      expect(decode).toThrow(`corrupt key ${h} `);
    });
  }

  it('peekLength rejects the same shapes', () => {
    for (const h of ['', '16', 'f703', '146162', '12610002', '053ff8']) {
      expect(() => peekLength(Buffer.from(h, 'hex'), 0)).toThrow(CorruptionError);
    }
  });

  it('typed reads reject a value of another kind', () => {
    expect(() => new KeyReader(encodeDatum(s('x'))).readInt()).toThrow(/expected int/);
    expect(() => new KeyReader(encodeDatum(i(1))).readBytes()).toThrow(CorruptionError);
  });

  it('arbitrary bytes either fail with CorruptionError or are the canonical encoding of what they decode to', () => {
    // Biased towards tags and the escape bytes so that many inputs decode.
    const byte = fc.oneof(
      fc.constantFrom(0x00, 0x01, 0x02, 0x03, 0x05, 0x06, 0x08, 0x09, 0x0b, 0x0c, 0x12, 0x13, 0x14, 0x15, 0x27, 0x28, 0x87, 0x88, 0xf6, 0xfd, 0xfe, 0xff),
      fc.integer({ min: 0, max: 255 }),
    );
    let decoded = 0;
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 14 }), (bytes) => {
        const key = Buffer.from(bytes);
        let values;
        try {
          values = decodeValues(key);
        } catch (e) {
          expect(e).toBeInstanceOf(CorruptionError);
          return;
        }
        decoded++;
        const w = new KeyWriter();
        for (const v of values) {
          const d = (v.kind === 'null' ? { kind: 'null' } : { kind: v.kind, value: v.value }) as KeyDatum;
          w.appendDatum(d, v.dir);
        }
        assert.equal(hex(w.finish()), hex(key), 're-encoding');
      }),
      { numRuns: RUNS, seed: Number(process.env['ENCODING_FUZZ_SEED'] ?? 20261130) },
    );
    expect(decoded).toBeGreaterThan(RUNS / 10);
  });

  it('no truncation of a valid tuple decodes silently past its end', () => {
    fc.assert(
      fc.property(fc.array(nullable(datumArb.string), { minLength: 1, maxLength: 3 }), fc.nat(), (row, cut) => {
        const key = encodeTuple(row);
        const at = cut % key.length;
        // A cut at a value boundary is a shorter valid tuple; anywhere else is corruption.
        const boundaries = new Set<number>([0]);
        for (let o = 0; o < key.length; ) boundaries.add((o += peekLength(key, o)));
        const short = key.subarray(0, at);
        if (boundaries.has(at)) expect(decodeValues(short)).toHaveLength([...boundaries].filter((x) => x > 0 && x <= at).length);
        else expect(() => decodeValues(short)).toThrow(CorruptionError);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('KeyWriter', () => {
  it('finished keys stay intact while later keys grow past the slab', () => {
    const w = new KeyWriter(32);
    const keys: Buffer[] = [];
    const want: string[] = [];
    for (let n = 0; n < 200; n++) {
      w.appendInt(n).appendString('x'.repeat(n % 50)).appendFloat(n / 3, 'desc');
      keys.push(w.finish());
      want.push(hex(encodeTuple([i(n), s('x'.repeat(n % 50)), f(n / 3)], ['asc', 'asc', 'desc'])));
    }
    expect(keys.map(hex)).toEqual(want);
  });

  it('any slab size and any mix of keys: every finished key equals its one-off encoding, unchanged by later keys', () => {
    // STYLE.md §9: randomize internal knobs (here the slab size) so correctness never depends on one value.
    const rows = fc.array(fc.tuple(fc.array(nullable(datumArb.string), { maxLength: 3 }), nullable(datumArb.int), nullable(datumArb.bytes)), {
      maxLength: 40,
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 300 }), rows, (slab, rs) => {
        const w = new KeyWriter(slab);
        const keys: Buffer[] = [];
        const want: string[] = [];
        for (const [strs, n, b] of rs) {
          const row = [...strs, n, b];
          for (const d of row) w.appendDatum(d, 'desc');
          keys.push(w.finish());
          want.push(hex(encodeTuple(row, row.map(() => 'desc'))));
        }
        assert.deepEqual(keys.map(hex), want);
      }),
      { numRuns: 1000 },
    );
  });

  it('reset() drops the key being built; appendRaw/appendUint64 write raw bytes', () => {
    const w = new KeyWriter();
    w.appendInt(5).reset();
    expect(w.length).toBe(0);
    expect(hex(w.appendRaw(Buffer.from([1, 2])).appendUint64(2 ** 40 + 3).finish())).toBe('01020000010000000003');
  });

  it('long and non-ASCII strings and long byte arrays take the native path with the same result', () => {
    const long = 'ab\u0000'.repeat(40) + 'é\u0000';
    const key = encodeDatum(s(long), 'desc');
    expect(decodeValue(key).value).toBe(long);
    const bytes = Buffer.alloc(100, 0);
    expect(decodeValue(encodeDatum({ kind: 'bytes', value: bytes })).value).toEqual(bytes);
  });
});

describe('key helpers', () => {
  it('keyNext appends 0x00; prefixEnd bounds every extension', () => {
    expect(hex(keyNext(Buffer.from('61', 'hex')))).toBe('6100');
    expect(hex(prefixEnd(Buffer.from('61ff', 'hex')))).toBe('62');
    expect(hex(prefixEnd(Buffer.from('0102', 'hex')))).toBe('0103');
    expect(hex(prefixEnd(Buffer.from('ffff', 'hex')))).toBe('ffff');
    expect(hex(prefixEnd(Buffer.alloc(0)))).toBe('');
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 6 }), fc.uint8Array({ maxLength: 6 }), (p, ext) => {
        fc.pre(p.some((x) => x !== 0xff));
        const k = Buffer.concat([p, ext]);
        expect(compareBytes(p, k)).toBeLessThanOrEqual(0);
        expect(compareBytes(k, prefixEnd(p))).toBe(-1);
        expect(compareBytes(k, keyNext(k))).toBe(-1);
      }),
      { numRuns: 2000 },
    );
  });
});
