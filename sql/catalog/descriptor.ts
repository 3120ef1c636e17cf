/**
 * sql/catalog/descriptor.ts — database and table descriptors and their stored form.
 *
 * Descriptors live in the system keyspace (storage/keys.ts):
 *     descriptorKey(id)               → encoded descriptor (this file)
 *     namespaceKey(0, dbName)         → database id   (uvarint)
 *     namespaceKey(dbId, tableName)   → table id      (uvarint)   schema "public" only
 *     namespaceKey(USERS_PARENT_ID, user) → SCRAM credential text (users.ts)
 *     descriptorKey(SCHEMA_VERSION_ID = 0) → the cluster's schema version (uvarint)
 *     DESC_ID_GENERATOR_KEY           → the last descriptor id handed out (uvarint)
 *
 * Stored form: not on the hot path (descriptors are cached, catalog.ts), so
 * it is a format-version byte followed by UTF-8 JSON of the descriptor:
 *
 *     +------+---------------------------+
 *     | 0x01 | JSON (UTF-8) …            |
 *     +------+---------------------------+
 *
 * Invariants:
 *   - column ids and index ids are never reused within a table (nextColumnId,
 *     nextIndexId only grow), so encoded rows stay decodable across ALTERs;
 *   - the primary index is index id 1; secondary indexes (issue 7) get ids ≥ 2
 *     and store `keyColumnIds` + the primary key columns as the key suffix;
 *   - `version` grows by one on every change of the descriptor.
 * DEFAULT and CHECK expressions are stored as SQL text and parsed on load.
 */
import { CorruptionError } from '../../src/util/errors.js';
import type { Direction } from '../../storage/encoding/index.js';
import type { FkAction } from '../parser/ast.js';

export const SCHEMA_VERSION_ID = 0;
export const SYSTEM_DATABASE_ID = 1;
export const USERS_PARENT_ID = 2;
export const DEFAULTDB_ID = 50;
export const POSTGRES_ID = 51;
/** The first id handed out to user descriptors. */
export const FIRST_USER_DESC_ID = 100;
export const PRIMARY_INDEX_ID = 1;

export interface ColumnType {
  readonly oid: number;
  readonly typmod: number;
}

export interface ColumnDesc {
  readonly id: number;
  readonly name: string;
  readonly type: ColumnType;
  /** The type name as written (for SHOW CREATE TABLE), e.g. "VARCHAR(10)". */
  readonly typeText: string;
  readonly nullable: boolean;
  /** DEFAULT as SQL text, or undefined. */
  readonly defaultExpr: string | undefined;
  /** The hidden rowid of a table without a declared primary key. */
  readonly hidden: boolean;
}

export interface IndexDesc {
  readonly id: number;
  readonly name: string;
  readonly unique: boolean;
  readonly keyColumnIds: readonly number[];
  readonly directions: readonly Direction[];
  /** Non-key columns stored in the index value (secondary indexes). */
  readonly storeColumnIds: readonly number[];
  /**
   * Schema-change state of a secondary index (sql/schema/index-backfill.ts):
   * absent or 'public' = read and written; 'write_only' = maintained by every
   * write but not read (during the backfill); 'delete_only' = only deletes
   * are applied (the first step of an add, the last of a drop).
   */
  readonly state?: IndexState;
  /**
   * Created by a FOREIGN KEY for its referencing columns (sql/schema/
   * foreign-keys.ts): kept out of pg_catalog, since PostgreSQL has no such
   * index and ORMs would drop it, and dropped with the last constraint
   * using it.
   */
  readonly implicit?: boolean;
}

export type IndexState = 'delete_only' | 'write_only' | 'public';

export interface CheckDesc {
  readonly name: string;
  readonly expr: string;
}

export type { FkAction };

/**
 * A foreign key, stored on the referencing ("child") table
 * (sql/schema/foreign-keys.ts, enforced by sql/exec/fk-actions.ts):
 * `columnIds[i]` references `referencedColumnIds[i]` of table
 * `referencedTableId`, whose column set is its primary key or a unique
 * index. The child always has an index whose key starts with `columnIds`
 * (created implicitly if none existed), so the rows referencing a parent key
 * are one span scan. `validated` is false after ADD … NOT VALID until
 * VALIDATE CONSTRAINT (PostgreSQL's convalidated).
 */
export interface ForeignKeyDesc {
  readonly name: string;
  readonly columnIds: readonly number[];
  readonly referencedTableId: number;
  readonly referencedColumnIds: readonly number[];
  readonly match: 'simple' | 'full';
  readonly onDelete: FkAction;
  readonly onUpdate: FkAction;
  readonly validated: boolean;
}

export interface TableDesc {
  readonly kind: 'table';
  readonly id: number;
  readonly name: string;
  readonly parentId: number;
  readonly version: number;
  readonly columns: readonly ColumnDesc[];
  readonly nextColumnId: number;
  readonly primaryIndex: IndexDesc;
  readonly indexes: readonly IndexDesc[];
  readonly nextIndexId: number;
  readonly checks: readonly CheckDesc[];
  /** Outbound foreign keys (absent in descriptors written before them: none). */
  readonly foreignKeys?: readonly ForeignKeyDesc[];
}

export interface DatabaseDesc {
  readonly kind: 'database';
  readonly id: number;
  readonly name: string;
  readonly version: number;
}

/**
 * A view (sql/schema/view-ddl.ts): its defining query as SQL text, expanded
 * into every statement that names it (as a subquery in FROM), and the
 * names/types of its output columns fixed at creation.
 */
export interface ViewDesc {
  readonly kind: 'view';
  readonly id: number;
  readonly name: string;
  readonly parentId: number;
  readonly version: number;
  readonly query: string;
  readonly columns: readonly { readonly name: string; readonly type: ColumnType }[];
}

/**
 * A sequence (sql/schema/sequences.ts). Its next value lives under
 * /Table/<id>/1 as an 8-byte big-endian two's-complement int64: the value
 * the next nextval() hands out (before the bounds check). Bigint options are
 * stored as decimal strings (JSON has no int64).
 */
export interface SequenceDesc {
  readonly kind: 'sequence';
  readonly id: number;
  readonly name: string;
  readonly parentId: number;
  readonly version: number;
  readonly start: string;
  readonly increment: string;
  readonly minValue: string;
  readonly maxValue: string;
  readonly cycle: boolean;
}

export type Descriptor = TableDesc | DatabaseDesc | ViewDesc | SequenceDesc;

const FORMAT_V1 = 0x01;

export function encodeDescriptor(d: Descriptor): Buffer {
  const json = Buffer.from(JSON.stringify(d), 'utf8');
  const out = Buffer.allocUnsafe(json.length + 1);
  out[0] = FORMAT_V1;
  json.copy(out, 1);
  return out;
}

export function decodeDescriptor(b: Buffer): Descriptor {
  if (b[0] !== FORMAT_V1) throw new CorruptionError(`catalog: unknown descriptor format ${b[0]}`);
  try {
    return JSON.parse(b.subarray(1).toString('utf8')) as Descriptor;
  } catch (e) {
    throw new CorruptionError('catalog: undecodable descriptor', e);
  }
}

/** A small non-negative integer value (ids, versions): 8 bytes big-endian. */
export function encodeUint(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

export function decodeUint(b: Buffer | null): number {
  if (b === null) return 0;
  if (b.length !== 8) throw new CorruptionError('catalog: bad integer value');
  return Number(b.readBigUInt64BE(0));
}
