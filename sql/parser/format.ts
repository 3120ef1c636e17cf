/**
 * Prints AST nodes back as SQL text: DEFAULT and CHECK expressions stored in
 * descriptors, SHOW CREATE TABLE, EXPLAIN, and the parser's own transcripts.
 *
 * Contract (tested by test/sql-parser/round-trip.test.ts):
 *   parse(formatStatement(s)) is structurally equal to s, and
 *   parseExpr(formatExpr(e)) equals e, for every tree the parser produces.
 * Output is canonical, not a copy of the input: keywords upper case,
 * identifiers quoted only when needed (not lower-case-simple, or a keyword
 * PostgreSQL would not accept there), every compound operand of an operator
 * parenthesised (so no precedence table is needed to re-read it), casts as
 * CAST(x AS t).
 *
 * Needs the libpg-query module loaded (initParser) to classify keywords.
 */
import { assertNever } from '../../src/util/assert.js';
import type {
  Alias,
  AlterTableCmd,
  ColumnDef,
  Expr,
  FrameBound,
  OnConflict,
  RangeTarget,
  SelectBody,
  SelectStatement,
  SelectTarget,
  SetClause,
  SortBy,
  Statement,
  TableConstraint,
  ForeignKeyConstraint,
  TableExpr,
  TableName,
  TransactionModes,
  TypeName,
  WindowDef,
  WithClause,
  ZoneTarget,
} from './ast.js';
import { KeywordKind, keywordKind } from './pg-query-module.js';

const SIMPLE_IDENT = /^[a-z_][a-z0-9_$]*$/;

/** Quotes an identifier when PostgreSQL would not read it back verbatim as a column name. */
export function quoteIdent(name: string): string {
  if (SIMPLE_IDENT.test(name)) {
    const k = keywordKind(name);
    if (k === KeywordKind.None || k === KeywordKind.Unreserved) return name;
  }
  return `"${name.replace(/"/g, '""')}"`;
}

/** Function names admit type/function-name keywords (`left`, `right`) unquoted. */
function quoteFuncName(name: string): string {
  if (SIMPLE_IDENT.test(name)) {
    const k = keywordKind(name);
    if (k === KeywordKind.None || k === KeywordKind.Unreserved || k === KeywordKind.TypeFuncName) return name;
  }
  return `"${name.replace(/"/g, '""')}"`;
}

/** A standard-conforming string literal: '…' with quotes doubled. */
export function quoteString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

export function formatTableName(t: TableName): string {
  let s = quoteIdent(t.name);
  if (t.schema !== undefined) s = `${quoteIdent(t.schema)}.${s}`;
  if (t.catalog !== undefined) s = `${quoteIdent(t.catalog)}.${s}`;
  return s;
}

/** `varchar(10)`, `numeric(10,2)`, `int4[]`. Names are PostgreSQL's canonical ones. */
export function formatTypeName(t: TypeName): string {
  let s = t.name.split('.').map(quoteIdent).join('.');
  // Canonical names that are keywords print as PostgreSQL's type syntax.
  // Bare `char` means char(1) to PostgreSQL; unbounded char is spelled bpchar.
  if (t.name === 'char') s = t.mods.length === 0 ? 'bpchar' : 'char';
  else if (t.name === 'varchar') s = 'varchar';
  else if (t.name === 'numeric') s = 'numeric';
  // Bare `bit` means bit(1), like char: only a sized bit prints as the keyword.
  else if (t.name === 'bit' && t.mods.length > 0) s = 'bit';
  else if (t.name === 'json' || t.name === 'timestamp' || t.name === 'timestamptz' || t.name === 'time' || t.name === 'timetz' || t.name === 'interval') s = t.name;
  if (t.mods.length > 0) s += `(${t.mods.join(',')})`;
  for (let i = 0; i < t.arrayDims; i++) s += '[]';
  return s;
}

/** A collation name, always quoted (collation names are case-sensitive: "C", "en-US"). */
function formatCollation(parts: readonly string[]): string {
  return parts.map((c) => `"${c.replace(/"/g, '""')}"`).join('.');
}

// ---------------------------------------------------------------------------
// Expressions

/** True when `e` prints as one unit that never needs parentheses as an operand. */
function isAtomic(e: Expr): boolean {
  switch (e.kind) {
    case 'ColumnRef':
    case 'Param':
    case 'FuncCall':
    case 'Cast':
    case 'Case':
    case 'Coalesce':
    case 'NullIf':
    case 'MinMax':
    case 'Array':
    case 'Row':
    case 'SqlValueFunction':
    case 'Default':
    case 'Subscript':
      return true;
    case 'Const':
      return !((e.type === 'int' || e.type === 'numeric') && e.text.startsWith('-'));
    case 'SubLink':
      return e.type === 'exists' || e.type === 'scalar' || e.type === 'array';
    default:
      return false;
  }
}

function operand(e: Expr): string {
  const s = formatExpr(e);
  return isAtomic(e) ? s : `(${s})`;
}

function list(es: readonly Expr[]): string {
  return es.map(formatExpr).join(', ');
}

function formatConst(e: Expr & { kind: 'Const' }): string {
  switch (e.type) {
    case 'int':
    case 'numeric':
      return e.text;
    case 'string':
      return quoteString(e.text);
    case 'bitstring':
      return `${e.text.slice(0, 1).toUpperCase()}'${e.text.slice(1)}'`;
    case 'bool':
      return e.value === true ? 'TRUE' : 'FALSE';
    case 'null':
      return 'NULL';
    default:
      return assertNever(e.type, 'format: unknown constant type');
  }
}

export function formatSortBy(s: SortBy): string {
  let out = formatExpr(s.expr);
  if (s.dir !== 'default') out += ` ${s.dir.toUpperCase()}`;
  if (s.nulls !== 'default') out += ` NULLS ${s.nulls.toUpperCase()}`;
  return out;
}

function formatBound(b: FrameBound): string {
  switch (b.kind) {
    case 'preceding':
    case 'following':
      return `${operand(b.offset)} ${b.kind.toUpperCase()}`;
    default:
      return b.kind.toUpperCase();
  }
}

export function formatWindowDef(w: WindowDef): string {
  const parts: string[] = [];
  if (w.refName !== undefined) parts.push(quoteIdent(w.refName));
  if (w.partitionBy.length > 0) parts.push(`PARTITION BY ${list(w.partitionBy)}`);
  if (w.orderBy.length > 0) parts.push(`ORDER BY ${w.orderBy.map(formatSortBy).join(', ')}`);
  const f = w.frame;
  if (f !== undefined) {
    let s = `${f.mode.toUpperCase()} `;
    s += f.end === undefined ? formatBound(f.start) : `BETWEEN ${formatBound(f.start)} AND ${formatBound(f.end)}`;
    if (f.exclude !== 'no others') s += ` EXCLUDE ${f.exclude.toUpperCase()}`;
    parts.push(s);
  }
  return `(${parts.join(' ')})`;
}

/** SQL text of an expression (see the contract in the header). */
export function formatExpr(e: Expr): string {
  switch (e.kind) {
    case 'ColumnRef': {
      const names = e.names.map(quoteIdent);
      if (e.star) names.push('*');
      return names.join('.');
    }
    case 'Const':
      return formatConst(e);
    case 'Param':
      return `$${e.index}`;
    case 'BinaryOp':
      return `${operand(e.left)} ${e.op} ${operand(e.right)}`;
    case 'UnaryOp':
      return `${e.op} ${operand(e.operand)}`;
    case 'BoolExpr':
      if (e.op === 'not') return `NOT ${operand(e.args[0] as Expr)}`;
      return e.args.map(operand).join(e.op === 'and' ? ' AND ' : ' OR ');
    case 'FuncCall': {
      // Only the last part of a qualified name may be a type/function-name keyword.
      let s = `${e.name.map((n, i) => (i === e.name.length - 1 ? quoteFuncName(n) : quoteIdent(n))).join('.')}(`;
      if (e.star) s += '*';
      else {
        if (e.distinct) s += 'DISTINCT ';
        s += list(e.args);
      }
      if (e.orderBy.length > 0) s += ` ORDER BY ${e.orderBy.map(formatSortBy).join(', ')}`;
      s += ')';
      if (e.filter !== undefined) s += ` FILTER (WHERE ${formatExpr(e.filter)})`;
      if (e.over !== undefined) {
        const w = e.over;
        const bare = w.refName !== undefined && w.partitionBy.length === 0 && w.orderBy.length === 0 && w.frame === undefined;
        s += bare ? ` OVER ${quoteIdent(w.refName as string)}` : ` OVER ${formatWindowDef(w)}`;
      }
      return s;
    }
    case 'Cast':
      return `CAST(${formatExpr(e.arg)} AS ${formatTypeName(e.type)})`;
    case 'Case': {
      let s = 'CASE';
      if (e.operand !== undefined) s += ` ${formatExpr(e.operand)}`;
      for (const w of e.whens) s += ` WHEN ${formatExpr(w.when)} THEN ${formatExpr(w.then)}`;
      if (e.else !== undefined) s += ` ELSE ${formatExpr(e.else)}`;
      return `${s} END`;
    }
    case 'NullTest':
      return `${operand(e.arg)} IS ${e.not ? 'NOT ' : ''}NULL`;
    case 'BooleanTest':
      return `${operand(e.arg)} IS ${e.not ? 'NOT ' : ''}${e.test.toUpperCase()}`;
    case 'IsDistinctFrom':
      return `${operand(e.left)} IS ${e.not ? 'NOT ' : ''}DISTINCT FROM ${operand(e.right)}`;
    case 'InList':
      return `${operand(e.arg)} ${e.not ? 'NOT ' : ''}IN (${list(e.list)})`;
    case 'Between':
      return `${operand(e.arg)} ${e.not ? 'NOT ' : ''}BETWEEN ${e.symmetric ? 'SYMMETRIC ' : ''}${operand(e.low)} AND ${operand(e.high)}`;
    case 'Like': {
      let s = `${operand(e.arg)} ${e.not ? 'NOT ' : ''}${e.caseInsensitive ? 'ILIKE' : 'LIKE'} ${operand(e.pattern)}`;
      if (e.escape !== undefined) s += ` ESCAPE ${operand(e.escape)}`;
      return s;
    }
    case 'SubLink': {
      const q = formatSelect(e.query);
      const type = e.type;
      switch (type) {
        case 'exists':
          return `EXISTS (${q})`;
        case 'scalar':
          return `(${q})`;
        case 'array':
          return `ARRAY(${q})`;
        case 'in':
          return `${operand(e.test as Expr)} IN (${q})`;
        case 'any':
        case 'all':
          return `${operand(e.test as Expr)} ${e.op ?? '='} ${type.toUpperCase()} (${q})`;
        default:
          return assertNever(type, 'format: unknown sublink');
      }
    }
    case 'ArrayOp':
      return `${operand(e.left)} ${e.op} ${e.quantifier.toUpperCase()} (${formatExpr(e.right)})`;
    case 'Array':
      return `ARRAY[${list(e.elements)}]`;
    case 'Row':
      return e.explicit || e.args.length < 2 ? `ROW(${list(e.args)})` : `(${list(e.args)})`;
    case 'Coalesce':
      return `COALESCE(${list(e.args)})`;
    case 'NullIf':
      return `NULLIF(${formatExpr(e.left)}, ${formatExpr(e.right)})`;
    case 'MinMax':
      return `${e.op.toUpperCase()}(${list(e.args)})`;
    case 'Subscript': {
      const base = e.arg.kind === 'ColumnRef' || e.arg.kind === 'Param' ? formatExpr(e.arg) : `(${formatExpr(e.arg)})`;
      return (
        base +
        e.subscripts
          .map((s) => (s.slice ? `[${s.lower === undefined ? '' : formatExpr(s.lower)}:${s.upper === undefined ? '' : formatExpr(s.upper)}]` : `[${formatExpr(s.upper as Expr)}]`))
          .join('')
      );
    }
    case 'Collate':
      return `${operand(e.arg)} COLLATE ${formatCollation(e.collation)}`;
    case 'SqlValueFunction':
      return e.name.toUpperCase() + (e.precision === undefined ? '' : `(${e.precision})`);
    case 'Default':
      return 'DEFAULT';
    default:
      return assertNever(e, 'format: unknown expression');
  }
}

// ---------------------------------------------------------------------------
// Queries

function formatAlias(a: Alias | undefined): string {
  if (a === undefined) return '';
  return ` AS ${quoteIdent(a.name)}${a.columns.length > 0 ? ` (${a.columns.map(quoteIdent).join(', ')})` : ''}`;
}

function formatTargets(ts: readonly SelectTarget[]): string {
  return ts.map((t) => formatExpr(t.expr) + (t.alias === undefined ? '' : ` AS ${quoteIdent(t.alias)}`)).join(', ');
}

export function formatTableExpr(t: TableExpr): string {
  switch (t.kind) {
    case 'TableRef':
      return formatTableName(t.table) + formatAlias(t.alias);
    case 'SubqueryRef':
      return `${t.lateral ? 'LATERAL ' : ''}(${formatSelect(t.query)})${formatAlias(t.alias)}`;
    case 'Join': {
      // A join as the right operand needs parentheses, unless its alias already gave it some.
      const right = t.right.kind === 'Join' && t.right.alias === undefined ? `(${formatTableExpr(t.right)})` : formatTableExpr(t.right);
      let s = formatTableExpr(t.left);
      if (t.type === 'cross') s += ` CROSS JOIN ${right}`;
      else s += ` ${t.natural ? 'NATURAL ' : ''}${t.type.toUpperCase()} JOIN ${right}`;
      if (t.on !== undefined) s += ` ON ${formatExpr(t.on)}`;
      if (t.using.length > 0) s += ` USING (${t.using.map(quoteIdent).join(', ')})`;
      return t.alias === undefined ? s : `(${s})${formatAlias(t.alias)}`;
    }
    default:
      return assertNever(t, 'format: unknown FROM item');
  }
}

function formatWith(w: WithClause | undefined): string {
  if (w === undefined) return '';
  const ctes = w.ctes.map((c) => {
    const cols = c.columns.length > 0 ? `(${c.columns.map(quoteIdent).join(', ')})` : '';
    const mat = c.materialized === 'always' ? 'MATERIALIZED ' : c.materialized === 'never' ? 'NOT MATERIALIZED ' : '';
    return `${quoteIdent(c.name)}${cols} AS ${mat}(${formatStatement(c.query)})`;
  });
  return `WITH ${w.recursive ? 'RECURSIVE ' : ''}${ctes.join(', ')} `;
}

function formatBody(b: SelectBody, asOperand: boolean, asOf?: Expr): string {
  switch (b.kind) {
    case 'SelectClause': {
      let s = 'SELECT ';
      if (b.distinct === true) s += 'DISTINCT ';
      else if (b.distinct !== false) s += `DISTINCT ON (${list(b.distinct)}) `;
      s += formatTargets(b.targets);
      if (b.from.length > 0) s += ` FROM ${b.from.map(formatTableExpr).join(', ')}`;
      // CockroachDB's place for AS OF SYSTEM TIME: right after the FROM list.
      if (asOf !== undefined) s += ` AS OF SYSTEM TIME ${formatExpr(asOf)}`;
      if (b.where !== undefined) s += ` WHERE ${formatExpr(b.where)}`;
      if (b.groupBy.length > 0) s += ` GROUP BY ${list(b.groupBy)}`;
      if (b.having !== undefined) s += ` HAVING ${formatExpr(b.having)}`;
      if (b.windows.length > 0) s += ` WINDOW ${b.windows.map((w) => `${quoteIdent(w.name)} AS ${formatWindowDef(w.def)}`).join(', ')}`;
      return s;
    }
    case 'Values':
      return `VALUES ${b.rows.map((r) => `(${list(r)})`).join(', ')}`;
    case 'SetOp': {
      const s = `${formatBody(b.left, true)} ${b.op.toUpperCase()}${b.all ? ' ALL' : ''} ${formatBody(b.right, true)}`;
      return asOperand ? `(${s})` : s;
    }
    case 'Select':
      return `(${formatSelect(b)})`;
    default:
      return assertNever(b, 'format: unknown select body');
  }
}

export function formatSelect(s: SelectStatement): string {
  const asOfInBody = s.body.kind === 'SelectClause' ? s.asOfSystemTime : undefined;
  let out = formatWith(s.with) + formatBody(s.body, false, asOfInBody);
  if (s.asOfSystemTime !== undefined && asOfInBody === undefined) out += ` AS OF SYSTEM TIME ${formatExpr(s.asOfSystemTime)}`;
  if (s.orderBy.length > 0) out += ` ORDER BY ${s.orderBy.map(formatSortBy).join(', ')}`;
  if (s.limit !== undefined) out += ` LIMIT ${formatExpr(s.limit)}`;
  if (s.offset !== undefined) out += ` OFFSET ${formatExpr(s.offset)}`;
  for (const l of s.locking) {
    out += ` FOR ${l.strength.toUpperCase()}`;
    if (l.of.length > 0) out += ` OF ${l.of.map(formatTableName).join(', ')}`;
    if (l.wait !== 'block') out += ` ${l.wait.toUpperCase()}`;
  }
  return out;
}

function formatSet(set: readonly SetClause[]): string {
  return set.map((c) => `${quoteIdent(c.column)} = ${formatExpr(c.value)}`).join(', ');
}

function formatReturning(r: readonly SelectTarget[]): string {
  return r.length === 0 ? '' : ` RETURNING ${formatTargets(r)}`;
}

function formatOnConflict(oc: OnConflict): string {
  let s = ' ON CONFLICT';
  if (oc.constraint !== undefined) s += ` ON CONSTRAINT ${quoteIdent(oc.constraint)}`;
  else if (oc.columns.length > 0) s += ` (${oc.columns.map(quoteIdent).join(', ')})`;
  if (oc.where !== undefined) s += ` WHERE ${formatExpr(oc.where)}`;
  if (oc.action.kind === 'nothing') return `${s} DO NOTHING`;
  s += ` DO UPDATE SET ${formatSet(oc.action.set)}`;
  if (oc.action.where !== undefined) s += ` WHERE ${formatExpr(oc.action.where)}`;
  return s;
}

// ---------------------------------------------------------------------------
// Statements

/** `a int4 NOT NULL DEFAULT 0 PRIMARY KEY` — one column of CREATE TABLE / SHOW CREATE TABLE. */
export function formatColumnDef(c: ColumnDef): string {
  let s = `${quoteIdent(c.name)} ${c.serial ?? formatTypeName(c.type)}`;
  if (c.collation !== undefined) s += ` COLLATE ${formatCollation(c.collation)}`;
  if (c.notNull) s += ' NOT NULL';
  if (c.nullable) s += ' NULL';
  if (c.default !== undefined) s += ` DEFAULT ${formatExpr(c.default)}`;
  if (c.primaryKey) s += ' PRIMARY KEY';
  if (c.unique) s += ' UNIQUE';
  for (const k of c.checks) s += `${k.name === undefined ? '' : ` CONSTRAINT ${quoteIdent(k.name)}`} CHECK (${formatExpr(k.expr)})`;
  for (const k of c.references ?? []) s += `${k.name === undefined ? '' : ` CONSTRAINT ${quoteIdent(k.name)}`} ${formatReferences(k)}`;
  return s;
}

/** `REFERENCES t (cols) [MATCH FULL] [ON DELETE …] [ON UPDATE …] [NOT VALID]` of a foreign key. */
function formatReferences(k: ForeignKeyConstraint): string {
  let s = `REFERENCES ${formatTableName(k.table)}`;
  if (k.refColumns.length > 0) s += ` (${k.refColumns.map(quoteIdent).join(', ')})`;
  if (k.match === 'full') s += ' MATCH FULL';
  if (k.onDelete !== 'no action') s += ` ON DELETE ${k.onDelete.toUpperCase()}`;
  if (k.onUpdate !== 'no action') s += ` ON UPDATE ${k.onUpdate.toUpperCase()}`;
  if (k.notValid) s += ' NOT VALID';
  return s;
}

function formatModes(m: TransactionModes): string {
  const parts: string[] = [];
  if (m.isolation !== undefined) parts.push(`ISOLATION LEVEL ${m.isolation.toUpperCase()}`);
  if (m.readOnly !== undefined) parts.push(m.readOnly ? 'READ ONLY' : 'READ WRITE');
  if (m.deferrable !== undefined) parts.push(m.deferrable ? 'DEFERRABLE' : 'NOT DEFERRABLE');
  if (m.asOfSystemTime !== undefined) parts.push(`AS OF SYSTEM TIME ${formatExpr(m.asOfSystemTime)}`);
  if (m.priority !== undefined) parts.push(`PRIORITY ${m.priority.toUpperCase()}`);
  return parts.join(', ');
}

function formatRangeTarget(t: RangeTarget): string {
  return t.kind === 'table' ? `TABLE ${formatTableName(t.table)}` : `INDEX ${formatTableName(t.table)}@${quoteIdent(t.index)}`;
}

function formatZoneTarget(t: ZoneTarget): string {
  switch (t.kind) {
    case 'table':
    case 'index':
      return formatRangeTarget(t);
    case 'database':
      return `DATABASE ${quoteIdent(t.database)}`;
    case 'range':
      // Range names are CockroachDB's fixed words (default, meta, liveness, system, timeseries).
      return `RANGE ${SIMPLE_IDENT.test(t.range) ? t.range : quoteIdent(t.range)}`;
    default:
      return assertNever(t, 'format: unknown zone target');
  }
}

function formatRoleOptions(o: { password: string | null | undefined; login: boolean | undefined; options: readonly { name: string; value: string | number | boolean | undefined }[] }): string {
  const parts: string[] = [];
  if (o.login !== undefined) parts.push(o.login ? 'LOGIN' : 'NOLOGIN');
  if (o.password !== undefined) parts.push(o.password === null ? 'PASSWORD NULL' : `PASSWORD ${quoteString(o.password)}`);
  for (const x of o.options) {
    if (x.name === 'connectionlimit') parts.push(`CONNECTION LIMIT ${String(x.value)}`);
    else if (x.name === 'validUntil') parts.push(`VALID UNTIL ${quoteString(String(x.value))}`);
    else {
      const word = x.name === 'isreplication' ? 'REPLICATION' : x.name.toUpperCase();
      parts.push(x.value === false ? `NO${word}` : word);
    }
  }
  return parts.length === 0 ? '' : ` WITH ${parts.join(' ')}`;
}

function formatAlterTableCmd(c: AlterTableCmd): string {
  switch (c.kind) {
    case 'AddColumn':
      return `ADD COLUMN ${c.ifNotExists ? 'IF NOT EXISTS ' : ''}${formatColumnDef(c.column)}`;
    case 'DropColumn':
      return `DROP COLUMN ${c.ifExists ? 'IF EXISTS ' : ''}${quoteIdent(c.column)}${c.cascade ? ' CASCADE' : ''}`;
    case 'SetDefault':
      return `ALTER COLUMN ${quoteIdent(c.column)} ${c.default === undefined ? 'DROP DEFAULT' : `SET DEFAULT ${formatExpr(c.default)}`}`;
    case 'SetNotNull':
      return `ALTER COLUMN ${quoteIdent(c.column)} ${c.notNull ? 'SET' : 'DROP'} NOT NULL`;
    case 'AlterColumnType':
      return `ALTER COLUMN ${quoteIdent(c.column)} TYPE ${formatTypeName(c.type)}${c.using === undefined ? '' : ` USING ${formatExpr(c.using)}`}`;
    case 'AddConstraint':
      return `ADD ${formatTableConstraint(c.constraint)}`;
    case 'DropConstraint':
      return `DROP CONSTRAINT ${c.ifExists ? 'IF EXISTS ' : ''}${quoteIdent(c.name)}${c.cascade ? ' CASCADE' : ''}`;
    case 'ValidateConstraint':
      return `VALIDATE CONSTRAINT ${quoteIdent(c.name)}`;
    default:
      return assertNever(c, 'format: unknown ALTER TABLE command');
  }
}

/** `CONSTRAINT name PRIMARY KEY (a, b)`, `UNIQUE (…)`, `CHECK (…)`. */
export function formatTableConstraint(k: TableConstraint): string {
  const name = k.name === undefined ? '' : `CONSTRAINT ${quoteIdent(k.name)} `;
  if (k.kind === 'Check') return `${name}CHECK (${formatExpr(k.expr)})`;
  if (k.kind === 'ForeignKey') return `${name}FOREIGN KEY (${k.columns.map(quoteIdent).join(', ')}) ${formatReferences(k)}`;
  return `${name}${k.kind === 'PrimaryKey' ? 'PRIMARY KEY' : 'UNIQUE'} (${k.columns.map(quoteIdent).join(', ')})`;
}

/** An EXPLAIN option value: a bare word or number when PostgreSQL reads it back as the same text, else a string. */
function formatOptionValue(v: string): string {
  if (v === 'true' || v === 'false' || v === 'on' || v === 'off' || /^\d+(\.\d+)?$/.test(v)) return v;
  return quoteIdent(v) === v ? v : quoteString(v);
}

/** SQL text of a statement (see the contract in the header). */
export function formatStatement(s: Statement): string {
  switch (s.kind) {
    case 'Select':
      return formatSelect(s);
    case 'Insert': {
      let out = `${formatWith(s.with)}${s.upsert ? 'UPSERT' : 'INSERT'} INTO ${formatTableName(s.table)}`;
      if (s.alias !== undefined) out += ` AS ${quoteIdent(s.alias)}`;
      if (s.columns.length > 0) out += ` (${s.columns.map(quoteIdent).join(', ')})`;
      out += s.source === undefined ? ' DEFAULT VALUES' : ` ${formatSelect(s.source)}`;
      if (s.onConflict !== undefined) out += formatOnConflict(s.onConflict);
      return out + formatReturning(s.returning);
    }
    case 'Update': {
      let out = `${formatWith(s.with)}UPDATE ${formatTableName(s.table)}`;
      if (s.alias !== undefined) out += ` AS ${quoteIdent(s.alias)}`;
      out += ` SET ${formatSet(s.set)}`;
      if (s.from.length > 0) out += ` FROM ${s.from.map(formatTableExpr).join(', ')}`;
      if (s.where !== undefined) out += ` WHERE ${formatExpr(s.where)}`;
      return out + formatReturning(s.returning);
    }
    case 'Delete': {
      let out = `${formatWith(s.with)}DELETE FROM ${formatTableName(s.table)}`;
      if (s.alias !== undefined) out += ` AS ${quoteIdent(s.alias)}`;
      if (s.using.length > 0) out += ` USING ${s.using.map(formatTableExpr).join(', ')}`;
      if (s.where !== undefined) out += ` WHERE ${formatExpr(s.where)}`;
      return out + formatReturning(s.returning);
    }
    case 'CreateTable': {
      const elems = [...s.columns.map(formatColumnDef), ...s.constraints.map(formatTableConstraint)];
      return `CREATE TABLE ${s.ifNotExists ? 'IF NOT EXISTS ' : ''}${formatTableName(s.table)} (${elems.join(', ')})`;
    }
    case 'DropTable':
      return `DROP TABLE ${s.ifExists ? 'IF EXISTS ' : ''}${s.tables.map(formatTableName).join(', ')}${s.cascade ? ' CASCADE' : ''}`;
    case 'CreateIndex': {
      let out = `CREATE ${s.unique ? 'UNIQUE ' : ''}INDEX ${s.ifNotExists ? 'IF NOT EXISTS ' : ''}`;
      if (s.name !== undefined) out += `${quoteIdent(s.name)} `;
      const cols = s.columns.map((c) => {
        let x = c.column !== undefined ? quoteIdent(c.column) : `(${formatExpr(c.expr as Expr)})`;
        if (c.dir !== 'default') x += ` ${c.dir.toUpperCase()}`;
        if (c.nulls !== 'default') x += ` NULLS ${c.nulls.toUpperCase()}`;
        return x;
      });
      out += `ON ${formatTableName(s.table)} (${cols.join(', ')})`;
      if (s.storing.length > 0) out += ` INCLUDE (${s.storing.map(quoteIdent).join(', ')})`;
      if (s.where !== undefined) out += ` WHERE ${formatExpr(s.where)}`;
      return out;
    }
    case 'DropIndex': {
      const names = s.indexes.map((i) => (i.table === undefined ? formatTableName(i.index) : `${formatTableName(i.table)}@${formatTableName(i.index)}`));
      return `DROP INDEX ${s.ifExists ? 'IF EXISTS ' : ''}${names.join(', ')}${s.cascade ? ' CASCADE' : ''}`;
    }
    case 'AlterTable':
      return `ALTER TABLE ${s.ifExists ? 'IF EXISTS ' : ''}${formatTableName(s.table)} ${s.commands.map(formatAlterTableCmd).join(', ')}`;
    case 'Rename': {
      const obj = s.target === 'database' ? quoteIdent(s.object.name) : formatTableName(s.object);
      const what = s.target === 'column' || s.target === 'constraint' ? 'TABLE' : s.target.toUpperCase();
      const head = `ALTER ${what} ${s.ifExists ? 'IF EXISTS ' : ''}${obj} RENAME`;
      if (s.target === 'column' || s.target === 'constraint') return `${head} ${s.target.toUpperCase()} ${quoteIdent(s.from ?? '')} TO ${quoteIdent(s.to)}`;
      return `${head} TO ${quoteIdent(s.to)}`;
    }
    case 'CreateView':
      return `CREATE ${s.orReplace ? 'OR REPLACE ' : ''}VIEW ${formatTableName(s.view)}${s.columns.length > 0 ? ` (${s.columns.map(quoteIdent).join(', ')})` : ''} AS ${formatSelect(s.query)}`;
    case 'DropView':
      return `DROP VIEW ${s.ifExists ? 'IF EXISTS ' : ''}${s.views.map(formatTableName).join(', ')}${s.cascade ? ' CASCADE' : ''}`;
    case 'CreateSequence': {
      const opts = s.options.map((o) => {
        switch (o.name) {
          case 'increment':
            return `INCREMENT BY ${String(o.value)}`;
          case 'start':
            return `START WITH ${String(o.value)}`;
          case 'cycle':
            return o.value === true ? 'CYCLE' : 'NO CYCLE';
          default:
            return o.value === undefined ? `NO ${o.name.toUpperCase()}` : `${o.name.toUpperCase()} ${String(o.value)}`;
        }
      });
      return `CREATE SEQUENCE ${s.ifNotExists ? 'IF NOT EXISTS ' : ''}${formatTableName(s.sequence)}${opts.map((o) => ` ${o}`).join('')}`;
    }
    case 'DropSequence':
      return `DROP SEQUENCE ${s.ifExists ? 'IF EXISTS ' : ''}${s.sequences.map(formatTableName).join(', ')}${s.cascade ? ' CASCADE' : ''}`;
    case 'Truncate':
      return `TRUNCATE ${s.tables.map(formatTableName).join(', ')}${s.restartIdentity ? ' RESTART IDENTITY' : ''}${s.cascade ? ' CASCADE' : ''}`;
    case 'Copy': {
      const source = s.query !== undefined ? `(${formatStatement(s.query)})` : `${formatTableName(s.table as TableName)}${s.columns.length > 0 ? ` (${s.columns.map(quoteIdent).join(', ')})` : ''}`;
      const opts = s.options.map((o) => (o.value === undefined ? o.name.toUpperCase() : `${o.name.toUpperCase()} ${formatOptionValue(o.value)}`));
      return `COPY ${source} ${s.direction === 'from' ? 'FROM STDIN' : 'TO STDOUT'}${opts.length > 0 ? ` WITH (${opts.join(', ')})` : ''}`;
    }
    case 'CreateDatabase':
      return `CREATE DATABASE ${s.ifNotExists ? 'IF NOT EXISTS ' : ''}${quoteIdent(s.name)}`;
    case 'DropDatabase':
      return `DROP DATABASE ${s.ifExists ? 'IF EXISTS ' : ''}${quoteIdent(s.name)}`;
    case 'Begin': {
      const m = formatModes(s.modes);
      return m === '' ? 'BEGIN' : `BEGIN TRANSACTION ${m}`;
    }
    case 'Commit':
      return 'COMMIT';
    case 'Rollback':
      return 'ROLLBACK';
    case 'SetTransaction':
      return `SET TRANSACTION ${formatModes(s.modes)}`;
    case 'Savepoint':
      return `SAVEPOINT ${quoteIdent(s.name)}`;
    case 'ReleaseSavepoint':
      return `RELEASE SAVEPOINT ${quoteIdent(s.name)}`;
    case 'RollbackToSavepoint':
      return `ROLLBACK TO SAVEPOINT ${quoteIdent(s.name)}`;
    case 'SetVar':
      return `SET ${s.local ? 'LOCAL ' : ''}${quoteIdent(s.name)} = ${s.isDefault ? 'DEFAULT' : list(s.values)}`;
    case 'ResetVar':
      return s.name === 'all' ? 'RESET ALL' : `RESET ${quoteIdent(s.name)}`;
    case 'ShowVar':
      return s.name === 'all' ? 'SHOW ALL' : `SHOW ${quoteIdent(s.name)}`;
    case 'Explain': {
      const opts = s.options.map((o) => (o.value === undefined ? o.name.toUpperCase() : `${o.name.toUpperCase()} ${formatOptionValue(o.value)}`));
      return `EXPLAIN ${opts.length > 0 ? `(${opts.join(', ')}) ` : ''}${formatStatement(s.statement)}`;
    }
    case 'CreateRole':
      return `CREATE ${s.isUser ? 'USER' : 'ROLE'} ${s.ifNotExists ? 'IF NOT EXISTS ' : ''}${quoteIdent(s.name)}${formatRoleOptions(s.options)}`;
    case 'AlterRole':
      return `ALTER ROLE ${quoteIdent(s.name)}${formatRoleOptions(s.options)}`;
    case 'DropRole':
      return `DROP ROLE ${s.ifExists ? 'IF EXISTS ' : ''}${s.names.map(quoteIdent).join(', ')}`;
    case 'ShowTables':
      return s.database === undefined ? 'SHOW TABLES' : `SHOW TABLES FROM ${quoteIdent(s.database)}${s.schema === undefined ? '' : `.${quoteIdent(s.schema)}`}`;
    case 'ShowDatabases':
      return 'SHOW DATABASES';
    case 'ShowColumns':
      return `SHOW COLUMNS FROM ${formatTableName(s.table)}`;
    case 'ShowCreateTable':
      return `SHOW CREATE TABLE ${formatTableName(s.table)}`;
    case 'ShowRanges':
      return `SHOW RANGES FROM ${formatRangeTarget(s.target)}`;
    case 'SplitAt':
      return `ALTER ${formatRangeTarget(s.target)} SPLIT AT ${formatSelect(s.rows)}${s.expiration === undefined ? '' : ` WITH EXPIRATION ${formatExpr(s.expiration)}`}`;
    case 'Scatter':
      return `ALTER ${formatRangeTarget(s.target)} SCATTER`;
    case 'ConfigureZone': {
      const head = `ALTER ${formatZoneTarget(s.target)} CONFIGURE ZONE`;
      if (s.discard) return `${head} DISCARD`;
      return `${head} USING ${s.settings.map((x) => `${x.name.split('.').map(quoteIdent).join('.')} = ${formatExpr(x.value)}`).join(', ')}`;
    }
    case 'ShowClusterSetting':
      return s.name === 'all' ? 'SHOW ALL CLUSTER SETTINGS' : `SHOW CLUSTER SETTING ${s.name.split('.').map(quoteIdent).join('.')}`;
    case 'SetClusterSetting':
      return `SET CLUSTER SETTING ${s.name.split('.').map(quoteIdent).join('.')} = ${s.value === undefined ? 'DEFAULT' : formatExpr(s.value)}`;
    default:
      return assertNever(s, 'format: unknown statement');
  }
}
