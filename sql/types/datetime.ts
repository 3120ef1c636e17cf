/**
 * Dates, timestamps and time zones: calendar arithmetic, PostgreSQL's
 * date/time input syntax and its ISO output (DateStyle = ISO, MDY).
 *
 * Representations (datum.ts):
 *   date         days since 2000-01-01 (PostgreSQL's epoch), an integer in a
 *                number; ±Infinity for 'infinity' / '-infinity'.
 *   timestamp    microseconds since 2000-01-01 00:00:00, in a number;
 *   timestamptz  the same instant in UTC; ±Infinity for the infinities.
 *
 * NB: microseconds are exact in a double only within ±2^53 µs of 2000, i.e.
 * years 1715 … 2284 (a day less at each end for timestamptz shown in a zone,
 * whose local time must be exact too). Outside that window (PostgreSQL
 * accepts 4713 BC … 294276 AD, which we check) a value is the nearest double:
 * sub-second digits lose precision first, and at PostgreSQL's limits a value
 * is up to 1024 µs off. Dates (days) are exact over their whole range.
 *
 * The calendar is proleptic Gregorian with astronomical years (1 BC is year
 * 0), printed as PostgreSQL does ("0001-12-31 BC").
 *
 * Time zones: a TimeZone maps a UTC instant to its offset east of UTC in
 * seconds. Fixed offsets and UTC are computed directly; IANA names ("Europe/
 * Berlin") go through Intl.DateTimeFormat (the ICU tz database), with a
 * per-zone cache. Local → UTC conversion for an ambiguous or skipped local
 * time follows PostgreSQL: in a spring-forward gap use the offset from before
 * the transition, in a fall-back overlap the offset from after it.
 *
 * Ownership: pure functions; the session owns the TimeZone it passes in.
 */
import { SqlError } from '../parser/sql-error.js';
import { datetimeOverflow, invalidDatetimeFormat, invalidParameterValue } from './type-error.js';

export const USECS_PER_SEC = 1_000_000;
export const USECS_PER_MINUTE = 60_000_000;
export const USECS_PER_HOUR = 3_600_000_000;
export const USECS_PER_DAY = 86_400_000_000;
/** Days from 1970-01-01 to 2000-01-01. */
export const UNIX_EPOCH_OFFSET_DAYS = 10957;
/** µs from the Unix epoch to PostgreSQL's (add to convert PG µs → Unix µs). */
export const UNIX_EPOCH_OFFSET_MICROS = UNIX_EPOCH_OFFSET_DAYS * USECS_PER_DAY;

// ---------------------------------------------------------------------------
// Calendar

/** Days since 2000-01-01 of a proleptic Gregorian date (astronomical year). */
export function daysFromCivil(y: number, m: number, d: number): number {
  // Howard Hinnant's days_from_civil, shifted to the 2000 epoch.
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = (m + 9) % 12;
  const doy = Math.floor((153 * mp + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468 - UNIX_EPOCH_OFFSET_DAYS;
}

export interface CivilDate {
  readonly year: number;
  readonly month: number;
  readonly day: number;
}

/** Inverse of daysFromCivil. */
export function civilFromDays(days: number): CivilDate {
  const z = days + UNIX_EPOCH_OFFSET_DAYS + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

export function isLeapYear(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
export function daysInMonth(y: number, m: number): number {
  return m === 2 && isLeapYear(y) ? 29 : (MONTH_DAYS[m - 1] as number);
}

/** date range: 4714-11-24 BC (Julian day 0) … 5874897-12-31. */
export const DATE_MIN_DAYS = daysFromCivil(-4713, 11, 24);
export const DATE_MAX_DAYS = daysFromCivil(5874897, 12, 31);
/** timestamp range: 4714-11-24 BC 00:00 … 294276-12-31 23:59:59.999999. */
export const TIMESTAMP_MIN_MICROS = DATE_MIN_DAYS * USECS_PER_DAY;
export const TIMESTAMP_END_MICROS = daysFromCivil(294277, 1, 1) * USECS_PER_DAY;

export function dateInRange(days: number): boolean {
  return days >= DATE_MIN_DAYS && days <= DATE_MAX_DAYS;
}

export function timestampInRange(micros: number): boolean {
  return micros >= TIMESTAMP_MIN_MICROS && micros < TIMESTAMP_END_MICROS;
}

// ---------------------------------------------------------------------------
// Time zones

export interface TimeZone {
  /** As given to resolveTimeZone (SHOW TimeZone prints it). */
  readonly name: string;
  /** Seconds east of UTC at the instant `utcMicros` (PostgreSQL-epoch µs). */
  offsetAt(utcMicros: number): number;
  /** A fixed offset (seconds east), when the zone has no transitions. */
  readonly fixedOffset: number | undefined;
}

function fixedZone(name: string, offsetSeconds: number): TimeZone {
  return { name, fixedOffset: offsetSeconds, offsetAt: () => offsetSeconds };
}

export const UTC: TimeZone = fixedZone('UTC', 0);

class IanaZone implements TimeZone {
  readonly fixedOffset = undefined;
  private readonly fmt: Intl.DateTimeFormat;
  /** Offsets by UTC minute (transitions fall on whole seconds, in practice whole minutes). */
  private readonly cache = new Map<number, number>();

  constructor(readonly name: string, ianaName: string) {
    this.fmt = new Intl.DateTimeFormat('en-US', {
      timeZone: ianaName,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  }

  offsetAt(utcMicros: number): number {
    const minute = Math.floor(utcMicros / USECS_PER_MINUTE);
    let off = this.cache.get(minute);
    if (off === undefined) {
      off = this.compute(minute * 60);
      if (this.cache.size > 4096) this.cache.clear();
      this.cache.set(minute, off);
    }
    return off;
  }

  private compute(instant: number): number {
    // JS dates end at ±8.64e15 ms (year 275760); beyond, use the offset there.
    const pgSeconds = Math.max(-8.6e12, Math.min(8.6e12, instant));
    const ms = (pgSeconds + UNIX_EPOCH_OFFSET_DAYS * 86400) * 1000;
    let y = 0;
    let mo = 0;
    let d = 0;
    let h = 0;
    let mi = 0;
    let s = 0;
    let bc = false;
    for (const p of this.fmt.formatToParts(ms)) {
      switch (p.type) {
        case 'year':
          y = Number(p.value);
          break;
        case 'month':
          mo = Number(p.value);
          break;
        case 'day':
          d = Number(p.value);
          break;
        case 'hour':
          h = Number(p.value);
          break;
        case 'minute':
          mi = Number(p.value);
          break;
        case 'second':
          s = Number(p.value);
          break;
        case 'era':
          bc = p.value === 'BC' || p.value === 'B';
          break;
        default:
          break;
      }
    }
    if (bc) y = 1 - y;
    const local = daysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
    return local - pgSeconds;
  }
}

const ZONE_ABBREVIATIONS: ReadonlyMap<string, number> = new Map([
  ['utc', 0],
  ['gmt', 0],
  ['z', 0],
  ['zulu', 0],
  ['ut', 0],
  ['est', -5 * 3600],
  ['edt', -4 * 3600],
  ['cst', -6 * 3600],
  ['cdt', -5 * 3600],
  ['mst', -7 * 3600],
  ['mdt', -6 * 3600],
  ['pst', -8 * 3600],
  ['pdt', -7 * 3600],
  ['cet', 3600],
  ['cest', 2 * 3600],
  ['eet', 2 * 3600],
  ['eest', 3 * 3600],
  ['bst', 3600],
  ['ist', 2 * 3600],
  ['jst', 9 * 3600],
  ['msk', 3 * 3600],
]);

const zoneCache = new Map<string, TimeZone>();

/**
 * The TimeZone for a `SET TIME ZONE` value: UTC/GMT/Z, an IANA name
 * ("America/New_York", any case), a number of hours east ('+5', '-3.5'),
 * or a POSIX-style offset west ('+05:30', 'UTC+5' = 5 hours west of UTC),
 * as PostgreSQL reads them. Throws 22023 for an unknown name.
 */
export function resolveTimeZone(name: string): TimeZone {
  const cached = zoneCache.get(name);
  if (cached !== undefined) return cached;
  const zone = lookupZone(name);
  if (zone === undefined) throw invalidParameterValue(`invalid value for parameter "TimeZone": "${name}"`);
  zoneCache.set(name, zone);
  return zone;
}

function lookupZone(name: string): TimeZone | undefined {
  const lower = name.trim().toLowerCase();
  if (lower === 'utc' || lower === 'gmt' || lower === 'z' || lower === 'zulu' || lower === 'etc/utc' || lower === 'universal') {
    return fixedZone(name, 0);
  }
  const hours = /^([+-]?\d+(?:\.\d+)?)$/.exec(lower);
  if (hours !== null) return fixedZone(name, Math.round(Number(hours[1]) * 3600));
  const posix = /^(?:utc|gmt)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$/.exec(lower);
  if (posix !== null) {
    const secs = Number(posix[2]) * 3600 + Number(posix[3] ?? 0) * 60 + Number(posix[4] ?? 0);
    return fixedZone(name, posix[1] === '+' ? -secs : secs); // POSIX: positive is west
  }
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name.trim() }).resolvedOptions().timeZone;
    if (resolved === 'UTC' || resolved === 'Etc/UTC' || resolved === 'Etc/GMT') return fixedZone(name, 0);
    return new IanaZone(name, resolved);
  } catch {
    return undefined;
  }
}

/** A zone named inside timestamp text: abbreviation, IANA name or numeric offset (ISO sign: + is east). */
function zoneFromText(word: string): TimeZone | undefined {
  const abbr = ZONE_ABBREVIATIONS.get(word);
  if (abbr !== undefined) return fixedZone(word, abbr);
  if (!/^[a-z]/.test(word)) return undefined;
  if (!word.includes('/')) return undefined;
  const cached = zoneCache.get(word);
  if (cached !== undefined) return cached;
  const z = lookupZone(word);
  if (z !== undefined) zoneCache.set(word, z);
  return z;
}

/**
 * The UTC instant of local time `localMicros` in `zone` (PostgreSQL's
 * DetermineTimeZoneOffset: gap → offset before, overlap → offset after).
 */
export function localToUtc(localMicros: number, zone: TimeZone): number {
  if (zone.fixedOffset !== undefined) return localMicros - zone.fixedOffset * USECS_PER_SEC;
  const before = zone.offsetAt(localMicros - USECS_PER_DAY);
  const after = zone.offsetAt(localMicros + USECS_PER_DAY);
  if (before === after) {
    const o = zone.offsetAt(localMicros - before * USECS_PER_SEC);
    return localMicros - o * USECS_PER_SEC;
  }
  const validBefore = zone.offsetAt(localMicros - before * USECS_PER_SEC) === before;
  const validAfter = zone.offsetAt(localMicros - after * USECS_PER_SEC) === after;
  let off: number;
  if (validBefore && validAfter) off = Math.min(before, after);
  else if (validBefore) off = before;
  else if (validAfter) off = after;
  else off = Math.min(before, after);
  return localMicros - off * USECS_PER_SEC;
}

// ---------------------------------------------------------------------------
// Output

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

function yearText(y: number): string {
  const v = y > 0 ? y : 1 - y;
  return v < 1000 ? String(v).padStart(4, '0') : String(v);
}

/** "2020-01-31", "0044-03-15 BC", "infinity". */
export function formatDate(days: number): string {
  if (days === Infinity) return 'infinity';
  if (days === -Infinity) return '-infinity';
  const c = civilFromDays(days);
  const s = `${yearText(c.year)}-${pad2(c.month)}-${pad2(c.day)}`;
  return c.year <= 0 ? `${s} BC` : s;
}

/** "HH:MM:SS[.ffffff]" with trailing zeros of the fraction dropped. */
export function formatTimeOfDay(todMicros: number): string {
  const secsTotal = Math.floor(todMicros / USECS_PER_SEC);
  const frac = todMicros - secsTotal * USECS_PER_SEC;
  const h = Math.floor(secsTotal / 3600);
  const m = Math.floor((secsTotal % 3600) / 60);
  const s = secsTotal % 60;
  const base = `${pad2(h)}:${pad2(m)}:${pad2(s)}`;
  return frac === 0 ? base : `${base}.${fractionDigits(frac)}`;
}

/** Six digits of µs with trailing zeros removed ("5" for 500000). */
export function fractionDigits(micros: number): string {
  let s = String(micros).padStart(6, '0');
  let end = 6;
  while (end > 1 && s.charCodeAt(end - 1) === 48) end--;
  if (end < 6) s = s.slice(0, end);
  return s;
}

/** "+05", "-03:30", "-04:56:02". */
export function formatOffset(offsetSeconds: number): string {
  const sign = offsetSeconds < 0 ? '-' : '+';
  const a = Math.abs(offsetSeconds);
  const h = Math.floor(a / 3600);
  const m = Math.floor((a % 3600) / 60);
  const s = a % 60;
  let out = sign + pad2(h);
  if (m !== 0 || s !== 0) out += `:${pad2(m)}`;
  if (s !== 0) out += `:${pad2(s)}`;
  return out;
}

function formatLocal(micros: number, suffix: string): string {
  const days = Math.floor(micros / USECS_PER_DAY);
  const tod = micros - days * USECS_PER_DAY;
  const c = civilFromDays(days);
  const s = `${yearText(c.year)}-${pad2(c.month)}-${pad2(c.day)} ${formatTimeOfDay(tod)}${suffix}`;
  return c.year <= 0 ? `${s} BC` : s;
}

/** timestamp output: "2020-01-31 12:00:00.5". */
export function formatTimestamp(micros: number): string {
  if (micros === Infinity) return 'infinity';
  if (micros === -Infinity) return '-infinity';
  return formatLocal(micros, '');
}

/** timestamptz output in `zone`: "2020-01-31 12:00:00.5+01". */
export function formatTimestampTz(micros: number, zone: TimeZone): string {
  if (micros === Infinity) return 'infinity';
  if (micros === -Infinity) return '-infinity';
  const off = zone.fixedOffset ?? zone.offsetAt(micros);
  return formatLocal(micros + off * USECS_PER_SEC, formatOffset(off));
}

// ---------------------------------------------------------------------------
// Input

export interface DateTimeContext {
  /** Session time zone, for timestamptz input without an explicit zone. */
  readonly timeZone: TimeZone;
  /** Current transaction time (PG-epoch µs) for 'now', 'today', …; those words are rejected without it. */
  readonly nowMicros?: number;
}

export const UTC_CONTEXT: DateTimeContext = { timeZone: UTC };

const MONTHS: ReadonlyMap<string, number> = new Map([
  ['jan', 1], ['january', 1], ['feb', 2], ['february', 2], ['mar', 3], ['march', 3], ['apr', 4], ['april', 4],
  ['may', 5], ['jun', 6], ['june', 6], ['jul', 7], ['july', 7], ['aug', 8], ['august', 8],
  ['sep', 9], ['sept', 9], ['september', 9], ['oct', 10], ['october', 10], ['nov', 11], ['november', 11],
  ['dec', 12], ['december', 12],
]);
const WEEKDAYS = new Set(['sun', 'sunday', 'mon', 'monday', 'tue', 'tues', 'tuesday', 'wed', 'wednesday', 'thu', 'thur', 'thurs', 'thursday', 'fri', 'friday', 'sat', 'saturday']);

/** What date/time text parsed to. `special` is set for infinity/-infinity. */
interface ParsedDateTime {
  special?: 1 | -1;
  days: number;
  /** Time of day in µs (may be 24:00:00 or carry a leap second). */
  tod: number;
  hasTime: boolean;
  /** Explicit zone in the text, if any. */
  zone: TimeZone | undefined;
  /** Explicit numeric offset (seconds east), if any. */
  offset: number | undefined;
}

/**
 * Parses date/time text in PostgreSQL's accepted forms (ISO 8601 with 'T' or
 * space, MDY with '/', '-' or '.', month names, YYYYMMDD, BC/AD, AM/PM, zone
 * suffixes). Throws 22007 for bad syntax and 22008 for out-of-range fields.
 */
function parseDateTime(input: string, typeName: string, ctx: DateTimeContext): ParsedDateTime {
  const text = input.trim().toLowerCase();
  const syntax = () => invalidDatetimeFormat(typeName, input);
  const range = () => datetimeOverflow(`date/time field value out of range: "${input}"`);
  const out: ParsedDateTime = { days: 0, tod: 0, hasTime: false, zone: undefined, offset: undefined };
  switch (text) {
    case 'infinity':
    case '+infinity':
      out.special = 1;
      return out;
    case '-infinity':
      out.special = -1;
      return out;
    case 'epoch':
      out.days = -UNIX_EPOCH_OFFSET_DAYS;
      out.hasTime = true;
      out.offset = 0;
      return out;
    case 'now':
    case 'today':
    case 'tomorrow':
    case 'yesterday': {
      if (ctx.nowMicros === undefined) throw syntax();
      const offset = ctx.timeZone.fixedOffset ?? ctx.timeZone.offsetAt(ctx.nowMicros);
      const local = ctx.nowMicros + offset * USECS_PER_SEC;
      if (text === 'now') {
        // The session-local wall time with its offset: every type reads what it needs.
        out.days = Math.floor(local / USECS_PER_DAY);
        out.tod = local - out.days * USECS_PER_DAY;
        out.hasTime = true;
        out.offset = offset;
        return out;
      }
      out.days = Math.floor(local / USECS_PER_DAY) + (text === 'tomorrow' ? 1 : text === 'yesterday' ? -1 : 0);
      return out;
    }
    default:
      break;
  }
  // Split into fields: whitespace/commas separate; 'T' between date and time; a sign after a time starts a zone.
  const raw = text
    .replace(/(\d)t(\d)/, '$1 $2')
    .replace(/(\d:\d\d(?::\d\d)?(?:\.\d*)?)([+-])/, '$1 $2')
    .replace(/(\d:\d\d(?::\d\d(?:\.\d*)?)?)z$/, '$1 z')
    .split(/[\s,]+/)
    .filter((f) => f !== '');
  let y: number | undefined;
  let m: number | undefined;
  let d: number | undefined;
  let twoDigitYear = false;
  let bc = false;
  let ampm: 'am' | 'pm' | undefined;
  const loose: string[] = [];
  let hour = 0;
  let minute = 0;
  let second = 0;
  let micro = 0;
  {
    for (let i = 0; i < raw.length; i++) {
      const f = raw[i] as string;
      let mt: RegExpExecArray | null;
      if ((mt = /^(\d+)([-/.])(\d+)\2(\d+)$/.exec(f)) !== null && y === undefined) {
        const [a, b, c] = [mt[1] as string, mt[3] as string, mt[4] as string];
        if (a.length >= 3 || mt[2] === '-' && a.length > 2) {
          y = Number(a);
          m = Number(b);
          d = Number(c);
        } else {
          m = Number(a);
          d = Number(b);
          y = Number(c);
          twoDigitYear = c.length <= 2;
        }
      } else if ((mt = /^(\d+)-([a-z]+)-(\d+)$/.exec(f)) !== null && y === undefined) {
        const mon = MONTHS.get(mt[2] as string);
        if (mon === undefined) throw syntax();
        m = mon;
        if ((mt[1] as string).length >= 3) {
          y = Number(mt[1]);
          d = Number(mt[3]);
        } else {
          d = Number(mt[1]);
          y = Number(mt[3]);
          twoDigitYear = (mt[3] as string).length <= 2;
        }
      } else if ((mt = /^([a-z]+)-(\d+)-(\d+)$/.exec(f)) !== null && y === undefined) {
        const mon = MONTHS.get(mt[1] as string);
        if (mon === undefined) throw syntax();
        m = mon;
        d = Number(mt[2]);
        y = Number(mt[3]);
        twoDigitYear = (mt[3] as string).length <= 2;
      } else if ((mt = /^(\d{1,2}):(\d{1,2})\.(\d*)$/.exec(f)) !== null && !out.hasTime) {
        // 'mm:ss.fff' — a fraction on the second field makes it minutes:seconds
        out.hasTime = true;
        minute = Number(mt[1]);
        second = Number(mt[2]);
        micro = fractionToMicros(mt[3] as string);
      } else if ((mt = /^(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?$/.exec(f)) !== null && !out.hasTime) {
        out.hasTime = true;
        hour = Number(mt[1]);
        minute = Number(mt[2]);
        second = Number(mt[3] ?? 0);
        micro = fractionToMicros(mt[4] ?? '');
      } else if (/^[+-]\d/.test(f) && (out.hasTime || y !== undefined)) {
        mt = /^([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$/.exec(f);
        if (mt === null) throw syntax();
        const secs = Number(mt[2]) * 3600 + Number(mt[3] ?? 0) * 60 + Number(mt[4] ?? 0);
        if (Number(mt[2]) > 15 || Number(mt[3] ?? 0) > 59 || Number(mt[4] ?? 0) > 59) {
          throw new SqlError('sql.invalid_time_zone_displacement_value', '22009', `time zone displacement out of range: "${input}"`);
        }
        out.offset = mt[1] === '-' ? -secs : secs;
      } else if (f === 'bc' || f === 'ad') {
        bc = f === 'bc';
      } else if (f === 'am' || f === 'pm') {
        ampm = f;
      } else if (MONTHS.has(f)) {
        m = MONTHS.get(f);
      } else if (WEEKDAYS.has(f)) {
        // ignored, as PostgreSQL does
      } else if (/^\d{8}$/.test(f) && y === undefined) {
        y = Number(f.slice(0, 4));
        m = Number(f.slice(4, 6));
        d = Number(f.slice(6, 8));
      } else if (/^\d{6}$/.test(f) && y === undefined && m === undefined) {
        y = Number(f.slice(0, 2));
        m = Number(f.slice(2, 4));
        d = Number(f.slice(4, 6));
        twoDigitYear = true;
      } else if (/^j\d+$/.test(f) && y === undefined) {
        const c = civilFromDays(Number(f.slice(1)) - 2451545);
        y = c.year;
        m = c.month;
        d = c.day;
      } else if (/^\d+$/.test(f)) {
        loose.push(f);
      } else {
        const z = zoneFromText(f);
        if (z === undefined) throw syntax();
        out.zone = z;
      }
    }
  }
  // Without a month name, blank-separated numbers read as M D Y (DateStyle MDY)
  // or Y M D when the first has 3+ digits; a lone first number is the month.
  if (m === undefined && y === undefined && loose.length > 0) {
    if (loose.length === 3) {
      const [a, b, c] = loose as [string, string, string];
      if (a.length >= 3) [y, m, d] = [Number(a), Number(b), Number(c)];
      else {
        [m, d, y] = [Number(a), Number(b), Number(c)];
        twoDigitYear = c.length <= 2;
      }
      loose.length = 0;
    } else if (Number(loose[0]) > 12 && (loose[0] as string).length <= 2) {
      throw range();
    }
  }
  // Loose numbers fill day, then year (with a month name: "January 8, 1999", "8 Jan 1999").
  for (const n of loose) {
    if (d === undefined && n.length <= 2 && y === undefined) d = Number(n);
    else if (y === undefined) {
      y = Number(n);
      twoDigitYear = n.length <= 2;
    } else if (d === undefined) d = Number(n);
    else throw syntax();
  }
  if (y === undefined || m === undefined || d === undefined) throw syntax();
  if (twoDigitYear) y += y < 70 ? 2000 : 1900;
  if (bc) {
    if (y <= 0) throw range();
    y = 1 - y;
  } else if (y === 0) {
    throw range();
  }
  if (m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) throw range();
  if (ampm !== undefined) {
    if (hour > 12) throw range(); // hour 0 is accepted: '0:30 pm' is 12:30
    if (ampm === 'am' && hour === 12) hour = 0;
    else if (ampm === 'pm' && hour !== 12) hour += 12;
  }
  if (hour > 24 || minute > 59 || second > 60 || (hour === 24 && (minute > 0 || second > 0 || micro > 0))) throw range();
  out.days = daysFromCivil(y, m, d);
  out.tod = hour * USECS_PER_HOUR + minute * USECS_PER_MINUTE + second * USECS_PER_SEC + micro;
  return out;
}

/**
 * ".1234567" digits → µs as PostgreSQL computes them: the fraction read as a
 * double, times 10^6, rint() (so .1234565 → 123456: the double is just below).
 * A carry into the seconds happens in the caller's sum.
 */
function fractionToMicros(digits: string): number {
  if (digits.length <= 6) return Number(digits.padEnd(6, '0'));
  const v = Number(`0.${digits}`) * 1e6;
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function digitsAt(s: string, i: number, n: number): number {
  let v = 0;
  for (let k = i; k < i + n; k++) {
    const c = s.charCodeAt(k) - 48;
    if (c < 0 || c > 9) return -1;
    v = v * 10 + c;
  }
  return v;
}

/**
 * The fast path for the strict ISO 8601 forms drivers send
 * ('2020-01-31', '2020-01-31 12:34:56.789', '2020-01-31T12:34:56.789+01:00',
 * '…Z'); undefined for anything else, which then takes the general parser.
 * Agrees with parseDateTime wherever it answers (tested).
 */
function parseIsoFast(s: string): ParsedDateTime | undefined {
  const n = s.length;
  if (n < 10 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return undefined;
  const y = digitsAt(s, 0, 4);
  const m = digitsAt(s, 5, 2);
  const d = digitsAt(s, 8, 2);
  if (y < 1 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return undefined;
  const out: ParsedDateTime = { days: daysFromCivil(y, m, d), tod: 0, hasTime: false, zone: undefined, offset: undefined };
  if (n === 10) return out;
  const sep = s.charCodeAt(10);
  if ((sep !== 32 && sep !== 84) || n < 19 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return undefined;
  const hh = digitsAt(s, 11, 2);
  const mi = digitsAt(s, 14, 2);
  const ss = digitsAt(s, 17, 2);
  if (hh < 0 || hh > 23 || mi < 0 || mi > 59 || ss < 0 || ss > 59) return undefined;
  let i = 19;
  let micro = 0;
  if (s.charCodeAt(i) === 46) {
    const start = ++i;
    while (i < n && s.charCodeAt(i) >= 48 && s.charCodeAt(i) <= 57) i++;
    if (i === start || i - start > 6) return undefined;
    micro = digitsAt(s, start, i - start) * 10 ** (6 - (i - start));
  }
  out.hasTime = true;
  out.tod = hh * USECS_PER_HOUR + mi * USECS_PER_MINUTE + ss * USECS_PER_SEC + micro;
  if (i === n) return out;
  const z = s.charCodeAt(i);
  if (z === 90 && i + 1 === n) {
    out.offset = 0;
    return out;
  }
  if (z !== 43 && z !== 45) return undefined;
  const oh = digitsAt(s, i + 1, 2);
  if (oh < 0 || oh > 15) return undefined;
  let om = 0;
  let j = i + 3;
  if (j < n) {
    if (s.charCodeAt(j) === 58) j++;
    om = digitsAt(s, j, 2);
    j += 2;
    if (om < 0 || om > 59 || j !== n) return undefined;
  }
  const off = oh * 3600 + om * 60;
  out.offset = z === 45 ? -off : off;
  return out;
}

/** date input → days since 2000-01-01 (±Infinity for the infinities). */
export function parseDate(input: string, ctx: DateTimeContext = UTC_CONTEXT): number {
  const fast = parseIsoFast(input);
  if (fast !== undefined) return fast.days;
  const p = parseDateTime(input, 'date', ctx);
  if (p.special !== undefined) return p.special * Infinity;
  if (!dateInRange(p.days)) throw datetimeOverflow(`date out of range: "${input}"`);
  return p.days;
}

/** timestamp input (a zone in the text is ignored, as PostgreSQL does) → µs. */
export function parseTimestamp(input: string, ctx: DateTimeContext = UTC_CONTEXT): number {
  const fast = parseIsoFast(input);
  if (fast !== undefined) return fast.days * USECS_PER_DAY + fast.tod;
  const p = parseDateTime(input, 'timestamp', ctx);
  if (p.special !== undefined) return p.special * Infinity;
  const t = p.days * USECS_PER_DAY + p.tod;
  if (!timestampInRange(t)) throw datetimeOverflow(`timestamp out of range: "${input}"`);
  return t;
}

/** timestamptz input → UTC µs; without a zone in the text the session zone applies. */
export function parseTimestampTz(input: string, ctx: DateTimeContext = UTC_CONTEXT): number {
  const p = parseIsoFast(input) ?? parseDateTime(input, 'timestamp with time zone', ctx);
  if (p.special !== undefined) return p.special * Infinity;
  const local = p.days * USECS_PER_DAY + p.tod;
  let t: number;
  if (p.offset !== undefined) t = local - p.offset * USECS_PER_SEC;
  else t = localToUtc(local, p.zone ?? ctx.timeZone);
  if (!timestampInRange(t)) throw datetimeOverflow(`timestamp out of range: "${input}"`);
  return t;
}

/** Rounds µs to `precision` fractional digits, half away from zero (AdjustTimestampForTypmod). */
export function roundMicros(micros: number, precision: number): number {
  if (precision >= 6 || !Number.isFinite(micros)) return micros;
  const scale = 10 ** (6 - precision);
  return micros >= 0 ? Math.floor((micros + scale / 2) / scale) * scale : -Math.floor((-micros + scale / 2) / scale) * scale;
}

