/**
 * sql/sem/datum.ts — the executor's value representation and its wire I/O.
 *
 * The Datum representation, the text/binary wire formats, casts and
 * comparison are sql/types' (datum.ts, text-format.ts, binary-format.ts,
 * cast.ts, compare.ts); this file is the executor's narrow view of them.
 */
import type { Datum } from '../types/datum.js';
import { T, formatType, type SqlType } from '../types/type.js';
import { cannotCoerce } from '../types/type-error.js';
import { castDatum as castTypes, castContext, checkIntRange, type CastContext } from '../types/cast.js';
import { compareDatums as compareTyped, compareMixed } from '../types/compare.js';
import { encodeText, decodeText } from '../types/text-format.js';
import { encodeBinary, decodeBinary } from '../types/binary-format.js';

export type { Datum };
/** Range-checks an integer result for the int type (22003); int8 results are bigints. */
export function checkInt(t: SqlType, v: bigint | number): number | bigint {
  return checkIntRange(v, t);
}

// ---- wire formats: sql/types ------------------------------------------------------

/** PostgreSQL's text output of a non-null datum of type t (TimeZone UTC). */
export function datumToText(d: Exclude<Datum, null>, t: SqlType): string {
  return encodeText(d, t);
}
export function datumToBinary(d: Exclude<Datum, null>, t: SqlType): Buffer {
  return encodeBinary(d, t);
}
export function datumFromText(s: string, t: SqlType): Exclude<Datum, null> {
  const d = decodeText(s, t);
  if (d === null) throw cannotCoerce('text', formatType(t));
  return d;
}
export function datumFromBinary(b: Uint8Array, t: SqlType): Exclude<Datum, null> {
  const d = decodeBinary(Buffer.from(b.buffer, b.byteOffset, b.byteLength), t);
  if (d === null) throw cannotCoerce('bytea', formatType(t));
  return d;
}

// ---- comparison, casts: sql/types ----------------------------------------------------

/** Total order of two non-null datums of one type `t` (sql/types/compare.ts). */
export function compareDatums(a: Exclude<Datum, null>, b: Exclude<Datum, null>, t: SqlType): number {
  return compareTyped(a, b, t);
}

/** Order of two non-null datums of different numeric types (int/float/numeric), as PostgreSQL's cross-type operators. */
export function compareAcross(a: Exclude<Datum, null>, ta: SqlType, b: Exclude<Datum, null>, tb: SqlType): number {
  return compareMixed(a, ta, b, tb);
}

/**
 * Converts a value of type `from` for storage in a column of type `to`
 * (assignment cast: ints range-checked, numeric(p,s) rounded, varchar(n)
 * 22001 unless only spaces are cut, char(n) padded).
 */
export function assignCast(d: Datum, from: SqlType, to: SqlType): Datum {
  return castTypes(d, from, to, 'assignment');
}

/** An explicit cast (CAST / ::): 42846 when PostgreSQL has no such cast. */
export function castDatum(d: Exclude<Datum, null>, from: SqlType, to: SqlType, mode: CastContext = 'explicit'): Exclude<Datum, null> {
  return castTypes(d, from, to, mode) as Exclude<Datum, null>;
}

export { castContext, type CastContext };
export { T };
