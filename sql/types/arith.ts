/**
 * PostgreSQL's arithmetic operators over datums: + − × ÷ % and unary minus
 * on the numeric types, date/time ± interval, timestamp − timestamp,
 * interval × number, and || on strings. The executor resolves an operator
 * to a result type with binaryOpType() and evaluates it with evalBinary();
 * both follow PostgreSQL 15's operator table (pg_operator) for these types,
 * including its promotions:
 *
 *   int2 op int2 → int2;  mixed ints → the wider;  int op numeric → numeric
 *   float4 op float4 → float4;  float op (int | numeric | float8) → float8
 *   date ± int4 → date;  date − date → int4;  date ± interval → timestamp
 *   timestamp(tz) ± interval → timestamp(tz);  timestamp(tz) − same → interval
 *   interval ± interval;  interval × / number → interval
 *   string || anything (not an array) → text
 *
 * Errors as PostgreSQL raises them: integer overflow 22003 ("integer out of
 * range", "smallint …", "bigint …"), float overflow/underflow 22003 ("value
 * out of range: overflow"), division by zero 22012 (integers, floats and
 * numeric alike), missing operator 42883. Integer division truncates toward
 * zero; % takes the sign of the dividend. Operators are strict: NULL in,
 * NULL out.
 *
 * timestamptz ± interval applies months and days in the session time zone
 * (so '1 day' across a DST change keeps the wall-clock time) and the time
 * part to the instant, as PostgreSQL's timestamptz_pl_interval does.
 */
import { checkIntRange, toFloat4 } from './cast.js';
import { civilFromDays, daysFromCivil, daysInMonth, localToUtc, timestampInRange, USECS_PER_DAY, USECS_PER_SEC } from './datetime.js';
import { Decimal } from './decimal.js';
import type { Datum } from './datum.js';
import { Interval, checkInterval } from './interval.js';
import { DEFAULT_TEXT_CONTEXT, encodeText, type TextFormatContext } from './text-format.js';
import { datetimeOverflow, divisionByZero, outOfRange, undefinedOperator } from './type-error.js';
import { Oid, T, formatType, type SqlType } from './type.js';

export type BinaryOp = '+' | '-' | '*' | '/' | '%' | '||';

const INT_WIDTH: Record<number, number> = { [Oid.int2]: 2, [Oid.int4]: 4, [Oid.int8]: 8 };

function isNumeric(t: SqlType): boolean {
  return t.family === 'int' || t.family === 'float' || t.family === 'numeric';
}

/** The common type PostgreSQL computes a numeric operator in. */
function numericResultType(a: SqlType, b: SqlType): SqlType {
  if (a.family === 'float' || b.family === 'float') {
    return a.oid === Oid.float4 && (b.oid === Oid.float4 || b.family === 'int') ? T.float4 : b.oid === Oid.float4 && a.family === 'int' ? T.float4 : T.float8;
  }
  if (a.family === 'numeric' || b.family === 'numeric') return T.numeric;
  return (INT_WIDTH[a.oid] as number) >= (INT_WIDTH[b.oid] as number) ? a : b;
}

/** The result type of `a op b`, or undefined when PostgreSQL has no such operator. */
export function binaryOpType(op: BinaryOp, a: SqlType, b: SqlType): SqlType | undefined {
  if (op === '||') {
    const sa = a.family === 'string' || a.family === 'unknown';
    const sb = b.family === 'string' || b.family === 'unknown';
    return (sa || sb) && a.family !== 'array' && b.family !== 'array' ? T.text : undefined;
  }
  if (isNumeric(a) && isNumeric(b)) {
    const t = numericResultType(a, b);
    if (op === '%' && t.family === 'float') return undefined;
    if (t === T.float4 && (a.family === 'int' || b.family === 'int')) return T.float8; // int op float4 → float8
    return t;
  }
  const fa = a.family;
  const fb = b.family;
  if (fa === 'date') {
    if (fb === 'int' && b.oid !== Oid.int8 && (op === '+' || op === '-')) return T.date;
    if (fb === 'date' && op === '-') return T.int4;
    if (fb === 'interval' && (op === '+' || op === '-')) return T.timestamp;
  }
  if (fa === 'int' && a.oid !== Oid.int8 && fb === 'date' && op === '+') return T.date;
  if ((fa === 'timestamp' || fa === 'timestamptz') && fb === 'interval' && (op === '+' || op === '-')) return a.typmod < 0 ? a : T[fa];
  if (fa === 'interval' && (fb === 'timestamp' || fb === 'timestamptz' || fb === 'date') && op === '+') return fb === 'date' ? T.timestamp : T[fb];
  if ((fa === 'timestamp' || fa === 'timestamptz') && fa === fb && op === '-') return T.interval;
  if (fa === 'interval' && fb === 'interval' && (op === '+' || op === '-')) return T.interval;
  if (fa === 'interval' && isNumeric(b) && (op === '*' || op === '/')) return T.interval;
  if (isNumeric(a) && fb === 'interval' && op === '*') return T.interval;
  return undefined;
}

/**
 * Evaluates `a op b` (PostgreSQL 15 semantics); `ctx` supplies the session
 * time zone for timestamptz arithmetic. Throws 42883 when no operator exists.
 */
export function evalBinary(op: BinaryOp, a: Datum, ta: SqlType, b: Datum, tb: SqlType, ctx: TextFormatContext = DEFAULT_TEXT_CONTEXT): Datum {
  const rt = binaryOpType(op, ta, tb);
  if (rt === undefined) throw undefinedOperator(op, formatType(ta), formatType(tb));
  if (a === null || b === null) return null;
  if (op === '||') return concatText(a, ta, ctx) + concatText(b, tb, ctx);
  if (isNumeric(ta) && isNumeric(tb)) {
    switch (rt.family) {
      case 'int':
        return intOp(op, a as number | bigint, b as number | bigint, rt);
      case 'float':
        return floatOp(op, toNumber(a, ta), toNumber(b, tb), rt.oid === Oid.float4);
      default:
        return numericOp(op, toDecimal(a, ta), toDecimal(b, tb));
    }
  }
  const fa = ta.family;
  const fb = tb.family;
  if (fa === 'date' && fb === 'int') return dateAddDays(a as number, op === '+' ? Number(b) : -Number(b));
  if (fa === 'int' && fb === 'date') return dateAddDays(b as number, Number(a));
  if (fa === 'date' && fb === 'date') return dateDiff(a as number, b as number);
  if (fb === 'interval' && (fa === 'date' || fa === 'timestamp' || fa === 'timestamptz')) {
    const iv = op === '-' ? negateInterval(b as Interval) : (b as Interval);
    const t = fa === 'date' ? dateToTimestamp(a as number) : (a as number);
    return fa === 'timestamptz' ? timestampTzPlusInterval(t, iv, ctx) : timestampPlusInterval(t, iv);
  }
  if (fa === 'interval' && (fb === 'date' || fb === 'timestamp' || fb === 'timestamptz')) {
    const t = fb === 'date' ? dateToTimestamp(b as number) : (b as number);
    return fb === 'timestamptz' ? timestampTzPlusInterval(t, a as Interval, ctx) : timestampPlusInterval(t, a as Interval);
  }
  if (fa === fb && (fa === 'timestamp' || fa === 'timestamptz')) return timestampDiff(a as number, b as number);
  if (fa === 'interval' && fb === 'interval') return intervalAdd(a as Interval, op === '-' ? negateInterval(b as Interval) : (b as Interval));
  if (fa === 'interval') {
    const f = toNumber(b, tb);
    if (op === '/') {
      if (f === 0) throw divisionByZero();
      return intervalMul(a as Interval, 1 / f);
    }
    return intervalMul(a as Interval, f);
  }
  return intervalMul(b as Interval, toNumber(a, ta));
}

/** Unary minus (22003 for the most negative integer). */
export function evalNegate(a: Datum, t: SqlType): Datum {
  if (a === null) return null;
  switch (t.family) {
    case 'int':
      return typeof a === 'bigint' ? checkIntRange(-a, t) : checkIntRange(-(a as number), t);
    case 'float':
      return -(a as number);
    case 'numeric':
      return (a as Decimal).neg();
    case 'interval':
      return negateInterval(a as Interval);
    default:
      throw undefinedOperator('-', undefined, formatType(t));
  }
}

function concatText(d: Datum, t: SqlType, ctx: TextFormatContext): string {
  if (t.family === 'string' || t.family === 'unknown') return t.oid === Oid.bpchar ? (d as string).replace(/ +$/, '') : (d as string);
  if (t.family === 'bool') return d ? 'true' : 'false';
  return encodeText(d, t, ctx);
}

function toNumber(d: Datum, t: SqlType): number {
  if (t.family === 'numeric') return (d as Decimal).toNumber();
  return Number(d as number | bigint);
}

function toDecimal(d: Datum, t: SqlType): Decimal {
  return t.family === 'numeric' ? (d as Decimal) : Decimal.fromInt(d as number | bigint);
}

function intOp(op: BinaryOp, a: number | bigint, b: number | bigint, t: SqlType): number | bigint {
  if (t.oid === Oid.int8) {
    const x = BigInt(a);
    const y = BigInt(b);
    switch (op) {
      case '+':
        return checkIntRange(x + y, t);
      case '-':
        return checkIntRange(x - y, t);
      case '*':
        return checkIntRange(x * y, t);
      case '/':
        if (y === 0n) throw divisionByZero();
        return checkIntRange(x / y, t);
      default:
        if (y === 0n) throw divisionByZero();
        return x % y;
    }
  }
  const x = a as number;
  const y = b as number;
  switch (op) {
    case '+':
      return checkIntRange(x + y, t);
    case '-':
      return checkIntRange(x - y, t);
    case '*': {
      const p = x * y;
      return checkIntRange(Number.isSafeInteger(p) ? p : BigInt(x) * BigInt(y), t);
    }
    case '/':
      if (y === 0) throw divisionByZero();
      return checkIntRange(Math.trunc(x / y), t);
    default: {
      if (y === 0) throw divisionByZero();
      const r = x % y;
      return r === 0 ? 0 : r;
    }
  }
}

/** PostgreSQL's check_float8_val / check_float4_val. */
function checkFloat(r: number, aInf: boolean, zeroOk: boolean, float4: boolean): number {
  const v = float4 ? Math.fround(r) : r;
  if (!Number.isFinite(v) && v === v && !aInf) throw outOfRange('value out of range: overflow');
  if (v === 0 && !zeroOk) throw outOfRange('value out of range: underflow');
  return v;
}

function floatOp(op: BinaryOp, x: number, y: number, float4: boolean): number {
  const inf = !Number.isFinite(x) || !Number.isFinite(y);
  if (float4) {
    x = toFloat4(x);
    y = toFloat4(y);
  }
  switch (op) {
    case '+':
      return checkFloat(x + y, inf, true, float4);
    case '-':
      return checkFloat(x - y, inf, true, float4);
    case '*':
      return checkFloat(x * y, inf, x === 0 || y === 0, float4);
    case '/':
      if (y === 0 && x === x) throw divisionByZero(); // NaN / 0 is NaN
      return checkFloat(x / y, !Number.isFinite(x), x === 0 || !Number.isFinite(y), float4);
    default:
      throw undefinedOperator(op, float4 ? 'real' : 'double precision', float4 ? 'real' : 'double precision');
  }
}

function numericOp(op: BinaryOp, x: Decimal, y: Decimal): Decimal {
  switch (op) {
    case '+':
      return x.add(y);
    case '-':
      return x.sub(y);
    case '*':
      return x.mul(y);
    case '/':
      return x.div(y);
    default:
      return x.mod(y);
  }
}

function dateAddDays(d: number, n: number): number {
  if (!Number.isFinite(d)) return d;
  const r = d + n;
  if (r < -2451545 || r > 2145031948) throw datetimeOverflow('date out of range');
  return r;
}

function dateDiff(a: number, b: number): number {
  if (!Number.isFinite(a) || !Number.isFinite(b)) throw datetimeOverflow('cannot subtract infinite dates');
  return checkIntRange(a - b, T.int4) as number;
}

function dateToTimestamp(d: number): number {
  return Number.isFinite(d) ? d * USECS_PER_DAY : d;
}

function checkTimestamp(t: number): number {
  if (!timestampInRange(t)) throw datetimeOverflow('timestamp out of range');
  return t;
}

/** Adds months (clamping the day to the month's end) then days to a local timestamp. */
function addMonthsDays(local: number, months: number, days: number): number {
  let day = Math.floor(local / USECS_PER_DAY);
  const tod = local - day * USECS_PER_DAY;
  if (months !== 0) {
    const c = civilFromDays(day);
    const m0 = c.month - 1 + months;
    const year = c.year + Math.floor(m0 / 12);
    const month = m0 - Math.floor(m0 / 12) * 12 + 1;
    day = daysFromCivil(year, month, Math.min(c.day, daysInMonth(year, month)));
  }
  return (day + days) * USECS_PER_DAY + tod;
}

/** timestamp + interval (timestamp_pl_interval). */
export function timestampPlusInterval(t: number, iv: Interval): number {
  if (!Number.isFinite(t)) return t;
  return checkTimestamp(addMonthsDays(t, iv.months, iv.days) + iv.micros);
}

/** timestamptz + interval: months and days on the session zone's wall clock, then the time part. */
export function timestampTzPlusInterval(t: number, iv: Interval, ctx: TextFormatContext): number {
  if (!Number.isFinite(t)) return t;
  let u = t;
  if (iv.months !== 0 || iv.days !== 0) {
    const zone = ctx.timeZone;
    const local = u + (zone.fixedOffset ?? zone.offsetAt(u)) * USECS_PER_SEC;
    u = localToUtc(addMonthsDays(local, iv.months, iv.days), zone);
  }
  return checkTimestamp(u + iv.micros);
}

/** timestamp − timestamp: the µs difference with whole 24 h moved into days (interval_justify_hours). */
export function timestampDiff(a: number, b: number): Interval {
  if (!Number.isFinite(a) || !Number.isFinite(b)) throw datetimeOverflow('cannot subtract infinite timestamps');
  const us = a - b;
  if (Math.abs(us) <= Number.MAX_SAFE_INTEGER) {
    const days = Math.trunc(us / USECS_PER_DAY);
    return checkInterval(new Interval(0, days, us - days * USECS_PER_DAY));
  }
  // Spans over 2^53 µs (≈ 285 years): subtract exactly, then split into days and time.
  const big = BigInt(a) - BigInt(b);
  const days = big / BigInt(USECS_PER_DAY);
  return checkInterval(new Interval(0, Number(days), Number(big - days * BigInt(USECS_PER_DAY))));
}

export function negateInterval(iv: Interval): Interval {
  return checkInterval(new Interval(-iv.months || 0, -iv.days || 0, -iv.micros || 0));
}

export function intervalAdd(a: Interval, b: Interval): Interval {
  return checkInterval(new Interval(a.months + b.months, a.days + b.days, a.micros + b.micros));
}

/** TSROUND: to 6 fractional digits. */
function tsRound(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

/** interval × factor (interval_mul): fractional months spill into days (30/month), fractional days into time. */
export function intervalMul(iv: Interval, factor: number): Interval {
  if (!Number.isFinite(factor)) throw datetimeOverflow('interval out of range');
  const monthsF = iv.months * factor;
  const daysF = iv.days * factor;
  let months = Math.trunc(monthsF);
  let days = Math.trunc(daysF);
  const monthRemainderDays = tsRound((monthsF - months) * 30);
  let secRemainder = tsRound((daysF - days + monthRemainderDays - Math.trunc(monthRemainderDays)) * 86400);
  if (Math.abs(secRemainder) >= 86400) {
    const whole = Math.trunc(secRemainder / 86400);
    days += whole;
    secRemainder -= whole * 86400;
  }
  days += Math.trunc(monthRemainderDays);
  const micros = rint(iv.micros * factor + secRemainder * USECS_PER_SEC);
  months = months || 0;
  return checkInterval(new Interval(months, days || 0, micros || 0));
}

function rint(v: number): number {
  const r = Math.round(v);
  return r - v === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
