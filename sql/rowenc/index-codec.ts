/**
 * sql/rowenc/index-codec.ts — a table row ⇄ its entry in one secondary index.
 *
 * Layout (CockroachDB's): the key is the index's key columns in their
 * declared directions, followed by the primary-key columns the index does not
 * already hold (the "PK suffix"), which makes every entry unique:
 *
 *     non-unique, or unique with a NULL key column ("long form"):
 *       key   /Table/<tableId>/<indexId>/<idx col 1>…/<idx col n>/<pk suffix…>
 *       value 0x01 | STORING columns (row-codec.ts value format)
 *
 *     unique without NULLs ("short form"):
 *       key   /Table/<tableId>/<indexId>/<idx col 1>…/<idx col n>
 *       value 0x01 | PK suffix columns + STORING columns (row-codec value format)
 *
 * A unique entry is written with cput(expected = null): a second row with the
 * same non-NULL key values fails the cput and the statement reports 23505.
 * NULLs never conflict (PostgreSQL's NULLS DISTINCT), which is why entries
 * with a NULL key column take the long form. Both forms share the index
 * prefix; a span over an equality prefix of the key columns covers both.
 *
 * Implementation: each form is a RowCodec over a synthetic descriptor whose
 * "primary index" is the index's key (+ suffix), with the table's columns in
 * the same ordinals — so decoded entries land in table-ordinal rows directly.
 *
 * Ownership: immutable, built once per table descriptor version (catalog
 * cache) through `indexCodecs(entry)`.
 */
import type { Datum } from '../sem/datum.js';
import type { IndexDesc, TableDesc } from '../catalog/descriptor.js';
import { RowCodec } from './row-codec.js';

export interface IndexEntry {
  readonly key: Buffer;
  readonly value: Buffer;
  /** True when the key must not exist yet (unique index, no NULL key column). */
  readonly unique: boolean;
}

export class IndexCodec {
  /** Ordinals of the index key columns. */
  readonly keyOrdinals: readonly number[];
  /** Every column ordinal an entry holds (key, PK, STORING): index-only scans need no more. */
  readonly covered: Uint8Array;
  private readonly long: RowCodec;
  private readonly short: RowCodec | undefined;
  /** Ordinals cleared before encoding a long-form / short-form value. */
  private readonly dropLong: readonly number[];
  private readonly dropShort: readonly number[];

  constructor(
    readonly table: TableDesc,
    readonly index: IndexDesc,
    readonly primary: RowCodec,
  ) {
    const ordOfId = new Map(table.columns.map((c, i) => [c.id, i]));
    this.keyOrdinals = index.keyColumnIds.map((id) => ordOfId.get(id) as number);
    const pkIds = table.primaryIndex.keyColumnIds;
    const suffix = pkIds.filter((id) => !index.keyColumnIds.includes(id));
    const suffixDirs = suffix.map((id) => table.primaryIndex.directions[pkIds.indexOf(id)] ?? 'asc');
    this.long = new RowCodec({
      ...table,
      primaryIndex: { ...index, keyColumnIds: [...index.keyColumnIds, ...suffix], directions: [...index.directions, ...suffixDirs] },
    });
    this.short = index.unique ? new RowCodec({ ...table, primaryIndex: index }) : undefined;
    const stored = new Set(index.storeColumnIds);
    const inLong = new Set([...index.keyColumnIds, ...suffix, ...stored]);
    this.dropLong = table.columns.map((c, i) => (inLong.has(c.id) ? -1 : i)).filter((i) => i >= 0);
    this.dropShort = this.dropLong;
    this.covered = new Uint8Array(table.columns.length);
    table.columns.forEach((c, i) => {
      if (inLong.has(c.id)) this.covered[i] = 1;
    });
  }

  private project(row: readonly Datum[], drop: readonly number[]): Datum[] {
    const p = row.slice();
    for (const o of drop) p[o] = null;
    return p;
  }

  private hasNullKey(row: readonly Datum[]): boolean {
    for (const o of this.keyOrdinals) if (row[o] === null) return true;
    return false;
  }

  /** The index entry of a full row. */
  entry(row: readonly Datum[]): IndexEntry {
    if (this.short !== undefined && !this.hasNullKey(row)) {
      return { key: this.short.encodeKey(row), value: this.short.encodeValue(this.project(row, this.dropShort)), unique: true };
    }
    return { key: this.long.encodeKey(row), value: this.long.encodeValue(this.project(row, this.dropLong)), unique: false };
  }

  /** A key from a prefix of index key values (span bounds). */
  encodeKeyPrefix(values: readonly Datum[]): Buffer {
    return this.long.encodeKeyPrefix(values);
  }

  /** Decodes an entry into `out` (table ordinals): key, PK and STORING columns; others NULL. */
  decodeEntry(key: Buffer, value: Buffer, out: Datum[]): void {
    if (this.short !== undefined) {
      this.short.decodeKey(key, out);
      if (!this.hasNullKey(out)) {
        this.short.decodeValue(value, out);
        return;
      }
    }
    this.long.decodeKey(key, out);
    this.long.decodeValue(value, out);
  }
}

const cache = new WeakMap<TableDesc, readonly IndexCodec[]>();

/** The codecs of a table's secondary indexes (every state), cached per descriptor object. */
export function indexCodecs(table: TableDesc, primary: RowCodec): readonly IndexCodec[] {
  let c = cache.get(table);
  if (c === undefined) {
    c = table.indexes.map((ix) => new IndexCodec(table, ix, primary));
    cache.set(table, c);
  }
  return c;
}
