/**
 * sql/exec/fk-actions.ts — foreign-key enforcement for INSERT / UPDATE /
 * DELETE / UPSERT / COPY and the referential actions (issue 7).
 *
 * When: after a statement's own writes have been sent (mutation.ts), inside
 * the same transaction, before it commits. Reading after writing gives
 * PostgreSQL's end-of-statement semantics (a row may reference a row the
 * same statement inserted, a parent and its children may go in one DELETE),
 * and because every check reads in the writing transaction, serializable
 * isolation makes a concurrent change of the other side conflict with it —
 * no check can be invalidated before commit.
 *
 * For one statement's row changes on table T (old → next; insert has no old,
 * delete no next):
 *
 *   outbound  (T is the child of foreign key f)  for each new row whose key
 *             columns changed (or were inserted) and are not NULL (MATCH
 *             SIMPLE; MATCH FULL rejects partly-NULL keys): one batch of
 *             parent lookups — a get when the referenced columns are the
 *             parent's primary key, else a limit-1 scan of the unique index
 *             holding them. Missing → 23503 "insert or update on table …".
 *   inbound   (T is the parent of f)  the referenced keys that the change
 *             removed (deleted, or changed by an UPDATE):
 *               NO ACTION / RESTRICT   a limit-1 scan of the child's FK
 *                                      index per key (one batch); a hit →
 *                                      23503 "update or delete on table …"
 *                                      (keys still present among the
 *                                      statement's new rows are skipped)
 *               CASCADE / SET NULL /   the referencing child rows are read
 *               SET DEFAULT            (index scan + primary gets), rewritten
 *                                      or deleted through `apply` (the same
 *                                      write path as a user statement: index
 *                                      maintenance, NOT NULL / CHECK, unique
 *                                      checks), and the child's own foreign
 *                                      keys are enforced recursively.
 *
 * The child side always has an index starting with the FK columns (created
 * with the constraint, sql/schema/foreign-keys.ts); if it is missing (an
 * older descriptor) the child's primary index is scanned and filtered.
 *
 * Ownership: stateless functions; plans derived from a FkRef are cached per
 * FkRef object (one per catalog snapshot).
 */
import { prefixEnd } from '../../storage/encoding/index.js';
import { tableIndexSpan } from '../../storage/keys.js';
import { assert } from '../../src/util/assert.js';
import { KVBatch, type KVResult } from '../kv.js';
import type { FkRef, TableEntry } from '../catalog/catalog.js';
import type { ForeignKeyDesc } from '../catalog/descriptor.js';
import { SqlError } from '../parser/sql-error.js';
import { indexCodecs, type IndexCodec } from '../rowenc/index-codec.js';
import { tableRules } from '../plan/planner.js';
import { assignCast, compareDatums, datumToText, type Datum } from '../sem/datum.js';
import type { SqlType } from '../types/type.js';
import type { EvalFn } from '../sem/expr.js';
import type { ExecCtx, Row } from './operators.js';

/** One row change of a statement: insert (old null), delete (next null) or update. */
export interface RowChange {
  readonly old: Row | null;
  readonly next: Row | null;
}

/** Writes `changes` to `table` (primary + index writes, constraint checks) — mutation.ts's write path. */
export type ApplyChanges = (table: TableEntry, changes: readonly RowChange[]) => Promise<void>;

/** Cascades deeper than this are a cycle in the data the statement keeps re-finding (a bug). */
const MAX_DEPTH = 10_000;

/** Whether writes to `table` need foreign-key work at all. */
export function hasForeignKeys(table: TableEntry): boolean {
  return table.outboundFks.length > 0 || table.inboundFks.length > 0;
}

/** How to find parent rows and child rows of one foreign key. */
interface FkPlan {
  readonly childOrds: readonly number[];
  readonly parentOrds: readonly number[];
  /** Parent lookup: a primary get (undefined) or a scan of this unique index. */
  readonly parentIndex: IndexCodec | undefined;
  /** Child lookup: 'primary' (PK starts with the FK columns), an index, or undefined (full scan). */
  readonly childIndex: IndexCodec | 'primary' | undefined;
  /** For the child index's first n key columns: which FK column (0..n-1) each holds. */
  readonly childPrefixOrder: readonly number[];
}

const plans = new WeakMap<FkRef, FkPlan>();

function ordinalsOf(t: TableEntry, ids: readonly number[]): number[] {
  return ids.map((id) => {
    const i = t.desc.columns.findIndex((c) => c.id === id);
    assert(i >= 0, `fk: column ${id} missing from table ${t.desc.name}`);
    return i;
  });
}

function sameSet(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}

/** The prefix order when `keyIds` starts with the columns `fkIds` (in any order), else undefined. */
export function prefixOrder(keyIds: readonly number[], fkIds: readonly number[]): number[] | undefined {
  if (keyIds.length < fkIds.length) return undefined;
  const head = keyIds.slice(0, fkIds.length);
  if (!sameSet(head, fkIds)) return undefined;
  return head.map((id) => fkIds.indexOf(id));
}

function planOf(ref: FkRef): FkPlan {
  let p = plans.get(ref);
  if (p !== undefined) return p;
  const { fk, child, parent } = ref;
  let parentIndex: IndexCodec | undefined;
  if (!sameSet(parent.desc.primaryIndex.keyColumnIds, fk.referencedColumnIds)) {
    parentIndex = indexCodecs(parent.desc, parent.codec).find((c) => c.index.unique && (c.index.state ?? 'public') === 'public' && sameSet(c.index.keyColumnIds, fk.referencedColumnIds));
    assert(parentIndex !== undefined, `fk: no unique index on ${parent.desc.name} for ${fk.name}`);
  }
  let childIndex: FkPlan['childIndex'];
  let childPrefixOrder: number[] = [];
  const pk = prefixOrder(child.desc.primaryIndex.keyColumnIds, fk.columnIds);
  if (pk !== undefined) {
    childIndex = 'primary';
    childPrefixOrder = pk;
  } else {
    for (const c of indexCodecs(child.desc, child.codec)) {
      const o = (c.index.state ?? 'public') === 'public' ? prefixOrder(c.index.keyColumnIds, fk.columnIds) : undefined;
      if (o !== undefined) {
        childIndex = c;
        childPrefixOrder = o;
        break;
      }
    }
  }
  p = { childOrds: ordinalsOf(child, fk.columnIds), parentOrds: ordinalsOf(parent, fk.referencedColumnIds), parentIndex, childIndex, childPrefixOrder };
  plans.set(ref, p);
  return p;
}

function typeAt(t: TableEntry, ord: number): SqlType {
  return t.codec.types[ord] as SqlType;
}

function valuesAt(row: Row, ords: readonly number[]): Datum[] {
  return ords.map((o) => row[o] as Datum);
}

function sameValues(t: TableEntry, a: Row, b: Row, ords: readonly number[]): boolean {
  for (const o of ords) {
    const x = a[o] as Datum;
    const y = b[o] as Datum;
    if (x === null || y === null) {
      if (x !== y) return false;
    } else if (compareDatums(x, y, typeAt(t, o)) !== 0) return false;
  }
  return true;
}

function keyText(t: TableEntry, ords: readonly number[], vals: readonly Datum[]): string {
  return vals.map((v, i) => (v === null ? 'null' : datumToText(v, typeAt(t, ords[i] as number)))).join(', ');
}

function keyDetail(t: TableEntry, ords: readonly number[], vals: readonly Datum[]): string {
  return `(${ords.map((o) => t.desc.columns[o]?.name).join(', ')})=(${keyText(t, ords, vals)})`;
}

/** 23503 for a referencing row whose key has no parent row (also used by ADD CONSTRAINT's validation). */
export function missingParentError(ref: FkRef, vals: readonly Datum[] | undefined): SqlError {
  const p = planOf(ref);
  const detail = vals === undefined ? 'MATCH FULL does not allow mixing of null and nonnull key values.' : `Key ${keyDetail(ref.child, p.childOrds, vals)} is not present in table "${ref.parent.desc.name}".`;
  return new SqlError('sql.foreign_key_violation', '23503', `insert or update on table "${ref.child.desc.name}" violates foreign key constraint "${ref.fk.name}"`, { detail, ...fkFields(ref) });
}

function stillReferencedError(ref: FkRef, vals: readonly Datum[]): SqlError {
  const p = planOf(ref);
  const msg = `update or delete on table "${ref.parent.desc.name}" violates foreign key constraint "${ref.fk.name}" on table "${ref.child.desc.name}"`;
  return new SqlError('sql.foreign_key_violation', '23503', msg, { detail: `Key ${keyDetail(ref.parent, p.parentOrds, vals)} is still referenced from table "${ref.child.desc.name}".`, ...fkFields(ref) });
}

/** ErrorResponse fields of a 23503: PostgreSQL names the referencing table either way. */
function fkFields(ref: FkRef): { schema: string; table: string; constraint: string } {
  return { schema: 'public', table: ref.child.desc.name, constraint: ref.fk.name };
}

/**
 * The child key values of a row to check against the parent: undefined when
 * the row needs no check (a NULL under MATCH SIMPLE, all NULL under FULL);
 * throws 23503 for a partly-NULL key under MATCH FULL.
 */
export function childKey(ref: FkRef, row: Row): Datum[] | undefined {
  const vals = valuesAt(row, planOf(ref).childOrds);
  const nulls = vals.filter((v) => v === null).length;
  if (nulls === 0) return vals;
  if (ref.fk.match === 'full' && nulls < vals.length) throw missingParentError(ref, undefined);
  return undefined;
}

/** Adds the lookup of the parent row holding child key `vals` to `b`. */
export function addParentLookup(b: KVBatch, ref: FkRef, vals: readonly Datum[]): void {
  const p = planOf(ref);
  const parent = ref.parent;
  const cast = (j: number): Datum => assignCast(vals[j] as Datum, typeAt(ref.child, p.childOrds[j] as number), typeAt(parent, p.parentOrds[j] as number));
  if (p.parentIndex === undefined) {
    const row: Datum[] = new Array(parent.desc.columns.length).fill(null);
    p.parentOrds.forEach((o, j) => (row[o] = cast(j)));
    b.get(parent.codec.encodeKey(row));
    return;
  }
  const ix = p.parentIndex;
  const prefix = ix.encodeKeyPrefix(ix.keyOrdinals.map((o) => cast(p.parentOrds.indexOf(o))));
  b.scan(prefix, prefixEnd(prefix), { limit: 1 });
}

/** Whether a lookup result found a row. */
export function found(r: KVResult | undefined): boolean {
  if (r?.kind === 'get') return r.value !== null;
  if (r?.kind === 'scan') return r.rows.length > 0;
  return false;
}

/** The child-side span for parent key `vals` (referenced-column order), or the whole table without an FK index. */
function childSpan(ref: FkRef, vals: readonly Datum[]): { key: Buffer; endKey: Buffer } {
  const p = planOf(ref);
  const child = ref.child;
  if (p.childIndex === undefined) return tableIndexSpan(child.desc.id, child.desc.primaryIndex.id);
  const prefixVals = p.childPrefixOrder.map((j) => assignCast(vals[j] as Datum, typeAt(ref.parent, p.parentOrds[j] as number), typeAt(child, p.childOrds[j] as number)));
  const key = p.childIndex === 'primary' ? child.codec.encodeKeyPrefix(prefixVals) : p.childIndex.encodeKeyPrefix(prefixVals);
  return { key, endKey: prefixEnd(key) };
}

/** Whether a child row (full or index-decoded) references parent key `vals`. */
function references(ref: FkRef, row: Row, vals: readonly Datum[]): boolean {
  const p = planOf(ref);
  return p.childOrds.every((o, j) => {
    const v = row[o] as Datum;
    const w = assignCast(vals[j] as Datum, typeAt(ref.parent, p.parentOrds[j] as number), typeAt(ref.child, o));
    return v !== null && w !== null && compareDatums(v, w, typeAt(ref.child, o)) === 0;
  });
}

/** Reads the full child rows referencing each parent key (one scan batch, then one batch of primary gets). */
async function childRows(ctx: ExecCtx, ref: FkRef, keys: readonly Datum[][]): Promise<Row[][]> {
  const p = planOf(ref);
  const child = ref.child;
  const n = child.desc.columns.length;
  const b = new KVBatch();
  for (const k of keys) {
    const s = childSpan(ref, k);
    b.scan(s.key, s.endKey, { lock: 'exclusive' });
  }
  const res = keys.length > 0 ? await ctx.txn.run(b) : [];
  const out: Row[][] = [];
  const gets = new KVBatch();
  const pending: { list: number; row: Row }[] = [];
  keys.forEach((k, i) => {
    const r = res[i];
    assert(r?.kind === 'scan' && r.resumeKey === null, 'fk: unexpected child scan result');
    const rows: Row[] = [];
    for (const kv of r.rows) {
      const row: Datum[] = new Array(n).fill(null);
      if (p.childIndex === 'primary' || p.childIndex === undefined) {
        child.codec.decodeKey(kv.key, row);
        child.codec.decodeValue(kv.value, row);
        if (p.childIndex === undefined && !references(ref, row, k)) continue;
        rows.push(row);
      } else {
        p.childIndex.decodeEntry(kv.key, kv.value, row);
        if (!references(ref, row, k)) continue;
        gets.get(child.codec.encodeKey(row), 'exclusive');
        pending.push({ list: i, row });
      }
    }
    out.push(rows);
  });
  if (pending.length > 0) {
    const full = await ctx.txn.run(gets);
    pending.forEach((x, i) => {
      const r = full[i];
      assert(r?.kind === 'get' && r.value !== null, 'fk: index entry without its row');
      child.codec.decodeValue(r.value, x.row);
      (out[x.list] as Row[]).push(x.row);
    });
  }
  return out;
}

/** Distinct non-NULL values of `ords` over `rows`, keyed by their text. */
function distinctKeys(t: TableEntry, rows: readonly Row[], ords: readonly number[]): Map<string, Datum[]> {
  const m = new Map<string, Datum[]>();
  for (const r of rows) {
    const vals = valuesAt(r, ords);
    if (vals.some((v) => v === null)) continue;
    const s = keyText(t, ords, vals);
    if (!m.has(s)) m.set(s, vals);
  }
  return m;
}

/**
 * The parent lookups of the changed rows' outbound foreign keys: `add`
 * appends them to a batch (after the statement's writes, so a self-reference
 * sees the rows just written), `verify` checks their results (23503 on the
 * first missing parent). Undefined when no row needs a check.
 */
export interface OutboundChecks {
  add(b: KVBatch): void;
  verify(res: readonly (KVResult | undefined)[]): void;
}

export function outboundChecks(table: TableEntry, changes: readonly RowChange[]): OutboundChecks | undefined {
  const asked: { ref: FkRef; vals: Datum[] }[] = [];
  for (const ref of table.outboundFks) {
    const p = planOf(ref);
    const seen = new Set<string>();
    for (const c of changes) {
      if (c.next === null) continue;
      if (c.old !== null && sameValues(table, c.old, c.next, p.childOrds)) continue;
      const vals = childKey(ref, c.next);
      if (vals === undefined) continue;
      const s = keyText(table, p.childOrds, vals);
      if (seen.has(s)) continue;
      seen.add(s);
      asked.push({ ref, vals });
    }
  }
  if (asked.length === 0) return undefined;
  return {
    add: (b) => {
      for (const a of asked) addParentLookup(b, a.ref, a.vals);
    },
    verify: (res) =>
      asked.forEach((a, i) => {
        if (!found(res[i])) throw missingParentError(a.ref, a.vals);
      }),
  };
}

/** Checks the parents of the changed rows' outbound foreign keys (one batch for all of them). */
async function checkOutbound(ctx: ExecCtx, table: TableEntry, changes: readonly RowChange[]): Promise<void> {
  const checks = outboundChecks(table, changes);
  if (checks === undefined) return;
  const b = new KVBatch();
  checks.add(b);
  checks.verify(await ctx.txn.run(b));
}

/**
 * Enforces the foreign keys touched by `changes` to `table` (already
 * written), cascading through `apply`; `outboundDone` when the caller sent
 * the outbound checks with the writes (outboundChecks).
 */
export async function enforceForeignKeys(ctx: ExecCtx, table: TableEntry, changes: readonly RowChange[], apply: ApplyChanges, depth = 0, outboundDone = false): Promise<void> {
  if (changes.length === 0) return;
  if (depth > MAX_DEPTH) throw new SqlError('sql.program_limit_exceeded', '54000', `foreign key cascade on table "${table.desc.name}" exceeds ${MAX_DEPTH} levels`);
  if (!outboundDone) await checkOutbound(ctx, table, changes);
  for (const ref of table.inboundFks) {
    const p = planOf(ref);
    // Parent keys this statement removed, each with its replacement row (UPDATE) or null (DELETE).
    const removed: { vals: Datum[]; next: Row | null }[] = [];
    for (const c of changes) {
      if (c.old === null) continue;
      if (c.next !== null && sameValues(table, c.old, c.next, p.parentOrds)) continue;
      const vals = valuesAt(c.old, p.parentOrds);
      if (vals.some((v) => v === null)) continue;
      removed.push({ vals, next: c.next });
    }
    if (removed.length === 0) continue;
    const deleting = removed[0]?.next === null;
    const action = deleting ? ref.fk.onDelete : ref.fk.onUpdate;
    if (action === 'no action' || action === 'restrict') {
      await checkNoReferences(ctx, ref, table, changes, removed.map((r) => r.vals));
      continue;
    }
    const found = await childRows(ctx, ref, removed.map((r) => r.vals));
    const childChanges: RowChange[] = [];
    found.forEach((rows, i) => {
      const parentNext = (removed[i] as { next: Row | null }).next;
      for (const old of rows) childChanges.push({ old, next: actionRow(ctx, ref, action, old, parentNext) });
    });
    if (childChanges.length === 0) continue;
    await apply(ref.child, childChanges);
    await enforceForeignKeys(ctx, ref.child, childChanges, apply, depth + 1);
  }
}

async function checkNoReferences(ctx: ExecCtx, ref: FkRef, table: TableEntry, changes: readonly RowChange[], keys: readonly Datum[][]): Promise<void> {
  const p = planOf(ref);
  const present = distinctKeys(table, changes.flatMap((c) => (c.next !== null ? [c.next] : [])), p.parentOrds);
  const check = keys.filter((k) => !present.has(keyText(table, p.parentOrds, k)));
  if (check.length === 0) return;
  if (p.childIndex === undefined) {
    const rows = await childRows(ctx, ref, check);
    const i = rows.findIndex((r) => r.length > 0);
    if (i >= 0) throw stillReferencedError(ref, check[i] as Datum[]);
    return;
  }
  const b = new KVBatch();
  for (const k of check) {
    const s = childSpan(ref, k);
    b.scan(s.key, s.endKey, { limit: 1 });
  }
  const res = await ctx.txn.run(b);
  const i = res.findIndex((r) => found(r));
  if (i >= 0) throw stillReferencedError(ref, check[i] as Datum[]);
}

/** The child row after a CASCADE / SET NULL / SET DEFAULT action (null: delete it). */
function actionRow(ctx: ExecCtx, ref: FkRef, action: ForeignKeyDesc['onDelete'], old: Row, parentNext: Row | null): Row | null {
  const p = planOf(ref);
  if (action === 'cascade' && parentNext === null) return null;
  const next = old.slice();
  p.childOrds.forEach((o, j) => {
    if (action === 'cascade') {
      const po = p.parentOrds[j] as number;
      next[o] = assignCast((parentNext as Row)[po] as Datum, typeAt(ref.parent, po), typeAt(ref.child, o));
    } else if (action === 'set null') next[o] = null;
    else next[o] = (tableRules(ref.child).defaults[o] as EvalFn)(old, ctx.env);
  });
  return next;
}
