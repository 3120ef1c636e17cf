/**
 * sql/schema/index-backfill.ts — CREATE INDEX on a populated table without
 * blocking writes (an implicit-transaction CREATE INDEX; inside BEGIN …
 * COMMIT the index is built in the user's transaction instead, index-ddl.ts).
 *
 * State machine (descriptor.ts IndexState), each arrow one committed
 * transaction that also bumps the global schema version:
 *
 *     (absent) ──► write_only ──► [backfill: chunk txns] ──► public
 *                      │
 *                      └── backfill fails (23505 …) ──► (absent, entries deleted)
 *
 * CockroachDB walks absent → delete_only → write_only because its nodes may
 * run on two descriptor versions at once under leases. Cairn needs no
 * delete_only step: every SQL transaction reads the schema-version key in
 * its first batch (sql-txn.ts) or commits below the expiration of a
 * descriptor lease that no schema change outlives (catalog/lease-manager.ts:
 * the versions are never two at once), and the KV layer is serializable, so a writer
 * planned without the index serializes before the write_only step (the
 * backfill, which starts later, sees its rows) or fails with 40001 and
 * replans against write_only (and maintains the index itself).
 *
 * Backfill: the primary index is read in chunks of `backfillChunkRows`,
 * each chunk in its own transaction that reads the rows and writes their
 * entries. A concurrent write to one of those rows conflicts with that
 * chunk transaction (same primary key), so one of the two orders wins and
 * the entry ends right either way: the writer's own index maintenance (the
 * index is write_only) deletes a stale entry or the backfill reads the new
 * row. Unique entries are written only when absent; an existing entry with
 * the same value was written by a concurrent writer (fine), one with another
 * value is a duplicate (23505, the index is removed).
 *
 * Each transaction is retried on retryable errors (40001) up to 20 times.
 */
import { tableIndexSpan } from '../../storage/keys.js';
import { CairnError } from '../../src/util/errors.js';
import { KVBatch, type KVDB } from '../kv.js';
import { SqlError } from '../parser/sql-error.js';
import { loadSnapshot, type CatalogSnapshot } from '../catalog/catalog.js';
import type { IndexDesc, TableDesc } from '../catalog/descriptor.js';
import { RowCodec } from '../rowenc/row-codec.js';
import { IndexCodec } from '../rowenc/index-codec.js';
import { datumToText, type Datum } from '../sem/datum.js';
import type { SqlType } from '../types/type.js';
import { SqlTxn } from '../exec/sql-txn.js';
import { putDescriptor } from './index-ddl.js';

/** Rows per backfill transaction (a knob for tests that want many chunks). */
export let backfillChunkRows = 1000;
export function setBackfillChunkRows(n: number): void {
  backfillChunkRows = n;
}

const MAX_ATTEMPTS = 20;

/** Runs `fn` in a fresh transaction, committing it; retried on retryable errors. */
export async function runTxn<T>(db: KVDB, fn: (txn: SqlTxn, snap: CatalogSnapshot) => Promise<T>): Promise<T> {
  const kv = db.newTxn();
  for (let attempt = 0; ; attempt++) {
    const txn = new SqlTxn(kv);
    try {
      const snap = await loadSnapshot(kv);
      txn.markSchemaChecked();
      const r = await fn(txn, snap);
      await txn.commit();
      return r;
    } catch (e) {
      if (e instanceof CairnError && e.retryable && attempt < MAX_ATTEMPTS) {
        await kv.restart();
        continue;
      }
      await kv.rollback();
      throw e;
    }
  }
}

function findIndex(snap: CatalogSnapshot, tableId: number, indexId: number): { desc: TableDesc; ix: IndexDesc } | undefined {
  for (const db of snap.databases()) {
    for (const t of snap.tablesOf(db.id)) {
      if (t.desc.id !== tableId) continue;
      const ix = t.desc.indexes.find((x) => x.id === indexId);
      return ix !== undefined ? { desc: t.desc, ix } : undefined;
    }
  }
  return undefined;
}

/** One chunk: reads up to `limit` rows from `start`, writes their entries; returns the resume key (null: done). */
async function backfillChunk(txn: SqlTxn, desc: TableDesc, ix: IndexDesc, start: Buffer): Promise<Buffer | null> {
  const primary = new RowCodec(desc);
  const codec = new IndexCodec(desc, ix, primary);
  const span = tableIndexSpan(desc.id, desc.primaryIndex.id);
  const b = new KVBatch();
  b.scan(start, span.endKey, { limit: backfillChunkRows });
  const [res] = await txn.run(b);
  if (res?.kind !== 'scan') throw new Error('schema: unexpected scan result');
  const entries = res.rows.map((kv) => {
    const row: Datum[] = new Array(desc.columns.length).fill(null);
    primary.decodeKey(kv.key, row);
    primary.decodeValue(kv.value, row);
    return { row, e: codec.entry(row) };
  });
  const uniques = entries.filter((x) => x.e.unique);
  const existing = new Map<string, Buffer | null>();
  if (uniques.length > 0) {
    const g = new KVBatch();
    for (const u of uniques) g.get(u.e.key);
    const got = await txn.run(g);
    uniques.forEach((u, i) => {
      const r = got[i];
      existing.set(u.e.key.toString('latin1'), r?.kind === 'get' ? r.value : null);
    });
  }
  const w = new KVBatch();
  for (const { row, e } of entries) {
    if (e.unique) {
      const k = e.key.toString('latin1');
      const old = existing.get(k) ?? null;
      if (old !== null && !old.equals(e.value)) {
        const names = codec.keyOrdinals.map((o) => desc.columns[o]?.name).join(', ');
        const vals = codec.keyOrdinals.map((o) => datumToText(row[o] as NonNullable<Datum>, primary.types[o] as SqlType)).join(', ');
        throw new SqlError('sql.unique_violation', '23505', `could not create unique index "${ix.name}"`, { detail: `Key (${names})=(${vals}) is duplicated.` });
      }
      if (old !== null) continue;
      existing.set(k, e.value); // a duplicate later in the same chunk
    }
    w.put(e.key, e.value);
  }
  if (w.length > 0) await txn.run(w);
  return res.resumeKey;
}

/**
 * Backfills write_only index `indexId` of table `tableId` chunk by chunk,
 * then makes it public; on failure removes it and rethrows.
 */
export async function backfillOnline(db: KVDB, tableId: number, indexId: number): Promise<void> {
  // undefined: the start of the primary index (not always index 1: ALTER PRIMARY KEY, primary-key.ts)
  let start: Buffer | null | undefined;
  try {
    while (start !== null) {
      // Let the node's other sessions run between chunks (an in-memory KV
      // would otherwise resolve every chunk without ever yielding to I/O).
      await new Promise<void>((resolve) => setImmediate(resolve));
      const from: Buffer | undefined = start;
      start = await runTxn(db, async (txn, snap) => {
        const f = findIndex(snap, tableId, indexId);
        if (f === undefined) throw new SqlError('sql.object_not_in_prerequisite_state', '55000', 'schema: index dropped during its backfill');
        return backfillChunk(txn, f.desc, f.ix, from ?? tableIndexSpan(tableId, f.desc.primaryIndex.id).key);
      });
    }
    await runTxn(db, async (txn, snap) => {
      const f = findIndex(snap, tableId, indexId);
      if (f === undefined) throw new SqlError('sql.object_not_in_prerequisite_state', '55000', 'schema: index dropped during its backfill');
      const b = new KVBatch();
      putDescriptor(b, { ...f.desc, version: f.desc.version + 1, indexes: f.desc.indexes.map((x) => (x.id === indexId ? { ...x, state: 'public' } : x)) }, snap.version);
      await txn.run(b);
    });
  } catch (e) {
    await runTxn(db, async (txn, snap) => {
      const f = findIndex(snap, tableId, indexId);
      if (f === undefined) return;
      const b = new KVBatch();
      putDescriptor(b, { ...f.desc, version: f.desc.version + 1, indexes: f.desc.indexes.filter((x) => x.id !== indexId) }, snap.version);
      const span = tableIndexSpan(tableId, indexId);
      b.delRange(span.key, span.endKey);
      await txn.run(b);
    });
    throw e;
  }
}
