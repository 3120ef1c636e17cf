/**
 * The shell's statement splitter (src/cli/sql-shell-splitter.ts): where a
 * statement ends, by PostgreSQL's lexical rules (scan.l: quotes, E'' escapes,
 * nested block comments, dollar quoting), checked on examples and against a
 * reference built from generated statements whose boundaries are known.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { StatementSplitter, splitStatements } from '../../src/cli/sql-shell-splitter.js';

describe('splitStatements examples', () => {
  const cases: [string, string[]][] = [
    ['SELECT 1; SELECT 2;', ['SELECT 1', 'SELECT 2']],
    ['SELECT 1; SELECT 2', ['SELECT 1', 'SELECT 2']],
    ["SELECT 'a;b'; SELECT 'it''s;'", ["SELECT 'a;b'", "SELECT 'it''s;'"]],
    ["SELECT '\\'; SELECT 2", ["SELECT '\\'", 'SELECT 2']], // standard strings: \ is literal
    ["SELECT E'\\';x'; SELECT 2", ["SELECT E'\\';x'", 'SELECT 2']], // E'': \' escapes the quote
    ["SELECT e'a\\\\'; SELECT 2", ["SELECT e'a\\\\'", 'SELECT 2']],
    ["SELECT xe'a'; SELECT 2", ["SELECT xe'a'", 'SELECT 2']], // xe is an identifier, not E
    ['SELECT "a;""b"; SELECT 2', ['SELECT "a;""b"', 'SELECT 2']],
    ['SELECT 1 -- c;\n+ 1; SELECT 2', ['SELECT 1 -- c;\n+ 1', 'SELECT 2']],
    ['SELECT /* a; /* b; */ c; */ 1; SELECT 2', ['SELECT /* a; /* b; */ c; */ 1', 'SELECT 2']],
    ['SELECT $$a;$$; SELECT 2', ['SELECT $$a;$$', 'SELECT 2']],
    ['SELECT $f$ $$; $g$ ; $f$; SELECT 2', ['SELECT $f$ $$; $g$ ; $f$', 'SELECT 2']],
    ['SELECT $1; SELECT 2', ['SELECT $1', 'SELECT 2']], // a parameter, not a quote
    ['SELECT a$b$c; SELECT 2', ['SELECT a$b$c', 'SELECT 2']], // $ inside an identifier
    ['SELECT 5 - 3; SELECT 6/2', ['SELECT 5 - 3', 'SELECT 6/2']],
    [';; ; -- only a comment;\n /* and; another */ ;', []],
    ['-- leading\nSELECT 1;', ['-- leading\nSELECT 1']],
    ["SELECT 'unterminated;", ["SELECT 'unterminated;"]],
    ['', []],
  ];
  for (const [input, want] of cases) {
    it(JSON.stringify(input), () => {
      expect(splitStatements(input)).toEqual(want);
    });
  }
});

describe('StatementSplitter incremental use', () => {
  it('keeps an unfinished statement pending across lines (the continuation prompt)', () => {
    const s = new StatementSplitter();
    expect(s.isEmpty()).toBe(true);
    expect(s.push('SELECT\n')).toEqual([]);
    expect(s.isEmpty()).toBe(false);
    expect(s.push("  'a;\n")).toEqual([]);
    expect(s.lexState()).toBe('string');
    expect(s.push("b'; SELECT 2;\n")).toEqual(["SELECT\n  'a;\nb'", 'SELECT 2']);
    expect(s.isEmpty()).toBe(true);
    expect(s.push('-- a comment alone\n')).toEqual([]);
    expect(s.isEmpty()).toBe(true);
    expect(s.flush()).toEqual([]);
  });

  it('a statement fed in 50k lines costs linear time (no rescan or copy of the text so far)', { timeout: 20_000 }, () => {
    // Quadratic handling (re-flattening the growing statement on every push) takes minutes here.
    const s = new StatementSplitter();
    const line = "(1, 'a;b', E'x\\'y', $$z;$$), -- c;\n";
    expect(s.push('INSERT INTO t VALUES\n')).toEqual([]);
    let early = 0;
    for (let i = 0; i < 50_000; i++) early += s.push(line).length;
    expect(early).toBe(0);
    const [stmt] = s.push('(2);');
    expect(stmt?.length).toBe('INSERT INTO t VALUES\n'.length + line.length * 50_000 + '(2)'.length);
  });

  it('reset forgets the unfinished statement', () => {
    const s = new StatementSplitter();
    s.push('SELECT $$ unfinished');
    s.reset();
    expect(s.isEmpty()).toBe(true);
    expect(s.push('SELECT 1;')).toEqual(['SELECT 1']);
  });
});

// ---- property: generated statements whose boundaries are known ----

/** One lexical piece and whether it counts as statement content. */
interface Piece {
  readonly text: string;
  readonly significant: boolean;
}

const innerChars = fc.constantFrom('a', 'b', ' ', ';', '-', '/', '*', '$', '\n', '\\', 'é', '日');
const innerText = fc.array(innerChars, { maxLength: 8 }).map((cs) => cs.join(''));

const word: fc.Arbitrary<Piece> = fc.constantFrom('SELECT', 'x', '1', 'a1', '+', '(', ')', ',', '$1', 'a$b', 'E', '::', '5 - 3', '6/2').map((text) => ({ text, significant: true }));
const plainString = innerText.map((t) => ({ text: `'${t.replace(/'/g, "''").replace(/\\$/, '\\ ')}'`, significant: true }));
const quotedInQuotes = innerText.map((t) => ({ text: `'${t}''${t}'`, significant: true }));
const eString = innerText.map((t) => ({ text: `E'${t.replace(/\\/g, '\\\\')}\\'${t.replace(/\\/g, '\\\\')}'`, significant: true }));
const ident = innerText.map((t) => ({ text: `"${t}""x"`, significant: true }));
const lineComment = innerText.map((t) => ({ text: `--${t.replace(/\n/g, ' ')}\n`, significant: false }));
function noCommentMarks(t: string): string {
  return t.replace(/\*\//g, '* /').replace(/\/\*/g, '/ *');
}
const blockComment = fc
  .tuple(innerText, innerText)
  .map(([a, b]) => ({ text: `/* ${noCommentMarks(a)} /* ${noCommentMarks(b)} */ */`, significant: false }));
const dollar = fc
  .tuple(fc.constantFrom('', 'f', 'tag_1'), innerText)
  .map(([tag, body]) => ({ text: `$${tag}$${body.split(`$${tag}$`).join('')}$${tag}$`, significant: true }))
  .filter((p) => !p.text.slice(1, -1).includes(p.text.slice(0, p.text.indexOf('$', 1) + 1)));
const space: fc.Arbitrary<Piece> = fc.constantFrom(' ', '\n', '\t').map((text) => ({ text, significant: false }));

const piece = fc.oneof(word, plainString, quotedInQuotes, eString, ident, lineComment, blockComment, dollar, space);
const statement = fc.array(piece, { maxLength: 6 });
const script = fc.array(statement, { maxLength: 6 });

/** The reference: statements are exactly the generated ones, minus those with no content. */
function expectedOf(stmts: readonly (readonly Piece[])[]): string[] {
  return stmts.filter((ps) => ps.some((p) => p.significant)).map((ps) => ps.map((p) => p.text).join(' ').trim());
}

function textOf(stmts: readonly (readonly Piece[])[]): string {
  return stmts.map((ps) => ps.map((p) => p.text).join(' ')).join(';');
}

describe('StatementSplitter against generated statements', () => {
  it('splits exactly at the generated boundaries', () => {
    fc.assert(
      fc.property(script, (stmts) => {
        expect(splitStatements(textOf(stmts))).toEqual(expectedOf(stmts));
      }),
      { numRuns: 500 },
    );
  });

  it('gives the same statements however the text is cut into pushes', () => {
    fc.assert(
      fc.property(script, fc.array(fc.nat(), { maxLength: 10 }), (stmts, cuts) => {
        const text = textOf(stmts);
        const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const s = new StatementSplitter();
        const got: string[] = [];
        let prev = 0;
        for (const c of [...at, text.length]) {
          got.push(...s.push(text.slice(prev, c)));
          prev = c;
        }
        got.push(...s.flush());
        expect(got).toEqual(expectedOf(stmts));
      }),
      { numRuns: 500 },
    );
  });
});
