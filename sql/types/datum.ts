/**
 * Datum: the in-memory value of a SQL scalar or array, chosen for exactness
 * first and speed second. The SqlType travels beside the datum (a datum alone
 * does not say whether 5 is an int4 or a float8).
 *
 *   type                         datum
 *   NULL (any type)              null
 *   bool                         boolean
 *   int2, int4, oid, reg*        number (an integer)
 *   int8                         bigint, always — one representation, so the
 *                                executor never mixes number and bigint
 *                                (a TypeError in JS) and never loses a digit
 *   float4, float8               number (float4 values are Math.fround'ed)
 *   numeric                      Decimal (decimal.ts)
 *   text, varchar, bpchar,       string (bpchar holds its padding blanks;
 *     name, "char", unknown        "char" is one code unit < 256, the byte;
 *                                  unknown is the literal's text)
 *   bytea                        Buffer
 *   date                         number: days since 2000-01-01, ±Infinity
 *   timestamp, timestamptz       number: µs since 2000-01-01 (UTC for tz),
 *                                ±Infinity (range and exactness: datetime.ts)
 *   interval                     Interval {months, days, micros} (interval.ts)
 *   uuid                         string, canonical lower-case 8-4-4-4-12
 *   json                         string, the text as written (validated)
 *   jsonb                        Jsonb: parsed value + canonical text
 *   arrays, int2vector,          readonly Datum[] (nested for more
 *     oidvector                    dimensions; lower bound 1)
 *
 * Jsonb follows PostgreSQL's jsonb: object keys are de-duplicated (the last
 * one wins) and ordered by UTF-8 length, then bytewise; numbers are numeric
 * (Decimal), so 1.50 stays 1.50; the canonical text is `{"a": 1, "b": [1, 2]}`.
 */
import { Decimal } from './decimal.js';
import { Interval } from './interval.js';
import { SqlError } from '../parser/sql-error.js';

export { Decimal, Interval };

export type JsonValue = null | boolean | string | Decimal | readonly JsonValue[] | JsonObject;
export type JsonObject = ReadonlyMap<string, JsonValue>;

export type Datum = null | boolean | number | bigint | string | Buffer | Decimal | Interval | Jsonb | readonly Datum[];

export class Jsonb {
  private text: string | undefined;

  /** `value` must already be canonical (objects built by parseJson / Jsonb.from). */
  private constructor(readonly value: JsonValue) {}

  /** Parses JSON text (22P02 on bad input). */
  static parse(text: string): Jsonb {
    return new Jsonb(parseJson(text, 'jsonb'));
  }

  /** From a plain JS value (objects, arrays, strings, numbers, booleans, null); keys are canonicalised. */
  static from(v: unknown): Jsonb {
    return new Jsonb(fromJs(v));
  }

  /** PostgreSQL's jsonb output text. */
  toString(): string {
    if (this.text === undefined) this.text = jsonText(this.value);
    return this.text;
  }
}

function fromJs(v: unknown): JsonValue {
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case 'boolean':
    case 'string':
      return v;
    case 'number':
      if (!Number.isFinite(v)) throw new SqlError('sql.invalid_text_representation', '22P02', 'jsonb: non-finite number');
      return Decimal.parseOrThrow(String(v));
    case 'bigint':
      return Decimal.fromInt(v);
    default:
      break;
  }
  if (v instanceof Decimal) return v;
  if (Array.isArray(v)) return v.map(fromJs);
  if (v instanceof Map) return canonicalObject([...v.entries()].map(([k, x]) => [String(k), fromJs(x)]));
  return canonicalObject(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, fromJs(x)]));
}

/** PostgreSQL's jsonb key order: shorter UTF-8 first, then bytewise. */
export function compareJsonKeys(a: string, b: string): number {
  const la = Buffer.byteLength(a);
  const lb = Buffer.byteLength(b);
  if (la !== lb) return la - lb;
  if (la === a.length && lb === b.length) return a < b ? -1 : a > b ? 1 : 0;
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function canonicalObject(pairs: [string, JsonValue][]): JsonObject {
  // Stable sort keeps input order among equal keys; the last of each wins.
  const sorted = pairs.map((p, i) => [p, i] as const).sort((x, y) => compareJsonKeys(x[0][0], y[0][0]) || x[1] - y[1]);
  const m = new Map<string, JsonValue>();
  for (const [[k, v]] of sorted) {
    m.delete(k);
    m.set(k, v);
  }
  return m;
}

/** PostgreSQL's escape_json. */
export function quoteJsonString(s: string): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c) continue;
    out += s.slice(start, i);
    start = i + 1;
    switch (c) {
      case 0x22:
        out += '\\"';
        break;
      case 0x5c:
        out += '\\\\';
        break;
      case 0x08:
        out += '\\b';
        break;
      case 0x0c:
        out += '\\f';
        break;
      case 0x0a:
        out += '\\n';
        break;
      case 0x0d:
        out += '\\r';
        break;
      case 0x09:
        out += '\\t';
        break;
      default:
        out += `\\u${c.toString(16).padStart(4, '0')}`;
    }
  }
  return out + s.slice(start) + '"';
}

function jsonText(v: JsonValue): string {
  if (v === null) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (typeof v === 'string') return quoteJsonString(v);
  if (v instanceof Decimal) return v.toString();
  if (Array.isArray(v)) return `[${(v as readonly JsonValue[]).map(jsonText).join(', ')}]`;
  const parts: string[] = [];
  for (const [k, x] of v as JsonObject) parts.push(`${quoteJsonString(k)}: ${jsonText(x)}`);
  return `{${parts.join(', ')}}`;
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}

function surrogateError(detail: string): SqlError {
  return new SqlError('sql.invalid_text_representation', '22P02', 'invalid input syntax for type json', { detail });
}

/**
 * A strict JSON parser (RFC 8259) producing canonical jsonb values; numbers
 * become Decimals. For `json` (typeName 'json') it only validates.
 */
export function parseJson(text: string, typeName: 'json' | 'jsonb'): JsonValue {
  let i = 0;
  const n = text.length;
  const fail = (): never => {
    // PostgreSQL names json for both types and leaves the text to the detail.
    throw new SqlError('sql.invalid_text_representation', '22P02', 'invalid input syntax for type json', { detail: `Input: ${text.length > 60 ? `${text.slice(0, 60)}…` : text}` });
  };
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 9 || c === 10 || c === 13) i++;
      else break;
    }
  };
  const str = (): string => {
    i++; // opening quote
    let out = '';
    let start = i;
    for (;;) {
      if (i >= n) fail();
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i++;
        return out;
      }
      if (c < 0x20) fail();
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      const e = text[i + 1];
      i += 2;
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          const h = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(h)) fail();
          const code = parseInt(h, 16);
          if (typeName === 'json') {
            // json only checks syntax: lone surrogates pass, as in PostgreSQL
          } else if (code >= 0xd800 && code <= 0xdbff) {
            // a high surrogate must be followed by an escaped low one
            const lo = /^\\u[dD][c-fC-F][0-9a-fA-F]{2}/.exec(text.slice(i + 4, i + 10));
            if (lo === null) throw surrogateError('Unicode low surrogate must follow a high surrogate.');
          } else if (code >= 0xdc00 && code <= 0xdfff && !(out.length > 0 && isHighSurrogate(out.charCodeAt(out.length - 1)))) {
            throw surrogateError('Unicode low surrogate must follow a high surrogate.');
          }
          if (code === 0 && typeName === 'jsonb') {
            throw new SqlError('sql.untranslatable_character', '22P05', 'unsupported Unicode escape sequence', { detail: '\\u0000 cannot be converted to text.' });
          }
          out += String.fromCharCode(code);
          i += 4;
          break;
        }
        default:
          fail();
      }
      start = i;
    }
  };
  const value = (depth: number): JsonValue => {
    if (depth > 6400) throw new SqlError('sql.statement_too_complex', '54001', 'stack depth limit exceeded');
    ws();
    const c = text.charCodeAt(i);
    if (c === 0x22) return str();
    if (c === 0x7b) {
      i++;
      const pairs: [string, JsonValue][] = [];
      ws();
      if (text.charCodeAt(i) === 0x7d) {
        i++;
        return new Map();
      }
      for (;;) {
        ws();
        if (text.charCodeAt(i) !== 0x22) fail();
        const k = str();
        ws();
        if (text.charCodeAt(i) !== 0x3a) fail();
        i++;
        pairs.push([k, value(depth + 1)]);
        ws();
        const d = text.charCodeAt(i++);
        if (d === 0x7d) break;
        if (d !== 0x2c) fail();
      }
      return canonicalObject(pairs);
    }
    if (c === 0x5b) {
      i++;
      const arr: JsonValue[] = [];
      ws();
      if (text.charCodeAt(i) === 0x5d) {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        ws();
        const d = text.charCodeAt(i++);
        if (d === 0x5d) break;
        if (d !== 0x2c) fail();
      }
      return arr;
    }
    if (text.startsWith('true', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('false', i)) {
      i += 5;
      return false;
    }
    if (text.startsWith('null', i)) {
      i += 4;
      return null;
    }
    const m = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
    m.lastIndex = i;
    const mt = m.exec(text);
    if (mt === null || mt[0].length === 0) fail();
    i += (mt as RegExpExecArray)[0].length;
    return typeName === 'jsonb' ? Decimal.parseOrThrow((mt as RegExpExecArray)[0]) : null;
  };
  const v = value(0);
  ws();
  if (i !== n) fail();
  return v;
}

/** True for the SQL NULL datum. */
export function isNull(d: Datum): d is null {
  return d === null;
}
