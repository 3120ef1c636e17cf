/**
 * sql/sem/catalog-builtins.ts — the system-catalog functions drivers, ORMs and
 * psql call (issue 7 part 3, tools): format_type, pg_table_is_visible,
 * pg_type_is_visible, pg_get_userbyid, obj_description, col_description,
 * pg_get_expr, pg_get_indexdef (whole index or one column), pg_backend_pid,
 * pg_encoding_to_char, current_schemas, has_*_privilege, set_config,
 * array_to_string, quote_ident, pg_relation_is_publishable,
 * pg_get_statisticsobjdef_columns, pg_get_triggerdef.
 *
 * lookupBuiltin (builtins.ts) asks here first for names it does not know, and
 * strips a `pg_catalog.` qualifier. Results follow PostgreSQL 15 for the
 * objects Cairn has: every relation is in `public` (visible), every role may
 * do everything (root is the only superuser; privileges are not modelled),
 * comments do not exist (NULL), and pg_attrdef.adbin holds the DEFAULT text
 * so pg_get_expr returns it as-is.
 *
 * Ownership: issue 7 part 3. No I/O; no catalog access at evaluation time.
 */
import type { Expr } from '../parser/ast.js';
import { SqlError } from '../parser/sql-error.js';
import { T, arrayOf, formatType, typeFromOid, type SqlType } from '../types/type.js';
import { datumToText, type Datum } from './datum.js';
import type { EvalFn, ExprCompiler, Typed } from './expr.js';

/**
 * pg_get_indexdef / pg_get_constraintdef texts by OID. Evaluation has no
 * catalog access, so sql/vtable publishes the texts of the current
 * database's objects here whenever a statement reads a virtual table (every
 * tool query calling these functions reads pg_index / pg_constraint /
 * pg_class in the same statement). OIDs are never reused (they derive from
 * descriptor ids), so an entry is never wrong for another object.
 */
export const catalogTexts = { indexDefs: new Map<number, string>(), constraintDefs: new Map<number, string>(), indexColumns: new Map<number, readonly string[]>() };

/** The pid pg_backend_pid() reports (Cairn sessions have no OS process). */
export const BACKEND_PID = 4242;

function compileArgs(c: ExprCompiler, exprs: readonly Expr[], hints: readonly (SqlType | undefined)[]): Typed[] {
  return exprs.map((e, i) => c.resolveUnknown(c.compile(e, hints[i])));
}

function constant(type: SqlType, value: Datum): Typed {
  return { type, fn: () => value };
}

/** format_type(oid, typmod): the type's SQL name with its modifier; NULL oid → NULL; unknown oid → ???. */
export function formatTypeOid(oid: number, typmod: number | null): string {
  const t = typeFromOid(oid);
  if (t === undefined) return '???';
  return formatType({ ...t, typmod: typmod ?? -1 });
}

function strict1(type: SqlType, a: EvalFn, f: (v: Exclude<Datum, null>) => Datum): Typed {
  return { type, fn: (row, env) => {
    const v = a(row, env);
    return v === null ? null : f(v);
  } };
}

/** A catalog builtin named `name` (without `pg_catalog.`), or undefined when it is not one. */
export function lookupCatalogBuiltin(c: ExprCompiler, name: string, exprs: readonly Expr[]): Typed | undefined {
  switch (name) {
    case 'format_type': {
      if (exprs.length !== 2) return undefined;
      const [o, m] = compileArgs(c, exprs, [T.oid, T.int4]) as [Typed, Typed];
      return { type: T.text, fn: (row, env) => {
        const oid = o.fn(row, env);
        if (oid === null) return null;
        const mod = m.fn(row, env);
        return formatTypeOid(Number(oid), mod === null ? null : Number(mod));
      } };
    }
    case 'pg_table_is_visible':
    case 'pg_type_is_visible':
    case 'pg_function_is_visible': {
      if (exprs.length !== 1) return undefined;
      const [o] = compileArgs(c, exprs, [T.oid]) as [Typed];
      return strict1(T.bool, o.fn, () => true);
    }
    case 'pg_get_userbyid': {
      if (exprs.length !== 1) return undefined;
      const [o] = compileArgs(c, exprs, [T.oid]) as [Typed];
      return strict1(T.name, o.fn, (v) => (Number(v) === 10 ? 'root' : `unknown (OID=${String(v)})`));
    }
    case 'obj_description':
    case 'col_description':
    case 'shobj_description': {
      compileArgs(c, exprs, [T.oid, name === 'col_description' ? T.int4 : T.name]);
      return constant(T.text, null);
    }
    case 'pg_get_expr': {
      if (exprs.length < 2 || exprs.length > 3) return undefined;
      const [e] = compileArgs(c, exprs, [T.text, T.oid, T.bool]) as [Typed];
      return strict1(T.text, e.fn, (v) => v);
    }
    case 'pg_get_indexdef':
    case 'pg_get_constraintdef': {
      if (exprs.length < 1 || exprs.length > 3) return undefined;
      const [o, col] = compileArgs(c, exprs, [T.oid, name === 'pg_get_indexdef' ? T.int4 : T.bool, T.bool]) as [Typed, Typed | undefined];
      const texts = name === 'pg_get_indexdef' ? catalogTexts.indexDefs : catalogTexts.constraintDefs;
      if (name === 'pg_get_indexdef' && col !== undefined) {
        // pg_get_indexdef(index, column, pretty): column > 0 is that index column's definition (psql's \d index).
        const cf = col.fn;
        return { type: T.text, fn: (row, env) => {
          const v = o.fn(row, env);
          const k = cf(row, env);
          if (v === null || k === null) return null;
          if (Number(k) === 0) return texts.get(Number(v)) ?? null;
          return catalogTexts.indexColumns.get(Number(v))?.[Number(k) - 1] ?? '';
        } };
      }
      if (name === 'pg_get_constraintdef' && col !== undefined) {
        // Pretty: a CHECK's expression loses the parentheses the plain form wraps it in.
        const pf = col.fn;
        return { type: T.text, fn: (row, env) => {
          const v = o.fn(row, env);
          if (v === null) return null;
          const t = texts.get(Number(v)) ?? null;
          return t !== null && pf(row, env) === true && t.startsWith('CHECK ((') && t.endsWith('))') ? `CHECK (${t.slice(8, -2)})` : t;
        } };
      }
      return strict1(T.text, o.fn, (v) => texts.get(Number(v)) ?? null);
    }
    case 'pg_relation_is_publishable': {
      // Cairn has no logical replication: no relation is published.
      if (exprs.length !== 1) return undefined;
      const [o] = compileArgs(c, exprs, [T.regclass]) as [Typed];
      return strict1(T.bool, o.fn, () => false);
    }
    case 'pg_get_triggerdef': {
      // Cairn has no triggers (pg_trigger is empty).
      if (exprs.length < 1 || exprs.length > 2) return undefined;
      compileArgs(c, exprs, [T.oid, T.bool]);
      return constant(T.text, null);
    }
    case 'pg_get_statisticsobjdef_columns': {
      // Extended statistics objects do not exist (pg_statistic_ext is empty).
      if (exprs.length !== 1) return undefined;
      compileArgs(c, exprs, [T.oid]);
      return constant(T.text, null);
    }
    case 'pg_get_serial_sequence': {
      // Cairn has no owned sequences behind SERIAL columns yet: NULL, as PostgreSQL answers for a plain column.
      if (exprs.length !== 2) return undefined;
      compileArgs(c, exprs, [T.text, T.text]);
      return constant(T.text, null);
    }
    case 'pg_backend_pid':
      if (exprs.length !== 0) return undefined;
      return constant(T.int4, BACKEND_PID);
    case 'pg_encoding_to_char': {
      if (exprs.length !== 1) return undefined;
      const [e] = compileArgs(c, exprs, [T.int4]) as [Typed];
      return strict1(T.name, e.fn, (v) => (Number(v) === 6 ? 'UTF8' : Number(v) === 0 ? 'SQL_ASCII' : ''));
    }
    case 'current_schemas': {
      if (exprs.length !== 1) return undefined;
      const [e] = compileArgs(c, exprs, [T.bool]) as [Typed];
      return strict1(arrayOf(T.name), e.fn, (v) => (v === true ? ['pg_catalog', 'public'] : ['public']));
    }
    case 'has_table_privilege':
    case 'has_schema_privilege':
    case 'has_database_privilege':
    case 'has_column_privilege':
    case 'has_sequence_privilege':
    case 'has_function_privilege': {
      if (exprs.length < 2 || exprs.length > 4) return undefined;
      const a = compileArgs(c, exprs, exprs.map(() => T.text));
      return { type: T.bool, fn: (row, env) => (a.some((x) => x.fn(row, env) === null) ? null : true) };
    }
    case 'set_config': {
      if (exprs.length !== 3) return undefined;
      const [, v] = compileArgs(c, exprs, [T.text, T.text, T.bool]) as [Typed, Typed, Typed];
      return { type: T.text, fn: (row, env) => v.fn(row, env) };
    }
    case 'quote_ident': {
      if (exprs.length !== 1) return undefined;
      const [e] = compileArgs(c, exprs, [T.text]) as [Typed];
      return strict1(T.text, e.fn, (v) => (/^[a-z_][a-z0-9_$]*$/.test(v as string) ? (v as string) : `"${(v as string).replace(/"/g, '""')}"`));
    }
    case 'array_to_string': {
      if (exprs.length < 2 || exprs.length > 3) return undefined;
      const [arr, sep, nul] = compileArgs(c, exprs, [undefined, T.text, T.text]) as [Typed, Typed, Typed | undefined];
      const elem = arr.type.arrayElem;
      if (elem === undefined) return undefined;
      return { type: T.text, fn: (row, env) => {
        const a = arr.fn(row, env);
        const s = sep.fn(row, env);
        if (a === null || s === null) return null;
        const n = nul === undefined ? null : nul.fn(row, env);
        const parts: string[] = [];
        for (const x of a as readonly Datum[]) {
          if (x === null) {
            if (n !== null) parts.push(n as string);
          } else parts.push(datumToText(x, elem));
        }
        return parts.join(s as string);
      } };
    }
    default:
      return undefined;
  }
}

/** The POSIX regular-expression match operators psql's backslash commands use. */
export const REGEX_OPS: ReadonlySet<string> = new Set(['~', '!~', '~*', '!~*', 'pg_catalog.~', 'pg_catalog.!~', 'pg_catalog.~*', 'pg_catalog.!~*']);

/**
 * `text ~ pattern` and friends. Patterns are translated as-is to JavaScript
 * RegExp (the subset psql and ORMs send — anchors, groups, classes, `|` — means
 * the same); a pattern RegExp rejects is 2201B like PostgreSQL's invalid regex.
 */
export function compileRegexOp(c: ExprCompiler, op: string, le: Expr, re: Expr): Typed {
  const bare = op.startsWith('pg_catalog.') ? op.slice('pg_catalog.'.length) : op;
  const [l, r] = compileArgs(c, [le, re], [T.text, T.text]) as [Typed, Typed];
  const negate = bare.startsWith('!');
  const flags = bare.endsWith('*') ? 'iu' : 'u';
  let lastSrc: string | undefined;
  let lastRe: RegExp | undefined;
  return { type: T.bool, fn: (row, env) => {
    const a = l.fn(row, env);
    if (a === null) return null;
    const p = r.fn(row, env);
    if (p === null) return null;
    if (p !== lastSrc || lastRe === undefined) {
      try {
        lastRe = new RegExp(p as string, flags);
      } catch {
        throw new SqlError('sql.invalid_regular_expression', '2201B', `invalid regular expression: ${p as string}`);
      }
      lastSrc = p as string;
    }
    return lastRe.test(datumToText(a, l.type)) !== negate;
  } };
}
