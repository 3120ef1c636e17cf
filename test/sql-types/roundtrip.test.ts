// Round-trip properties for every type: text output parses back to an equal
// datum with the same text; binary send/recv is the identity. Timestamptz is
// checked in UTC, a fixed offset and IANA zones (output carries the offset,
// so re-reading it in the same session zone finds the same instant).
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { ARRAYS, SCALARS } from './arbitraries.js';
import { decodeText, encodeText } from '../../sql/types/text-format.js';
import { decodeBinary, encodeBinary } from '../../sql/types/binary-format.js';
import { compareDatums } from '../../sql/types/compare.js';
import { resolveTimeZone } from '../../sql/types/datetime.js';
import { T } from '../../sql/types/type.js';

const RUNS = { numRuns: 300 };
const DAY = 86_400_000_000;

describe('text round trip', () => {
  for (const [name, t, arb] of [...SCALARS, ...ARRAYS]) {
    it(name, () => {
      fc.assert(
        fc.property(arb, (d) => {
          const s = encodeText(d, t);
          const back = decodeText(s, t);
          expect(compareDatums(back, d, t)).toBe(0);
          expect(encodeText(back, t)).toBe(s);
        }),
        RUNS,
      );
    });
  }
});

describe('binary round trip', () => {
  for (const [name, t, arb] of [...SCALARS, ...ARRAYS]) {
    it(name, () => {
      fc.assert(
        fc.property(arb, (d) => {
          const b = encodeBinary(d, t);
          const back = decodeBinary(b, t);
          expect(compareDatums(back, d, t)).toBe(0);
          expect(encodeBinary(back, t).equals(b)).toBe(true);
          expect(encodeText(back, t)).toBe(encodeText(d, t));
        }),
        RUNS,
      );
    });
  }
});

describe('timestamptz text round trip in session time zones', () => {
  for (const zone of ['UTC', '+05:30', 'America/New_York', 'Europe/London', 'Asia/Kathmandu', 'Australia/Lord_Howe']) {
    it(zone, () => {
      const ctx = { timeZone: resolveTimeZone(zone) };
      fc.assert(
        // Local time = instant + offset must itself be exact: stay a day inside ±2^53 µs.
        fc.property(fc.integer({ min: -(2 ** 53) + DAY, max: 2 ** 53 - DAY }), (t) => {
          const s = encodeText(t, T.timestamptz, ctx);
          expect(decodeText(s, T.timestamptz, ctx)).toBe(t);
        }),
        { numRuns: 200 },
      );
    });
  }
});
