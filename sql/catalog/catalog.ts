/**
 * sql/catalog/catalog.ts — the node's descriptor cache and schema changes.
 *
 * Caching scheme (one global schema version, checked in the first batch):
 *   - Every schema change (CREATE/DROP DATABASE/TABLE) writes its
 *     descriptors AND increments the schema version at
 *     descriptorKey(SCHEMA_VERSION_ID), in the same transaction.
 *   - Each node caches a CatalogSnapshot: all descriptors as of one schema
 *     version. A transaction plans its statements against the cached snapshot
 *     without any read, and SqlTxn (sql/exec/sql-txn.ts) adds a get of the
 *     version key to the transaction's first KV batch. If the version read
 *     differs from the snapshot's, the statement fails with
 *     SchemaChangedError: the session drops the cache and retries the
 *     statement (implicit txn) or reports 40001 (explicit txn).
 *   - Because the version is read inside the (serializable) transaction, a
 *     schema change that commits after the read conflicts with it: the
 *     transaction restarts instead of committing against a stale schema. So a
 *     statement never sees a half-applied schema, at the cost of one extra
 *     key in the first batch — no extra round trip.
 *   - Descriptor leases (lease-manager.ts) replace the version read for
 *     implicit statements: a node holding a lease on version V runs them
 *     against V's snapshot with the lease expiration as commit deadline, and
 *     a schema change fences and drains every lease before it writes the
 *     version key — the same one-version-at-a-time guarantee, no read.
 *   - A transaction that changed the schema itself (DDL inside BEGIN) plans
 *     its later statements against a snapshot loaded through the transaction
 *     (its own uncommitted descriptors), never the node cache.
 * Loading a snapshot reads the version key and scans the descriptor span in
 * one batch.
 *
 * Ownership: one Catalog per node, shared by its sessions. Snapshots are
 * immutable.
 */
import { DESC_ID_GENERATOR_KEY, DESCRIPTOR_PREFIX, descriptorKey, namespaceKey } from '../../storage/keys.js';
import { prefixEnd } from '../../storage/encoding/index.js';
import { CairnError } from '../../src/util/errors.js';
import { KVBatch, type KVDB, type KVTxn } from '../kv.js';
import { SqlError } from '../parser/sql-error.js';
import { RowCodec } from '../rowenc/row-codec.js';
import { USERS_SPAN, userNames } from './users.js';
import {
  DEFAULTDB_ID,
  FIRST_USER_DESC_ID,
  POSTGRES_ID,
  SCHEMA_VERSION_ID,
  SYSTEM_DATABASE_ID,
  decodeDescriptor,
  decodeUint,
  encodeDescriptor,
  encodeUint,
  type DatabaseDesc,
  type Descriptor,
  type ForeignKeyDesc,
  type TableDesc,
  type SequenceDesc,
  type ViewDesc,
} from './descriptor.js';

export const SCHEMA_VERSION_KEY: Buffer = descriptorKey(SCHEMA_VERSION_ID);

/** A table descriptor plus what the executor derives from it once. */
export interface TableEntry {
  readonly desc: TableDesc;
  readonly codec: RowCodec;
  readonly db: DatabaseDesc;
  /** Foreign keys of this table (it is the child), resolved to both tables' entries. */
  readonly outboundFks: readonly FkRef[];
  /** Foreign keys of other tables (or self) referencing this one. */
  readonly inboundFks: readonly FkRef[];
}

/** A foreign key with both of its tables resolved in one snapshot (a self-reference has child === parent). */
export interface FkRef {
  readonly fk: ForeignKeyDesc;
  readonly child: TableEntry;
  readonly parent: TableEntry;
}

/** All descriptors as of one schema version; immutable. */
export class CatalogSnapshot {
  private readonly dbs = new Map<string, DatabaseDesc>();
  private readonly tables = new Map<string, TableEntry>();
  private readonly byId = new Map<number, Descriptor>();
  private readonly views = new Map<string, ViewDesc>();
  private readonly sequences = new Map<string, SequenceDesc>();

  constructor(
    readonly version: number,
    descs: readonly Descriptor[],
    /** The stored SQL users (root not included), sorted (users.ts; pg_roles). */
    readonly users: readonly string[] = [],
  ) {
    for (const d of descs) {
      this.byId.set(d.id, d);
      if (d.kind === 'database') this.dbs.set(d.name, d);
    }
    for (const d of descs) {
      if (d.kind === 'view') {
        this.views.set(`${d.parentId}/${d.name}`, d);
        continue;
      }
      if (d.kind === 'sequence') {
        this.sequences.set(`${d.parentId}/${d.name}`, d);
        continue;
      }
      if (d.kind !== 'table') continue;
      const db = this.byId.get(d.parentId);
      if (db === undefined || db.kind !== 'database') continue;
      this.tables.set(`${d.parentId}/${d.name}`, { desc: d, codec: new RowCodec(d), db, outboundFks: [], inboundFks: [] });
    }
    const byTableId = new Map<number, TableEntry>();
    for (const t of this.tables.values()) byTableId.set(t.desc.id, t);
    for (const child of byTableId.values()) {
      for (const fk of child.desc.foreignKeys ?? []) {
        const parent = byTableId.get(fk.referencedTableId);
        if (parent === undefined) continue;
        const ref: FkRef = { fk, child, parent };
        (child.outboundFks as FkRef[]).push(ref);
        (parent.inboundFks as FkRef[]).push(ref);
      }
    }
  }

  /** A table by descriptor id. */
  tableById(id: number): TableEntry | undefined {
    const d = this.byId.get(id);
    if (d === undefined || d.kind !== 'table') return undefined;
    return this.tables.get(`${d.parentId}/${d.name}`);
  }

  database(name: string): DatabaseDesc | undefined {
    return this.dbs.get(name);
  }
  table(dbId: number, name: string): TableEntry | undefined {
    return this.tables.get(`${dbId}/${name}`);
  }
  /** A view by name (sql/schema/view-ddl.ts). */
  view(dbId: number, name: string): ViewDesc | undefined {
    return this.views.get(`${dbId}/${name}`);
  }

  /** A sequence by name (sql/schema/sequences.ts). */
  sequence(dbId: number, name: string): SequenceDesc | undefined {
    return this.sequences.get(`${dbId}/${name}`);
  }

  /** Whether any view exists (statements then go through view expansion). */
  get hasViews(): boolean {
    return this.views.size > 0;
  }

  databases(): DatabaseDesc[] {
    return [...this.dbs.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  }
  /** The views of a database, by name. */
  viewsOf(dbId: number): ViewDesc[] {
    return [...this.views.values()].filter((v) => v.parentId === dbId).sort((a, b) => (a.name < b.name ? -1 : 1));
  }
  /** The sequences of a database, by name. */
  sequencesOf(dbId: number): SequenceDesc[] {
    return [...this.sequences.values()].filter((s) => s.parentId === dbId).sort((a, b) => (a.name < b.name ? -1 : 1));
  }
  tablesOf(dbId: number): TableEntry[] {
    return [...this.tables.values()].filter((t) => t.desc.parentId === dbId).sort((a, b) => (a.desc.name < b.desc.name ? -1 : 1));
  }
}

/** The cached snapshot was older than the schema the transaction read. */
export class SchemaChangedError extends CairnError {
  override name = 'SchemaChangedError';
  constructor() {
    super('sql.schema_changed', 'restart transaction: schema changed during the transaction', { retryable: true, sqlState: '40001' });
  }
}

/** Reads a snapshot through `txn`: the version key and every descriptor, one batch. */
export async function loadSnapshot(txn: KVTxn): Promise<CatalogSnapshot> {
  const b = new KVBatch();
  b.get(SCHEMA_VERSION_KEY);
  b.scan(descriptorKey(SCHEMA_VERSION_ID + 1), prefixEnd(DESCRIPTOR_PREFIX));
  const users = USERS_SPAN;
  b.scan(users.start, users.end);
  const [v, s, u] = await txn.run(b);
  if (v?.kind !== 'get' || s?.kind !== 'scan' || u?.kind !== 'scan') throw new Error('catalog: unexpected results');
  return new CatalogSnapshot(decodeUint(v.value), s.rows.map((r) => decodeDescriptor(r.value)), userNames(u.rows));
}

/**
 * Bumps the schema version inside `txn` (CREATE / DROP USER: the users are
 * part of the snapshot, so every node's cache must see the change).
 */
export async function bumpSchemaVersion(txn: KVTxn): Promise<void> {
  const b = new KVBatch();
  b.get(SCHEMA_VERSION_KEY);
  const [v] = await txn.run(b);
  if (v?.kind !== 'get') throw new Error('catalog: unexpected result');
  const w = new KVBatch();
  w.put(SCHEMA_VERSION_KEY, encodeUint(decodeUint(v.value) + 1));
  await txn.run(w);
}

export class Catalog {
  private snapshot: CatalogSnapshot | undefined;

  constructor(private readonly db: KVDB) {}

  /** The cached snapshot, if any. */
  cached(): CatalogSnapshot | undefined {
    return this.snapshot;
  }

  /** Installs a snapshot read by a transaction (keeps the newest). */
  offer(s: CatalogSnapshot): void {
    if (this.snapshot === undefined || s.version >= this.snapshot.version) this.snapshot = s;
  }

  invalidate(): void {
    this.snapshot = undefined;
  }

  /** Creates the system, defaultdb and postgres databases if missing (idempotent). */
  async bootstrap(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const txn = this.db.newTxn();
      try {
        const b = new KVBatch();
        b.get(SCHEMA_VERSION_KEY);
        const [v] = await txn.run(b);
        if (v?.kind === 'get' && v.value !== null) {
          await txn.commit();
          return;
        }
        const w = new KVBatch();
        for (const [id, name] of [
          [SYSTEM_DATABASE_ID, 'system'],
          [DEFAULTDB_ID, 'defaultdb'],
          [POSTGRES_ID, 'postgres'],
        ] as const) {
          const d: DatabaseDesc = { kind: 'database', id, name, version: 1 };
          w.put(descriptorKey(id), encodeDescriptor(d));
          w.put(namespaceKey(0, name), encodeUint(id));
        }
        w.put(DESC_ID_GENERATOR_KEY, encodeUint(FIRST_USER_DESC_ID - 1));
        w.put(SCHEMA_VERSION_KEY, encodeUint(1));
        await txn.commitInBatch(w);
        return;
      } catch (e) {
        await txn.rollback();
        if (!(e instanceof CairnError && e.retryable) || attempt > 20) throw e;
      }
    }
  }
}

/** Hands out the next descriptor id (read-modify-write in `txn`). */
export async function allocateDescId(txn: KVTxn): Promise<number> {
  const b = new KVBatch();
  b.get(DESC_ID_GENERATOR_KEY);
  const [r] = await txn.run(b);
  const next = decodeUint(r?.kind === 'get' ? r.value : null) + 1;
  const w = new KVBatch();
  w.put(DESC_ID_GENERATOR_KEY, encodeUint(Math.max(next, FIRST_USER_DESC_ID)));
  await txn.run(w);
  return Math.max(next, FIRST_USER_DESC_ID);
}

/**
 * Writes a new descriptor with its namespace entry (cput: the name must be
 * free, else 42P07/42P04) and bumps the schema version, in one batch.
 */
export async function writeNewDescriptor(txn: KVTxn, d: Descriptor, snapshotVersion: number): Promise<void> {
  const b = new KVBatch();
  b.cput(namespaceKey(d.kind === 'database' ? 0 : d.parentId, d.name), encodeUint(d.id), null);
  b.put(descriptorKey(d.id), encodeDescriptor(d));
  b.put(SCHEMA_VERSION_KEY, encodeUint(snapshotVersion + 1));
  try {
    await txn.run(b);
  } catch (e) {
    if (e instanceof CairnError && e.code === 'kv.condition_failed') {
      throw d.kind === 'database'
        ? new SqlError('sql.duplicate_database', '42P04', `database "${d.name}" already exists`)
        : new SqlError('sql.duplicate_table', '42P07', `relation "${d.name}" already exists`);
    }
    throw e;
  }
}

/** Removes a descriptor and its namespace entry and bumps the schema version. */
export function deleteDescriptor(b: KVBatch, d: Descriptor, snapshotVersion: number): void {
  b.del(namespaceKey(d.kind === 'database' ? 0 : d.parentId, d.name));
  b.del(descriptorKey(d.id));
  b.put(SCHEMA_VERSION_KEY, encodeUint(snapshotVersion + 1));
}
