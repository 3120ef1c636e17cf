/**
 * The order-preserving key encoding and value varints (DESIGN.md §3, "Keys"):
 * the public surface `storage/keys.ts` and `sql/` import. See tuple.ts for the
 * byte layout and comparison semantics, varint.ts for value varints.
 */
export * from './bytes.js';
export * from './tuple.js';
export * from './varint.js';
