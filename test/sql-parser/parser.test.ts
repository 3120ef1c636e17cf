/**
 * Datadriven transcripts of the parser (sql/testdata/parser/*.txt).
 *
 * Verbs:
 *   parse   the input is SQL; prints each statement's canonical SQL
 *           (formatStatement), its parameters if any, and checks that the
 *           canonical SQL parses back to the same AST. Errors print as
 *           `error <SQLSTATE> [at <position>]: <message>`.
 *   ast     like parse, but prints each statement's AST as compact JSON.
 *   expr    the input is one expression (parseExpr); prints formatExpr.
 *   split   prints each statement's original text span `[start,end) sql`.
 *   info    prints each statement's command tag and return type.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatExpr, formatStatement, initParser, parseExpr, parseSql, SqlError, statementReturnType, statementTag, type ParsedStatement } from '../../sql/parser/index.js';
import { runDataDriven, type TestCase } from '../support/datadriven.js';

const dir = join(import.meta.dirname, '../../sql/testdata/parser');

function errorText(e: unknown): string {
  if (!(e instanceof SqlError)) throw e;
  const pos = e.position === undefined ? '' : ` at ${e.position}`;
  const detail = e.detail === undefined ? '' : ` (${e.detail})`;
  return `error ${e.sqlState}${pos}: ${e.message}${detail}`;
}

function params(p: ParsedStatement): string {
  if (p.params.length === 0) return '';
  const ps = p.params.map((x) => `$${x.index}${x.type === undefined ? '' : `:${x.type.name}${x.type.arrayDims > 0 ? '[]' : ''}`}`);
  return `\n  params: ${ps.join(' ')}`;
}

/** Formats, re-parses and checks the AST survives the round trip. */
function roundTrip(tc: TestCase, p: ParsedStatement): string {
  const sql = formatStatement(p.ast);
  let again: readonly ParsedStatement[];
  try {
    again = parseSql(sql);
  } catch (e) {
    return tc.fail(`canonical SQL does not parse: ${sql}: ${(e as Error).message}`);
  }
  expect(again.map((s) => s.ast), `${tc.pos}: round trip of ${sql}`).toEqual([p.ast]);
  return sql;
}

function handle(tc: TestCase): string {
  switch (tc.cmd) {
    case 'parse':
    case 'ast': {
      let stmts: readonly ParsedStatement[];
      try {
        stmts = parseSql(tc.input);
      } catch (e) {
        return errorText(e);
      }
      if (stmts.length === 0) return '(no statements)';
      return stmts
        .map((p) => {
          const sql = roundTrip(tc, p);
          return tc.cmd === 'ast' ? JSON.stringify(p.ast) + params(p) : sql + params(p);
        })
        .join('\n');
    }
    case 'expr': {
      try {
        const e = parseExpr(tc.input);
        const text = formatExpr(e);
        expect(parseExpr(text), `${tc.pos}: expr round trip`).toEqual(e);
        return tc.hasArg('ast') ? JSON.stringify(e) : text;
      } catch (e) {
        return errorText(e);
      }
    }
    case 'split': {
      try {
        return parseSql(tc.input)
          .map((p) => `[${p.start},${p.end}) ${JSON.stringify(p.sql)}`)
          .join('\n');
      } catch (e) {
        return errorText(e);
      }
    }
    case 'info':
      return parseSql(tc.input)
        .map((p) => `${p.ast.kind}: ${statementTag(p.ast)} / ${statementReturnType(p.ast)}`)
        .join('\n');
    default:
      return tc.fail(`unknown verb ${tc.cmd}`);
  }
}

describe('parser transcripts', () => {
  beforeAll(async () => {
    await initParser();
  });
  for (const f of readdirSync(dir).filter((x) => x.endsWith('.txt')).sort()) {
    it(f, async () => {
      await runDataDriven(join(dir, f), handle);
    });
  }
});
