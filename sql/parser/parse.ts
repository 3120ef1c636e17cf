/**
 * The parser's entry points: SQL text → Cairn AST (ast.ts).
 *
 *   parseSql(text)    every statement of a (multi-statement) string
 *   parseOne(text)    exactly one statement (extended-protocol Parse)
 *   parseExpr(text)   one expression (DEFAULT / CHECK text from descriptors)
 *
 * Path of a string:
 *
 *   "  UPSERT INTO …" ──► UPSERT overwritten by INSERT ──parseSync──► ok ──► Insert{upsert}
 *                                                            │ (else: general path)
 *   text ──parseSync──► ok ──► convert each RawStmt ──► ParsedStatement[]
 *              │
 *              └─ syntax error ──► scanSync, split at top-level ';'
 *                    any Cairn statement?  no ──► the original error (42601, position)
 *                                          yes ─► each statement alone: Cairn layer
 *                                                 (cairn-statements.ts) or masked parseSync
 *
 * (Strings starting with SHOW RANGES / SHOW CLUSTER / SET CLUSTER go to the
 * lexer first, skipping a parseSync that would fail.) The common case costs
 * one parseSync plus the conversion; the lexer runs only for strings
 * PostgreSQL rejects. Errors are SqlError: 42601 with PostgreSQL's message
 * and 1-based position, or 0A000 `unimplemented: …`.
 *
 * Requires `await initParser()` once per process (pg-query-module.ts).
 * Pure otherwise: no I/O, no clock; results are immutable and may be cached
 * (statement-cache.ts).
 */
import type { Node, RawStmt } from 'libpg-query';
import type { Expr, ParsedStatement } from './ast.js';
import { convertCairnStatement, isCairnStatement, splitStatements } from './cairn-statements.js';
import { Converter } from './convert.js';
import { ByteIndex, mask, pgParse, pgScan, positionOf } from './pg-parse.js';
import { SqlError, syntaxError } from './sql-error.js';

export { initParser } from './pg-query-module.js';

const TRAILING_SPACE = /[\s;]+$/;
const EMPTY_TEXT = /^[\s;]*$/;

function statementOf(text: string, start: number, end: number, node: Node, conv: Converter): ParsedStatement {
  const ast = conv.statement(node);
  return { ast, sql: text.slice(start, end), start, end, params: conv.params() };
}

/** Trims whitespace (and stray ';') from the end of the span [start, end). */
function trimEnd(text: string, start: number, end: number): number {
  const m = TRAILING_SPACE.exec(text.slice(start, end));
  return m === null ? end : end - m[0].length;
}

/**
 * Leading words of Cairn statements. Only a hint that lets such strings skip
 * the parseSync attempt that would fail anyway; the token-level recognition
 * in cairn-statements.ts decides.
 */
const CAIRN_HINT = /^\s*(upsert|show\s+(ranges|cluster|all\s+cluster)|set\s+cluster)\s/i;

/** A leading `UPSERT INTO` (YCSB's write): rewritten in place to INSERT, no lexer pass needed. */
const LEADING_UPSERT = /^\s*upsert\s+into\s/i;

/** Parses every statement of `text`. Empty statements (`;;`, comments only) are skipped. */
export function parseSql(text: string): readonly ParsedStatement[] {
  // PostgreSQL answers an empty string with EmptyQueryResponse, not an error.
  if (EMPTY_TEXT.test(text)) return [];
  if (LEADING_UPSERT.test(text)) {
    const viaUpsert = parseLeadingUpsert(text);
    if (viaUpsert !== undefined) return viaUpsert;
  }
  if (CAIRN_HINT.test(text)) {
    const viaCairn = parseWithCairnLayer(text, undefined);
    if (viaCairn !== undefined) return viaCairn;
  }
  try {
    return convertAll(text, pgParse(text).stmts ?? []);
  } catch (e) {
    if (!(e instanceof SqlError) || e.sqlState !== '42601') throw e;
    const viaCairn = parseWithCairnLayer(text, e);
    if (viaCairn === undefined) throw e;
    return viaCairn;
  }
}

/** Converts libpg-query's statements of `text`, keeping each one's span. */
function convertAll(text: string, raws: readonly RawStmt[]): ParsedStatement[] {
  const bi = new ByteIndex(text);
  const out: ParsedStatement[] = [];
  for (const raw of raws) {
    if (raw.stmt === undefined) continue;
    const startByte = raw.stmt_location ?? 0;
    const start = bi.toIndex(startByte);
    const end = raw.stmt_len === undefined || raw.stmt_len === 0 ? text.length : bi.toIndex(startByte + raw.stmt_len);
    out.push(statementOf(text, start, trimEnd(text, start, end), raw.stmt, new Converter()));
  }
  return out;
}

/**
 * `UPSERT INTO …[; more PostgreSQL statements]`: UPSERT is overwritten by
 * INSERT (same length, so offsets hold) and the whole string parsed once.
 * Undefined when that does not simply work (a syntax error, ON CONFLICT, more
 * Cairn syntax later on): the general path then decides, with its errors.
 */
function parseLeadingUpsert(text: string): readonly ParsedStatement[] | undefined {
  const at = text.search(/\S/);
  let stmts: ParsedStatement[];
  try {
    stmts = convertAll(text, pgParse(`${text.slice(0, at)}INSERT${text.slice(at + 6)}`, text).stmts ?? []);
  } catch (e) {
    if (e instanceof SqlError) return undefined;
    throw e;
  }
  const first = stmts[0];
  if (first === undefined || first.ast.kind !== 'Insert' || first.ast.onConflict !== undefined) return undefined;
  stmts[0] = { ...first, ast: { ...first.ast, upsert: true } };
  return stmts;
}

/**
 * The statements of `text` through the Cairn layer, or undefined when none of
 * them is Cairn syntax (or the lexer rejects the text) — the caller then
 * reports PostgreSQL's own verdict.
 */
function parseWithCairnLayer(text: string, original: SqlError | undefined): readonly ParsedStatement[] | undefined {
  let segs;
  try {
    segs = splitStatements(text, pgScan(text));
  } catch (e) {
    if (original === undefined && e instanceof SqlError) return undefined;
    throw original ?? e;
  }
  if (!segs.some(isCairnStatement)) return undefined;
  return segs.map((seg) => {
    const conv = new Converter();
    if (isCairnStatement(seg)) {
      const ast = convertCairnStatement(text, seg, conv);
      return { ast, sql: text.slice(seg.start, seg.end), start: seg.start, end: seg.end, params: conv.params() };
    }
    const raws = pgParse(mask(text, seg.start, seg.end), text).stmts ?? [];
    const node = raws[0]?.stmt;
    if (raws.length !== 1 || node === undefined) throw syntaxError('syntax error', positionOf(text, seg.start));
    return statementOf(text, seg.start, seg.end, node, conv);
  });
}

/** Parses a string that must hold exactly one statement. */
export function parseOne(text: string): ParsedStatement {
  const stmts = parseSql(text);
  if (stmts.length !== 1) {
    throw new SqlError('sql.syntax_error', '42601', `parser: expected one statement, found ${stmts.length}`, {
      position: stmts.length > 1 ? positionOf(text, (stmts[1] as ParsedStatement).start) : undefined,
    });
  }
  return stmts[0] as ParsedStatement;
}

const EXPR_PREFIX = 'SELECT ';

/**
 * Parses one scalar expression, e.g. a stored `DEFAULT` or `CHECK` text.
 * Positions in errors refer to `text`.
 */
export function parseExpr(text: string): Expr {
  let r;
  try {
    r = pgParse(EXPR_PREFIX + text);
  } catch (e) {
    if (e instanceof SqlError && e.position !== undefined) {
      throw new SqlError(e.code, e.sqlState, e.message, { position: Math.max(1, e.position - EXPR_PREFIX.length) });
    }
    throw e;
  }
  const stmts = r.stmts ?? [];
  const sel = (stmts[0]?.stmt as { SelectStmt?: { targetList?: Node[] } } | undefined)?.SelectStmt;
  const targets = sel?.targetList;
  const plain = sel !== undefined && Object.keys(sel).every((k) => k === 'targetList' || k === 'limitOption' || k === 'op');
  if (stmts.length !== 1 || !plain || targets?.length !== 1) {
    throw syntaxError('parser: expected exactly one expression');
  }
  const target = (targets[0] as { ResTarget: { val: Node; name?: string } }).ResTarget;
  if (target.name !== undefined) throw syntaxError('parser: expected exactly one expression');
  return new Converter().expr(target.val);
}
