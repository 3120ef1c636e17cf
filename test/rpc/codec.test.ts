// The binary codec under every RPC message (src/rpc/codec.ts): golden bytes,
// round trips over generated values, and bounds checks that never return garbage.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BufReader, BufWriter, RpcCodecError } from '../../src/rpc/codec.js';

function hex(w: BufWriter): string {
  return w.finish().toString('hex');
}

describe('BufWriter golden bytes', () => {
  it('writes fixed-width integers big-endian', () => {
    const w = new BufWriter(16);
    w.u8(0xab);
    w.u16(0x1234);
    w.u32(0xdeadbeef);
    w.u64(2 ** 53 - 1);
    expect(hex(w)).toBe('ab' + '1234' + 'deadbeef' + '001fffffffffffff');
  });

  it('writes LEB128 uvarints, low group first', () => {
    const cases: [number, string][] = [
      [0, '00'],
      [1, '01'],
      [127, '7f'],
      [128, '8001'],
      [300, 'ac02'],
      [2 ** 32, '8080808010'],
      [2 ** 53 - 1, 'ffffffffffffff0f'],
    ];
    for (const [v, want] of cases) {
      const w = new BufWriter();
      w.uvarint(v);
      expect(hex(w), String(v)).toBe(want);
    }
  });

  it('zig-zags signed varints', () => {
    const w = new BufWriter();
    for (const v of [0, -1, 1, -2, 2, -64, 64]) w.varint(v);
    expect(hex(w)).toBe('00' + '01' + '02' + '03' + '04' + '7f' + '8001');
  });

  it('writes strings, bytes and timestamps with a uvarint length', () => {
    const w = new BufWriter(1);
    w.string('hé');
    w.bytes(Buffer.from([1, 2]));
    w.timestamp({ wall: 300, logical: 2 });
    expect(hex(w)).toBe('0368c3a9' + '020102' + 'ac0202');
  });

  it('grows from a tiny buffer and is reusable after reset', () => {
    const w = new BufWriter(1);
    const big = Buffer.alloc(100_000, 7);
    w.bytes(big);
    expect(w.length).toBe(3 + 100_000);
    w.reset();
    w.u8(5);
    expect(hex(w)).toBe('05');
    const copy = w.copyOut();
    w.reset();
    w.u8(6);
    expect(copy.toString('hex')).toBe('05');
  });

  it('asserts on inputs no encoding can hold', () => {
    const w = new BufWriter();
    expect(() => w.uvarint(-1)).toThrow(/uvarint out of range/);
    expect(() => w.uvarint(2 ** 53)).toThrow(/uvarint out of range/);
    expect(() => w.uvarint(1.5)).toThrow(/uvarint out of range/);
    expect(() => w.u16(0x10000)).toThrow(/u16 out of range/);
    expect(() => w.u64(-1)).toThrow(/u64 out of range/);
    expect(() => w.varint(2 ** 52)).toThrow(/varint out of range/);
  });
});

describe('round trips (property)', () => {
  type Item =
    | { t: 'u8'; v: number }
    | { t: 'u16'; v: number }
    | { t: 'u32'; v: number }
    | { t: 'u64'; v: number }
    | { t: 'u64Big'; v: bigint }
    | { t: 'f64'; v: number }
    | { t: 'uvarint'; v: number }
    | { t: 'varint'; v: number }
    | { t: 'bool'; v: boolean }
    | { t: 'bytes'; v: Uint8Array }
    | { t: 'string'; v: string }
    | { t: 'timestamp'; v: { wall: number; logical: number } };

  const item: fc.Arbitrary<Item> = fc.oneof(
    fc.integer({ min: 0, max: 255 }).map((v) => ({ t: 'u8' as const, v })),
    fc.integer({ min: 0, max: 0xffff }).map((v) => ({ t: 'u16' as const, v })),
    fc.integer({ min: 0, max: 0xffffffff }).map((v) => ({ t: 'u32' as const, v })),
    fc.maxSafeNat().map((v) => ({ t: 'u64' as const, v })),
    fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((v) => ({ t: 'u64Big' as const, v })),
    fc.double().map((v) => ({ t: 'f64' as const, v })),
    fc.oneof(fc.maxSafeNat(), fc.nat(300)).map((v) => ({ t: 'uvarint' as const, v })),
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 }).chain((small) =>
      fc.constantFrom(small, small * 2 ** 20).map((v) => ({ t: 'varint' as const, v })),
    ),
    fc.boolean().map((v) => ({ t: 'bool' as const, v })),
    fc.uint8Array({ maxLength: 300 }).map((v) => ({ t: 'bytes' as const, v })),
    fc.string({ unit: 'grapheme', maxLength: 50 }).map((v) => ({ t: 'string' as const, v })),
    fc
      .record({ wall: fc.maxSafeNat(), logical: fc.integer({ min: 0, max: 0xffffffff }) })
      .map((v) => ({ t: 'timestamp' as const, v })),
  );

  function write(w: BufWriter, it: Item): void {
    switch (it.t) {
      case 'u8': return w.u8(it.v);
      case 'u16': return w.u16(it.v);
      case 'u32': return w.u32(it.v);
      case 'u64': return w.u64(it.v);
      case 'u64Big': return w.u64Big(it.v);
      case 'f64': return w.f64(it.v);
      case 'uvarint': return w.uvarint(it.v);
      case 'varint': return w.varint(it.v);
      case 'bool': return w.bool(it.v);
      case 'bytes': return w.bytes(it.v);
      case 'string': return w.string(it.v);
      case 'timestamp': return w.timestamp(it.v);
    }
  }

  function read(r: BufReader, t: Item['t']): unknown {
    switch (t) {
      case 'u8': return r.u8();
      case 'u16': return r.u16();
      case 'u32': return r.u32();
      case 'u64': return r.u64();
      case 'u64Big': return r.u64Big();
      case 'f64': return r.f64();
      case 'uvarint': return r.uvarint();
      case 'varint': return r.varint();
      case 'bool': return r.bool();
      case 'bytes': return new Uint8Array(r.bytes());
      case 'string': return r.string();
      case 'timestamp': return r.timestamp();
    }
  }

  it('every sequence of items reads back as written, consuming every byte', () => {
    fc.assert(
      fc.property(fc.array(item, { maxLength: 30 }), fc.integer({ min: 1, max: 64 }), (items, cap) => {
        const w = new BufWriter(cap);
        for (const it of items) write(w, it);
        const r = new BufReader(w.copyOut());
        for (const it of items) expect(read(r, it.t)).toEqual(it.v);
        r.expectEnd();
      }),
      { numRuns: 300 },
    );
  });

  it('every strict prefix of an encoding fails with RpcCodecError on the cut item, never garbage', () => {
    fc.assert(
      fc.property(fc.array(item, { minLength: 1, maxLength: 8 }), (items) => {
        const w = new BufWriter();
        const ends: number[] = [];
        for (const it of items) {
          write(w, it);
          ends.push(w.length);
        }
        const whole = w.copyOut();
        for (let cut = 0; cut < whole.length; cut++) {
          const r = new BufReader(whole, 0, cut);
          let i = 0;
          // Items that end at or before the cut read back; the one that straddles it throws.
          while (i < items.length && (ends[i] as number) <= cut) {
            expect(read(r, (items[i] as Item).t)).toEqual((items[i] as Item).v);
            i++;
          }
          if (i < items.length) expect(() => read(r, (items[i] as Item).t)).toThrow(RpcCodecError);
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe('BufReader rejects malformed input', () => {
  it('rejects varints longer than 8 bytes or above 2^53-1', () => {
    expect(() => new BufReader(Buffer.from('808080808080808001', 'hex')).uvarint()).toThrow(/longer than 8 bytes/);
    expect(() => new BufReader(Buffer.from('ffffffffffffff1f', 'hex')).uvarint()).toThrow(/exceeds 2\^53-1/);
    expect(() => new BufReader(Buffer.from('80', 'hex')).uvarint()).toThrow(/truncated uvarint/);
  });

  it('rejects u64 beyond a safe integer unless read as bigint', () => {
    const b = Buffer.from('0020000000000000', 'hex');
    expect(() => new BufReader(b).u64()).toThrow(RpcCodecError);
    expect(new BufReader(b).u64Big()).toBe(2n ** 53n);
  });

  it('rejects bools other than 0/1, lengths past the end, trailing bytes', () => {
    expect(() => new BufReader(Buffer.from([2])).bool()).toThrow(/neither 0 nor 1/);
    expect(() => new BufReader(Buffer.from([5, 1, 2])).bytes()).toThrow(/truncated bytes/);
    expect(() => new BufReader(Buffer.from([5, 0x61])).string()).toThrow(/truncated string/);
    const r = new BufReader(Buffer.from([1, 2]));
    r.u8();
    expect(() => r.expectEnd()).toThrow(/1 trailing bytes/);
    try {
      new BufReader(Buffer.alloc(3)).u32();
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(RpcCodecError);
      expect((e as RpcCodecError).code).toBe('rpc.codec');
    }
  });

  it('honours a sub-range of the source and reads bytes as views', () => {
    const src = Buffer.from([9, 2, 7, 8, 9]);
    const r = new BufReader(src, 1, 4);
    const v = r.bytes();
    expect([...v]).toEqual([7, 8]);
    src[2] = 1;
    expect(v[0]).toBe(1); // a view, not a copy
    expect(r.remaining).toBe(0);
    expect(() => r.u8()).toThrow(RpcCodecError);
  });
});
