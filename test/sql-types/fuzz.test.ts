// Bad client input never escapes as anything but a typed error: text input
// functions and binary receive functions, fed arbitrary strings and bytes,
// either return a datum that round-trips or throw a CairnError with a SQLSTATE.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { ARRAYS, SCALARS } from './arbitraries.js';
import { decodeText, encodeText } from '../../sql/types/text-format.js';
import { decodeBinary, encodeBinary } from '../../sql/types/binary-format.js';
import { compareDatums } from '../../sql/types/compare.js';
import { CairnError } from '../../src/util/errors.js';
import type { SqlType } from '../../sql/types/type.js';

/** Text near each type's syntax: digits, signs, separators, words the parsers know. */
const fragments = fc.constantFrom('1', '0', '9', '-', '+', '.', 'e', ':', ' ', 'T', 'Z', '{', '}', ',', '"', '\\', 'x', 'NaN', 'inf', 'day', 'mon', 'year', 'BC', 'P', 'H', '2020-01-01', '12:00', '[', ']', 'null', 'true', 'a', 'é', '/');
const nearSyntax = fc.array(fragments, { maxLength: 12 }).map((a) => a.join(''));

function accepts(f: () => unknown): void {
  try {
    f();
  } catch (e) {
    if (!(e instanceof CairnError)) throw e;
    expect(e.sqlState).toMatch(/^[0-9A-Z]{5}$/);
    expect(e.sqlState).not.toBe('XX000');
  }
}

function textRoundTrips(s: string, t: SqlType): void {
  accepts(() => {
    const d = decodeText(s, t);
    if (d === null) return;
    const out = encodeText(d, t);
    expect(compareDatums(decodeText(out, t), d, t)).toBe(0);
  });
}

describe('text input rejects garbage with typed errors only', () => {
  for (const [name, t] of [...SCALARS, ...ARRAYS]) {
    it(name, () => {
      fc.assert(fc.property(fc.oneof(fc.string(), nearSyntax), (s) => textRoundTrips(s, t)), { numRuns: 300 });
    });
  }
});

describe('binary receive rejects garbage with typed errors only', () => {
  for (const [name, t, arb] of [...SCALARS, ...ARRAYS]) {
    it(name, () => {
      // random bytes, and valid encodings with one byte flipped or truncated
      const mutated = fc.tuple(arb, fc.nat(), fc.integer({ min: 1, max: 255 }), fc.boolean()).map(([d, i, x, cut]) => {
        const b = Buffer.from(encodeBinary(d, t));
        if (b.length === 0) return b;
        if (cut) return b.subarray(0, i % b.length);
        b[i % b.length] ^= x;
        return b;
      });
      fc.assert(fc.property(fc.oneof(fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u)), mutated), (b) => accepts(() => decodeBinary(b, t))), { numRuns: 300 });
    });
  }
});
