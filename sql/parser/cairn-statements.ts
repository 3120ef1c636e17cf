/**
 * Cairn's own statements: the small layer above PostgreSQL's grammar.
 *
 *   [EXPLAIN …] [WITH …] UPSERT INTO t …          → Insert { upsert: true }
 *   SHOW RANGES FROM TABLE t | FROM INDEX t@i     → ShowRanges
 *   ALTER TABLE t SPLIT AT VALUES (…)[, (…)]      → SplitAt (any query after AT)
 *     [WITH EXPIRATION e]
 *   ALTER INDEX t@i SPLIT AT …                    → SplitAt
 *   ALTER TABLE t SCATTER | ALTER INDEX t@i SCATTER → Scatter
 *   ALTER TABLE|INDEX|DATABASE|RANGE x CONFIGURE ZONE USING k = v, … | DISCARD
 *                                                 → ConfigureZone
 *   SELECT … AS OF SYSTEM TIME expr …             → Select { asOfSystemTime }
 *   BEGIN|START TRANSACTION … AS OF SYSTEM TIME e → Begin { modes.asOfSystemTime }
 *   SET TRANSACTION … AS OF SYSTEM TIME e         → SetTransaction
 *   BEGIN … PRIORITY LOW|NORMAL|HIGH, SET TRANSACTION PRIORITY … → modes.priority
 *   SHOW CLUSTER SETTING a.b | SHOW ALL CLUSTER SETTINGS
 *   SET CLUSTER SETTING a.b {=|TO} expr | DEFAULT
 *   SHOW TABLES FROM db[.schema], SHOW COLUMNS FROM t, SHOW CREATE [TABLE] t
 *   CREATE DATABASE|USER|ROLE IF NOT EXISTS …     (PostgreSQL lacks IF NOT EXISTS)
 *   (SHOW TABLES / SHOW DATABASES parse as PostgreSQL SHOW; convert.ts maps them.)
 *
 * How: parse.ts comes here when libpg-query rejects a string (or, as a
 * shortcut, when it starts with a Cairn keyword; a leading UPSERT it handles
 * itself). The
 * string is cut into statements with libpg-query's own lexer (scanSync), so
 * quotes, comments, dollar quoting and `;` inside strings are handled exactly
 * as PostgreSQL does; each statement is recognised by its leading tokens (a
 * keyword inside a string literal is a string token and never matches).
 * Cairn syntax is then removed by masking — the Cairn tokens are blanked with
 * spaces (UPSERT is overwritten by INSERT, same length) — and what remains is
 * parsed by libpg-query at its original offsets, so every location and error
 * position still refers to the user's text. Expressions in Cairn clauses are
 * parsed the same way, as the select list of a masked `SELECT`.
 *
 * A statement that is not Cairn syntax is parsed alone (masked), so a
 * syntax error reports PostgreSQL's message and position for it.
 */
import type { ScanToken } from 'libpg-query';
import type { Node, SelectStmt, ParseResult } from 'libpg-query';
import type { Expr, RangeTarget, SelectStatement, Statement, TableName, ZoneTarget } from './ast.js';
import { Converter } from './convert.js';
import { ByteIndex, mask, overwrite, pgParse, positionOf } from './pg-parse.js';
import { syntaxError } from './sql-error.js';

/** One lexer token with UTF-16 offsets and its matching form. */
interface Tok {
  readonly start: number;
  readonly end: number;
  readonly text: string;
  /** Lower-cased word for keywords and unquoted identifiers; '' otherwise. */
  readonly word: string;
  /** Paren/bracket depth before this token, relative to the statement. */
  readonly depth: number;
}

/** One statement of the input: its significant tokens and its span. */
export interface Segment {
  readonly toks: readonly Tok[];
  readonly start: number;
  readonly end: number;
}

const COMMENT_TOKENS = new Set(['C_COMMENT', 'SQL_COMMENT']);
const IDENT_TOKEN = 258;

/** Splits `text` (already lexed into `raw`) into statements at top-level `;`. */
export function splitStatements(text: string, raw: readonly ScanToken[]): Segment[] {
  const bi = new ByteIndex(text);
  const segs: Segment[] = [];
  let cur: Tok[] = [];
  let depth = 0;
  const flush = (): void => {
    if (cur.length > 0) segs.push({ toks: cur, start: (cur[0] as Tok).start, end: (cur[cur.length - 1] as Tok).end });
    cur = [];
    depth = 0;
  };
  for (const t of raw) {
    if (COMMENT_TOKENS.has(t.tokenName)) continue;
    if (t.text === ';') {
      flush();
      continue;
    }
    const start = bi.toIndex(t.start);
    const end = bi.toIndex(t.end);
    const src = text.slice(start, end);
    const isWord = t.keywordKind > 0 || (t.tokenType === IDENT_TOKEN && !src.startsWith('"'));
    if (src === ')' || src === ']') depth = Math.max(0, depth - 1);
    cur.push({ start, end, text: src, word: isWord ? foldIdent(src) : '', depth });
    if (src === '(' || src === '[') depth++;
  }
  flush();
  return segs;
}

/** PostgreSQL's case folding of an unquoted identifier: ASCII letters only. */
function foldIdent(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

const SELECT_CLAUSE_ENDS = new Set(['where', 'group', 'having', 'window', 'order', 'limit', 'offset', 'fetch', 'for', 'union', 'intersect', 'except']);
const TXN_MODE_STARTS = new Set(['isolation', 'read', 'not', 'deferrable', 'priority']);

/** True when the statement uses syntax that only this layer understands. */
export function isCairnStatement(seg: Segment): boolean {
  const w = seg.toks.map((t) => t.word);
  const [a, b, c] = w;
  if (a === 'upsert' || ((a === 'with' || a === 'explain') && findSeq(seg, 0, ['upsert', 'into']) >= 0)) return true;
  if (a === 'show' && (b === 'ranges' || b === 'cluster' || b === 'columns' || b === 'create' || (b === 'tables' && c === 'from') || (b === 'all' && c === 'cluster'))) return true;
  if (a === 'set' && b === 'cluster' && c === 'setting') return true;
  if (a === 'create' && (b === 'database' || b === 'user' || b === 'role') && c === 'if') return true;
  if (a === 'create' && (b === 'index' || (b === 'unique' && c === 'index')) && findSeq(seg, 0, ['storing']) >= 0) return true;
  if (a === 'drop' && b === 'index' && seg.toks.some((t) => t.text === '@' && t.depth === 0)) return true;
  if ((a === 'begin' || a === 'start' || (a === 'set' && b === 'transaction')) && findSeq(seg, 1, ['priority']) >= 0) return true;
  if (a === 'alter' && (b === 'table' || b === 'index' || b === 'database' || b === 'range')) {
    // The Cairn clause follows the target's name directly: `ALTER TABLE db.t SPLIT AT`, `ALTER INDEX t@i CONFIGURE ZONE`.
    const i = skipName(seg, 2);
    const [x, y] = [seg.toks[i]?.word, seg.toks[i + 1]?.word];
    return (x === 'split' && y === 'at') || (x === 'configure' && y === 'zone') || (x === 'scatter' && y === undefined);
  }
  return findSeq(seg, 0, ['as', 'of', 'system', 'time']) >= 0;
}

/** The index of the first token after a name `a[.b[.c]][@i]` starting at token i. */
function skipName(seg: Segment, i: number): number {
  const t = seg.toks;
  const isName = (k: number): boolean => t[k] !== undefined && ((t[k] as Tok).word !== '' || (t[k] as Tok).text.startsWith('"'));
  if (!isName(i)) return i;
  i++;
  while ((t[i]?.text === '.' || t[i]?.text === '@') && isName(i + 1)) i += 2;
  return i;
}

/** Index of the first depth-0 occurrence of the word sequence at or after `from`, or -1. */
function findSeq(seg: Segment, from: number, words: readonly string[]): number {
  const t = seg.toks;
  outer: for (let i = from; i + words.length <= t.length; i++) {
    if ((t[i] as Tok).depth !== 0) continue;
    for (let j = 0; j < words.length; j++) if ((t[i + j] as Tok).word !== words[j]) continue outer;
    return i;
  }
  return -1;
}

/** Converts one Cairn statement. `text` is the whole input string. */
export function convertCairnStatement(text: string, seg: Segment, conv: Converter): Statement {
  return new CairnStatementParser(text, seg, conv).parse();
}

class CairnStatementParser {
  private readonly toks: readonly Tok[];

  constructor(
    private readonly text: string,
    private readonly seg: Segment,
    private readonly conv: Converter,
  ) {
    this.toks = seg.toks;
  }

  private word(i: number): string {
    return this.toks[i]?.word ?? '';
  }

  private error(i: number, what: string): never {
    const t = this.toks[i];
    if (t === undefined) throw syntaxError('syntax error at end of input', positionOf(this.text, this.seg.end), what);
    throw syntaxError(`syntax error at or near "${t.text}"`, positionOf(this.text, t.start), what);
  }

  private expect(i: number, word: string): number {
    if (this.word(i) !== word) this.error(i, `expected ${word.toUpperCase()}`);
    return i + 1;
  }

  private expectEnd(i: number): void {
    if (i < this.toks.length) this.error(i, 'expected end of statement');
  }

  parse(): Statement {
    const w0 = this.word(0);
    const w1 = this.word(1);
    const w2 = this.word(2);
    if (w0 === 'upsert' || w0 === 'with' || (w0 === 'explain' && findSeq(this.seg, 0, ['upsert', 'into']) >= 0)) return this.upsert();
    if (w0 === 'show') {
      if (w1 === 'ranges') return this.showRanges();
      if (w1 === 'cluster') {
        const [name, next] = this.dottedName(this.expect(2, 'setting'));
        this.expectEnd(next);
        return { kind: 'ShowClusterSetting', name };
      }
      if (w1 === 'all') {
        this.expectEnd(this.expect(this.expect(2, 'cluster'), 'settings'));
        return { kind: 'ShowClusterSetting', name: 'all' };
      }
      if (w1 === 'tables') {
        const [db, next] = this.ident(this.expect(2, 'from'));
        let schema: string | undefined;
        let i = next;
        if (this.toks[i]?.text === '.') [schema, i] = this.ident(i + 1);
        this.expectEnd(i);
        return { kind: 'ShowTables', database: db, schema };
      }
      if (w1 === 'columns') {
        const [table, next] = this.tableName(this.expect(2, 'from'));
        this.expectEnd(next);
        return { kind: 'ShowColumns', table };
      }
      if (w1 === 'create') {
        const [table, next] = this.tableName(w2 === 'table' ? 3 : 2);
        this.expectEnd(next);
        return { kind: 'ShowCreateTable', table };
      }
    }
    if (w0 === 'set' && w1 === 'cluster') return this.setClusterSetting();
    if (w0 === 'create' && (w1 === 'index' || w1 === 'unique')) return this.createIndexStoring();
    if (w0 === 'create') return this.createIfNotExists();
    if (w0 === 'drop') return this.dropIndex();
    if (w0 === 'alter') {
      const split = findSeq(this.seg, 0, ['split', 'at']);
      if (split >= 0) return this.splitAt(split);
      const zone = findSeq(this.seg, 0, ['configure', 'zone']);
      if (zone >= 0) return this.configureZone(zone);
      if (this.word(this.toks.length - 1) === 'scatter') return this.scatter();
    }
    const prio = w0 === 'begin' || w0 === 'start' || (w0 === 'set' && w1 === 'transaction') ? findSeq(this.seg, 1, ['priority']) : -1;
    if (prio >= 0) return this.priority(prio);
    const aost = findSeq(this.seg, 0, ['as', 'of', 'system', 'time']);
    if (aost >= 0) return this.asOfSystemTime(aost);
    return this.error(0, 'not a Cairn statement');
  }

  // --- names ---------------------------------------------------------------

  /** An identifier at token i (unquoted folded to lower case, quoted verbatim). */
  private ident(i: number): [string, number] {
    const t = this.toks[i];
    if (t === undefined) this.error(i, 'expected a name');
    if (t.word !== '') return [t.word, i + 1];
    if (t.text.startsWith('"')) return [t.text.slice(1, -1).replace(/""/g, '"'), i + 1];
    return this.error(i, 'expected a name');
  }

  /** `a[.b[.c]]` as a table name. */
  private tableName(i: number): [TableName, number] {
    const parts: string[] = [];
    let [p, next] = this.ident(i);
    parts.push(p);
    while (this.toks[next]?.text === '.' && parts.length < 3) {
      [p, next] = this.ident(next + 1);
      parts.push(p);
    }
    const n = parts.length;
    return [{ name: parts[n - 1] as string, schema: n >= 2 ? parts[n - 2] : undefined, catalog: n === 3 ? parts[0] : undefined }, next];
  }

  /** A setting name: words joined by dots (`kv.range_split.by_load_enabled`). */
  private dottedName(i: number): [string, number] {
    const parts: string[] = [];
    let [p, next] = this.ident(i);
    parts.push(p);
    while (this.toks[next]?.text === '.') {
      [p, next] = this.ident(next + 1);
      parts.push(p);
    }
    return [parts.join('.'), next];
  }

  /** `TABLE t` or `INDEX t@i` starting at token i. */
  private rangeTarget(i: number): [RangeTarget, number] {
    const what = this.word(i);
    if (what === 'table') {
      const [table, next] = this.tableName(i + 1);
      return [{ kind: 'table', table }, next];
    }
    if (what === 'index') {
      const [table, next] = this.tableName(i + 1);
      if (this.toks[next]?.text !== '@') this.error(next, 'expected table@index');
      const [index, after] = this.ident(next + 1);
      return [{ kind: 'index', table, index }, after];
    }
    return this.error(i, 'expected TABLE or INDEX');
  }

  // --- pieces parsed by libpg-query ----------------------------------------

  /** Parses the statement with the tokens [from, to) blanked out (and optional overwrites). */
  private parseMasked(blank: readonly (readonly [number, number])[], edits: readonly (readonly [number, string])[] = []): Node {
    let s = mask(this.text, this.seg.start, this.seg.end);
    for (const [from, to] of blank) {
      if (from >= to) continue;
      const a = (this.toks[from] as Tok).start;
      const b = (this.toks[to - 1] as Tok).end;
      s = overwrite(s, a, ' '.repeat(b - a));
    }
    for (const [at, repl] of edits) s = overwrite(s, at, repl);
    return this.single(pgParse(s, this.text));
  }

  private single(r: ParseResult): Node {
    const stmts = r.stmts ?? [];
    if (stmts.length !== 1 || stmts[0]?.stmt === undefined) this.error(0, 'expected one statement');
    return stmts[0].stmt;
  }

  /** Parses the query in tokens [from, end of statement). */
  private query(from: number, to = this.toks.length): SelectStatement {
    const t = this.toks[from];
    if (t === undefined || to <= from) this.error(from, 'expected a query');
    const node = this.single(pgParse(mask(this.text, t.start, to < this.toks.length ? (this.toks[to] as Tok).start : this.seg.end), this.text));
    const sel = (node as { SelectStmt?: SelectStmt }).SelectStmt;
    if (sel === undefined) this.error(from, 'expected a query');
    return this.conv.select(sel);
  }

  /** Parses each token range [from, to) as one expression. */
  private exprs(ranges: readonly (readonly [number, number])[]): Expr[] {
    if (ranges.length === 0) return [];
    const first = ranges[0] as readonly [number, number];
    let s = ' '.repeat(this.text.length);
    for (const [from, to] of ranges) {
      if (from >= to) this.error(from, 'expected an expression');
      const a = (this.toks[from] as Tok).start;
      const b = (this.toks[to - 1] as Tok).end;
      s = overwrite(s, a, this.text.slice(a, b));
    }
    for (let k = 0; k + 1 < ranges.length; k++) s = overwrite(s, (this.toks[(ranges[k] as readonly [number, number])[1] - 1] as Tok).end, ',');
    // Every Cairn clause has at least "SELECT " worth of keywords before its first expression.
    const at = (this.toks[first[0]] as Tok).start - 7;
    s = overwrite(s, at, 'SELECT ');
    const node = this.single(pgParse(s, this.text));
    const sel = (node as { SelectStmt?: SelectStmt }).SelectStmt;
    const targets = sel?.targetList ?? [];
    const plain = sel !== undefined && Object.keys(sel).every((k) => k === 'targetList' || k === 'limitOption' || k === 'op');
    if (!plain || targets.length !== ranges.length) this.error(first[0], 'expected an expression');
    return targets.map((t) => this.conv.expr((t as { ResTarget: { val: Node } }).ResTarget.val));
  }

  // --- statements ------------------------------------------------------------

  /** `[EXPLAIN …] [WITH …] UPSERT INTO …`: the UPSERT token is overwritten by INSERT (same length). */
  private upsert(): Statement {
    const at = this.word(0) === 'upsert' ? 0 : findSeq(this.seg, 0, ['upsert', 'into']);
    this.expect(at + 1, 'into');
    const st = this.conv.statement(this.parseMasked([], [[(this.toks[at] as Tok).start, 'INSERT']]));
    const mark = (s: Statement): Statement => {
      if (s.kind === 'Explain') return { ...s, statement: mark(s.statement) };
      if (s.kind !== 'Insert') return this.error(at, 'expected UPSERT INTO');
      if (s.onConflict !== undefined) return this.error(findSeq(this.seg, 0, ['on', 'conflict']), 'UPSERT does not take ON CONFLICT');
      return { ...s, upsert: true };
    };
    return mark(st);
  }

  private showRanges(): Statement {
    const [target, next] = this.rangeTarget(this.expect(2, 'from'));
    this.expectEnd(next);
    return { kind: 'ShowRanges', target };
  }

  private setClusterSetting(): Statement {
    const [name, next] = this.dottedName(this.expect(2, 'setting'));
    const op = this.toks[next];
    if (op === undefined || (op.text !== '=' && op.word !== 'to')) this.error(next, 'expected = or TO');
    if (this.word(next + 1) === 'default' && next + 2 === this.toks.length) return { kind: 'SetClusterSetting', name, value: undefined };
    const [value] = this.exprs([[next + 1, this.toks.length]]);
    return { kind: 'SetClusterSetting', name, value };
  }

  private createIfNotExists(): Statement {
    const i = this.expect(this.expect(this.expect(2, 'if'), 'not'), 'exists');
    const st = this.conv.statement(this.parseMasked([[2, i]]));
    if (st.kind === 'CreateDatabase' || st.kind === 'CreateRole') return { ...st, ifNotExists: true };
    return this.error(2, 'IF NOT EXISTS');
  }

  /** CockroachDB's `CREATE INDEX … STORING (cols)`: STORING is INCLUDE (same length, overwritten). */
  private createIndexStoring(): Statement {
    const at = findSeq(this.seg, 0, ['storing']);
    return this.conv.statement(this.parseMasked([], [[(this.toks[at] as Tok).start, 'INCLUDE']]));
  }

  /** `DROP INDEX [IF EXISTS] {[schema.]i | t@i}, … [CASCADE | RESTRICT]`. */
  private dropIndex(): Statement {
    let i = 2;
    let ifExists = false;
    if (this.word(i) === 'if') {
      i = this.expect(i + 1, 'exists');
      ifExists = true;
    }
    const indexes: { table: TableName | undefined; index: TableName }[] = [];
    for (;;) {
      const [name, next] = this.tableName(i);
      if (this.toks[next]?.text === '@') {
        const [index, after] = this.ident(next + 1);
        indexes.push({ table: name, index: { name: index } });
        i = after;
      } else {
        indexes.push({ table: undefined, index: name });
        i = next;
      }
      if (this.toks[i]?.text !== ',') break;
      i++;
    }
    let cascade = false;
    if (this.word(i) === 'cascade' || this.word(i) === 'restrict') {
      cascade = this.word(i) === 'cascade';
      i++;
    }
    this.expectEnd(i);
    return { kind: 'DropIndex', indexes, ifExists, cascade };
  }

  private splitAt(split: number): Statement {
    const [target, next] = this.rangeTarget(1);
    if (next !== split) this.error(next, 'expected SPLIT AT');
    const w = findSeq(this.seg, split + 2, ['with', 'expiration']);
    if (w < 0) return { kind: 'SplitAt', target, rows: this.query(split + 2) };
    const [expiration] = this.exprs([[w + 2, this.toks.length]]);
    return { kind: 'SplitAt', target, rows: this.query(split + 2, w), expiration };
  }

  private scatter(): Statement {
    const [target, next] = this.rangeTarget(1);
    this.expectEnd(this.expect(next, 'scatter'));
    return { kind: 'Scatter', target };
  }

  private configureZone(zone: number): Statement {
    let target: ZoneTarget;
    let next: number;
    const what = this.word(1);
    if (what === 'database' || what === 'range') {
      let name: string;
      [name, next] = this.ident(2);
      target = what === 'database' ? { kind: 'database', database: name } : { kind: 'range', range: name };
    } else {
      [target, next] = this.rangeTarget(1);
    }
    if (next !== zone) this.error(next, 'expected CONFIGURE ZONE');
    let i = zone + 2;
    if (this.word(i) === 'discard') {
      this.expectEnd(i + 1);
      return { kind: 'ConfigureZone', target, settings: [], discard: true };
    }
    i = this.expect(i, 'using');
    const names: string[] = [];
    const ranges: [number, number][] = [];
    while (i < this.toks.length) {
      const [name, eq] = this.dottedName(i);
      if (this.toks[eq]?.text !== '=') this.error(eq, 'expected =');
      let j = eq + 1;
      while (j < this.toks.length && !((this.toks[j] as Tok).depth === 0 && (this.toks[j] as Tok).text === ',')) j++;
      names.push(name);
      ranges.push([eq + 1, j]);
      i = j + 1;
      if (j < this.toks.length && i >= this.toks.length) this.error(i, 'expected a setting');
    }
    if (names.length === 0) this.error(i, 'expected a setting');
    const values = this.exprs(ranges);
    return { kind: 'ConfigureZone', target, settings: names.map((name, k) => ({ name, value: values[k] as Expr })), discard: false };
  }

  /** `PRIORITY LOW|NORMAL|HIGH` among the modes of BEGIN/START TRANSACTION/SET TRANSACTION (CockroachDB's). */
  private priority(at: number): Statement {
    const level = this.word(at + 1);
    if (level !== 'low' && level !== 'normal' && level !== 'high') this.error(at + 1, 'expected LOW, NORMAL or HIGH');
    if (findSeq(this.seg, 0, ['as', 'of', 'system', 'time']) >= 0) this.error(at, 'PRIORITY together with AS OF SYSTEM TIME');
    // In a transaction-mode list, drop one separating comma with the clause.
    let from = at;
    let to = at + 2;
    if (this.toks[to]?.text === ',') to++;
    else if (this.toks[from - 1]?.text === ',') from--;
    if (this.word(0) === 'set' && from === 2 && to === this.toks.length) {
      return { kind: 'SetTransaction', modes: { isolation: undefined, readOnly: undefined, deferrable: undefined, asOfSystemTime: undefined, priority: level } };
    }
    const st = this.conv.statement(this.parseMasked([[from, to]]));
    if (st.kind !== 'Begin' && st.kind !== 'SetTransaction') return this.error(at, 'PRIORITY is only allowed on BEGIN and SET TRANSACTION');
    return { ...st, modes: { ...st.modes, priority: level } };
  }

  /** `… AS OF SYSTEM TIME expr …` on SELECT/EXPLAIN SELECT, BEGIN/START TRANSACTION, SET TRANSACTION. */
  private asOfSystemTime(at: number): Statement {
    const w0 = this.word(0);
    const txn = w0 === 'begin' || w0 === 'start' || (w0 === 'set' && this.word(1) === 'transaction');
    let end = at + 4;
    while (end < this.toks.length) {
      const t = this.toks[end] as Tok;
      if (t.depth === 0 && (txn ? t.text === ',' || TXN_MODE_STARTS.has(t.word) : SELECT_CLAUSE_ENDS.has(t.word))) break;
      end++;
    }
    const [asOf] = this.exprs([[at + 4, end]]);
    // In a transaction-mode list, drop one separating comma with the clause.
    let from = at;
    let to = end;
    if (txn && this.toks[to]?.text === ',') to++;
    else if (txn && this.toks[from - 1]?.text === ',') from--;
    // `SET TRANSACTION AS OF SYSTEM TIME x` alone leaves no mode for PostgreSQL's grammar.
    if (w0 === 'set' && from === 2 && to === this.toks.length) {
      return { kind: 'SetTransaction', modes: { isolation: undefined, readOnly: undefined, deferrable: undefined, asOfSystemTime: asOf } };
    }
    const st = this.conv.statement(this.parseMasked([[from, to]]));
    return attachAsOf(st, asOf, () => this.error(at, 'AS OF SYSTEM TIME is only allowed on SELECT and BEGIN'));
  }
}

function attachAsOf(st: Statement, asOf: Expr | undefined, fail: () => never): Statement {
  switch (st.kind) {
    case 'Select':
      return { ...st, asOfSystemTime: asOf };
    case 'Begin':
      return { ...st, modes: { ...st.modes, asOfSystemTime: asOf } };
    case 'SetTransaction':
      return { ...st, modes: { ...st.modes, asOfSystemTime: asOf } };
    case 'Explain':
      return { ...st, statement: attachAsOf(st.statement, asOf, fail) };
    default:
      return fail();
  }
}
