/**
 * The raw libpg-query call, with its byte offsets and error positions turned
 * into what the rest of Cairn uses.
 *
 * Offsets: libpg-query reports UTF-8 byte offsets (statement locations, scan
 * tokens). Cairn keeps JS string (UTF-16) indices, because that is what
 * `slice` takes. ByteIndex converts; for ASCII text (the common case) it is
 * the identity and costs nothing.
 *
 *   text     "é = 1"        UTF-16 index: é=0 ' '=1 '='=2 …
 *   bytes    c3 a9 20 3d …  byte offset:  é=0 ' '=2 '='=3 …
 *
 * Error positions: PostgreSQL reports a 1-based position counted in
 * characters (code points) of the whole query string; libpg-query returns it
 * 0-based. SqlError.position is PostgreSQL's.
 *
 * Masking: to parse one piece of a larger string while keeping every offset
 * and error position relative to the whole string, the rest is replaced by
 * spaces, one per UTF-16 unit (`mask`). Indices are preserved exactly; code
 * point positions are mapped back through `positionIn` when the text has
 * astral characters.
 */
import { parseSync, scanSync, hasSqlDetails } from 'libpg-query';
import type { ParseResult, ScanToken } from 'libpg-query';
import { assertParserLoaded } from './pg-query-module.js';
import { SqlError, syntaxError } from './sql-error.js';

/** UTF-8 byte offset → UTF-16 index, for one text. */
export class ByteIndex {
  private readonly table: Int32Array | undefined;

  constructor(readonly text: string) {
    // Every UTF-16 unit of an ASCII string is one byte.
    if (!/[^\x00-\x7f]/.test(text)) {
      this.table = undefined;
      return;
    }
    const bytes = Buffer.byteLength(text, 'utf8');
    const table = new Int32Array(bytes + 1);
    let b = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      let n: number;
      if (c < 0x80) n = 1;
      else if (c < 0x800) n = 2;
      else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
        // A surrogate pair is 4 bytes for 2 units.
        table.fill(i, b, b + 4);
        b += 4;
        i++;
        continue;
      } else n = 3;
      table.fill(i, b, b + n);
      b += n;
    }
    table[b] = text.length;
    this.table = table;
  }

  toIndex(byteOffset: number): number {
    if (this.table === undefined) return byteOffset;
    return this.table[Math.min(byteOffset, this.table.length - 1)] as number;
  }
}

const ASTRAL = /[\ud800-\udbff]/;

/** 1-based code-point position of UTF-16 index `index` in `text` (PostgreSQL's error position). */
export function positionOf(text: string, index: number): number {
  if (!ASTRAL.test(text)) return index + 1;
  let cp = 0;
  for (let i = 0; i < index && i < text.length; i++) {
    const c = text.charCodeAt(i);
    // A high surrogate starts a two-unit code point.
    if (c >= 0xd800 && c <= 0xdbff) i++;
    cp++;
  }
  return cp + 1;
}

/** UTF-16 index of the 0-based code point `cp` in `text`. */
function indexOfCodePoint(text: string, cp: number): number {
  if (!ASTRAL.test(text)) return cp;
  let i = 0;
  for (let n = 0; n < cp && i < text.length; n++) {
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff ? 2 : 1;
  }
  return i;
}

/** `text` with every UTF-16 unit outside [start, end) replaced by a space. */
export function mask(text: string, start: number, end: number): string {
  if (start === 0 && end === text.length) return text;
  return ' '.repeat(start) + text.slice(start, end) + ' '.repeat(text.length - end);
}

/** Replaces [start, end) of `s` by `repl`, which must have the same length. */
export function overwrite(s: string, start: number, repl: string): string {
  return s.slice(0, start) + repl + s.slice(start + repl.length);
}

/**
 * Runs parseSync on `parsed`, a masked copy of `original` (or the original
 * itself). Syntax errors become SqlError 42601 with the position in
 * `original`.
 */
export function pgParse(parsed: string, original: string = parsed): ParseResult {
  assertParserLoaded();
  try {
    return parseSync(parsed);
  } catch (e) {
    throw toSqlError(e, parsed, original);
  }
}

/** Control characters other than tab/newline/CR: libpg-query's scan JSON does not escape them. */
const CONTROL_CHARS = /[\x00-\x08\x0b\x0c\x0e-\x1f]/g;

/**
 * libpg-query's lexer tokens of `text` (byte offsets), or the lexer's error.
 * Token texts are not to be used: slice `text` at the offsets instead (control
 * characters are replaced by spaces for the lexer, byte for byte).
 */
export function pgScan(text: string): ScanToken[] {
  assertParserLoaded();
  try {
    return scanSync(text.replace(CONTROL_CHARS, ' ')).tokens;
  } catch (e) {
    throw toSqlError(e, text, text);
  }
}

function toSqlError(e: unknown, parsed: string, original: string): SqlError {
  if (e instanceof SqlError) return e;
  // libpg-query decodes its JSON output recursively: a very deep tree overflows the JS stack.
  if (e instanceof RangeError || (e instanceof Error && e.message.includes('Maximum call stack size exceeded'))) {
    return new SqlError('sql.too_complex', '54001', 'stack depth limit exceeded', { hint: 'the statement nests too deeply', cause: e });
  }
  if (hasSqlDetails(e) && e.sqlDetails !== undefined) {
    const d = e.sqlDetails;
    const cp = d.cursorPosition;
    const position = cp >= 0 ? positionOf(original, indexOfCodePoint(parsed, cp)) : undefined;
    return syntaxError(d.message, position);
  }
  const msg = e instanceof Error ? e.message : String(e);
  return syntaxError(msg);
}
