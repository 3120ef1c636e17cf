/**
 * sql/schema/view-ddl.ts — CREATE [OR REPLACE] VIEW, DROP VIEW, and view
 * expansion.
 *
 * A view is a descriptor of its own kind (descriptor.ts ViewDesc) in the
 * relation namespace (a table and a view cannot share a name: 42P07). Its
 * query is stored as normalized SQL text (formatSelect) with the output
 * column names and types fixed at creation.
 *
 * Expansion: before planning, every FROM-clause reference to a view name
 * (not shadowed by a CTE of that name) is replaced by the view's query as a
 * subquery aliased to the reference's alias or the view name, with the
 * view's column names — the planner then treats it like any derived table
 * (sql/plan/query-planner.ts). Views inside views expand recursively (depth
 * bounded). Only statements of a snapshot that has views pay for the walk.
 *
 * Not supported: updatable views (INSERT/UPDATE/DELETE on a view: 42P01 as
 * for an unknown table), DROP TABLE … CASCADE of a view's base table (the
 * view then fails at use with 42P01), CHECK OPTION, TEMP views.
 */
import { KVBatch } from '../kv.js';
import type { CreateViewStatement, DropViewStatement, SelectStatement, Statement, TableName } from '../parser/ast.js';
import { formatSelect } from '../parser/format.js';
import { parseOne } from '../parser/parse.js';
import { SqlError } from '../parser/sql-error.js';
import type { SqlType } from '../types/type.js';
import { allocateDescId, deleteDescriptor, writeNewDescriptor, type CatalogSnapshot } from '../catalog/catalog.js';
import type { ViewDesc } from '../catalog/descriptor.js';
import type { SqlTxn } from '../exec/sql-txn.js';
import { notFound, putDescriptor, runSchemaBatch, schemaSnapshot, type DdlResult } from './index-ddl.js';

const MAX_VIEW_DEPTH = 32;

function collectCteNames(v: unknown, out: Set<string>): void {
  if (Array.isArray(v)) {
    for (const x of v) collectCteNames(x, out);
    return;
  }
  if (v === null || typeof v !== 'object' || Buffer.isBuffer(v)) return;
  const o = v as Record<string, unknown>;
  if (Array.isArray(o.ctes)) for (const c of o.ctes as { name: string }[]) out.add(c.name);
  for (const x of Object.values(o)) collectCteNames(x, out);
}

function viewOf(snap: CatalogSnapshot, database: string, t: TableName): ViewDesc | undefined {
  const db = snap.database(t.catalog ?? (t.schema !== undefined && t.schema !== 'public' ? t.schema : database));
  return db !== undefined ? snap.view(db.id, t.name) : undefined;
}

/** The statement with every view reference replaced by its query (the same object when none). */
export function expandViews<S extends Statement>(stmt: S, snap: CatalogSnapshot, database: string, depth = 0): S {
  if (!snap.hasViews) return stmt;
  const ctes = new Set<string>();
  collectCteNames(stmt, ctes);
  let changed = false;
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) {
      let diff = false;
      const out = v.map((x) => {
        const y = walk(x);
        if (y !== x) diff = true;
        return y;
      });
      return diff ? out : v;
    }
    if (v === null || typeof v !== 'object' || Buffer.isBuffer(v)) return v;
    const o = v as Record<string, unknown>;
    if (o.kind === 'TableRef') {
      const t = o.table as TableName;
      const view = t.schema === undefined && ctes.has(t.name) ? undefined : viewOf(snap, database, t);
      if (view === undefined) return v;
      if (depth >= MAX_VIEW_DEPTH) throw new SqlError('sql.invalid_object_definition', '42P17', `infinite recursion detected in view "${view.name}"`);
      changed = true;
      const alias = o.alias as { name: string; columns: readonly string[] } | undefined;
      const query = expandViews(parseOne(view.query).ast as SelectStatement, snap, database, depth + 1);
      const cols = view.columns.map((c, i) => alias?.columns[i] ?? c.name);
      return { kind: 'SubqueryRef', query, alias: { name: alias?.name ?? view.name, columns: cols }, lateral: false };
    }
    let out: Record<string, unknown> | undefined;
    for (const [k, x] of Object.entries(o)) {
      const y = walk(x);
      if (y !== x) {
        out ??= { ...o };
        out[k] = y;
      }
    }
    return out ?? v;
  };
  const r = walk(stmt) as S;
  return changed ? r : stmt;
}

/**
 * CREATE [OR REPLACE] VIEW. `describe` plans the (expanded) query against
 * `snap` and returns its output columns (names and types).
 */
export async function createView(
  txn: SqlTxn,
  database: string,
  s: CreateViewStatement,
  describe: (q: SelectStatement, snap: CatalogSnapshot) => readonly { name: string; type: SqlType }[],
): Promise<DdlResult> {
  const snap = await schemaSnapshot(txn);
  const db = snap.database(s.view.catalog ?? database);
  if (db === undefined) throw new SqlError('sql.undefined_database', '3D000', `database "${s.view.catalog ?? database}" does not exist`);
  const out = describe(expandViews(s.query, snap, database), snap);
  if (s.columns.length > out.length) throw new SqlError('sql.syntax_error', '42601', 'CREATE VIEW specifies more column names than columns');
  const columns = out.map((c, i) => ({ name: s.columns[i] ?? c.name, type: { oid: c.type.oid, typmod: c.type.typmod } }));
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) throw new SqlError('sql.duplicate_column', '42701', `column "${c.name}" specified more than once`);
    seen.add(c.name);
  }
  const query = formatSelect(s.query);
  const old = snap.view(db.id, s.view.name);
  if (old !== undefined && s.orReplace) {
    const b = new KVBatch();
    putDescriptor(b, { ...old, version: old.version + 1, query, columns }, snap.version);
    await txn.run(b);
  } else {
    const id = await allocateDescId(txn.kv);
    await writeNewDescriptor(txn.kv, { kind: 'view', id, name: s.view.name, parentId: db.id, version: 1, query, columns }, snap.version);
  }
  txn.schemaDirty = true;
  return { tag: 'CREATE VIEW', notices: [] };
}

export async function dropViews(txn: SqlTxn, database: string, s: DropViewStatement): Promise<DdlResult> {
  const snap = await schemaSnapshot(txn);
  const notices: string[] = [];
  const b = new KVBatch();
  for (const n of s.views) {
    const v = viewOf(snap, database, n);
    if (v === undefined) {
      notFound(s.ifExists, notices, `view "${n.name}" does not exist, skipping`, () => new SqlError('sql.undefined_table', '42P01', `view "${n.name}" does not exist`));
      continue;
    }
    deleteDescriptor(b, v, snap.version);
  }
  await runSchemaBatch(txn, b);
  return { tag: 'DROP VIEW', notices };
}
