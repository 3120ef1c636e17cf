/**
 * sql/schema/primary-key.ts — ALTER TABLE … ADD [CONSTRAINT name] PRIMARY KEY
 * (cols) on a table created without one (keyed by its hidden rowid), as
 * pgbench's `-I p` step does (issue 7, must-show 3).
 *
 * CockroachDB's ALTER PRIMARY KEY, in the statement's transaction:
 *
 *     old primary  /Table/<id>/1/<rowid>      → all other columns
 *     new primary  /Table/<id>/<n>/<cols…>    → the remaining columns   (n = nextIndexId)
 *
 *   1. every row of the old primary index is read in chunks and written
 *      under the new key with cput(expected = null): two rows with the same
 *      key are 23505 "could not create unique index" (PostgreSQL's message),
 *      a NULL key column 23502 (the key columns become NOT NULL);
 *   2. each old row is deleted in the same batch as its copy is written
 *      (point deletes, chunk by chunk: one transactional range delete of a
 *      large table would be one huge Raft command);
 *   3. secondary indexes carry the primary key as their key suffix / value,
 *      so each is emptied (chunked point deletes) and backfilled again from
 *      the new primary (same index id: the new entries are written after
 *      the deletes).
 * The hidden rowid column is dropped with the old key (PostgreSQL has none;
 * nothing else may reference a hidden column). The caller writes the new
 * descriptor and bumps the schema version in the same transaction
 * (alter-table.ts), so no other statement sees the table half-rebuilt.
 * Replacing a declared primary key is 42P16, as in PostgreSQL.
 *
 * Online (ALTER TABLE … ADD PRIMARY KEY alone in an implicit transaction,
 * what pgbench sends): one transaction holding every row would be too big for
 * a large table (its intents and lock spans travel in the commit), so the
 * new primary index is built the way CREATE INDEX builds an index online
 * (index-backfill.ts), in three steps:
 *
 *   1. (the statement's txn) the key columns become NOT NULL (validated) and
 *      a unique index named like the new key, on the key columns and STORING
 *      every other column, is added write_only — so its short-form entries
 *      (key /Table/<id>/<n>/<cols…>, value = the other columns in the row
 *      format) are exactly the rows of a primary index on those columns;
 *      concurrent writers maintain it (a duplicate key is their 23505);
 *   2. backfillOnline fills it in chunk transactions and makes it public
 *      (23505 "could not create unique index" on duplicates, index removed);
 *   3. (one txn) the swap: the index becomes the primary index, the rowid
 *      column goes (its bytes in the values are skipped by column id), other
 *      secondary indexes are rebuilt under the new key suffix; then the old
 *      primary index's keys are deleted in chunk transactions (garbage no
 *      descriptor points at any more).
 */
import { tableIndexSpan } from '../../storage/keys.js';
import { CairnError } from '../../src/util/errors.js';
import { KVBatch } from '../kv.js';
import { SqlError } from '../parser/sql-error.js';
import type { TableDesc } from '../catalog/descriptor.js';
import { RowCodec } from '../rowenc/row-codec.js';
import { datumToText, type Datum } from '../sem/datum.js';
import type { SqlType } from '../types/type.js';
import type { SqlTxn } from '../exec/sql-txn.js';
import type { IndexDesc } from '../catalog/descriptor.js';
import type { KVDB } from '../kv.js';
import { BACKFILL_CHUNK, backfillIndex, putDescriptor } from './index-ddl.js';
import { backfillOnline, runTxn } from './index-backfill.js';
import { scanRows } from './row-scan.js';

/** The key column ids of the new primary key (42P16 when the table has a declared one). */
function newKeyIds(d: TableDesc, cols: readonly string[]): number[] {
  if (!d.columns.some((c) => c.hidden && d.primaryIndex.keyColumnIds.includes(c.id))) {
    throw new SqlError('sql.invalid_table_definition', '42P16', `multiple primary keys for table "${d.name}" are not allowed`);
  }
  const keyIds = cols.map((n) => {
    const c = d.columns.find((x) => x.name === n && !x.hidden);
    if (c === undefined) throw new SqlError('sql.undefined_column', '42703', `column "${n}" of relation "${d.name}" does not exist`);
    return c.id;
  });
  if (new Set(keyIds).size !== keyIds.length) throw new SqlError('sql.duplicate_column', '42701', `column "${cols.find((c, i) => cols.indexOf(c) !== i)}" appears twice in primary key constraint`);
  return keyIds;
}

/** `d` keyed by `primary` (key columns NOT NULL), without the hidden rowid. */
function rekeyed(d: TableDesc, primary: IndexDesc): TableDesc {
  const rowid = new Set(d.primaryIndex.keyColumnIds.filter((id) => d.columns.find((c) => c.id === id)?.hidden === true));
  return {
    ...d,
    columns: d.columns.filter((c) => !rowid.has(c.id)).map((c) => (primary.keyColumnIds.includes(c.id) ? { ...c, nullable: false } : c)),
    primaryIndex: primary,
    indexes: d.indexes.filter((ix) => ix.id !== primary.id),
    nextIndexId: Math.max(d.nextIndexId, primary.id + 1),
  };
}

/** The descriptor keyed by `cols`, with the rows and indexes rebuilt through `txn`. */
export async function alterPrimaryKey(txn: SqlTxn, d: TableDesc, name: string | undefined, cols: readonly string[]): Promise<TableDesc> {
  const keyIds = newKeyIds(d, cols);
  const next = rekeyed(d, { id: d.nextIndexId, name: name ?? `${d.name}_pkey`, unique: true, keyColumnIds: keyIds, directions: keyIds.map(() => 'asc'), storeColumnIds: [] });
  const codec = new RowCodec(next); // rejects key types without a key encoding (0A000)
  const oldOrd = new Map(d.columns.map((c, i) => [c.id, i]));
  const fromOld = next.columns.map((c) => oldOrd.get(c.id) as number);
  const keyOrds = keyIds.map((id) => next.columns.findIndex((c) => c.id === id));
  await scanRows(
    txn,
    d,
    async (rows) => {
      const w = new KVBatch();
      const rowOf = new Map<string, Datum[]>();
      for (const r of rows) {
        const row = fromOld.map((o) => r.row[o] as Datum);
        for (const o of keyOrds) {
          if (row[o] === null) throw new SqlError('sql.not_null_violation', '23502', `column "${next.columns[o]?.name}" of relation "${d.name}" contains null values`);
        }
        const key = codec.encodeKey(row);
        rowOf.set(key.toString('latin1'), row);
        w.cput(key, codec.encodeValue(row), null);
        w.del(r.key);
      }
      try {
        await txn.run(w);
      } catch (e) {
        if (!(e instanceof CairnError && e.code === 'kv.condition_failed')) throw e;
        const k = (e as CairnError & { key?: Buffer }).key;
        const row = k !== undefined ? rowOf.get(k.toString('latin1')) : undefined;
        const names = keyOrds.map((o) => next.columns[o]?.name).join(', ');
        const vals = row !== undefined ? keyOrds.map((o) => datumToText(row[o] as NonNullable<Datum>, codec.types[o] as SqlType)).join(', ') : '?';
        throw new SqlError('sql.unique_violation', '23505', `could not create unique index "${next.primaryIndex.name}"`, { detail: `Key (${names})=(${vals}) is duplicated.` });
      }
    },
    BACKFILL_CHUNK,
  );
  for (const ix of next.indexes) {
    await deleteSpan(txn, tableIndexSpan(d.id, ix.id));
    if (ix.state !== 'delete_only') await backfillIndex(txn, next, ix);
  }
  return next;
}

/**
 * Step 1 of the online path: `d` with the key columns NOT NULL (checked
 * against every row through `txn`) and the future primary index added as a
 * write_only unique index storing every other column.
 */
export async function addPrimaryKeyIndex(txn: SqlTxn, d: TableDesc, name: string | undefined, cols: readonly string[]): Promise<{ desc: TableDesc; indexId: number }> {
  const keyIds = newKeyIds(d, cols);
  const keyOrds = keyIds.map((id) => d.columns.findIndex((c) => c.id === id));
  await scanRows(txn, d, (rows) => {
    for (const r of rows) {
      const o = keyOrds.find((k) => r.row[k] === null);
      if (o !== undefined) throw new SqlError('sql.not_null_violation', '23502', `column "${d.columns[o]?.name}" of relation "${d.name}" contains null values`);
    }
  });
  const stored = d.columns.filter((c) => !c.hidden && !keyIds.includes(c.id)).map((c) => c.id);
  const ix: IndexDesc = { id: d.nextIndexId, name: name ?? `${d.name}_pkey`, unique: true, keyColumnIds: keyIds, directions: keyIds.map(() => 'asc'), storeColumnIds: stored, state: 'write_only' };
  const desc: TableDesc = {
    ...d,
    columns: d.columns.map((c) => (keyIds.includes(c.id) ? { ...c, nullable: false } : c)),
    indexes: [...d.indexes, ix],
    nextIndexId: ix.id + 1,
  };
  new RowCodec(rekeyed(desc, ix)); // rejects key types without a key encoding (0A000)
  return { desc, indexId: ix.id };
}

/**
 * Steps 2 and 3 of the online path, after step 1 committed: backfill, swap,
 * then delete the old primary index's keys chunk by chunk.
 */
export async function finishPrimaryKeyOnline(db: KVDB, tableId: number, indexId: number): Promise<void> {
  await backfillOnline(db, tableId, indexId);
  const old = await runTxn(db, async (txn, snap) => {
    const t = snap.tableById(tableId);
    const ix = t?.desc.indexes.find((x) => x.id === indexId);
    if (t === undefined || ix === undefined) throw new SqlError('sql.object_not_in_prerequisite_state', '55000', 'schema: primary key index dropped during its backfill');
    const next = rekeyed(t.desc, { ...ix, storeColumnIds: [], state: undefined });
    for (const other of next.indexes) {
      await deleteSpan(txn, tableIndexSpan(tableId, other.id));
      if (other.state !== 'delete_only') await backfillIndex(txn, next, other);
    }
    const b = new KVBatch();
    putDescriptor(b, { ...next, version: t.desc.version + 1 }, snap.version);
    await txn.run(b);
    return t.desc.primaryIndex.id;
  });
  const span = tableIndexSpan(tableId, old);
  let start: Buffer | null = span.key;
  while (start !== null) {
    const from: Buffer = start;
    start = await runTxn(db, (txn) => deleteChunk(txn, { key: from, endKey: span.endKey }));
  }
}

/** Deletes up to BACKFILL_CHUNK keys from the start of `span`; returns where to go on (null: done). */
async function deleteChunk(txn: SqlTxn, span: { key: Buffer; endKey: Buffer }): Promise<Buffer | null> {
  const b = new KVBatch();
  b.scan(span.key, span.endKey, { limit: BACKFILL_CHUNK });
  const [res] = await txn.run(b);
  if (res?.kind !== 'scan') throw new Error('schema: unexpected scan result');
  if (res.rows.length > 0) {
    const w = new KVBatch();
    for (const kv of res.rows) w.del(kv.key);
    await txn.run(w);
  }
  return res.resumeKey;
}

/**
 * Deletes every key of `span` in chunks of point deletes: one transactional
 * range delete of a large index would be one huge Raft command.
 */
async function deleteSpan(txn: SqlTxn, span: { key: Buffer; endKey: Buffer }): Promise<void> {
  let start: Buffer | null = span.key;
  while (start !== null) start = await deleteChunk(txn, { key: start, endKey: span.endKey });
}
