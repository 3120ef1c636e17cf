/**
 * The contract between the pgwire connection (conn.ts) and the SQL layer.
 *
 *   client bytes ─► PgConn ─► SessionFactory.authMethod / startSession
 *                        └──► SessionBackend.simpleQuery / prepare / bind /
 *                             execute / close* / sync / cancel / close
 *   client bytes ◄─ PgConn ◄─ sinks (rowDescription, row, commandComplete, …)
 *
 * pgwire owns the protocol: framing, authentication, the statement and portal
 * name tables (unnamed replaced, named must be closed first), format-code
 * expansion, parameter-count checks, skip-to-Sync after an error,
 * ReadyForQuery, flushing and backpressure, cancel keys. The session owns SQL:
 * parsing (including splitting a simple Query into statements), type
 * inference, planning, value encoding, transactions (implicit and explicit),
 * retries, and the transaction status reported in ReadyForQuery.
 *
 * Ordering guarantees the session can rely on:
 *   - Calls on one SessionBackend never overlap: the connection awaits each
 *     before making the next — except `cancel()`, which may arrive at any time
 *     from another connection's CancelRequest (or when the client goes away).
 *   - `close()` is called exactly once, after the last other call settled,
 *     whatever the reason the connection ended (Terminate, EOF, protocol
 *     violation, socket error). Nothing is called after it.
 *   - Statement and portal handles passed back are exactly the objects the
 *     session returned, and are never used after closeStatement/closePortal.
 *     At the end of a transaction (ReadyForQuery with status 'I') the
 *     connection closes every portal (PostgreSQL destroys non-holdable
 *     portals at transaction end).
 *
 * Values: column values are already encoded in the format the portal's
 * columns declare (0 text, 1 binary) — the SQL types module encodes them —
 * and are passed as `Uint8Array | null` (null is SQL NULL). Bind parameters
 * arrive the same way, with one format code per parameter. Simple-query
 * results are always text (format 0).
 *
 * Errors: a session method reports an expected failure by throwing a
 * CairnError (its sqlState is sent) or a PgError (also detail, hint,
 * position, …). The connection answers ErrorResponse and, for extended-query
 * messages, discards input until Sync. Any other exception is a bug: the
 * connection sends a FATAL XX000, closes, and reports it to its owner.
 */
import type { ColumnDescriptor, ErrorFields, TxnStatus } from './backend.js';
import type { FormatCode } from './frontend.js';
import type { ScramCredential } from './scram.js';

/** What the client said in its StartupMessage, once the connection checked it. */
export interface StartupInfo {
  readonly user: string;
  /** `database`, defaulting to the user name as in PostgreSQL. */
  readonly database: string;
  /** Every startup parameter, including application_name and options. */
  readonly params: ReadonlyMap<string, string>;
  /** True when the connection runs over TLS. */
  readonly tls: boolean;
  readonly remoteAddress?: string;
}

/**
 * How a user must authenticate. `password` means SCRAM-SHA-256 against the
 * stored credential (or cleartext checked against it, when the connection is
 * TLS and configured to prefer cleartext); an undefined credential (unknown
 * user, or a user without password) always fails with 28P01 after a full
 * exchange, so that user names are not disclosed.
 */
export type AuthMethod =
  | { readonly kind: 'trust' }
  | { readonly kind: 'password'; readonly credential: ScramCredential | undefined }
  | { readonly kind: 'reject'; readonly sqlState: string; readonly message: string };

/** Server-wide: one per node. */
export interface SessionFactory {
  /** Chooses the authentication of a connection (e.g. trust under --insecure). */
  authMethod(info: StartupInfo): Promise<AuthMethod>;
  /** Opens the session of an authenticated connection; throws (e.g. 3D000) to refuse it. */
  startSession(info: StartupInfo): Promise<SessionBackend>;
  /** Stops the node-wide background work behind the sessions (descriptor leases); optional. */
  close?(): void;
}

/** A statement prepared by Parse (or by the session for a simple query). */
export interface PreparedStatement {
  /** One OID per parameter ($1…$n), with inferred types filled in. */
  readonly paramTypes: readonly number[];
  /** The result columns (format 0), or null when it returns no rows (NoData). */
  readonly columns: readonly ColumnDescriptor[] | null;
}

/** A portal created by Bind: a statement with parameters, ready to execute. */
export interface Portal {
  /** Result columns with the formats the Bind asked for, or null (NoData). */
  readonly columns: readonly ColumnDescriptor[] | null;
}

/** The parameters of a Bind, already checked against the statement. */
export interface BindParams {
  /** One value per statement parameter; null is SQL NULL. */
  readonly values: readonly (Uint8Array | null)[];
  /** One format code per value. */
  readonly paramFormats: readonly FormatCode[];
  /** One format code per result column (empty when the statement has none). */
  readonly resultFormats: readonly FormatCode[];
}

/** Fields of a NoticeResponse. */
export type NoticeFields = ErrorFields;

/**
 * Where result rows go. Backpressure: `row()` returns undefined while the
 * client keeps up; when the bytes waiting for the socket exceed the
 * connection's high-water mark it returns a promise, and the session MUST
 * await it before producing the next row. The promise rejects with a
 * CairnError (`pgwire.connection_closed`) if the client goes away.
 */
export interface RowSink {
  /** One DataRow: encoded values, or strings for text-format values (UTF-8 encoded by the connection), null for NULL. */
  row(values: readonly (Uint8Array | string | null)[]): Promise<void> | undefined;
  /**
   * COPY … FROM STDIN: sends CopyInResponse, then yields the payload of each
   * CopyData the client sends until CopyDone. A CopyFail ends it with a
   * PgError 57014; the connection closing ends it with
   * `pgwire.connection_closed`. Flush and Sync are ignored meanwhile, as in
   * PostgreSQL; anything else is a protocol violation. Payloads alias input
   * buffers: copy what must outlive the iteration step.
   */
  copyIn(overallFormat: FormatCode, columnFormats: readonly FormatCode[]): AsyncIterable<Uint8Array>;
  /** COPY … TO STDOUT: sends CopyOutResponse; then copyData() any number of times, then copyDone(). */
  copyOut(overallFormat: FormatCode, columnFormats: readonly FormatCode[]): void;
  /** One CopyData message, with the same backpressure contract as row(). */
  copyData(data: Uint8Array): Promise<void> | undefined;
  copyDone(): void;
  /**
   * True while nothing this statement produced has been handed to the
   * socket: its rows are still in the connection's buffer, so a retryable
   * error (40001) can be retried transparently after rewind() — the "retry
   * implicit transactions while no rows reached the client" rule of
   * DESIGN.md §3. A statement starts at each Execute, at each simple Query,
   * and after each commandComplete/emptyQuery of a simple Query.
   */
  canRewind(): boolean;
  /** Discards everything this statement produced; only while canRewind(). */
  rewind(): void;
  /**
   * Extended protocol, during an Execute: true when the next message has
   * already arrived and is Sync, so the statement is the last of its
   * implicit transaction and may commit with itself (one-phase commit) —
   * CockroachDB's look-ahead. Optional: without it (or when false) an
   * Execute outside BEGIN leaves its implicit transaction open, and
   * `sync()` commits it.
   */
  syncFollows?(): boolean;
  /** Sends a NoticeResponse (e.g. a WARNING) now, between rows or results. */
  notice(fields: NoticeFields): void;
  /** Reports a changed session parameter (SET TimeZone …) as ParameterStatus. */
  parameterStatus(name: string, value: string): void;
}

/** Sink of a simple Query: every statement of the string reports through it in order. */
export interface SimpleQuerySink extends RowSink {
  /** Starts the result of a row-returning statement (text format). */
  rowDescription(columns: readonly ColumnDescriptor[]): void;
  /** Ends one statement, e.g. "SELECT 3", "INSERT 0 1", "BEGIN". */
  commandComplete(tag: string): void;
  /** The statement was empty (e.g. only ";" or a comment). */
  emptyQuery(): void;
}

/** How an Execute ended. */
export type ExecuteResult =
  | { readonly kind: 'complete'; readonly tag: string }
  /** maxRows rows were sent and more remain: PortalSuspended; a later Execute resumes. */
  | { readonly kind: 'suspended' }
  | { readonly kind: 'empty' };

/** One per connection, created by SessionFactory.startSession. */
export interface SessionBackend<S extends PreparedStatement = PreparedStatement, P extends Portal = Portal> {
  /** ParameterStatus values reported after authentication, overriding the connection's defaults (TimeZone, is_superuser, …). */
  parameterStatus(): Iterable<readonly [string, string]>;
  /** The transaction status for ReadyForQuery: idle, in a transaction, or in a failed one. */
  txnStatus(): TxnStatus;
  /**
   * Runs every statement of a simple Query in order (PostgreSQL semantics:
   * statements outside an explicit transaction run in one implicit
   * transaction; an error rolls it back and skips the rest). Throw to report
   * the error that stopped the batch.
   */
  simpleQuery(sql: string, sink: SimpleQuerySink): Promise<void>;
  /** Parse: prepares one statement; `paramTypes` are the client's hints (0 = infer). */
  prepare(name: string, sql: string, paramTypes: readonly number[]): Promise<S>;
  /** Bind: creates a portal from a statement and parameters (synchronously when it can: pgwire then does not suspend). */
  bind(statement: S, portalName: string, params: BindParams): P | Promise<P>;
  /**
   * Execute: sends at most `maxRows` rows (0: all) through the sink, then
   * reports how the portal ended. Executing a completed portal again
   * completes with no rows.
   */
  execute(portal: P, maxRows: number, sink: RowSink): Promise<ExecuteResult>;
  closeStatement(statement: S): void;
  closePortal(portal: P): void;
  /**
   * Sync: ends the implicit transaction of the extended protocol — the
   * Executes since the previous Sync outside BEGIN share it (PostgreSQL's
   * rule) — committing it, or rolling it back when `failed`. `failed`
   * is true when an ErrorResponse was sent since the previous Sync — raised by
   * the session or by pgwire itself (unknown statement, parameter count, …) —
   * so the implicit transaction must roll back and an explicit one becomes
   * failed ('E'), as after any error in PostgreSQL.
   */
  sync(failed: boolean): Promise<void>;
  /** Cancels the running statement, if any; it should then fail with 57014. May be called at any time. */
  cancel(): void;
  /** The connection is gone: roll back and release everything. */
  close(): Promise<void>;
}
