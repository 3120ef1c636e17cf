/**
 * sql/types: SQL types (OIDs, typmods, names), their datums, text and binary
 * wire formats, casts, comparison/hash keys/NULL logic and arithmetic
 * operators, with PostgreSQL 15's semantics and SQLSTATEs. The public
 * surface other sql/ modules import.
 *
 * Ownership: sql/types; pure functions and immutable values, no I/O (time
 * zones come from Intl, 'now' from the caller's context).
 */
export * from './type.js';
export * from './type-error.js';
export * from './decimal.js';
export * from './interval.js';
export * from './datum.js';
export * from './datetime.js';
export * from './text-format.js';
export * from './binary-format.js';
export * from './cast.js';
export * from './compare.js';
export * from './arith.js';
export * from './wire-format.js';
