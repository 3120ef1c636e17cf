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
import { BACKFILL_CHUNK, backfillIndex } from './index-ddl.js';
import { scanRows } from './row-scan.js';

/** The descriptor keyed by `cols`, with the rows and indexes rebuilt through `txn`. */
export async function alterPrimaryKey(txn: SqlTxn, d: TableDesc, name: string | undefined, cols: readonly string[]): Promise<TableDesc> {
  const hidden = d.columns.filter((c) => c.hidden && d.primaryIndex.keyColumnIds.includes(c.id));
  if (hidden.length === 0) throw new SqlError('sql.invalid_table_definition', '42P16', `multiple primary keys for table "${d.name}" are not allowed`);
  const keyIds = cols.map((n) => {
    const c = d.columns.find((x) => x.name === n && !x.hidden);
    if (c === undefined) throw new SqlError('sql.undefined_column', '42703', `column "${n}" of relation "${d.name}" does not exist`);
    return c.id;
  });
  if (new Set(keyIds).size !== keyIds.length) throw new SqlError('sql.duplicate_column', '42701', `column "${cols.find((c, i) => cols.indexOf(c) !== i)}" appears twice in primary key constraint`);
  const dropIds = new Set(hidden.map((c) => c.id));
  const next: TableDesc = {
    ...d,
    columns: d.columns.filter((c) => !dropIds.has(c.id)).map((c) => (keyIds.includes(c.id) ? { ...c, nullable: false } : c)),
    primaryIndex: { id: d.nextIndexId, name: name ?? `${d.name}_pkey`, unique: true, keyColumnIds: keyIds, directions: keyIds.map(() => 'asc'), storeColumnIds: [] },
    nextIndexId: d.nextIndexId + 1,
  };
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
 * Deletes every key of `span` in chunks of point deletes: one transactional
 * range delete of a large index would be one huge Raft command.
 */
async function deleteSpan(txn: SqlTxn, span: { key: Buffer; endKey: Buffer }): Promise<void> {
  let start = span.key;
  for (;;) {
    const b = new KVBatch();
    b.scan(start, span.endKey, { limit: BACKFILL_CHUNK });
    const [res] = await txn.run(b);
    if (res?.kind !== 'scan') throw new Error('schema: unexpected scan result');
    if (res.rows.length > 0) {
      const w = new KVBatch();
      for (const kv of res.rows) w.del(kv.key);
      await txn.run(w);
    }
    if (res.resumeKey === null) return;
    start = res.resumeKey;
  }
}
