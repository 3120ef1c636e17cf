/**
 * sql/schema/row-scan.ts — reads every row of a table's primary index in
 * chunks, for schema changes (index backfill, column backfill, validation).
 *
 * Rows are decoded in full with the codec of the descriptor passed in (the
 * schema being changed to, so added columns read as NULL). One KV round trip
 * per chunk of `chunk` rows; the callback finishes (its writes included)
 * before the next chunk is read.
 */
import { tableIndexSpan } from '../../storage/keys.js';
import { KVBatch } from '../kv.js';
import type { TableDesc } from '../catalog/descriptor.js';
import { RowCodec } from '../rowenc/row-codec.js';
import type { Datum } from '../sem/datum.js';
import type { SqlTxn } from '../exec/sql-txn.js';

export const SCAN_CHUNK = 1000;

export interface ScannedRow {
  readonly key: Buffer;
  readonly row: Datum[];
}

export async function scanRows(txn: SqlTxn, desc: TableDesc, onChunk: (rows: ScannedRow[]) => Promise<void> | void, chunk = SCAN_CHUNK): Promise<number> {
  const codec = new RowCodec(desc);
  const span = tableIndexSpan(desc.id, desc.primaryIndex.id);
  let start = span.key;
  let n = 0;
  for (;;) {
    const b = new KVBatch();
    b.scan(start, span.endKey, { limit: chunk });
    const [res] = await txn.run(b);
    if (res?.kind !== 'scan') throw new Error('schema: unexpected scan result');
    const rows: ScannedRow[] = res.rows.map((kv) => {
      const row: Datum[] = new Array(desc.columns.length).fill(null);
      codec.decodeKey(kv.key, row);
      codec.decodeValue(kv.value, row);
      return { key: kv.key, row };
    });
    if (rows.length > 0) await onChunk(rows);
    n += rows.length;
    if (res.resumeKey === null) return n;
    start = res.resumeKey;
  }
}
