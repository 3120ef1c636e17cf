/**
 * Exhaustive traversal of expression trees (ast.ts).
 *
 *   exprChildren(e)   the direct child expressions of e, in source order
 *   walkExpr(e, f)    pre-order visit of e and its descendants; f returning
 *                     false skips that node's children
 *   mapExpr(e, f)     bottom-up rewrite: children first, then f on the node
 *                     rebuilt from the rewritten children; returns e itself
 *                     (same object) when nothing changed
 *
 * Subqueries (SubLink.query) are statements, not expressions: these helpers
 * stop at them — a visitor that cares handles SubLink itself. Window
 * definitions of a FuncCall (PARTITION BY, ORDER BY, frame offsets), the
 * aggregate ORDER BY and FILTER are children.
 *
 * Every switch ends in assertNever, so adding a node kind to ast.ts fails to
 * compile here until it is handled.
 */
import { assertNever } from '../../src/util/assert.js';
import type { Expr, FrameBound, SortBy, WindowDef } from './ast.js';

function frameChildren(b: FrameBound | undefined, out: Expr[]): void {
  if (b !== undefined && (b.kind === 'preceding' || b.kind === 'following')) out.push(b.offset);
}

function windowChildren(w: WindowDef, out: Expr[]): void {
  out.push(...w.partitionBy);
  for (const s of w.orderBy) out.push(s.expr);
  if (w.frame !== undefined) {
    frameChildren(w.frame.start, out);
    frameChildren(w.frame.end, out);
  }
}

function opt(e: Expr | undefined, out: Expr[]): void {
  if (e !== undefined) out.push(e);
}

/** Maps `xs` with `f`; returns `xs` itself when every element came back unchanged. */
function mapSame<T>(xs: readonly T[], f: (x: T) => T): readonly T[] {
  let out: T[] | undefined;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i] as T;
    const y = f(x);
    if (y !== x && out === undefined) out = xs.slice(0, i);
    if (out !== undefined) out.push(y);
  }
  return out ?? xs;
}

/** The direct child expressions of `e`. */
export function exprChildren(e: Expr): Expr[] {
  const out: Expr[] = [];
  switch (e.kind) {
    case 'ColumnRef':
    case 'Const':
    case 'Param':
    case 'SqlValueFunction':
    case 'Default':
      break;
    case 'BinaryOp':
    case 'ArrayOp':
    case 'IsDistinctFrom':
    case 'NullIf':
      out.push(e.left, e.right);
      break;
    case 'UnaryOp':
      out.push(e.operand);
      break;
    case 'BoolExpr':
    case 'Coalesce':
    case 'MinMax':
    case 'Row':
      out.push(...e.args);
      break;
    case 'FuncCall':
      out.push(...e.args);
      for (const s of e.orderBy) out.push(s.expr);
      opt(e.filter, out);
      if (e.over !== undefined) windowChildren(e.over, out);
      break;
    case 'Cast':
    case 'NullTest':
    case 'BooleanTest':
    case 'Collate':
      out.push(e.arg);
      break;
    case 'Case':
      opt(e.operand, out);
      for (const w of e.whens) out.push(w.when, w.then);
      opt(e.else, out);
      break;
    case 'InList':
      out.push(e.arg, ...e.list);
      break;
    case 'Between':
      out.push(e.arg, e.low, e.high);
      break;
    case 'Like':
      out.push(e.arg, e.pattern);
      opt(e.escape, out);
      break;
    case 'SubLink':
      opt(e.test, out);
      break;
    case 'Array':
      out.push(...e.elements);
      break;
    case 'Subscript':
      out.push(e.arg);
      for (const s of e.subscripts) {
        opt(s.lower, out);
        opt(s.upper, out);
      }
      break;
    default:
      assertNever(e, 'walk: unknown expression');
  }
  return out;
}

/** Pre-order visit; `visit` returning false skips the node's children. */
export function walkExpr(e: Expr, visit: (e: Expr) => boolean | void): void {
  if (visit(e) === false) return;
  for (const c of exprChildren(e)) walkExpr(c, visit);
}

/**
 * Bottom-up rewrite. `fn` sees each node after its children were rewritten
 * and returns the replacement (or the node itself). Unchanged subtrees keep
 * their identity, so `mapExpr(e, x => x) === e`.
 */
export function mapExpr(e: Expr, fn: (e: Expr) => Expr): Expr {
  const m = (x: Expr): Expr => mapExpr(x, fn);
  const mo = (x: Expr | undefined): Expr | undefined => (x === undefined ? undefined : mapExpr(x, fn));
  const ml = (xs: readonly Expr[]): readonly Expr[] => mapSame(xs, m);
  const ms = (xs: readonly SortBy[]): readonly SortBy[] =>
    mapSame(xs, (s) => {
      const y = m(s.expr);
      return y === s.expr ? s : { ...s, expr: y };
    });
  const mb = (b: FrameBound | undefined): FrameBound | undefined => {
    if (b === undefined || (b.kind !== 'preceding' && b.kind !== 'following')) return b;
    const o = m(b.offset);
    return o === b.offset ? b : { kind: b.kind, offset: o };
  };
  const mw = (w: WindowDef | undefined): WindowDef | undefined => {
    if (w === undefined) return undefined;
    const partitionBy = ml(w.partitionBy);
    const orderBy = ms(w.orderBy);
    let frame = w.frame;
    if (frame !== undefined) {
      const start = mb(frame.start) as FrameBound;
      const end = mb(frame.end);
      if (start !== frame.start || end !== frame.end) frame = { ...frame, start, end };
    }
    if (partitionBy === w.partitionBy && orderBy === w.orderBy && frame === w.frame) return w;
    return { ...w, partitionBy, orderBy, frame };
  };

  let r: Expr;
  switch (e.kind) {
    case 'ColumnRef':
    case 'Const':
    case 'Param':
    case 'SqlValueFunction':
    case 'Default':
      r = e;
      break;
    case 'BinaryOp':
    case 'ArrayOp':
    case 'IsDistinctFrom':
    case 'NullIf': {
      const left = m(e.left);
      const right = m(e.right);
      r = left === e.left && right === e.right ? e : { ...e, left, right };
      break;
    }
    case 'UnaryOp': {
      const operand = m(e.operand);
      r = operand === e.operand ? e : { ...e, operand };
      break;
    }
    case 'BoolExpr':
    case 'Coalesce':
    case 'MinMax':
    case 'Row': {
      const args = ml(e.args);
      r = args === e.args ? e : { ...e, args };
      break;
    }
    case 'FuncCall': {
      const args = ml(e.args);
      const orderBy = ms(e.orderBy);
      const filter = mo(e.filter);
      const over = mw(e.over);
      r = args === e.args && orderBy === e.orderBy && filter === e.filter && over === e.over ? e : { ...e, args, orderBy, filter, over };
      break;
    }
    case 'Cast':
    case 'NullTest':
    case 'BooleanTest':
    case 'Collate': {
      const arg = m(e.arg);
      r = arg === e.arg ? e : { ...e, arg };
      break;
    }
    case 'Case': {
      const operand = mo(e.operand);
      const whens = mapSame(e.whens, (w) => {
        const when = m(w.when);
        const then = m(w.then);
        return when === w.when && then === w.then ? w : { when, then };
      });
      const els = mo(e.else);
      r = operand === e.operand && whens === e.whens && els === e.else ? e : { ...e, operand, whens, else: els };
      break;
    }
    case 'InList': {
      const arg = m(e.arg);
      const list = ml(e.list);
      r = arg === e.arg && list === e.list ? e : { ...e, arg, list };
      break;
    }
    case 'Between': {
      const arg = m(e.arg);
      const low = m(e.low);
      const high = m(e.high);
      r = arg === e.arg && low === e.low && high === e.high ? e : { ...e, arg, low, high };
      break;
    }
    case 'Like': {
      const arg = m(e.arg);
      const pattern = m(e.pattern);
      const escape = mo(e.escape);
      r = arg === e.arg && pattern === e.pattern && escape === e.escape ? e : { ...e, arg, pattern, escape };
      break;
    }
    case 'SubLink': {
      const test = mo(e.test);
      r = test === e.test ? e : { ...e, test };
      break;
    }
    case 'Array': {
      const elements = ml(e.elements);
      r = elements === e.elements ? e : { ...e, elements };
      break;
    }
    case 'Subscript': {
      const arg = m(e.arg);
      const subscripts = mapSame(e.subscripts, (x) => {
        const lower = mo(x.lower);
        const upper = mo(x.upper);
        return lower === x.lower && upper === x.upper ? x : { ...x, lower, upper };
      });
      r = arg === e.arg && subscripts === e.subscripts ? e : { ...e, arg, subscripts };
      break;
    }
    default:
      assertNever(e, 'walk: unknown expression');
  }
  return fn(r);
}
