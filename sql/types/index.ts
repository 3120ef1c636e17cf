/**
 * sql/types: SQL types, their datums, text and binary wire formats, casts and
 * comparison. The public surface other sql/ modules import.
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
