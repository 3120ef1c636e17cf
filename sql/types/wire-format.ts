/**
 * One entry point for pgwire: a column value or a Bind parameter in either
 * wire format (0 = text, 1 = binary), NULL as null. DataRow columns are
 * `Buffer | null`; Bind parameters arrive the same way.
 *
 *   encodeWire(d, t, format, ctx) → Buffer | null     (DataRow)
 *   decodeWire(buf, t, format, ctx) → Datum            (Bind)
 *
 * A text-format parameter of a varchar(n)/numeric(p,s) type is not length-
 * checked here: parameters are typed without typmods (OIDs only); the
 * planner's assignment cast applies the column's typmod.
 */
import { decodeBinary, decodeUtf8, encodeBinary } from './binary-format.js';
import type { Datum } from './datum.js';
import { DEFAULT_TEXT_CONTEXT, decodeText, encodeTextBytes, type TextFormatContext } from './text-format.js';
import type { SqlType } from './type.js';

export type WireFormat = 0 | 1;

export function encodeWire(d: Datum, t: SqlType, format: WireFormat, ctx: TextFormatContext = DEFAULT_TEXT_CONTEXT): Buffer | null {
  if (d === null) return null;
  return format === 1 ? encodeBinary(d, t) : encodeTextBytes(d, t, ctx);
}

export function decodeWire(buf: Buffer | null, t: SqlType, format: WireFormat, ctx: TextFormatContext = DEFAULT_TEXT_CONTEXT): Datum {
  if (buf === null) return null;
  return format === 1 ? decodeBinary(buf, t) : decodeText(decodeUtf8(buf), t, ctx);
}
