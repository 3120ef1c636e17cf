import { describe, expect, it } from 'vitest';
import { Prng } from '../src/util/prng.js';

describe('Prng', () => {
  it('replays the same sequence from the same seed', () => {
    const a = new Prng(42), b = new Prng(42), c = new Prng(43);
    const sa = Array.from({ length: 100 }, () => a.nextUint32());
    const sb = Array.from({ length: 100 }, () => b.nextUint32());
    const sc = Array.from({ length: 100 }, () => c.nextUint32());
    expect(sa).toEqual(sb);
    expect(sa).not.toEqual(sc);
  });
  it('intn is in range and roughly uniform', () => {
    const p = new Prng(7);
    const counts = new Array(10).fill(0);
    for (let i = 0; i < 100_000; i++) counts[p.intn(10)]++;
    for (const c of counts) expect(Math.abs(c - 10_000)).toBeLessThan(600);
  });
});
