/**
 * sql/rowenc/row-codec.ts — a table row ⇄ its primary-index KV pair.
 *
 * Key (storage/keys.ts + storage/encoding tuple encoding, order-preserving):
 *
 *     /Table/<tableId>/<indexId=1>/<pk col 1>/<pk col 2>/…
 *     each pk column ascending or descending as the index declares;
 *     bool→bool, int/oid/date/timestamp→int, float→float, text/uuid→string,
 *     bytea→bytes, numeric→bytes of key-decimal.ts (order-preserving),
 *     interval→the same of its span in µs (months as 30 days: PostgreSQL's
 *     interval_cmp_value, so '1 mon' = '30 days' as keys too).
 *     jsonb and arrays→bytes of key-containers.ts (PostgreSQL's orders).
 *     Not key-encodable: json (42704, as PostgreSQL: no btree operator
 *     class), nor arrays of it.
 *
 *     Composite key columns (CockroachDB's term): numeric and interval keys
 *     lose what their order ignores (the display scale of 1.50; '1 day' vs
 *     '24:00:00'), so when a value differs from what its key decodes to it is
 *     also written into the row value, under its column id, and decodeValue
 *     (always after decodeKey) puts it back. jsonb and array keys are not
 *     decoded from the key at all: their value is always in the row value.
 *
 * Value: every non-key column that is not NULL, in column-id order:
 *
 *     +------+--------------------------------------------------+
 *     | 0x01 | { Δcolumn-id uvarint | tag byte | payload } …     |
 *     +------+--------------------------------------------------+
 *     tag  payload
 *     0x01 false       0x02 true          —
 *     0x03 int         zig-zag varint (number or bigint)
 *     0x04 float       8 bytes IEEE-754 big-endian
 *     0x05 bytes/str   uvarint length | bytes (UTF-8 for strings; other
 *                      families — interval, jsonb, arrays — their text form)
 *     0x06 numeric     uvarint length | decimal text
 *   NULL columns are omitted; the leading format byte keeps the value
 *   non-empty (an empty value is a tombstone at the KV layer). Column ids
 *   are deltas from the previous one (the first from 0), so ids of dropped
 *   columns cost nothing and unknown ids are skipped (forward compatible).
 *
 * Decoding reads only the columns a query needs (`needed` mask); the others
 * are skipped by length.
 *
 * Ownership: the codec is immutable, built once per table descriptor version
 * and cached with it. Decoded strings/bytes are copies (never views into the
 * KV buffers).
 */
import { KeyReader, KeyWriter, getUvarint, getVarint, getVarintBig, type Direction } from '../../storage/encoding/index.js';
import { appendTableIndexPrefix, tableIndexPrefix } from '../../storage/keys.js';
import { CorruptionError } from '../../src/util/errors.js';
import { Decimal } from '../types/decimal.js';
import { typeFromOid, Oid, type SqlType } from '../types/type.js';
import { SqlError, unimplemented } from '../parser/sql-error.js';
import { Interval } from '../types/interval.js';
import { decodeDecimalKey, encodeDecimalKey } from './key-decimal.js';
import { encodeArrayKey, encodeJsonbKey } from './key-containers.js';
import type { Jsonb } from '../types/datum.js';
import { datumFromText, datumToText, type Datum } from '../sem/datum.js';
import type { ColumnType, TableDesc } from '../catalog/descriptor.js';

const ROW_FORMAT_V1 = 0x01;
const TAG_FALSE = 0x01;
const TAG_TRUE = 0x02;
const TAG_INT = 0x03;
const TAG_FLOAT = 0x04;
const TAG_BYTES = 0x05;
const TAG_NUMERIC = 0x06;

/** The SqlType of a stored column type. */
export function sqlTypeOf(ct: ColumnType): SqlType {
  const base = typeFromOid(ct.oid);
  if (base === undefined) throw new CorruptionError(`rowenc: unknown column type oid ${ct.oid}`);
  return ct.typmod === base.typmod ? base : Object.freeze({ ...base, typmod: ct.typmod });
}

/** Families held as a JS string (stored as UTF-8); other families go through their text form. */
function isStringFamily(t: SqlType): boolean {
  return t.family === 'string' || t.family === 'uuid' || t.family === 'json';
}

type KeyKind = 'bool' | 'int' | 'float' | 'string' | 'bytes' | 'decimal' | 'interval' | 'jsonb' | 'array';

function keyKindOf(t: SqlType): KeyKind {
  switch (t.family) {
    case 'bool':
      return 'bool';
    case 'numeric':
      return 'decimal';
    case 'interval':
      return 'interval';
    case 'jsonb':
      return 'jsonb';
    case 'array':
      keyKindOf(t.arrayElem as SqlType); // the elements must be key-encodable too
      return 'array';
    case 'int':
    case 'oid':
    case 'date':
    case 'timestamp':
    case 'timestamptz':
      return 'int';
    case 'float':
      return 'float';
    case 'bytes':
      return 'bytes';
    case 'string':
    case 'uuid':
      return 'string';
    case 'json':
      throw new SqlError('sql.undefined_object', '42704', 'data type json has no default operator class for access method "btree"', {
        hint: 'You must specify an operator class for the index or define a default operator class for the data type.',
      });
    default:
      throw unimplemented(`key column of type ${t.family}`);
  }
}

/** Appends a non-NULL key datum of kind `kind` (type `t`) in direction `dir`. */
function appendKeyValue(w: KeyWriter, kind: KeyKind, t: SqlType, d: Datum, dir: Direction): void {
  switch (kind) {
    case 'bool':
      w.appendBool(d as boolean, dir);
      return;
    case 'int':
      w.appendInt(d as number | bigint, dir);
      return;
    case 'float':
      w.appendFloat(d as number, dir);
      return;
    case 'string':
      w.appendString(d as string, dir);
      return;
    case 'bytes':
      w.appendBytes(d as Buffer, dir);
      return;
    case 'decimal':
      w.appendBytes(encodeDecimalKey(d as Decimal), dir);
      return;
    case 'interval':
      w.appendBytes(encodeDecimalKey(Decimal.of((d as Interval).span())), dir);
      return;
    case 'jsonb':
      w.appendBytes(encodeJsonbKey((d as Jsonb).value), dir);
      return;
    case 'array': {
      const et = t.arrayElem as SqlType;
      const ek = keyKindOf(et);
      w.appendBytes(encodeArrayKey(d as readonly Datum[], (ew, e) => appendKeyValue(ew, ek, et, e, 'asc')), dir);
      return;
    }
  }
}

/** The value a composite key column's key decodes to, when it differs from `d` (else undefined). */
function compositeRemainder(kind: KeyKind, d: Datum): Datum | undefined {
  if (kind === 'decimal') {
    const v = d as Decimal;
    return v.isFinite() && v.scale > 0 && v.stripTrailingZeros().scale !== v.scale ? v : undefined;
  }
  if (kind === 'interval') {
    const v = d as Interval;
    return v.months !== 0 || v.days !== 0 ? v : undefined;
  }
  // Not decoded from the key at all (key-containers.ts): always in the value.
  if (kind === 'jsonb' || kind === 'array') return d;
  return undefined;
}

function isComposite(kind: KeyKind): boolean {
  return kind === 'decimal' || kind === 'interval' || kind === 'jsonb' || kind === 'array';
}

export class RowCodec {
  readonly types: readonly SqlType[];
  /** Ordinals (positions in table.columns) of the primary key columns. */
  readonly pkOrdinals: readonly number[];
  readonly pkDirs: readonly Direction[];
  readonly pkKinds: readonly KeyKind[];
  /** Non-key ordinals in column-id order. */
  private readonly valueOrdinals: readonly number[];
  private readonly valueIds: readonly number[];
  /**
   * What encodeValue writes, in column-id order: the value columns and the
   * composite key columns (see the header; their KeyKind, else undefined).
   */
  private readonly encOrdinals: readonly number[];
  private readonly encIds: readonly number[];
  private readonly encComposite: readonly (KeyKind | undefined)[];
  /** column id → ordinal (−1: not a value column). */
  private readonly ordByValueId: Int32Array;
  readonly indexPrefix: Buffer;
  private readonly w = new KeyWriter();
  private readonly r = new KeyReader(Buffer.alloc(0));

  constructor(readonly table: TableDesc) {
    this.types = table.columns.map((c) => sqlTypeOf(c.type));
    const ordOfId = new Map(table.columns.map((c, i) => [c.id, i]));
    this.pkOrdinals = table.primaryIndex.keyColumnIds.map((id) => ordOfId.get(id) as number);
    this.pkDirs = table.primaryIndex.directions;
    this.pkKinds = this.pkOrdinals.map((o) => keyKindOf(this.types[o] as SqlType));
    const pkSet = new Set(this.pkOrdinals);
    const vals = table.columns.map((c, i) => ({ id: c.id, i })).filter((x) => !pkSet.has(x.i));
    vals.sort((a, b) => a.id - b.id);
    this.valueOrdinals = vals.map((x) => x.i);
    this.valueIds = vals.map((x) => x.id);
    this.ordByValueId = new Int32Array(table.nextColumnId + 1).fill(-1);
    for (const v of vals) this.ordByValueId[v.id] = v.i;
    const enc: { ord: number; id: number; kind: KeyKind | undefined }[] = vals.map((v) => ({ ord: v.i, id: v.id, kind: undefined }));
    this.pkKinds.forEach((kind, p) => {
      if (!isComposite(kind)) return;
      const ord = this.pkOrdinals[p] as number;
      const id = (table.columns[ord] as { id: number }).id;
      enc.push({ ord, id, kind });
      this.ordByValueId[id] = ord;
    });
    enc.sort((a, b) => a.id - b.id);
    this.encOrdinals = enc.map((e) => e.ord);
    this.encIds = enc.map((e) => e.id);
    this.encComposite = enc.map((e) => e.kind);
    this.indexPrefix = tableIndexPrefix(table.id, table.primaryIndex.id);
  }

  /** Appends one key datum of primary-key position `p`. */
  appendKeyDatum(w: KeyWriter, p: number, d: Datum): void {
    const dir = this.pkDirs[p] as Direction;
    if (d === null) {
      w.appendNull(dir);
      return;
    }
    appendKeyValue(w, this.pkKinds[p] as KeyKind, this.types[this.pkOrdinals[p] as number] as SqlType, d, dir);
  }

  /** The primary key of a full row. */
  encodeKey(row: readonly Datum[]): Buffer {
    const w = this.w.reset();
    appendTableIndexPrefix(w, this.table.id, this.table.primaryIndex.id);
    for (let p = 0; p < this.pkOrdinals.length; p++) this.appendKeyDatum(w, p, row[this.pkOrdinals[p] as number] as Datum);
    return w.finish();
  }

  /** A key from a prefix of primary-key values (span bounds). */
  encodeKeyPrefix(values: readonly Datum[]): Buffer {
    const w = this.w.reset();
    appendTableIndexPrefix(w, this.table.id, this.table.primaryIndex.id);
    for (let p = 0; p < values.length; p++) this.appendKeyDatum(w, p, values[p] as Datum);
    return w.finish();
  }

  encodeValue(row: readonly Datum[]): Buffer {
    const w = this.w.reset();
    w.appendByte(ROW_FORMAT_V1);
    let prev = 0;
    const n = this.encOrdinals.length;
    for (let j = 0; j < n; j++) {
      const ord = this.encOrdinals[j] as number;
      let d = row[ord] as Datum;
      if (d === null) continue;
      const kind = this.encComposite[j];
      if (kind !== undefined) {
        const rest = compositeRemainder(kind, d);
        if (rest === undefined || rest === null) continue;
        d = rest;
      }
      const id = this.encIds[j] as number;
      w.appendUvarint(id - prev);
      prev = id;
      const t = this.types[ord] as SqlType;
      switch (t.family) {
        case 'bool':
          w.appendByte(d ? TAG_TRUE : TAG_FALSE);
          break;
        case 'int':
        case 'date':
        case 'timestamp':
        case 'timestamptz':
          w.appendByte(TAG_INT).appendVarint(d as number | bigint);
          break;
        case 'float': {
          w.appendByte(TAG_FLOAT);
          const b = Buffer.allocUnsafe(8);
          b.writeDoubleBE(d as number);
          w.appendRaw(b);
          break;
        }
        case 'numeric': {
          const s = Buffer.from((d as Decimal).toString(), 'latin1');
          w.appendByte(TAG_NUMERIC).appendUvarint(s.length).appendRaw(s);
          break;
        }
        case 'bytes':
          w.appendByte(TAG_BYTES).appendUvarint((d as Buffer).length).appendRaw(d as Buffer);
          break;
        default: {
          const s = isStringFamily(t) ? (d as string) : datumToText(d, t);
          const len = Buffer.byteLength(s, 'utf8');
          w.appendByte(TAG_BYTES).appendUvarint(len).appendUtf8(s, len);
          break;
        }
      }
    }
    // Copy out of the writer's slab: values outlive the next statement.
    return Buffer.from(w.finish());
  }

  /** Decodes the primary-key columns of `key` into `out` (by ordinal). */
  decodeKey(key: Buffer, out: Datum[]): void {
    const r = this.r.reset(key, this.indexPrefix.length);
    for (let p = 0; p < this.pkOrdinals.length; p++) {
      const ord = this.pkOrdinals[p] as number;
      const t = this.types[ord] as SqlType;
      switch (this.pkKinds[p] as KeyKind) {
        case 'bool':
          out[ord] = r.readBool();
          break;
        case 'int': {
          const v = t.oid === Oid.int8 ? r.readIntBig() : r.readInt();
          out[ord] = v;
          break;
        }
        case 'float':
          out[ord] = r.readFloat();
          break;
        case 'string':
          out[ord] = r.readString();
          break;
        case 'bytes': {
          const b = r.readBytes();
          out[ord] = b === null ? null : Buffer.from(b);
          break;
        }
        case 'decimal': {
          const b = r.readBytes();
          out[ord] = b === null ? null : decodeDecimalKey(b);
          break;
        }
        case 'interval': {
          const b = r.readBytes();
          // Only a span of pure µs is canonical; other intervals come back from the value (composite).
          out[ord] = b === null ? null : new Interval(0, 0, decodeDecimalKey(b).toNumber());
          break;
        }
        case 'jsonb':
        case 'array':
          // Composite, always: decodeValue (which follows) supplies the value.
          r.readBytes();
          out[ord] = null;
          break;
      }
    }
  }

  /**
   * Decodes the value columns into `out` (by ordinal); columns absent from
   * the value are set to NULL. `needed` (by ordinal) limits the work.
   */
  decodeValue(value: Buffer, out: Datum[], needed?: Uint8Array): void {
    for (const ord of this.valueOrdinals) out[ord] = null;
    if (value[0] !== ROW_FORMAT_V1) throw new CorruptionError('rowenc: unknown row format');
    let pos = 1;
    let id = 0;
    const n = value.length;
    while (pos < n) {
      const dv = getUvarint(value, pos);
      id += dv.value;
      pos = dv.next;
      const tag = value[pos++];
      const ord = id < this.ordByValueId.length ? (this.ordByValueId[id] as number) : -1;
      const want = ord >= 0 && (needed === undefined || needed[ord] === 1);
      switch (tag) {
        case TAG_FALSE:
        case TAG_TRUE:
          if (want) out[ord] = tag === TAG_TRUE;
          break;
        case TAG_INT: {
          if (!want) {
            // Skip the varint without decoding it (it may not fit a number).
            while (pos < n && ((value[pos] as number) & 0x80) !== 0) pos++;
            pos++;
          } else if ((this.types[ord] as SqlType).oid === Oid.int8) {
            const v = getVarintBig(value, pos);
            out[ord] = v.value;
            pos = v.next;
          } else {
            const v = getVarint(value, pos);
            out[ord] = v.value;
            pos = v.next;
          }
          break;
        }
        case TAG_FLOAT:
          if (want) out[ord] = value.readDoubleBE(pos);
          pos += 8;
          break;
        case TAG_BYTES:
        case TAG_NUMERIC: {
          const len = getUvarint(value, pos);
          const start = len.next;
          const end = start + len.value;
          if (end > n) throw new CorruptionError('rowenc: truncated row value');
          if (want) {
            const t = this.types[ord] as SqlType;
            if (tag === TAG_NUMERIC) out[ord] = Decimal.parseOrThrow(value.toString('latin1', start, end));
            else if (t.family === 'bytes') out[ord] = Buffer.from(value.subarray(start, end));
            else if (isStringFamily(t)) out[ord] = value.toString('utf8', start, end);
            else out[ord] = datumFromText(value.toString('utf8', start, end), t);
          }
          pos = end;
          break;
        }
        default:
          throw new CorruptionError(`rowenc: unknown value tag ${tag}`);
      }
    }
  }
}
