/**
 * sql/rowenc/key-containers.ts — order-preserving byte strings for the
 * container types that can be key columns: jsonb (PostgreSQL's jsonb btree
 * order, sql/types/compare.ts compareJson) and arrays (element-wise, a NULL
 * element after any value, then length: compareArrays). row-codec.ts embeds
 * each string with the tuple encoding's bytes kind (escaped, terminated), so
 * it can be followed by further key columns and read in either direction.
 * Neither is decoded back from the key: both are composite key columns, their
 * exact value is in the row value (row-codec.ts).
 *
 * jsonb (a top-level scalar is a one-element "raw scalar" array):
 *
 *   top    0x04 | n u32 BE | 0x00 raw scalar / 0x01 array | value…    (arrays)
 *          0x05 | n u32 BE | (key, value)… in the object's own order   (objects)
 *   value  0x00                                   null
 *          0x01 | tuple-encoded string            string (code point order)
 *          0x02 | tuple-encoded bytes of key-decimal.ts   number
 *          0x03 | 0x00 false, 0x01 true           boolean
 *          0x04 | n u32 BE | value…               array (length first)
 *          0x05 | n u32 BE | (string, value)…     object (size first)
 *
 * Every value is self-delimiting, so equal-length containers compare
 * element by element; the rank bytes give null < string < number < boolean
 * < array < object, and '[]' (0x04, n = 0) sorts before any scalar.
 *
 * array:
 *
 *   { 0x01 | element | 0x02 (NULL) }… | 0x00
 *   element: the element type's tuple key encoding (ascending), or for a
 *   nested array (a multi-dimensional one) this same encoding.
 *
 * A NULL element (0x02) sorts after any element (0x01); the terminator 0x00
 * before both, so a proper prefix sorts first.
 *
 * Ownership: pure functions over their inputs; results are fresh buffers.
 */
import { KeyWriter } from '../../storage/encoding/index.js';
import type { Datum, JsonValue } from '../types/datum.js';
import { Decimal } from '../types/decimal.js';
import { encodeDecimalKey } from './key-decimal.js';

const U32 = Buffer.alloc(4);

function appendU32(w: KeyWriter, n: number): void {
  U32.writeUInt32BE(n, 0);
  w.appendRaw(U32);
}

function appendJsonValue(w: KeyWriter, v: JsonValue): void {
  if (v === null) {
    w.appendByte(0x00);
  } else if (typeof v === 'string') {
    w.appendByte(0x01).appendString(v);
  } else if (v instanceof Decimal) {
    w.appendByte(0x02).appendBytes(encodeDecimalKey(v));
  } else if (typeof v === 'boolean') {
    w.appendByte(0x03).appendByte(v ? 0x01 : 0x00);
  } else if (Array.isArray(v)) {
    const a = v as readonly JsonValue[];
    w.appendByte(0x04);
    appendU32(w, a.length);
    for (const e of a) appendJsonValue(w, e);
  } else {
    const o = v as ReadonlyMap<string, JsonValue>;
    w.appendByte(0x05);
    appendU32(w, o.size);
    for (const [k, e] of o) {
      w.appendString(k);
      appendJsonValue(w, e);
    }
  }
}

/** The order-preserving bytes of a jsonb value (see the header). */
export function encodeJsonbKey(v: JsonValue): Buffer {
  const w = new KeyWriter();
  if (v !== null && typeof v === 'object' && !(v instanceof Decimal) && !Array.isArray(v)) {
    appendJsonValue(w, v);
  } else {
    const raw = !Array.isArray(v);
    const a = raw ? [v] : (v as readonly JsonValue[]);
    w.appendByte(0x04);
    appendU32(w, a.length);
    w.appendByte(raw ? 0x00 : 0x01);
    for (const e of a) appendJsonValue(w, e);
  }
  return Buffer.from(w.finish());
}

/** Appends one non-NULL array element in its type's ascending key encoding. */
export type ElementAppender = (w: KeyWriter, d: Datum) => void;

function appendArray(w: KeyWriter, a: readonly Datum[], elem: ElementAppender): void {
  for (const e of a) {
    if (e === null) {
      w.appendByte(0x02);
      continue;
    }
    w.appendByte(0x01);
    if (Array.isArray(e)) appendArray(w, e as readonly Datum[], elem);
    else elem(w, e);
  }
  w.appendByte(0x00);
}

/** The order-preserving bytes of an array (see the header). */
export function encodeArrayKey(a: readonly Datum[], elem: ElementAppender): Buffer {
  const w = new KeyWriter();
  appendArray(w, a, elem);
  return Buffer.from(w.finish());
}
