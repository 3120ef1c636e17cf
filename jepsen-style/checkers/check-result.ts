/**
 * The uniform contract of every checker: a pure function from a history to a verdict.
 *
 * `valid` is three-valued. `true` only when the checker proved the property for the whole
 * history; `false` when it found a violation (the result explains it); `'unknown'` when it
 * could not decide (search budget exhausted, unusable history). Only `true` is a pass:
 * composeResults (index.ts) and the jepsen runner's exit status treat `'unknown'` as a
 * failure to prove, never as success.
 */
import type { History } from '../history/history.js';

export type Validity = boolean | 'unknown';

export interface CheckResult {
  readonly valid: Validity;
  /** Names of the anomalies found (empty when valid). */
  readonly anomalyTypes: readonly string[];
  /** Examples per anomaly type, each explained for a human. */
  readonly anomalies: Readonly<Record<string, readonly unknown[]>>;
  /** Counts and timings; free-form per checker. */
  readonly stats: Readonly<Record<string, number>>;
}

export interface Checker<R extends CheckResult = CheckResult> {
  readonly name: string;
  check(history: History): R;
}

/** Collects anomaly examples, keeping at most `limit` per type but counting all of them. */
export class AnomalyLog {
  readonly examples: Record<string, unknown[]> = {};
  readonly counts: Record<string, number> = {};
  constructor(private readonly limit = 8) {}

  add(type: string, example: unknown): void {
    this.counts[type] = (this.counts[type] ?? 0) + 1;
    const list = (this.examples[type] ??= []);
    if (list.length < this.limit) list.push(example);
  }

  has(type: string): boolean {
    return (this.counts[type] ?? 0) > 0;
  }

  types(): string[] {
    return Object.keys(this.examples).sort();
  }

  /** Counts as stats entries `anomaly:<type>`. */
  countStats(): Record<string, number> {
    const s: Record<string, number> = {};
    for (const [k, v] of Object.entries(this.counts)) s[`anomaly:${k}`] = v;
    return s;
  }
}
