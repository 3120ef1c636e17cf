/**
 * The SQL shell's statement splitter: cuts input text into statements at
 * each `;` that is outside quotes, comments and dollar quotes, the way psql's
 * lexer decides where a statement ends.
 *
 *   const s = new StatementSplitter();
 *   s.push("SELECT 'a;b'; SELECT $$x;$$; SELE");  // → ["SELECT 'a;b'", "SELECT $$x;$$"]
 *   s.pending()                                    // → "SELE"  (continuation prompt)
 *   s.push('CT 1;')                                // → ["SELECT 1"]
 *
 * Lexical states (PostgreSQL 15, scan.l):
 *
 *   normal ──'──▶ string      '' is a quote inside; ends at a lone '
 *          ──E'─▶ estring     as string, and \x escapes the next character
 *          ──"──▶ ident       "" is a quote inside
 *          ──--─▶ line        ends at a newline
 *          ──/*─▶ block       nests (/* inside /* needs two * / to close)
 *          ──$tag$─▶ dollar   ends at the same $tag$ (tag: letter/_ then
 *                             letters, digits, _; may be empty). `$1` is a
 *                             parameter, and a `$` inside an identifier
 *                             (`a$b`) is part of it, not a quote.
 *
 * Invariants: push() may be given text cut anywhere (even inside a `--`, a
 * `$tag$` or an `E'`): the result of feeding a text in any number of pieces
 * is the result of feeding it whole. A returned statement is trimmed, has no
 * terminating `;`, and contains something besides whitespace and comments
 * (`;;` and comment-only pieces yield nothing). flush() returns what is left
 * at end of input as a final statement (psql sends an unterminated last
 * statement of a file too).
 *
 * Ownership: pure logic, no I/O; one splitter per input stream.
 */

type LexState = 'normal' | 'string' | 'estring' | 'ident' | 'line' | 'block' | 'dollar';

function isIdentStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_' || c > '\x7f';
}

function isIdentChar(c: string): boolean {
  return isIdentStart(c) || (c >= '0' && c <= '9') || c === '$';
}

export class StatementSplitter {
  /**
   * The statement being built is parts.join('') + tail: parts is text the
   * lexer has run over, tail a short unscanned remainder (a `$tag`, `-`, `/`
   * or quote waiting for its next character). Keeping scanned text in pieces
   * makes a statement typed or piped in many lines cost linear time.
   */
  private parts: string[] = [];
  private tail = '';
  /** The last two characters scanned (lookbehind for E'' and `$` in identifiers). */
  private before = '';
  private state: LexState = 'normal';
  private blockDepth = 0;
  private dollarTag = '';
  /** The current statement holds a token that is not whitespace or a comment. */
  private significant = false;

  /** Adds text; returns the statements it completes, in order. */
  push(text: string): string[] {
    const buf = this.tail + text;
    const out: string[] = [];
    const before = this.before;
    /** The character k positions before offset i of buf (looking into earlier pushes). */
    const back = (i: number, k: number): string => (i - k >= 0 ? (buf[i - k] as string) : (before[before.length + i - k] ?? ''));
    let start = 0;
    let i = 0;
    const n = buf.length;
    // A construct whose decision needs a character we do not have yet stops
    // the scan at `i` (the unread tail stays in buf for the next push).
    scan: while (i < n) {
      const c = buf[i] as string;
      switch (this.state) {
        case 'normal': {
          const next = i + 1 < n ? buf[i + 1] : undefined;
          if (c === ';') {
            if (this.significant) out.push((this.parts.join('') + buf.slice(start, i)).trim());
            this.parts = [];
            start = i + 1;
            this.significant = false;
            i++;
          } else if (c === '\'') {
            // (a `;` before the E is not an identifier character: looking past it is harmless)
            const prev = back(i, 1);
            const prev2 = back(i, 2);
            this.state = (prev === 'e' || prev === 'E') && !isIdentChar(prev2) ? 'estring' : 'string';
            this.significant = true;
            i++;
          } else if (c === '"') {
            this.state = 'ident';
            this.significant = true;
            i++;
          } else if (c === '-' || c === '/') {
            if (next === undefined) break scan;
            if (c === '-' && next === '-') {
              this.state = 'line';
              i += 2;
            } else if (c === '/' && next === '*') {
              this.state = 'block';
              this.blockDepth = 1;
              i += 2;
            } else {
              this.significant = true;
              i++;
            }
          } else if (c === '$') {
            if (isIdentChar(back(i, 1))) {
              i++;
              continue;
            }
            // $tag$ or $$; anything else ($1, a lone $) is an ordinary character.
            let j = i + 1;
            if (j < n && isIdentStart(buf[j] as string)) {
              j++;
              while (j < n && isIdentChar(buf[j] as string) && buf[j] !== '$') j++;
            }
            if (j >= n) break scan;
            this.significant = true;
            if (buf[j] === '$') {
              this.state = 'dollar';
              this.dollarTag = buf.slice(i, j + 1);
              i = j + 1;
            } else {
              i++;
            }
          } else {
            if (c !== ' ' && c !== '\t' && c !== '\n' && c !== '\r' && c !== '\f' && c !== '\v') this.significant = true;
            i++;
          }
          break;
        }
        case 'string':
        case 'ident': {
          const q = this.state === 'string' ? '\'' : '"';
          if (c === q) {
            if (i + 1 >= n) break scan; // a doubled quote or the end: need the next character
            if (buf[i + 1] === q) i += 2;
            else {
              this.state = 'normal';
              i++;
            }
          } else i++;
          break;
        }
        case 'estring': {
          if (c === '\\') {
            if (i + 1 >= n) break scan;
            i += 2;
          } else if (c === '\'') {
            if (i + 1 >= n) break scan;
            if (buf[i + 1] === '\'') i += 2;
            else {
              this.state = 'normal';
              i++;
            }
          } else i++;
          break;
        }
        case 'line':
          if (c === '\n') this.state = 'normal';
          i++;
          break;
        case 'block': {
          if (c === '*' || c === '/') {
            if (i + 1 >= n) break scan;
            const next = buf[i + 1];
            if (c === '*' && next === '/') {
              this.blockDepth--;
              if (this.blockDepth === 0) this.state = 'normal';
              i += 2;
            } else if (c === '/' && next === '*') {
              this.blockDepth++;
              i += 2;
            } else i++;
          } else i++;
          break;
        }
        case 'dollar': {
          if (c === '$') {
            const tag = this.dollarTag;
            if (i + tag.length > n) break scan;
            if (buf.startsWith(tag, i)) {
              this.state = 'normal';
              i += tag.length;
            } else i++;
          } else i++;
          break;
        }
      }
    }
    if (i > start) this.parts.push(buf.slice(start, i));
    this.tail = buf.slice(i);
    this.before = (before + buf.slice(Math.max(0, i - 2), i)).slice(-2);
    return out;
  }

  /** The text of the unfinished statement (may be only whitespace/comments). */
  pending(): string {
    return this.parts.join('') + this.tail;
  }

  /** True when no unfinished statement holds anything but whitespace/comments. */
  isEmpty(): boolean {
    return !this.significant && !this.incompleteToken();
  }

  /** The lexer state, for prompts: inside a quote/comment, or 'normal'. */
  lexState(): LexState {
    return this.state;
  }

  /** Forgets the unfinished statement (Ctrl-C, \r). */
  reset(): void {
    this.parts = [];
    this.tail = '';
    this.before = '';
    this.state = 'normal';
    this.blockDepth = 0;
    this.dollarTag = '';
    this.significant = false;
  }

  /**
   * End of input: the unfinished statement, if it holds anything but
   * whitespace and comments, is returned as a last statement.
   */
  flush(): string[] {
    const rest = this.pending();
    const significant = this.significant || this.incompleteToken();
    this.reset();
    return significant && rest.trim() !== '' ? [rest.trim()] : [];
  }

  /** An open quote, or an unscanned tail (a `$`, `-` or `/` awaiting its next character). */
  private incompleteToken(): boolean {
    if (this.state !== 'normal') return this.state !== 'line' && this.state !== 'block';
    return this.tail !== '';
  }
}

/** Splits a whole text into statements (a convenience over StatementSplitter). */
export function splitStatements(text: string): string[] {
  const s = new StatementSplitter();
  return [...s.push(text), ...s.flush()];
}
