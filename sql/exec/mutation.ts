/**
 * sql/exec/mutation.ts — INSERT / UPSERT / UPDATE / DELETE execution.
 *
 * Each statement drains its input (VALUES, a query, or a FOR UPDATE scan
 * with its filter), computes the new rows, checks constraints, and sends all
 * of its writes in ONE KV batch:
 *   INSERT      cput(key, value, expected = null) per row: an existing key
 *               (or a duplicate within the statement) fails the cput → 23505
 *   ON CONFLICT one batch of gets for the candidate keys first, then the
 *   / UPSERT    writes (put for updated rows, cput for new ones)
 *   UPDATE      put(key, value); a changed primary key is del(old) + cput(new)
 *   DELETE      del(key)
 * When the statement is an implicit transaction's only statement, the write
 * batch is sent with commitInBatch (1PC in the KV layer where possible).
 *
 * Constraint checks, in PostgreSQL's order: assignment casts (22001, 22003),
 * NOT NULL (23502), CHECK (23514), then uniqueness (23505) at the KV layer,
 * then foreign keys (23503, fk-actions.ts) after the writes: on a table with
 * foreign keys the write batch also carries the parent lookups, is run
 * rather than committed, the referenced side's checks and referential
 * actions follow (their writes go through applyChanges, this file's write
 * path), and the transaction commits last.
 */
import { CairnError } from '../../src/util/errors.js';
import { assert } from '../../src/util/assert.js';
import { KVBatch } from '../kv.js';
import { SqlError } from '../parser/sql-error.js';
import type { SqlType } from '../types/type.js';
import type { TableEntry } from '../catalog/catalog.js';
import { tableRules } from '../plan/planner.js';
import { assignCast, datumToText, type Datum } from '../sem/datum.js';
import type { EvalFn } from '../sem/expr.js';
import type { DeleteNode, InsertNode, UpdateNode } from '../plan/plan-node.js';
import { open, projectRows, type ExecCtx, type Row } from './operators.js';
import { IndexWrites, indexUniqueViolation } from './index-writes.js';
import { enforceForeignKeys, hasForeignKeys, outboundChecks, type OutboundChecks, type RowChange } from './fk-actions.js';

export interface MutationResult {
  readonly count: number;
  /** RETURNING rows, if the statement has RETURNING. */
  readonly rows: Row[] | undefined;
}


async function drain(node: InsertNode['input'], ctx: ExecCtx): Promise<Row[]> {
  const it = open(node, ctx);
  const rows: Row[] = [];
  for (;;) {
    const b = await it.next();
    if (b === null) return rows;
    for (const r of b) rows.push(r);
  }
}

/** Applies assignment casts, NOT NULL and CHECK to a new row (in place). */
function checkRow(table: TableEntry, row: Row, ctx: ExecCtx): void {
  const cols = table.desc.columns;
  const types = table.codec.types;
  for (let i = 0; i < cols.length; i++) {
    const t = types[i] as SqlType;
    const v = row[i] as Datum;
    if (v !== null && (t.typmod >= 0 || t.family === 'int')) row[i] = assignCast(v, t, t);
    if (row[i] === null && !(cols[i] as { nullable: boolean }).nullable) {
      throw new SqlError('sql.not_null_violation', '23502', `null value in column "${cols[i]?.name}" of relation "${table.desc.name}" violates not-null constraint`, {
        detail: failingRow(table, row),
        schema: 'public',
        table: table.desc.name,
        column: cols[i]?.name,
      });
    }
  }
  for (const ch of tableRules(table).checks) {
    if (ch.fn(row, ctx.env) === false) {
      throw new SqlError('sql.check_violation', '23514', `new row for relation "${table.desc.name}" violates check constraint "${ch.name}"`, {
        detail: failingRow(table, row),
        schema: 'public',
        table: table.desc.name,
        constraint: ch.name,
      });
    }
  }
}

/**
 * PostgreSQL's detail of a 23502 / 23514: `Failing row contains (1, null, abc).`
 * — the visible columns' text, NULL as null, each cut to 64 bytes plus "...".
 */
function failingRow(table: TableEntry, row: Row): string {
  const vals: string[] = [];
  table.desc.columns.forEach((c, i) => {
    if (c.hidden) return;
    const v = row[i] as Datum;
    if (v === null) {
      vals.push('null');
      return;
    }
    const text = datumToText(v, table.codec.types[i] as SqlType);
    if (Buffer.byteLength(text) <= 64) vals.push(text);
    else {
      let cut = '';
      for (const ch of text) {
        if (Buffer.byteLength(cut + ch) > 64) break;
        cut += ch;
      }
      vals.push(`${cut}...`);
    }
  });
  return `Failing row contains (${vals.join(', ')}).`;
}

function keyDetail(table: TableEntry, row: Row): string {
  const names = table.codec.pkOrdinals.map((o) => table.desc.columns[o]?.name).join(', ');
  const vals = table.codec.pkOrdinals.map((o) => {
    const v = row[o] as Datum;
    return v === null ? 'null' : datumToText(v, table.codec.types[o] as SqlType);
  });
  return `Key (${names})=(${vals.join(', ')}) already exists.`;
}

function uniqueViolation(table: TableEntry, row: Row | undefined): SqlError {
  return new SqlError('sql.unique_violation', '23505', `duplicate key value violates unique constraint "${table.desc.name}_pkey"`, {
    detail: row !== undefined ? keyDetail(table, row) : undefined,
    schema: 'public',
    table: table.desc.name,
    constraint: `${table.desc.name}_pkey`,
  });
}

/**
 * Sends a statement's writes; with foreign keys on the table, the batch also
 * carries the parent lookups of its outbound keys (after the writes, so they
 * read them) and is run, not committed; then the referenced side is enforced
 * (fk-actions.ts: checks and cascades read after the writes) and the
 * transaction commits when asked. Without foreign keys the batch commits in
 * one round.
 */
async function finish(ctx: ExecCtx, b: KVBatch, commit: boolean, table: TableEntry, rowOfKey: Map<string, Row>, ix: IndexWrites, changes: () => RowChange[]): Promise<void> {
  if (!hasForeignKeys(table)) {
    await write(ctx, b, commit, table, rowOfKey, ix);
    return;
  }
  // The parent lookups ride in the write batch (after the writes); referenced-side work follows it.
  const ch = changes();
  const outbound = outboundChecks(table, ch);
  await write(ctx, b, false, table, rowOfKey, ix, outbound);
  if (table.inboundFks.length > 0) await enforceForeignKeys(ctx, table, ch, (t, c) => applyChanges(ctx, t, c), 0, true);
  if (commit) await ctx.txn.commit();
}

/**
 * Adds the writes of updates and deletes to `b` / `ix`: put for an update
 * keeping its primary key, del + cput for one moving it (dels first, so
 * rows may swap keys within one statement), del for a delete.
 */
function addChanges(ctx: ExecCtx, table: TableEntry, changes: readonly RowChange[], b: KVBatch, ix: IndexWrites, rowOfKey: Map<string, Row>): void {
  const codec = table.codec;
  const moved: { oldKey: Buffer; row: Row }[] = [];
  for (const c of changes) {
    const old = c.old as Row;
    const oldKey = codec.encodeKey(old);
    if (c.next === null) {
      b.del(oldKey);
      ix.delete(old);
      continue;
    }
    checkRow(table, c.next, ctx);
    ix.update(old, c.next);
    const next = c.next;
    // The primary key is re-encoded only when a key column was assigned a new datum.
    const newKey = codec.pkOrdinals.every((o) => Object.is(old[o], next[o])) ? oldKey : codec.encodeKey(next);
    if (newKey.equals(oldKey)) b.put(newKey, codec.encodeValue(next));
    else moved.push({ oldKey, row: next });
  }
  for (const m of moved) b.del(m.oldKey);
  for (const m of moved) {
    const k = codec.encodeKey(m.row);
    rowOfKey.set(k.toString('latin1'), m.row);
    b.cput(k, codec.encodeValue(m.row), null);
  }
}

/** A referential action's writes to a child table (fk-actions.ts ApplyChanges). */
async function applyChanges(ctx: ExecCtx, table: TableEntry, changes: readonly RowChange[]): Promise<void> {
  const b = new KVBatch();
  const ix = new IndexWrites(table);
  const rowOfKey = new Map<string, Row>();
  addChanges(ctx, table, changes, b, ix, rowOfKey);
  await write(ctx, b, false, table, rowOfKey, ix);
}

async function write(ctx: ExecCtx, b: KVBatch, commit: boolean, table: TableEntry, rowOfKey: Map<string, Row>, ix: IndexWrites, checks?: OutboundChecks): Promise<void> {
  assert(!(commit && checks !== undefined), 'mutation: foreign-key lookups in a commit batch would go unchecked');
  ix.flush(b);
  const first = b.length;
  checks?.add(b);
  try {
    if (commit) {
      // The transaction's first batch must read the schema version (sql-txn.ts). Riding with the writes it
      // would split the commit into run + EndTxn (the writes as intents, then a second Raft round and an
      // intent resolution); read it alone first so the writes still commit in one round (1PC): an implicit
      // INSERT then costs a read and one replicated write, like an UPDATE's point read and 1PC batch.
      if (!ctx.txn.isSchemaChecked() && b.length > 0) await ctx.txn.run(new KVBatch());
      await ctx.txn.commitInBatch(b);
    } else if (b.length > 0) {
      const res = await ctx.txn.run(b);
      checks?.verify(res.slice(first));
    }
  } catch (e) {
    if (e instanceof CairnError && e.code === 'kv.condition_failed') {
      const key = (e as CairnError & { key?: Buffer }).key;
      const c = key !== undefined ? ix.conflicts.get(key.toString('latin1')) : undefined;
      if (c !== undefined) throw indexUniqueViolation(table, c);
      throw uniqueViolation(table, key !== undefined ? rowOfKey.get(key.toString('latin1')) : undefined);
    }
    throw e;
  }
}

/**
 * Inserts already-built full rows (COPY FROM's batches): constraint checks,
 * then one batch of primary cputs and index entries; 23505 on a duplicate.
 */
export async function insertRows(table: TableEntry, rows: readonly Row[], ctx: ExecCtx): Promise<void> {
  const codec = table.codec;
  const b = new KVBatch();
  const ix = new IndexWrites(table);
  const rowOfKey = new Map<string, Row>();
  for (const r of rows) {
    checkRow(table, r, ctx);
    const key = codec.encodeKey(r);
    rowOfKey.set(key.toString('latin1'), r);
    b.cput(key, codec.encodeValue(r), null);
    ix.insert(r);
  }
  await finish(ctx, b, false, table, rowOfKey, ix, () => rows.map((next) => ({ old: null, next })));
}

export async function runInsert(node: InsertNode, ctx: ExecCtx, commit: boolean): Promise<MutationResult> {
  const table = node.table;
  const codec = table.codec;
  const rows = await drain(node.input, ctx);
  for (const r of rows) checkRow(table, r, ctx);
  const b = new KVBatch();
  const ix = new IndexWrites(table);
  const rowOfKey = new Map<string, Row>();
  const out: Row[] = [];
  const changes: RowChange[] = [];
  if (node.onConflict === undefined) {
    for (const r of rows) {
      const key = codec.encodeKey(r);
      rowOfKey.set(key.toString('latin1'), r);
      b.cput(key, codec.encodeValue(r), null);
      ix.insert(r);
      out.push(r);
    }
  } else {
    const keys = rows.map((r) => codec.encodeKey(r));
    const g = new KVBatch();
    for (const k of keys) g.get(k, 'exclusive');
    const existing = keys.length > 0 ? await ctx.txn.run(g) : [];
    const current = new Map<string, Row | null>();
    keys.forEach((k, i) => {
      const res = existing[i];
      const s = k.toString('latin1');
      if (current.has(s)) return;
      if (res?.kind === 'get' && res.value !== null) {
        const old: Row = new Array(table.desc.columns.length).fill(null);
        codec.decodeKey(k, old);
        codec.decodeValue(res.value, old);
        current.set(s, old);
      } else current.set(s, null);
    });
    const original = new Map(current);
    const conflict = node.onConflict;
    const n = table.desc.columns.length;
    const touched = new Set<string>();
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i] as Row;
      const k = keys[i] as Buffer;
      const s = k.toString('latin1');
      const old = current.get(s) ?? null;
      if (old === null) {
        current.set(s, r);
        touched.add(s);
        rowOfKey.set(s, r);
        out.push(r);
        continue;
      }
      if (conflict.action === 'nothing') continue;
      if (touched.has(s) && !node.upsert) {
        throw new SqlError('sql.cardinality_violation', '21000', 'ON CONFLICT DO UPDATE command cannot affect row a second time', {
          hint: 'Ensure that no rows proposed for insertion within the same command have duplicate constrained values.',
        });
      }
      const both = [...old, ...r];
      if (conflict.where !== undefined && conflict.where(both, ctx.env) !== true) continue;
      const next: Row = old.slice();
      for (let j = 0; j < n; j++) {
        const f = conflict.set[j] as EvalFn | undefined;
        if (f !== undefined) next[j] = f(both, ctx.env);
      }
      checkRow(table, next, ctx);
      const nk = codec.encodeKey(next);
      if (!nk.equals(k)) throw new SqlError('sql.unimplemented', '0A000', 'unimplemented: ON CONFLICT DO UPDATE changing the primary key');
      current.set(s, next);
      touched.add(s);
      rowOfKey.set(s, next);
      out.push(next);
    }
    for (const s of touched) {
      const r = current.get(s) as Row;
      b.put(Buffer.from(s, 'latin1'), codec.encodeValue(r));
      const old = original.get(s) ?? null;
      if (old === null) ix.insert(r);
      else ix.update(old, r);
      changes.push({ old, next: r });
    }
  }
  await finish(ctx, b, commit, table, rowOfKey, ix, () => (node.onConflict === undefined ? out.map((next) => ({ old: null, next })) : changes));
  return { count: out.length, rows: node.returning !== undefined ? projectRows(node.returning.exprs, out, ctx.env) : undefined };
}

export async function runUpdate(node: UpdateNode, ctx: ExecCtx, commit: boolean): Promise<MutationResult> {
  const table = node.table;
  const rows = await drain(node.input, ctx);
  const b = new KVBatch();
  const ix = new IndexWrites(table);
  const rowOfKey = new Map<string, Row>();
  const n = table.desc.columns.length;
  const changes: RowChange[] = rows.map((old) => {
    const next: Row = old.slice();
    for (let j = 0; j < n; j++) {
      const f = node.set[j];
      if (f !== undefined) next[j] = f(old, ctx.env);
    }
    return { old, next };
  });
  addChanges(ctx, table, changes, b, ix, rowOfKey);
  await finish(ctx, b, commit, table, rowOfKey, ix, () => changes);
  const out = changes.map((c) => c.next as Row);
  return { count: out.length, rows: node.returning !== undefined ? projectRows(node.returning.exprs, out, ctx.env) : undefined };
}

export async function runDelete(node: DeleteNode, ctx: ExecCtx, commit: boolean): Promise<MutationResult> {
  const table = node.table;
  const rows = await drain(node.input, ctx);
  const b = new KVBatch();
  const ix = new IndexWrites(table);
  const changes: RowChange[] = rows.map((old) => ({ old, next: null }));
  addChanges(ctx, table, changes, b, ix, new Map());
  await finish(ctx, b, commit, table, new Map(), ix, () => changes);
  return { count: rows.length, rows: node.returning !== undefined ? projectRows(node.returning.exprs, rows, ctx.env) : undefined };
}

