/**
 * sql/schema/table-indexes.ts — the unique secondary indexes a CREATE TABLE
 * declares through UNIQUE column and table constraints.
 *
 * Names follow PostgreSQL (`table_col1_col2_key`, numbered on collision);
 * a UNIQUE list equal to the primary key adds nothing. The table is empty,
 * so the indexes are public at once (no backfill).
 */
import type { TableDesc } from '../catalog/descriptor.js';
import { IndexCodec } from '../rowenc/index-codec.js';
import { RowCodec } from '../rowenc/row-codec.js';
import { buildIndexDesc, defaultIndexName } from './index-ddl.js';

export function withUniqueIndexes(desc: TableDesc, uniques: readonly { name: string | undefined; columns: readonly string[] }[]): TableDesc {
  let d = desc;
  const pkNames = desc.primaryIndex.keyColumnIds.map((id) => desc.columns.find((c) => c.id === id)?.name);
  for (const u of uniques) {
    if (u.columns.length === pkNames.length && u.columns.every((c, i) => c === pkNames[i])) continue;
    const taken = (n: string): boolean => n === d.name || n === d.primaryIndex.name || d.indexes.some((x) => x.name === n);
    const name = u.name ?? defaultIndexName(d.name, u.columns, true, taken);
    const ix = buildIndexDesc(d, name, true, u.columns.map((c) => ({ column: c, expr: undefined, dir: 'default', nulls: 'default' })), []);
    d = { ...d, indexes: [...d.indexes, ix], nextIndexId: ix.id + 1 };
    new IndexCodec(d, ix, new RowCodec(d)); // key types must have a key encoding (0A000)
  }
  return d;
}
