// HLC invariants (Kulkarni et al. 2014, §3; DESIGN.md §3 "Time").
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  Clock, ClockOffsetError, ManualPhysical, compareTimestamps, formatTimestamp, ts, tsNext, tsPrev,
} from '../src/util/hlc.js';

describe('Timestamp', () => {
  it('orders by wall then logical, and next/prev are inverse neighbours', () => {
    fc.assert(fc.property(fc.nat({ max: 2 ** 52 }), fc.nat({ max: 0xffffffff }), (wall, logical) => {
      const t = ts(wall + 1, logical);
      expect(compareTimestamps(tsNext(t), t)).toBe(1);
      expect(compareTimestamps(tsPrev(t), t)).toBe(-1);
      expect(tsPrev(tsNext(t))).toEqual(t);
      expect(tsNext(tsPrev(t))).toEqual(t);
    }));
  });
  it('formats as seconds.micros,logical', () => {
    expect(formatTimestamp(ts(1_700_000_000_000_001, 0))).toBe('1700000000.000001,0');
    expect(formatTimestamp(ts(5, 3))).toBe('0.000005,3');
  });
});

describe('Clock', () => {
  it('now() is strictly monotonic while the physical clock jumps backwards', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: -5_000_000, max: 5_000_000 }), { maxLength: 200 }), (jumps) => {
      const phys = new ManualPhysical(1_000_000_000_000);
      const clock = new Clock(phys.read, 500_000);
      let prev = clock.now();
      for (const j of jumps) {
        phys.advance(j);
        const cur = clock.now();
        expect(compareTimestamps(cur, prev)).toBe(1);
        prev = cur;
      }
    }));
  });

  it('update() never moves the clock backwards, and the next now() is above the remote', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('jump' as const), by: fc.integer({ min: -2_000_000, max: 2_000_000 }) }),
      fc.record({ kind: fc.constant('update' as const), delta: fc.integer({ min: -2_000_000, max: 400_000 }), logical: fc.nat({ max: 10 }) }),
    );
    fc.assert(fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
      const phys = new ManualPhysical(1_000_000_000_000);
      const clock = new Clock(phys.read, 500_000);
      for (const o of ops) {
        const before = clock.peek();
        if (o.kind === 'jump') {
          phys.advance(o.by);
          continue;
        }
        const remote = ts(phys.micros + o.delta, o.logical);
        clock.update(remote);
        expect(compareTimestamps(clock.peek(), before)).toBeGreaterThanOrEqual(0);
        expect(compareTimestamps(clock.now(), remote)).toBe(1);
      }
    }));
  });

  it('rejects a remote clock beyond the max offset and stays unchanged', () => {
    const phys = new ManualPhysical(10_000_000);
    const clock = new Clock(phys.read, 500_000);
    const before = clock.now();
    expect(() => clock.update(ts(10_500_001, 0))).toThrow(ClockOffsetError);
    expect(clock.peek()).toEqual(before);
    clock.update(ts(10_500_000, 0)); // exactly at the bound is accepted
    expect(clock.peek()).toEqual(ts(10_500_000, 0));
  });
});
