/**
 * sql/schema/foreign-keys.ts — FOREIGN KEY / REFERENCES constraints as schema
 * (issue 7): resolving them at CREATE TABLE and ALTER TABLE … ADD CONSTRAINT,
 * validating existing rows, and what DROP TABLE / DROP CONSTRAINT / DROP
 * COLUMN do with them. Enforcement on writes is sql/exec/fk-actions.ts.
 *
 * A foreign key lives on the referencing (child) table's descriptor as a
 * ForeignKeyDesc (column ids on both sides, so renames need no rewrite);
 * the catalog snapshot links both tables' entries (catalog.ts FkRef).
 *
 * Resolution, with PostgreSQL's errors:
 *   - referenced columns default to the parent's primary key (42830 when it
 *     has none, i.e. only a hidden rowid); they must be exactly the columns
 *     of its primary key or of a unique index (42830 "there is no unique
 *     constraint matching given keys …"); column counts agree (42830); the
 *     column types are comparable (42804 "… cannot be implemented");
 *   - names default to PostgreSQL's `<table>_<cols>_fkey`, numbered on
 *     collision;
 *   - the child needs an index whose key starts with the FK columns, so the
 *     rows referencing a parent key are one span (CockroachDB's rule): if no
 *     index (primary or secondary) has that prefix, one is added, named
 *     `<table>_<cols>_idx` as PostgreSQL would name it — on a populated table
 *     it is backfilled in the statement's transaction (alter-table.ts). It is
 *     marked `implicit`: hidden from pg_catalog (PostgreSQL has none; ORMs
 *     that diff indexes would drop it) and dropped with the last constraint
 *     that uses it (unusedImplicitIndexes).
 * ADD CONSTRAINT validates every existing row (23503 with the first missing
 * key) unless NOT VALID (then convalidated = false).
 */
import type { ForeignKeyConstraint } from '../parser/ast.js';
import { SqlError } from '../parser/sql-error.js';
import type { CatalogSnapshot, FkRef, TableEntry } from '../catalog/catalog.js';
import type { ForeignKeyDesc, IndexDesc, TableDesc } from '../catalog/descriptor.js';
import { RowCodec, sqlTypeOf } from '../rowenc/row-codec.js';
import { IndexCodec } from '../rowenc/index-codec.js';
import { formatType, type SqlType } from '../types/type.js';
import { KVBatch } from '../kv.js';
import type { SqlTxn } from '../exec/sql-txn.js';
import { addParentLookup, childKey, found, missingParentError, prefixOrder } from '../exec/fk-actions.js';
import { buildIndexDesc, defaultIndexName } from './index-ddl.js';
import { scanRows } from './row-scan.js';

/** The result of adding foreign keys to a descriptor. */
export interface ForeignKeysAdded {
  readonly desc: TableDesc;
  readonly added: readonly ForeignKeyDesc[];
  /** Indexes created for the child side (to backfill on a populated table). */
  readonly newIndexes: readonly IndexDesc[];
}

function colByName(d: TableDesc, name: string): { id: number; type: SqlType } {
  const c = d.columns.find((x) => x.name === name && !x.hidden) ?? d.columns.find((x) => x.name === name);
  if (c === undefined) throw new SqlError('sql.undefined_column', '42703', `column "${name}" referenced in foreign key constraint does not exist`);
  return { id: c.id, type: sqlTypeOf(c.type) };
}

function nameOfId(d: TableDesc, id: number): string {
  return d.columns.find((c) => c.id === id)?.name ?? '?';
}

const sameSet = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((x) => b.includes(x));

/** Key kinds that encode alike (ints of any width compare and encode as one kind). */
function comparable(a: SqlType, b: SqlType): boolean {
  if (a.family !== b.family) return false;
  return a.family !== 'array' || a.oid === b.oid;
}

/** Every constraint name already used on the table (indexes, checks, foreign keys). */
function constraintNames(d: TableDesc): Set<string> {
  return new Set([d.primaryIndex.name, ...d.indexes.map((x) => x.name), ...d.checks.map((c) => c.name), ...(d.foreignKeys ?? []).map((f) => f.name)]);
}

/**
 * Adds `specs` to the child descriptor `d` (being created, or a working copy
 * being altered): resolves the parents in `snap` (a spec naming `d` itself is
 * a self-reference), names the constraints, and adds any missing child index.
 */
export function addForeignKeys(snap: CatalogSnapshot, d: TableDesc, specs: readonly ForeignKeyConstraint[]): ForeignKeysAdded {
  let desc = d;
  const added: ForeignKeyDesc[] = [];
  const newIndexes: IndexDesc[] = [];
  for (const s of specs) {
    const dbId = s.table.catalog !== undefined ? snap.database(s.table.catalog)?.id : d.parentId;
    const self = dbId === d.parentId && s.table.name === d.name;
    const parent = self ? desc : dbId !== undefined ? snap.table(dbId, s.table.name)?.desc : undefined;
    if (parent === undefined) throw new SqlError('sql.undefined_table', '42P01', `relation "${s.table.name}" does not exist`);
    const childCols = s.columns.map((n) => colByName(desc, n));
    let refIds: number[];
    if (s.refColumns.length === 0) {
      const pk = parent.primaryIndex.keyColumnIds;
      if (pk.some((id) => parent.columns.find((c) => c.id === id)?.hidden === true)) {
        throw new SqlError('sql.invalid_foreign_key', '42830', `there is no primary key for referenced table "${parent.name}"`);
      }
      refIds = [...pk];
    } else refIds = s.refColumns.map((n) => colByName(parent, n).id);
    if (refIds.length !== childCols.length) throw new SqlError('sql.invalid_foreign_key', '42830', 'number of referencing and referenced columns for foreign key disagree');
    const uniqueOk = sameSet(parent.primaryIndex.keyColumnIds, refIds) || parent.indexes.some((ix) => ix.unique && (ix.state ?? 'public') === 'public' && sameSet(ix.keyColumnIds, refIds));
    if (!uniqueOk) throw new SqlError('sql.invalid_foreign_key', '42830', `there is no unique constraint matching given keys for referenced table "${parent.name}"`);
    const taken = constraintNames(desc);
    let name = s.name;
    if (name === undefined) {
      const base = `${desc.name}_${s.columns.join('_')}_fkey`;
      name = base;
      for (let i = 1; taken.has(name); i++) name = `${base}${i}`;
    } else if (taken.has(name)) {
      throw new SqlError('sql.duplicate_object', '42710', `constraint "${name}" for relation "${desc.name}" already exists`);
    }
    refIds.forEach((id, i) => {
      const pt = sqlTypeOf((parent.columns.find((c) => c.id === id) as TableDesc['columns'][number]).type);
      const ct = (childCols[i] as { type: SqlType }).type;
      if (!comparable(ct, pt)) {
        throw new SqlError('sql.datatype_mismatch', '42804', `foreign key constraint "${name}" cannot be implemented`, {
          detail: `Key columns "${s.columns[i]}" and "${nameOfId(parent, id)}" are of incompatible types: ${formatType(ct)} and ${formatType(pt)}.`,
        });
      }
    });
    const fk: ForeignKeyDesc = {
      name,
      columnIds: childCols.map((c) => c.id),
      referencedTableId: parent.id,
      referencedColumnIds: refIds,
      match: s.match,
      onDelete: s.onDelete,
      onUpdate: s.onUpdate,
      validated: !s.notValid,
    };
    const hasIndex = prefixOrder(desc.primaryIndex.keyColumnIds, fk.columnIds) !== undefined || desc.indexes.some((ix) => (ix.state ?? 'public') === 'public' && prefixOrder(ix.keyColumnIds, fk.columnIds) !== undefined);
    if (!hasIndex) {
      const taken2 = (n: string): boolean => n === desc.name || constraintNames(desc).has(n) || snap.tablesOf(desc.parentId).some((t) => t.desc.id !== desc.id && (t.desc.name === n || t.desc.indexes.some((x) => x.name === n)));
      const ixName = defaultIndexName(desc.name, s.columns, false, taken2);
      const ix: IndexDesc = { ...buildIndexDesc(desc, ixName, false, s.columns.map((c) => ({ column: c, expr: undefined, dir: 'default', nulls: 'default' })), []), implicit: true };
      desc = { ...desc, indexes: [...desc.indexes, ix], nextIndexId: ix.id + 1 };
      new IndexCodec(desc, ix, new RowCodec(desc)); // key types must have a key encoding (0A000)
      newIndexes.push(ix);
    }
    desc = { ...desc, foreignKeys: [...(desc.foreignKeys ?? []), fk] };
    added.push(fk);
  }
  return { desc, added, newIndexes };
}

function entryOf(desc: TableDesc, db: TableEntry['db']): TableEntry {
  return { desc, codec: new RowCodec(desc), db, outboundFks: [], inboundFks: [] };
}

/**
 * Checks that every row of the child `desc` has its parent for `fk` (ADD
 * CONSTRAINT without NOT VALID): one batch of parent lookups per chunk of
 * rows; 23503 naming the first missing key.
 */
export async function validateForeignKey(txn: SqlTxn, snap: CatalogSnapshot, desc: TableDesc, fk: ForeignKeyDesc): Promise<void> {
  const db = snap.tablesOf(desc.parentId)[0]?.db ?? { kind: 'database' as const, id: desc.parentId, name: '', version: 0 };
  const child = entryOf(desc, db);
  const parentDesc = fk.referencedTableId === desc.id ? desc : snap.tableById(fk.referencedTableId)?.desc;
  if (parentDesc === undefined) throw new SqlError('sql.undefined_table', '42P01', `relation with id ${fk.referencedTableId} does not exist`);
  const parent = parentDesc === desc ? child : entryOf(parentDesc, db);
  const ref: FkRef = { fk, child, parent };
  await scanRows(txn, desc, async (rows) => {
    const b = new KVBatch();
    const asked: (readonly unknown[])[] = [];
    for (const { row } of rows) {
      const vals = childKey(ref, row);
      if (vals === undefined) continue;
      addParentLookup(b, ref, vals);
      asked.push(vals);
    }
    if (asked.length === 0) return;
    const res = await txn.run(b);
    const i = asked.findIndex((_, j) => !found(res[j]));
    if (i >= 0) throw missingParentError(ref, asked[i] as Parameters<typeof missingParentError>[1]);
  });
}

/** What DROP TABLE does to foreign keys of other tables referencing the dropped ones. */
export interface DropTableFks {
  /** Child descriptors rewritten without the dropped references (CASCADE). */
  readonly children: readonly TableDesc[];
  readonly notices: readonly string[];
}

/**
 * DROP TABLE of referenced tables: without CASCADE, 2BP01 naming the first
 * dependent constraint; with CASCADE, the referencing constraints are
 * dropped from their (surviving) tables, as PostgreSQL does.
 */
export function dropReferencingFks(dropped: readonly TableEntry[], cascade: boolean): DropTableFks {
  const droppedIds = new Set(dropped.map((t) => t.desc.id));
  const byChild = new Map<number, TableDesc>();
  const notices: string[] = [];
  for (const t of dropped) {
    for (const ref of t.inboundFks) {
      if (droppedIds.has(ref.child.desc.id)) continue;
      if (!cascade) {
        throw new SqlError('sql.dependent_objects_still_exist', '2BP01', `cannot drop table ${t.desc.name} because other objects depend on it`, {
          detail: `constraint ${ref.fk.name} on table ${ref.child.desc.name} depends on table ${t.desc.name}`,
          hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
        });
      }
      const cur = byChild.get(ref.child.desc.id) ?? ref.child.desc;
      byChild.set(cur.id, { ...cur, foreignKeys: (cur.foreignKeys ?? []).filter((f) => f.name !== ref.fk.name) });
      notices.push(`drop cascades to constraint ${ref.fk.name} on table ${ref.child.desc.name}`);
    }
  }
  return { children: [...byChild.values()].map((d) => ({ ...d, version: d.version + 1 })), notices };
}

/** 2BP01 when a column of `t` is referenced by another table's foreign key (DROP COLUMN). */
export function checkColumnUnreferenced(t: TableEntry, columnId: number, column: string): void {
  for (const ref of t.inboundFks) {
    if (ref.child.desc.id === t.desc.id || !ref.fk.referencedColumnIds.includes(columnId)) continue;
    throw new SqlError('sql.dependent_objects_still_exist', '2BP01', `cannot drop column ${column} of table ${t.desc.name} because other objects depend on it`, {
      detail: `constraint ${ref.fk.name} on table ${ref.child.desc.name} depends on column ${column} of table ${t.desc.name}`,
      hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
    });
  }
}

/** 2BP01 when a unique index of `t` is what a foreign key references (DROP INDEX / DROP CONSTRAINT). */
export function checkIndexUnreferenced(t: TableEntry, ix: IndexDesc): void {
  for (const ref of t.inboundFks) {
    if (!sameSet(ix.keyColumnIds, ref.fk.referencedColumnIds)) continue;
    throw new SqlError('sql.dependent_objects_still_exist', '2BP01', `cannot drop index ${ix.name} because constraint ${ref.fk.name} on table ${ref.child.desc.name} requires it`, {
      hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
    });
  }
}

/**
 * TRUNCATE of referenced tables: 0A000 unless every referencing table is
 * truncated too (PostgreSQL's rule); with CASCADE they are added, with a
 * notice each.
 */
export function truncateTargets(named: readonly TableEntry[], cascade: boolean): { tables: TableEntry[]; notices: string[] } {
  const tables = [...named];
  const notices: string[] = [];
  for (let i = 0; i < tables.length; i++) {
    const t = tables[i] as TableEntry;
    for (const ref of t.inboundFks) {
      if (tables.some((x) => x.desc.id === ref.child.desc.id)) continue;
      if (!cascade) {
        throw new SqlError('sql.feature_not_supported', '0A000', 'cannot truncate a table referenced in a foreign key constraint', {
          detail: `Table "${ref.child.desc.name}" references "${t.desc.name}".`,
          hint: `Truncate table "${ref.child.desc.name}" at the same time, or use TRUNCATE ... CASCADE.`,
        });
      }
      tables.push(ref.child);
      notices.push(`truncate cascades to table "${ref.child.desc.name}"`);
    }
  }
  return { tables, notices };
}

/** Implicit FK indexes of `d` that none of its foreign keys needs any more (DROP CONSTRAINT). */
export function unusedImplicitIndexes(d: TableDesc): IndexDesc[] {
  const fks = d.foreignKeys ?? [];
  return d.indexes.filter((ix) => ix.implicit === true && !fks.some((f) => prefixOrder(ix.keyColumnIds, f.columnIds) !== undefined));
}
