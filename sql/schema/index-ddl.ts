/**
 * sql/schema/index-ddl.ts — CREATE INDEX, DROP INDEX, and the unique indexes
 * of CREATE TABLE's UNIQUE constraints.
 *
 * Index state machine (CockroachDB's schema changer; descriptor.ts IndexState):
 *
 *     (absent) → delete_only → write_only → [backfill] → public
 *     public → write_only → delete_only → (absent, entries range-deleted)
 *
 * A node that plans against version v of a descriptor and a node on v+1
 * never disagree in a way that leaves stray or missing entries, because
 * adjacent states differ by one capability: delete_only indexes get the dels
 * of every write, write_only ones get all writes but are never read, and only
 * public indexes are chosen by the planner.
 *
 * CREATE INDEX as its own (implicit) transaction goes through the online
 * path (index-backfill.ts): write_only committed, backfill in chunk
 * transactions while writes continue, then public. Inside BEGIN … COMMIT
 * it executes in the user's transaction instead: it writes the descriptor with the new index and
 * backfills it from the primary index in that same transaction, in chunks
 * of BACKFILL_CHUNK rows, then marks it public before commit — so the whole
 * state walk happens atomically and no other transaction observes the
 * intermediate states (a concurrent writer conflicts with the backfill's
 * reads and retries, as in PostgreSQL's non-CONCURRENTLY CREATE INDEX).
 * Every descriptor write bumps the global schema version in the same
 * transaction (catalog.ts), so other nodes reload the descriptor on their
 * next statement and no statement ever sees half of the change.
 *
 * Unique backfill: each entry goes in with cput(expected = null); a failure
 * is 23505 `could not create unique index` (PostgreSQL's message).
 */
import { descriptorKey, tableIndexSpan } from '../../storage/keys.js';
import { CairnError } from '../../src/util/errors.js';
import { KVBatch } from '../kv.js';
import type { CreateIndexStatement, DropIndexStatement, IndexElem, TableName } from '../parser/ast.js';
import { SqlError, unimplemented } from '../parser/sql-error.js';
import { SCHEMA_VERSION_KEY, loadSnapshot, type CatalogSnapshot, type TableEntry } from '../catalog/catalog.js';
import { encodeDescriptor, encodeUint, type IndexDesc, type TableDesc, type ViewDesc } from '../catalog/descriptor.js';
import { RowCodec } from '../rowenc/row-codec.js';
import { IndexCodec } from '../rowenc/index-codec.js';
import { datumToText, type Datum } from '../sem/datum.js';
import type { SqlType } from '../types/type.js';
import type { SqlTxn } from '../exec/sql-txn.js';
import { scanRows } from './row-scan.js';
import { checkIndexUnreferenced } from './foreign-keys.js';

/** Rows read from the primary index per backfill round trip. */
export const BACKFILL_CHUNK = 1000;

export interface DdlResult {
  readonly tag: string;
  readonly notices: readonly string[];
}

function tableOf(snap: CatalogSnapshot, database: string, name: TableName): TableEntry {
  const db = snap.database(name.catalog ?? database);
  const t = db !== undefined ? snap.table(db.id, name.name) : undefined;
  if (t === undefined) throw new SqlError('sql.undefined_table', '42P01', `relation "${name.name}" does not exist`);
  return t;
}

/** Whether any relation or index of the database already uses `name`. */
function nameTaken(snap: CatalogSnapshot, dbId: number, name: string): boolean {
  for (const t of snap.tablesOf(dbId)) {
    if (t.desc.name === name || t.desc.primaryIndex.name === name) return true;
    if (t.desc.indexes.some((ix) => ix.name === name)) return true;
  }
  return false;
}

/** PostgreSQL's generated index name: table_col1_col2_idx / _key. */
export function defaultIndexName(table: string, cols: readonly string[], unique: boolean, taken: (n: string) => boolean): string {
  const base = `${table}_${cols.join('_')}_${unique ? 'key' : 'idx'}`;
  let name = base;
  for (let i = 1; taken(name); i++) name = `${base}${i}`;
  return name;
}

/** Builds an index descriptor from key elements (column names only) and STORING columns. */
export function buildIndexDesc(desc: TableDesc, name: string, unique: boolean, elems: readonly IndexElem[], storing: readonly string[]): IndexDesc {
  const colId = (n: string): number => {
    const c = desc.columns.find((x) => x.name === n && !x.hidden) ?? desc.columns.find((x) => x.name === n);
    if (c === undefined) throw new SqlError('sql.undefined_column', '42703', `column "${n}" does not exist`);
    return c.id;
  };
  const keyColumnIds: number[] = [];
  for (const e of elems) {
    if (e.column === undefined) throw unimplemented('expression indexes');
    const id = colId(e.column);
    if (keyColumnIds.includes(id)) throw new SqlError('sql.duplicate_column', '42701', `column "${e.column}" appears twice in index definition`);
    keyColumnIds.push(id);
  }
  const storeColumnIds = storing.map(colId).filter((id) => !keyColumnIds.includes(id) && !desc.primaryIndex.keyColumnIds.includes(id));
  return {
    id: desc.nextIndexId,
    name,
    unique,
    keyColumnIds,
    directions: elems.map((e) => (e.dir === 'desc' ? 'desc' : 'asc')),
    storeColumnIds: [...new Set(storeColumnIds)],
    state: 'public',
  };
}

/** The catalog read through `txn` itself (its schema version is then known to the txn). */
export async function schemaSnapshot(txn: SqlTxn): Promise<CatalogSnapshot> {
  const snap = await loadSnapshot(txn.kv);
  txn.markSchemaChecked();
  return snap;
}

/** DROP … [IF EXISTS] of a missing object: a notice when `ifExists`, else `missing`. */
export function notFound(ifExists: boolean, notices: string[], notice: string, missing: () => SqlError): void {
  if (!ifExists) throw missing();
  notices.push(notice);
}

/** Sends a schema change batch (when not empty) and marks the transaction schema-dirty. */
export async function runSchemaBatch(txn: SqlTxn, b: KVBatch): Promise<void> {
  if (b.length === 0) return;
  await txn.run(b);
  txn.schemaDirty = true;
}

/** Puts a changed descriptor (version + 1) and bumps the schema version, in `b`. */
export function putDescriptor(b: KVBatch, d: TableDesc | ViewDesc, snapshotVersion: number): void {
  b.put(descriptorKey(d.id), encodeDescriptor(d));
  b.put(SCHEMA_VERSION_KEY, encodeUint(snapshotVersion + 1));
}

/**
 * Fills index `ix` of `desc` from the primary index, in chunks, through `txn`.
 * Returns the number of entries written.
 */
export async function backfillIndex(txn: SqlTxn, desc: TableDesc, ix: IndexDesc): Promise<number> {
  const primary = new RowCodec(desc);
  const codec = new IndexCodec(desc, ix, primary);
  return scanRows(txn, desc, async (rows) => {
    const w = new KVBatch();
    const rowOf = new Map<string, Datum[]>();
    for (const { row } of rows) {
      const e = codec.entry(row);
      if (e.unique) {
        w.cput(e.key, e.value, null);
        rowOf.set(e.key.toString('latin1'), row);
      } else w.put(e.key, e.value);
    }
    try {
      await txn.run(w);
    } catch (err) {
      if (err instanceof CairnError && err.code === 'kv.condition_failed') {
        const key = (err as CairnError & { key?: Buffer }).key;
        const row = key !== undefined ? rowOf.get(key.toString('latin1')) : undefined;
        const names = codec.keyOrdinals.map((o) => desc.columns[o]?.name).join(', ');
        const vals = row !== undefined ? codec.keyOrdinals.map((o) => datumToText(row[o] as NonNullable<Datum>, primary.types[o] as SqlType)).join(', ') : '?';
        throw new SqlError('sql.unique_violation', '23505', `could not create unique index "${ix.name}"`, { detail: `Key (${names})=(${vals}) is duplicated.` });
      }
      throw err;
    }
  }, BACKFILL_CHUNK);
}

/**
 * CREATE INDEX. `online`: only add the index as write_only (the caller
 * commits, then runs index-backfill.ts backfillOnline on `pending`);
 * otherwise backfill in `txn` and publish at once.
 */
export async function createIndex(txn: SqlTxn, database: string, s: CreateIndexStatement, online = false): Promise<DdlResult & { pending?: { tableId: number; indexId: number } }> {
  if (s.where !== undefined) throw unimplemented('partial indexes');
  const snap = await schemaSnapshot(txn);
  const t = tableOf(snap, database, s.table);
  const dbId = t.desc.parentId;
  const cols = [...s.columns.map((e) => e.column ?? 'expr'), ...s.storing]; // PostgreSQL names INCLUDE columns too
  // PostgreSQL names an unnamed index _idx even when it is unique (_key is for constraints).
  const name = s.name ?? defaultIndexName(t.desc.name, cols, false, (n) => nameTaken(snap, dbId, n));
  if (nameTaken(snap, dbId, name)) {
    if (s.ifNotExists) return { tag: 'CREATE INDEX', notices: [`relation "${name}" already exists, skipping`] };
    throw new SqlError('sql.duplicate_table', '42P07', `relation "${name}" already exists`);
  }
  const ix = buildIndexDesc(t.desc, name, s.unique, s.columns, s.storing);
  const writeOnly: TableDesc = { ...t.desc, version: t.desc.version + 1, indexes: [...t.desc.indexes, { ...ix, state: 'write_only' }], nextIndexId: ix.id + 1 };
  new IndexCodec(writeOnly, ix, new RowCodec(writeOnly)); // key types must have a key encoding (0A000)
  if (online) {
    const b = new KVBatch();
    putDescriptor(b, writeOnly, snap.version);
    await txn.run(b);
    txn.schemaDirty = true;
    return { tag: 'CREATE INDEX', notices: [], pending: { tableId: t.desc.id, indexId: ix.id } };
  }
  await backfillIndex(txn, writeOnly, ix);
  const b = new KVBatch();
  putDescriptor(b, { ...writeOnly, indexes: [...t.desc.indexes, ix] }, snap.version);
  await txn.run(b);
  txn.schemaDirty = true;
  return { tag: 'CREATE INDEX', notices: [] };
}

export async function dropIndex(txn: SqlTxn, database: string, s: DropIndexStatement): Promise<DdlResult> {
  const snap = await schemaSnapshot(txn);
  const notices: string[] = [];
  const b = new KVBatch();
  const changed = new Map<number, TableDesc>();
  for (const n of s.indexes) {
    const db = snap.database(n.index.catalog ?? database);
    let found: { desc: TableDesc; ix: IndexDesc } | undefined;
    const candidates = n.table !== undefined ? [tableOf(snap, database, n.table)] : db !== undefined ? snap.tablesOf(db.id) : [];
    for (const t of candidates) {
      const desc = changed.get(t.desc.id) ?? t.desc;
      const ix = desc.indexes.find((x) => x.name === n.index.name);
      if (ix !== undefined && ix.unique) checkIndexUnreferenced(t, ix); // a foreign key's referenced key (foreign-keys.ts)
      if (ix !== undefined) found = { desc, ix };
      else if (desc.primaryIndex.name === n.index.name) {
        throw new SqlError('sql.dependent_objects_still_exist', '2BP01', `cannot drop index ${n.index.name} because constraint ${n.index.name} on table ${desc.name} requires it`);
      }
    }
    if (found === undefined) {
      notFound(s.ifExists, notices, `index "${n.index.name}" does not exist, skipping`, () => new SqlError('sql.undefined_object', '42704', `index "${n.index.name}" does not exist`));
      continue;
    }
    const { desc, ix } = found;
    changed.set(desc.id, { ...desc, version: desc.version + 1, indexes: desc.indexes.filter((x) => x !== ix) });
    const span = tableIndexSpan(desc.id, ix.id);
    b.delRange(span.key, span.endKey);
  }
  for (const d of changed.values()) putDescriptor(b, d, snap.version);
  await runSchemaBatch(txn, b);
  return { tag: 'DROP INDEX', notices };
}

