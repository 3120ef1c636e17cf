/**
 * A small EDN reader (https://github.com/edn-format/edn), sufficient for the Jepsen and
 * Knossos history files the checkers are tested against.
 *
 * Supported: nil, true/false, integers and floats, strings (with \" \\ \n \t escapes;
 * no character literals), keywords (`:read` → the string "read", a namespace kept as
 * written: `:jepsen/x` → "jepsen/x"), symbols (returned as strings too), vectors `[…]`
 * and lists `(…)` (both → arrays), maps `{…}` (→ Map, keys compared by identity for
 * non-primitives, so keep to keyword/number/string keys), sets `#{…}` (→ Set), line
 * comments `;`, the discard form `#_`, and commas as whitespace. Tagged literals
 * (`#inst "…"`) return the tagged value unchanged.
 *
 * Keywords become plain strings because history consumers compare `f`/`type` with string
 * literals; a string value and a keyword with the same text are therefore not
 * distinguishable — the histories we read never depend on that.
 *
 * Expected failures (malformed input) throw CairnError `history.edn_syntax` naming the
 * offset; the reader is pure and owns nothing.
 */
import { CairnError } from '../../src/util/index.js';

export type EdnValue =
  | null
  | boolean
  | number
  | string
  | EdnValue[]
  | Map<EdnValue, EdnValue>
  | Set<EdnValue>;

const DELIMITERS = new Set(['(', ')', '[', ']', '{', '}', '"', ';', ',']);

function isWhitespace(c: string): boolean {
  return c === ' ' || c === '\n' || c === '\r' || c === '\t' || c === ',';
}

class EdnReader {
  private pos = 0;
  constructor(private readonly text: string) {}

  fail(what: string): never {
    throw new CairnError('history.edn_syntax', `history: EDN ${what} at offset ${this.pos}`);
  }

  skipSpace(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t[this.pos]!;
      if (isWhitespace(c)) this.pos++;
      else if (c === ';') {
        while (this.pos < t.length && t[this.pos] !== '\n') this.pos++;
      } else if (c === '#' && t[this.pos + 1] === '_') {
        this.pos += 2;
        this.read();
      } else break;
    }
  }

  atEnd(): boolean {
    this.skipSpace();
    return this.pos >= this.text.length;
  }

  read(): EdnValue {
    this.skipSpace();
    const t = this.text;
    if (this.pos >= t.length) this.fail('unexpected end of input');
    const c = t[this.pos]!;
    switch (c) {
      case '[':
      case '(':
        this.pos++;
        return this.readSeq(c === '[' ? ']' : ')');
      case '{': {
        this.pos++;
        const items = this.readSeq('}');
        if (items.length % 2 !== 0) this.fail('map with an odd number of forms');
        const m = new Map<EdnValue, EdnValue>();
        for (let i = 0; i < items.length; i += 2) m.set(items[i]!, items[i + 1]!);
        return m;
      }
      case '"':
        return this.readString();
      case '#': {
        if (t[this.pos + 1] === '{') {
          this.pos += 2;
          return new Set(this.readSeq('}'));
        }
        this.pos++;
        this.readToken(); // the tag
        return this.read();
      }
      case ')':
      case ']':
      case '}':
        return this.fail(`unexpected '${c}'`);
      default:
        return this.readAtom(this.readToken());
    }
  }

  private readSeq(close: string): EdnValue[] {
    const out: EdnValue[] = [];
    for (;;) {
      this.skipSpace();
      if (this.pos >= this.text.length) this.fail(`missing '${close}'`);
      if (this.text[this.pos] === close) {
        this.pos++;
        return out;
      }
      out.push(this.read());
    }
  }

  private readString(): string {
    const t = this.text;
    let out = '';
    this.pos++; // opening quote
    for (;;) {
      if (this.pos >= t.length) this.fail('unterminated string');
      const c = t[this.pos++]!;
      if (c === '"') return out;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = t[this.pos++];
      if (e === 'n') out += '\n';
      else if (e === 't') out += '\t';
      else if (e === 'r') out += '\r';
      else if (e === undefined) this.fail('unterminated escape');
      else out += e;
    }
  }

  private readToken(): string {
    const t = this.text;
    const start = this.pos;
    while (this.pos < t.length && !isWhitespace(t[this.pos]!) && !DELIMITERS.has(t[this.pos]!)) this.pos++;
    if (this.pos === start) this.fail('empty token');
    return t.slice(start, this.pos);
  }

  private readAtom(tok: string): EdnValue {
    if (tok === 'nil') return null;
    if (tok === 'true') return true;
    if (tok === 'false') return false;
    if (tok[0] === ':') return tok.slice(1);
    if (/^[+-]?\d/.test(tok)) {
      const n = Number(tok.replace(/[NM]$/, ''));
      if (Number.isNaN(n)) this.fail(`bad number '${tok}'`);
      return n;
    }
    return tok; // a symbol
  }
}

/** Parses exactly one EDN form (surrounding whitespace and comments allowed). */
export function parseEdn(text: string): EdnValue {
  const r = new EdnReader(text);
  const v = r.read();
  if (!r.atEnd()) r.fail('trailing input');
  return v;
}

/** Parses a sequence of top-level EDN forms (e.g. one op map per line). */
export function parseEdnAll(text: string): EdnValue[] {
  const r = new EdnReader(text);
  const out: EdnValue[] = [];
  while (!r.atEnd()) out.push(r.read());
  return out;
}

/** Converts EDN to plain JS: maps with keyword keys become objects, sets become arrays. */
export function ednToPlain(v: EdnValue): unknown {
  if (Array.isArray(v)) return v.map(ednToPlain);
  if (v instanceof Set) return [...v].map(ednToPlain);
  if (v instanceof Map) {
    const o: Record<string, unknown> = {};
    for (const [k, val] of v) o[String(k)] = ednToPlain(val);
    return o;
  }
  return v;
}
