// Throughput of DataRow column encoding (run: npx vitest bench --run test/sql-types).
// Each iteration encodes 1000 values; ops/s × 1000 = values/s.
import { bench, describe } from 'vitest';
import { encodeTextBytes } from '../../sql/types/text-format.js';
import { encodeBinary } from '../../sql/types/binary-format.js';
import { decodeText } from '../../sql/types/text-format.js';
import { resolveTimeZone } from '../../sql/types/datetime.js';
import { T } from '../../sql/types/type.js';
import { Prng } from '../../src/util/prng.js';

const rng = new Prng(42);
const N = 1000;
const int8s = Array.from({ length: N }, () => BigInt(Math.floor(rng.float() * 2 ** 52)) * (rng.float() < 0.5 ? -1n : 1n));
const texts = Array.from({ length: N }, (_, i) => `user${i}-${'x'.repeat(90)}`);
const stamps = Array.from({ length: N }, () => Math.floor(rng.float() * 1e15));
const utc = { timeZone: resolveTimeZone('UTC') };
const ny = { timeZone: resolveTimeZone('America/New_York') };
const stampTexts = stamps.map((s) => '2026-11-30 04:56:32.123456+00');

describe('encode 1000 values', () => {
  bench('int8 text', () => {
    for (const v of int8s) encodeTextBytes(v, T.int8);
  });
  bench('int8 binary', () => {
    for (const v of int8s) encodeBinary(v, T.int8);
  });
  bench('text text', () => {
    for (const v of texts) encodeTextBytes(v, T.text);
  });
  bench('text binary', () => {
    for (const v of texts) encodeBinary(v, T.text);
  });
  bench('timestamptz text (UTC)', () => {
    for (const v of stamps) encodeTextBytes(v, T.timestamptz, utc);
  });
  bench('timestamptz text (America/New_York)', () => {
    for (const v of stamps) encodeTextBytes(v, T.timestamptz, ny);
  });
  bench('timestamptz binary', () => {
    for (const v of stamps) encodeBinary(v, T.timestamptz);
  });
  bench('timestamptz text decode', () => {
    for (const s of stampTexts) decodeText(s, T.timestamptz, utc);
  });
});
