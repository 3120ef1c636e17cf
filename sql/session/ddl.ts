/**
 * sql/session/ddl.ts — schema statements and catalog-reading SHOW statements.
 *
 * DDL runs inside the statement's transaction (implicit or explicit): it
 * reads the catalog through the transaction (loadSnapshot), writes new
 * descriptors, namespace entries and the bumped schema version in the same
 * transaction (catalog.ts explains why readers never see half a change), and
 * marks the SqlTxn schema-dirty so the transaction's later statements plan
 * against its own uncommitted schema. The session drops the node's cached
 * snapshot when such a transaction commits.
 *
 * CREATE TABLE:
 *   - SERIAL/SMALLSERIAL/BIGSERIAL become INT8 NOT NULL DEFAULT unique_rowid()
 *     (CockroachDB's serial_normalization = rowid, kept although sequences
 *     exist now: a sequence is a single hot key every insert would contend
 *     on; write DEFAULT nextval('seq') for PostgreSQL's dense numbering);
 *   - a table without a PRIMARY KEY gets a hidden `rowid INT8 NOT NULL
 *     DEFAULT unique_rowid()` key column;
 *   - UNIQUE constraints other than the primary key become unique secondary
 *     indexes named table_col_key (sql/schema/index-ddl.ts);
 *   - DEFAULT and CHECK expressions are type-checked now and stored as text.
 */
import { tableSpan } from '../../storage/keys.js';
import { KVBatch } from '../kv.js';
import type { CreateTableStatement, Expr, TableName } from '../parser/ast.js';
import { formatExpr, formatTypeName, quoteIdent } from '../parser/format.js';
import { walkExpr } from '../parser/walk.js';
import { SqlError, unimplemented } from '../parser/sql-error.js';
import { formatType, typeFromName, T, type SqlType } from '../types/type.js';
import { allocateDescId, deleteDescriptor, loadSnapshot, writeNewDescriptor, type CatalogSnapshot, type TableEntry } from '../catalog/catalog.js';
import { PRIMARY_INDEX_ID, type CheckDesc, type ColumnDesc, type DatabaseDesc, type TableDesc } from '../catalog/descriptor.js';
import { RowCodec, sqlTypeOf } from '../rowenc/row-codec.js';
import { ExprCompiler, Scope } from '../sem/expr.js';
import type { SqlTxn } from '../exec/sql-txn.js';
import type { Datum } from '../sem/datum.js';
import { withUniqueIndexes } from '../schema/table-indexes.js';
import { addForeignKeys, dropReferencingFks } from '../schema/foreign-keys.js';
import { putDescriptor } from '../schema/index-ddl.js';
import { foreignKeyDefs } from '../vtable/virtual-tables.js';

export interface UtilityResult {
  readonly columns: readonly { readonly name: string; readonly type: SqlType }[] | undefined;
  readonly rows: Datum[][];
  readonly tag: string;
  readonly notices?: readonly string[];
}

async function txnSnapshot(txn: SqlTxn): Promise<CatalogSnapshot> {
  const s = await loadSnapshot(txn.kv);
  txn.markSchemaChecked();
  return s;
}

function dbOf(s: CatalogSnapshot, current: string, name: TableName): DatabaseDesc {
  let dbName = name.catalog ?? current;
  if (name.catalog === undefined && name.schema !== undefined && name.schema !== 'public') dbName = name.schema;
  const db = s.database(dbName);
  if (db === undefined) throw new SqlError('sql.undefined_database', '3D000', `database "${dbName}" does not exist`);
  return db;
}

function checkName(e: Expr, table: string, taken: Set<string>): string {
  let col: string | undefined;
  walkExpr(e, (x) => {
    if (col === undefined && x.kind === 'ColumnRef' && !x.star) col = x.names[x.names.length - 1];
  });
  const base = col !== undefined ? `${table}_${col}_check` : `${table}_check`;
  let name = base;
  for (let i = 1; taken.has(name); i++) name = `${base}${i}`;
  taken.add(name);
  return name;
}

export async function createTable(txn: SqlTxn, database: string, s: CreateTableStatement): Promise<UtilityResult> {
  const snap = await txnSnapshot(txn);
  const db = dbOf(snap, database, s.table);
  if (snap.table(db.id, s.table.name) !== undefined) {
    if (s.ifNotExists) return { columns: undefined, rows: [], tag: 'CREATE TABLE', notices: [`relation "${s.table.name}" already exists, skipping`] };
    throw new SqlError('sql.duplicate_table', '42P07', `relation "${s.table.name}" already exists`);
  }
  const tname = s.table.name;
  const columns: ColumnDesc[] = [];
  const names = new Set<string>();
  let pk: string[] | undefined;
  const checks: { name: string | undefined; expr: Expr }[] = [];
  const uniques: { name: string | undefined; columns: readonly string[] }[] = [];
  let nextId = 1;
  for (const c of s.columns) {
    if (names.has(c.name)) throw new SqlError('sql.duplicate_column', '42701', `column "${c.name}" specified more than once`);
    names.add(c.name);
    if (c.collation !== undefined) throw unimplemented('COLLATE');
    if (c.type.arrayDims > 0) throw unimplemented('array columns');
    const serial = c.serial !== undefined;
    const type = serial ? T.int8 : typeFromName(c.type.name, c.type.mods, c.type.arrayDims);
    if (c.unique && !c.primaryKey) uniques.push({ name: undefined, columns: [c.name] });
    if (c.primaryKey) {
      if (pk !== undefined) throw new SqlError('sql.invalid_table_definition', '42P16', `multiple primary keys for table "${tname}" are not allowed`);
      pk = [c.name];
    }
    let def = c.default !== undefined ? formatExpr(c.default) : undefined;
    if (serial) def = 'unique_rowid()';
    columns.push({
      id: nextId++,
      name: c.name,
      type: { oid: type.oid, typmod: type.typmod },
      typeText: serial ? 'INT8' : formatTypeName(c.type).toUpperCase(),
      nullable: !(c.notNull || c.primaryKey || serial),
      defaultExpr: def,
      hidden: false,
    });
    for (const ch of c.checks) checks.push({ name: ch.name, expr: ch.expr });
  }
  for (const k of s.constraints) {
    if (k.kind === 'PrimaryKey') {
      if (pk !== undefined) throw new SqlError('sql.invalid_table_definition', '42P16', `multiple primary keys for table "${tname}" are not allowed`);
      pk = [...k.columns];
    } else if (k.kind === 'Unique') {
      uniques.push({ name: k.name, columns: k.columns });
    } else if (k.kind === 'Check') checks.push({ name: k.name, expr: k.expr });
  }
  if (pk === undefined) {
    let name = 'rowid';
    for (let i = 1; names.has(name); i++) name = `rowid_${i}`;
    columns.push({ id: nextId++, name, type: { oid: T.int8.oid, typmod: -1 }, typeText: 'INT8', nullable: false, defaultExpr: 'unique_rowid()', hidden: true });
    pk = [name];
  }
  const keyIds = pk.map((n) => {
    const col = columns.find((c) => c.name === n);
    if (col === undefined) throw new SqlError('sql.undefined_column', '42703', `column "${n}" named in key does not exist`);
    const i = columns.indexOf(col);
    columns[i] = { ...col, nullable: false };
    return col.id;
  });
  // Validate DEFAULTs and CHECKs against the new columns.
  const scope = new Scope(columns.map((c) => ({ name: c.name, table: tname, type: sqlTypeOf(c.type), hidden: c.hidden })));
  const compiler = new ExprCompiler(scope, []);
  const empty = new ExprCompiler(new Scope([]), []);
  for (const c of columns) {
    if (c.defaultExpr === undefined) continue;
    const type = sqlTypeOf(c.type);
    const src = s.columns.find((x) => x.name === c.name)?.default;
    const e = src ?? ({ kind: 'FuncCall', name: ['unique_rowid'], args: [], star: false, distinct: false, orderBy: [], filter: undefined, over: undefined } as Expr);
    const t = empty.compile(e, type);
    try {
      empty.coerce(t, type, 'assignment');
    } catch {
      throw new SqlError('sql.datatype_mismatch', '42804', `column "${c.name}" is of type ${formatType(type)} but default expression is of type ${formatType(t.type)}`);
    }
  }
  const taken = new Set<string>();
  const checkDescs: CheckDesc[] = checks.map((ch) => {
    compiler.compileBool(ch.expr, 'CHECK');
    const name = ch.name ?? checkName(ch.expr, tname, taken);
    taken.add(name);
    return { name, expr: formatExpr(ch.expr) };
  });
  const id = await allocateDescId(txn.kv);
  let desc: TableDesc = {
    kind: 'table',
    id,
    name: tname,
    parentId: db.id,
    version: 1,
    columns,
    nextColumnId: nextId,
    primaryIndex: { id: PRIMARY_INDEX_ID, name: `${tname}_pkey`, unique: true, keyColumnIds: keyIds, directions: keyIds.map(() => 'asc'), storeColumnIds: [] },
    indexes: [],
    nextIndexId: PRIMARY_INDEX_ID + 1,
    checks: checkDescs,
  };
  desc = withUniqueIndexes(desc, uniques);
  const fks = [...s.columns.flatMap((c) => c.references ?? []), ...s.constraints.filter((k) => k.kind === 'ForeignKey')];
  if (fks.length > 0) desc = addForeignKeys(snap, desc, fks).desc;
  new RowCodec(desc); // rejects key columns without a key encoding (0A000)
  await writeNewDescriptor(txn.kv, desc, snap.version);
  txn.schemaDirty = true;
  return { columns: undefined, rows: [], tag: 'CREATE TABLE' };
}

export async function dropTables(txn: SqlTxn, database: string, names: readonly TableName[], ifExists: boolean, cascade = false): Promise<UtilityResult> {
  const snap = await txnSnapshot(txn);
  const notices: string[] = [];
  const b = new KVBatch();
  const dropped: TableEntry[] = [];
  for (const n of names) {
    const db = dbOf(snap, database, n);
    const t = snap.table(db.id, n.name);
    if (t === undefined) {
      if (ifExists) {
        notices.push(`table "${n.name}" does not exist, skipping`);
        continue;
      }
      throw new SqlError('sql.undefined_table', '42P01', `table "${n.name}" does not exist`);
    }
    dropped.push(t);
  }
  const fks = dropReferencingFks(dropped, cascade); // foreign keys of other tables (sql/schema/foreign-keys.ts)
  for (const d of fks.children) putDescriptor(b, d, snap.version);
  notices.push(...fks.notices);
  for (const t of dropped) {
    deleteDescriptor(b, t.desc, snap.version);
    const span = tableSpan(t.desc.id);
    b.delRange(span.key, span.endKey);
  }
  if (b.length > 0) {
    await txn.run(b);
    txn.schemaDirty = true;
  }
  return { columns: undefined, rows: [], tag: 'DROP TABLE', notices };
}

export async function createDatabase(txn: SqlTxn, name: string, ifNotExists: boolean): Promise<UtilityResult> {
  const snap = await txnSnapshot(txn);
  if (snap.database(name) !== undefined) {
    if (ifNotExists) return { columns: undefined, rows: [], tag: 'CREATE DATABASE', notices: [`database "${name}" already exists, skipping`] };
    throw new SqlError('sql.duplicate_database', '42P04', `database "${name}" already exists`);
  }
  const id = await allocateDescId(txn.kv);
  await writeNewDescriptor(txn.kv, { kind: 'database', id, name, version: 1 }, snap.version);
  txn.schemaDirty = true;
  return { columns: undefined, rows: [], tag: 'CREATE DATABASE' };
}

export async function dropDatabase(txn: SqlTxn, current: string, name: string, ifExists: boolean): Promise<UtilityResult> {
  const snap = await txnSnapshot(txn);
  const db = snap.database(name);
  if (db === undefined) {
    if (ifExists) return { columns: undefined, rows: [], tag: 'DROP DATABASE', notices: [`database "${name}" does not exist, skipping`] };
    throw new SqlError('sql.undefined_database', '3D000', `database "${name}" does not exist`);
  }
  if (name === current) throw new SqlError('sql.object_in_use', '55006', 'cannot drop the currently open database');
  if (name === 'system') throw new SqlError('sql.insufficient_privilege', '42501', 'cannot drop the system database');
  const b = new KVBatch();
  for (const t of snap.tablesOf(db.id)) {
    deleteDescriptor(b, t.desc, snap.version);
    const span = tableSpan(t.desc.id);
    b.delRange(span.key, span.endKey);
  }
  deleteDescriptor(b, db, snap.version);
  await txn.run(b);
  txn.schemaDirty = true;
  return { columns: undefined, rows: [], tag: 'DROP DATABASE' };
}

// ---- SHOW ------------------------------------------------------------------------------

export function showDatabases(snap: CatalogSnapshot): UtilityResult {
  return {
    columns: [
      { name: 'database_name', type: T.text },
      { name: 'owner', type: T.text },
    ],
    rows: snap.databases().map((d) => [d.name, d.name === 'system' ? 'node' : 'root']),
    tag: 'SHOW DATABASES',
  };
}

export function showTables(snap: CatalogSnapshot, database: string): UtilityResult {
  const db = snap.database(database);
  if (db === undefined) throw new SqlError('sql.undefined_database', '3D000', `database "${database}" does not exist`);
  return {
    columns: [
      { name: 'schema_name', type: T.text },
      { name: 'table_name', type: T.text },
      { name: 'type', type: T.text },
      { name: 'owner', type: T.text },
    ],
    rows: snap.tablesOf(db.id).map((t) => ['public', t.desc.name, 'table', 'root']),
    tag: 'SHOW TABLES',
  };
}

export function showColumns(t: TableEntry): UtilityResult {
  const pkIds = new Set(t.desc.primaryIndex.keyColumnIds);
  return {
    columns: [
      { name: 'column_name', type: T.text },
      { name: 'data_type', type: T.text },
      { name: 'is_nullable', type: T.bool },
      { name: 'column_default', type: T.text },
      { name: 'indices', type: T.text },
      { name: 'is_hidden', type: T.bool },
    ],
    rows: t.desc.columns.map((c) => [c.name, c.typeText, c.nullable, c.defaultExpr ?? null, pkIds.has(c.id) ? `{${t.desc.primaryIndex.name}}` : '{}', c.hidden]),
    tag: 'SHOW COLUMNS',
  };
}

export function showCreateTable(t: TableEntry): UtilityResult {
  const lines: string[] = [];
  for (const c of t.desc.columns) {
    let l = `\t${quoteIdent(c.name)} ${c.typeText}`;
    if (!c.nullable) l += ' NOT NULL';
    if (c.defaultExpr !== undefined) l += ` DEFAULT ${c.defaultExpr}`;
    if (c.hidden) l += ' NOT VISIBLE';
    lines.push(l);
  }
  const pkCols = t.desc.primaryIndex.keyColumnIds.map((id) => quoteIdent(t.desc.columns.find((c) => c.id === id)?.name ?? '?'));
  lines.push(`\tCONSTRAINT ${quoteIdent(t.desc.primaryIndex.name)} PRIMARY KEY (${pkCols.join(', ')})`);
  for (const ch of t.desc.checks) lines.push(`\tCONSTRAINT ${quoteIdent(ch.name)} CHECK (${ch.expr})`);
  for (const fk of foreignKeyDefs(t)) lines.push(`\tCONSTRAINT ${quoteIdent(fk.name)} ${fk.def}`);
  const stmt = `CREATE TABLE public.${quoteIdent(t.desc.name)} (\n${lines.join(',\n')}\n)`;
  return {
    columns: [
      { name: 'table_name', type: T.text },
      { name: 'create_statement', type: T.text },
    ],
    rows: [[t.desc.name, stmt]],
    tag: 'SHOW CREATE',
  };
}
