/**
 * sql/sem/datetime-fields.ts — `extract(field FROM x)` and `date_part('field', x)`
 * over date, timestamp, timestamptz and interval, as PostgreSQL 15 computes
 * them (timestamp.c timestamp_part_common / interval_part_common, date.c
 * extract_date):
 *
 *   extract    → numeric, exact: second 6 decimals, millisecond 3, epoch of
 *                a timestamp 6, of a date 0, julian of a timestamp the numeric
 *                quotient j + µs-of-day / 86 400 000 000
 *   date_part  → float8, by PostgreSQL's float formulas (second = s + µs / 1e6
 *                …), so the last digit agrees; date_part(…, date) reads the
 *                date as a timestamp (PostgreSQL's SQL wrapper does the cast)
 *
 * Fields are case-insensitive and accept PostgreSQL's unit spellings
 * (years, mon, hrs, secs, ms, usec, qtr, …). A field that does not exist is
 * 22023 `unit "x" not recognized for type T`; one that exists but not for the
 * type (hour of a date, dow of an interval) is 0A000 `unit "x" not supported
 * for type T`. Of ±infinity, the fields that grow with time (year, decade,
 * century, millennium, julian, isoyear, epoch) are ±Infinity, the others NULL.
 * timestamptz fields are read in the session's TimeZone (its offset at that
 * instant); timezone / timezone_hour / timezone_minute give that offset.
 *
 * Pure functions of their inputs; the time zone comes from the EvalEnv.
 */
import { SqlError } from '../parser/sql-error.js';
import { Decimal } from '../types/decimal.js';
import { USECS_PER_DAY, USECS_PER_SEC, UNIX_EPOCH_OFFSET_DAYS, UNIX_EPOCH_OFFSET_MICROS, civilFromDays, daysFromCivil, resolveTimeZone, type TimeZone } from '../types/datetime.js';
import type { Interval } from '../types/interval.js';
import { T, formatType, type SqlType } from '../types/type.js';

/** Julian day number of 2000-01-01 (PostgreSQL's POSTGRES_EPOCH_JDATE). */
const POSTGRES_EPOCH_JDATE = 2451545;

type Field =
  | 'year' | 'month' | 'day' | 'hour' | 'minute' | 'second' | 'millisecond' | 'microsecond'
  | 'epoch' | 'dow' | 'isodow' | 'doy' | 'quarter' | 'week' | 'decade' | 'century' | 'millennium'
  | 'isoyear' | 'julian' | 'timezone' | 'timezone_hour' | 'timezone_minute';

const UNITS: ReadonlyMap<string, Field> = new Map<string, Field>([
  ...['year', 'years', 'y', 'yr', 'yrs'].map((u) => [u, 'year'] as const),
  ...['month', 'months', 'mon', 'mons'].map((u) => [u, 'month'] as const),
  ...['day', 'days', 'd'].map((u) => [u, 'day'] as const),
  ...['hour', 'hours', 'h', 'hr', 'hrs'].map((u) => [u, 'hour'] as const),
  ...['minute', 'minutes', 'm', 'min', 'mins'].map((u) => [u, 'minute'] as const),
  ...['second', 'seconds', 's', 'sec', 'secs'].map((u) => [u, 'second'] as const),
  ...['millisecond', 'milliseconds', 'ms', 'msec', 'msecs', 'msecond', 'mseconds'].map((u) => [u, 'millisecond'] as const),
  ...['microsecond', 'microseconds', 'us', 'usec', 'usecs', 'usecond', 'useconds'].map((u) => [u, 'microsecond'] as const),
  ...['quarter', 'qtr'].map((u) => [u, 'quarter'] as const),
  ...['week', 'weeks', 'w'].map((u) => [u, 'week'] as const),
  ...['decade', 'decades', 'dec', 'decs'].map((u) => [u, 'decade'] as const),
  ...['century', 'centuries', 'c', 'cent'].map((u) => [u, 'century'] as const),
  ...['millennium', 'millennia', 'mil', 'mils', 'millenniums'].map((u) => [u, 'millennium'] as const),
  ...['julian', 'j', 'jd'].map((u) => [u, 'julian'] as const),
  ...['timezone_h', 'timezone_hour'].map((u) => [u, 'timezone_hour'] as const),
  ...['timezone_m', 'timezone_minute'].map((u) => [u, 'timezone_minute'] as const),
  ['epoch', 'epoch'], ['dow', 'dow'], ['isodow', 'isodow'], ['doy', 'doy'], ['isoyear', 'isoyear'], ['timezone', 'timezone'],
]);

/** Fields that grow with time: ±Infinity of an infinite input (the others are NULL). */
const MONOTONIC: ReadonlySet<Field> = new Set<Field>(['year', 'decade', 'century', 'millennium', 'julian', 'isoyear', 'epoch']);

const DATE_FIELDS: ReadonlySet<Field> = new Set<Field>(['year', 'month', 'day', 'quarter', 'week', 'dow', 'isodow', 'doy', 'decade', 'century', 'millennium', 'isoyear', 'julian', 'epoch']);
const TIMESTAMP_FIELDS: ReadonlySet<Field> = new Set<Field>([...DATE_FIELDS, 'hour', 'minute', 'second', 'millisecond', 'microsecond']);
const TIMESTAMPTZ_FIELDS: ReadonlySet<Field> = new Set<Field>([...TIMESTAMP_FIELDS, 'timezone', 'timezone_hour', 'timezone_minute']);
const INTERVAL_FIELDS: ReadonlySet<Field> = new Set<Field>(['year', 'month', 'day', 'hour', 'minute', 'second', 'millisecond', 'microsecond', 'quarter', 'decade', 'century', 'millennium', 'epoch']);

/** Whether `t` is a type extract / date_part read. */
export function hasDateFields(t: SqlType): boolean {
  return t.family === 'date' || t.family === 'timestamp' || t.family === 'timestamptz' || t.family === 'interval';
}

function fieldFor(text: string, t: SqlType): Field {
  const unit = text.toLowerCase();
  const f = UNITS.get(unit);
  if (f === undefined) throw new SqlError('sql.invalid_parameter_value', '22023', `unit "${unit}" not recognized for type ${formatType(t)}`);
  const ok = t.family === 'date' ? DATE_FIELDS : t.family === 'timestamp' ? TIMESTAMP_FIELDS : t.family === 'timestamptz' ? TIMESTAMPTZ_FIELDS : INTERVAL_FIELDS;
  if (!ok.has(f)) throw new SqlError('sql.feature_not_supported', '0A000', `unit "${unit}" not supported for type ${formatType(t)}`);
  return f;
}

/** C's truncating integer division. */
function cdiv(a: number, b: number): number {
  return Math.trunc(a / b);
}

/** j2day: 0 = Sunday. */
function dayOfWeek(j: number): number {
  const d = (j + 1) % 7;
  return d < 0 ? d + 7 : d;
}

function date2j(y: number, m: number, d: number): number {
  return daysFromCivil(y, m, d) + POSTGRES_EPOCH_JDATE;
}

/** ISO 8601 week number and week-numbering year (date2isoweek / date2isoyear). */
function isoWeek(y: number, m: number, d: number): { week: number; year: number } {
  const dayn = date2j(y, m, d);
  let year = y;
  let day4 = date2j(year, 1, 4);
  let day0 = dayOfWeek(day4 - 1);
  if (dayn < day4 - day0) {
    year--;
    day4 = date2j(year, 1, 4);
    day0 = dayOfWeek(day4 - 1);
  }
  let week = Math.floor((dayn - (day4 - day0)) / 7) + 1;
  if (week >= 52) {
    const next4 = date2j(year + 1, 1, 4);
    const next0 = dayOfWeek(next4 - 1);
    if (dayn >= next4 - next0) {
      year++;
      week = Math.floor((dayn - (next4 - next0)) / 7) + 1;
    }
  }
  return { week, year };
}

/** A calendar field of a date (astronomical year `y`); undefined for time-of-day fields. */
function calendarField(f: Field, y: number, m: number, d: number): number | undefined {
  switch (f) {
    case 'year':
      return y > 0 ? y : y - 1; // there is no year 0: 1 BC is -1
    case 'month':
      return m;
    case 'day':
      return d;
    case 'quarter':
      return cdiv(m - 1, 3) + 1;
    case 'week':
      return isoWeek(y, m, d).week;
    case 'dow':
      return dayOfWeek(date2j(y, m, d));
    case 'isodow': {
      const w = dayOfWeek(date2j(y, m, d));
      return w === 0 ? 7 : w;
    }
    case 'doy':
      return date2j(y, m, d) - date2j(y, 1, 1) + 1;
    case 'decade':
      return y >= 0 ? cdiv(y, 10) : -cdiv(8 - (y - 1), 10);
    case 'century':
      return y > 0 ? cdiv(y + 99, 100) : -cdiv(99 - (y - 1), 100);
    case 'millennium':
      return y > 0 ? cdiv(y + 999, 1000) : -cdiv(999 - (y - 1), 1000);
    case 'isoyear': {
      const iy = isoWeek(y, m, d).year;
      return iy <= 0 ? iy - 1 : iy;
    }
    default:
      return undefined;
  }
}

/** The value of a field: exact as coef × 10^−scale, plus the float8 date_part computes. */
interface FieldValue {
  readonly exact: Decimal;
  readonly float: number;
}

function int(n: number): FieldValue {
  return { exact: Decimal.fromInt(n), float: n };
}

function infinite(f: Field, sign: number): FieldValue | null {
  if (!MONOTONIC.has(f)) return null;
  return sign > 0 ? { exact: Decimal.POS_INF, float: Infinity } : { exact: Decimal.NEG_INF, float: -Infinity };
}

/** Seconds-within-minute fields from whole seconds and µs (same sign). */
function secondsField(f: Field, sec: number, usec: number): FieldValue | undefined {
  const total = BigInt(sec) * 1_000_000n + BigInt(usec);
  switch (f) {
    case 'microsecond':
      return { exact: Decimal.of(total, 0), float: sec * 1_000_000 + usec };
    case 'millisecond':
      return { exact: Decimal.of(total, 3), float: sec * 1000 + usec / 1000 };
    case 'second':
      return { exact: Decimal.of(total, 6), float: sec + usec / 1_000_000 };
    default:
      return undefined;
  }
}

/** hours / minutes / seconds / µs of a µs count, each with its sign (C's truncation; interval2itm). */
function splitMicros(us: number): { hour: number; minute: number; sec: number; usec: number } {
  const rest = us % 3_600_000_000;
  return { hour: cdiv(us, 3_600_000_000), minute: cdiv(rest, 60_000_000), sec: cdiv(rest % 60_000_000, USECS_PER_SEC), usec: rest % USECS_PER_SEC };
}

/** A field of a local timestamp (µs since 2000-01-01, finite). */
function timestampField(f: Field, local: number, utc: number, zoneOffsetSec: number): FieldValue {
  const days = Math.floor(local / USECS_PER_DAY);
  const tod = local - days * USECS_PER_DAY;
  const { year, month, day } = civilFromDays(days);
  const cal = calendarField(f, year, month, day);
  if (cal !== undefined) return int(cal);
  const { hour, minute, sec, usec } = splitMicros(tod);
  const s = secondsField(f, sec, usec);
  if (s !== undefined) return s;
  switch (f) {
    case 'hour':
      return int(hour);
    case 'minute':
      return int(minute);
    case 'epoch': {
      const us = utc + UNIX_EPOCH_OFFSET_MICROS; // µs since 1970
      return { exact: Decimal.of(BigInt(us), 6), float: us / 1_000_000 };
    }
    case 'julian': {
      const j = date2j(year, month, day);
      const exact = Decimal.fromInt(j).add(Decimal.fromInt(tod).div(Decimal.fromInt(USECS_PER_DAY)));
      return { exact, float: j + (hour * 3600 + minute * 60 + sec + usec / 1_000_000) / 86400 };
    }
    case 'timezone':
      return int(zoneOffsetSec);
    case 'timezone_hour':
      return int(cdiv(zoneOffsetSec, 3600));
    case 'timezone_minute':
      return int(cdiv(zoneOffsetSec, 60) % 60);
    default:
      throw new Error(`sem: date field ${f} unhandled`);
  }
}

function dateField(f: Field, days: number): FieldValue | null {
  if (!Number.isFinite(days)) return infinite(f, days);
  const { year, month, day } = civilFromDays(days);
  const cal = calendarField(f, year, month, day);
  if (cal !== undefined) return int(cal);
  if (f === 'julian') return int(days + POSTGRES_EPOCH_JDATE);
  if (f === 'epoch') return int((days + UNIX_EPOCH_OFFSET_DAYS) * 86400);
  throw new Error(`sem: date field ${f} unhandled`);
}

function intervalField(f: Field, iv: Interval): FieldValue {
  const years = cdiv(iv.months, 12);
  const months = iv.months % 12;
  const { hour, minute, sec, usec } = splitMicros(iv.micros);
  const s = secondsField(f, sec, usec);
  if (s !== undefined) return s;
  switch (f) {
    case 'year':
      return int(years);
    case 'month':
      return int(months);
    case 'day':
      return int(iv.days);
    case 'hour':
      return int(hour);
    case 'minute':
      return int(minute);
    case 'quarter':
      return int(cdiv(months, 3) + 1);
    case 'decade':
      return int(cdiv(years, 10));
    case 'century':
      return int(cdiv(years, 100));
    case 'millennium':
      return int(cdiv(years, 1000));
    case 'epoch': {
      // 365.25 days a year, 30 a month.
      const secs = 31_557_600n * BigInt(years) + 2_592_000n * BigInt(months) + 86_400n * BigInt(iv.days);
      const exact = Decimal.of(secs * 1_000_000n + BigInt(iv.micros), 6);
      let float = iv.micros / 1_000_000;
      float += 365.25 * 86400 * years;
      float += 30 * 86400 * months;
      float += 86400 * iv.days;
      return { exact, float };
    }
    default:
      throw new Error(`sem: interval field ${f} unhandled`);
  }
}

function zoneOf(setting: string, cache: { name: string; zone: TimeZone } | undefined): TimeZone {
  return cache !== undefined && cache.name === setting ? cache.zone : resolveTimeZone(setting);
}

/**
 * Compiles the field of `extract` / `date_part` over a value of type `t`:
 * returns the function from (field text, datum, session TimeZone) to its value
 * (numeric for extract, float8 for date_part), or null.
 */
export function dateFieldFn(t: SqlType, numeric: boolean): (field: string, d: number | Interval, timeZone: () => string) => Decimal | number | null {
  // date_part(text, date) is date_part(text, date::timestamp) in PostgreSQL.
  const family = !numeric && t.family === 'date' ? 'timestamp' : t.family;
  const asType: SqlType = family === t.family ? t : T.timestamp;
  let zone: { name: string; zone: TimeZone } | undefined;
  return (fieldText, d, timeZone) => {
    const f = fieldFor(fieldText, asType);
    let v: FieldValue | null;
    if (family === 'interval') v = intervalField(f, d as Interval);
    else if (family === 'date') v = dateField(f, d as number);
    else {
      let utc = d as number;
      if (family === 'timestamp' && t.family === 'date') utc = Number.isFinite(utc) ? utc * USECS_PER_DAY : utc;
      if (!Number.isFinite(utc)) v = infinite(f, utc);
      else if (family === 'timestamptz') {
        const name = timeZone();
        const z = zoneOf(name, zone);
        zone = { name, zone: z };
        const off = z.fixedOffset ?? z.offsetAt(utc);
        v = timestampField(f, utc + off * USECS_PER_SEC, utc, off);
      } else v = timestampField(f, utc, utc, 0);
    }
    if (v === null) return null;
    return numeric ? v.exact : v.float;
  };
}
