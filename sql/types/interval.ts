/**
 * Interval: PostgreSQL's interval datum, three independent fields —
 * months, days and microseconds — because a month is not a fixed number of
 * days and a day (across a DST change) not a fixed number of hours.
 *
 *   months  int32;  days  int32;  micros  int64 held in a number (exact to
 *   ±2^53 µs ≈ ±285 years of time part).
 *
 * Comparison, equality and hashing use PostgreSQL's interval_cmp_value:
 * months × 30 days + days, × 24 h, + micros — so '1 mon' = '30 days' and
 * '1 day' = '24:00:00' compare (and group) equal, though they print
 * differently.
 *
 * Input: PostgreSQL's verbose form ('1 year 2 mons -3 days 04:05:06.7',
 * '@ 1 hour ago', fractional units spilling into smaller fields, a bare
 * number of seconds, 'Y-M' year-month), and ISO 8601 ('P1Y2M3DT4H5M6.5S',
 * 'P1W'). Output: IntervalStyle = postgres.
 *
 * Binary (interval_send): int64 µs, int32 days, int32 months, big-endian.
 */
import { datetimeOverflow, invalidDatetimeFormat } from './type-error.js';
import { fractionDigits } from './datetime.js';
import { SqlError } from '../parser/sql-error.js';

const USECS_PER_SEC = 1_000_000;
const USECS_PER_HOUR = 3_600_000_000;
const USECS_PER_DAY = 86_400_000_000;
const INT32_MAX = 2147483647;
const INT32_MIN = -2147483648;

export class Interval {
  constructor(
    readonly months: number,
    readonly days: number,
    readonly micros: number,
  ) {}

  static readonly ZERO = new Interval(0, 0, 0);

  /** The span in µs with months as 30 days (interval_cmp_value), as a bigint (may exceed 2^53). */
  span(): bigint {
    return (BigInt(this.months) * 30n + BigInt(this.days)) * BigInt(USECS_PER_DAY) + BigInt(this.micros);
  }

  /** The span as a number; exact when |span| ≤ 2^53. */
  spanNumber(): number {
    return (this.months * 30 + this.days) * USECS_PER_DAY + this.micros;
  }

  cmp(o: Interval): number {
    const a = this.spanNumber();
    const b = o.spanNumber();
    if (Math.abs(a) < 9e15 && Math.abs(b) < 9e15) return a < b ? -1 : a > b ? 1 : 0;
    const x = this.span();
    const y = o.span();
    return x < y ? -1 : x > y ? 1 : 0;
  }

  /** IntervalStyle = postgres text. */
  toString(): string {
    return formatInterval(this);
  }
}

/** Checks the field ranges (22008 "interval out of range"). */
export function checkInterval(iv: Interval): Interval {
  if (!inRange(iv)) throw datetimeOverflow('interval out of range');
  return iv;
}

function inRange(iv: Interval): boolean {
  return !(
    !Number.isInteger(iv.months) || iv.months > INT32_MAX || iv.months < INT32_MIN ||
    !Number.isInteger(iv.days) || iv.days > INT32_MAX || iv.days < INT32_MIN ||
    !Number.isFinite(iv.micros) || Math.abs(iv.micros) > 9.223372036854776e18
  );
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** PostgreSQL's EncodeInterval, IntervalStyle = postgres. */
export function formatInterval(iv: Interval): string {
  const year = Math.trunc(iv.months / 12);
  const mon = iv.months - year * 12;
  let out = '';
  let isZero = true;
  let isBefore = false;
  const part = (v: number, unit: string) => {
    if (v === 0) return;
    out += `${isZero ? '' : ' '}${!isZero && isBefore && v > 0 ? '+' : ''}${v} ${unit}${v !== 1 ? 's' : ''}`;
    isBefore = v < 0;
    isZero = false;
  };
  part(year, 'year');
  part(mon, 'mon');
  part(iv.days, 'day');
  const micros = iv.micros;
  if (isZero || micros !== 0) {
    const minus = micros < 0;
    const a = Math.abs(micros);
    const hours = Math.floor(a / USECS_PER_HOUR);
    const rem = a - hours * USECS_PER_HOUR;
    const mins = Math.floor(rem / 60_000_000);
    const secsMicros = rem - mins * 60_000_000;
    const secs = Math.floor(secsMicros / USECS_PER_SEC);
    const frac = secsMicros - secs * USECS_PER_SEC;
    out += `${isZero ? '' : ' '}${minus ? '-' : isBefore ? '+' : ''}${pad2(hours)}:${pad2(mins)}:${pad2(secs)}`;
    if (frac !== 0) out += `.${fractionDigits(frac)}`;
  }
  return out;
}

/** Units of the verbose form: [field, multiplier]. */
type Unit = 'micro' | 'milli' | 'second' | 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year' | 'decade' | 'century' | 'millennium';
const UNITS: ReadonlyMap<string, Unit> = new Map<string, Unit>([
  ...(['microsecond', 'microseconds', 'microsecon', 'us', 'usec', 'usecs', 'useconds'] as const).map((w) => [w, 'micro'] as [string, Unit]),
  ...(['millisecond', 'milliseconds', 'millisecon', 'ms', 'msec', 'msecs', 'mseconds'] as const).map((w) => [w, 'milli'] as [string, Unit]),
  ...(['second', 'seconds', 's', 'sec', 'secs'] as const).map((w) => [w, 'second'] as [string, Unit]),
  ...(['minute', 'minutes', 'm', 'min', 'mins'] as const).map((w) => [w, 'minute'] as [string, Unit]),
  ...(['hour', 'hours', 'h', 'hr', 'hrs'] as const).map((w) => [w, 'hour'] as [string, Unit]),
  ...(['day', 'days', 'd'] as const).map((w) => [w, 'day'] as [string, Unit]),
  ...(['week', 'weeks', 'w'] as const).map((w) => [w, 'week'] as [string, Unit]),
  ...(['month', 'months', 'mon', 'mons'] as const).map((w) => [w, 'month'] as [string, Unit]),
  ...(['year', 'years', 'y', 'yr', 'yrs'] as const).map((w) => [w, 'year'] as [string, Unit]),
  ...(['decade', 'decades', 'dec', 'decs'] as const).map((w) => [w, 'decade'] as [string, Unit]),
  ...(['century', 'centuries', 'c', 'cent'] as const).map((w) => [w, 'century'] as [string, Unit]),
  ...(['millennium', 'millennia', 'mil', 'mils', 'millenniums'] as const).map((w) => [w, 'millennium'] as [string, Unit]),
]);

/** Accumulates fields the way PostgreSQL's DecodeInterval does (fractions spill down). */
class Acc {
  months = 0;
  days = 0;
  micros = 0;

  add(unit: Unit, v: number): void {
    const whole = Math.trunc(v);
    const frac = v - whole;
    switch (unit) {
      case 'micro':
        this.micros += Math.round(v);
        return;
      case 'milli':
        this.micros += Math.round(v * 1000);
        return;
      case 'second':
        this.micros += Math.round(v * USECS_PER_SEC);
        return;
      case 'minute':
        this.micros += Math.round(v * 60 * USECS_PER_SEC);
        return;
      case 'hour':
        this.micros += Math.round(v * USECS_PER_HOUR);
        return;
      case 'day':
        this.days += whole;
        this.micros += Math.round(frac * USECS_PER_DAY);
        return;
      case 'week':
        this.fractDays(v * 7);
        return;
      case 'month':
        this.months += whole;
        this.fractDays(frac * 30);
        return;
      case 'year':
        this.months += whole * 12 + Math.round(frac * 12);
        return;
      case 'decade':
        this.months += whole * 120 + Math.round(frac * 120);
        return;
      case 'century':
        this.months += whole * 1200 + Math.round(frac * 1200);
        return;
      case 'millennium':
        this.months += whole * 12000 + Math.round(frac * 12000);
        return;
    }
  }

  private fractDays(days: number): void {
    const whole = Math.trunc(days);
    this.days += whole;
    this.micros += Math.round((days - whole) * USECS_PER_DAY);
  }
}

/** Interval input, verbose PostgreSQL form or ISO 8601. Throws 22007 / 22008. */
export function parseInterval(input: string): Interval {
  const text = input.trim().toLowerCase();
  const bad = () => invalidDatetimeFormat('interval', input);
  if (text === '') throw bad();
  const overflow = () => new SqlError('sql.interval_field_overflow', '22015', `interval field value out of range: "${input}"`);
  const acc = new Acc();
  if (text.startsWith('p')) {
    parseIso(text, acc, bad);
  } else {
    parseVerbose(text, acc, bad, overflow);
  }
  const iv = new Interval(acc.months, acc.days, acc.micros);
  if (!inRange(iv)) {
    // A time part beyond int64 µs is a field overflow; months or days beyond int32, the whole interval.
    if (!(Math.abs(iv.micros) <= 9.223372036854776e18)) throw overflow();
    throw datetimeOverflow('interval out of range');
  }
  return iv;
}

type Item =
  | { readonly kind: 'time'; readonly micros: number }
  | { readonly kind: 'unit'; readonly unit: Unit; readonly v: number; readonly frac: boolean };

/** Field bits: each may be given once (PostgreSQL's fmask/tmask check). */
const FIELD_BIT: Record<Unit, number> = {
  micro: 1 << 0,
  milli: 1 << 1,
  second: 1 << 2,
  minute: 1 << 3,
  hour: 1 << 4,
  day: 1 << 5,
  week: 1 << 6,
  month: 1 << 7,
  year: 1 << 8,
  decade: 1 << 9,
  century: 1 << 10,
  millennium: 1 << 11,
};
const ALL_SECONDS = FIELD_BIT.second | FIELD_BIT.milli | FIELD_BIT.micro;
const TIME_BITS = FIELD_BIT.hour | FIELD_BIT.minute | ALL_SECONDS;

const NUMBER_RE = /^(?:[+-]?\d+(?:\.\d*)?|\.\d+)$/;

/**
 * The verbose form. Like PostgreSQL's DecodeInterval, fields are applied
 * right to left, each kind at most once (22007 otherwise), and an
 * 'hh:mm:ss' field sets the whole time part — so a fraction spilled from a
 * larger unit written after it is kept, one written before it is not
 * ('16:51:39 .51 mons' → 15 days 16:51:39; '.51 mons 16:51:39' → 15 days 24:03:39).
 */
function parseVerbose(text: string, acc: Acc, bad: () => Error, overflow: () => Error): void {
  const words = text.split(/\s+/);
  let ago = false;
  let i = words[0] === '@' ? 1 : 0;
  const items: Item[] = [];
  for (; i < words.length; i++) {
    let w = words[i] as string;
    if (w === 'ago') {
      if (i !== words.length - 1) throw bad();
      ago = true;
      continue;
    }
    let mt: RegExpExecArray | null;
    if ((mt = /^([+-])?(\d+):(\d+)(?::(\d+(?:\.\d*)?))?$/.exec(w)) !== null) {
      const h = Number(mt[2]);
      const m = Number(mt[3]);
      const sec = Number(mt[4] ?? 0);
      if (m > 59 || sec >= 60) throw overflow();
      const us = h * USECS_PER_HOUR + m * 60 * USECS_PER_SEC + Math.round(sec * USECS_PER_SEC);
      items.push({ kind: 'time', micros: mt[1] === '-' ? -us : us });
      continue;
    }
    if ((mt = /^([+-])?(\d+)-(\d+)$/.exec(w)) !== null) {
      const sign = mt[1] === '-' ? -1 : 1;
      items.push({ kind: 'unit', unit: 'year', v: sign * Number(mt[2]), frac: false });
      items.push({ kind: 'unit', unit: 'month', v: sign * Number(mt[3]), frac: false });
      continue;
    }
    // "<number><unit>" written together, e.g. "10s", "1day"
    const glued = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([a-z]+)$/.exec(w);
    let unitWord: string | undefined;
    if (glued !== null) {
      w = glued[1] as string;
      unitWord = glued[2];
    }
    if (!NUMBER_RE.test(w)) throw bad();
    if (unitWord === undefined) {
      const next = words[i + 1];
      if (next !== undefined && UNITS.has(next)) {
        unitWord = next;
        i++;
      }
    }
    let unit: Unit | undefined;
    if (unitWord === undefined) {
      // A bare number: days before a time ("3 4:05:06"), else seconds.
      const next = words[i + 1];
      unit = next !== undefined && /^[+-]?\d+:/.test(next) ? 'day' : 'second';
    } else {
      unit = UNITS.get(unitWord);
      if (unit === undefined) throw bad();
    }
    const v = Number(w);
    if (v > 2147483647 || v < -2147483648) throw overflow(); // each field is read as an int32
    items.push({ kind: 'unit', unit, v, frac: w.includes('.') && !/\.0*$/.test(w) });
  }
  if (items.length === 0) throw bad();
  let seen = 0;
  for (let k = items.length - 1; k >= 0; k--) {
    const it = items[k] as Item;
    const bits = it.kind === 'time' ? TIME_BITS : it.unit === 'second' && it.frac ? ALL_SECONDS : FIELD_BIT[it.unit];
    if ((seen & bits) !== 0) throw bad();
    seen |= bits;
    if (it.kind === 'time') acc.micros = it.micros;
    else acc.add(it.unit, it.v);
  }
  if (ago) {
    acc.months = -acc.months;
    acc.days = -acc.days;
    acc.micros = -acc.micros;
  }
}

function parseIso(text: string, acc: Acc, bad: () => Error): void {
  let i = 1;
  let inTime = false;
  let sawAny = false;
  while (i < text.length) {
    if (text[i] === 't') {
      if (inTime) throw bad();
      inTime = true;
      i++;
      continue;
    }
    const mt = /^[+-]?(\d+(\.\d*)?|\.\d+)/.exec(text.slice(i));
    if (mt === null) throw bad();
    i += mt[0].length;
    const v = Number(mt[0]);
    const u = text[i++];
    let unit: Unit;
    switch (u) {
      case 'y':
        if (inTime) throw bad();
        unit = 'year';
        break;
      case 'm':
        unit = inTime ? 'minute' : 'month';
        break;
      case 'w':
        if (inTime) throw bad();
        unit = 'week';
        break;
      case 'd':
        if (inTime) throw bad();
        unit = 'day';
        break;
      case 'h':
        if (!inTime) throw bad();
        unit = 'hour';
        break;
      case 's':
        if (!inTime) throw bad();
        unit = 'second';
        break;
      default:
        throw bad();
    }
    acc.add(unit, v);
    sawAny = true;
  }
  if (!sawAny && !inTime) throw bad();
}

/** interval(p): the µs field rounded to p fractional digits, half away from zero. */
export function roundInterval(iv: Interval, precision: number): Interval {
  if (precision >= 6) return iv;
  const scale = 10 ** (6 - precision);
  const m = iv.micros;
  const r = m >= 0 ? Math.floor((m + scale / 2) / scale) * scale : -Math.floor((-m + scale / 2) / scale) * scale;
  return r === m ? iv : new Interval(iv.months, iv.days, r);
}
