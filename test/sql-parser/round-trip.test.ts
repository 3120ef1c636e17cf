/**
 * Property: printing then re-parsing is the identity on ASTs (format.ts's
 * contract), over generated expressions and statements; plus the walkers.
 *
 * The generator builds ASTs directly (not SQL text) so every node kind of
 * ast.ts's Expr union is exercised, including names that need quoting and
 * strings with quotes, backslashes and non-ASCII characters. It produces only
 * trees the parser itself can produce: PostgreSQL folds `-<number>` into a
 * negative constant and flattens `(a AND b) AND c`, so those shapes are left
 * out (see the comments at the generators).
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  exprChildren,
  formatExpr,
  formatStatement,
  initParser,
  mapExpr,
  parseExpr,
  parseOne,
  walkExpr,
  type Expr,
  type SelectStatement,
  type Statement,
  type TypeName,
} from '../../sql/parser/index.js';

const NUM_RUNS = Number(process.env['PARSER_PROPERTY_RUNS'] ?? 300);

const identArb = fc.constantFrom('a', 'b_1', 'k', 'Mixed', 'select', 'user', 'with space', 'q"uote', 'ünï', 'order', 'x$y', 'left', 'value', 'time');
const funcNameArb = fc.constantFrom('f', 'lower', 'count', 'my_func', 'sum', 'left');
const typeArb: fc.Arbitrary<TypeName> = fc.constantFrom<TypeName>(
  { name: 'int4', mods: [], arrayDims: 0 },
  { name: 'int8', mods: [], arrayDims: 0 },
  { name: 'int2', mods: [], arrayDims: 1 },
  { name: 'float8', mods: [], arrayDims: 0 },
  { name: 'numeric', mods: [10, 2], arrayDims: 0 },
  { name: 'numeric', mods: [], arrayDims: 0 },
  { name: 'text', mods: [], arrayDims: 0 },
  { name: 'varchar', mods: [20], arrayDims: 0 },
  { name: 'char', mods: [3], arrayDims: 0 },
  { name: 'char', mods: [], arrayDims: 0 },
  { name: 'bool', mods: [], arrayDims: 0 },
  { name: 'bytea', mods: [], arrayDims: 0 },
  { name: 'date', mods: [], arrayDims: 0 },
  { name: 'timestamp', mods: [3], arrayDims: 0 },
  { name: 'timestamptz', mods: [], arrayDims: 0 },
  { name: 'interval', mods: [], arrayDims: 0 },
  { name: 'uuid', mods: [], arrayDims: 0 },
  { name: 'jsonb', mods: [], arrayDims: 2 },
  { name: 'json', mods: [], arrayDims: 0 },
);

const intConst = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((n): Expr => ({ kind: 'Const', type: 'int', value: n, text: String(n) }));
const bigConst = fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).filter((b) => b < -(2n ** 31n) || b >= 2n ** 31n).map((b): Expr => ({ kind: 'Const', type: 'int', value: Number(b), text: String(b) }));
const numericConst = fc
  .tuple(fc.boolean(), fc.nat(99999), fc.stringMatching(/^[0-9]{1,6}$/))
  .map(([neg, a, b]): Expr => {
    const text = `${neg ? '-' : ''}${a}.${b}`;
    return { kind: 'Const', type: 'numeric', value: Number(text), text };
  });
// NUL cannot appear in a PostgreSQL string.
const stringConst = fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => !s.includes('\0')).map((s): Expr => ({ kind: 'Const', type: 'string', value: s, text: s }));
const otherConst = fc.constantFrom<Expr>(
  { kind: 'Const', type: 'bool', value: true, text: 'true' },
  { kind: 'Const', type: 'bool', value: false, text: 'false' },
  { kind: 'Const', type: 'null', value: null, text: 'NULL' },
  { kind: 'Const', type: 'bitstring', value: 'b0101', text: 'b0101' },
  { kind: 'Const', type: 'bitstring', value: 'xff', text: 'xff' },
);
const columnRef = fc.array(identArb, { minLength: 1, maxLength: 3 }).map((names): Expr => ({ kind: 'ColumnRef', names, star: false }));
const param = fc.integer({ min: 1, max: 9 }).map((index): Expr => ({ kind: 'Param', index }));
const svf = fc
  .tuple(fc.constantFrom('current_date', 'current_time', 'current_timestamp', 'localtime', 'localtimestamp', 'current_user', 'session_user', 'user', 'current_role', 'current_catalog', 'current_schema'), fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }))
  .map(([name, p]): Expr => {
    const timed = name === 'current_time' || name === 'current_timestamp' || name === 'localtime' || name === 'localtimestamp';
    return { kind: 'SqlValueFunction', name, precision: timed ? p : undefined };
  });
const leaf: fc.Arbitrary<Expr> = fc.oneof(intConst, bigConst, numericConst, stringConst, otherConst, columnRef, columnRef, param, svf);

let subqueries: SelectStatement[] = [];

function isNumberConst(e: Expr): boolean {
  return e.kind === 'Const' && (e.type === 'int' || e.type === 'numeric');
}

const exprByDepth: fc.Arbitrary<Expr>[] = [leaf];

function exprOfDepth(depth: number): fc.Arbitrary<Expr> {
  const cached = exprByDepth[depth];
  if (cached !== undefined) return cached;
  const sub = exprOfDepth(depth - 1);
  const subs = (min: number, max: number) => fc.array(sub, { minLength: min, maxLength: max });
  const opt = fc.option(sub, { nil: undefined });
  const sortBy = fc.record({ expr: sub, dir: fc.constantFrom('default', 'asc', 'desc' as const), nulls: fc.constantFrom('default', 'first', 'last' as const) });
  const compound: fc.Arbitrary<Expr>[] = [
    fc.record({ kind: fc.constant('BinaryOp' as const), op: fc.constantFrom('+', '-', '*', '/', '%', '^', '=', '<>', '<', '<=', '>', '>=', '||', '->', '->>', '@>'), left: sub, right: sub }),
    // PostgreSQL folds '-' applied to a number literal into a negative literal.
    fc.record({ kind: fc.constant('UnaryOp' as const), op: fc.constantFrom('-', '+', '~'), operand: sub }).filter((e) => !(e.op === '-' && isNumberConst(e.operand))),
    // PostgreSQL flattens a left operand with the same AND/OR.
    fc
      .record({ kind: fc.constant('BoolExpr' as const), op: fc.constantFrom('and', 'or' as const), args: subs(2, 3) })
      .filter((e) => !(e.args[0]?.kind === 'BoolExpr' && e.args[0].op === e.op)),
    fc.record({ kind: fc.constant('BoolExpr' as const), op: fc.constant('not' as const), args: subs(1, 1) }),
    fc
      .record({
        kind: fc.constant('FuncCall' as const),
        name: fc.array(funcNameArb, { minLength: 1, maxLength: 2 }),
        args: subs(0, 3),
        star: fc.boolean(),
        distinct: fc.boolean(),
        orderBy: fc.array(sortBy, { maxLength: 2 }),
        filter: opt,
        over: fc.option(
          fc.record({
            refName: fc.constant(undefined),
            partitionBy: subs(0, 2),
            orderBy: fc.array(sortBy, { maxLength: 2 }),
            frame: fc.option(fc.constant({ mode: 'rows' as const, start: { kind: 'unbounded preceding' as const }, end: { kind: 'current row' as const }, exclude: 'no others' as const }), { nil: undefined }),
          }),
          { nil: undefined },
        ),
      })
      .map((f): Expr => {
        const star = f.star && f.args.length === 0;
        return { ...f, star, distinct: f.distinct && f.args.length > 0, orderBy: f.args.length > 0 ? f.orderBy : [] };
      }),
    fc.record({ kind: fc.constant('Cast' as const), arg: sub, type: typeArb }),
    fc.record({ kind: fc.constant('Case' as const), operand: opt, whens: fc.array(fc.record({ when: sub, then: sub }), { minLength: 1, maxLength: 3 }), else: opt }),
    fc.record({ kind: fc.constant('NullTest' as const), arg: sub, not: fc.boolean() }),
    fc.record({ kind: fc.constant('BooleanTest' as const), arg: sub, test: fc.constantFrom('true', 'false', 'unknown' as const), not: fc.boolean() }),
    fc.record({ kind: fc.constant('IsDistinctFrom' as const), left: sub, right: sub, not: fc.boolean() }),
    // `x IN ((SELECT …))` reads as the subquery form: PostgreSQL never yields a one-element list holding a subquery.
    fc
      .record({ kind: fc.constant('InList' as const), arg: sub, list: subs(1, 3), not: fc.boolean() })
      .filter((e) => !(e.list.length === 1 && e.list[0]?.kind === 'SubLink' && e.list[0].type === 'scalar')),
    fc.record({ kind: fc.constant('Between' as const), arg: sub, low: sub, high: sub, not: fc.boolean(), symmetric: fc.boolean() }),
    fc.record({ kind: fc.constant('Like' as const), arg: sub, pattern: sub, escape: opt, caseInsensitive: fc.boolean(), not: fc.boolean() }),
    fc
      .record({
        type: fc.constantFrom('exists', 'in', 'any', 'all', 'scalar', 'array' as const),
        test: sub,
        op: fc.constantFrom('=', '<', '<>'),
        q: fc.nat(),
      })
      .map(({ type, test, op, q }): Expr => {
        const query = subqueries[q % subqueries.length] as SelectStatement;
        const tested = type === 'in' || type === 'any' || type === 'all';
        return { kind: 'SubLink', type, test: tested ? test : undefined, op: type === 'any' || type === 'all' ? op : undefined, query };
      }),
    // `x = ANY ((SELECT …))` reads as the subquery form.
    fc
      .record({ kind: fc.constant('ArrayOp' as const), op: fc.constantFrom('=', '<>', '<', '@>'), quantifier: fc.constantFrom('any', 'all' as const), left: sub, right: sub })
      .filter((e) => !(e.right.kind === 'SubLink' && e.right.type === 'scalar')),
    fc.record({ kind: fc.constant('Array' as const), elements: subs(0, 3) }),
    fc.record({ kind: fc.constant('Row' as const), args: subs(0, 3), explicit: fc.boolean() }).map((r): Expr => ({ ...r, explicit: r.explicit || r.args.length < 2 })),
    fc.record({ kind: fc.constant('Coalesce' as const), args: subs(1, 3) }),
    fc.record({ kind: fc.constant('NullIf' as const), left: sub, right: sub }),
    fc.record({ kind: fc.constant('MinMax' as const), op: fc.constantFrom('greatest', 'least' as const), args: subs(1, 3) }),
    fc.record({
      kind: fc.constant('Subscript' as const),
      arg: fc.oneof(columnRef, param, sub),
      subscripts: fc.array(
        fc.oneof(
          sub.map((upper) => ({ slice: false, lower: undefined, upper })),
          fc.record({ slice: fc.constant(true), lower: opt, upper: opt }),
        ),
        { minLength: 1, maxLength: 2 },
      ),
    }),
    fc.record({ kind: fc.constant('Collate' as const), arg: sub, collation: fc.constantFrom(['C'], ['en-US'], ['pg_catalog', 'default']) }),
  ];
  const arb = fc.oneof({ weight: 2, arbitrary: leaf }, ...compound.map((a) => ({ weight: 1, arbitrary: a })));
  exprByDepth[depth] = arb;
  return arb;
}

const exprArb = exprOfDepth(3);

const tableArb = fc.record({ name: identArb, schema: fc.option(identArb, { nil: undefined }) });
const targetsArb = fc.array(fc.record({ expr: exprArb, alias: fc.option(identArb, { nil: undefined }) }), { minLength: 1, maxLength: 3 });

const selectArb: fc.Arbitrary<Statement> = fc
  .record({
    targets: targetsArb,
    table: tableArb,
    where: fc.option(exprArb, { nil: undefined }),
    orderBy: fc.array(fc.record({ expr: exprArb, dir: fc.constantFrom('default', 'asc', 'desc' as const), nulls: fc.constantFrom('default', 'first', 'last' as const) }), { maxLength: 2 }),
    // LIMIT NULL is LIMIT ALL: no limit (undefined), so a NULL literal never appears there.
    limit: fc.option(exprArb.filter((e) => !(e.kind === 'Const' && e.type === 'null')), { nil: undefined }),
    asOf: fc.option(stringConst, { nil: undefined }),
  })
  .map(
    (s): Statement => ({
      kind: 'Select',
      with: undefined,
      body: { kind: 'SelectClause', distinct: false, targets: s.targets, from: [{ kind: 'TableRef', table: s.table, alias: undefined }], where: s.where, groupBy: [], having: undefined, windows: [] },
      orderBy: s.orderBy,
      limit: s.limit,
      offset: undefined,
      locking: [],
      asOfSystemTime: s.asOf,
    }),
  );

const valueOrDefault = fc.oneof({ weight: 4, arbitrary: exprArb }, { weight: 1, arbitrary: fc.constant<Expr>({ kind: 'Default' }) });

const insertArb: fc.Arbitrary<Statement> = fc
  .record({ table: tableArb, width: fc.integer({ min: 1, max: 3 }), rows: fc.integer({ min: 1, max: 3 }), upsert: fc.boolean(), returning: fc.option(targetsArb, { nil: undefined }), seed: fc.array(valueOrDefault, { minLength: 9, maxLength: 9 }) })
  .map(
    (s): Statement => ({
      kind: 'Insert',
      with: undefined,
      table: s.table,
      alias: undefined,
      columns: [],
      source: {
        kind: 'Select',
        with: undefined,
        body: { kind: 'Values', rows: Array.from({ length: s.rows }, (_, r) => s.seed.slice(r * 3, r * 3 + s.width)) },
        orderBy: [],
        limit: undefined,
        offset: undefined,
        locking: [],
        asOfSystemTime: undefined,
      },
      upsert: s.upsert,
      onConflict: undefined,
      returning: s.returning ?? [],
    }),
  );

const updateArb: fc.Arbitrary<Statement> = fc
  .record({ table: tableArb, set: fc.array(fc.record({ column: identArb, value: valueOrDefault }), { minLength: 1, maxLength: 3 }), where: fc.option(exprArb, { nil: undefined }) })
  .map((s): Statement => ({ kind: 'Update', with: undefined, table: s.table, alias: undefined, set: s.set, from: [], where: s.where, returning: [] }));

const deleteArb: fc.Arbitrary<Statement> = fc
  .record({ table: tableArb, where: fc.option(exprArb, { nil: undefined }), returning: fc.option(targetsArb, { nil: undefined }) })
  .map((s): Statement => ({ kind: 'Delete', with: undefined, table: s.table, alias: undefined, using: [], where: s.where, returning: s.returning ?? [] }));

describe('format → parse round trip', () => {
  beforeAll(async () => {
    await initParser();
    subqueries = ['SELECT 1', 'SELECT a FROM t WHERE b > 0', 'SELECT max(x) FROM "Mixed" GROUP BY y', 'VALUES (1), (2)'].map((q) => parseOne(q).ast as SelectStatement);
  });

  it('expressions: parseExpr(formatExpr(e)) equals e', () => {
    fc.assert(
      fc.property(exprArb, (e) => {
        const text = formatExpr(e);
        expect(parseExpr(text), text).toEqual(e);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('statements: parseOne(formatStatement(s)) equals s', () => {
    fc.assert(
      fc.property(fc.oneof(selectArb, insertArb, updateArb, deleteArb), (s) => {
        const text = formatStatement(s);
        expect(parseOne(text).ast, text).toEqual(s);
      }),
      { numRuns: NUM_RUNS },
    );
  });
});

describe('walkers', () => {
  beforeAll(async () => {
    await initParser();
  });

  /** Counts nodes with a plain recursion over exprChildren: the reference for walkExpr. */
  function countNodes(e: Expr): number {
    return 1 + exprChildren(e).reduce((n, c) => n + countNodes(c), 0);
  }

  it('walkExpr visits every node once, pre-order, and can prune', () => {
    const e = parseExpr("CASE WHEN a > $1 THEN f(b, c ORDER BY d) FILTER (WHERE e) OVER (PARTITION BY g ORDER BY h) ELSE COALESCE(i, j[1:k]) END BETWEEN l AND m OR n LIKE 'o' ESCAPE 'p'");
    const seen: string[] = [];
    walkExpr(e, (x) => {
      seen.push(x.kind === 'ColumnRef' ? x.names.join('.') : x.kind);
    });
    expect(seen.filter((s) => /^[a-z]$/.test(s))).toEqual(['a', 'b', 'c', 'd', 'e', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n']);
    expect(seen.length).toBe(countNodes(e));
    let visited = 0;
    walkExpr(e, (x) => {
      visited++;
      return x.kind !== 'Case';
    });
    expect(visited).toBeLessThan(seen.length);
  });

  it('mapExpr keeps identity when nothing changes, and rewrites bottom-up', () => {
    fc.assert(
      fc.property(exprArb, (e) => {
        expect(mapExpr(e, (x) => x)).toBe(e);
        let params = 0;
        walkExpr(e, (x) => {
          if (x.kind === 'Param') params++;
        });
        // Bind every parameter to NULL: no Param survives, the rest is unchanged in shape.
        const bound = mapExpr(e, (x) => (x.kind === 'Param' ? { kind: 'Const', type: 'null', value: null, text: 'NULL' } : x));
        let left = 0;
        walkExpr(bound, (x) => {
          if (x.kind === 'Param') left++;
        });
        expect(left).toBe(0);
        expect(countNodes(bound)).toBe(countNodes(e));
        if (params === 0) expect(bound).toBe(e);
      }),
      { numRuns: 100 },
    );
  });
});
