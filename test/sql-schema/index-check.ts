/**
 * Index consistency check for tests: every secondary index of a table holds
 * exactly the entries its primary rows imply (same keys, same values), read
 * straight from the KV layer in one transaction.
 */
import { KVBatch, type KVDB, type KeyValue } from '../../sql/kv.js';
import { loadSnapshot } from '../../sql/catalog/catalog.js';
import { indexCodecs } from '../../sql/rowenc/index-codec.js';
import { tableIndexSpan } from '../../storage/keys.js';
import type { Datum } from '../../sql/sem/datum.js';

async function scanAll(db: KVDB, txn: ReturnType<KVDB['newTxn']>, tableId: number, indexId: number): Promise<KeyValue[]> {
  void db;
  const span = tableIndexSpan(tableId, indexId);
  const b = new KVBatch();
  b.scan(span.key, span.endKey);
  const [r] = await txn.run(b);
  if (r?.kind !== 'scan') throw new Error('unexpected result');
  return [...r.rows];
}

/** Problems found (empty when consistent), and the number of rows and entries checked. */
export async function checkIndexes(db: KVDB, database: string, table: string): Promise<{ problems: string[]; rows: number; entries: number }> {
  const txn = db.newTxn({ readOnly: true });
  try {
    const snap = await loadSnapshot(txn);
    const dbDesc = snap.database(database);
    const t = dbDesc !== undefined ? snap.table(dbDesc.id, table) : undefined;
    if (t === undefined) throw new Error(`no table ${database}.${table}`);
    const rows = await scanAll(db, txn, t.desc.id, t.desc.primaryIndex.id);
    const problems: string[] = [];
    let entries = 0;
    for (const ic of indexCodecs(t.desc, t.codec)) {
      const want = new Map<string, string>();
      for (const kv of rows) {
        const row: Datum[] = new Array(t.desc.columns.length).fill(null);
        t.codec.decodeKey(kv.key, row);
        t.codec.decodeValue(kv.value, row);
        const e = ic.entry(row);
        want.set(e.key.toString('hex'), e.value.toString('hex'));
      }
      const got = await scanAll(db, txn, t.desc.id, ic.index.id);
      entries += got.length;
      for (const kv of got) {
        const k = kv.key.toString('hex');
        const w = want.get(k);
        if (w === undefined) problems.push(`${ic.index.name}: stray entry ${k}`);
        else if (w !== kv.value.toString('hex')) problems.push(`${ic.index.name}: entry ${k} has a stale value`);
        want.delete(k);
      }
      for (const k of want.keys()) problems.push(`${ic.index.name}: missing entry ${k}`);
    }
    return { problems, rows: rows.length, entries };
  } finally {
    await txn.rollback();
  }
}
