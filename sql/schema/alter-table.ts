/**
 * sql/schema/alter-table.ts — ALTER TABLE and RENAME.
 *
 * The commands of one ALTER TABLE apply in order to a working copy of the
 * descriptor; data work (column backfill, validation scans, index backfill,
 * index range deletion) runs in the statement's transaction, and the new
 * descriptor is written once at the end with the schema version bumped in
 * the same transaction (catalog.ts), so other sessions and nodes switch from
 * the old schema to the new one at commit, never seeing a half-applied one.
 *
 *   ADD COLUMN [IF NOT EXISTS] c T [DEFAULT e] [NOT NULL] [UNIQUE] [CHECK]
 *       new column id; existing rows are rewritten with the default
 *       (evaluated per row, so volatile defaults differ per row) when it is
 *       not NULL; NOT NULL without a default on a non-empty table is 23502
 *   DROP COLUMN [IF EXISTS] c
 *       the column leaves the descriptor (its bytes in old row values are
 *       skipped by id — ids are never reused); indexes and CHECKs using it
 *       are dropped with it, as in PostgreSQL; a primary-key column is 0A000
 *   ALTER COLUMN c SET DEFAULT e | DROP DEFAULT | SET NOT NULL | DROP NOT NULL
 *       SET NOT NULL scans the rows (23502 if one holds NULL)
 *   ADD CONSTRAINT … UNIQUE (cols) | CHECK (e)
 *       UNIQUE: a unique index, backfilled (23505 on duplicates);
 *       CHECK: validated against every row (23514)
 *   ADD CONSTRAINT … FOREIGN KEY (cols) REFERENCES t [(cols)] … [NOT VALID]
 *       foreign-keys.ts: resolved, child index added and backfilled if
 *       missing, existing rows validated (23503) unless NOT VALID
 *   ADD [CONSTRAINT name] PRIMARY KEY (cols)
 *       only on a table keyed by its hidden rowid: the primary index is
 *       rebuilt under the new key (primary-key.ts)
 *   DROP CONSTRAINT [IF EXISTS] name   (a CHECK, FOREIGN KEY or UNIQUE index)
 *   VALIDATE CONSTRAINT name           (a NOT VALID foreign key: rows checked)
 *   RENAME TO, RENAME COLUMN a TO b, RENAME CONSTRAINT, ALTER INDEX RENAME
 *       column references inside DEFAULT and CHECK text are rewritten.
 * Not supported (0A000): ALTER COLUMN TYPE, replacing a declared primary key.
 */
import { namespaceKey, tableIndexSpan } from '../../storage/keys.js';
import { CairnError } from '../../src/util/errors.js';
import { KVBatch } from '../kv.js';
import type { AlterTableStatement, ColumnDef, Expr, ForeignKeyConstraint, RenameStatement, TableConstraint } from '../parser/ast.js';
import { formatExpr, formatTypeName } from '../parser/format.js';
import { parseExpr } from '../parser/parse.js';
import { walkExpr } from '../parser/walk.js';
import { SqlError, unimplemented } from '../parser/sql-error.js';
import { formatType, typeFromName, T, type SqlType } from '../types/type.js';
import type { CatalogSnapshot, TableEntry } from '../catalog/catalog.js';
import { encodeUint, type ColumnDesc, type TableDesc } from '../catalog/descriptor.js';
import { RowCodec, sqlTypeOf } from '../rowenc/row-codec.js';
import { IndexCodec } from '../rowenc/index-codec.js';
import { ExprCompiler, Scope, type EvalEnv } from '../sem/expr.js';
import { assignCast } from '../sem/datum.js';
import type { SqlTxn } from '../exec/sql-txn.js';
import { backfillIndex, buildIndexDesc, defaultIndexName, putDescriptor, schemaSnapshot, type DdlResult } from './index-ddl.js';
import { scanRows } from './row-scan.js';
import { addForeignKeys, checkColumnUnreferenced, checkIndexUnreferenced, unusedImplicitIndexes, validateForeignKey } from './foreign-keys.js';
import { addPrimaryKeyIndex, alterPrimaryKey } from './primary-key.js';

function resolve(snap: CatalogSnapshot, database: string, name: { catalog?: string | undefined; name: string }): TableEntry | undefined {
  const db = snap.database(name.catalog ?? database);
  return db !== undefined ? snap.table(db.id, name.name) : undefined;
}

function noTable(name: string): SqlError {
  return new SqlError('sql.undefined_table', '42P01', `relation "${name}" does not exist`);
}

function columnOf(d: TableDesc, name: string): ColumnDesc {
  const c = d.columns.find((x) => x.name === name);
  if (c === undefined) throw new SqlError('sql.undefined_column', '42703', `column "${name}" of relation "${d.name}" does not exist`);
  return c;
}

function compilerFor(d: TableDesc): ExprCompiler {
  return new ExprCompiler(new Scope(d.columns.map((c) => ({ name: c.name, table: d.name, type: sqlTypeOf(c.type), hidden: c.hidden }))), []);
}

/** Type-checks a DEFAULT expression for a column type (42804 on mismatch), returning its text. */
function checkDefault(e: Expr, col: string, type: SqlType): string {
  const empty = new ExprCompiler(new Scope([]), []);
  const t = empty.compile(e, type);
  try {
    empty.coerce(t, type, 'assignment');
  } catch {
    throw new SqlError('sql.datatype_mismatch', '42804', `column "${col}" is of type ${formatType(type)} but default expression is of type ${formatType(t.type)}`);
  }
  return formatExpr(e);
}

function mentions(exprText: string, column: string): boolean {
  let found = false;
  walkExpr(parseExpr(exprText), (x) => {
    if (x.kind === 'ColumnRef' && !x.star && x.names[x.names.length - 1] === column) found = true;
  });
  return found;
}

/** Rewrites column references `from` → `to` inside an expression's text. */
function renameInExpr(exprText: string, from: string, to: string): string {
  const rewrite = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(rewrite);
    if (v === null || typeof v !== 'object' || Buffer.isBuffer(v)) return v;
    const o = v as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) out[k] = rewrite(x);
    if (o.kind === 'ColumnRef' && o.star === false) {
      const names = o.names as string[];
      if (names[names.length - 1] === from) out.names = [...names.slice(0, -1), to];
    }
    return out;
  };
  return formatExpr(rewrite(parseExpr(exprText)) as Expr);
}

class Alter {
  d: TableDesc;
  readonly notices: string[] = [];
  readonly b = new KVBatch();

  constructor(
    readonly txn: SqlTxn,
    readonly snap: CatalogSnapshot,
    readonly env: EvalEnv,
    readonly orig: TableEntry,
  ) {
    this.d = orig.desc;
  }

  private nameTaken(n: string): boolean {
    if (n === this.d.name || n === this.d.primaryIndex.name || this.d.indexes.some((x) => x.name === n)) return true;
    return this.snap.tablesOf(this.d.parentId).some((t) => t.desc.id !== this.d.id && (t.desc.name === n || t.desc.indexes.some((x) => x.name === n)));
  }

  async addColumn(c: ColumnDef, ifNotExists: boolean): Promise<void> {
    if (this.d.columns.some((x) => x.name === c.name)) {
      if (ifNotExists) {
        this.notices.push(`column "${c.name}" of relation "${this.d.name}" already exists, skipping`);
        return;
      }
      throw new SqlError('sql.duplicate_column', '42701', `column "${c.name}" of relation "${this.d.name}" already exists`);
    }
    if (c.primaryKey) throw unimplemented('ALTER TABLE ADD COLUMN … PRIMARY KEY');
    if (c.collation !== undefined) throw unimplemented('COLLATE');
    if (c.type.arrayDims > 0) throw unimplemented('array columns');
    const serial = c.serial !== undefined;
    const type = serial ? T.int8 : typeFromName(c.type.name, c.type.mods, c.type.arrayDims);
    const defText = serial ? 'unique_rowid()' : c.default !== undefined ? checkDefault(c.default, c.name, type) : undefined;
    const col: ColumnDesc = {
      id: this.d.nextColumnId,
      name: c.name,
      type: { oid: type.oid, typmod: type.typmod },
      typeText: serial ? 'INT8' : formatTypeName(c.type).toUpperCase(),
      nullable: !(c.notNull || serial),
      defaultExpr: defText,
      hidden: false,
    };
    const next: TableDesc = { ...this.d, columns: [...this.d.columns, col], nextColumnId: col.id + 1 };
    const ord = next.columns.length - 1;
    if (defText !== undefined) {
      const empty = new ExprCompiler(new Scope([]), []);
      const f = empty.coerce(empty.compile(parseExpr(defText), type), type, 'assignment').fn;
      const codec = new RowCodec(next);
      await scanRows(this.txn, next, async (rows) => {
        const w = new KVBatch();
        for (const r of rows) {
          r.row[ord] = assignCast(f([], this.env), type, type);
          if (r.row[ord] === null) continue;
          w.put(r.key, codec.encodeValue(r.row));
        }
        if (w.length > 0) await this.txn.run(w);
      });
    }
    this.d = next;
    if (!col.nullable) await this.validateNotNull(col);
    for (const ch of c.checks) await this.addCheck(ch.name, ch.expr);
    if (c.unique) await this.addUnique(undefined, [c.name]);
    if (c.references !== undefined) await this.addForeignKey(c.references);
  }

  /** ADD [CONSTRAINT] FOREIGN KEY / REFERENCES: child index backfilled, rows validated unless NOT VALID. */
  async addForeignKey(specs: readonly ForeignKeyConstraint[]): Promise<void> {
    const r = addForeignKeys(this.snap, this.d, specs);
    for (const ix of r.newIndexes) await backfillIndex(this.txn, r.desc, ix);
    this.d = r.desc;
    for (const fk of r.added) if (fk.validated) await validateForeignKey(this.txn, this.snap, this.d, fk);
  }

  async validateNotNull(col: ColumnDesc): Promise<void> {
    const ord = this.d.columns.indexOf(col);
    await scanRows(this.txn, this.d, (rows) => {
      if (rows.some((r) => r.row[ord] === null)) {
        throw new SqlError('sql.not_null_violation', '23502', `column "${col.name}" of relation "${this.d.name}" contains null values`);
      }
    });
  }

  async addCheck(name: string | undefined, e: Expr): Promise<void> {
    const fn = compilerFor(this.d).compileBool(e, 'CHECK').fn;
    let n = name;
    if (n === undefined) {
      let col: string | undefined;
      walkExpr(e, (x) => {
        if (col === undefined && x.kind === 'ColumnRef' && !x.star) col = x.names[x.names.length - 1];
      });
      const base = col !== undefined ? `${this.d.name}_${col}_check` : `${this.d.name}_check`;
      n = base;
      for (let i = 1; this.d.checks.some((c) => c.name === n); i++) n = `${base}${i}`;
    } else if (this.d.checks.some((c) => c.name === name)) {
      throw new SqlError('sql.duplicate_object', '42710', `constraint "${name}" for relation "${this.d.name}" already exists`);
    }
    const checkName = n;
    await scanRows(this.txn, this.d, (rows) => {
      if (rows.some((r) => fn(r.row, this.env) === false)) {
        throw new SqlError('sql.check_violation', '23514', `check constraint "${checkName}" of relation "${this.d.name}" is violated by some row`);
      }
    });
    this.d = { ...this.d, checks: [...this.d.checks, { name: checkName, expr: formatExpr(e) }] };
  }

  async addUnique(name: string | undefined, cols: readonly string[]): Promise<void> {
    const n = name ?? defaultIndexName(this.d.name, cols, true, (x) => this.nameTaken(x));
    if (this.nameTaken(n)) throw new SqlError('sql.duplicate_table', '42P07', `relation "${n}" already exists`);
    const ix = buildIndexDesc(this.d, n, true, cols.map((c) => ({ column: c, expr: undefined, dir: 'default', nulls: 'default' })), []);
    const next: TableDesc = { ...this.d, indexes: [...this.d.indexes, ix], nextIndexId: ix.id + 1 };
    new IndexCodec(next, ix, new RowCodec(next)); // key types must have a key encoding (0A000)
    await backfillIndex(this.txn, next, ix);
    this.d = next;
  }

  addConstraint(k: TableConstraint): Promise<void> {
    if (k.kind === 'PrimaryKey') return this.addPrimaryKey(k.name, k.columns);
    if (k.kind === 'Unique') return this.addUnique(k.name, k.columns);
    if (k.kind === 'ForeignKey') return this.addForeignKey([k]);
    return this.addCheck(k.name, k.expr);
  }

  /** ADD PRIMARY KEY on a table keyed by its hidden rowid: the primary index is rebuilt (primary-key.ts). */
  async addPrimaryKey(name: string | undefined, cols: readonly string[]): Promise<void> {
    this.d = await alterPrimaryKey(this.txn, this.d, name, cols);
  }

  dropIndexData(id: number): void {
    const span = tableIndexSpan(this.d.id, id);
    this.b.delRange(span.key, span.endKey);
  }

  /** VALIDATE CONSTRAINT: checks every row against a NOT VALID foreign key (a CHECK is always valid here). */
  async validateConstraint(name: string): Promise<void> {
    const fk = (this.d.foreignKeys ?? []).find((f) => f.name === name);
    if (fk === undefined) {
      if (this.d.checks.some((c) => c.name === name)) return;
      throw new SqlError('sql.undefined_object', '42704', `constraint "${name}" of relation "${this.d.name}" does not exist`);
    }
    if (fk.validated) return;
    await validateForeignKey(this.txn, this.snap, this.d, fk);
    this.d = { ...this.d, foreignKeys: (this.d.foreignKeys ?? []).map((f) => (f === fk ? { ...f, validated: true } : f)) };
  }

  dropConstraint(name: string, ifExists: boolean): void {
    if ((this.d.foreignKeys ?? []).some((f) => f.name === name)) {
      this.d = { ...this.d, foreignKeys: (this.d.foreignKeys ?? []).filter((f) => f.name !== name) };
      const unused = unusedImplicitIndexes(this.d);
      for (const ix of unused) this.dropIndexData(ix.id);
      this.d = { ...this.d, indexes: this.d.indexes.filter((ix) => !unused.includes(ix)) };
      return;
    }
    if (this.d.checks.some((c) => c.name === name)) {
      this.d = { ...this.d, checks: this.d.checks.filter((c) => c.name !== name) };
      return;
    }
    const ix = this.d.indexes.find((x) => x.name === name && x.unique);
    if (ix !== undefined) {
      checkIndexUnreferenced(this.orig, ix);
      this.d = { ...this.d, indexes: this.d.indexes.filter((x) => x !== ix) };
      this.dropIndexData(ix.id);
      return;
    }
    if (this.d.primaryIndex.name === name) throw unimplemented('dropping the primary key');
    if (ifExists) {
      this.notices.push(`constraint "${name}" of relation "${this.d.name}" does not exist, skipping`);
      return;
    }
    throw new SqlError('sql.undefined_object', '42704', `constraint "${name}" of relation "${this.d.name}" does not exist`);
  }

  dropColumn(name: string, ifExists: boolean): void {
    const col = this.d.columns.find((c) => c.name === name && !c.hidden);
    if (col === undefined) {
      if (ifExists) {
        this.notices.push(`column "${name}" of relation "${this.d.name}" does not exist, skipping`);
        return;
      }
      throw new SqlError('sql.undefined_column', '42703', `column "${name}" of relation "${this.d.name}" does not exist`);
    }
    checkColumnUnreferenced(this.orig, col.id, name);
    if (this.d.primaryIndex.keyColumnIds.includes(col.id)) throw unimplemented('dropping a primary-key column');
    if (this.d.columns.filter((c) => !c.hidden).length === 1) {
      // PostgreSQL allows zero-column tables; Cairn's rows need a value column or key.
      throw unimplemented('dropping the last column');
    }
    const gone = this.d.indexes.filter((x) => x.keyColumnIds.includes(col.id) || x.storeColumnIds.includes(col.id));
    for (const ix of gone) this.dropIndexData(ix.id);
    this.d = {
      ...this.d,
      columns: this.d.columns.filter((c) => c !== col),
      indexes: this.d.indexes.filter((x) => !gone.includes(x)),
      checks: this.d.checks.filter((c) => !mentions(c.expr, name)),
      foreignKeys: (this.d.foreignKeys ?? []).filter((f) => !f.columnIds.includes(col.id) && !(f.referencedTableId === this.d.id && f.referencedColumnIds.includes(col.id))),
    };
  }

  setDefault(name: string, e: Expr | undefined): void {
    const col = columnOf(this.d, name);
    const text = e !== undefined ? checkDefault(e, name, sqlTypeOf(col.type)) : undefined;
    this.d = { ...this.d, columns: this.d.columns.map((c) => (c === col ? { ...c, defaultExpr: text } : c)) };
  }

  async setNotNull(name: string, notNull: boolean): Promise<void> {
    const col = columnOf(this.d, name);
    if (!notNull && this.d.primaryIndex.keyColumnIds.includes(col.id)) {
      throw new SqlError('sql.invalid_table_definition', '42P16', `column "${name}" is in a primary key`);
    }
    const next = { ...col, nullable: !notNull };
    this.d = { ...this.d, columns: this.d.columns.map((c) => (c === col ? next : c)) };
    if (notNull && col.nullable) await this.validateNotNull(next);
  }

  renameColumn(from: string, to: string): void {
    const col = columnOf(this.d, from);
    if (this.d.columns.some((c) => c.name === to)) throw new SqlError('sql.duplicate_column', '42701', `column "${to}" of relation "${this.d.name}" already exists`);
    this.d = {
      ...this.d,
      columns: this.d.columns.map((c) => ({ ...(c === col ? { ...c, name: to } : c), defaultExpr: c.defaultExpr !== undefined ? renameInExpr(c.defaultExpr, from, to) : undefined })),
      checks: this.d.checks.map((c) => ({ name: c.name, expr: renameInExpr(c.expr, from, to) })),
    };
  }

  renameTable(to: string): void {
    if (this.nameTaken(to)) throw new SqlError('sql.duplicate_table', '42P07', `relation "${to}" already exists`);
    this.b.del(namespaceKey(this.d.parentId, this.d.name));
    this.b.cput(namespaceKey(this.d.parentId, to), encodeUint(this.d.id), null);
    this.d = { ...this.d, name: to };
  }

  renameConstraintOrIndex(from: string, to: string, what: 'constraint' | 'index'): void {
    if (this.nameTaken(to) || this.d.checks.some((c) => c.name === to)) throw new SqlError('sql.duplicate_table', '42P07', `relation "${to}" already exists`);
    if (what === 'constraint' && (this.d.foreignKeys ?? []).some((f) => f.name === from)) {
      this.d = { ...this.d, foreignKeys: (this.d.foreignKeys ?? []).map((f) => (f.name === from ? { ...f, name: to } : f)) };
      return;
    }
    if (what === 'constraint' && this.d.checks.some((c) => c.name === from)) {
      this.d = { ...this.d, checks: this.d.checks.map((c) => (c.name === from ? { ...c, name: to } : c)) };
      return;
    }
    if (this.d.primaryIndex.name === from) {
      this.d = { ...this.d, primaryIndex: { ...this.d.primaryIndex, name: to } };
      return;
    }
    const ix = this.d.indexes.find((x) => x.name === from && (what === 'index' || x.unique));
    if (ix === undefined) {
      throw what === 'index'
        ? new SqlError('sql.undefined_object', '42704', `index "${from}" does not exist`)
        : new SqlError('sql.undefined_object', '42704', `constraint "${from}" for table "${this.d.name}" does not exist`);
    }
    this.d = { ...this.d, indexes: this.d.indexes.map((x) => (x === ix ? { ...x, name: to } : x)) };
  }

  async finish(): Promise<void> {
    new RowCodec(this.d);
    putDescriptor(this.b, { ...this.d, version: this.orig.desc.version + 1 }, this.snap.version);
    try {
      await this.txn.run(this.b);
    } catch (e) {
      if (e instanceof CairnError && e.code === 'kv.condition_failed') throw new SqlError('sql.duplicate_table', '42P07', `relation "${this.d.name}" already exists`);
      throw e;
    }
    this.txn.schemaDirty = true;
  }
}

/**
 * ALTER TABLE. `online` (the statement is alone in an implicit transaction):
 * a lone ADD PRIMARY KEY only adds the future primary index write_only and
 * returns it as `pending` — the caller commits, then runs
 * primary-key.ts finishPrimaryKeyOnline on it.
 */
export async function alterTable(txn: SqlTxn, database: string, env: EvalEnv, s: AlterTableStatement, online = false): Promise<DdlResult & { pending?: { tableId: number; indexId: number } }> {
  const snap = await schemaSnapshot(txn);
  const t = resolve(snap, database, s.table);
  if (t === undefined) {
    if (s.ifExists) return { tag: 'ALTER TABLE', notices: [`relation "${s.table.name}" does not exist, skipping`] };
    throw noTable(s.table.name);
  }
  const a = new Alter(txn, snap, env, t);
  const only = s.commands.length === 1 ? s.commands[0] : undefined;
  if (online && only?.kind === 'AddConstraint' && only.constraint.kind === 'PrimaryKey') {
    const r = await addPrimaryKeyIndex(txn, t.desc, only.constraint.name, only.constraint.columns);
    a.d = r.desc;
    await a.finish();
    return { tag: 'ALTER TABLE', notices: a.notices, pending: { tableId: t.desc.id, indexId: r.indexId } };
  }
  for (const cmd of s.commands) {
    switch (cmd.kind) {
      case 'AddColumn':
        await a.addColumn(cmd.column, cmd.ifNotExists);
        break;
      case 'DropColumn':
        a.dropColumn(cmd.column, cmd.ifExists);
        break;
      case 'SetDefault':
        a.setDefault(cmd.column, cmd.default);
        break;
      case 'SetNotNull':
        await a.setNotNull(cmd.column, cmd.notNull);
        break;
      case 'AlterColumnType':
        throw unimplemented('ALTER COLUMN TYPE');
      case 'AddConstraint':
        await a.addConstraint(cmd.constraint);
        break;
      case 'DropConstraint':
        a.dropConstraint(cmd.name, cmd.ifExists);
        break;
      case 'ValidateConstraint':
        await a.validateConstraint(cmd.name);
        break;
    }
  }
  await a.finish();
  return { tag: 'ALTER TABLE', notices: a.notices };
}

/** ALTER TABLE/INDEX … RENAME (tables, columns, constraints, indexes). */
export async function rename(txn: SqlTxn, database: string, env: EvalEnv, s: RenameStatement): Promise<DdlResult> {
  const snap = await schemaSnapshot(txn);
  const tag = s.target === 'index' ? 'ALTER INDEX' : 'ALTER TABLE';
  if (s.target === 'database' || s.target === 'view' || s.target === 'sequence') throw unimplemented(`ALTER ${s.target.toUpperCase()} … RENAME`);
  let t: TableEntry | undefined;
  let from = s.from;
  if (s.target === 'index') {
    from = s.object.name;
    const db = snap.database(s.object.catalog ?? database);
    t = db !== undefined ? snap.tablesOf(db.id).find((x) => x.desc.indexes.some((i) => i.name === from) || x.desc.primaryIndex.name === from) : undefined;
    if (t === undefined) {
      if (s.ifExists) return { tag, notices: [`relation "${from}" does not exist, skipping`] };
      throw new SqlError('sql.undefined_table', '42P01', `relation "${from}" does not exist`);
    }
  } else {
    t = resolve(snap, database, s.object);
    if (t === undefined) {
      if (s.ifExists) return { tag, notices: [`relation "${s.object.name}" does not exist, skipping`] };
      throw noTable(s.object.name);
    }
  }
  const a = new Alter(txn, snap, env, t);
  if (s.target === 'table') a.renameTable(s.to);
  else if (s.target === 'column') a.renameColumn(from as string, s.to);
  else a.renameConstraintOrIndex(from as string, s.to, s.target);
  await a.finish();
  return { tag, notices: a.notices };
}
