/**
 * sql/sem/builtins.ts — scalar functions (string, math, time, ids, system).
 *
 * Each builtin compiles its arguments with the hints it wants (so '…'
 * literals and $n parameters get their types from the signature) and
 * returns a Typed closure. Functions are strict (NULL in → NULL out) unless
 * marked otherwise (concat, concat_ws). Volatile functions (random,
 * gen_random_uuid, unique_rowid) read the node services of the EvalEnv;
 * now()/current_timestamp return the transaction timestamp;
 * cluster_logical_timestamp() its commit timestamp (which it fixes).
 *
 * An unknown name or argument list is 42883 like PostgreSQL:
 * `function foo(integer) does not exist`.
 */
import { createHash } from 'node:crypto';
import type { Expr } from '../parser/ast.js';
import { SqlError } from '../parser/sql-error.js';
import { Decimal } from '../types/decimal.js';
import { T, baseType, formatType, Oid, type SqlType } from '../types/type.js';
import { divisionByZero, outOfRange } from '../types/type-error.js';
import { lookupCatalogBuiltin } from './catalog-builtins.js';
import { dateFieldFn, hasDateFields } from './datetime-fields.js';
import type { Interval } from '../types/interval.js';
import { checkInt, datumToText, type Datum } from './datum.js';
import type { EvalEnv, EvalFn, ExprCompiler, Typed } from './expr.js';

const VERSION = 'PostgreSQL 15.0 on x86_64-pc-linux-gnu, compiled by Cairn (TypeScript on Node.js), 64-bit — Cairn';
export { VERSION as CAIRN_VERSION_STRING };

function noFunction(name: string, args: readonly Typed[]): SqlError {
  return new SqlError('sql.undefined_function', '42883', `function ${name}(${args.map((a) => formatType(a.type.family === 'unknown' ? T.unknown : a.type)).join(', ')}) does not exist`, {
    hint: 'No function matches the given name and argument types. You might need to add explicit type casts.',
  });
}

function strict(type: SqlType, args: readonly EvalFn[], f: (vs: Exclude<Datum, null>[], env: EvalEnv) => Datum): Typed {
  const n = args.length;
  return {
    type,
    fn: (row, env) => {
      const vs: Exclude<Datum, null>[] = new Array(n);
      for (let i = 0; i < n; i++) {
        const v = (args[i] as EvalFn)(row, env);
        if (v === null) return null;
        vs[i] = v;
      }
      return f(vs, env);
    },
  };
}

type Sig = 'text' | 'int' | 'float' | 'numeric' | 'any';

/** Compiles args to the signature (text → text, int → int8, float → float8, numeric keeps its family). */
function args(c: ExprCompiler, name: string, exprs: readonly Expr[], sig: readonly Sig[]): Typed[] {
  if (exprs.length !== sig.length) {
    throw noFunction(name, exprs.map((e) => c.resolveUnknown(c.compile(e))));
  }
  return exprs.map((e, i) => {
    const s = sig[i] as Sig;
    const hint = s === 'text' ? T.text : s === 'int' ? T.int8 : s === 'float' ? T.float8 : s === 'numeric' ? T.numeric : undefined;
    const t = c.compile(e, hint);
    if (s === 'any') return c.resolveUnknown(t);
    const fam = t.type.family;
    if (s === 'text') {
      if (fam === 'string') return t;
      throw noFunction(name, exprs.map((x) => c.resolveUnknown(c.compile(x))));
    }
    if (s === 'int') {
      if (fam === 'int') return c.coerce(t, T.int8, 'implicit');
      throw noFunction(name, [t]);
    }
    if (fam === 'int' || fam === 'float' || fam === 'numeric') return s === 'float' ? c.coerce(t, T.float8, 'assignment') : t;
    throw noFunction(name, [t]);
  });
}

const fns = (ts: readonly Typed[]): EvalFn[] => ts.map((t) => t.fn);

/** Math over float8, or numeric when the argument is numeric/int. */
function mathFn(c: ExprCompiler, name: string, exprs: readonly Expr[], fl: (x: number) => number, dec?: (x: Decimal) => Decimal, keepInt = false): Typed {
  const [a] = args(c, name, exprs, ['numeric']) as [Typed];
  if (a.type.family === 'int' && keepInt) {
    return strict(a.type, [a.fn], ([x]) => checkInt(a.type, typeof x === 'bigint' ? (x < 0n ? -x : x) : fl(x as number)));
  }
  // An int argument takes the float8 variant, as PostgreSQL prefers float8 in the numeric category.
  if (a.type.family === 'float' || a.type.family === 'int') {
    const f = c.coerce(a, T.float8, 'implicit');
    return strict(T.float8, [f.fn], ([x]) => fl(x as number));
  }
  if (dec !== undefined) {
    const n = c.coerce(a, T.numeric, 'implicit');
    return strict(T.numeric, [n.fn], ([x]) => dec(x as Decimal));
  }
  const f = c.coerce(a, T.float8, 'assignment');
  return strict(T.float8, [f.fn], ([x]) => fl(x as number));
}

function codepoints(s: string): string[] {
  return [...s];
}

export function lookupBuiltin(c: ExprCompiler, name: string, exprs: readonly Expr[]): Typed {
  switch (name) {
    // ---- strings
    case 'length':
    case 'char_length':
    case 'character_length': {
      const [s] = args(c, name, exprs, ['text']);
      return strict(T.int4, fns([s as Typed]), ([x]) => codepoints(x as string).length);
    }
    case 'octet_length': {
      const [s] = args(c, name, exprs, ['text']);
      return strict(T.int4, fns([s as Typed]), ([x]) => Buffer.byteLength(x as string));
    }
    case 'upper':
    case 'lower': {
      const [s] = args(c, name, exprs, ['text']);
      return strict(T.text, fns([s as Typed]), ([x]) => (name === 'upper' ? (x as string).toUpperCase() : (x as string).toLowerCase()));
    }
    case 'substr':
    case 'substring': {
      const sig: Sig[] = exprs.length === 3 ? ['text', 'int', 'int'] : ['text', 'int'];
      const a = args(c, name, exprs, sig);
      return strict(T.text, fns(a), ([s, from, len]) => {
        const cps = codepoints(s as string);
        const start = Number(from);
        if (len === undefined) return cps.slice(Math.max(start - 1, 0)).join('');
        const l = Number(len);
        if (l < 0) throw new SqlError('sql.substring_error', '22011', 'negative substring length not allowed');
        const end = start + l;
        return cps.slice(Math.max(start - 1, 0), Math.max(end - 1, 0)).join('');
      });
    }
    case 'btrim':
    case 'trim':
    case 'ltrim':
    case 'rtrim': {
      const a = args(c, name, exprs, exprs.length === 2 ? ['text', 'text'] : ['text']);
      return strict(T.text, fns(a), ([s, chars]) => {
        const set = new Set(codepoints((chars as string | undefined) ?? ' '));
        const cps = codepoints(s as string);
        let i = 0;
        let j = cps.length;
        if (name !== 'rtrim') while (i < j && set.has(cps[i] as string)) i++;
        if (name !== 'ltrim') while (j > i && set.has(cps[j - 1] as string)) j--;
        return cps.slice(i, j).join('');
      });
    }
    case 'replace': {
      const a = args(c, name, exprs, ['text', 'text', 'text']);
      return strict(T.text, fns(a), ([s, f, t]) => ((f as string) === '' ? s : (s as string).split(f as string).join(t as string)));
    }
    case 'left':
    case 'right': {
      const a = args(c, name, exprs, ['text', 'int']);
      return strict(T.text, fns(a), ([s, n]) => {
        const cps = codepoints(s as string);
        const k = Number(n);
        if (name === 'left') return (k >= 0 ? cps.slice(0, k) : cps.slice(0, Math.max(cps.length + k, 0))).join('');
        return (k >= 0 ? cps.slice(Math.max(cps.length - k, 0)) : cps.slice(Math.min(-k, cps.length))).join('');
      });
    }
    case 'strpos':
    case 'position': {
      const a = args(c, name, exprs, ['text', 'text']);
      // PostgreSQL's grammar turns position(sub IN s) into position(s, sub): the same order as strpos.
      return strict(T.int4, fns(a), ([x, y]) => {
        const s = x as string;
        const sub = y as string;
        const i = s.indexOf(sub);
        return i < 0 ? 0 : codepoints(s.slice(0, i)).length + 1;
      });
    }
    case 'extract':
    case 'date_part': {
      // extract(field FROM x) arrives as extract('field', x).
      if (exprs.length !== 2) throw noFunction(name, exprs.map((e) => c.resolveUnknown(c.compile(e))));
      const field = c.resolveUnknown(c.compile(exprs[0] as Expr, T.text));
      const src = c.resolveUnknown(c.compile(exprs[1] as Expr));
      if (field.type.family !== 'string' || !hasDateFields(src.type)) throw noFunction(name, [field, src]);
      const part = dateFieldFn(src.type, name === 'extract');
      return strict(name === 'extract' ? T.numeric : T.float8, [field.fn, src.fn], ([f, d], env) => part(f as string, d as number | Interval, () => env.setting('timezone')));
    }
    case 'repeat': {
      const a = args(c, name, exprs, ['text', 'int']);
      return strict(T.text, fns(a), ([s, n]) => {
        const k = Number(n);
        if ((s as string).length * Math.max(k, 0) > 10_485_760) throw new SqlError('sql.program_limit_exceeded', '54000', 'requested length too large');
        return k <= 0 ? '' : (s as string).repeat(k);
      });
    }
    case 'reverse': {
      const a = args(c, name, exprs, ['text']);
      return strict(T.text, fns(a), ([s]) => codepoints(s as string).reverse().join(''));
    }
    case 'lpad':
    case 'rpad': {
      const a = args(c, name, exprs, exprs.length === 3 ? ['text', 'int', 'text'] : ['text', 'int']);
      return strict(T.text, fns(a), ([s, n, fill]) => {
        const cps = codepoints(s as string);
        const len = Number(n);
        if (len <= cps.length) return cps.slice(0, Math.max(len, 0)).join('');
        const f = codepoints((fill as string | undefined) ?? ' ');
        if (f.length === 0) return s;
        const padding: string[] = [];
        for (let i = 0; padding.length < len - cps.length; i++) padding.push(f[i % f.length] as string);
        return name === 'lpad' ? padding.join('') + (s as string) : (s as string) + padding.join('');
      });
    }
    case 'split_part': {
      const a = args(c, name, exprs, ['text', 'text', 'int']);
      return strict(T.text, fns(a), ([s, d, n]) => {
        const k = Number(n);
        if (k === 0) throw new SqlError('sql.invalid_parameter_value', '22023', 'field position must not be zero');
        const parts = (d as string) === '' ? [s as string] : (s as string).split(d as string);
        const i = k > 0 ? k - 1 : parts.length + k;
        return parts[i] ?? '';
      });
    }
    case 'md5': {
      const a = args(c, name, exprs, ['text']);
      return strict(T.text, fns(a), ([s]) => createHash('md5').update(s as string).digest('hex'));
    }
    case 'concat':
    case 'concat_ws': {
      const ts = exprs.map((e) => c.resolveUnknown(c.compile(e)));
      if (name === 'concat_ws' && ts.length === 0) throw noFunction(name, ts);
      const parts = ts.map((t) => ({ f: t.fn, type: t.type }));
      return {
        type: T.text,
        fn: (row, env) => {
          const out: string[] = [];
          let sep = '';
          for (let i = 0; i < parts.length; i++) {
            const p = parts[i] as { f: EvalFn; type: SqlType };
            const v = p.f(row, env);
            if (name === 'concat_ws' && i === 0) {
              if (v === null) return null;
              sep = v as string;
              continue;
            }
            if (v !== null) out.push(p.type.family === 'string' ? (v as string) : datumToText(v, p.type));
          }
          return out.join(sep);
        },
      };
    }
    case 'ascii': {
      const a = args(c, name, exprs, ['text']);
      return strict(T.int4, fns(a), ([s]) => (s as string).codePointAt(0) ?? 0);
    }
    case 'chr': {
      const a = args(c, name, exprs, ['int']);
      return strict(T.text, fns(a), ([n]) => String.fromCodePoint(Number(n)));
    }
    case 'initcap': {
      const a = args(c, name, exprs, ['text']);
      return strict(T.text, fns(a), ([s]) => (s as string).toLowerCase().replace(/(^|[^a-z0-9])([a-z])/g, (_m, p: string, ch: string) => p + ch.toUpperCase()));
    }
    // ---- math
    case 'abs':
      return mathFn(c, name, exprs, Math.abs, (x) => x.abs(), true);
    case 'ceil':
    case 'ceiling':
      return mathFn(c, name, exprs, Math.ceil, (x) => (x.sign() >= 0 && !x.trunc(0).equals(x) ? x.trunc(0).add(Decimal.ONE) : x.trunc(0)));
    case 'floor':
      return mathFn(c, name, exprs, Math.floor, (x) => (x.sign() < 0 && !x.trunc(0).equals(x) ? x.trunc(0).sub(Decimal.ONE) : x.trunc(0)));
    case 'sign':
      return mathFn(c, name, exprs, Math.sign, (x) => Decimal.fromInt(x.sign()));
    case 'sqrt':
      return mathFn(c, name, exprs, (x) => {
        if (x < 0) throw new SqlError('sql.invalid_argument_for_power_function', '2201F', 'cannot take square root of a negative number');
        return Math.sqrt(x);
      });
    case 'exp':
      return mathFn(c, name, exprs, Math.exp);
    case 'ln':
    case 'log': {
      if (name === 'log' && exprs.length === 2) {
        const a = args(c, name, exprs, ['float', 'float']);
        return strict(T.float8, fns(a), ([b, x]) => Math.log(x as number) / Math.log(b as number));
      }
      return mathFn(c, name, exprs, (x) => {
        if (x === 0) throw new SqlError('sql.invalid_argument_for_log', '2201E', 'cannot take logarithm of zero');
        if (x < 0) throw new SqlError('sql.invalid_argument_for_log', '2201E', 'cannot take logarithm of a negative number');
        return name === 'ln' ? Math.log(x) : Math.log10(x);
      });
    }
    case 'round':
    case 'trunc': {
      if (exprs.length === 2) {
        const a = args(c, name, exprs, ['numeric', 'int']);
        const n = c.coerce(a[0] as Typed, T.numeric, 'implicit');
        return strict(T.numeric, [n.fn, (a[1] as Typed).fn], ([x, s]) => (name === 'round' ? (x as Decimal).round(Number(s)) : (x as Decimal).trunc(Number(s))));
      }
      return mathFn(
        c,
        name,
        exprs,
        (x) => (name === 'round' ? roundHalfEven(x) : Math.trunc(x)),
        (x) => (name === 'round' ? x.round(0) : x.trunc(0)),
      );
    }
    case 'power':
    case 'pow': {
      const a = args(c, name, exprs, ['float', 'float']);
      return strict(T.float8, fns(a), ([x, y]) => {
        const v = Math.pow(x as number, y as number);
        if (!Number.isFinite(v) && Number.isFinite(x) && Number.isFinite(y)) throw outOfRange('value out of range: overflow');
        if (v === 0 && x !== 0 && Number.isFinite(y)) throw outOfRange('value out of range: underflow');
        return v;
      });
    }
    case 'mod': {
      const a = args(c, name, exprs, ['numeric', 'numeric']);
      if ((a[0] as Typed).type.family === 'int' && (a[1] as Typed).type.family === 'int') {
        const x = c.coerce(a[0] as Typed, T.int8, 'implicit');
        const y = c.coerce(a[1] as Typed, T.int8, 'implicit');
        return strict(T.int8, [x.fn, y.fn], ([p, q]) => {
          if (q === 0n) throw divisionByZero();
          return (p as bigint) % (q as bigint);
        });
      }
      const x = c.coerce(a[0] as Typed, T.numeric, 'assignment');
      const y = c.coerce(a[1] as Typed, T.numeric, 'assignment');
      return strict(T.numeric, [x.fn, y.fn], ([p, q]) => (p as Decimal).mod(q as Decimal));
    }
    case 'pi':
      args(c, name, exprs, []);
      return { type: T.float8, fn: () => Math.PI };
    case 'random':
      args(c, name, exprs, []);
      return { type: T.float8, fn: (_r, env) => env.node.random() };
    case 'div': {
      const a = args(c, name, exprs, ['numeric', 'numeric']);
      const x = c.coerce(a[0] as Typed, T.numeric, 'assignment');
      const y = c.coerce(a[1] as Typed, T.numeric, 'assignment');
      return strict(T.numeric, [x.fn, y.fn], ([p, q]) => (p as Decimal).div(q as Decimal).trunc(0));
    }
    // ---- time
    case 'now':
    case 'transaction_timestamp':
      args(c, name, exprs, []);
      return { type: T.timestamptz, fn: (_r, env) => env.txnTime };
    case 'statement_timestamp':
      args(c, name, exprs, []);
      return { type: T.timestamptz, fn: (_r, env) => env.stmtTime };
    case 'clock_timestamp':
      args(c, name, exprs, []);
      return { type: T.timestamptz, fn: (_r, env) => env.stmtTime };
    case 'cluster_logical_timestamp':
      // CockroachDB's: the commit timestamp as DECIMAL wall_nanos.logical (10 logical digits), and the
      // transaction may no longer move it (a later push is 40001).
      args(c, name, exprs, []);
      return {
        type: T.numeric,
        fn: (_r, env) => {
          if (env.commitTimestamp === undefined) throw new SqlError('sql.feature_not_supported', '0A000', 'cluster_logical_timestamp() is not available here');
          const ts = env.commitTimestamp();
          return Decimal.of(BigInt(ts.wall) * 10_000_000_000_000n + BigInt(ts.logical), 10);
        },
      };
    // ---- ids and system
    case 'gen_random_uuid':
    case 'uuid_generate_v4':
      args(c, name, exprs, []);
      return { type: T.uuid, fn: (_r, env) => env.node.randomUUID() };
    case 'nextval':
    case 'currval': {
      const a = args(c, name, exprs, ['text']);
      const f = (a[0] as Typed).fn;
      const next = name === 'nextval';
      return {
        type: T.int8,
        fn: (r, env) => {
          const n = f(r, env);
          if (n === null) return null;
          if (env.sequences === undefined) throw new SqlError('sql.feature_not_supported', '0A000', `${name}() is not available here`);
          return next ? env.sequences.nextval(n as string) : env.sequences.currval(n as string);
        },
      };
    }
    case 'setval': {
      const a = exprs.length === 3 ? args(c, name, exprs, ['text', 'int', 'any']) : args(c, name, exprs, ['text', 'int']);
      const fs = a.map((x, i) => c.coerce(x, i === 0 ? T.text : i === 1 ? T.int8 : T.bool, 'implicit').fn);
      return {
        type: T.int8,
        fn: (r, env) => {
          const vs = fs.map((g) => g(r, env));
          if (vs.some((v) => v === null)) return null;
          if (env.sequences === undefined) throw new SqlError('sql.feature_not_supported', '0A000', 'setval() is not available here');
          return env.sequences.setval(vs[0] as string, BigInt(vs[1] as number | bigint), vs.length < 3 || vs[2] === true);
        },
      };
    }
    case 'unique_rowid':
      args(c, name, exprs, []);
      return { type: T.int8, fn: (_r, env) => env.node.uniqueRowid() };
    case 'version':
      args(c, name, exprs, []);
      return { type: T.text, fn: () => VERSION };
    case 'current_database':
      args(c, name, exprs, []);
      return { type: T.name, fn: (_r, env) => env.database };
    case 'current_user':
    case 'session_user':
      args(c, name, exprs, []);
      return { type: T.name, fn: (_r, env) => env.user };
    case 'current_schema':
      args(c, name, exprs, []);
      return { type: T.name, fn: () => 'public' };
    case 'current_setting': {
      const a = args(c, name, exprs, ['text']);
      return strict(T.text, fns(a), ([n], env) => env.setting(n as string));
    }
    case 'pg_typeof': {
      const [a] = args(c, name, exprs, ['any']);
      // regtype output: no modifier ("character", not "character(3)" or "bpchar")
      const text = (a as Typed).type.oid === Oid.bpchar ? 'character' : formatType(baseType((a as Typed).type));
      return { type: T.text, fn: () => text };
    }
    case 'to_hex': {
      const a = args(c, name, exprs, ['int']);
      return strict(T.text, fns(a), ([x]) => {
        const b = x as bigint;
        return (b < 0n ? b + 2n ** 64n : b).toString(16);
      });
    }
    default: {
      if (name.startsWith('pg_catalog.')) return lookupBuiltin(c, name.slice('pg_catalog.'.length), exprs);
      const cat = lookupCatalogBuiltin(c, name, exprs);
      if (cat !== undefined) return cat;
      throw noFunction(name, exprs.map((e) => c.resolveUnknown(c.compile(e))));
    }
  }
}

function roundHalfEven(x: number): number {
  // PostgreSQL's float round() is rint(): half to even.
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 ? 2 * Math.round(x / 2) : r;
}

