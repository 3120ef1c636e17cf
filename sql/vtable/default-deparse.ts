/**
 * sql/vtable/default-deparse.ts — a column default as PostgreSQL prints it in
 * information_schema.columns.column_default and pg_get_expr(pg_attrdef.adbin)
 * (ruleutils.c's non-pretty deparse of the stored, type-resolved expression).
 *
 * Cairn stores a default as the SQL text the user wrote (descriptor
 * `defaultExpr`); tools (TypeORM, Drizzle Kit, psql's \d) compare what the
 * catalog prints with what they would write, so the text is re-printed the
 * way PostgreSQL deparses a resolved expression:
 *   - constants carry their type: `'x'::text`, `'v'::character varying`,
 *     `'2020-01-01 00:00:00+00'::timestamp with time zone`; non-negative int4
 *     literals and positive decimal literals stay bare (`0`, `1.5`); negative
 *     ones are quoted (`'-1'::integer`, `'-1.5'::numeric`); booleans print
 *     `true` / `false`;
 *   - operators and casts are parenthesised: `((2 * 3) + 1)`, `(now())::text`;
 *   - a literal at the top takes the column's type (without its modifier),
 *     a literal argument of a function or operator `text` (regclass for
 *     nextval / currval / setval);
 *   - DEFAULT NULL is no default at all (PostgreSQL does not store it).
 * Text this printer does not understand is returned unchanged.
 *
 * Ownership: sql/vtable (issue 7, catalog for tools). Pure; no I/O.
 */
import { parseExpr, quoteString, type Expr } from '../parser/index.js';
import { decodeText, encodeText } from '../types/text-format.js';
import { T, formatType, typeFromName, type SqlType } from '../types/type.js';

/** Families whose literal PostgreSQL stores as the parsed value (so prints normalised). */
const NORMALISED = new Set<string>(['int', 'float', 'numeric', 'date', 'timestamp', 'timestamptz', 'time', 'interval', 'uuid', 'jsonb']);
const REGCLASS_FUNCS = new Set(['nextval', 'currval', 'setval']);

/** PostgreSQL's column_default text for a stored default, or null for none (DEFAULT NULL). */
export function pgDefaultText(exprText: string | undefined, columnType: SqlType): string | null {
  if (exprText === undefined) return null;
  let e: Expr;
  try {
    e = parseExpr(exprText);
  } catch {
    return exprText;
  }
  if (e.kind === 'Const' && e.type === 'null') return null;
  try {
    return deparse(e, { ...columnType, typmod: -1 });
  } catch {
    return exprText;
  }
}

/** Whether a stored default is a real default (DEFAULT NULL is none). */
export function hasPgDefault(exprText: string | undefined): boolean {
  return exprText !== undefined && !/^\s*null\s*$/i.test(exprText);
}

function typedLiteral(text: string, t: SqlType): string {
  if (t.family === 'bool') return encodeText(decodeText(text, t), t) === 't' ? 'true' : 'false';
  const shown = NORMALISED.has(t.family) ? encodeText(decodeText(text, t), t) : text;
  return `${quoteString(shown)}::${formatType(t)}`;
}

/** `e` deparsed; `want` is the type a bare literal resolves to in this position. */
function deparse(e: Expr, want: SqlType): string {
  switch (e.kind) {
    case 'Const':
      switch (e.type) {
        case 'bool': return e.value === true ? 'true' : 'false';
        case 'null': return 'NULL';
        case 'int':
          if (e.text.startsWith('-')) return `${quoteString(e.text)}::${Math.abs(Number(e.text)) <= 2 ** 31 ? 'integer' : Math.abs(Number(e.text)) < 2 ** 63 ? 'bigint' : 'numeric'}`;
          return e.text;
        case 'numeric': {
          const norm = encodeText(decodeText(e.text, T.numeric), T.numeric);
          return /^\d/.test(norm) && norm.includes('.') ? norm : `${quoteString(norm)}::numeric`;
        }
        case 'string': return typedLiteral(e.text, want);
        default: return `${quoteString(e.text)}::${formatType(want)}`;
      }
    case 'Cast': {
      const t = typeFromName(e.type.name, [], e.type.arrayDims);
      if (e.arg.kind === 'Const' && (e.arg.type === 'string' || e.arg.type === 'int' || e.arg.type === 'numeric')) return typedLiteral(String(e.arg.text), t);
      return `(${deparse(e.arg, T.text)})::${formatType(t)}`;
    }
    case 'BinaryOp':
      return `(${deparse(e.left, T.text)} ${e.op} ${deparse(e.right, T.text)})`;
    case 'UnaryOp':
      return `(${e.op} ${deparse(e.operand, T.text)})`;
    case 'FuncCall': {
      if (e.over !== undefined || e.distinct || e.orderBy.length > 0 || e.filter !== undefined) throw new Error('unsupported');
      const name = e.name.join('.');
      const argType = REGCLASS_FUNCS.has(name) ? T.regclass : T.text;
      return `${name}(${e.star ? '*' : e.args.map((a) => deparse(a, argType)).join(', ')})`;
    }
    case 'SqlValueFunction':
      return e.name.toUpperCase() + (e.precision !== undefined ? `(${e.precision})` : '');
    default:
      throw new Error('unsupported');
  }
}
