/**
 * The checkers' public surface, and how their verdicts combine.
 *
 * Every checker is a `Checker` (check-result.ts): `check(history) → CheckResult` with
 * `valid: true | false | 'unknown'`. A jepsen-style run passes only when every checker
 * said `true`: composeResults is false if any part is false, else 'unknown' if any part
 * is not true (unknown, or a checker that threw/timed out — record those as 'unknown'),
 * else true. The runner exits 0 only on `valid === true`.
 */
import type { History } from '../history/history.js';
import type { Checker, CheckResult, Validity } from './check-result.js';

export * from './check-result.js';
export * from './linearizable.js';
export * from './elle-append.js';
export * from './graph.js';
export * from './bank.js';
export * from './sets.js';
export * from './monotonic.js';
export * from './sequential.js';
export * from './g2.js';

export interface ComposedResult {
  readonly valid: Validity;
  readonly results: Readonly<Record<string, CheckResult>>;
}

/** True only if every part is exactly true; false if any is false; else 'unknown'. */
export function composeResults(results: Readonly<Record<string, CheckResult>>): ComposedResult {
  const vs = Object.values(results).map((r) => r.valid);
  const valid: Validity = vs.includes(false) ? false : vs.length > 0 && vs.every((v) => v === true) ? true : 'unknown';
  return { valid, results };
}

/** The result recorded for a checker that threw or ran out of time: never a pass. */
export function unknownResult(reason: string): CheckResult {
  return { valid: 'unknown', anomalyTypes: ['checker-error'], anomalies: { 'checker-error': [reason] }, stats: {} };
}

/** Runs several checkers on one history; a throwing checker yields 'unknown'. */
export function checkAll(checkers: readonly Checker[], history: History): ComposedResult {
  const results: Record<string, CheckResult> = {};
  for (const c of checkers) {
    try {
      results[c.name] = c.check(history);
    } catch (e) {
      results[c.name] = unknownResult(`${c.name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return composeResults(results);
}

/** Process exit status for a composed verdict: 0 only when valid is exactly true. */
export function exitStatus(r: { readonly valid: Validity }): number {
  return r.valid === true ? 0 : 1;
}
