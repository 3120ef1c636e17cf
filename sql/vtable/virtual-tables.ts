/**
 * sql/vtable/virtual-tables.ts — the `pg_catalog` and `information_schema`
 * virtual tables that drivers, ORMs and psql read (issue 7 part 3, tools).
 *
 * A virtual table has a fixed column list and computes its rows from the
 * catalog snapshot the statement is planned against (CatalogSnapshot), so
 * its contents are exactly the descriptors that statement sees. The planner
 * (plan/query-planner.ts) turns a reference to one into a `values` node of
 * constant rows; a plan carries the snapshot's schema version, so a cached
 * plan holding stale rows is replanned after any schema change.
 *
 * OIDs (stable per object, derived from descriptor ids; uint32):
 *   namespace   pg_catalog 11, public 2200, information_schema 13000
 *   database    descriptor id (50 defaultdb, 51 postgres, ≥100 user)
 *   table       REL_OID_BASE + id × 1000              (relation of the table;
 *               views and sequences alike, relkind 'v' / 'S')
 *   index       table oid + index id (1 = primary, < 500)
 *   constraint  table oid + 500 + ordinal (CHECK constraints),
 *               table oid + 700 + ordinal (FOREIGN KEY constraints)
 *   type        sql/types' PostgreSQL OIDs (pg_type.dat)
 *   role        10 for root, 16384 + position among the users (sorted) for the others
 *
 * Ownership: sql/vtable (issue 7 part 3). Only public objects of the current
 * database appear in pg_class / information_schema (Cairn databases have the
 * single schema `public`).
 */
import type { CatalogSnapshot, TableEntry } from '../catalog/catalog.js';
import type { ColumnDesc, FkAction, ForeignKeyDesc, IndexDesc, SequenceDesc, TableDesc, ViewDesc } from '../catalog/descriptor.js';
import type { TableName } from '../parser/ast.js';
import type { Datum } from '../sem/datum.js';
import type { ScopeColumn } from '../sem/expr.js';
import { catalogTexts } from '../sem/catalog-builtins.js';
import { hasPgDefault, pgDefaultText } from './default-deparse.js';
import { regclassNames } from '../types/text-format.js';
import { T, Oid, arrayOf, formatType, typeFromOid, typlen, typname, stringLength, numericPrecisionScale, timePrecision, type SqlType } from '../types/type.js';

export const PG_CATALOG_NAMESPACE_OID = 11;
export const PUBLIC_NAMESPACE_OID = 2200;
export const INFORMATION_SCHEMA_NAMESPACE_OID = 13000;
export const REL_OID_BASE = 1_000_000;
export const ROOT_ROLE_OID = 10;

export function tableOid(desc: TableDesc): number {
  return REL_OID_BASE + desc.id * 1000;
}
export function indexOid(desc: TableDesc, idx: IndexDesc): number {
  return tableOid(desc) + idx.id;
}

/** What a virtual table's rows are computed from. */
export interface VTableContext {
  readonly snapshot: CatalogSnapshot;
  readonly database: string;
  readonly user: string;
}

interface VTable {
  readonly columns: readonly (readonly [string, SqlType])[];
  rows(ctx: VTableContext): Datum[][];
}

const NAME = T.name;
const OIDT = T.oid;
const BOOL = T.bool;
const CHAR = T.char;
const INT2 = T.int2;
const INT4 = T.int4;
const TEXT = T.text;
const TEXT_ARR = arrayOf(T.text);
const OID_ARR = arrayOf(T.oid);

function userTables(ctx: VTableContext): TableEntry[] {
  const db = ctx.snapshot.database(ctx.database);
  return db === undefined ? [] : ctx.snapshot.tablesOf(db.id);
}

/** The views and sequences of the current database. */
function userViews(ctx: VTableContext): ViewDesc[] {
  const db = ctx.snapshot.database(ctx.database);
  return db === undefined ? [] : ctx.snapshot.viewsOf(db.id);
}
function userSequences(ctx: VTableContext): SequenceDesc[] {
  const db = ctx.snapshot.database(ctx.database);
  return db === undefined ? [] : ctx.snapshot.sequencesOf(db.id);
}
/** pg_class oid of a view or sequence (descriptor ids are shared with tables). */
function relOid(d: ViewDesc | SequenceDesc): number {
  return REL_OID_BASE + d.id * 1000;
}
/** A sequence's columns, as PostgreSQL's sequence relations have them. */
const SEQUENCE_COLUMNS: readonly (readonly [string, SqlType])[] = [['last_value', T.int8], ['log_cnt', T.int8], ['is_called', T.bool]];

/** PostgreSQL's default btree operator classes: [oid, name, input type, family] (pg_opclass.dat). */
const BTREE_OPCLASSES: readonly (readonly [number, string, number, number])[] = [
  [1978, 'int4_ops', Oid.int4, 1976], [1979, 'int2_ops', Oid.int2, 1976], [1981, 'oid_ops', Oid.oid, 1989], [3122, 'date_ops', Oid.date, 434],
  [3123, 'float8_ops', Oid.float8, 1970], [3124, 'int8_ops', Oid.int8, 1976], [3125, 'numeric_ops', Oid.numeric, 1988], [3126, 'text_ops', Oid.text, 1994],
  [3127, 'timestamptz_ops', Oid.timestamptz, 434], [3128, 'timestamp_ops', Oid.timestamp, 434], [10000, 'array_ops', 2277, 397], [10003, 'bool_ops', Oid.bool, 424],
  [10004, 'bpchar_ops', Oid.bpchar, 426], [10006, 'bytea_ops', Oid.bytea, 428], [10007, 'char_ops', Oid.char, 429], [10012, 'float4_ops', Oid.float4, 1970],
  [10022, 'interval_ops', Oid.interval, 1982], [10028, 'name_ops', Oid.name, 1994], [10065, 'uuid_ops', Oid.uuid, 2968], [10088, 'jsonb_ops', Oid.jsonb, 4033],
];
const OPCLASS_BY_TYPE: ReadonlyMap<number, number> = new Map(BTREE_OPCLASSES.map(([oid, , type]) => [type, oid]));

/** The default btree operator class of a column's type (varchar indexes use text_ops, arrays array_ops), 0 when none. */
function defaultOpclass(t: SqlType): number {
  if (t.family === 'array') return 10000;
  if (t.oid === Oid.varchar) return 3126;
  return OPCLASS_BY_TYPE.get(t.oid) ?? 0;
}

function visibleColumns(d: TableDesc): ColumnDesc[] {
  return d.columns.filter((c) => !c.hidden);
}

/** attnum of a column: its 1-based position among the visible columns. */
function attnum(d: TableDesc, columnId: number): number {
  return visibleColumns(d).findIndex((c) => c.id === columnId) + 1;
}

function colType(c: { readonly type: ColumnDesc['type'] }): SqlType {
  const base = typeFromOid(c.type.oid) ?? T.text;
  return { ...base, typmod: c.type.typmod };
}

function publicIndexes(d: TableDesc): IndexDesc[] {
  // Implicit foreign-key indexes (descriptor.ts) have no PostgreSQL counterpart.
  const all = [d.primaryIndex, ...d.indexes.filter((i) => (i.state === undefined || i.state === 'public') && i.implicit !== true)];
  // A table without a declared primary key keys on the hidden rowid: no pg_index row for it.
  return all.filter((i) => i.keyColumnIds.every((id) => attnum(d, id) > 0));
}

/**
 * Whether an index backs a PRIMARY KEY / UNIQUE constraint (pg_constraint,
 * table_constraints). Descriptors do not record whether a unique index came
 * from a UNIQUE constraint or from CREATE UNIQUE INDEX; PostgreSQL names the
 * former `<table>_<cols>_key` and TypeORM `UQ_<hash>`, so a unique index with
 * such a name counts as a constraint (a deviation only for explicitly named
 * ones).
 */
function isConstraintIndex(d: TableDesc, ix: IndexDesc): boolean {
  // TypeORM names its UNIQUE constraints `UQ_<hash>` (and would drop and re-add them every synchronize otherwise).
  return ix.id === d.primaryIndex.id || (ix.unique && (ix.name.endsWith('_key') || ix.name.startsWith('UQ_')));
}

// ---- foreign keys (sql/schema/foreign-keys.ts) ----------------------------------------

/** pg_constraint's action / match codes and information_schema's rule names. */
const FK_ACTION_CODE: Readonly<Record<FkAction, string>> = { 'no action': 'a', restrict: 'r', cascade: 'c', 'set null': 'n', 'set default': 'd' };

export function fkOid(d: TableDesc, ordinal: number): number {
  return tableOid(d) + 700 + ordinal;
}

interface FkRow {
  readonly oid: number;
  readonly fk: ForeignKeyDesc;
  readonly child: TableDesc;
  readonly parent: TableDesc;
  /** The parent's primary or unique index holding the referenced columns. */
  readonly parentIndex: IndexDesc | undefined;
}

function foreignKeyRows(t: TableEntry): FkRow[] {
  return t.outboundFks.map((ref) => {
    const d = t.desc;
    const p = ref.parent.desc;
    const ord = (d.foreignKeys ?? []).indexOf(ref.fk);
    const same = (ix: IndexDesc): boolean => ix.keyColumnIds.length === ref.fk.referencedColumnIds.length && ix.keyColumnIds.every((id) => ref.fk.referencedColumnIds.includes(id));
    const parentIndex = same(p.primaryIndex) ? p.primaryIndex : p.indexes.find((ix) => ix.unique && same(ix));
    return { oid: fkOid(d, ord), fk: ref.fk, child: d, parent: p, parentIndex };
  });
}

function colName(d: TableDesc, id: number): string {
  return d.columns.find((c) => c.id === id)?.name ?? '?';
}

/** pg_get_constraintdef of a foreign key, as PostgreSQL prints it. */
function fkDef(r: FkRow): string {
  const cols = r.fk.columnIds.map((id) => quoteIdent(colName(r.child, id))).join(', ');
  const refs = r.fk.referencedColumnIds.map((id) => quoteIdent(colName(r.parent, id))).join(', ');
  let s = `FOREIGN KEY (${cols}) REFERENCES ${quoteIdent(r.parent.name)}(${refs})`;
  if (r.fk.match === 'full') s += ' MATCH FULL';
  if (r.fk.onUpdate !== 'no action') s += ` ON UPDATE ${r.fk.onUpdate.toUpperCase()}`;
  if (r.fk.onDelete !== 'no action') s += ` ON DELETE ${r.fk.onDelete.toUpperCase()}`;
  if (!r.fk.validated) s += ' NOT VALID';
  return s;
}

/** A table's foreign keys as pg_get_constraintdef prints them (SHOW CREATE TABLE, sql/session/ddl.ts). */
export function foreignKeyDefs(t: TableEntry): { readonly name: string; readonly def: string }[] {
  return foreignKeyRows(t).map((r) => ({ name: r.fk.name, def: fkDef(r) }));
}

function typeCategory(t: SqlType): string {
  switch (t.family) {
    case 'bool': return 'B';
    case 'int': case 'float': case 'numeric': return 'N';
    case 'string': return 'S';
    case 'date': case 'timestamp': case 'timestamptz': return 'D';
    case 'interval': return 'T';
    case 'array': return 'A';
    case 'oid': return 'N';
    case 'unknown': return 'X';
    case 'record': case 'void': return 'P';
    default: return 'U';
  }
}

function allTypes(): SqlType[] {
  const out: SqlType[] = [];
  for (const oid of new Set(Object.values(Oid))) {
    const t = typeFromOid(oid);
    if (t !== undefined) out.push(t);
  }
  return out;
}

/** root, then every stored user (CREATE USER; the catalog snapshot holds them), sorted. */
function roles(ctx: VTableContext): string[] {
  return ['root', ...ctx.snapshot.users];
}
function roleOid(name: string, ctx: VTableContext): number {
  const i = roles(ctx).indexOf(name);
  return i <= 0 ? ROOT_ROLE_OID : 16384 + i;
}

const PG_CATALOG: Record<string, VTable> = {
  pg_namespace: {
    columns: [['oid', OIDT], ['nspname', NAME], ['nspowner', OIDT], ['nspacl', TEXT_ARR]],
    rows: () => [
      [PG_CATALOG_NAMESPACE_OID, 'pg_catalog', ROOT_ROLE_OID, null],
      [PUBLIC_NAMESPACE_OID, 'public', ROOT_ROLE_OID, null],
      [INFORMATION_SCHEMA_NAMESPACE_OID, 'information_schema', ROOT_ROLE_OID, null],
    ],
  },
  pg_database: {
    columns: [['oid', OIDT], ['datname', NAME], ['datdba', OIDT], ['encoding', INT4], ['datlocprovider', CHAR], ['datistemplate', BOOL], ['datallowconn', BOOL], ['datconnlimit', INT4], ['datcollate', TEXT], ['datctype', TEXT], ['daticulocale', TEXT], ['datacl', TEXT_ARR], ['dattablespace', OIDT]],
    rows: (ctx) => ctx.snapshot.databases().filter((d) => d.id >= 50).map((d) => [d.id, d.name, ROOT_ROLE_OID, 6, 'c', false, true, -1, 'C', 'C', null, null, 1663]),
  },
  pg_class: {
    columns: [['oid', OIDT], ['relname', NAME], ['relnamespace', OIDT], ['reltype', OIDT], ['relowner', OIDT], ['relam', OIDT], ['relfilenode', OIDT], ['reltablespace', OIDT], ['reltuples', T.float4], ['relhasindex', BOOL], ['relisshared', BOOL], ['relpersistence', CHAR], ['relkind', CHAR], ['relnatts', INT2], ['relchecks', INT2], ['relhasrules', BOOL], ['relhastriggers', BOOL], ['relhassubclass', BOOL], ['relrowsecurity', BOOL], ['relforcerowsecurity', BOOL], ['relispopulated', BOOL], ['relreplident', CHAR], ['relispartition', BOOL], ['reloptions', TEXT_ARR], ['relacl', TEXT_ARR], ['relpages', INT4], ['relallvisible', INT4], ['reltoastrelid', OIDT], ['relpartbound', TEXT], ['relofftype', OIDT], ['reloftype', OIDT]],
    rows: (ctx) => {
      const out: Datum[][] = [];
      for (const t of userTables(ctx)) {
        const d = t.desc;
        const idx = publicIndexes(d);
        // relhastriggers: PostgreSQL enforces foreign keys with triggers on both tables (psql's \d lists FKs only then).
        const fkTriggers = t.outboundFks.length + t.inboundFks.length > 0;
        out.push([tableOid(d), d.name, PUBLIC_NAMESPACE_OID, 0, ROOT_ROLE_OID, 2, tableOid(d), 0, -1, idx.length > 0, false, 'p', 'r', visibleColumns(d).length, d.checks.length, false, fkTriggers, false, false, false, true, 'd', false, null, null, 0, 0, 0, null, 0, 0]);
        for (const i of idx) {
          out.push([indexOid(d, i), i.name, PUBLIC_NAMESPACE_OID, 0, ROOT_ROLE_OID, 403, indexOid(d, i), 0, -1, false, false, 'p', 'i', i.keyColumnIds.length + i.storeColumnIds.length, 0, false, false, false, false, false, true, 'n', false, null, null, 0, 0, 0, null, 0, 0]);
        }
      }
      // A view has its _RETURN rule (relhasrules); neither has an access method.
      for (const v of userViews(ctx)) out.push([relOid(v), v.name, PUBLIC_NAMESPACE_OID, 0, ROOT_ROLE_OID, 0, 0, 0, -1, false, false, 'p', 'v', v.columns.length, 0, true, false, false, false, false, true, 'n', false, null, null, 0, 0, 0, null, 0, 0]);
      for (const s of userSequences(ctx)) out.push([relOid(s), s.name, PUBLIC_NAMESPACE_OID, 0, ROOT_ROLE_OID, 0, relOid(s), 0, 1, false, false, 'p', 'S', SEQUENCE_COLUMNS.length, 0, false, false, false, false, false, true, 'n', false, null, null, 1, 0, 0, null, 0, 0]);
      return out;
    },
  },
  pg_attribute: {
    columns: [['attrelid', OIDT], ['attname', NAME], ['atttypid', OIDT], ['attstattarget', INT4], ['attlen', INT2], ['attnum', INT2], ['attndims', INT4], ['attcacheoff', INT4], ['atttypmod', INT4], ['attbyval', BOOL], ['attalign', CHAR], ['attstorage', CHAR], ['attcompression', CHAR], ['attnotnull', BOOL], ['atthasdef', BOOL], ['atthasmissing', BOOL], ['attidentity', CHAR], ['attgenerated', CHAR], ['attisdropped', BOOL], ['attislocal', BOOL], ['attinhcount', INT4], ['attcollation', OIDT], ['attacl', TEXT_ARR], ['attoptions', TEXT_ARR], ['attfdwoptions', TEXT_ARR]],
    rows: (ctx) => {
      const out: Datum[][] = [];
      const attrOf = (rel: number, name: string, t: SqlType, num: number, notNull: boolean, hasDef: boolean): Datum[] => {
        const coll = t.family === 'string' ? 100 : 0;
        return [rel, name, t.oid, -1, typlen(t), num, t.family === 'array' ? 1 : 0, -1, t.typmod, typlen(t) > 0 && typlen(t) <= 8, 'i', typlen(t) === -1 ? 'x' : 'p', '', notNull, hasDef, false, '', '', false, true, 0, coll, null, null, null];
      };
      const attr = (rel: number, c: ColumnDesc, num: number): Datum[] => attrOf(rel, c.name, colType(c), num, !c.nullable, hasPgDefault(c.defaultExpr));
      for (const v of userViews(ctx)) {
        v.columns.forEach((c, i) => out.push(attrOf(relOid(v), c.name, colType(c), i + 1, false, false)));
      }
      for (const s of userSequences(ctx)) SEQUENCE_COLUMNS.forEach(([n, t], i) => out.push(attrOf(relOid(s), n, t, i + 1, true, false)));
      for (const t of userTables(ctx)) {
        const d = t.desc;
        visibleColumns(d).forEach((c, i) => out.push(attr(tableOid(d), c, i + 1)));
        for (const ix of publicIndexes(d)) {
          [...ix.keyColumnIds, ...ix.storeColumnIds].forEach((id, i) => {
            const c = d.columns.find((x) => x.id === id);
            if (c !== undefined) out.push(attr(indexOid(d, ix), c, i + 1));
          });
        }
      }
      return out;
    },
  },
  pg_attrdef: {
    columns: [['oid', OIDT], ['adrelid', OIDT], ['adnum', INT2], ['adbin', TEXT]],
    rows: (ctx) => {
      const out: Datum[][] = [];
      for (const t of userTables(ctx)) {
        visibleColumns(t.desc).forEach((c, i) => {
          if (hasPgDefault(c.defaultExpr)) out.push([tableOid(t.desc) + 900 + i, tableOid(t.desc), i + 1, pgDefaultText(c.defaultExpr, colType(c))]);
        });
      }
      return out;
    },
  },
  pg_index: {
    columns: [['indexrelid', OIDT], ['indrelid', OIDT], ['indnatts', INT2], ['indnkeyatts', INT2], ['indisunique', BOOL], ['indnullsnotdistinct', BOOL], ['indisprimary', BOOL], ['indisexclusion', BOOL], ['indimmediate', BOOL], ['indisclustered', BOOL], ['indisvalid', BOOL], ['indcheckxmin', BOOL], ['indisready', BOOL], ['indislive', BOOL], ['indisreplident', BOOL], ['indkey', T.int2vector], ['indcollation', T.oidvector], ['indclass', T.oidvector], ['indoption', T.int2vector], ['indexprs', TEXT], ['indpred', TEXT]],
    rows: (ctx) => {
      const out: Datum[][] = [];
      for (const t of userTables(ctx)) {
        const d = t.desc;
        for (const ix of publicIndexes(d)) {
          const cols = [...ix.keyColumnIds, ...ix.storeColumnIds];
          const primary = ix.id === d.primaryIndex.id;
          out.push([indexOid(d, ix), tableOid(d), cols.length, ix.keyColumnIds.length, primary || ix.unique, false, primary, false, true, false, true, false, true, true, false, cols.map((id) => attnum(d, id)), ix.keyColumnIds.map(() => 0), ix.keyColumnIds.map((id) => defaultOpclass(colType(d.columns.find((c) => c.id === id) ?? { type: { oid: Oid.text, typmod: -1 } }))), ix.directions.map((dir) => (dir === 'desc' ? 3 : 0)), null, null]);
        }
      }
      return out;
    },
  },
  pg_constraint: {
    columns: [['oid', OIDT], ['conname', NAME], ['connamespace', OIDT], ['contype', CHAR], ['condeferrable', BOOL], ['condeferred', BOOL], ['convalidated', BOOL], ['conrelid', OIDT], ['contypid', OIDT], ['conindid', OIDT], ['conparentid', OIDT], ['confrelid', OIDT], ['confupdtype', CHAR], ['confdeltype', CHAR], ['confmatchtype', CHAR], ['conislocal', BOOL], ['coninhcount', INT4], ['connoinherit', BOOL], ['conkey', arrayOf(INT2)], ['confkey', arrayOf(INT2)], ['conbin', TEXT]],
    rows: (ctx) => {
      const out: Datum[][] = [];
      for (const t of userTables(ctx)) {
        const d = t.desc;
        const rel = tableOid(d);
        for (const ix of publicIndexes(d)) {
          const primary = ix.id === d.primaryIndex.id;
          if (!isConstraintIndex(d, ix)) continue;
          out.push([indexOid(d, ix) + 0, ix.name, PUBLIC_NAMESPACE_OID, primary ? 'p' : 'u', false, false, true, rel, 0, indexOid(d, ix), 0, 0, ' ', ' ', ' ', true, 0, true, ix.keyColumnIds.map((id) => attnum(d, id)), null, null]);
        }
        d.checks.forEach((ck, i) => out.push([rel + 500 + i, ck.name, PUBLIC_NAMESPACE_OID, 'c', false, false, true, rel, 0, 0, 0, 0, ' ', ' ', ' ', true, 0, false, null, null, ck.expr]));
        for (const r of foreignKeyRows(t)) {
          const conkey = r.fk.columnIds.map((id) => attnum(d, id));
          const confkey = r.fk.referencedColumnIds.map((id) => attnum(r.parent, id));
          const conindid = r.parentIndex !== undefined ? indexOid(r.parent, r.parentIndex) : 0;
          out.push([r.oid, r.fk.name, PUBLIC_NAMESPACE_OID, 'f', false, false, r.fk.validated, rel, 0, conindid, 0, tableOid(r.parent), FK_ACTION_CODE[r.fk.onUpdate], FK_ACTION_CODE[r.fk.onDelete], r.fk.match === 'full' ? 'f' : 's', true, 0, true, conkey, confkey, null]);
        }
      }
      return out;
    },
  },
  pg_type: {
    columns: [['oid', OIDT], ['typname', NAME], ['typnamespace', OIDT], ['typowner', OIDT], ['typlen', INT2], ['typbyval', BOOL], ['typtype', CHAR], ['typcategory', CHAR], ['typispreferred', BOOL], ['typisdefined', BOOL], ['typdelim', CHAR], ['typrelid', OIDT], ['typsubscript', OIDT], ['typelem', OIDT], ['typarray', OIDT], ['typinput', OIDT], ['typoutput', OIDT], ['typnotnull', BOOL], ['typbasetype', OIDT], ['typtypmod', INT4], ['typndims', INT4], ['typcollation', OIDT], ['typdefault', TEXT]],
    rows: () =>
      allTypes().map((t) => {
        const elem = t.family === 'array' ? (t.arrayElem as SqlType).oid : 0;
        const arr = t.family === 'array' || t.family === 'void' || t.family === 'unknown' ? 0 : arrayOf(t).oid;
        const len = typlen(t);
        return [t.oid, typname(t), PG_CATALOG_NAMESPACE_OID, ROOT_ROLE_OID, len, len > 0 && len <= 8, t.family === 'record' || t.family === 'void' ? 'p' : 'b', typeCategory(t), false, true, ',', 0, 0, elem, arr, 0, 0, false, 0, -1, 0, t.family === 'string' ? 100 : 0, null];
      }),
  },
  pg_roles: {
    columns: [['oid', OIDT], ['rolname', NAME], ['rolsuper', BOOL], ['rolinherit', BOOL], ['rolcreaterole', BOOL], ['rolcreatedb', BOOL], ['rolcanlogin', BOOL], ['rolreplication', BOOL], ['rolconnlimit', INT4], ['rolpassword', TEXT], ['rolvaliduntil', T.timestamptz], ['rolbypassrls', BOOL], ['rolconfig', TEXT_ARR]],
    rows: (ctx) => roles(ctx).map((r) => [roleOid(r, ctx), r, r === 'root', true, r === 'root', r === 'root', true, r === 'root', -1, '********', null, r === 'root', null]),
  },
  pg_user: {
    columns: [['usename', NAME], ['usesysid', OIDT], ['usecreatedb', BOOL], ['usesuper', BOOL], ['userepl', BOOL], ['usebypassrls', BOOL], ['passwd', TEXT], ['valuntil', T.timestamptz], ['useconfig', TEXT_ARR]],
    rows: (ctx) => roles(ctx).map((r) => [r, roleOid(r, ctx), r === 'root', r === 'root', r === 'root', r === 'root', '********', null, null]),
  },
  pg_auth_members: {
    columns: [['oid', OIDT], ['roleid', OIDT], ['member', OIDT], ['grantor', OIDT], ['admin_option', BOOL]],
    rows: () => [],
  },
  pg_opclass: {
    columns: [['oid', OIDT], ['opcmethod', OIDT], ['opcname', NAME], ['opcnamespace', OIDT], ['opcowner', OIDT], ['opcfamily', OIDT], ['opcintype', OIDT], ['opcdefault', BOOL], ['opckeytype', OIDT]],
    rows: () => BTREE_OPCLASSES.map(([oid, name, type, family]) => [oid, 403, name, PG_CATALOG_NAMESPACE_OID, ROOT_ROLE_OID, family, type, true, name === 'name_ops' ? 2275 : 0]),
  },
  pg_am: {
    columns: [['oid', OIDT], ['amname', NAME], ['amhandler', OIDT], ['amtype', CHAR]],
    rows: () => [[2, 'heap', 0, 't'], [403, 'btree', 0, 'i']],
  },
  pg_description: { columns: [['objoid', OIDT], ['classoid', OIDT], ['objsubid', INT4], ['description', TEXT]], rows: () => [] },
  pg_shdescription: { columns: [['objoid', OIDT], ['classoid', OIDT], ['description', TEXT]], rows: () => [] },
  pg_inherits: { columns: [['inhrelid', OIDT], ['inhparent', OIDT], ['inhseqno', INT4], ['inhdetachpending', BOOL]], rows: () => [] },
  pg_tablespace: { columns: [['oid', OIDT], ['spcname', NAME], ['spcowner', OIDT], ['spcacl', TEXT_ARR], ['spcoptions', TEXT_ARR]], rows: () => [[1663, 'pg_default', ROOT_ROLE_OID, null, null]] },
  pg_collation: { columns: [['oid', OIDT], ['collname', NAME], ['collnamespace', OIDT], ['collprovider', CHAR], ['collisdeterministic', BOOL], ['collencoding', INT4], ['collcollate', TEXT], ['collctype', TEXT]], rows: () => [[100, 'default', PG_CATALOG_NAMESPACE_OID, 'd', true, -1, null, null], [950, 'C', PG_CATALOG_NAMESPACE_OID, 'c', true, -1, 'C', 'C']] },
  pg_range: { columns: [['rngtypid', OIDT], ['rngsubtype', OIDT], ['rngmultitypid', OIDT], ['rngcollation', OIDT], ['rngsubopc', OIDT], ['rngcanonical', OIDT], ['rngsubdiff', OIDT]], rows: () => [] },
  pg_enum: { columns: [['oid', OIDT], ['enumtypid', OIDT], ['enumsortorder', T.float4], ['enumlabel', NAME]], rows: () => [] },
  pg_extension: { columns: [['oid', OIDT], ['extname', NAME], ['extowner', OIDT], ['extnamespace', OIDT], ['extrelocatable', BOOL], ['extversion', TEXT]], rows: () => [[13500, 'plpgsql', ROOT_ROLE_OID, PG_CATALOG_NAMESPACE_OID, false, '1.0']] },
  pg_trigger: { columns: [['oid', OIDT], ['tgrelid', OIDT], ['tgparentid', OIDT], ['tgname', NAME], ['tgfoid', OIDT], ['tgtype', INT2], ['tgenabled', CHAR], ['tgisinternal', BOOL], ['tgconstrrelid', OIDT], ['tgconstrindid', OIDT], ['tgconstraint', OIDT]], rows: () => [] },
  pg_depend: { columns: [['classid', OIDT], ['objid', OIDT], ['objsubid', INT4], ['refclassid', OIDT], ['refobjid', OIDT], ['refobjsubid', INT4], ['deptype', CHAR]], rows: () => [] },
  // Cairn sequences are bigint and hand out one value per nextval (cache 1).
  pg_sequence: {
    columns: [['seqrelid', OIDT], ['seqtypid', OIDT], ['seqstart', T.int8], ['seqincrement', T.int8], ['seqmax', T.int8], ['seqmin', T.int8], ['seqcache', T.int8], ['seqcycle', BOOL]],
    rows: (ctx) => userSequences(ctx).map((s) => [relOid(s), Oid.int8, BigInt(s.start), BigInt(s.increment), BigInt(s.maxValue), BigInt(s.minValue), 1n, s.cycle]),
  },
  pg_sequences: {
    columns: [['schemaname', NAME], ['sequencename', NAME], ['sequenceowner', NAME], ['data_type', T.regtype], ['start_value', T.int8], ['min_value', T.int8], ['max_value', T.int8], ['increment_by', T.int8], ['cycle', BOOL], ['cache_size', T.int8], ['last_value', T.int8]],
    // last_value lives in the KV (sequences.ts), not in the snapshot: NULL, as PostgreSQL shows before the first nextval.
    rows: (ctx) => userSequences(ctx).map((s) => ['public', s.name, 'root', Oid.int8, BigInt(s.start), BigInt(s.minValue), BigInt(s.maxValue), BigInt(s.increment), s.cycle, 1n, null]),
  },
  pg_policies: { columns: [['schemaname', NAME], ['tablename', NAME], ['policyname', NAME], ['permissive', TEXT], ['roles', arrayOf(NAME)], ['cmd', TEXT], ['qual', TEXT], ['with_check', TEXT]], rows: () => [] },
  pg_views: { columns: [['schemaname', NAME], ['viewname', NAME], ['viewowner', NAME], ['definition', TEXT]], rows: (ctx) => userViews(ctx).map((v) => ['public', v.name, 'root', v.query]) },
  pg_matviews: { columns: [['schemaname', NAME], ['matviewname', NAME], ['matviewowner', NAME], ['definition', TEXT]], rows: () => [] },
  pg_policy: { columns: [['oid', OIDT], ['polname', NAME], ['polrelid', OIDT], ['polcmd', CHAR], ['polpermissive', BOOL], ['polroles', OID_ARR], ['polqual', TEXT], ['polwithcheck', TEXT]], rows: () => [] },
  pg_rewrite: { columns: [['oid', OIDT], ['rulename', NAME], ['ev_class', OIDT]], rows: () => [] },
  pg_statistic_ext: { columns: [['oid', OIDT], ['stxrelid', OIDT], ['stxname', NAME], ['stxnamespace', OIDT], ['stxowner', OIDT], ['stxstattarget', INT4], ['stxkeys', T.int2vector], ['stxkind', arrayOf(CHAR)], ['stxexprs', TEXT]], rows: () => [] },
  pg_publication: { columns: [['oid', OIDT], ['pubname', NAME], ['pubowner', OIDT], ['puballtables', BOOL], ['pubinsert', BOOL], ['pubupdate', BOOL], ['pubdelete', BOOL], ['pubtruncate', BOOL], ['pubviaroot', BOOL]], rows: () => [] },
  pg_publication_rel: { columns: [['oid', OIDT], ['prpubid', OIDT], ['prrelid', OIDT], ['prqual', TEXT], ['prattrs', T.int2vector]], rows: () => [] },
  pg_publication_namespace: { columns: [['oid', OIDT], ['pnpubid', OIDT], ['pnnspid', OIDT]], rows: () => [] },
  pg_foreign_table: { columns: [['ftrelid', OIDT], ['ftserver', OIDT]], rows: () => [] },
  pg_partitioned_table: { columns: [['partrelid', OIDT], ['partstrat', CHAR]], rows: () => [] },
  pg_proc: {
    columns: [['oid', OIDT], ['proname', NAME], ['pronamespace', OIDT], ['proowner', OIDT], ['prokind', CHAR], ['proretset', BOOL], ['prorettype', OIDT], ['pronargs', INT2], ['proargtypes', T.oidvector], ['prosrc', TEXT]],
    rows: () => [],
  },
  pg_settings: {
    columns: [['name', TEXT], ['setting', TEXT], ['unit', TEXT], ['category', TEXT], ['short_desc', TEXT], ['context', TEXT], ['vartype', TEXT], ['source', TEXT]],
    rows: () => [
      ['server_version', '15.0', null, 'Preset Options', 'Shows the server version.', 'internal', 'string', 'default'],
      ['server_version_num', '150000', null, 'Preset Options', 'Shows the server version as an integer.', 'internal', 'integer', 'default'],
      ['server_encoding', 'UTF8', null, 'Preset Options', 'Shows the server (database) character set encoding.', 'internal', 'string', 'default'],
      ['client_encoding', 'UTF8', null, 'Client Connection Defaults', 'Sets the client\'s character set encoding.', 'user', 'string', 'default'],
      ['standard_conforming_strings', 'on', null, 'Compatibility', 'Causes \'...\' strings to treat backslashes literally.', 'user', 'bool', 'default'],
      ['max_identifier_length', '63', null, 'Preset Options', 'Shows the maximum identifier length.', 'internal', 'integer', 'default'],
      ['TimeZone', 'UTC', null, 'Client Connection Defaults', 'Sets the time zone for displaying and interpreting time stamps.', 'user', 'string', 'default'],
      ['DateStyle', 'ISO, MDY', null, 'Client Connection Defaults', 'Sets the display format for date and time values.', 'user', 'string', 'default'],
    ],
  },
  pg_stat_activity: {
    columns: [['datid', OIDT], ['datname', NAME], ['pid', INT4], ['usesysid', OIDT], ['usename', NAME], ['application_name', TEXT], ['state', TEXT], ['query', TEXT]],
    rows: () => [],
  },
  pg_stat_user_tables: {
    columns: [['relid', OIDT], ['schemaname', NAME], ['relname', NAME], ['seq_scan', T.int8], ['n_live_tup', T.int8]],
    rows: (ctx) => userTables(ctx).map((t) => [tableOid(t.desc), 'public', t.desc.name, 0n, 0n]),
  },
  pg_stat_user_indexes: {
    columns: [['relid', OIDT], ['indexrelid', OIDT], ['schemaname', NAME], ['relname', NAME], ['indexrelname', NAME], ['idx_scan', T.int8], ['idx_tup_read', T.int8], ['idx_tup_fetch', T.int8]],
    rows: (ctx) => userTables(ctx).flatMap((t) => publicIndexes(t.desc).map((ix) => [tableOid(t.desc), indexOid(t.desc, ix), 'public', t.desc.name, ix.name, 0n, 0n, 0n])),
  },
  pg_tables: {
    columns: [['schemaname', NAME], ['tablename', NAME], ['tableowner', NAME], ['tablespace', NAME], ['hasindexes', BOOL], ['hasrules', BOOL], ['hastriggers', BOOL], ['rowsecurity', BOOL]],
    rows: (ctx) => userTables(ctx).map((t) => ['public', t.desc.name, 'root', null, true, false, false, false]),
  },
  pg_indexes: {
    columns: [['schemaname', NAME], ['tablename', NAME], ['indexname', NAME], ['tablespace', NAME], ['indexdef', TEXT]],
    rows: (ctx) => userTables(ctx).flatMap((t) => publicIndexes(t.desc).map((ix) => ['public', t.desc.name, ix.name, null, indexDef(t.desc, ix)])),
  },
};
PG_CATALOG['pg_stat_all_tables'] = PG_CATALOG['pg_stat_user_tables'] as VTable;
PG_CATALOG['pg_stat_all_indexes'] = PG_CATALOG['pg_stat_user_indexes'] as VTable;

/** PostgreSQL's pg_get_indexdef text of an index. */
export function indexDef(d: TableDesc, ix: IndexDesc): string {
  const cols = ix.keyColumnIds.map((id, i) => {
    const c = d.columns.find((x) => x.id === id);
    const dir = ix.directions[i] === 'desc' ? ' DESC' : '';
    return `${quoteIdent(c?.name ?? '?')}${dir}`;
  });
  const include = ix.storeColumnIds.length > 0 ? ` INCLUDE (${ix.storeColumnIds.map((id) => quoteIdent(d.columns.find((x) => x.id === id)?.name ?? '?')).join(', ')})` : '';
  const unique = ix.unique || ix.id === d.primaryIndex.id ? 'UNIQUE ' : '';
  return `CREATE ${unique}INDEX ${quoteIdent(ix.name)} ON public.${quoteIdent(d.name)} USING btree (${cols.join(', ')})${include}`;
}

/** pg_get_constraintdef text: PRIMARY KEY (a, b) / UNIQUE (a) / CHECK ((expr)). */
function constraintDef(d: TableDesc, ix: IndexDesc): string {
  const cols = ix.keyColumnIds.map((id) => quoteIdent(d.columns.find((x) => x.id === id)?.name ?? '?')).join(', ');
  return `${ix.id === d.primaryIndex.id ? 'PRIMARY KEY' : 'UNIQUE'} (${cols})`;
}

const relationNames = new Map<number, string>();
const relationOids = new Map<string, number>();
/** PostgreSQL's OIDs of the catalogs tools name with ::regclass (pg_description.classoid = 'pg_class'::regclass). */
const CATALOG_RELATION_OIDS: ReadonlyMap<string, number> = new Map([
  ['pg_type', 1247], ['pg_attribute', 1249], ['pg_proc', 1255], ['pg_class', 1259], ['pg_database', 1262], ['pg_am', 2601],
  ['pg_attrdef', 2604], ['pg_constraint', 2606], ['pg_description', 2609], ['pg_index', 2610], ['pg_namespace', 2615], ['pg_trigger', 2620],
]);
const CATALOG_RELATION_NAMES: ReadonlyMap<number, string> = new Map([...CATALOG_RELATION_OIDS].map(([n, o]) => [o, n]));
regclassNames.oidOf = (name) => relationOids.get(name) ?? CATALOG_RELATION_OIDS.get(name);
regclassNames.nameOf = (oid) => relationNames.get(oid) ?? CATALOG_RELATION_NAMES.get(oid);

function publishRelation(oid: number, name: string): void {
  relationNames.set(oid, name);
  relationOids.set(name, oid);
}

/**
 * Publishes the current database's index / constraint definitions (pg_get_indexdef,
 * pg_get_constraintdef) and relation names (regclass input / output) — process-wide,
 * refreshed by every virtual-table read; OIDs are never reused.
 */
function publishDefinitions(ctx: VTableContext): void {
  relationOids.clear();
  for (const t of userTables(ctx)) {
    const d = t.desc;
    publishRelation(tableOid(d), d.name);
    for (const ix of publicIndexes(d)) {
      publishRelation(indexOid(d, ix), ix.name);
      catalogTexts.indexDefs.set(indexOid(d, ix), indexDef(d, ix));
      catalogTexts.indexColumns.set(indexOid(d, ix), [...ix.keyColumnIds, ...ix.storeColumnIds].map((id) => quoteIdent(d.columns.find((c) => c.id === id)?.name ?? '?')));
      if (isConstraintIndex(d, ix)) catalogTexts.constraintDefs.set(indexOid(d, ix), constraintDef(d, ix));
    }
    d.checks.forEach((ck, i) => catalogTexts.constraintDefs.set(tableOid(d) + 500 + i, `CHECK ((${ck.expr}))`));
    for (const r of foreignKeyRows(t)) catalogTexts.constraintDefs.set(r.oid, fkDef(r));
  }
  for (const r of [...userViews(ctx), ...userSequences(ctx)]) publishRelation(relOid(r), r.name);
}

/** quote_ident: double-quotes unless the name is a lower-case identifier. */
export function quoteIdent(s: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(s) ? s : `"${s.replace(/"/g, '""')}"`;
}

function ynYes(b: boolean): string {
  return b ? 'YES' : 'NO';
}

const SQL_ID = T.name;
const CARD = T.int4;
const YESNO = T.varchar;

/** information_schema.columns rows of tables (updatable) and views (read-only in Cairn). */
function infoColumns(ctx: VTableContext): Datum[][] {
  const out: Datum[][] = [];
  const push = (table: string, name: string, i: number, ty: SqlType, def: string | null, nullable: boolean, updatable: boolean): void => {
    const ps = numericPrecisionScale(ty);
    const isInt = ty.family === 'int';
    const precision = isInt ? (ty.oid === Oid.int2 ? 16 : ty.oid === Oid.int4 ? 32 : 64) : ty.family === 'float' ? (ty.oid === Oid.float4 ? 24 : 53) : ps?.precision ?? null;
    const radix = isInt || ty.family === 'float' ? 2 : ty.family === 'numeric' ? 10 : null;
    const scale = isInt ? 0 : ps?.scale ?? null;
    const dataType = ty.family === 'array' ? 'ARRAY' : formatType({ ...ty, typmod: -1 });
    const udt = typname({ ...ty, typmod: -1 });
    const datetimePrecision = ty.family === 'date' ? 0 : ty.family === 'timestamp' || ty.family === 'timestamptz' || ty.family === 'interval' ? (timePrecision(ty) ?? 6) : null;
    const octets = stringLength(ty) === undefined ? null : (stringLength(ty) as number) * 4;
    out.push([
      ...[ctx.database, 'public', table, name, i + 1, def, ynYes(nullable), dataType, stringLength(ty) ?? null, octets, precision, radix, scale, datetimePrecision],
      ...[null, null, null, null, null, null, null, null, null, null, null], // interval_type … domain_name
      ...[ctx.database, 'pg_catalog', udt, null, null, null, null, String(i + 1), 'NO'], // udt_catalog … is_self_referencing
      ...['NO', null, null, null, null, null, 'NO', 'NEVER', null, ynYes(updatable)], // is_identity … is_updatable
    ]);
  };
  for (const t of userTables(ctx)) visibleColumns(t.desc).forEach((c, i) => push(t.desc.name, c.name, i, colType(c), pgDefaultText(c.defaultExpr, colType(c)), c.nullable, true));
  for (const v of userViews(ctx)) v.columns.forEach((c, i) => push(v.name, c.name, i, colType(c), null, true, false));
  return out;
}

const INFORMATION_SCHEMA: Record<string, VTable> = {
  schemata: {
    columns: [['catalog_name', SQL_ID], ['schema_name', SQL_ID], ['schema_owner', SQL_ID], ['default_character_set_catalog', SQL_ID], ['default_character_set_schema', SQL_ID], ['default_character_set_name', SQL_ID], ['sql_path', TEXT]],
    rows: (ctx) => ['information_schema', 'pg_catalog', 'public'].map((s) => [ctx.database, s, 'root', null, null, null, null]),
  },
  tables: {
    columns: [['table_catalog', SQL_ID], ['table_schema', SQL_ID], ['table_name', SQL_ID], ['table_type', YESNO], ['self_referencing_column_name', SQL_ID], ['reference_generation', YESNO], ['user_defined_type_catalog', SQL_ID], ['user_defined_type_schema', SQL_ID], ['user_defined_type_name', SQL_ID], ['is_insertable_into', YESNO], ['is_typed', YESNO], ['commit_action', YESNO]],
    rows: (ctx) =>
      [
        ...userTables(ctx).map((t) => [ctx.database, 'public', t.desc.name, 'BASE TABLE', null, null, null, null, null, 'YES', 'NO', null]),
        ...userViews(ctx).map((v) => [ctx.database, 'public', v.name, 'VIEW', null, null, null, null, null, 'NO', 'NO', null]),
      ].sort((a, b) => ((a[2] as string) < (b[2] as string) ? -1 : 1)),
  },
  columns: {
    // PostgreSQL 15's columns, in its order (tools SELECT * and name the identity_* ones).
    columns: [
      ['table_catalog', SQL_ID], ['table_schema', SQL_ID], ['table_name', SQL_ID], ['column_name', SQL_ID], ['ordinal_position', CARD], ['column_default', TEXT], ['is_nullable', YESNO], ['data_type', TEXT],
      ['character_maximum_length', CARD], ['character_octet_length', CARD], ['numeric_precision', CARD], ['numeric_precision_radix', CARD], ['numeric_scale', CARD], ['datetime_precision', CARD],
      ['interval_type', TEXT], ['interval_precision', CARD], ['character_set_catalog', SQL_ID], ['character_set_schema', SQL_ID], ['character_set_name', SQL_ID], ['collation_catalog', SQL_ID], ['collation_schema', SQL_ID], ['collation_name', SQL_ID],
      ['domain_catalog', SQL_ID], ['domain_schema', SQL_ID], ['domain_name', SQL_ID], ['udt_catalog', SQL_ID], ['udt_schema', SQL_ID], ['udt_name', SQL_ID], ['scope_catalog', SQL_ID], ['scope_schema', SQL_ID], ['scope_name', SQL_ID],
      ['maximum_cardinality', CARD], ['dtd_identifier', SQL_ID], ['is_self_referencing', YESNO], ['is_identity', YESNO], ['identity_generation', TEXT], ['identity_start', TEXT], ['identity_increment', TEXT], ['identity_maximum', TEXT],
      ['identity_minimum', TEXT], ['identity_cycle', YESNO], ['is_generated', TEXT], ['generation_expression', TEXT], ['is_updatable', YESNO],
    ],
    rows: infoColumns,
  },
  table_constraints: {
    columns: [['constraint_catalog', SQL_ID], ['constraint_schema', SQL_ID], ['constraint_name', SQL_ID], ['table_catalog', SQL_ID], ['table_schema', SQL_ID], ['table_name', SQL_ID], ['constraint_type', YESNO], ['is_deferrable', YESNO], ['initially_deferred', YESNO], ['enforced', YESNO], ['nulls_distinct', YESNO]],
    rows: (ctx) =>
      userTables(ctx).flatMap((t) => {
        const d = t.desc;
        const rows: Datum[][] = [];
        for (const ix of publicIndexes(d)) {
          const primary = ix.id === d.primaryIndex.id;
          if (isConstraintIndex(d, ix)) rows.push([ctx.database, 'public', ix.name, ctx.database, 'public', d.name, primary ? 'PRIMARY KEY' : 'UNIQUE', 'NO', 'NO', 'YES', primary ? null : 'YES']);
        }
        for (const ck of d.checks) rows.push([ctx.database, 'public', ck.name, ctx.database, 'public', d.name, 'CHECK', 'NO', 'NO', 'YES', null]);
        for (const r of foreignKeyRows(t)) rows.push([ctx.database, 'public', r.fk.name, ctx.database, 'public', d.name, 'FOREIGN KEY', 'NO', 'NO', 'YES', null]);
        return rows;
      }),
  },
  key_column_usage: {
    columns: [['constraint_catalog', SQL_ID], ['constraint_schema', SQL_ID], ['constraint_name', SQL_ID], ['table_catalog', SQL_ID], ['table_schema', SQL_ID], ['table_name', SQL_ID], ['column_name', SQL_ID], ['ordinal_position', CARD], ['position_in_unique_constraint', CARD]],
    rows: (ctx) =>
      userTables(ctx).flatMap((t) => {
        const d = t.desc;
        return publicIndexes(d)
          .filter((ix) => isConstraintIndex(d, ix))
          .flatMap((ix) => ix.keyColumnIds.map((id, i) => [ctx.database, 'public', ix.name, ctx.database, 'public', d.name, d.columns.find((c) => c.id === id)?.name ?? null, i + 1, null]))
          .concat(
            foreignKeyRows(t).flatMap((r) =>
              r.fk.columnIds.map((id, i) => {
                const refId = r.fk.referencedColumnIds[i] as number;
                const pos = r.parentIndex !== undefined ? r.parentIndex.keyColumnIds.indexOf(refId) + 1 : null;
                return [ctx.database, 'public', r.fk.name, ctx.database, 'public', d.name, colName(d, id), i + 1, pos];
              }),
            ),
          );
      }),
  },
  referential_constraints: {
    columns: [['constraint_catalog', SQL_ID], ['constraint_schema', SQL_ID], ['constraint_name', SQL_ID], ['unique_constraint_catalog', SQL_ID], ['unique_constraint_schema', SQL_ID], ['unique_constraint_name', SQL_ID], ['match_option', YESNO], ['update_rule', YESNO], ['delete_rule', YESNO]],
    rows: (ctx) =>
      userTables(ctx).flatMap((t) =>
        foreignKeyRows(t).map((r) => [ctx.database, 'public', r.fk.name, ctx.database, 'public', r.parentIndex?.name ?? null, r.fk.match === 'full' ? 'FULL' : 'NONE', r.fk.onUpdate.toUpperCase(), r.fk.onDelete.toUpperCase()]),
      ),
  },
  constraint_column_usage: {
    columns: [['table_catalog', SQL_ID], ['table_schema', SQL_ID], ['table_name', SQL_ID], ['column_name', SQL_ID], ['constraint_catalog', SQL_ID], ['constraint_schema', SQL_ID], ['constraint_name', SQL_ID]],
    // PRIMARY KEY / UNIQUE: their own columns; FOREIGN KEY: the referenced table's columns.
    rows: (ctx) =>
      userTables(ctx).flatMap((t) => {
        const d = t.desc;
        const own = publicIndexes(d)
          .filter((ix) => isConstraintIndex(d, ix))
          .flatMap((ix) => ix.keyColumnIds.map((id) => [ctx.database, 'public', d.name, colName(d, id), ctx.database, 'public', ix.name]));
        const fks = foreignKeyRows(t).flatMap((r) => r.fk.referencedColumnIds.map((id) => [ctx.database, 'public', r.parent.name, colName(r.parent, id), ctx.database, 'public', r.fk.name]));
        return [...own, ...fks];
      }),
  },
  check_constraints: {
    columns: [['constraint_catalog', SQL_ID], ['constraint_schema', SQL_ID], ['constraint_name', SQL_ID], ['check_clause', TEXT]],
    rows: (ctx) => userTables(ctx).flatMap((t) => t.desc.checks.map((ck) => [ctx.database, 'public', ck.name, ck.expr])),
  },
  sequences: {
    columns: [['sequence_catalog', SQL_ID], ['sequence_schema', SQL_ID], ['sequence_name', SQL_ID], ['data_type', TEXT], ['numeric_precision', CARD], ['numeric_precision_radix', CARD], ['numeric_scale', CARD], ['start_value', TEXT], ['minimum_value', TEXT], ['maximum_value', TEXT], ['increment', TEXT], ['cycle_option', YESNO]],
    rows: (ctx) => userSequences(ctx).map((s) => [ctx.database, 'public', s.name, 'bigint', 64, 2, 0, s.start, s.minValue, s.maxValue, s.increment, ynYes(s.cycle)]),
  },
  views: {
    columns: [['table_catalog', SQL_ID], ['table_schema', SQL_ID], ['table_name', SQL_ID], ['view_definition', TEXT], ['check_option', YESNO], ['is_updatable', YESNO], ['is_insertable_into', YESNO], ['is_trigger_updatable', YESNO], ['is_trigger_deletable', YESNO], ['is_trigger_insertable_into', YESNO]],
    // Cairn views are read-only.
    rows: (ctx) => userViews(ctx).map((v) => [ctx.database, 'public', v.name, v.query, 'NONE', 'NO', 'NO', 'NO', 'NO', 'NO']),
  },
};

function lookup(name: TableName): VTable | undefined {
  const schema = name.schema;
  if (schema === 'information_schema') return Object.hasOwn(INFORMATION_SCHEMA, name.name) ? INFORMATION_SCHEMA[name.name] : undefined;
  if (schema === 'pg_catalog' || schema === undefined) return Object.hasOwn(PG_CATALOG, name.name) ? PG_CATALOG[name.name] : undefined;
  return undefined;
}

/** Whether `name` names a virtual table (pg_catalog is searched before public, as in PostgreSQL). */
export function isVirtualTable(name: TableName): boolean {
  return lookup(name) !== undefined;
}

/** The columns and current rows of the virtual table `name`, or undefined when it is not one. */
export function virtualTable(name: TableName, ctx: VTableContext): { columns: ScopeColumn[]; rows: Datum[][] } | undefined {
  const v = lookup(name);
  if (v === undefined) return undefined;
  const columns = v.columns.map(([n, type]) => ({ name: n, table: name.name, type, hidden: false }));
  publishDefinitions(ctx);
  return { columns, rows: v.rows(ctx) };
}

/** The pg_class oid of a table / index named `name` in the current database, for ::regclass. */
export function relationOid(ctx: VTableContext, name: string): number | undefined {
  for (const t of userTables(ctx)) {
    if (t.desc.name === name) return tableOid(t.desc);
    for (const ix of publicIndexes(t.desc)) if (ix.name === name) return indexOid(t.desc, ix);
  }
  const r = [...userViews(ctx), ...userSequences(ctx)].find((x) => x.name === name);
  return r === undefined ? undefined : relOid(r);
}
