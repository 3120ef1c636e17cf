/**
 * sql/rowenc/key-decimal.ts — an order-preserving byte string for numeric
 * (Decimal) values, so numeric columns can be primary/index key columns. The
 * string is embedded in the key with the tuple encoding's bytes kind
 * (storage/encoding appendBytes, ascending or descending), whose escaping
 * keeps both byte order and "a proper prefix sorts first".
 *
 * Layout (value = ±0.d1 d2 … dn × 10^e, d1 ≠ 0, dn ≠ 0 — trailing zeros
 * stripped, so equal values have equal strings: 1.5 = 1.50):
 *
 *   +-------+
 *   | class |                                     −Infinity 0x01, zero 0x03,
 *   +-------+                                     +Infinity 0x05, NaN 0x06
 *
 *   +-------+----------------------+--------------------+
 *   | 0x04  | e + 2^31  (u32 BE)   | d1+1 … dn+1        |   positive
 *   +-------+----------------------+--------------------+
 *
 *   +-------+----------------------+--------------------+------+
 *   | 0x02  | 2^31 − 1 − e (u32 BE)| 10−d1 … 10−dn      | 0xff |   negative
 *   +-------+----------------------+--------------------+------+
 *
 * Order (PostgreSQL's numeric order, NaN above +Infinity, NaN = NaN): the
 * class byte; then for positives a larger exponent is a larger value, and
 * with equal exponents the digits compare as a string, a proper prefix
 * (0.12 < 0.123) first. Negatives invert both exponent and digits; their
 * 0xff terminator is above every digit byte, so a proper prefix sorts last
 * (−0.12 > −0.123). Digit bytes are 0x01…0x0a: never 0x00, which the bytes
 * encoding would escape.
 *
 * The display scale (1.50 vs 1.5) is not in the key: row-codec.ts keeps
 * numeric key columns "composite" (CockroachDB's term) — the exact value also
 * goes into the row value when it differs from what the key decodes to.
 *
 * Ownership: pure functions; the returned buffers are fresh.
 */
import { CorruptionError } from '../../src/util/errors.js';
import { Decimal } from '../types/decimal.js';

const NEG_INF = 0x01;
const NEG = 0x02;
const ZERO = 0x03;
const POS = 0x04;
const POS_INF = 0x05;
const NAN = 0x06;
const NEG_END = 0xff;
const EXP_BIAS = 2 ** 31;

/** The order-preserving bytes of `d` (see the header). */
export function encodeDecimalKey(d: Decimal): Buffer {
  if (d.isNaN()) return Buffer.from([NAN]);
  if (d.isInfinite()) return Buffer.from([d.sign() > 0 ? POS_INF : NEG_INF]);
  if (d.isZero()) return Buffer.from([ZERO]);
  const s = d.stripTrailingZeros();
  const neg = s.coef < 0n;
  let digits = (neg ? -s.coef : s.coef).toString();
  // value = 0.<digits> × 10^e with e = len − scale; then drop trailing zeros of an integer's coefficient.
  const e = digits.length - s.scale;
  digits = digits.replace(/0+$/, '');
  const out = Buffer.allocUnsafe(5 + digits.length + (neg ? 1 : 0));
  out[0] = neg ? NEG : POS;
  out.writeUInt32BE(neg ? EXP_BIAS - 1 - e : e + EXP_BIAS, 1);
  for (let i = 0; i < digits.length; i++) {
    const v = digits.charCodeAt(i) - 48;
    out[5 + i] = neg ? 10 - v : v + 1;
  }
  if (neg) out[out.length - 1] = NEG_END;
  return out;
}

/** The Decimal of encodeDecimalKey's bytes, at its smallest display scale. */
export function decodeDecimalKey(b: Uint8Array): Decimal {
  const cls = b[0];
  switch (cls) {
    case NAN:
      return Decimal.NAN;
    case POS_INF:
      return Decimal.POS_INF;
    case NEG_INF:
      return Decimal.NEG_INF;
    case ZERO:
      return Decimal.ZERO;
    case POS:
    case NEG: {
      const neg = cls === NEG;
      if (b.length < (neg ? 7 : 6)) throw new CorruptionError('rowenc: truncated numeric key');
      const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
      const u = buf.readUInt32BE(1);
      const e = neg ? EXP_BIAS - 1 - u : u - EXP_BIAS;
      const end = neg ? b.length - 1 : b.length;
      let digits = '';
      for (let i = 5; i < end; i++) {
        const v = neg ? 10 - (b[i] as number) : (b[i] as number) - 1;
        if (v < 0 || v > 9) throw new CorruptionError('rowenc: bad digit in numeric key');
        digits += String.fromCharCode(48 + v);
      }
      const n = digits.length;
      const coef = BigInt(digits) * (neg ? -1n : 1n);
      return e >= n ? Decimal.of(coef * 10n ** BigInt(e - n), 0) : Decimal.of(coef, n - e);
    }
    default:
      throw new CorruptionError(`rowenc: unknown numeric key class ${String(cls)}`);
  }
}
