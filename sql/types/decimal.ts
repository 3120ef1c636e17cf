/**
 * Decimal: the datum of PostgreSQL's `numeric` — arbitrary precision, exact.
 *
 * A finite value is `coef × 10^−scale` with `coef` a bigint and `scale`
 * (PostgreSQL's display scale, dscale) ≥ 0: 1.50 is {coef: 150n, scale: 2}
 * and prints as "1.50". Zero has no sign. Besides finite values numeric holds
 * NaN, +Infinity and −Infinity (PostgreSQL ≥ 14), ordered
 * −Infinity < finite < +Infinity < NaN, with NaN = NaN (so it sorts and
 * groups, unlike float NaN in IEEE).
 *
 * Arithmetic follows PostgreSQL's numeric.c result scales:
 *   a + b, a − b   scale max(sa, sb), exact
 *   a × b          scale sa + sb, exact
 *   a ÷ b          scale select_div_scale(): at least 16 significant digits,
 *                  at least max(sa, sb), at most 1000; rounded half away from 0
 *   a % b          a − trunc(a ÷ b) × b, scale max(sa, sb)
 *   round(s)       half away from zero (numeric(p, s) assignment, int casts)
 * Specials: NaN op x = NaN; ∞ − ∞ = NaN; ∞ × 0 = NaN; x ÷ 0 is 22012 (even ∞ ÷ 0).
 *
 * The binary wire form (numeric_send) is base-10000 digits:
 *
 *   +--------+--------+--------+--------+---------------------+
 *   | ndigits| weight |  sign  | dscale | digit[ndigits] ...  |   each int16 BE
 *   +--------+--------+--------+--------+---------------------+
 *   value = Σ digit[i] × 10000^(weight − i); sign 0x0000 +, 0x4000 −,
 *   0xC000 NaN, 0xD000 +Inf, 0xF000 −Inf; leading/trailing zero digits stripped.
 *
 * Decimals are immutable.
 */
import { divisionByZero, invalidTextRepresentation, outOfRange } from './type-error.js';
import { SqlError } from '../parser/sql-error.js';

const enum Special {
  Finite = 0,
  NaN = 1,
  PosInf = 2,
  NegInf = 3,
}

/** PostgreSQL's NUMERIC_MAX_DISPLAY_SCALE / NUMERIC_MIN_SIG_DIGITS. */
const MAX_DISPLAY_SCALE = 1000;
const MIN_SIG_DIGITS = 16;
/** Largest decimal exponent numeric_in accepts. */
const MAX_EXPONENT = 131072 + 16383;
/**
 * NB: PostgreSQL 15's numeric_send reports dscale 32 for ±Infinity (the bits
 * its short header leaves there); clients ignore it, we send the same bytes.
 */
const INF_SEND_DSCALE = 0x20;

const pow10Cache: bigint[] = [];
function pow10(n: number): bigint {
  if (n < 64) {
    let p = pow10Cache[n];
    if (p === undefined) {
      p = 10n ** BigInt(n);
      pow10Cache[n] = p;
    }
    return p;
  }
  return 10n ** BigInt(n);
}

function absBig(v: bigint): bigint {
  return v < 0n ? -v : v;
}

/** Number of decimal digits of |v| (1 for zero). */
function digitCount(v: bigint): number {
  return absBig(v).toString().length;
}

/** q = n / d rounded half away from zero (d ≠ 0). */
function divRound(n: bigint, d: bigint): bigint {
  let q = n / d;
  const r = n % d;
  if (r !== 0n && 2n * absBig(r) >= absBig(d)) q += (n < 0n) !== (d < 0n) ? -1n : 1n;
  return q;
}

export interface NumericBinary {
  readonly weight: number;
  readonly sign: number;
  readonly dscale: number;
  readonly digits: readonly number[];
}

export class Decimal {
  private constructor(
    /** Significand at `scale`; 0n for specials. */
    readonly coef: bigint,
    /** Display scale (digits after the point), ≥ 0. */
    readonly scale: number,
    private readonly special: Special,
  ) {}

  static readonly ZERO = new Decimal(0n, 0, Special.Finite);
  static readonly ONE = new Decimal(1n, 0, Special.Finite);
  static readonly NAN = new Decimal(0n, 0, Special.NaN);
  static readonly POS_INF = new Decimal(0n, 0, Special.PosInf);
  static readonly NEG_INF = new Decimal(0n, 0, Special.NegInf);

  /** coef × 10^−scale. */
  static of(coef: bigint, scale = 0): Decimal {
    if (scale < 0) return new Decimal(coef * pow10(-scale), 0, Special.Finite);
    return new Decimal(coef, scale, Special.Finite);
  }

  static fromInt(v: number | bigint): Decimal {
    return new Decimal(BigInt(v), 0, Special.Finite);
  }

  /**
   * A float as PostgreSQL's float8_numeric / float4_numeric converts it: through
   * its decimal text with `sigDigits` significant digits (15 = DBL_DIG, 6 = FLT_DIG).
   */
  static fromFloat(v: number, sigDigits = 15): Decimal {
    if (Number.isNaN(v)) return Decimal.NAN;
    if (v === Infinity) return Decimal.POS_INF;
    if (v === -Infinity) return Decimal.NEG_INF;
    const d = Decimal.parse(v.toExponential(sigDigits - 1));
    // %g drops trailing zeros: the display scale is that of the shortest form.
    return (d as Decimal).stripTrailingZeros();
  }

  /**
   * numeric_in's syntax: optional whitespace, sign, digits with an optional
   * point, optional exponent; NaN, Infinity, inf (any case). Returns
   * undefined when the text is not a number.
   */
  static parse(text: string): Decimal | undefined {
    let i = 0;
    let end = text.length;
    while (i < end && isSpaceCode(text.charCodeAt(i))) i++;
    while (end > i && isSpaceCode(text.charCodeAt(end - 1))) end--;
    let neg = false;
    let signed = false;
    const c0 = text.charCodeAt(i);
    if (c0 === 43 /* + */ || c0 === 45 /* - */) {
      neg = c0 === 45;
      signed = true;
      i++;
    }
    const c = text.charCodeAt(i);
    if (!(c >= 48 && c <= 57) && c !== 46) {
      const word = text.slice(i, end).toLowerCase();
      if (word === 'nan' && !signed) return Decimal.NAN;
      if (word === 'infinity' || word === 'inf') return neg ? Decimal.NEG_INF : Decimal.POS_INF;
      return undefined;
    }
    let digits = '';
    let fracDigits = 0;
    let sawDigit = false;
    let sawPoint = false;
    for (; i < end; i++) {
      const ch = text.charCodeAt(i);
      if (ch >= 48 && ch <= 57) {
        digits += text[i];
        sawDigit = true;
        if (sawPoint) fracDigits++;
      } else if (ch === 46 && !sawPoint) {
        sawPoint = true;
      } else {
        break;
      }
    }
    if (!sawDigit) return undefined;
    let exp = 0;
    if (i < end) {
      const e = text.charCodeAt(i);
      if (e !== 101 && e !== 69) return undefined;
      i++;
      let eneg = false;
      const s = text.charCodeAt(i);
      if (s === 43 || s === 45) {
        eneg = s === 45;
        i++;
      }
      const start = i;
      while (i < end && text.charCodeAt(i) >= 48 && text.charCodeAt(i) <= 57) i++;
      if (i === start || i !== end) return undefined;
      const ev = Number(text.slice(start, end));
      if (ev > MAX_EXPONENT) throw outOfRange('value overflows numeric format');
      exp = eneg ? -ev : ev;
    }
    let coef = BigInt(digits);
    if (neg) coef = -coef;
    let scale = fracDigits - exp;
    if (scale < 0) {
      coef *= pow10(-scale);
      scale = 0;
    }
    if (scale > MAX_DISPLAY_SCALE * 2) throw outOfRange('value overflows numeric format');
    return new Decimal(coef, scale, Special.Finite);
  }

  /** parse() that raises 22P02 for bad text. */
  static parseOrThrow(text: string): Decimal {
    const d = Decimal.parse(text);
    if (d === undefined) throw invalidTextRepresentation('numeric', text);
    return d;
  }

  isNaN(): boolean {
    return this.special === Special.NaN;
  }
  isFinite(): boolean {
    return this.special === Special.Finite;
  }
  isInfinite(): boolean {
    return this.special === Special.PosInf || this.special === Special.NegInf;
  }
  isZero(): boolean {
    return this.special === Special.Finite && this.coef === 0n;
  }
  /** −1, 0 or 1; NaN has sign 0 here (callers test isNaN() first). */
  sign(): number {
    if (this.special === Special.PosInf) return 1;
    if (this.special === Special.NegInf) return -1;
    return this.coef > 0n ? 1 : this.coef < 0n ? -1 : 0;
  }

  /** PostgreSQL's numeric_out text. */
  toString(): string {
    switch (this.special) {
      case Special.NaN:
        return 'NaN';
      case Special.PosInf:
        return 'Infinity';
      case Special.NegInf:
        return '-Infinity';
      case Special.Finite:
        break;
    }
    if (this.scale === 0) return this.coef.toString();
    const neg = this.coef < 0n;
    let s = absBig(this.coef).toString();
    if (s.length <= this.scale) s = '0'.repeat(this.scale - s.length + 1) + s;
    const p = s.length - this.scale;
    return (neg ? '-' : '') + s.slice(0, p) + '.' + s.slice(p);
  }

  /** The nearest double (numeric_float8 parses the text). */
  toNumber(): number {
    switch (this.special) {
      case Special.NaN:
        return NaN;
      case Special.PosInf:
        return Infinity;
      case Special.NegInf:
        return -Infinity;
      case Special.Finite:
        return this.scale === 0 && absBig(this.coef) <= 9007199254740991n ? Number(this.coef) : Number(this.toString());
    }
  }

  /** Rounded half away from zero to an integer; undefined for NaN/∞. */
  toBigInt(): bigint | undefined {
    if (this.special !== Special.Finite) return undefined;
    return this.scale === 0 ? this.coef : divRound(this.coef, pow10(this.scale));
  }

  /** The same value at exactly `scale` digits, rounded half away from zero (PostgreSQL round(x, s), s ≥ 0). */
  round(scale: number): Decimal {
    if (this.special !== Special.Finite || scale === this.scale) return this;
    if (scale > this.scale) return new Decimal(this.coef * pow10(scale - this.scale), scale, Special.Finite);
    return new Decimal(divRound(this.coef, pow10(this.scale - scale)), scale, Special.Finite);
  }

  /** Truncated toward zero to `scale` digits. */
  trunc(scale: number): Decimal {
    if (this.special !== Special.Finite || scale >= this.scale) return this.round(scale);
    return new Decimal(this.coef / pow10(this.scale - scale), scale, Special.Finite);
  }

  /** The same value with the smallest display scale (1.500 → 1.5). */
  stripTrailingZeros(): Decimal {
    if (this.special !== Special.Finite || this.scale === 0) return this;
    let coef = this.coef;
    let scale = this.scale;
    if (coef === 0n) return Decimal.ZERO;
    while (scale > 0 && coef % 10n === 0n) {
      coef /= 10n;
      scale--;
    }
    return new Decimal(coef, scale, Special.Finite);
  }

  /**
   * numeric(p, s) assignment (apply_typmod): round to s digits, then 22003
   * "numeric field overflow" when more than p − s integer digits remain.
   */
  applyTypmod(precision: number, scale: number): Decimal {
    if (this.special === Special.NaN) return this;
    if (this.special !== Special.Finite) {
      throw new SqlError('sql.numeric_value_out_of_range', '22003', 'numeric field overflow', {
        detail: `A field with precision ${precision}, scale ${scale} cannot hold an infinite value.`,
      });
    }
    const r = this.round(scale);
    if (r.coef !== 0n && digitCount(r.coef) > precision) {
      throw new SqlError('sql.numeric_value_out_of_range', '22003', 'numeric field overflow', {
        detail: `A field with precision ${precision}, scale ${scale} must round to an absolute value less than ${precision === scale ? '1' : `10^${precision - scale}`}.`,
      });
    }
    return r;
  }

  neg(): Decimal {
    switch (this.special) {
      case Special.NaN:
        return this;
      case Special.PosInf:
        return Decimal.NEG_INF;
      case Special.NegInf:
        return Decimal.POS_INF;
      case Special.Finite:
        return this.coef === 0n ? this : new Decimal(-this.coef, this.scale, Special.Finite);
    }
  }

  abs(): Decimal {
    return this.sign() < 0 ? this.neg() : this;
  }

  add(o: Decimal): Decimal {
    if (this.special !== Special.Finite || o.special !== Special.Finite) {
      if (this.special === Special.NaN || o.special === Special.NaN) return Decimal.NAN;
      if (this.isInfinite() && o.isInfinite()) return this.special === o.special ? this : Decimal.NAN;
      return this.isInfinite() ? this : o;
    }
    if (this.scale === o.scale) return new Decimal(this.coef + o.coef, this.scale, Special.Finite);
    if (this.scale > o.scale) return new Decimal(this.coef + o.coef * pow10(this.scale - o.scale), this.scale, Special.Finite);
    return new Decimal(this.coef * pow10(o.scale - this.scale) + o.coef, o.scale, Special.Finite);
  }

  sub(o: Decimal): Decimal {
    return this.add(o.neg());
  }

  mul(o: Decimal): Decimal {
    if (this.special !== Special.Finite || o.special !== Special.Finite) {
      if (this.special === Special.NaN || o.special === Special.NaN) return Decimal.NAN;
      const s = this.sign() * o.sign();
      return s === 0 ? Decimal.NAN : s > 0 ? Decimal.POS_INF : Decimal.NEG_INF;
    }
    return new Decimal(this.coef * o.coef, this.scale + o.scale, Special.Finite);
  }

  /** this ÷ o at PostgreSQL's select_div_scale(), rounded; 22012 when o is zero. */
  div(o: Decimal): Decimal {
    if (this.special !== Special.Finite || o.special !== Special.Finite) {
      if (this.special === Special.NaN || o.special === Special.NaN) return Decimal.NAN;
      if (this.isInfinite()) {
        if (o.isInfinite()) return Decimal.NAN;
        const s = o.sign();
        if (s === 0) throw divisionByZero();
        return s * this.sign() > 0 ? Decimal.POS_INF : Decimal.NEG_INF;
      }
      return Decimal.ZERO;
    }
    if (o.coef === 0n) throw divisionByZero();
    return this.divScaled(o, selectDivScale(this, o));
  }

  /** this ÷ o rounded half away from zero to `rscale` digits (o finite, non-zero). */
  divScaled(o: Decimal, rscale: number): Decimal {
    // q = (ca / 10^sa) / (cb / 10^sb) × 10^rscale = ca × 10^(sb + rscale − sa) / cb
    const e = o.scale + rscale - this.scale;
    const n = e >= 0 ? this.coef * pow10(e) : this.coef;
    const d = e >= 0 ? o.coef : o.coef * pow10(-e);
    return new Decimal(divRound(n, d), rscale, Special.Finite);
  }

  /** Integer-truncated remainder, PostgreSQL's numeric_mod. */
  mod(o: Decimal): Decimal {
    if (this.special !== Special.Finite || o.special !== Special.Finite) {
      if (this.special === Special.NaN || o.special === Special.NaN) return Decimal.NAN;
      if (this.isInfinite()) {
        if (o.isZero()) throw divisionByZero();
        return Decimal.NAN;
      }
      return this;
    }
    if (o.coef === 0n) throw divisionByZero();
    const s = Math.max(this.scale, o.scale);
    const a = this.coef * pow10(s - this.scale);
    const b = o.coef * pow10(s - o.scale);
    return new Decimal(a % b, s, Special.Finite);
  }

  /** Total order: −∞ < finite < +∞ < NaN; NaN = NaN; 1.0 = 1.00. */
  cmp(o: Decimal): number {
    if (this.special !== Special.Finite || o.special !== Special.Finite) {
      const ra = rank(this);
      const rb = rank(o);
      if (ra !== rb) return ra < rb ? -1 : 1;
      if (ra !== 1) return 0;
    }
    let a = this.coef;
    let b = o.coef;
    if (this.scale > o.scale) b *= pow10(this.scale - o.scale);
    else if (this.scale < o.scale) a *= pow10(o.scale - this.scale);
    return a < b ? -1 : a > b ? 1 : 0;
  }

  equals(o: Decimal): boolean {
    return this.cmp(o) === 0;
  }

  /** A string equal for equal values (1.0 and 1.00 share it): GROUP BY / DISTINCT keys. */
  key(): string {
    return this.stripTrailingZeros().toString();
  }

  /** The numeric_send fields. */
  toBinary(): NumericBinary {
    switch (this.special) {
      case Special.NaN:
        return { weight: 0, sign: 0xc000, dscale: 0, digits: [] };
      case Special.PosInf:
        return { weight: 0, sign: 0xd000, dscale: INF_SEND_DSCALE, digits: [] };
      case Special.NegInf:
        return { weight: 0, sign: 0xf000, dscale: INF_SEND_DSCALE, digits: [] };
      case Special.Finite:
        break;
    }
    const sign = this.coef < 0n ? 0x4000 : 0;
    if (this.coef === 0n) return { weight: 0, sign: 0, dscale: this.scale, digits: [] };
    const s = absBig(this.coef).toString();
    const intLen = s.length - this.scale;
    // Align the digit string to base-10000 groups around the decimal point.
    const leadPad = intLen > 0 ? (4 - (intLen % 4)) % 4 : 0;
    const fracZeros = intLen < 0 ? -intLen : 0;
    let padded = '0'.repeat(leadPad) + (intLen > 0 ? s : '0'.repeat(fracZeros) + s);
    const intGroups = intLen > 0 ? (intLen + leadPad) / 4 : 0;
    padded += '0'.repeat((4 - (padded.length % 4)) % 4);
    const digits: number[] = [];
    for (let i = 0; i < padded.length; i += 4) digits.push(Number(padded.slice(i, i + 4)));
    let weight = intGroups - 1;
    let first = 0;
    while (first < digits.length && digits[first] === 0) {
      first++;
      weight--;
    }
    let last = digits.length;
    while (last > first && digits[last - 1] === 0) last--;
    return { weight, sign, dscale: this.scale, digits: digits.slice(first, last) };
  }

  /** numeric_recv: rejects bad digits/signs (22P02); extra digits beyond dscale are truncated, as PostgreSQL does. */
  static fromBinary(b: NumericBinary): Decimal {
    switch (b.sign) {
      case 0xc000:
        return Decimal.NAN;
      case 0xd000:
        return Decimal.POS_INF;
      case 0xf000:
        return Decimal.NEG_INF;
      case 0:
      case 0x4000:
        break;
      default:
        throw new SqlError('sql.invalid_binary_representation', '22P03', 'invalid sign in external "numeric" value');
    }
    if (b.dscale < 0 || b.dscale > 0x3fff) {
      throw new SqlError('sql.invalid_binary_representation', '22P03', 'invalid scale in external "numeric" value');
    }
    let acc = 0n;
    for (const d of b.digits) {
      if (!(d >= 0 && d < 10000)) throw new SqlError('sql.invalid_binary_representation', '22P03', 'invalid digit in external "numeric" value');
      acc = acc * 10000n + BigInt(d);
    }
    // value = acc × 10^exp10
    const exp10 = 4 * (b.weight - b.digits.length + 1);
    const shift = exp10 + b.dscale;
    const coef = shift >= 0 ? acc * pow10(shift) : acc / pow10(-shift);
    return new Decimal(b.sign === 0x4000 ? -coef : coef, b.dscale, Special.Finite);
  }
}

function rank(d: Decimal): number {
  if (d.isNaN()) return 3;
  if (!d.isInfinite()) return 1;
  return d.sign() > 0 ? 2 : 0;
}

/** PostgreSQL's isspace() in input functions: blank, \t \n \v \f \r. */
export function isSpaceCode(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

/** The first non-zero base-10000 digit of |d| and its weight (d finite, non-zero). */
function leadingGroup(d: Decimal): { weight: number; first: number } {
  const s = absBig(d.coef).toString();
  const e = s.length - 1 - d.scale; // decimal exponent of the leading digit
  const weight = Math.floor(e / 4);
  // first = floor(|d| / 10000^weight) = leading (e − 4·weight + 1) digits
  const n = e - 4 * weight + 1;
  return { weight, first: Number(s.slice(0, n).padEnd(n, '0')) };
}

/** PostgreSQL's select_div_scale for a ÷ b. */
function selectDivScale(a: Decimal, b: Decimal): number {
  const ga = a.coef === 0n ? { weight: 0, first: 0 } : leadingGroup(a);
  const gb = leadingGroup(b);
  let qweight = ga.weight - gb.weight;
  if (ga.first <= gb.first) qweight--;
  let rscale = MIN_SIG_DIGITS - qweight * 4;
  rscale = Math.max(rscale, a.scale, b.scale, 0);
  return Math.min(rscale, MAX_DISPLAY_SCALE);
}
