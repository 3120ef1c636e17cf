/**
 * The per-connection protocol state machine (PostgreSQL docs §55.2 "Message
 * Flow"): bytes in through `feed()`, bytes out through the ConnTransport,
 * SQL through the SessionBackend. No socket, clock or random source of its
 * own — the owner (server.ts, or a test) injects them.
 *
 *   startup ──SSLRequest──► 'N' (or 'S' + TLS)  ──GSSENCRequest──► 'N'
 *      │   ──CancelRequest──► registry.cancel(pid, secret), close
 *      ▼ StartupMessage 3.x
 *   authMethod ─trust──────────────────────────────────────┐
 *      │ password: AuthenticationSASL ─► SASLInitialResponse│
 *      │   ─► SASLContinue ─► SASLResponse ─► SASLFinal ────┤ (wrong: 28P01, close)
 *      │ (TLS + preferCleartext: CleartextPassword ─► 'p') ─┤
 *      ▼                                                    ▼
 *   AuthenticationOk, ParameterStatus*, BackendKeyData, ReadyForQuery('I')
 *      ▼
 *   ready: Query | Parse | Bind | Describe | Execute | Close | Sync | Flush | Terminate
 *
 * Extended-protocol rules implemented here:
 *   - an error in Parse/Bind/Describe/Execute/Close sends one ErrorResponse
 *     and discards every message up to the next Sync; Sync then answers
 *     ReadyForQuery (§55.2.3);
 *   - Sync ends the implicit transaction (SessionBackend.sync, told whether
 *     an error was sent since the previous Sync) and answers ReadyForQuery
 *     with the session's transaction status; output is flushed at
 *     ReadyForQuery, at Flush, and whenever `flushBytes` accumulate;
 *   - a Bind whose parameter or format-code counts do not match the
 *     statement is an ordinary (non-fatal) 08P01 error, as in PostgreSQL;
 *   - unnamed statements/portals are replaced by the next Parse/Bind (and
 *     dropped by a simple Query); named ones must be closed before reuse
 *     (42P05 / 42P03); Close of a missing name is not an error;
 *   - Execute with a row limit ends with PortalSuspended; the next Execute
 *     resumes; Describe of a statement sends ParameterDescription then
 *     RowDescription or NoData;
 *   - all portals are closed when ReadyForQuery reports status 'I';
 *   - a malformed message gets a FATAL 08P01 ErrorResponse and the
 *     connection closes; CopyData/CopyDone/CopyFail outside COPY are ignored;
 *   - COPY FROM STDIN: the session iterates sink.copyIn(), which answers
 *     CopyInResponse and pulls CopyData from the decoder until CopyDone
 *     (CopyFail → 57014); a COPY that fails before CopyDone stops pulling
 *     and its error is sent at once, as PostgreSQL does — what the client
 *     still streams for it is ignored (above); COPY TO STDOUT:
 *     copyOut/copyData/copyDone.
 *
 * Invariants: messages are handled one at a time, in order; calls into the
 * session never overlap (only `cancel()` may come concurrently); the session
 * is closed exactly once, after its last call settled; every path that ends
 * the connection goes through close().
 *
 * Backpressure: rows accumulate in one BackendWriter buffer; at `flushBytes`
 * it is handed to the transport, and while the transport holds more than
 * `highWaterMark` bytes the sink's `row()` returns a promise the executor
 * awaits. So at most about highWaterMark + flushBytes + one row are buffered,
 * however slow the client. On input, `feed()` returns false while a statement
 * runs and unread input exceeds `inputHighWaterMark`; the owner pauses the
 * socket until `resumeInput()` is called.
 */
import { AssertionError, assert, isCairnError, CairnError, type Logger } from '../../src/util/index.js';
import { BackendWriter, sslResponse, type ColumnDescriptor, type ErrorFields, type TxnStatus } from './backend.js';
import type { CancelRegistry } from './cancel-registry.js';
import { PgError, ProtocolViolationError } from './errors.js';
import {
  FrontendDecoder,
  parsePasswordMessage,
  parseSASLInitialResponse,
  type FormatCode,
  type FrontendMessage,
  type NormalPhaseMessage,
} from './frontend.js';
import { SCRAM_SHA_256, ScramServerExchange, verifyScramPassword, type ScramCredential } from './scram.js';
import type {
  ExecuteResult,
  NoticeFields,
  Portal,
  PreparedStatement,
  SessionBackend,
  SessionFactory,
  SimpleQuerySink,
  StartupInfo,
} from './session-backend.js';

/** What the connection needs from its owner's socket. */
export interface ConnTransport {
  /** Queues bytes for the client; the transport owns `data` afterwards. */
  write(data: Buffer): void;
  /** Bytes written and not yet handed to the kernel. */
  bufferedBytes(): number;
  /** Resolves when bufferedBytes() has dropped (socket 'drain') or the transport closed. */
  waitForDrain(): Promise<void>;
  /** Switches to TLS after 'S' was written; later input arrives decrypted. Only called when `tls` is configured. */
  startTls?(): void;
  /** Called after feed() returned false, once the connection wants input again. */
  resumeInput?(): void;
  /** Flushes what was written and closes. Called exactly once. */
  close(): void;
}

export interface ConnOptions {
  readonly factory: SessionFactory;
  readonly cancelRegistry: CancelRegistry;
  /** Random bytes (SCRAM nonces, cancel secret keys); tests pass a seeded source. */
  readonly random: (n: number) => Buffer;
  /** Whether an SSLRequest is accepted ('S') — i.e. a TLS context is configured. */
  readonly tlsAvailable?: boolean;
  /** Ask for a cleartext password instead of SCRAM on TLS connections. */
  readonly preferCleartextOverTls?: boolean;
  readonly remoteAddress?: string;
  readonly maxMessageSize?: number;
  /** Output is handed to the transport when this many bytes accumulate (default 64 KiB). */
  readonly flushBytes?: number;
  /** row() returns a promise while the transport holds more than this (default 256 KiB). */
  readonly highWaterMark?: number;
  /** feed() returns false above this much unread input while busy (default 1 MiB). */
  readonly inputHighWaterMark?: number;
  /** Overrides of the ParameterStatus defaults (e.g. server_version). */
  readonly parameterStatus?: ReadonlyMap<string, string>;
  /** Called with an exception that is not a CairnError (a bug) after the connection closed with XX000. */
  readonly onInternalError?: (err: unknown) => void;
  readonly logger?: Logger;
}

/** ParameterStatus values sent after authentication (session values override them). */
export const DEFAULT_PARAMETER_STATUS: ReadonlyMap<string, string> = new Map([
  ['server_version', '15.0 Cairn'],
  ['server_encoding', 'UTF8'],
  ['client_encoding', 'UTF8'],
  ['DateStyle', 'ISO, MDY'],
  ['IntervalStyle', 'postgres'],
  ['integer_datetimes', 'on'],
  ['standard_conforming_strings', 'on'],
  ['TimeZone', 'UTC'],
  ['is_superuser', 'off'],
]);

/** Counters a test or the status page can read. */
export interface ConnStats {
  /** Most bytes ever held at once in the writer plus the transport. */
  maxBufferedBytes: number;
  messagesIn: number;
  rowsOut: number;
}

type State = 'startup' | 'auth-password' | 'auth-sasl-initial' | 'auth-sasl-final' | 'ready' | 'closed';

const DEFAULT_FLUSH_BYTES = 64 * 1024;
const DEFAULT_HIGH_WATER_MARK = 256 * 1024;
const DEFAULT_INPUT_HIGH_WATER_MARK = 1 << 20;

interface PortalEntry {
  readonly portal: Portal;
}

function connectionClosed(): CairnError {
  return new CairnError('pgwire.connection_closed', 'pgwire: connection closed', { sqlState: '08006' });
}

export class PgConn {
  readonly stats: ConnStats = { maxBufferedBytes: 0, messagesIn: 0, rowsOut: 0 };
  private readonly decoder: FrontendDecoder;
  private readonly out = new BackendWriter();
  private state: State = 'startup';
  private tls = false;
  private info: StartupInfo | undefined;
  private credential: ScramCredential | undefined;
  private scram: ScramServerExchange | undefined;
  private session: SessionBackend | undefined;
  private processId = 0;
  private skipToSync = false;
  /** An ErrorResponse was sent since the last Sync (told to the session at Sync). */
  private failedSinceSync = false;
  private readonly statements = new Map<string, PreparedStatement>();
  private readonly portals = new Map<string, PortalEntry>();
  /** A pump is processing messages (possibly awaiting the session). */
  private busy = false;
  private idleWaiters: (() => void)[] = [];
  private inputPaused = false;
  private sessionClosed = false;
  private closeResolve!: () => void;
  /** Resolves once the connection closed and its session was closed. */
  readonly closed: Promise<void>;
  private readonly flushBytes: number;
  private readonly highWaterMark: number;
  private readonly inputHighWaterMark: number;
  private readonly simpleSink: SimpleQuerySink;
  private executeLimit = 0;
  private executeRows = 0;
  /** Writer length where the current statement's output starts. */
  private statementStart = 0;
  /** Nothing after statementStart has been flushed (see RowSink.canRewind). */
  private rewindable = true;

  constructor(
    private readonly transport: ConnTransport,
    private readonly opts: ConnOptions,
  ) {
    this.decoder = new FrontendDecoder({ maxMessageSize: opts.maxMessageSize });
    this.flushBytes = opts.flushBytes ?? DEFAULT_FLUSH_BYTES;
    this.highWaterMark = opts.highWaterMark ?? DEFAULT_HIGH_WATER_MARK;
    this.inputHighWaterMark = opts.inputHighWaterMark ?? DEFAULT_INPUT_HIGH_WATER_MARK;
    this.closed = new Promise((resolve) => (this.closeResolve = resolve));
    const row = (values: readonly (Uint8Array | string | null)[]) => this.sendRow(values);
    const notice = (f: NoticeFields) => this.out.noticeResponse(f);
    const parameterStatus = (name: string, value: string) => this.out.parameterStatus(name, value);
    this.simpleSink = {
      row,
      notice,
      parameterStatus,
      copyIn: (overall, formats) => this.copyIn(overall, formats),
      copyOut: (overall, formats) => this.out.copyOutResponse(overall, formats),
      copyData: (data) => this.sendCopyData(data),
      copyDone: () => this.out.copyDone(),
      canRewind: () => this.rewindable,
      syncFollows: () => this.decoder.nextIsSync(),
      rewind: () => this.rewind(),
      rowDescription: (columns) => this.out.rowDescription(columns),
      commandComplete: (tag) => {
        this.out.commandComplete(tag);
        this.markStatementStart();
      },
      emptyQuery: () => {
        this.out.emptyQueryResponse();
        this.markStatementStart();
      },
    };
  }

  get isClosed(): boolean {
    return this.state === 'closed';
  }

  /** Authentication finished and the session started (ReadyForQuery was sent). */
  get isReady(): boolean {
    return this.state === 'ready';
  }

  /** Bytes from the client. Returns false when the owner should pause input until resumeInput(). */
  feed(chunk: Buffer): boolean {
    if (this.state === 'closed') return true;
    this.decoder.push(chunk);
    this.wakeInput();
    this.kick();
    if (this.busy && this.decoder.bufferedBytes > this.inputHighWaterMark) {
      this.inputPaused = true;
      return false;
    }
    return true;
  }

  /** The client closed its side or the socket failed: close, cancelling any running statement. */
  inputEnded(): void {
    this.close();
  }

  /**
   * Resolves when every complete message fed so far has been processed (or
   * the connection waits for more input in the middle of a COPY).
   */
  async whenIdle(): Promise<void> {
    while (this.busy && this.inputWaiter === undefined) {
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
  }

  private notifyIdle(): void {
    for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Cancels the running statement (CancelRequest routed here by the registry). */
  cancel(): void {
    this.session?.cancel();
  }

  private kick(): void {
    if (this.busy) return;
    this.busy = true;
    this.pump().catch((e: unknown) => this.opts.onInternalError?.(e));
  }

  /**
   * Processes buffered messages one at a time. NB: `busy` is cleared in the
   * same synchronous step as the decoder reporting "no complete message", so
   * input fed at any later moment starts a new pump.
   */
  private async pump(): Promise<void> {
    for (;;) {
      if (this.state === 'closed') break;
      let msg: FrontendMessage | undefined;
      try {
        msg = this.decoder.next();
      } catch (e) {
        this.fail(e);
        break;
      }
      if (msg === undefined) break;
      this.stats.messagesIn++;
      try {
        // Bind, Describe, Close and Flush are handled synchronously (no promise, no turn of the microtask queue).
        const p = this.handle(msg);
        if (p !== undefined) await p;
      } catch (e) {
        this.fail(e);
      }
    }
    this.busy = false;
    this.notifyIdle();
    if (this.state === 'closed') {
      await this.closeSession();
    } else if (this.inputPaused) {
      this.inputPaused = false;
      this.transport.resumeInput?.();
    }
  }

  /** Not async itself (one suspended frame less per message): each state's handler returns its own promise. */
  private handle(msg: FrontendMessage): Promise<void> | undefined {
    switch (this.state) {
      case 'startup':
        return this.handleStartup(msg);
      case 'auth-password':
      case 'auth-sasl-initial':
      case 'auth-sasl-final':
        if (msg.kind !== 'password') throw new ProtocolViolationError(`expected password response, got ${msg.kind}`);
        return this.handleAuth(msg.data);
      case 'ready':
        return this.handleReady(msg as NormalPhaseMessage);
      case 'closed':
        return;
    }
  }

  // ─── startup and authentication ──────────────────────────────────────────

  private async handleStartup(msg: FrontendMessage): Promise<void> {
    switch (msg.kind) {
      case 'sslRequest':
        if (this.tls) throw new ProtocolViolationError('SSLRequest on an encrypted connection');
        if (this.opts.tlsAvailable && this.transport.startTls) {
          // NB: bytes that followed the SSLRequest before our answer would
          // be read as if they had come through TLS (CVE-2021-23214): the
          // client must wait for the 'S'.
          if (this.decoder.bufferedBytes > 0) throw new ProtocolViolationError('received unencrypted data after SSL request');
          this.transport.write(sslResponse(true));
          this.tls = true;
          this.transport.startTls();
        } else {
          this.transport.write(sslResponse(false));
        }
        return;
      case 'gssEncRequest':
        this.transport.write(sslResponse(false));
        return;
      case 'cancelRequest':
        this.opts.cancelRegistry.cancel(msg.processId, msg.secretKey);
        this.close();
        return;
      case 'startup':
        return this.handleStartupMessage(msg.protocolVersion, msg.params);
      default:
        throw new ProtocolViolationError(`unexpected ${msg.kind} message before startup`);
    }
  }

  private async handleStartupMessage(version: number, params: ReadonlyMap<string, string>): Promise<void> {
    const major = version >>> 16;
    const minor = version & 0xffff;
    if (major !== 3) {
      return this.fatal({ severity: 'FATAL', code: '0A000', message: `unsupported frontend protocol ${major}.${minor}: server supports 3.0 to 3.0` });
    }
    this.decoder.startNormalPhase();
    const unrecognized = [...params.keys()].filter((k) => k.startsWith('_pq_.'));
    if (minor > 0 || unrecognized.length > 0) this.out.negotiateProtocolVersion(0, unrecognized);
    const user = params.get('user');
    if (user === undefined || user === '') {
      return this.fatal({ severity: 'FATAL', code: '28000', message: 'no PostgreSQL user name specified in startup packet' });
    }
    const database = params.get('database') || user;
    this.info = { user, database, params, tls: this.tls, remoteAddress: this.opts.remoteAddress };
    const method = await this.opts.factory.authMethod(this.info);
    if (this.state === 'closed') return;
    switch (method.kind) {
      case 'trust':
        return this.authenticated();
      case 'reject':
        return this.fatal({ severity: 'FATAL', code: method.sqlState, message: method.message });
      case 'password':
        this.credential = method.credential;
        if (this.tls && this.opts.preferCleartextOverTls) {
          this.out.authenticationCleartextPassword();
          this.state = 'auth-password';
        } else {
          this.out.authenticationSASL([SCRAM_SHA_256]);
          this.state = 'auth-sasl-initial';
        }
        this.flush();
        return;
    }
  }

  private async handleAuth(data: Buffer): Promise<void> {
    const user = this.info!.user;
    switch (this.state) {
      case 'auth-password': {
        const ok = await verifyScramPassword(parsePasswordMessage(data), this.credential);
        return ok ? this.authenticated() : this.authFailed(user);
      }
      case 'auth-sasl-initial': {
        const { mechanism, response } = parseSASLInitialResponse(data);
        if (mechanism !== SCRAM_SHA_256) throw new ProtocolViolationError('client selected an invalid SASL authentication mechanism');
        if (response === null) throw new ProtocolViolationError('SASLInitialResponse without data');
        this.scram = new ScramServerExchange(this.credential, this.opts.random(18).toString('base64'), user);
        this.out.authenticationSASLContinue(Buffer.from(this.scram.handleClientFirst(response.toString('utf8'))));
        this.state = 'auth-sasl-final';
        this.flush();
        return;
      }
      case 'auth-sasl-final': {
        const result = this.scram!.handleClientFinal(data.toString('utf8'));
        this.scram = undefined;
        if (!result.ok) return this.authFailed(user);
        this.out.authenticationSASLFinal(Buffer.from(result.serverFinal));
        return this.authenticated();
      }
      default:
        throw new AssertionError(`pgwire: handleAuth in state ${this.state}`);
    }
  }

  private authFailed(user: string): void {
    this.fatal({ severity: 'FATAL', code: '28P01', message: `password authentication failed for user "${user}"` });
  }

  private async authenticated(): Promise<void> {
    this.credential = undefined;
    this.out.authenticationOk();
    const info = this.info!;
    let session: SessionBackend;
    try {
      session = await this.opts.factory.startSession(info);
    } catch (e) {
      if (!isCairnError(e)) throw e;
      return this.fatal({ ...errorFields(e), severity: 'FATAL' });
    }
    this.session = session;
    if (this.state === 'closed') return; // closeSession() runs at the end of the pump
    const secretKey = this.opts.random(4).readInt32BE(0);
    this.processId = this.opts.cancelRegistry.register(secretKey, () => this.cancel());
    const status = new Map(DEFAULT_PARAMETER_STATUS);
    for (const [k, v] of this.opts.parameterStatus ?? []) status.set(k, v);
    status.set('application_name', info.params.get('application_name') ?? '');
    status.set('session_authorization', info.user);
    for (const [k, v] of session.parameterStatus()) status.set(k, v);
    for (const [k, v] of status) this.out.parameterStatus(k, v);
    this.out.backendKeyData(this.processId, secretKey);
    this.state = 'ready';
    this.readyForQuery();
  }

  // ─── normal phase ────────────────────────────────────────────────────────

  /**
   * Not async: a message the session answers synchronously (Bind of a
   * session that binds at once, Describe, Close, Flush) returns undefined, so
   * the three or four messages of each extended-protocol execution cost a
   * suspended frame only for Execute and Sync.
   */
  private handleReady(msg: NormalPhaseMessage): Promise<void> | undefined {
    if (this.skipToSync && msg.kind !== 'sync' && msg.kind !== 'terminate') return;
    const session = this.session!;
    switch (msg.kind) {
      case 'query':
        return this.simpleQuery(session, msg.sql);
      case 'sync':
        return this.sync(session);
      case 'flush':
        this.flush();
        return;
      case 'terminate':
        this.close();
        return;
      case 'copyData':
      case 'copyDone':
      case 'copyFail':
        // PostgreSQL accepts and ignores these outside COPY: the client may
        // still be sending data for a COPY that already failed.
        return;
      case 'password':
        throw new ProtocolViolationError('unexpected password message');
      case 'parse':
      case 'bind':
      case 'describe':
      case 'execute':
      case 'close': {
        let p: Promise<void> | undefined;
        try {
          p = this.extended(session, msg);
        } catch (e) {
          this.extendedFailed(e);
          return;
        }
        return p?.catch((e: unknown) => this.extendedFailed(e));
      }
    }
  }

  /** An extended-protocol message failed: one ErrorResponse, then everything up to Sync is skipped (§55.2.3). */
  private extendedFailed(e: unknown): void {
    if (!isCairnError(e) || e instanceof ProtocolViolationError) throw e;
    this.out.errorResponse(errorFields(e));
    this.skipToSync = true;
    this.failedSinceSync = true;
  }

  private async simpleQuery(session: SessionBackend, sql: string): Promise<void> {
    this.dropUnnamed(session);
    if (/^\s*$/.test(sql)) {
      this.out.emptyQueryResponse();
    } else {
      try {
        this.markStatementStart();
        await session.simpleQuery(sql, this.simpleSink);
      } catch (e) {
        if (!isCairnError(e) || e instanceof ProtocolViolationError) throw e;
        this.out.errorResponse(errorFields(e));
      }
    }
    this.readyForQuery();
  }

  private async sync(session: SessionBackend): Promise<void> {
    this.skipToSync = false;
    const failed = this.failedSinceSync;
    this.failedSinceSync = false;
    try {
      await session.sync(failed);
    } catch (e) {
      if (!isCairnError(e) || e instanceof ProtocolViolationError) throw e;
      this.out.errorResponse(errorFields(e));
    }
    this.readyForQuery();
  }

  private readyForQuery(): void {
    if (this.state === 'closed') return;
    const status: TxnStatus = this.session!.txnStatus();
    if (status === 'I') this.closeAllPortals(this.session!);
    this.out.readyForQuery(status);
    this.flush();
  }

  /**
   * One extended-protocol message; a promise only for what the session
   * answers asynchronously (Parse, Execute, a Bind the session cannot do at
   * once). Throws or rejects with the message's error.
   */
  private extended(
    session: SessionBackend,
    msg: Extract<NormalPhaseMessage, { kind: 'parse' | 'bind' | 'describe' | 'execute' | 'close' }>,
  ): Promise<void> | undefined {
    switch (msg.kind) {
      case 'parse': {
        const old = this.statements.get(msg.name);
        if (old !== undefined) {
          if (msg.name !== '') throw new PgError('pgwire.duplicate_statement', '42P05', `prepared statement "${msg.name}" already exists`);
          this.statements.delete('');
          session.closeStatement(old);
        }
        return session.prepare(msg.name, msg.sql, msg.paramTypes).then((stmt) => {
          this.statements.set(msg.name, stmt);
          this.out.parseComplete();
        });
      }
      case 'bind': {
        const stmt = this.statement(msg.statement);
        const n = stmt.paramTypes.length;
        if (msg.params.length !== n) {
          throw new PgError('pgwire.bind_mismatch', '08P01', `bind message supplies ${msg.params.length} parameters, but prepared statement "${msg.statement}" requires ${n}`);
        }
        const paramFormats = expandFormats(msg.paramFormats, n, 'parameter formats', 'parameters');
        const resultFormats = expandFormats(msg.resultFormats, stmt.columns?.length ?? 0, 'result formats', 'columns');
        const old = this.portals.get(msg.portal);
        if (old !== undefined) {
          if (msg.portal !== '') throw new PgError('pgwire.duplicate_cursor', '42P03', `cursor "${msg.portal}" already exists`);
          this.portals.delete('');
          session.closePortal(old.portal);
        }
        const portal = session.bind(stmt, msg.portal, { values: msg.params, paramFormats, resultFormats });
        if (portal instanceof Promise) return portal.then((p) => this.bound(msg.portal, p));
        this.bound(msg.portal, portal);
        return;
      }
      case 'describe':
        if (msg.target === 'S') {
          const stmt = this.statement(msg.name);
          this.out.parameterDescription(stmt.paramTypes);
          this.describeColumns(stmt.columns);
        } else {
          this.describeColumns(this.portal(msg.name).portal.columns);
        }
        return;
      case 'execute':
        return this.execute(session, msg.portal, msg.maxRows);
      case 'close':
        if (msg.target === 'S') {
          const stmt = this.statements.get(msg.name);
          if (stmt !== undefined) {
            this.statements.delete(msg.name);
            session.closeStatement(stmt);
          }
        } else {
          const p = this.portals.get(msg.name);
          if (p !== undefined) {
            this.portals.delete(msg.name);
            session.closePortal(p.portal);
          }
        }
        this.out.closeComplete();
        return;
    }
  }

  private bound(name: string, portal: Portal): void {
    this.portals.set(name, { portal });
    this.out.bindComplete();
  }

  private async execute(session: SessionBackend, name: string, maxRows: number): Promise<void> {
    const { portal } = this.portal(name);
    this.executeLimit = maxRows;
    this.executeRows = 0;
    let result: ExecuteResult;
    try {
      this.markStatementStart();
      result = await session.execute(portal, maxRows, this.simpleSink);
    } finally {
      this.executeLimit = 0;
    }
    if (result.kind === 'complete') this.out.commandComplete(result.tag);
    else if (result.kind === 'suspended') this.out.portalSuspended();
    else this.out.emptyQueryResponse();
  }

  /** Describe of a statement or portal: their column arrays live as long as they do, so the encoding is reused. */
  private describeColumns(columns: readonly ColumnDescriptor[] | null): void {
    if (columns === null) this.out.noData();
    else this.out.rowDescription(columns, true);
  }

  private statement(name: string): PreparedStatement {
    const s = this.statements.get(name);
    if (s === undefined) {
      throw new PgError('pgwire.unknown_statement', '26000', name === '' ? 'unnamed prepared statement does not exist' : `prepared statement "${name}" does not exist`);
    }
    return s;
  }

  private portal(name: string): PortalEntry {
    const p = this.portals.get(name);
    if (p === undefined) throw new PgError('pgwire.unknown_portal', '34000', `portal "${name}" does not exist`);
    return p;
  }

  private dropUnnamed(session: SessionBackend): void {
    const p = this.portals.get('');
    if (p !== undefined) {
      this.portals.delete('');
      session.closePortal(p.portal);
    }
    const s = this.statements.get('');
    if (s !== undefined) {
      this.statements.delete('');
      session.closeStatement(s);
    }
  }

  private closeAllPortals(session: SessionBackend): void {
    for (const p of this.portals.values()) session.closePortal(p.portal);
    this.portals.clear();
  }

  // ─── COPY ────────────────────────────────────────────────────────────────

  /** Pulls CopyData straight from the decoder: the pump is parked inside the session's call meanwhile. */
  private async *copyIn(overallFormat: FormatCode, columnFormats: readonly FormatCode[]): AsyncGenerator<Uint8Array> {
    this.out.copyInResponse(overallFormat, columnFormats);
    this.flush();
    for (;;) {
      if (this.state === 'closed') throw connectionClosed();
      const msg = this.decoder.next();
      if (msg === undefined) {
        await this.waitInput();
        continue;
      }
      this.stats.messagesIn++;
      switch (msg.kind) {
        case 'copyData':
          yield msg.data;
          break;
        case 'copyDone':
          return;
        case 'copyFail':
          throw new PgError('pgwire.copy_failed', '57014', `COPY from stdin failed: ${msg.message}`);
        case 'flush':
        case 'sync':
          break;
        default:
          throw new ProtocolViolationError(`unexpected message type ${msg.kind} during COPY from stdin`);
      }
    }
  }

  private inputWaiter: (() => void) | undefined;

  private waitInput(): Promise<void> {
    if (this.inputPaused) {
      this.inputPaused = false;
      this.transport.resumeInput?.();
    }
    const p = new Promise<void>((resolve) => (this.inputWaiter = resolve));
    this.notifyIdle();
    return p;
  }

  private wakeInput(): void {
    const w = this.inputWaiter;
    this.inputWaiter = undefined;
    w?.();
  }

  // ─── output and backpressure ────────────────────────────────────────────

  private sendRow(values: readonly (Uint8Array | string | null)[]): Promise<void> | undefined {
    if (this.state === 'closed') return Promise.reject(connectionClosed());
    if (this.executeLimit > 0 && ++this.executeRows > this.executeLimit) {
      throw new AssertionError(`pgwire: session sent more than the ${this.executeLimit} rows Execute asked for`);
    }
    this.out.dataRow(values);
    this.stats.rowsOut++;
    return this.afterOutput();
  }

  private sendCopyData(data: Uint8Array): Promise<void> | undefined {
    if (this.state === 'closed') return Promise.reject(connectionClosed());
    this.out.copyData(data);
    return this.afterOutput();
  }

  /** Flushes at flushBytes; a promise to await while the transport is above the high-water mark. */
  private afterOutput(): Promise<void> | undefined {
    if (this.out.length < this.flushBytes) return undefined;
    this.flush();
    if (this.transport.bufferedBytes() < this.highWaterMark) return undefined;
    return this.transport.waitForDrain().then(() => {
      if (this.state === 'closed') throw connectionClosed();
    });
  }

  private markStatementStart(): void {
    this.statementStart = this.out.length;
    this.rewindable = true;
  }

  private rewind(): void {
    assert(this.rewindable, 'pgwire: rewind after output of the statement reached the socket');
    this.out.truncate(this.statementStart);
    this.executeRows = 0;
  }

  private flush(): void {
    const n = this.out.length;
    if (n > this.statementStart) this.rewindable = false;
    this.statementStart = 0;
    if (n === 0) return;
    const buffered = this.transport.bufferedBytes() + n;
    if (buffered > this.stats.maxBufferedBytes) this.stats.maxBufferedBytes = buffered;
    this.transport.write(this.out.take());
  }

  // ─── errors and closing ─────────────────────────────────────────────────

  /** A handler or the decoder threw: a protocol violation or a bug; either closes. */
  private fail(e: unknown): void {
    if (this.state === 'closed') return;
    if (isCairnError(e)) {
      this.fatal({ ...errorFields(e), severity: 'FATAL' });
      return;
    }
    this.opts.logger?.error({ err: e }, 'pgwire: internal error');
    this.fatal({ severity: 'FATAL', code: 'XX000', message: 'pgwire: internal error' });
    this.opts.onInternalError?.(e);
  }

  private fatal(fields: ErrorFields): void {
    if (this.state === 'closed') return;
    this.out.errorResponse(fields);
    this.close();
  }

  /** Flushes pending output and closes; the session is closed once no call into it is running. */
  close(): void {
    if (this.state === 'closed') return;
    const running = this.busy;
    this.state = 'closed';
    this.flush();
    this.transport.close();
    if (this.processId !== 0) this.opts.cancelRegistry.unregister(this.processId);
    if (running) this.session?.cancel();
    else void this.closeSession();
    this.wakeInput();
  }

  private async closeSession(): Promise<void> {
    if (this.sessionClosed) return;
    this.sessionClosed = true;
    const session = this.session;
    if (session !== undefined) {
      try {
        await session.close();
      } catch (e) {
        this.opts.logger?.warn({ err: e }, 'pgwire: closing the session failed');
      }
    }
    this.closeResolve();
  }
}

/** Shared all-text / all-binary format lists by length (frozen; a Bind of the usual drivers gets one without allocating). */
const UNIFORM_FORMATS: readonly (readonly FormatCode[])[][] = [[], []];

function uniformFormats(code: FormatCode, n: number): readonly FormatCode[] {
  const byLength = UNIFORM_FORMATS[code] as (readonly FormatCode[])[];
  if (n >= 64) return new Array<FormatCode>(n).fill(code);
  return (byLength[n] ??= Object.freeze(new Array<FormatCode>(n).fill(code)));
}

function expandFormats(codes: readonly FormatCode[], n: number, what: string, of: string): readonly FormatCode[] {
  if (codes.length === n) return codes;
  if (codes.length === 0) return uniformFormats(0, n);
  if (codes.length === 1) return uniformFormats(codes[0]!, n);
  throw new PgError('pgwire.bind_mismatch', '08P01', `bind message has ${codes.length} ${what} but ${n} ${of}`);
}

/** ErrorResponse fields of a typed error. */
export function errorFields(e: CairnError): ErrorFields {
  const base = { severity: 'ERROR' as const, code: e.sqlState, message: e.message };
  return e instanceof PgError ? { ...e.fields, ...base } : base;
}
