/**
 * Invariant checks. An `assert` failure is a bug in Cairn, never an expected
 * outcome: it throws an AssertionError that callers must not catch, and a
 * node process that sees one crashes (DESIGN.md §3, "Errors"). Expected
 * outcomes are typed errors (see errors.ts).
 */

export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

/** Throws AssertionError when `cond` is falsy. */
export function assert(cond: unknown, message = 'assertion failed'): asserts cond {
  if (!cond) throw new AssertionError(message);
}

/** Marks the unreachable branch of an exhaustive switch over a tagged union. */
export function assertNever(value: never, message = 'unexpected value'): never {
  throw new AssertionError(`${message}: ${JSON.stringify(value)}`);
}
