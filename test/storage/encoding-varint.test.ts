// Value varints (storage/encoding/varint.ts), issue 2 "Foundation": golden bytes
// (protobuf's base-128 layout and zig-zag mapping), round trips over the full
// 64-bit range, the number fast paths against the bigint paths, and corruption.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
// node:assert inside the many-run properties: the same checks as expect(), at a fraction of the cost.
import assert from 'node:assert/strict';
import {
  KeyReader,
  KeyWriter,
  getUvarint,
  getUvarintBig,
  getVarint,
  getVarintBig,
  putUvarint,
  putUvarintBig,
  putVarint,
  putVarintBig,
  uvarintSize,
  varintSize,
} from '../../storage/encoding/index.js';
import { CorruptionError } from '../../src/util/errors.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const RUNS = 10_000;

function enc(put: (buf: Uint8Array, off: number) => number): string {
  const buf = Buffer.alloc(12);
  return hex(buf.subarray(0, put(buf, 0)));
}

describe('varint golden bytes (protobuf layout)', () => {
  const unsigned: [number | bigint, string][] = [
    [0, '00'],
    [1, '01'],
    [127, '7f'],
    [128, '8001'],
    [300, 'ac02'],
    [2 ** 31, '8080808008'],
    [Number.MAX_SAFE_INTEGER, 'ffffffffffffff0f'],
    [2n ** 64n - 1n, 'ffffffffffffffffff01'],
  ];
  for (const [v, h] of unsigned) {
    it(`uvarint ${v} = ${h}`, () => {
      const got = typeof v === 'number' ? enc((b, o) => putUvarint(b, o, v)) : enc((b, o) => putUvarintBig(b, o, v));
      expect(got).toBe(h);
      expect(getUvarintBig(Buffer.from(h, 'hex'), 0)).toEqual({ value: BigInt(v), next: h.length / 2 });
      if (typeof v === 'number') expect(uvarintSize(v)).toBe(h.length / 2);
    });
  }

  const signed: [number | bigint, string][] = [
    [0, '00'],
    [-1, '01'],
    [1, '02'],
    [-2, '03'],
    [-64, '7f'],
    [64, '8001'],
    [Number.MAX_SAFE_INTEGER, 'feffffffffffff1f'],
    [Number.MIN_SAFE_INTEGER, 'fdffffffffffff1f'],
    [-(2n ** 63n), 'ffffffffffffffffff01'],
    [2n ** 63n - 1n, 'feffffffffffffffff01'],
  ];
  for (const [v, h] of signed) {
    it(`varint ${v} = ${h}`, () => {
      const got = typeof v === 'number' ? enc((b, o) => putVarint(b, o, v)) : enc((b, o) => putVarintBig(b, o, v));
      expect(got).toBe(h);
      expect(getVarintBig(Buffer.from(h, 'hex'), 0)).toEqual({ value: BigInt(v), next: h.length / 2 });
      if (typeof v === 'number') {
        expect(getVarint(Buffer.from(h, 'hex'), 0)).toEqual({ value: v, next: h.length / 2 });
        expect(varintSize(v)).toBe(h.length / 2);
      }
    });
  }
});

describe('varint round trips, 10,000 cases each', () => {
  interface Codec {
    readonly name: string;
    readonly numbers: fc.Arbitrary<number>;
    readonly bigints: fc.Arbitrary<bigint>;
    readonly put: (b: Uint8Array, o: number, v: number) => number;
    readonly putBig: (b: Uint8Array, o: number, v: bigint) => number;
    readonly get: (b: Uint8Array, o: number) => { value: number; next: number };
    readonly getBig: (b: Uint8Array, o: number) => { value: bigint; next: number };
    readonly size: (v: number) => number;
  }
  const codecs: Codec[] = [
    {
      name: 'unsigned',
      numbers: fc.oneof(fc.nat(300), fc.nat(), fc.maxSafeNat()),
      bigints: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      put: putUvarint,
      putBig: putUvarintBig,
      get: getUvarint,
      getBig: getUvarintBig,
      size: uvarintSize,
    },
    {
      name: 'signed',
      numbers: fc.oneof(fc.integer({ min: -300, max: 300 }), fc.integer(), fc.maxSafeInteger()),
      bigints: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      put: putVarint,
      putBig: putVarintBig,
      get: getVarint,
      getBig: getVarintBig,
      size: varintSize,
    },
  ];
  for (const c of codecs) {
    it(`${c.name} numbers: the fast path agrees with the bigint path`, () => {
      fc.assert(
        fc.property(c.numbers, (v) => {
          const a = enc((b, o) => c.put(b, o, v));
          assert.equal(a, enc((b, o) => c.putBig(b, o, BigInt(v))));
          assert.deepEqual(c.get(Buffer.from(a, 'hex'), 0), { value: v, next: a.length / 2 });
          assert.equal(c.size(v), a.length / 2);
        }),
        { numRuns: RUNS },
      );
    });

    it(`${c.name} bigints over the full 64-bit range`, () => {
      fc.assert(
        fc.property(c.bigints, (v) => {
          const a = enc((b, o) => c.putBig(b, o, v));
          assert.deepEqual(c.getBig(Buffer.from(a, 'hex'), 0), { value: v, next: a.length / 2 });
        }),
        { numRuns: RUNS },
      );
    });
  }

  it('KeyWriter.appendUvarint/appendVarint and KeyReader.readUvarint/readVarint', () => {
    const w = new KeyWriter();
    const key = w.appendUvarint(300).appendVarint(-3).appendUvarint(2n ** 60n).appendVarint(-(2n ** 62n)).finish();
    expect(hex(key)).toBe('ac0205' + enc((b, o) => putUvarintBig(b, o, 2n ** 60n)) + enc((b, o) => putVarintBig(b, o, -(2n ** 62n))));
    const r = new KeyReader(key);
    expect(r.readUvarint()).toBe(300);
    expect(r.readVarint()).toBe(-3);
    expect(r.readUvarintBig()).toBe(2n ** 60n);
    expect(r.readVarintBig()).toBe(-(2n ** 62n));
    expect(r.done).toBe(true);
  });
});

describe('varint corruption', () => {
  const bad: [string, string, (b: Buffer) => unknown][] = [
    ['empty', '', (b) => getUvarint(b, 0)],
    ['truncated', '8080', (b) => getUvarint(b, 0)],
    ['non-canonical trailing zero group', '8000', (b) => getUvarint(b, 0)],
    ['beyond 2^53 on the number path', '8080808080808080 10'.replace(' ', ''), (b) => getUvarint(b, 0)],
    ['longer than 10 bytes', 'ffffffffffffffffffff01', (b) => getUvarintBig(b, 0)],
    ['beyond uint64', 'ffffffffffffffffff02', (b) => getUvarintBig(b, 0)],
    ['signed beyond the safe range on the number path', 'ffffffffffffffffff01', (b) => getVarint(b, 0)],
    ['signed truncated', 'ff', (b) => getVarint(b, 0)],
    ['signed non-canonical', '8100', (b) => getVarint(b, 0)],
  ];
  for (const [name, h, fn] of bad) {
    it(name, () => {
      expect(() => fn(Buffer.from(h, 'hex'))).toThrow(CorruptionError);
    });
  }

  it('rejects out-of-domain inputs as bugs (assert)', () => {
    const b = Buffer.alloc(12);
    expect(() => putUvarint(b, 0, -1)).toThrow(/non-negative safe integer/);
    expect(() => putUvarint(b, 0, 2 ** 53)).toThrow(/non-negative safe integer/);
    expect(() => putVarint(b, 0, 0.5)).toThrow(/safe integer/);
    expect(() => putUvarintBig(b, 0, 2n ** 64n)).toThrow(/uint64/);
    expect(() => putVarintBig(b, 0, 2n ** 63n)).toThrow(/int64/);
  });
});
