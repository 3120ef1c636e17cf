/**
 * Classifying a client error into an operation outcome — the rule that keeps checkers
 * honest (DESIGN.md §6): an operation is `fail` only when it certainly did NOT take
 * effect; whenever that is not certain it is `info` (indeterminate).
 *
 *   error                                               outcome
 *   ──────────────────────────────────────────────────  ──────────────────────────────
 *   SQLSTATE 40003 (statement completion unknown)        info
 *   CairnError with ambiguous = true                      info
 *   SQLSTATE 40001 / 40P01 (serialization, deadlock)      fail — the txn was aborted
 *   SQLSTATE classes 22, 23, 42, 0A, 25 (data, constraint,
 *     syntax, unsupported, invalid txn state)             fail — rejected, nothing written
 *   SQLSTATE 57P03 (cannot_connect_now: the node is
 *     starting, SQL not mounted — no session exists)      fail
 *   CairnError with retryable = true                      fail
 *   connection errors (08xxx, ECONNRESET, EPIPE,
 *     ECONNREFUSED*, socket closed), timeouts, 57014
 *     (statement cancelled), 57P01 (shutdown)             info — unless readOnly
 *   anything else                                         info — unless readOnly
 *
 * `readOnly`: an operation that writes nothing can be reported `fail` on any error — it
 * had no effect either way (and checkers drop failed and indeterminate reads alike).
 * *ECONNREFUSED before anything was sent is certainly not applied; pass `notSent`.
 */
import { isCairnError } from '../../src/util/index.js';

export interface OutcomeContext {
  /** The operation writes nothing. */
  readonly readOnly?: boolean;
  /** The request certainly never left the client (e.g. connect failed). */
  readonly notSent?: boolean;
}

const DEFINITE_CLASSES = new Set(['22', '23', '42', '0A', '25']);

/** The SQLSTATE of a pg / postgres.js / Cairn error, if it carries one. */
export function sqlStateOf(e: unknown): string | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const r = e as Record<string, unknown>;
  if (isCairnError(e)) return e.sqlState;
  const code = r['code'];
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

export function outcomeOfError(e: unknown, ctx: OutcomeContext = {}): 'fail' | 'info' {
  if (ctx.readOnly || ctx.notSent) return 'fail';
  if (isCairnError(e)) {
    if (e.ambiguous) return 'info';
    if (e.retryable) return 'fail';
  }
  const state = sqlStateOf(e);
  if (state === undefined) return 'info';
  if (state === '40003') return 'info';
  if (state === '40001' || state === '40P01' || state === '57P03') return 'fail';
  if (DEFINITE_CLASSES.has(state.slice(0, 2))) return 'fail';
  return 'info';
}
