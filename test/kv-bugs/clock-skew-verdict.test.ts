/**
 * Issue 4/9 finding 3: a clock skew below the max offset took nodes out of
 * service. The jepsen clock-safe nemesis jumps one node by 0.8 × the max
 * offset (400 ms of 500 ms) — exactly the 80 % tolerance of ClockMonitor —
 * and the monitor called a peer "bad" unless |offset| + uncertainty stayed
 * within the tolerance, so a 400 ms skew measured with any round trip at all
 * stopped the skewed node (and, with the evidence of its own refusals, more).
 *
 * Fixed rule (CockroachDB's RemoteOffset.isHealthy): a measurement is bad
 * only when the offset is surely at or beyond the tolerance,
 * |offset| − uncertainty ≥ tolerance; ambiguous measurements count as ok.
 */
import { describe, it, expect } from 'vitest';
import { ClockMonitor } from '../../src/server/clock-monitor.js';

const MAX_OFFSET_US = 500_000;
const TOLERANCE_US = (MAX_OFFSET_US * 4) / 5;
const m = (offsetMs: number, uncertaintyMs: number) => ({ offsetMicros: offsetMs * 1000, uncertaintyMicros: uncertaintyMs * 1000, measuredAt: 0 });

/** The verdicts of a 3-node cluster whose node 3 is `skewMs` ahead, measured with round trips of 2·rttHalfMs. */
function verdicts(skewMs: number, rttHalfMs: number): boolean[] {
  const mon = [new ClockMonitor(TOLERANCE_US), new ClockMonitor(TOLERANCE_US), new ClockMonitor(TOLERANCE_US)];
  const clocks = [0, 0, skewMs];
  for (let i = 0; i < 3; i++) {
    for (let j = 0; j < 3; j++) {
      // The midpoint estimate errs by up to the uncertainty: take the worst case, away from zero.
      const off = clocks[j]! - clocks[i]!;
      if (i !== j) mon[i]!.recordMeasurement(j + 1, m(off + Math.sign(off) * rttHalfMs * 0.9, rttHalfMs), 0);
    }
  }
  return mon.map((x) => x.healthy(0));
}

describe('kv-bugs: clock skew below the max offset', () => {
  it('a 0.4x or 0.8x skew stops nobody, even with slow round trips', () => {
    for (const rtt of [0.1, 1, 20, 150]) {
      expect(verdicts(200, rtt)).toEqual([true, true, true]);
      expect(verdicts(400, rtt)).toEqual([true, true, true]);
      expect(verdicts(-400, rtt)).toEqual([true, true, true]);
    }
  });

  it('beyond the max offset only the skewed node stops', () => {
    for (const rtt of [0.1, 1, 20]) {
      expect(verdicts(1000, rtt)).toEqual([true, true, false]);
      expect(verdicts(-550, rtt)).toEqual([true, true, false]);
    }
  });

  it('an offset surely at the tolerance is bad; an ambiguous one is ok', () => {
    const a = new ClockMonitor(TOLERANCE_US);
    a.recordMeasurement(2, m(401, 1), 0);
    expect(a.evidence(0).get(2)).toBe('bad');
    a.recordMeasurement(2, m(401, 2), 0);
    expect(a.evidence(0).get(2)).toBe('ok');
  });
});
