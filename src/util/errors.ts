/**
 * Typed errors for expected outcomes (DESIGN.md §3, "Errors").
 *
 * Every expected failure is a CairnError with:
 *   - code:      a stable, machine-readable identifier ("storage.corruption");
 *                the prefix names the module that raised it;
 *   - retryable: the same request may succeed if sent again unchanged;
 *   - ambiguous: the outcome is unknown — the operation may or may not have
 *                taken effect. An ambiguous error is never reported as
 *                "failed" (SQLSTATE 40003 at the SQL edge).
 *   - sqlState:  the SQLSTATE reported to SQL clients when this error reaches
 *                the pgwire edge (defaults to XX000, internal error).
 *
 * Invariant: retryable and ambiguous are never both true — an operation whose
 * outcome is unknown must not be blindly re-sent.
 */
import { assert } from './assert.js';

export interface CairnErrorOptions {
  readonly retryable?: boolean;
  readonly ambiguous?: boolean;
  readonly sqlState?: string;
  readonly cause?: unknown;
}

export class CairnError extends Error {
  override name = 'CairnError';
  readonly code: string;
  readonly retryable: boolean;
  readonly ambiguous: boolean;
  readonly sqlState: string;

  constructor(code: string, message: string, opts: CairnErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    assert(!(opts.retryable && opts.ambiguous), `${code}: an error cannot be both retryable and ambiguous`);
    this.code = code;
    this.retryable = opts.retryable ?? false;
    this.ambiguous = opts.ambiguous ?? false;
    this.sqlState = opts.sqlState ?? (this.ambiguous ? '40003' : 'XX000');
  }
}

/** The outcome of an operation is unknown: it may have been applied. */
export class AmbiguousResultError extends CairnError {
  override name = 'AmbiguousResultError';
  constructor(message: string, cause?: unknown) {
    super('kv.ambiguous_result', `result is ambiguous: ${message}`, { ambiguous: true, sqlState: '40003', cause });
  }
}

/** Stored bytes that cannot be decoded or fail their checksum. */
export class CorruptionError extends CairnError {
  override name = 'CorruptionError';
  constructor(message: string, cause?: unknown) {
    super('storage.corruption', message, { sqlState: 'XX001', cause });
  }
}

export function isCairnError(e: unknown): e is CairnError {
  return e instanceof CairnError;
}
