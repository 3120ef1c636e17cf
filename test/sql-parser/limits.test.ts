/**
 * Nesting limits: a deep statement is an error with a SQLSTATE (54001
 * "stack depth limit exceeded", or PostgreSQL's own 42601 "memory exhausted"
 * from its parser stack), never a JS stack overflow escaping the parser.
 * Trees within the limit (convert.ts MAX_DEPTH = 1000) can be printed and
 * walked by the recursive helpers.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { formatStatement, initParser, parseSql, SqlError, walkExpr, type Expr } from '../../sql/parser/index.js';

function sqlStateOf(text: string): string {
  try {
    parseSql(text);
    return 'ok';
  } catch (e) {
    expect(e).toBeInstanceOf(SqlError);
    return (e as SqlError).sqlState;
  }
}

describe('nesting limits', () => {
  beforeAll(async () => {
    await initParser();
  });

  it('accepts, prints and walks a 990-deep expression', () => {
    const [p] = parseSql(`SELECT ${Array(990).fill('x').join(' + ')}`);
    expect(p).toBeDefined();
    expect(formatStatement(p!.ast).length).toBeGreaterThan(990 * 4);
    let nodes = 0;
    if (p!.ast.kind === 'Select' && p!.ast.body.kind === 'SelectClause') walkExpr(p!.ast.body.targets[0]!.expr as Expr, () => void nodes++);
    expect(nodes).toBe(990 + 989);
  });

  it('rejects deeper statements with a SQLSTATE', () => {
    expect(sqlStateOf(`SELECT ${Array(1500).fill('1').join('+')}`)).toBe('54001');
    expect(sqlStateOf(`SELECT ${Array(20000).fill('1').join('+')}`)).toBe('54001');
    expect(sqlStateOf(`SELECT ${'(SELECT '.repeat(800)}1${')'.repeat(800)}`)).toBe('54001');
    expect(sqlStateOf(`SELECT * FROM t0${Array.from({ length: 1200 }, (_, i) => ` JOIN t${i + 1} ON true`).join('')}`)).toBe('54001');
    expect(sqlStateOf(`SELECT ${'('.repeat(20000)}1${')'.repeat(20000)}`)).toBe('42601');
    // Parentheses alone add no nodes: 5,000 of them are fine.
    expect(sqlStateOf(`SELECT ${'('.repeat(5000)}1${')'.repeat(5000)}`)).toBe('ok');
  });

  it('flattens long AND chains, so they are not deep', () => {
    const [p] = parseSql(`SELECT * FROM t WHERE ${Array(5000).fill('a = 1').join(' AND ')}`);
    const where = p!.ast.kind === 'Select' && p!.ast.body.kind === 'SelectClause' ? p!.ast.body.where : undefined;
    expect(where?.kind === 'BoolExpr' ? where.args.length : 0).toBe(5000);
  });
});
