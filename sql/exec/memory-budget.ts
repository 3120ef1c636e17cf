/**
 * sql/exec/memory-budget.ts — the per-query memory budget.
 *
 * Every buffering operator (hash tables, sorts, aggregates, DISTINCT, set
 * operations, subquery and CTE results) charges an estimate of each row it
 * keeps to the query's account; when the total passes the budget the query
 * fails with 53200 (out_of_memory) and its buffers become garbage, so the
 * node keeps serving. The account lives as long as the statement's EvalEnv
 * (one per execution), so all operators of one query share it.
 *
 * Budget: the session setting `query_memory_budget` (PostgreSQL-style size:
 * '64MB', '512kB', bytes), default 64 MiB. The estimate is deliberately
 * simple: 48 bytes per row plus 16 per value plus string / buffer lengths.
 */
import { SqlError } from '../parser/sql-error.js';
import type { Datum } from '../sem/datum.js';
import type { EvalEnv } from '../sem/expr.js';

export const DEFAULT_QUERY_MEMORY_BUDGET = 64 * 1024 * 1024;

export class QueryMemory {
  used = 0;
  constructor(readonly limit: number) {}

  /** Charges `bytes` to the query; 53200 once the budget is exceeded. */
  grow(bytes: number, what: string): void {
    this.used += bytes;
    if (this.used > this.limit) {
      const used = this.used;
      this.used -= bytes;
      throw new SqlError('sql.memory_budget_exceeded', '53200', `memory budget exceeded: ${what} needs more than ${formatBytes(this.limit)} (at ${formatBytes(used)})`, {
        hint: 'Raise query_memory_budget or make the query buffer fewer rows.',
      });
    }
  }

  shrink(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}

const accounts = new WeakMap<EvalEnv, QueryMemory>();

/** The memory account of the query evaluating under `env`. */
export function queryMemory(env: EvalEnv): QueryMemory {
  let m = accounts.get(env);
  if (m === undefined) {
    m = new QueryMemory(budgetOf(env));
    accounts.set(env, m);
  }
  return m;
}

function budgetOf(env: EvalEnv): number {
  let v: string;
  try {
    v = env.setting('query_memory_budget');
  } catch {
    return DEFAULT_QUERY_MEMORY_BUDGET;
  }
  return parseBytes(v) ?? DEFAULT_QUERY_MEMORY_BUDGET;
}

const UNITS: Record<string, number> = { '': 1, b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** '64MB' / '512kB' / '1048576' → bytes; undefined when malformed. */
export function parseBytes(s: string): number | undefined {
  const m = /^\s*(\d+)\s*([a-zA-Z]*)\s*$/.exec(s);
  if (m === null) return undefined;
  const unit = UNITS[(m[2] as string).toLowerCase()];
  return unit === undefined ? undefined : Number(m[1]) * unit;
}

function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} B`;
}

/** Estimated bytes a buffered row holds. */
export function rowBytes(row: readonly Datum[]): number {
  let n = 48 + 16 * row.length;
  for (let i = 0; i < row.length; i++) {
    const d = row[i];
    if (typeof d === 'string') n += d.length * 2;
    else if (d instanceof Uint8Array) n += d.length;
    else if (Array.isArray(d)) n += 16 * d.length;
  }
  return n;
}
