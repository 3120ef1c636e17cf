/**
 * sql/session/session.ts — one SQL session: pgwire's SessionBackend over the KV.
 *
 * Transaction state machine (PostgreSQL's, with CockroachDB's retry protocol):
 *
 *            BEGIN                         statement error
 *   idle ───────────► open ─────────────────────────────► aborted (25P02 for
 *    ▲  ◄──COMMIT/ROLLBACK─┘ ◄──ROLLBACK TO SAVEPOINT x──┘   all but ROLLBACK,
 *    │                      ◄──ROLLBACK TO cockroach_restart (KV restart)  COMMIT,
 *    └────────────────── COMMIT (= ROLLBACK when aborted) ◄┘   ROLLBACK TO)
 *
 *   RELEASE SAVEPOINT cockroach_restart commits the KV transaction; if that
 *   fails with 40001 the session stays in the transaction (aborted) and
 *   ROLLBACK TO SAVEPOINT cockroach_restart starts the next epoch.
 *
 * Implicit transactions: a statement outside BEGIN runs in its own
 * transaction, committed with the statement (DML sends its writes with
 * commitInBatch: 1PC where the KV layer can). On a retryable error (40001,
 * including SchemaChangedError) it is retried transparently — up to
 * MAX_AUTO_RETRIES times — as long as no row of it reached the client
 * (RowSink.canRewind). SELECT results stream to the client batch by batch
 * (with pgwire's backpressure); a retry first rewinds what the statement
 * produced, which is possible only while none of it reached the socket.
 * Execute with a row limit holds the rest of the result in the portal.
 * Several statements in one simple Query outside BEGIN share one implicit
 * transaction (PostgreSQL's rule): committed after the last one, rolled back
 * by any error; only its current statement can be retried transparently.
 * (A string that mixes in BEGIN/COMMIT/SAVEPOINT runs statement by statement.)
 *
 * The extended protocol's rule is the same with Sync as the end (DESIGN.md
 * §3, PostgreSQL's exec_execute_message): the Executes between two Syncs
 * outside BEGIN share one implicit transaction (`pending`), committed at
 * Sync, rolled back when an error was sent since the previous Sync. Only
 * its first statement can be retried transparently. When pgwire says the
 * Execute is the last message before Sync (RowSink.syncFollows — the usual
 * Parse/Bind/Execute/Sync of a driver), the statement commits with itself as
 * before, so a DML keeps its one-phase commit (CockroachDB does the same
 * look-ahead). BEGIN after earlier Executes of the same Sync makes their
 * transaction explicit, as PostgreSQL does; COMMIT/ROLLBACK end it.
 *
 * DDL works inside explicit transactions (ddl.ts): later statements of the
 * transaction plan against its own uncommitted schema; the node's catalog
 * cache is dropped when it commits.
 *
 * Prepared statements are parsed once (and planned once, re-planned when the
 * schema version moved); simple queries go through the node's statement
 * cache. Parameter types are inferred while planning (sem/expr.ts); a
 * parameter nothing constrains is text.
 *
 * Cancellation (CancelRequest, statement_timeout, and the client closing its
 * connection while a statement runs) sets a flag that the executor checks
 * between KV batches and every 1024 rows, and that the KV transaction checks
 * at its safe points (KVTxn.setCancelCheck: before a retry of a batch,
 * between the pushes of a lock wait): 57014. The statement's transaction is
 * then rolled back (implicit: at once; explicit: marked aborted, rolled back
 * by ROLLBACK or when the connection closes), which releases its intents.
 *
 * Errors: every expected failure leaves as a PgError (SqlError's position,
 * detail and hint preserved; retryable KV errors become 40001
 * "restart transaction: …"; ambiguous ones 40003).
 */
import { CairnError } from '../../src/util/errors.js';
import { prettyKey, tableIndexSpan, tableSpan } from '../../storage/keys.js';
import type { ColumnDescriptor, TxnStatus } from '../pgwire/backend.js';
import { PgError } from '../pgwire/errors.js';
import type { FormatCode } from '../pgwire/frontend.js';
import type { BindParams, ExecuteResult, Portal, PreparedStatement, RowSink, SessionBackend, SimpleQuerySink } from '../pgwire/session-backend.js';
import type { ParsedStatement, RangeTarget, Statement, TableName, TransactionModes, Expr } from '../parser/ast.js';
import { formatExpr } from '../parser/format.js';
import { SqlError, unimplemented } from '../parser/sql-error.js';
import type { StatementCache } from '../parser/statement-cache.js';
import { statementTag } from '../parser/statement-info.js';
import { T, typeFromOid, typlen, type SqlType } from '../types/type.js';
import { KVBatch, type KVAdmin, type KVDB, type KVRangeInfo, type KVTxn, type KVTxnOptions } from '../kv.js';
import { indexCodecs } from '../rowenc/index-codec.js';
import { MAX_TIMESTAMP, type Timestamp } from '../../src/util/hlc.js';
import { parseInterval } from '../types/interval.js';
import { parseTimestampTz } from '../types/datetime.js';
import { loadSnapshot, type Catalog, type CatalogSnapshot } from '../catalog/catalog.js';
import type { LeaseManager, LeaseUse, SchemaFence } from '../catalog/lease-manager.js';
import { alterUser, createUser, dropUser } from '../catalog/users.js';
import { SqlTxn } from '../exec/sql-txn.js';
import { open, type ExecCtx, type Row } from '../exec/operators.js';
import { runDelete, runInsert, runUpdate } from '../exec/mutation.js';
import { planDelete, planInsert, planSelect, planUpdate, resolveTable, type PlanContext } from '../plan/planner.js';
import type { QueryPlan, ResultColumn } from '../plan/plan-node.js';
import { explainPlan } from '../plan/explain.js';
import { datumFromBinary, datumFromText, datumToBinary, datumToText, type Datum } from '../sem/datum.js';
import { decodeText, encodeText, type TextFormatContext } from '../types/text-format.js';
import { resolveTimeZone } from '../types/datetime.js';
import type { EvalEnv, NodeServices } from '../sem/expr.js';
import { SessionVars } from './session-vars.js';
import { createIndex, dropIndex } from '../schema/index-ddl.js';
import { backfillOnline } from '../schema/index-backfill.js';
import { alterTable, rename } from '../schema/alter-table.js';
import { createView, dropViews, expandViews } from '../schema/view-ddl.js';
import { SessionSequences, createSequence, dropSequences } from '../schema/sequences.js';
import { copyFrom, copyHeader, copyLine, copyOptions } from '../exec/copy.js';
import { truncateTargets } from '../schema/foreign-keys.js';
import { finishPrimaryKeyOnline } from '../schema/primary-key.js';
import { createDatabase, createTable, dropDatabase, dropTables, showColumns, showCreateTable, showDatabases, showTables, type UtilityResult } from './ddl.js';

const MAX_AUTO_RETRIES = 100;
const PG_EPOCH_MICROS = 946_684_800_000_000;

/** What a session needs from its node. */
export interface SessionDeps {
  readonly db: KVDB;
  readonly catalog: Catalog;
  readonly node: NodeServices;
  readonly statementCache: StatementCache;
  readonly timers: { setTimeout(fn: () => void, ms: number): unknown; clearTimeout(h: unknown): void };
  /** Descriptor leases (lease-manager.ts); without them every transaction reads the schema version. */
  readonly leases?: LeaseManager;
}

interface OutColumn {
  readonly name: string;
  readonly type: SqlType;
  readonly tableOid: number;
  readonly columnAttr: number;
}

/** The outcome of one statement, fully materialised. */
interface StmtResult {
  readonly tag: string;
  readonly columns: readonly OutColumn[] | undefined;
  readonly rows: readonly Row[];
  /** The rows went out through a RowEmitter as they were produced (rows is empty). */
  readonly streamed?: boolean;
}

/**
 * Streams a SELECT's rows to the client batch by batch instead of holding
 * them all: `begin` (again after a transparent retry, which rewinds the
 * statement's output), then `rows` per batch, honouring backpressure.
 */
interface RowEmitter {
  begin(columns: readonly OutColumn[]): void;
  rows(rows: readonly Row[], columns: readonly OutColumn[]): Promise<void>;
}

export interface SessionStatement extends PreparedStatement {
  readonly sql: string;
  readonly parsed: ParsedStatement | undefined;
  readonly types: (SqlType | undefined)[];
  plan: QueryPlan | undefined;
  resultColumns: readonly OutColumn[] | undefined;
}

export interface SessionPortal extends Portal {
  readonly stmt: SessionStatement;
  readonly params: Datum[];
  readonly formats: readonly FormatCode[];
  result: StmtResult | undefined;
  pos: number;
}

interface SavepointEntry {
  readonly name: string;
  readonly sp: unknown;
  readonly restart: boolean;
}

interface ExplicitTxn {
  sql: SqlTxn;
  aborted: boolean;
  /** RELEASE cockroach_restart committed the KV transaction; only COMMIT is left. */
  committed: boolean;
  savepoints: SavepointEntry[];
  /** BEGIN READ ONLY / AS OF SYSTEM TIME: writes are refused with 25006. */
  readOnly: boolean;
}

/** Statements that write (refused in a read-only transaction). */
const WRITES = new Set(['Insert', 'Update', 'Delete', 'CreateTable', 'DropTable', 'CreateIndex', 'DropIndex', 'AlterTable', 'Rename', 'Copy', 'CreateView', 'DropView', 'CreateSequence', 'DropSequence', 'CreateDatabase', 'DropDatabase', 'Truncate', 'CreateRole', 'AlterRole', 'DropRole']);

/** Statements that write the schema version: fenced against descriptor leases first (lease-manager.ts). */
const SCHEMA_CHANGES = new Set([...WRITES].filter((k) => k !== 'Insert' && k !== 'Update' && k !== 'Delete' && k !== 'Copy'));

/** A KVDB whose transactions all commit below `deadline` (the txns a fenced schema change runs on its own). */
function withDeadline(db: KVDB, deadline: Timestamp): KVDB {
  return {
    nodeId: db.nodeId,
    now: () => db.now(),
    ...(db.admin === undefined ? {} : { admin: db.admin }),
    newTxn: (opts) => {
      const t = db.newTxn(opts);
      t.setDeadline?.(deadline);
      return t;
    },
  };
}

/** Same column count and types (a re-planned prepared statement must keep its RowDescription). */
function sameResultShape(described: readonly OutColumn[], now: readonly ResultColumn[] | undefined): boolean {
  return now !== undefined && now.length === described.length && now.every((c, i) => c.type.oid === (described[i] as OutColumn).type.oid);
}

function toOutColumns(cols: readonly ResultColumn[] | undefined): OutColumn[] | undefined {
  return cols?.map((c) => ({ name: c.name, type: c.type, tableOid: c.tableOid, columnAttr: c.columnAttr }));
}

function describeColumns(cols: readonly OutColumn[] | undefined, formats: readonly FormatCode[]): ColumnDescriptor[] | null {
  if (cols === undefined) return null;
  return cols.map((c, i) => ({
    name: c.name,
    tableOid: c.tableOid,
    columnAttr: c.columnAttr,
    typeOid: c.type.oid,
    typeSize: typlen(c.type),
    typeModifier: c.type.typmod,
    format: (formats.length === 1 ? formats[0] : (formats[i] ?? 0)) as FormatCode,
  }));
}

/** A row's wire values: binary-format values as bytes, text-format ones as strings (pgwire UTF-8 encodes them into its buffer). */
function encodeRow(row: Row, cols: readonly OutColumn[], formats: readonly FormatCode[], ctx: TextFormatContext): (Uint8Array | string | null)[] {
  const out: (Uint8Array | string | null)[] = new Array(cols.length);
  for (let i = 0; i < cols.length; i++) {
    const v = row[i] as Datum;
    if (v === null) {
      out[i] = null;
      continue;
    }
    const t = (cols[i] as OutColumn).type;
    const f = formats.length === 1 ? formats[0] : formats[i];
    if (f === 1) out[i] = datumToBinary(v, t);
    else out[i] = typeof v === 'string' && t.family === 'string' ? v : encodeText(v, t, ctx);
  }
  return out;
}

/** The PgError a client sees for any expected failure. */
export function toClientError(e: unknown): unknown {
  if (e instanceof PgError) return e;
  if (e instanceof SqlError) {
    return new PgError(e.code, e.sqlState, e.message, { position: e.position, detail: e.detail, hint: e.hint, schema: e.schema, table: e.table, column: e.column, constraint: e.constraint }, { retryable: e.retryable });
  }
  if (e instanceof CairnError) {
    if (e.retryable) {
      const msg = e.message.startsWith('restart transaction') ? e.message : `restart transaction: ${e.message}`;
      return new PgError(e.code, '40001', msg, {}, { retryable: true });
    }
    if (e.ambiguous) return new PgError(e.code, '40003', e.message, {}, { ambiguous: true });
    return e;
  }
  return e;
}

/** Errors that a stale catalog snapshot could cause (a missing table, database or column). */
function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function isSchemaMiss(e: unknown): boolean {
  return e instanceof SqlError && (e.sqlState === '42P01' || e.sqlState === '3D000' || e.sqlState === '42703');
}

function isRetryableError(e: unknown): boolean {
  return e instanceof CairnError && e.retryable;
}

const NOT_IN_ABORTED = new Set(['Rollback', 'Commit', 'RollbackToSavepoint']);
const TXN_CONTROL = new Set(['Begin', 'Commit', 'Rollback', 'Savepoint', 'ReleaseSavepoint', 'RollbackToSavepoint', 'SetTransaction']);

function modesNotice(modes: TransactionModes | undefined, vars: SessionVars): string | undefined {
  const iso = modes?.isolation ?? (vars.get('default_transaction_isolation') as TransactionModes['isolation']);
  if (iso === undefined || iso === 'serializable') return undefined;
  return `${iso.toUpperCase()} isolation level is not supported; the transaction runs as SERIALIZABLE`;
}

function varValue(values: readonly Expr[]): string {
  return values
    .map((v) => {
      if (v.kind === 'Const') return v.type === 'null' ? '' : String(v.text);
      if (v.kind === 'ColumnRef') return v.names.join('.');
      return formatExpr(v);
    })
    .join(', ');
}

export class Session implements SessionBackend<SessionStatement, SessionPortal> {
  private readonly vars: SessionVars;
  private txn: ExplicitTxn | undefined;
  /** The extended protocol's implicit transaction until the next Sync (see the header). */
  private pending: { readonly sql: SqlTxn; failed: boolean } | undefined;
  /** execute() is running: the statement follows the extended protocol's Sync rule. */
  private inExecute = false;
  private running: { cancelled: boolean; reason: string } | undefined;
  private closed = false;
  /** The fence of this session's schema change, held until its transaction ends. */
  private fence: SchemaFence | undefined;

  constructor(
    private readonly deps: SessionDeps,
    readonly user: string,
    private database: string,
    params: ReadonlyMap<string, string>,
  ) {
    this.vars = new SessionVars(params);
    this.seqs = new SessionSequences(deps.db, () => this.database);
  }

  /** nextval/currval/setval state of this session (sql/schema/sequences.ts). */
  private readonly seqs: SessionSequences;

  parameterStatus(): Iterable<readonly [string, string]> {
    return [
      ['application_name', this.vars.get('application_name')],
      ['TimeZone', this.vars.get('timezone')],
      ['is_superuser', this.user === 'root' ? 'on' : 'off'],
      ['session_authorization', this.user],
    ];
  }

  private tz: { name: string; ctx: TextFormatContext } | undefined;

  /** The session's TimeZone for timestamptz text (output and parameters). */
  private textContext(): TextFormatContext {
    const name = this.vars.get('timezone');
    if (this.tz === undefined || this.tz.name !== name) this.tz = { name, ctx: { timeZone: resolveTimeZone(name) } };
    return this.tz.ctx;
  }

  txnStatus(): TxnStatus {
    if (this.txn === undefined) return 'I';
    return this.txn.aborted ? 'E' : 'T';
  }

  // ---- protocol entry points ---------------------------------------------------------

  async simpleQuery(sql: string, sink: SimpleQuerySink): Promise<void> {
    // A Query inside an extended-protocol batch ends its implicit transaction first.
    if (this.pending !== undefined) await this.finishPending(false);
    let parsed: readonly ParsedStatement[];
    try {
      parsed = this.deps.statementCache.get(sql);
    } catch (e) {
      this.failTxn();
      throw toClientError(e);
    }
    if (parsed.length === 0) {
      sink.emptyQuery();
      return;
    }
    // Several statements outside BEGIN share one implicit transaction (as in
    // PostgreSQL): committed after the last, rolled back by any error.
    const batch = this.txn === undefined && parsed.length > 1 && parsed.every((p) => !TXN_CONTROL.has(p.ast.kind));
    if (batch) this.txn = { sql: new SqlTxn(this.newTxn()), aborted: false, committed: false, savepoints: [], readOnly: false };
    try {
      const emitter: RowEmitter = {
        begin: (cols) => sink.rowDescription(describeColumns(cols, [0]) as ColumnDescriptor[]),
        rows: async (rows, cols) => {
          const ctx = this.textContext(); // once per batch: no statement of this session runs between its rows
          for (const row of rows) {
            const p = sink.row(encodeRow(row, cols, [0], ctx));
            if (p !== undefined) await p;
          }
        },
      };
      for (const ps of parsed) {
        const r = await this.runOne(ps, undefined, [], sink, emitter);
        if (r.columns !== undefined && r.streamed !== true) {
          sink.rowDescription(describeColumns(r.columns, [0]) as ColumnDescriptor[]);
          const ctx = this.textContext();
          for (const row of r.rows) {
            const p = sink.row(encodeRow(row, r.columns, [0], ctx));
            if (p !== undefined) await p;
          }
        }
        sink.commandComplete(r.tag);
      }
    } catch (e) {
      if (batch) await this.rollback();
      throw e;
    }
    if (batch) {
      try {
        await this.commit();
      } catch (e) {
        throw toClientError(e);
      }
    }
  }

  async prepare(_name: string, sql: string, paramTypes: readonly number[]): Promise<SessionStatement> {
    try {
      const parsed = this.deps.statementCache.get(sql);
      if (parsed.length > 1) throw new SqlError('sql.syntax_error', '42601', 'cannot insert multiple commands into a prepared statement');
      const ps = parsed[0];
      if (ps !== undefined && this.txn?.aborted === true && !NOT_IN_ABORTED.has(ps.ast.kind)) {
        throw new PgError('sql.in_failed_sql_transaction', '25P02', 'current transaction is aborted, commands ignored until end of transaction block');
      }
      const types: (SqlType | undefined)[] = paramTypes.map((oid) => {
        if (oid === 0) return undefined;
        const t = typeFromOid(oid);
        if (t === undefined) throw new SqlError('sql.undefined_object', '42704', `type with OID ${oid} does not exist`);
        return t;
      });
      const stmt: SessionStatement = { sql, parsed: ps, types, plan: undefined, resultColumns: undefined, paramTypes: [], columns: null };
      if (ps !== undefined) {
        const n = Math.max(types.length, ps.params.length);
        for (let i = types.length; i < n; i++) types.push(undefined);
        await this.prepareResult(stmt, ps.ast, paramTypes);
      }
      const final = types.map((t) => (t === undefined ? T.text : t));
      for (let i = 0; i < final.length; i++) types[i] = final[i];
      return Object.assign(stmt, { paramTypes: final.map((t) => t.oid), columns: describeColumns(stmt.resultColumns, []) });
    } catch (e) {
      throw toClientError(e);
    }
  }

  /**
   * The last plan made at Parse, for the next Parse of the same text: clients
   * that send every statement unnamed (node-postgres without a name, the YCSB
   * loader's 100-row INSERTs with 1,100 parameters) Parse the same text again
   * and again, and planning it is most of the statement's SQL-layer CPU. A hit
   * needs the same text, database, declared parameter types and schema
   * version; it shares the plan as a named statement's Executes do.
   */
  private lastPlanned: { readonly sql: string; readonly database: string; readonly oids: readonly number[]; readonly types: readonly (SqlType | undefined)[]; readonly plan: QueryPlan; readonly resultColumns: readonly OutColumn[] | undefined } | undefined;

  /** Plans queries at Parse (types for Describe); utility statements describe their fixed columns. */
  private async prepareResult(stmt: SessionStatement, ast: Statement, oids: readonly number[] = []): Promise<void> {
    const plannable = ast.kind === 'Select' || ast.kind === 'Insert' || ast.kind === 'Update' || ast.kind === 'Delete';
    if (plannable) {
      const open = this.txn?.sql ?? this.pending?.sql;
      const dirty = open !== undefined && open.schemaDirty;
      const snap = dirty ? await loadSnapshot((open as SqlTxn).kv) : await this.nodeSnapshot();
      const last = this.lastPlanned;
      if (!dirty && last !== undefined && last.sql === stmt.sql && last.database === this.database && last.plan.schemaVersion === snap.version && sameNumbers(last.oids, oids)) {
        for (let i = 0; i < last.types.length; i++) stmt.types[i] = last.types[i];
        stmt.plan = last.plan;
        stmt.resultColumns = last.resultColumns;
        return;
      }
      try {
        stmt.plan = this.plan(ast, snap, stmt.types);
      } catch (e) {
        if (!isSchemaMiss(e) || dirty) throw e;
        this.deps.catalog.invalidate();
        stmt.plan = this.plan(ast, await this.nodeSnapshot(), stmt.types);
      }
      stmt.resultColumns = toOutColumns(stmt.plan.result);
      this.lastPlanned = dirty ? undefined : { sql: stmt.sql, database: this.database, oids: oids.slice(), types: stmt.types.slice(), plan: stmt.plan, resultColumns: stmt.resultColumns };
      return;
    }
    if (ast.kind === 'Explain' && ['Select', 'Insert', 'Update', 'Delete'].includes(ast.statement.kind)) {
      // Infers the explained statement's parameter types.
      this.plan(ast.statement, await this.nodeSnapshot(), stmt.types);
    }
    stmt.resultColumns = utilityColumns(ast);
  }

  /** Synchronous: pgwire handles the Bind without suspending. */
  bind(stmt: SessionStatement, _portalName: string, params: BindParams): SessionPortal {
    try {
      const values: Datum[] = params.values.map((v, i) => {
        if (v === null) return null;
        const t = T.text;
        const type = typeFromOid(stmt.paramTypes[i] ?? 0) ?? t;
        if (params.paramFormats[i] === 1) return datumFromBinary(v, type);
        // pgwire hands Buffers (views of the message); no second view just to decode the text.
        const text = Buffer.isBuffer(v) ? v.toString('utf8') : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
        const d = decodeText(text, type, this.textContext());
        if (d === null) throw new SqlError('sql.invalid_parameter_value', '22023', `invalid value for parameter $${i + 1}`);
        return d;
      });
      // All-text results (the drivers' default) share the statement's described columns: pgwire reuses their encoded RowDescription.
      const columns = params.resultFormats.every((f) => f === 0) ? stmt.columns : describeColumns(stmt.resultColumns, params.resultFormats);
      return { stmt, params: values, formats: params.resultFormats, result: undefined, pos: 0, columns };
    } catch (e) {
      throw toClientError(e);
    }
  }

  async execute(portal: SessionPortal, maxRows: number, sink: RowSink): Promise<ExecuteResult> {
    const ps = portal.stmt.parsed;
    if (ps === undefined) return { kind: 'empty' };
    if (portal.result === undefined) {
      // Execute without a row limit streams; with one (a cursor-like fetch) the
      // result is held by the portal between Executes.
      const emitter: RowEmitter | undefined =
        maxRows === 0
          ? {
              begin: () => {},
              rows: async (rows, cols) => {
                const ctx = this.textContext(); // once per batch (see simpleQuery's emitter)
                for (const row of rows) {
                  const p = sink.row(encodeRow(row, cols, portal.formats, ctx));
                  if (p !== undefined) await p;
                }
              },
            }
          : undefined;
      this.inExecute = true;
      try {
        portal.result = await this.runOne(ps, portal.stmt, portal.params, sink, emitter);
      } finally {
        this.inExecute = false;
      }
      if (portal.result.streamed === true) return { kind: 'complete', tag: portal.result.tag };
    } else if (portal.pos >= portal.result.rows.length && portal.result.columns === undefined) {
      return { kind: 'complete', tag: portal.result.tag };
    }
    const r = portal.result;
    const cols = r.columns;
    if (cols !== undefined) {
      const end = maxRows > 0 ? Math.min(portal.pos + maxRows, r.rows.length) : r.rows.length;
      for (; portal.pos < end; portal.pos++) {
        const p = sink.row(encodeRow(r.rows[portal.pos] as Row, cols, portal.formats, this.textContext()));
        if (p !== undefined) await p;
      }
      if (portal.pos < r.rows.length) return { kind: 'suspended' };
    }
    return { kind: 'complete', tag: r.tag };
  }

  closeStatement(_s: SessionStatement): void {}
  closePortal(_p: SessionPortal): void {}

  async sync(failed: boolean): Promise<void> {
    if (failed) this.failTxn();
    try {
      if (this.pending !== undefined) await this.finishPending(failed);
    } finally {
      await this.unfenceIfIdle();
    }
  }

  /** Commits the extended protocol's implicit transaction, or rolls it back after an error. */
  private async finishPending(failed: boolean): Promise<StmtResult> {
    const p = this.pending as { readonly sql: SqlTxn; failed: boolean };
    this.pending = undefined;
    if (failed || p.failed) {
      await p.sql.kv.rollback();
      return { tag: 'ROLLBACK', columns: undefined, rows: [] };
    }
    try {
      await p.sql.commit();
    } catch (e) {
      await p.sql.kv.rollback();
      throw toClientError(e);
    } finally {
      if (p.sql.schemaDirty) this.deps.catalog.invalidate();
    }
    return { tag: 'COMMIT', columns: undefined, rows: [] };
  }

  cancel(): void {
    if (this.running !== undefined) {
      this.running.cancelled = true;
      this.running.reason = 'canceling statement due to user request';
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancel();
    const t = this.txn;
    this.txn = undefined;
    if (t !== undefined) await t.sql.kv.rollback();
    const p = this.pending;
    this.pending = undefined;
    if (p !== undefined) await p.sql.kv.rollback();
    await this.unfenceIfIdle();
  }

  /** A schema change: fences the descriptor leases before its first write of the version key (lease-manager.ts). */
  private async fenceSchema(txn: SqlTxn): Promise<void> {
    const leases = this.deps.leases;
    if (leases === undefined || txn.kv.setDeadline === undefined) return;
    this.fence ??= await leases.fence();
    txn.kv.setDeadline(this.fence.deadline);
  }

  /** The KVDB for the transactions a schema change runs on its own: below its fence's deadline. */
  private fencedDb(): KVDB {
    return this.fence === undefined ? this.deps.db : withDeadline(this.deps.db, this.fence.deadline);
  }

  /** Removes the session's fence once no transaction is open. */
  private async unfenceIfIdle(): Promise<void> {
    const f = this.fence;
    if (f === undefined || this.txn !== undefined || this.pending !== undefined) return;
    this.fence = undefined;
    await this.deps.leases?.unfence(f);
  }

  // ---- statements ----------------------------------------------------------------------

  private failTxn(): void {
    if (this.txn !== undefined) this.txn.aborted = true;
    if (this.pending !== undefined) this.pending.failed = true;
  }

  /** Runs one statement with its transaction handling; materialises its result. */
  private async runOne(ps: ParsedStatement, prep: SessionStatement | undefined, params: Datum[], sink: RowSink, emitter?: RowEmitter): Promise<StmtResult> {
    const ast = ps.ast;
    if (this.txn?.aborted === true && !NOT_IN_ABORTED.has(ast.kind)) {
      throw new PgError('sql.in_failed_sql_transaction', '25P02', 'current transaction is aborted, commands ignored until end of transaction block');
    }
    const running = { cancelled: false, reason: '' };
    this.running = running;
    const timeoutMs = this.vars.statementTimeoutMs();
    const timer =
      timeoutMs > 0
        ? this.deps.timers.setTimeout(() => {
            running.cancelled = true;
            running.reason = 'canceling statement due to statement timeout';
          }, timeoutMs)
        : undefined;
    try {
      return await this.dispatch(ast, prep, params, sink, emitter);
    } catch (e) {
      this.failTxn();
      if (e instanceof CairnError && e.code === 'sql.schema_changed') this.deps.catalog.invalidate();
      throw toClientError(e);
    } finally {
      if (timer !== undefined) this.deps.timers.clearTimeout(timer);
      this.running = undefined;
      await this.unfenceIfIdle();
    }
  }

  /** A transaction of this session's statements: the KV layer checks their cancellation at its safe points. */
  private newTxn(opts?: KVTxnOptions): KVTxn {
    const kv = this.deps.db.newTxn(opts);
    kv.setCancelCheck?.(this.checkCancel);
    return kv;
  }

  private checkCancel = (): void => {
    const r = this.running;
    if (r !== undefined && r.cancelled) throw new PgError('sql.query_canceled', '57014', r.reason);
  };

  private async dispatch(ast: Statement, prep: SessionStatement | undefined, params: Datum[], sink: RowSink, emitter: RowEmitter | undefined): Promise<StmtResult> {
    switch (ast.kind) {
      case 'Begin':
        return this.begin(ast.modes, sink);
      case 'Commit':
        return this.commit();
      case 'Rollback':
        return this.rollback();
      case 'SetTransaction': {
        if (this.txn === undefined) sink.notice({ severity: 'WARNING', code: '25P01', message: 'SET TRANSACTION can only be used in transaction blocks' });
        const n = modesNotice(ast.modes, this.vars);
        if (n !== undefined) sink.notice({ severity: 'NOTICE', code: '00000', message: n });
        if (ast.modes.asOfSystemTime !== undefined) {
          const t = this.requireTxn('SET TRANSACTION AS OF SYSTEM TIME');
          t.sql.kv.setFixedTimestamp(asOfTimestamp(ast.modes.asOfSystemTime, this.deps.db.now()));
        }
        if (ast.modes.priority !== undefined) this.txn?.sql.kv.setPriority(ast.modes.priority);
        return { tag: 'SET', columns: undefined, rows: [] };
      }
      case 'Savepoint':
        return this.savepoint(ast.name);
      case 'ReleaseSavepoint':
        return this.release(ast.name);
      case 'RollbackToSavepoint':
        return this.rollbackTo(ast.name);
      case 'SetVar': {
        if (ast.name === 'database') {
          this.database = varValue(ast.values);
          return { tag: 'SET', columns: undefined, rows: [] };
        }
        const report = ast.isDefault ? this.vars.reset(ast.name) : this.vars.set(ast.name, varValue(ast.values));
        if (report !== undefined) sink.parameterStatus(report, this.vars.get(ast.name));
        return { tag: 'SET', columns: undefined, rows: [] };
      }
      case 'ResetVar': {
        if (ast.name.toLowerCase() === 'all') {
          for (const report of this.vars.resetAll()) sink.parameterStatus(report, this.vars.get(report));
          return { tag: 'RESET', columns: undefined, rows: [] };
        }
        const report = this.vars.reset(ast.name);
        if (report !== undefined) sink.parameterStatus(report, this.vars.get(ast.name));
        return { tag: 'RESET', columns: undefined, rows: [] };
      }
      case 'ShowVar': {
        const name = ast.name.toLowerCase();
        if (name === 'all') {
          const col = (n: string): OutColumn => ({ name: n, type: T.text, tableOid: 0, columnAttr: 0 });
          const rows = this.vars.all().map(([n, v]) => [n, n === 'database' ? this.database : n === 'is_superuser' ? (this.user === 'root' ? 'on' : 'off') : v, null]);
          return { tag: 'SHOW', columns: [col('name'), col('setting'), col('description')], rows };
        }
        let v: string;
        if (name === 'transaction_isolation' || name === 'transaction isolation level') v = 'serializable';
        else if (name === 'database') v = this.database;
        else if (name === 'session_user' || name === 'session_authorization') v = this.user;
        else v = this.vars.get(name);
        return { tag: 'SHOW', columns: [{ name: ast.name, type: T.text, tableOid: 0, columnAttr: 0 }], rows: [[v]] };
      }
      default:
        // A plain SELECT's implicit transaction promises not to write (the KV
        // layer may then skip the transaction record and commit for free).
        let opts: KVTxnOptions | undefined = ast.kind === 'Select' && ast.locking.length === 0 ? { readOnly: true } : undefined;
        if (ast.kind === 'Select' && ast.asOfSystemTime !== undefined) {
          if (this.txn !== undefined || this.pending !== undefined) throw unimplemented('AS OF SYSTEM TIME inside a transaction (give it on BEGIN)');
          opts = { readOnly: true, asOf: asOfTimestamp(ast.asOfSystemTime, this.deps.db.now()) };
        }
        return this.inTxn(
          sink,
          (txn, implicit) => this.seqs.run(() => this.execInTxn(ast, prep, params, txn, implicit, sink, emitter), () => sink.canRewind(), () => sink.rewind()),
          opts,
          WRITES.has(ast.kind),
          (ast.kind === 'Select' && ast.asOfSystemTime === undefined) || ast.kind === 'Insert' || ast.kind === 'Update' || ast.kind === 'Delete',
        );
    }
  }

  /** Runs `fn` in the explicit transaction, or in an implicit one with automatic retries. */
  private async inTxn(sink: RowSink, fn: (txn: SqlTxn, implicit: boolean) => Promise<{ result: StmtResult; committed: boolean }>, opts?: KVTxnOptions, writes = false, leasable = false): Promise<StmtResult> {
    const ex = this.txn;
    if (ex !== undefined) {
      if (ex.committed) throw new PgError('sql.invalid_transaction_state', '25000', 'current transaction is committed, commands ignored until end of transaction block');
      if (ex.readOnly && writes) throw new PgError('sql.read_only_sql_transaction', '25006', 'cannot execute this statement in a read-only transaction');
      return (await fn(ex.sql, false)).result;
    }
    const p = this.pending;
    if (p !== undefined) return (await fn(p.sql, false)).result;
    // Extended protocol: unless Sync is known to follow, the transaction stays open for the next Executes.
    const defer = this.inExecute && opts?.asOf === undefined && sink.syncFollows?.() !== true;
    const txnOpts = defer ? undefined : opts;
    let kv: KVTxn | undefined;
    let leaseSpent = false;
    for (let attempt = 0; ; attempt++) {
      if (kv === undefined) kv = this.newTxn(txnOpts);
      else {
        try {
          await kv.restart();
        } catch {
          // A transaction that cannot be restarted is replaced by a fresh one.
          await kv.rollback();
          kv = this.newTxn(txnOpts);
        }
      }
      const txn = new SqlTxn(kv);
      // A statement committed with itself runs on the node's descriptor lease when it can (no catalog read); a retry
      // after the lease ran out reads the schema version instead, so a long statement still finishes.
      const lease: LeaseUse | undefined = leasable && !defer && !leaseSpent && kv.setDeadline !== undefined ? this.deps.leases?.acquire() : undefined;
      if (lease !== undefined) txn.useLease(lease.deadline, lease.snapshot);
      else if (attempt > 0) kv.setDeadline?.(undefined);
      try {
        if (defer) {
          const { result } = await fn(txn, false);
          this.pending = { sql: txn, failed: false };
          return result;
        }
        const { result, committed } = await fn(txn, true);
        if (!committed) await txn.commit();
        if (txn.schemaDirty) this.deps.catalog.invalidate();
        return result;
      } catch (e) {
        if (e instanceof CairnError && e.code === 'sql.schema_changed') this.deps.catalog.invalidate();
        if (lease !== undefined && e instanceof CairnError && (e.code === 'sql.lease_expired' || e.message.includes('RETRY_COMMIT_DEADLINE'))) leaseSpent = true;
        if (isRetryableError(e) && sink.canRewind() && attempt < MAX_AUTO_RETRIES && !this.closed) {
          this.checkCancel();
          sink.rewind();
          continue;
        }
        await kv.rollback();
        throw e;
      } finally {
        if (lease !== undefined) this.deps.leases?.release(kv.provisionalCommitTimestamp());
      }
    }
  }

  private async snapshotFor(txn: SqlTxn): Promise<CatalogSnapshot> {
    if (txn.leased !== undefined && !txn.schemaDirty) return txn.leased;
    if (txn.schemaDirty) {
      const s = await loadSnapshot(txn.kv);
      txn.markSchemaChecked();
      return s;
    }
    const c = this.deps.catalog.cached();
    if (c !== undefined) {
      txn.expectSchemaVersion(c.version);
      return c;
    }
    const s = await loadSnapshot(txn.kv);
    this.deps.catalog.offer(s);
    txn.markSchemaChecked();
    return s;
  }

  /** A snapshot read through the transaction itself (SHOW statements, which make no other read). */
  private async verifiedSnapshot(txn: SqlTxn): Promise<CatalogSnapshot> {
    const s = await loadSnapshot(txn.kv);
    txn.markSchemaChecked();
    if (!txn.schemaDirty) this.deps.catalog.offer(s);
    return s;
  }

  /** The node's cached snapshot, loading it with a short read-only transaction if needed. */
  private async nodeSnapshot(): Promise<CatalogSnapshot> {
    const c = this.deps.catalog.cached();
    if (c !== undefined) return c;
    const kv = this.deps.db.newTxn({ readOnly: true });
    try {
      const s = await loadSnapshot(kv);
      await kv.commit();
      this.deps.catalog.offer(s);
      return s;
    } catch (e) {
      await kv.rollback();
      throw e;
    }
  }

  private plan(ast0: Statement, snap: CatalogSnapshot, types: (SqlType | undefined)[]): QueryPlan {
    const ast = expandViews(ast0, snap, this.database);
    const ctx: PlanContext = { snapshot: snap, database: this.database, paramTypes: types };
    switch (ast.kind) {
      case 'Select':
        return planSelect(ctx, ast);
      case 'Insert':
        return planInsert(ctx, ast);
      case 'Update':
        return planUpdate(ctx, ast);
      case 'Delete':
        return planDelete(ctx, ast);
      default:
        throw unimplemented(statementTag(ast));
    }
  }

  private env(txn: SqlTxn, params: Datum[]): EvalEnv {
    const ts = txn.kv.readTimestamp();
    const now = this.deps.db.now();
    return {
      params,
      txnTime: ts.wall - PG_EPOCH_MICROS,
      stmtTime: now.wall - PG_EPOCH_MICROS,
      commitTimestamp: () => txn.kv.fixCommitTimestamp?.() ?? txn.kv.provisionalCommitTimestamp(),
      node: this.deps.node,
      sequences: this.seqs,
      user: this.user,
      database: this.database,
      setting: (name) => (name.toLowerCase() === 'database' ? this.database : this.vars.get(name)),
    };
  }

  /**
   * Runs one statement inside `txn`. Not async itself: it hands a query or DML
   * statement (the per-statement hot path) to execPlanned and everything else
   * to execOther, so a point read does not allocate the frame of the large
   * async function that handles every other statement kind (V8 sizes an async
   * function's suspended frame by all its locals).
   */
  private execInTxn(
    ast: Statement,
    prep: SessionStatement | undefined,
    params: Datum[],
    txn: SqlTxn,
    implicit: boolean,
    sink: RowSink,
    emitter?: RowEmitter,
  ): Promise<{ result: StmtResult; committed: boolean }> {
    switch (ast.kind) {
      case 'Select':
      case 'Insert':
      case 'Update':
      case 'Delete':
        return this.execPlanned(ast, prep, params, txn, implicit, sink, emitter);
      default:
        return this.execOther(ast, prep, params, txn, implicit, sink, emitter);
    }
  }

  /** A SELECT, INSERT, UPDATE or DELETE: the statement's plan (the prepared one while the schema holds), run. */
  private async execPlanned(
    ast: Statement & { readonly kind: 'Select' | 'Insert' | 'Update' | 'Delete' },
    prep: SessionStatement | undefined,
    params: Datum[],
    txn: SqlTxn,
    implicit: boolean,
    sink: RowSink,
    emitter?: RowEmitter,
  ): Promise<{ result: StmtResult; committed: boolean }> {
    // The descriptor-leased snapshot of an implicit statement without awaiting snapshotFor (one promise less per statement).
    let snap = txn.leased !== undefined && !txn.schemaDirty ? txn.leased : await this.snapshotFor(txn);
    let plan = prep?.plan;
    if (plan === undefined || plan.schemaVersion !== snap.version || txn.schemaDirty) {
      const types = prep !== undefined ? prep.types.slice() : [];
      try {
        plan = this.plan(ast, snap, types);
      } catch (e) {
        // The node's cached snapshot may predate a schema change made on
        // another node: verify before reporting a missing object.
        if (!isSchemaMiss(e) || txn.schemaDirty || txn.isSchemaChecked()) throw e;
        snap = await loadSnapshot(txn.kv);
        txn.markSchemaChecked();
        this.deps.catalog.offer(snap);
        plan = this.plan(ast, snap, prep !== undefined ? prep.types.slice() : []);
      }
      // PostgreSQL's rule: a prepared statement's described result cannot change under its client.
      if (prep?.resultColumns !== undefined && !sameResultShape(prep.resultColumns, plan.result)) {
        throw new SqlError('sql.feature_not_supported', '0A000', 'cached plan must not change result type');
      }
      if (prep !== undefined && !txn.schemaDirty) prep.plan = plan;
    }
    const ctx: ExecCtx = { txn, env: this.env(txn, params), checkCancel: this.checkCancel };
    const root = plan.root;
    // The plan's own result columns (OutColumn's shape; nothing mutates them): no copy per execution.
    const cols: readonly OutColumn[] | undefined = plan.result;
    if (root.kind === 'insert' || root.kind === 'update' || root.kind === 'delete') {
      const run = root.kind === 'insert' ? runInsert : root.kind === 'update' ? runUpdate : runDelete;
      const r = await run(root as never, ctx, implicit);
      const tag = root.kind === 'insert' ? `INSERT 0 ${r.count}` : `${plan.tag} ${r.count}`;
      return { result: { tag, columns: cols, rows: r.rows ?? [] }, committed: implicit };
    }
    const it = open(root, ctx);
    if (emitter !== undefined && cols !== undefined) {
      emitter.begin(cols);
      let n = 0;
      for (;;) {
        const b = await it.next();
        if (b === null) break;
        n += b.length;
        await emitter.rows(b, cols);
      }
      return { result: { tag: `SELECT ${n}`, columns: cols, rows: [], streamed: true }, committed: false };
    }
    const rows: Row[] = [];
    for (;;) {
      const b = await it.next();
      if (b === null) break;
      for (const r of b) rows.push(r);
    }
    return { result: { tag: `SELECT ${rows.length}`, columns: cols, rows }, committed: false };
  }

  /** Every other statement kind (utility statements, schema changes, EXPLAIN, COPY, SHOW …). */
  private async execOther(
    ast: Statement,
    prep: SessionStatement | undefined,
    params: Datum[],
    txn: SqlTxn,
    implicit: boolean,
    sink: RowSink,
    emitter?: RowEmitter,
  ): Promise<{ result: StmtResult; committed: boolean }> {
    if (SCHEMA_CHANGES.has(ast.kind)) await this.fenceSchema(txn);
    const util = (r: UtilityResult): { result: StmtResult; committed: boolean } => {
      for (const n of r.notices ?? []) sink.notice({ severity: 'NOTICE', code: '00000', message: n });
      return { result: { tag: r.tag, columns: r.columns?.map((c) => ({ ...c, tableOid: 0, columnAttr: 0 })), rows: r.rows }, committed: false };
    };
    switch (ast.kind) {
      case 'Explain': {
        const inner = ast.statement;
        if (ast.options.some((o) => o.name === 'analyze')) throw unimplemented('EXPLAIN ANALYZE');
        const snap = await this.snapshotFor(txn);
        const plan = this.plan(inner, snap, prep !== undefined ? prep.types.slice() : []);
        const lines = explainPlan(plan.root);
        return { result: { tag: 'EXPLAIN', columns: [{ name: 'info', type: T.text, tableOid: 0, columnAttr: 0 }], rows: lines.map((l) => [l]) }, committed: false };
      }
      case 'CreateTable':
        return util(await createTable(txn, this.database, ast));
      case 'CreateIndex': {
        // Alone in its transaction: build the index online (write_only, backfill in chunks, public).
        const r = await createIndex(txn, this.database, ast, implicit);
        if (r.pending === undefined) return util({ tag: r.tag, columns: undefined, rows: [], notices: r.notices });
        await txn.commit();
        this.deps.catalog.invalidate();
        await backfillOnline(this.fencedDb(), r.pending.tableId, r.pending.indexId);
        const done = util({ tag: r.tag, columns: undefined, rows: [], notices: r.notices });
        return { result: done.result, committed: true };
      }
      case 'DropIndex': {
        const r = await dropIndex(txn, this.database, ast);
        return util({ tag: r.tag, columns: undefined, rows: [], notices: r.notices });
      }
      case 'Copy':
        return util(await this.copy(txn, ast, sink));
      case 'CreateSequence':
      case 'DropSequence': {
        const r = ast.kind === 'CreateSequence' ? await createSequence(txn, this.database, ast) : await dropSequences(txn, this.database, ast);
        return util({ tag: r.tag, columns: undefined, rows: [], notices: r.notices });
      }
      case 'CreateView':
      case 'DropView': {
        const r =
          ast.kind === 'DropView'
            ? await dropViews(txn, this.database, ast)
            : await createView(txn, this.database, ast, (q, snap) => (this.plan(q, snap, []).result ?? []).map((c) => ({ name: c.name, type: c.type })));
        return util({ tag: r.tag, columns: undefined, rows: [], notices: r.notices });
      }
      case 'AlterTable':
      case 'Rename': {
        const env = this.env(txn, []);
        const r = ast.kind === 'AlterTable' ? await alterTable(txn, this.database, env, ast, implicit) : { ...(await rename(txn, this.database, env, ast)), pending: undefined };
        if (r.pending === undefined) return util({ tag: r.tag, columns: undefined, rows: [], notices: r.notices });
        // Alone in its transaction, ADD PRIMARY KEY rebuilds the table online (sql/schema/primary-key.ts).
        await txn.commit();
        this.deps.catalog.invalidate();
        await finishPrimaryKeyOnline(this.fencedDb(), r.pending.tableId, r.pending.indexId);
        const done = util({ tag: r.tag, columns: undefined, rows: [], notices: r.notices });
        return { result: done.result, committed: true };
      }
      case 'DropTable':
        return util(await dropTables(txn, this.database, ast.tables, ast.ifExists, ast.cascade));
      case 'Truncate': {
        const snap = await this.verifiedSnapshot(txn);
        const b = new KVBatch();
        const named = ast.tables.map((n) => resolveTable({ snapshot: snap, database: this.database, paramTypes: [] }, n));
        const t = truncateTargets(named, ast.cascade); // referencing tables (sql/schema/foreign-keys.ts)
        for (const e of t.tables) {
          const span = tableSpan(e.desc.id);
          b.delRange(span.key, span.endKey);
        }
        await txn.run(b);
        return util({ tag: 'TRUNCATE', columns: undefined, rows: [], notices: t.notices });
      }
      case 'CreateDatabase':
        return util(await createDatabase(txn, ast.name, ast.ifNotExists));
      case 'DropDatabase':
        return util(await dropDatabase(txn, this.database, ast.name, ast.ifExists));
      case 'ShowDatabases':
        return util(showDatabases(await this.verifiedSnapshot(txn)));
      case 'ShowTables':
        return util(showTables(await this.verifiedSnapshot(txn), ast.database ?? this.database));
      case 'ShowColumns':
        return util(showColumns(resolveTable({ snapshot: await this.verifiedSnapshot(txn), database: this.database, paramTypes: [] }, ast.table)));
      case 'ShowCreateTable':
        return util(showCreateTable(resolveTable({ snapshot: await this.verifiedSnapshot(txn), database: this.database, paramTypes: [] }, ast.table)));
      case 'CreateRole':
        this.requireRoot('CREATE ROLE');
        await createUser(txn.kv, ast.name, ast.options.password, ast.ifNotExists);
        return util({ tag: 'CREATE ROLE', columns: undefined, rows: [] });
      case 'AlterRole':
        this.requireRoot('ALTER ROLE');
        await alterUser(txn.kv, ast.name, ast.options.password);
        return util({ tag: 'ALTER ROLE', columns: undefined, rows: [] });
      case 'DropRole':
        this.requireRoot('DROP ROLE');
        for (const n of ast.names) await dropUser(txn.kv, n, ast.ifExists);
        return util({ tag: 'DROP ROLE', columns: undefined, rows: [] });
      case 'ShowRanges':
        return util(await this.showRanges(txn, ast.target));
      case 'SplitAt':
        return util(await this.splitAt(txn, ast, params, prep));
      case 'Scatter':
        return util(await this.scatter(txn, ast.target));
      case 'ShowClusterSetting':
        // Its tag is PostgreSQL's plain SHOW: name the statement.
        throw unimplemented(ast.name === 'all' ? 'SHOW ALL CLUSTER SETTINGS' : 'SHOW CLUSTER SETTING');
      default:
        throw unimplemented(statementTag(ast));
    }
  }

  /** COPY FROM STDIN / TO STDOUT (sql/exec/copy.ts). */
  private async copy(txn: SqlTxn, ast: Extract<Statement, { kind: 'Copy' }>, sink: RowSink): Promise<UtilityResult> {
    const o = copyOptions(ast.options);
    const ctx: ExecCtx = { txn, env: this.env(txn, []), checkCancel: this.checkCancel };
    if (ast.direction === 'from') {
      if (ast.table === undefined) throw new SqlError('sql.syntax_error', '42601', 'COPY FROM needs a table');
      const t = resolveTable({ snapshot: await this.snapshotFor(txn), database: this.database, paramTypes: [] }, ast.table);
      const n = ast.columns.length > 0 ? ast.columns.length : t.desc.columns.filter((c) => !c.hidden).length;
      try {
        const count = await copyFrom(t, ast.columns, o, sink.copyIn(0, new Array<FormatCode>(n).fill(0)), ctx);
        return { tag: `COPY ${count}`, columns: undefined, rows: [] };
      } catch (e) {
        // The input is consumed: a retryable error cannot be retried transparently.
        if (isRetryableError(e)) throw new SqlError('sql.serialization_failure', '40001', (e as Error).message);
        throw e;
      }
    }
    const query: Statement =
      ast.query ??
      ({
        kind: 'Select',
        with: undefined,
        body: {
          kind: 'SelectClause',
          distinct: false,
          targets: (ast.columns.length > 0 ? ast.columns : ['*']).map((c) => ({ expr: { kind: 'ColumnRef', names: c === '*' ? [] : [c], star: c === '*' }, alias: undefined })),
          from: [{ kind: 'TableRef', table: ast.table as TableName, alias: undefined }],
          where: undefined,
          groupBy: [],
          having: undefined,
          windows: [],
        },
        orderBy: [],
        limit: undefined,
        offset: undefined,
        locking: [],
        asOfSystemTime: undefined,
      } as unknown as Statement);
    if (query.kind !== 'Select') throw unimplemented(`COPY (${statementTag(query)}) TO`);
    const plan = this.plan(query, await this.snapshotFor(txn), []);
    const cols = toOutColumns(plan.result) ?? [];
    sink.copyOut(0, new Array<FormatCode>(cols.length).fill(0));
    if (o.header) await sink.copyData(Buffer.from(copyHeader(cols.map((c) => c.name), o)));
    const it = open(plan.root, ctx);
    let count = 0;
    for (;;) {
      const b = await it.next();
      if (b === null) break;
      let text = '';
      const tctx = this.textContext();
      for (const r of b) text += copyLine(encodeRow(r, cols, [0], tctx), o);
      count += b.length;
      if (text !== '') await sink.copyData(Buffer.from(text, 'utf8'));
    }
    sink.copyDone();
    return { tag: `COPY ${count}`, columns: undefined, rows: [] };
  }

  private requireRoot(what: string): void {
    if (this.user !== 'root') throw new SqlError('sql.insufficient_privilege', '42501', `permission denied to ${what.toLowerCase()}`);
  }

  /**
   * The key span, key types and key-prefix encoder of a range statement's
   * target: a table (its whole span, the primary key) or one index
   * (`t@i`; the primary index by its name too).
   */
  private rangeTarget(snap: CatalogSnapshot, target: RangeTarget): { span: { key: Buffer; endKey: Buffer }; keyTypes: readonly SqlType[]; encode: (vals: readonly Datum[]) => Buffer } {
    const t = resolveTable({ snapshot: snap, database: this.database, paramTypes: [] }, target.table);
    const pkTypes = t.codec.pkOrdinals.map((o) => t.codec.types[o] as SqlType);
    if (target.kind === 'table') return { span: tableSpan(t.desc.id), keyTypes: pkTypes, encode: (v) => t.codec.encodeKeyPrefix(v) };
    if (target.index === t.desc.primaryIndex.name) return { span: tableIndexSpan(t.desc.id, t.desc.primaryIndex.id), keyTypes: pkTypes, encode: (v) => t.codec.encodeKeyPrefix(v) };
    const i = t.desc.indexes.findIndex((x) => x.name === target.index);
    const ix = t.desc.indexes[i];
    const codec = indexCodecs(t.desc, t.codec)[i];
    if (ix === undefined || codec === undefined) throw new SqlError('sql.undefined_object', '42704', `index "${target.index}" does not exist`);
    return { span: tableIndexSpan(t.desc.id, ix.id), keyTypes: codec.keyOrdinals.map((o) => t.codec.types[o] as SqlType), encode: (v) => codec.encodeKeyPrefix(v) };
  }

  private requireAdmin(what: string): KVAdmin {
    const admin = this.deps.db.admin;
    if (admin === undefined) throw unimplemented(`${what} (no admin interface on this node)`);
    return admin;
  }

  /** SHOW RANGES / SCATTER rows: start and end relative to the target's span ('…' where a range reaches past it). */
  private rangeRows(ranges: readonly KVRangeInfo[], span: { key: Buffer; endKey: Buffer }, tag: string): UtilityResult {
    return {
      columns: RANGE_COLUMNS,
      rows: ranges.map((r) => [
        Buffer.compare(r.startKey, span.key) <= 0 ? '…' : prettyKey(r.startKey),
        Buffer.compare(r.endKey, span.endKey) >= 0 ? '…' : prettyKey(r.endKey),
        BigInt(r.rangeId),
        `{${r.replicas.join(',')}}`,
        r.leaseholder === null ? null : BigInt(r.leaseholder),
      ]),
      tag,
    };
  }

  private async showRanges(txn: SqlTxn, target: RangeTarget): Promise<UtilityResult> {
    const admin = this.requireAdmin('SHOW RANGES');
    const { span } = this.rangeTarget(await this.verifiedSnapshot(txn), target);
    return this.rangeRows(await admin.ranges(span.key, span.endKey), span, 'SHOW RANGES');
  }

  /** ALTER TABLE|INDEX … SCATTER: spreads the leases of the target's ranges over their nodes. */
  private async scatter(txn: SqlTxn, target: RangeTarget): Promise<UtilityResult> {
    const admin = this.requireAdmin('SCATTER');
    if (admin.scatter === undefined) throw unimplemented('SCATTER (this node cannot move leases)');
    const { span } = this.rangeTarget(await this.verifiedSnapshot(txn), target);
    const ranges = await admin.scatter(span.key, span.endKey);
    return this.rangeRows(ranges, span, `SCATTER ${ranges.length}`);
  }

  private async splitAt(txn: SqlTxn, ast: Extract<Statement, { kind: 'SplitAt' }>, params: Datum[], prep: SessionStatement | undefined): Promise<UtilityResult> {
    const admin = this.requireAdmin('SPLIT AT');
    const expiration = ast.expiration === undefined ? undefined : splitExpiration(ast.expiration, this.deps.db.now());
    const snap = await this.verifiedSnapshot(txn);
    const target = this.rangeTarget(snap, ast.target);
    const q = planSelect({ snapshot: snap, database: this.database, paramTypes: prep !== undefined ? prep.types.slice() : [] }, ast.rows);
    const ctx: ExecCtx = { txn, env: this.env(txn, params), checkCancel: this.checkCancel };
    const it = open(q.root, ctx);
    const out: Datum[][] = [];
    const qcols = q.result ?? [];
    if (qcols.length > target.keyTypes.length) throw new SqlError('sql.syntax_error', '42601', `too many columns in SPLIT AT data`);
    for (;;) {
      const b = await it.next();
      if (b === null) break;
      for (const row of b) {
        const vals = row.map((v, i) => {
          const ct = target.keyTypes[i] as SqlType;
          const qt = (qcols[i] as ResultColumn).type;
          return v === null || qt.family === ct.family ? v : datumFromText(datumToText(v, qt), ct);
        });
        const key = target.encode(vals);
        await admin.adminSplit(key, expiration === undefined ? undefined : { expiration });
        out.push([key, prettyKey(key)]);
      }
    }
    return {
      columns: utilityColumns(ast) as OutColumn[],
      rows: out,
      tag: `SELECT ${out.length}`,
    };
  }

  // ---- transaction control -------------------------------------------------------------

  private begin(modes: TransactionModes, sink: RowSink): StmtResult {
    if (this.txn !== undefined) {
      sink.notice({ severity: 'WARNING', code: '25001', message: 'there is already a transaction in progress' });
      return { tag: 'BEGIN', columns: undefined, rows: [] };
    }
    const n = modesNotice(modes, this.vars);
    if (n !== undefined) sink.notice({ severity: 'NOTICE', code: '00000', message: n });
    const p = this.pending;
    if (p !== undefined) {
      // PostgreSQL: BEGIN inside an implicit transaction block makes it explicit, earlier statements included.
      if (modes.asOfSystemTime !== undefined) throw unimplemented('BEGIN … AS OF SYSTEM TIME after other statements before the same Sync');
      this.pending = undefined;
      this.txn = { sql: p.sql, aborted: false, committed: false, savepoints: [], readOnly: modes.readOnly === true };
      if (modes.priority !== undefined) p.sql.kv.setPriority(modes.priority);
      return { tag: 'BEGIN', columns: undefined, rows: [] };
    }
    const asOf = modes.asOfSystemTime !== undefined ? asOfTimestamp(modes.asOfSystemTime, this.deps.db.now()) : undefined;
    const kv = this.newTxn({ readOnly: modes.readOnly === true || asOf !== undefined ? true : undefined, asOf, ...(modes.priority === undefined ? {} : { priority: modes.priority }) });
    this.txn = { sql: new SqlTxn(kv), aborted: false, committed: false, savepoints: [], readOnly: modes.readOnly === true || asOf !== undefined };
    return { tag: 'BEGIN', columns: undefined, rows: [] };
  }

  private async commit(): Promise<StmtResult> {
    const t = this.txn;
    if (t === undefined) return this.pending !== undefined ? this.finishPending(false) : { tag: 'COMMIT', columns: undefined, rows: [] };
    this.txn = undefined;
    if (t.aborted) {
      await t.sql.kv.rollback();
      return { tag: 'ROLLBACK', columns: undefined, rows: [] };
    }
    if (!t.committed) {
      try {
        await t.sql.commit();
      } catch (e) {
        await t.sql.kv.rollback();
        throw e;
      }
    }
    if (t.sql.schemaDirty) this.deps.catalog.invalidate();
    return { tag: 'COMMIT', columns: undefined, rows: [] };
  }

  private async rollback(): Promise<StmtResult> {
    const t = this.txn;
    this.txn = undefined;
    if (t !== undefined) await t.sql.kv.rollback();
    if (this.pending !== undefined) await this.finishPending(true);
    return { tag: 'ROLLBACK', columns: undefined, rows: [] };
  }

  private requireTxn(what: string): ExplicitTxn {
    if (this.txn === undefined) throw new SqlError('sql.no_active_sql_transaction', '25P01', `${what} can only be used in transaction blocks`);
    return this.txn;
  }

  private findSavepoint(t: ExplicitTxn, name: string): number {
    for (let i = t.savepoints.length - 1; i >= 0; i--) if (t.savepoints[i]?.name === name) return i;
    throw new SqlError('sql.invalid_savepoint', '3B001', `savepoint "${name}" does not exist`);
  }

  private async savepoint(name: string): Promise<StmtResult> {
    const t = this.requireTxn('SAVEPOINT');
    const restart = name === 'cockroach_restart';
    const sp = restart ? undefined : await t.sql.kv.createSavepoint();
    t.savepoints.push({ name, sp, restart });
    return { tag: 'SAVEPOINT', columns: undefined, rows: [] };
  }

  private async release(name: string): Promise<StmtResult> {
    const t = this.requireTxn('RELEASE SAVEPOINT');
    const i = this.findSavepoint(t, name);
    const entry = t.savepoints[i] as SavepointEntry;
    if (entry.restart) {
      // Commits the KV transaction; a 40001 leaves the session in the
      // transaction so that ROLLBACK TO SAVEPOINT cockroach_restart can retry.
      await t.sql.commit();
      t.committed = true;
      t.savepoints.length = i;
      return { tag: 'RELEASE', columns: undefined, rows: [] };
    }
    await t.sql.kv.releaseSavepoint(entry.sp);
    t.savepoints.length = i;
    return { tag: 'RELEASE', columns: undefined, rows: [] };
  }

  private async rollbackTo(name: string): Promise<StmtResult> {
    const t = this.requireTxn('ROLLBACK TO SAVEPOINT');
    const i = this.findSavepoint(t, name);
    const entry = t.savepoints[i] as SavepointEntry;
    if (entry.restart) {
      await t.sql.kv.restart();
      t.sql = new SqlTxn(t.sql.kv);
      t.committed = false;
    } else {
      await t.sql.kv.rollbackToSavepoint(entry.sp);
    }
    t.savepoints.length = i + 1;
    t.aborted = false;
    return { tag: 'ROLLBACK', columns: undefined, rows: [] };
  }
}

/**
 * The timestamp of `AS OF SYSTEM TIME e`: a negative interval ('-10s') back
 * from now, a timestamp ('2024-01-01 10:00:00+00'), or CockroachDB's decimal
 * nanoseconds since the epoch ('1700000000000000000.0000000001', logical part
 * after the point). It must not be in the future.
 */
export function asOfTimestamp(e: Expr, now: Timestamp): Timestamp {
  const text = e.kind === 'Const' && (e.type === 'string' || e.type === 'int' || e.type === 'numeric') ? e.text : undefined;
  if (text === undefined) throw unimplemented('AS OF SYSTEM TIME with a non-constant expression');
  let ts: Timestamp;
  const dec = /^(\d+)(?:\.(\d{1,10}))?$/.exec(text);
  if (dec !== null) {
    ts = { wall: Math.floor(Number(BigInt(dec[1] as string) / 1000n)), logical: dec[2] !== undefined ? Number(dec[2]) : 0 };
  } else if (/^\s*-/.test(text)) {
    const iv = parseInterval(text);
    ts = { wall: now.wall + iv.spanNumber(), logical: 0 };
  } else {
    ts = { wall: parseTimestampTz(text) + PG_EPOCH_MICROS, logical: 0 };
  }
  if (ts.wall > now.wall || (ts.wall === now.wall && ts.logical > now.logical)) {
    throw new SqlError('sql.invalid_parameter_value', '22023', 'AS OF SYSTEM TIME: cannot specify timestamp in the future');
  }
  return ts;
}

/**
 * `SPLIT AT … WITH EXPIRATION e`: a timestamp (with or without time zone) or
 * an interval from now, as CockroachDB takes it; it must lie in the future.
 */
export function splitExpiration(e: Expr, now: Timestamp): Timestamp {
  const text = e.kind === 'Const' && e.type === 'string' ? e.text : undefined;
  if (text === undefined) throw unimplemented('SPLIT AT … WITH EXPIRATION with a non-constant expression');
  let wall: number;
  try {
    wall = parseTimestampTz(text) + PG_EPOCH_MICROS;
  } catch {
    try {
      wall = now.wall + parseInterval(text).spanNumber();
    } catch {
      throw new SqlError('sql.invalid_parameter_value', '22023', `SPLIT AT: expiration "${text}" is neither a timestamp nor an interval`);
    }
  }
  if (!(wall > now.wall)) throw new SqlError('sql.invalid_parameter_value', '22023', 'SPLIT AT: the expiration must be in the future');
  // HLC walls are µs in a double: beyond 2^53 (year 2255) a split is sticky forever.
  return wall >= MAX_TIMESTAMP.wall ? MAX_TIMESTAMP : { wall: Math.round(wall), logical: 0 };
}

/** The columns of SHOW RANGES and SCATTER. */
const RANGE_COLUMNS: readonly OutColumn[] = (['start_key', 'end_key', 'range_id', 'replicas', 'lease_holder'] as const).map((name) => ({
  name,
  type: name === 'range_id' || name === 'lease_holder' ? T.int8 : T.text,
  tableOid: 0,
  columnAttr: 0,
}));

/** Result columns of statements that are not planned (for Describe). */
function utilityColumns(ast: Statement): OutColumn[] | undefined {
  const c = (name: string, type: SqlType = T.text): OutColumn => ({ name, type, tableOid: 0, columnAttr: 0 });
  switch (ast.kind) {
    case 'ShowVar':
      return ast.name.toLowerCase() === 'all' ? [c('name'), c('setting'), c('description')] : [c(ast.name)];
    case 'ShowDatabases':
      return [c('database_name'), c('owner')];
    case 'ShowTables':
      return [c('schema_name'), c('table_name'), c('type'), c('owner')];
    case 'ShowColumns':
      return [c('column_name'), c('data_type'), c('is_nullable', T.bool), c('column_default'), c('indices'), c('is_hidden', T.bool)];
    case 'ShowCreateTable':
      return [c('table_name'), c('create_statement')];
    case 'ShowRanges':
    case 'Scatter':
      return RANGE_COLUMNS.slice();
    case 'SplitAt':
      return [c('key', T.bytea), c('pretty')];
    case 'Explain':
      return [c('info')];
    default:
      return undefined;
  }
}
