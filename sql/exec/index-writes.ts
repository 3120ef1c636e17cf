/**
 * sql/exec/index-writes.ts — secondary-index maintenance for mutations.
 *
 * Every INSERT/UPDATE/DELETE/UPSERT sends its primary-index writes and the
 * matching index writes in the SAME KV batch (mutation.ts), so an index is
 * never out of step with its table inside or across transactions:
 *   insert  entry put (cput expected=null for a unique short-form entry)
 *   delete  entry del
 *   update  del(old entry) + put/cput(new entry) when the entry changed;
 *           nothing when neither its key nor its value changed (not even
 *           encoded when no column the entry holds was assigned)
 * Index dels are appended before index writes, so two rows may swap unique
 * values within one statement (the batch applies ops in order).
 *
 * States (descriptor.ts IndexState): 'delete_only' indexes get only the
 * dels; 'write_only' and public ones get everything.
 *
 * A failed unique cput is reported through `conflicts` (key → index name +
 * row) as 23505 naming the index, as PostgreSQL does.
 */
import { KVBatch } from '../kv.js';
import type { TableEntry } from '../catalog/catalog.js';
import { indexCodecs, type IndexCodec } from '../rowenc/index-codec.js';
import { datumToText, type Datum } from '../sem/datum.js';
import { SqlError } from '../parser/sql-error.js';
import type { SqlType } from '../types/type.js';
import type { Row } from './operators.js';

export interface UniqueConflict {
  readonly codec: IndexCodec;
  readonly row: Row;
}

export class IndexWrites {
  readonly codecs: readonly IndexCodec[];
  private readonly dels: Buffer[] = [];
  private readonly puts: { key: Buffer; value: Buffer; unique: boolean }[] = [];
  readonly conflicts = new Map<string, UniqueConflict>();

  constructor(readonly table: TableEntry) {
    this.codecs = indexCodecs(table.desc, table.codec);
  }

  get empty(): boolean {
    return this.codecs.length === 0;
  }

  private add(c: IndexCodec, row: Row): void {
    if (c.index.state === 'delete_only') return;
    const e = c.entry(row);
    this.puts.push(e);
    if (e.unique) this.conflicts.set(e.key.toString('latin1'), { codec: c, row });
  }

  insert(row: Row): void {
    for (const c of this.codecs) this.add(c, row);
  }

  delete(row: Row): void {
    for (const c of this.codecs) this.dels.push(c.entry(row).key);
  }

  update(old: Row, next: Row): void {
    for (const c of this.codecs) {
      if (c.index.state === 'delete_only') {
        this.dels.push(c.entry(old).key);
        continue;
      }
      // No column the entry holds was assigned a new datum (an UPDATE's untouched columns keep the old row's
      // datum objects): the entry is unchanged, nothing to encode or compare.
      if (sameCovered(c.covered, old, next)) continue;
      const o = c.entry(old);
      const n = c.entry(next);
      if (o.key.equals(n.key)) {
        if (!o.value.equals(n.value)) this.puts.push({ key: n.key, value: n.value, unique: false });
        continue;
      }
      this.dels.push(o.key);
      this.puts.push(n);
      if (n.unique) this.conflicts.set(n.key.toString('latin1'), { codec: c, row: next });
    }
  }

  /** Appends the collected dels, then the writes, to `b`. */
  flush(b: KVBatch): void {
    for (const k of this.dels) b.del(k);
    for (const p of this.puts) {
      if (p.unique) b.cput(p.key, p.value, null);
      else b.put(p.key, p.value);
    }
  }
}

/** Whether every column marked in `covered` holds the same datum (Object.is: -0 is not 0) in both rows. */
function sameCovered(covered: Uint8Array, a: Row, b: Row): boolean {
  for (let i = 0; i < covered.length; i++) if (covered[i] === 1 && !Object.is(a[i], b[i])) return false;
  return true;
}

/** 23505 for a unique index entry that already existed. */
export function indexUniqueViolation(table: TableEntry, c: UniqueConflict): SqlError {
  const names = c.codec.keyOrdinals.map((o) => table.desc.columns[o]?.name).join(', ');
  const vals = c.codec.keyOrdinals.map((o) => {
    const v = c.row[o] as Datum;
    return v === null ? 'null' : datumToText(v, table.codec.types[o] as SqlType);
  });
  return new SqlError('sql.unique_violation', '23505', `duplicate key value violates unique constraint "${c.codec.index.name}"`, {
    detail: `Key (${names})=(${vals.join(', ')}) already exists.`,
    schema: 'public',
    table: table.desc.name,
    constraint: c.codec.index.name,
  });
}
