/**
 * sql/exec/aggregate-state.ts — running state of one aggregate call in one group.
 *
 *   newAggState(spec, mem) → { add(row, env), result() }
 *
 * Semantics follow PostgreSQL: NULL inputs are skipped (count(*) counts
 * rows); an aggregate over no non-NULL input is NULL except count (0);
 * sum(int2/int4) is int8, sum(int8) and avg over integers / numeric are
 * numeric, avg(float) float8; DISTINCT keeps a set of the argument values;
 * FILTER (WHERE …) skips rows where it is not true; ORDER BY inside
 * string_agg / array_agg sorts the collected values at the end. DISTINCT
 * sets and collected values are charged to the query's memory budget.
 */
import type { Datum } from '../sem/datum.js';
import type { EvalEnv, EvalFn } from '../sem/expr.js';
import { compareDatums, rowKey } from '../types/compare.js';
import { castDatum } from '../types/cast.js';
import { evalBinary } from '../types/arith.js';
import { Decimal } from '../types/decimal.js';
import { Jsonb, type JsonValue } from '../types/datum.js';
import { toJsonValue } from '../sem/array-jsonb.js';
import { T, type SqlType } from '../types/type.js';
import type { AggSpec } from '../plan/query-nodes.js';
import { rowBytes, type QueryMemory } from './memory-budget.js';

export interface AggState {
  add(row: readonly Datum[], env: EvalEnv): void;
  result(): Datum;
}

/**
 * `small` is the exact part of an integer sum kept as a double while it stays
 * below 2^52 in magnitude (no BigInt per row); `value` holds the rest.
 */
type Acc = { count: number; value: Datum; small: number; items: { vals: Datum[]; keys: Datum[] }[] };

/** Integer sums add into Acc.small while both it and the input are below this magnitude, so the double stays exact. */
const SMALL_SUM_LIMIT = 2 ** 52;

export function newAggState(spec: AggSpec, mem: QueryMemory): AggState {
  const st: Acc = { count: 0, value: null, small: 0, items: [] };
  const seen = spec.distinct ? new Set<string>() : undefined;
  const step = stepFn(spec, st);
  const collect = spec.order.length > 0 || spec.name === 'array_agg' || spec.name === 'string_agg' || spec.name === 'jsonb_agg' || spec.name === 'json_agg';
  const args = spec.args;
  const filter = spec.filter;
  // Arguments of a step that keeps no reference to them are evaluated into one reused array.
  const scratch: Datum[] | undefined = collect ? undefined : new Array(args.length);
  return {
    add(row, env) {
      if (filter !== undefined && filter(row, env) !== true) return;
      if (args.length === 0) {
        st.count++;
        return;
      }
      const vals: Datum[] = scratch ?? new Array(args.length);
      for (let i = 0; i < args.length; i++) vals[i] = (args[i] as EvalFn)(row, env);
      if (vals[0] === null && spec.name !== 'array_agg' && spec.name !== 'jsonb_agg' && spec.name !== 'json_agg') return;
      if (seen !== undefined) {
        const k = rowKey(vals, spec.argTypes);
        if (seen.has(k)) return;
        seen.add(k);
        mem.grow(48 + k.length * 2, 'aggregation');
      }
      if (scratch === undefined) {
        const keys = spec.order.map((o) => o.fn(row, env));
        st.items.push({ vals, keys });
        mem.grow(rowBytes(vals) + rowBytes(keys), 'aggregation');
        return;
      }
      step(vals);
    },
    result() {
      if (collect) {
        const items = st.items;
        if (spec.order.length > 0) items.sort((a, b) => compareItems(spec, a.keys, b.keys));
        for (const it of items) step(it.vals);
      }
      return finish(spec, st);
    },
  };
}

function compareItems(spec: AggSpec, a: readonly Datum[], b: readonly Datum[]): number {
  return compareSortKeys(spec.order, a, b);
}

/** Compares two rows of sort-key values under ORDER BY items (NULLS FIRST/LAST, DESC). */
export function compareSortKeys(order: AggSpec['order'], a: readonly Datum[], b: readonly Datum[]): number {
  for (let i = 0; i < order.length; i++) {
    const o = order[i] as AggSpec['order'][number];
    const x = a[i] as Datum;
    const y = b[i] as Datum;
    if (x === null || y === null) {
      if (x === y) continue;
      return (x === null) === o.nullsFirst ? -1 : 1;
    }
    const c = o.cmp(x, y);
    if (c !== 0) return o.desc ? -c : c;
  }
  return 0;
}

/** The step function: folds one (non-NULL first argument) input into the accumulator. */
function stepFn(spec: AggSpec, st: Acc): (vals: Datum[]) => void {
  const at = spec.argTypes[0] as SqlType;
  switch (spec.name) {
    case 'count':
      return () => {
        st.count++;
      };
    case 'sum':
    case 'avg':
      if (at.family === 'int') {
        return (v) => {
          st.count++;
          const x = v[0] as number | bigint;
          const n = typeof x === 'number' ? x : x > -SMALL_SUM_LIMIT && x < SMALL_SUM_LIMIT ? Number(x) : undefined;
          if (n !== undefined && n > -SMALL_SUM_LIMIT && n < SMALL_SUM_LIMIT && st.small > -SMALL_SUM_LIMIT && st.small < SMALL_SUM_LIMIT) {
            st.small += n;
            return;
          }
          st.value = ((st.value as bigint | null) ?? 0n) + BigInt(st.small) + BigInt(x);
          st.small = 0;
        };
      }
      if (at.family === 'float') {
        return (v) => {
          st.count++;
          st.value = ((st.value as number | null) ?? 0) + (v[0] as number);
        };
      }
      return (v) => {
        st.count++;
        st.value = st.value === null ? (v[0] as Datum) : evalBinary('+', st.value, at, v[0] as Datum, at);
      };
    case 'min':
    case 'max': {
      const sign = spec.name === 'min' ? 1 : -1;
      return (v) => {
        const x = v[0] as Exclude<Datum, null>;
        if (st.value === null || sign * compareDatums(x, st.value, at) < 0) st.value = x;
        st.count++;
      };
    }
    case 'bool_and':
    case 'every':
      return (v) => {
        st.value = st.value === null ? v[0] === true : st.value === true && v[0] === true;
        st.count++;
      };
    case 'bool_or':
      return (v) => {
        st.value = st.value === null ? v[0] === true : st.value === true || v[0] === true;
        st.count++;
      };
    case 'string_agg':
      return (v) => {
        const s = v[0] as string;
        const d = v[1] as string | null;
        st.value = st.value === null ? s : (st.value as string) + (d ?? '') + s;
        st.count++;
      };
    case 'array_agg':
      return (v) => {
        if (st.value === null) st.value = [];
        (st.value as Datum[]).push(v[0] as Datum);
        st.count++;
      };
    case 'jsonb_agg':
    case 'json_agg':
      return (v) => {
        if (st.value === null) st.value = [];
        (st.value as JsonValue[] as unknown as Datum[]).push(toJsonValue(v[0] as Datum, at) as unknown as Datum);
        st.count++;
      };
    default:
      throw new Error(`exec: unknown aggregate ${spec.name as string}`);
  }
}

function finish(spec: AggSpec, st: Acc): Datum {
  const at = spec.argTypes[0] as SqlType;
  const rt = spec.resultType;
  if (at !== undefined && at.family === 'int' && (spec.name === 'sum' || spec.name === 'avg') && st.count > 0) {
    st.value = ((st.value as bigint | null) ?? 0n) + BigInt(st.small);
    st.small = 0;
  }
  switch (spec.name) {
    case 'count':
      return BigInt(st.count);
    case 'sum':
      if (st.count === 0) return null;
      if (at.family === 'int') return rt.family === 'numeric' ? Decimal.fromInt(st.value as bigint) : (st.value as bigint);
      return st.value;
    case 'avg': {
      if (st.count === 0) return null;
      if (at.family === 'float') return (st.value as number) / st.count;
      if (at.family === 'int') return evalBinary('/', Decimal.fromInt(st.value as bigint), T.numeric, Decimal.fromInt(st.count), T.numeric);
      if (at.family === 'numeric') return evalBinary('/', st.value, T.numeric, Decimal.fromInt(st.count), T.numeric);
      return evalBinary('/', st.value, at, BigInt(st.count), T.int8);
    }
    case 'jsonb_agg':
    case 'json_agg': {
      if (st.value === null) return null;
      const j = Jsonb.from(st.value as unknown as JsonValue[]);
      return spec.name === 'json_agg' ? j.toString() : j;
    }
    default:
      return st.value === null ? null : rt.family === at.family || spec.name === 'array_agg' || spec.name === 'string_agg' || rt.family === 'bool' ? st.value : castDatum(st.value, at, rt);
  }
}
