// Calendar arithmetic, the ISO fast path and time-zone rules (datetime.ts).
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { civilFromDays, daysFromCivil, formatTimestampTz, parseDate, parseTimestamp, parseTimestampTz, resolveTimeZone, UNIX_EPOCH_OFFSET_DAYS, USECS_PER_DAY } from '../../sql/types/datetime.js';
import { CairnError } from '../../src/util/errors.js';
import { errorOf } from './support.js';

const pad = (n: number, w: number) => String(n).padStart(w, '0');

describe('calendar', () => {
  it('daysFromCivil agrees with Date.UTC and civilFromDays inverts it', () => {
    fc.assert(
      fc.property(fc.integer({ min: -271000, max: 271000 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 28 }), (y, m, d) => {
        const days = daysFromCivil(y, m, d);
        const utc = new Date(0);
        utc.setUTCFullYear(y, m - 1, d);
        expect(days).toBe(Math.round(utc.getTime() / 86_400_000) - UNIX_EPOCH_OFFSET_DAYS);
        expect(civilFromDays(days)).toEqual({ year: y, month: m, day: d });
      }),
    );
  });
});

describe('the ISO fast path agrees with the general parser', () => {
  // A leading blank makes the fast path decline, so ' ' + s takes the general parser.
  const iso = fc
    .record({
      y: fc.integer({ min: 1, max: 9999 }),
      m: fc.integer({ min: 1, max: 12 }),
      d: fc.integer({ min: 1, max: 28 }),
      h: fc.integer({ min: 0, max: 23 }),
      mi: fc.integer({ min: 0, max: 59 }),
      s: fc.integer({ min: 0, max: 59 }),
      frac: fc.option(fc.stringMatching(/^[0-9]{1,6}$/), { nil: undefined }),
      sep: fc.constantFrom(' ', 'T'),
      zone: fc.constantFrom('', 'Z', '+00', '-08', '+05:30', '+0530', '-03:30', '+14'),
    })
    .map((r) => `${pad(r.y, 4)}-${pad(r.m, 2)}-${pad(r.d, 2)}${r.sep}${pad(r.h, 2)}:${pad(r.mi, 2)}:${pad(r.s, 2)}${r.frac === undefined ? '' : `.${r.frac}`}${r.zone}`);
  it('timestamptz, timestamp and date', () => {
    const ctx = { timeZone: resolveTimeZone('Europe/Berlin') };
    fc.assert(
      fc.property(iso, (s) => {
        expect(parseTimestampTz(s, ctx)).toBe(parseTimestampTz(` ${s}`, ctx));
        expect(parseTimestamp(s, ctx)).toBe(parseTimestamp(` ${s}`, ctx));
        expect(parseDate(s.slice(0, 10), ctx)).toBe(parseDate(` ${s.slice(0, 10)}`, ctx));
      }),
    );
  });
});

describe('time zones (PostgreSQL 15 behaviour)', () => {
  const ny = { timeZone: resolveTimeZone('America/New_York') };
  it('a local time in the spring-forward gap takes the offset from before it', () => {
    // '2020-03-08 02:30'::timestamptz in America/New_York → 2020-03-08 03:30:00-04
    expect(formatTimestampTz(parseTimestampTz('2020-03-08 02:30', ny), ny.timeZone)).toBe('2020-03-08 03:30:00-04');
  });
  it('an ambiguous local time in the fall-back overlap takes the offset from after it', () => {
    expect(formatTimestampTz(parseTimestampTz('2020-11-01 01:30', ny), ny.timeZone)).toBe('2020-11-01 01:30:00-05');
  });
  it('local mean time before standard zones prints seconds in the offset', () => {
    expect(formatTimestampTz(parseTimestampTz('1800-01-01 00:00+00', ny), ny.timeZone)).toBe('1799-12-31 19:03:58-04:56:02');
  });
  it('SET TIME ZONE forms: hours east, POSIX offsets west, IANA names', () => {
    const t = parseTimestampTz('2020-01-01 00:00:00+00');
    expect(formatTimestampTz(t, resolveTimeZone('+5'))).toBe('2020-01-01 05:00:00+05');
    expect(formatTimestampTz(t, resolveTimeZone('UTC+5'))).toBe('2019-12-31 19:00:00-05');
    expect(formatTimestampTz(t, resolveTimeZone('+05:30'))).toBe('2019-12-31 18:30:00-05:30');
    expect(formatTimestampTz(t, resolveTimeZone('asia/kolkata'))).toBe('2020-01-01 05:30:00+05:30');
    expect(() => resolveTimeZone('Mars/Olympus_Mons')).toThrow(CairnError);
  });
  it("'now', 'today' need the transaction time, which the context supplies", () => {
    const nowMicros = parseTimestampTz('2026-11-30 23:30:00+00');
    const ctx = { timeZone: resolveTimeZone('Asia/Tokyo'), nowMicros };
    expect(parseTimestampTz('now', ctx)).toBe(nowMicros);
    expect(parseDate('today', ctx)).toBe(parseDate('2026-12-01')); // already tomorrow in Tokyo
    expect(parseDate('now', ctx)).toBe(parseDate('2026-12-01'));
    expect(parseTimestamp('tomorrow', ctx)).toBe(parseDate('2026-12-02') * USECS_PER_DAY);
    expect((errorOf(() => parseTimestampTz('now')) as CairnError).sqlState).toBe('22007');
  });
});
