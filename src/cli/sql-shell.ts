/**
 * `cairn sql`: the SQL shell, a pgwire client (the `pg` package) for Cairn
 * and for PostgreSQL.
 *
 *   cairn sql [--url URL] [-e STMT]… [-f FILE] [--format table|csv|tsv]
 *             [--insecure] [-u USER] [-d DATABASE] [--continue-on-error]
 *
 * Connection: --url, else $CAIRN_URL, else a URL built from $PGHOST, $PGPORT,
 * $PGUSER, $PGDATABASE over the default
 * postgresql://root@127.0.0.1:26257/defaultdb?sslmode=disable. --user and
 * --database override the URL's; --insecure forces sslmode=disable. The
 * password is the URL's, else $PGPASSWORD, else — only when the server asks
 * for one (cleartext, MD5, SCRAM) — read without echo from the terminal.
 *
 * Modes:
 *   batch        -e (repeatable; each may hold several statements), -f FILE,
 *                or standard input when it is not a terminal. Statements run
 *                one at a time in order; the first error stops the run with
 *                exit status 1 (`--continue-on-error` runs the rest, and the
 *                status is still 1 if any statement failed).
 *   interactive  standard input is a terminal and neither -e nor -f is given:
 *                node:readline with history (~/.cairn_sql_history, last 1000
 *                lines), multi-line statements (a statement ends at a `;`
 *                outside quotes, comments and dollar quotes; see
 *                sql-shell-splitter.ts), meta-commands (\? lists them).
 *
 * Meta-commands (a line starting with `\` when no statement is unfinished;
 * also in -f/stdin scripts and as a whole -e argument): \q \? \x \timing,
 * and \l \dt \d [TABLE], which run SHOW DATABASES / SHOW TABLES / SHOW
 * COLUMNS on Cairn and CockroachDB (server_version names them) and
 * pg_catalog / information_schema queries on PostgreSQL; a server that lacks
 * them answers with an error, printed like any other.
 *
 * Prompt: `user@host:port/db> `; ` OPEN> ` inside a transaction, ` ERROR> `
 * in an aborted one (from ReadyForQuery's status byte); `-> ` (right-aligned
 * under the prompt) while a statement is unfinished.
 *
 * Output (sql-shell-format.ts): --format defaults to `table` when standard
 * output is a terminal and to `tsv` otherwise (as cockroach sql does), so a
 * pipe gets one machine-readable line per row. csv and tsv rows are written
 * as they arrive (memory stays flat for an export of any size); a table waits
 * for all rows, for its widths. Scripts (-f, stdin) are read line by line as
 * they run. Statements without a result
 * set print their command tag (`INSERT 0 3`, `CREATE TABLE`) in every format.
 * Errors go to standard error:
 *
 *   ERROR: syntax error at or near "SELEC"
 *   SQLSTATE: 42601
 *   LINE 1: SELEC 1
 *           ^
 *   DETAIL: …
 *   HINT: …
 *
 * Ctrl-C cancels the running statement (a CancelRequest on a new
 * connection, PostgreSQL protocol §53.2.7) or clears the input; Ctrl-D exits.
 *
 * A lost connection: on a terminal the shell reconnects (right after the
 * statement that found it lost, or before the next one) and says so — an
 * open transaction is gone; a batch run never reconnects, since its next
 * statements may belong to the lost transaction: it stops with exit 1.
 *
 * Ownership: the shell owns its pg client, its readline interface and the
 * history file; sqlCommand()'s action owns the process's exit status.
 */
import { createReadStream, openSync, readFileSync, writeFileSync, type ReadStream } from 'node:fs';
import { createConnection } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface, type Interface } from 'node:readline';
import { Command, Option } from 'commander';
import pg from 'pg';
import { exitAfterFlush } from './exit.js';
import { StatementSplitter } from './sql-shell-splitter.js';
import {
  displayWidth,
  formatCommandTag,
  formatHeaderLine,
  formatResult,
  formatRowLine,
  OUTPUT_FORMATS,
  type OutputFormat,
  type ResultColumn,
  type ResultSet,
} from './sql-shell-format.js';

export const DEFAULT_SQL_URL = 'postgresql://root@127.0.0.1:26257/defaultdb?sslmode=disable';
export const HISTORY_FILE_NAME = '.cairn_sql_history';
export const HISTORY_SIZE = 1000;

export interface SqlShellFlags {
  readonly url?: string;
  readonly execute?: readonly string[];
  readonly file?: string;
  readonly format?: OutputFormat;
  readonly insecure?: boolean;
  readonly user?: string;
  readonly database?: string;
  readonly continueOnError?: boolean;
}

/** The streams and environment the shell runs against. */
export interface SqlShellIo {
  readonly stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly historyFile?: string;
}

/** Where and as whom to connect. */
export interface ConnectionTarget {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly database: string;
  /** From the URL or $PGPASSWORD; undefined: ask when the server wants one. */
  readonly password?: string;
  readonly ssl: false | { rejectUnauthorized: boolean };
}

/** Resolves flags and environment (psql's fallbacks) into a connection target. */
export function resolveConnection(flags: Pick<SqlShellFlags, 'url' | 'user' | 'database' | 'insecure'>, env: Readonly<Record<string, string | undefined>>): ConnectionTarget {
  let raw = flags.url ?? env['CAIRN_URL'];
  // $PGHOST may be a Unix socket directory, which a URL cannot hold as a host.
  let socketDir: string | undefined;
  if (raw === undefined || raw === '') {
    const u = new URL(DEFAULT_SQL_URL);
    if (env['PGHOST']?.startsWith('/')) socketDir = env['PGHOST'];
    else if (env['PGHOST']) u.hostname = env['PGHOST'];
    if (env['PGPORT']) u.port = env['PGPORT'];
    if (env['PGUSER']) u.username = encodeURIComponent(env['PGUSER']);
    if (env['PGDATABASE']) u.pathname = `/${encodeURIComponent(env['PGDATABASE'])}`;
    raw = u.toString();
  }
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new Error(`sql: invalid --url "${raw}": expected postgresql://user@host:port/database`);
  }
  if (u.protocol !== 'postgresql:' && u.protocol !== 'postgres:') throw new Error(`sql: invalid --url "${raw}": the scheme must be postgresql://`);
  const host = socketDir ?? (u.hostname.replace(/^\[(.*)\]$/, '$1') || (u.searchParams.get('host') ?? '127.0.0.1'));
  const port = u.port === '' ? Number(env['PGPORT'] ?? 26257) : Number(u.port);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`sql: invalid port in "${raw}"`);
  const user = flags.user ?? (u.username === '' ? (env['PGUSER'] ?? 'root') : decodeURIComponent(u.username));
  const path = decodeURIComponent(u.pathname.replace(/^\//, ''));
  const database = flags.database ?? (path === '' ? (env['PGDATABASE'] ?? 'defaultdb') : path);
  const password = u.password !== '' ? decodeURIComponent(u.password) : env['PGPASSWORD'];
  const sslmode = flags.insecure === true ? 'disable' : (u.searchParams.get('sslmode') ?? env['PGSSLMODE'] ?? 'disable');
  const ssl = sslmode === 'disable' || sslmode === 'allow' || sslmode === 'prefer' ? false : { rejectUnauthorized: sslmode === 'verify-ca' || sslmode === 'verify-full' };
  return { host, port, user, database, ...(password === undefined ? {} : { password }), ssl };
}

/** `user@host:port/db`, the prompt's base. */
export function promptBase(t: ConnectionTarget): string {
  const host = t.host.includes(':') ? `[${t.host}]` : t.host;
  return `${t.user}@${host}:${t.port}/${t.database}`;
}

/** The prompt for a transaction status byte of ReadyForQuery ('I', 'T', 'E'). */
export function promptFor(base: string, txnStatus: string): string {
  if (txnStatus === 'T') return `${base} OPEN> `;
  if (txnStatus === 'E') return `${base} ERROR> `;
  return `${base}> `;
}

/** The continuation prompt, right-aligned under the main prompt. */
export function continuationPrompt(prompt: string): string {
  return `${' '.repeat(Math.max(0, displayWidth(prompt) - 3))}-> `;
}

/** A server error's fields, as pg's DatabaseError carries them. */
export interface ServerErrorFields {
  readonly message: string;
  readonly code?: string | undefined;
  readonly detail?: string | undefined;
  readonly hint?: string | undefined;
  readonly position?: string | undefined;
}

/** psql-like error text (with SQLSTATE) for a statement's failure. */
export function formatError(e: ServerErrorFields, statement: string): string {
  const out = [`ERROR: ${e.message}`];
  if (e.code !== undefined && /^[0-9A-Z]{5}$/.test(e.code)) out.push(`SQLSTATE: ${e.code}`);
  const pos = e.position === undefined ? NaN : Number(e.position);
  if (Number.isInteger(pos) && pos >= 1) {
    const chars = [...statement];
    const before = chars.slice(0, pos - 1).join('');
    const lineNo = before.split('\n').length;
    const lineStart = before.lastIndexOf('\n') + 1;
    const lineEnd = statement.indexOf('\n', lineStart);
    const line = statement.slice(lineStart, lineEnd === -1 ? undefined : lineEnd).replace(/\t/g, ' ');
    const label = `LINE ${lineNo}: `;
    out.push(label + line);
    out.push(' '.repeat(label.length + displayWidth(before.slice(lineStart).replace(/\t/g, ' '))) + '^');
  }
  if (e.detail) out.push(`DETAIL: ${e.detail}`);
  if (e.hint) out.push(`HINT: ${e.hint}`);
  return `${out.join('\n')}\n`;
}

const HELP = `General
  \\q                quit (also Ctrl-D)
  \\?                this help
Informational
  \\l                list databases
  \\dt               list tables
  \\d [TABLE]        describe a table (without TABLE: list tables)
Formatting
  \\x                toggle expanded display (one block per row)
  \\timing           toggle printing each statement's duration
Input
  A statement ends at a ';' outside quotes, comments and dollar quotes.
  Ctrl-C cancels the running statement or clears the input.
`;

/** Quotes a string as an SQL literal. */
function literal(s: string): string {
  return `'${s.replace(/'/g, '\'\'')}'`;
}

function columnsOf(fields: readonly pg.FieldDef[]): ResultColumn[] {
  return fields.map((f) => ({ name: f.name, typeOid: f.dataTypeID }));
}

/** Output is written in pieces of about this many characters while rows stream. */
const STREAM_CHUNK_CHARS = 1 << 16;

/** Raw text for every type: the shell shows what the server sent. */
const RAW_TYPES = { getTypeParser: () => (v: string) => v };

interface PgInternals {
  processID: number | null;
  secretKey: number | null;
  connection: NodeJS.EventEmitter;
}

/** One connection and what the shell tracks about it. */
class ShellSession {
  txnStatus = 'I';
  /** A server (Cairn or CockroachDB) that has SHOW TABLES / SHOW DATABASES. */
  showDialect = true;
  private lastTag: string | undefined;
  private running = false;
  private broken: Error | null = null;
  private readonly params = new Map<string, string>();

  private constructor(
    readonly target: ConnectionTarget,
    private readonly client: pg.Client,
    private readonly io: SqlShellIo,
  ) {}

  static async open(target: ConnectionTarget, io: SqlShellIo): Promise<ShellSession> {
    const password = target.password ?? (async () => (io.stdin.isTTY === true ? await promptPassword(io, `Password for ${target.user}: `) : ''));
    const client = new pg.Client({
      host: target.host,
      port: target.port,
      user: target.user,
      database: target.database,
      password,
      ssl: target.ssl,
      application_name: 'cairn sql',
    });
    const s = new ShellSession(target, client, io);
    const conn = (client as unknown as PgInternals).connection;
    conn.on('readyForQuery', (m: { status: string }) => {
      s.txnStatus = m.status;
    });
    conn.on('commandComplete', (m: { text: string }) => {
      s.lastTag = m.text;
    });
    conn.on('parameterStatus', (m: { parameterName: string; parameterValue: string }) => {
      s.params.set(m.parameterName, m.parameterValue);
    });
    client.on('notice', (n) => {
      io.stderr.write(`${n.severity ?? 'NOTICE'}: ${n.message}\n`);
    });
    client.on('error', (e: Error) => {
      s.broken = e;
    });
    client.on('end', () => {
      s.broken ??= new Error('sql: the connection to the server was lost');
    });
    try {
      await client.connect();
    } catch (e) {
      await client.end().catch(() => undefined);
      const msg = e instanceof Error ? e.message : String(e);
      const code = (e as { code?: string }).code;
      throw new ShellConnectError(`cannot connect to ${promptBase(target)}: ${msg}`, code);
    }
    s.showDialect = /cairn|cockroach/i.test(s.params.get('server_version') ?? 'cairn');
    return s;
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** The connection failed or was closed by the server. */
  get isBroken(): boolean {
    return this.broken !== null;
  }

  /**
   * Runs one statement; its results as result sets and/or command tags.
   * With onRow, rows go to it as they arrive and the result sets come back
   * without rows (pg does not accumulate rows a 'row' listener takes).
   */
  async run(text: string, onRow?: (columns: readonly ResultColumn[], row: readonly (string | null)[]) => void): Promise<(ResultSet | { tag: string })[]> {
    if (this.broken !== null) throw this.broken;
    this.lastTag = undefined;
    this.running = true;
    try {
      // @types/pg's QueryConfig lacks rowMode, which pg's Query reads.
      const query = new pg.Query({ text, rowMode: 'array', types: RAW_TYPES } as pg.QueryConfig);
      if (onRow !== undefined) {
        let fieldsOf: unknown = null;
        let columns: readonly ResultColumn[] = [];
        query.on('row', (row, result) => {
          const fields = (result as unknown as pg.QueryArrayResult).fields;
          if (fields !== fieldsOf) {
            fieldsOf = fields;
            columns = columnsOf(fields);
          }
          onRow(columns, row as (string | null)[]);
        });
      }
      const res = await new Promise<pg.QueryArrayResult | pg.QueryArrayResult[]>((resolve, reject) => {
        query.on('end', (r) => resolve(r as unknown as pg.QueryArrayResult | pg.QueryArrayResult[]));
        query.on('error', reject);
        this.client.query(query);
      });
      const all = Array.isArray(res) ? res : [res];
      return all.map((r, i) => {
        if (r.fields.length > 0 || r.command === 'SELECT') return { columns: columnsOf(r.fields), rows: r.rows as (string | null)[][] };
        return { tag: formatCommandTag(i === all.length - 1 ? this.lastTag : undefined, r.command, r.rowCount) };
      });
    } finally {
      this.running = false;
    }
  }

  /** Asks the server to cancel the running statement (a new connection carries the request). */
  cancel(): void {
    const { processID, secretKey } = this.client as unknown as PgInternals;
    if (processID === null || secretKey === null) return;
    const msg = Buffer.alloc(16);
    msg.writeInt32BE(16, 0);
    msg.writeInt32BE(80877102, 4); // CancelRequest code (1234 << 16 | 5678)
    msg.writeInt32BE(processID, 8);
    msg.writeInt32BE(secretKey, 12);
    const sock = this.target.host.startsWith('/')
      ? createConnection(join(this.target.host, `.s.PGSQL.${this.target.port}`))
      : createConnection(this.target.port, this.target.host);
    sock.on('error', () => undefined);
    sock.on('connect', () => sock.end(msg));
  }

  async close(): Promise<void> {
    // pg's end() waits for the socket's 'end', which a lost connection has already had.
    if (this.broken !== null) void this.client.end().catch(() => undefined);
    else await this.client.end().catch(() => undefined);
  }
}

class ShellConnectError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** Reads a line without echo from a terminal; Ctrl-C rejects. */
function promptPassword(io: SqlShellIo, prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = io.stdin;
    io.stderr.write(prompt);
    stdin.setRawMode?.(true);
    stdin.resume();
    let pw = '';
    const done = (): void => {
      stdin.removeListener('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      io.stderr.write('\n');
    };
    const onData = (chunk: Buffer | string): void => {
      for (const ch of chunk.toString()) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          done();
          resolve(pw);
          return;
        }
        if (ch === '\u0003') {
          done();
          reject(new Error('sql: password entry interrupted'));
          return;
        }
        if (ch === '\u007f' || ch === '\b') pw = pw.slice(0, -1);
        else pw += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** The shell: feeds input lines, runs statements and meta-commands, prints. */
class SqlShell {
  private readonly splitter = new StatementSplitter();
  private expanded = false;
  private timing = false;
  private failed = false;
  quit = false;

  constructor(
    private session: ShellSession,
    private readonly io: SqlShellIo,
    private readonly format: OutputFormat,
    private readonly stopOnError: boolean,
    /** Open a new connection when the old one was lost (interactive only, as psql). */
    private readonly reconnect: boolean,
  ) {}

  /** The current connection (a reconnect replaces it). */
  get currentSession(): ShellSession {
    return this.session;
  }

  /**
   * A lost connection is reopened before the next statement when reconnect
   * is set; a batch run never reconnects (its next statements may belong to
   * the transaction that was lost). False when there is no usable connection.
   */
  private async ensureConnected(): Promise<boolean> {
    if (!this.session.isBroken || !this.reconnect) return true;
    const old = this.session;
    await old.close();
    try {
      this.session = await ShellSession.open(old.target, this.io);
      this.io.stderr.write(`# the connection was lost; reconnected to ${promptBase(old.target)} (any open transaction was rolled back)\n`);
      return true;
    } catch (e) {
      this.failed = true;
      this.io.stderr.write(`ERROR: the connection was lost and reconnecting failed: ${(e as Error).message}\n`);
      return false;
    }
  }

  /** Some statement failed. */
  get hadError(): boolean {
    return this.failed;
  }

  /** True when the next line continues an unfinished statement. */
  get continuing(): boolean {
    return !this.splitter.isEmpty();
  }

  get prompt(): string {
    return promptFor(promptBase(this.session.target), this.session.txnStatus);
  }

  get running(): boolean {
    return this.session.isRunning;
  }

  cancelRunning(): void {
    this.session.cancel();
  }

  clearInput(): void {
    this.splitter.reset();
  }

  /** One input line. Returns false when the run must stop (error in batch mode, \q). */
  async feedLine(line: string): Promise<boolean> {
    if (this.splitter.isEmpty() && line.trimStart().startsWith('\\')) {
      this.splitter.reset();
      return this.meta(line.trim());
    }
    return this.runAll(this.splitter.push(`${line}\n`));
  }

  /** A whole text (an -e argument): its statements, and its last unterminated one. */
  async feedText(text: string): Promise<boolean> {
    if (text.trimStart().startsWith('\\')) return this.meta(text.trim());
    return (await this.runAll(this.splitter.push(text))) && this.finish();
  }

  /** End of input: runs an unterminated last statement. */
  async finish(): Promise<boolean> {
    return this.runAll(this.splitter.flush());
  }

  private async runAll(stmts: readonly string[]): Promise<boolean> {
    for (const s of stmts) {
      if (!(await this.execute(s)) && this.stopOnError) return false;
      if (this.quit) return false;
    }
    return true;
  }

  /** Runs one statement and prints its outcome; false on error. */
  async execute(stmt: string): Promise<boolean> {
    if (!(await this.ensureConnected())) return false;
    const start = performance.now();
    const format = this.format;
    // csv/tsv stream: the header before the first row, then rows in chunks.
    let out = '';
    let headerDone = false;
    const onRow =
      format === 'table'
        ? undefined
        : (columns: readonly ResultColumn[], row: readonly (string | null)[]): void => {
            if (!headerDone) {
              out += formatHeaderLine(format, columns);
              headerDone = true;
            }
            out += formatRowLine(format, row);
            if (out.length >= STREAM_CHUNK_CHARS) {
              this.io.stdout.write(out);
              out = '';
            }
          };
    try {
      const results = await this.session.run(stmt, onRow);
      for (const r of results) {
        if ('tag' in r) out += `${r.tag}\n`;
        else if (format !== 'table') out += headerDone ? '' : formatHeaderLine(format, r.columns);
        else out += `${formatResult(r, format, this.expanded)}\n`; // psql leaves an empty line after each table
      }
      if (this.timing) out += `Time: ${(performance.now() - start).toFixed(3)} ms\n`;
      this.io.stdout.write(out);
      return true;
    } catch (e) {
      this.failed = true;
      if (out !== '') this.io.stdout.write(out); // rows streamed before the error
      const fields: ServerErrorFields = e instanceof Error ? (e as Error & ServerErrorFields) : { message: String(e) };
      this.io.stderr.write(formatError(fields, stmt));
      // As psql: a connection lost under a statement is reset at once, so the prompt is honest.
      await this.ensureConnected();
      return false;
    }
  }

  private async showOrQuery(show: string, query: string): Promise<boolean> {
    return this.execute(this.session.showDialect ? show : query);
  }

  /** A backslash command. */
  private async meta(cmd: string): Promise<boolean> {
    const [name = '', ...args] = cmd.split(/\s+/);
    const arg = args.join(' ').replace(/;$/, '');
    switch (name) {
      case '\\q':
        this.quit = true;
        return false;
      case '\\?':
        this.io.stdout.write(HELP);
        return true;
      case '\\l':
        return this.showOrQuery('SHOW DATABASES', 'SELECT datname AS database_name FROM pg_catalog.pg_database WHERE NOT datistemplate ORDER BY 1');
      case '\\d':
      case '\\dt':
        if (name === '\\d' && arg !== '') {
          const bare = arg.replace(/^"(.*)"$/, '$1');
          const [schema, table] = bare.includes('.') ? (bare.split('.', 2) as [string, string]) : [undefined, bare];
          return this.showOrQuery(
            `SHOW COLUMNS FROM ${arg}`,
            'SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns ' +
              `WHERE table_name = ${literal(table)}${schema === undefined ? ' AND table_schema = ANY (current_schemas(false))' : ` AND table_schema = ${literal(schema)}`} ORDER BY ordinal_position`,
          );
        }
        return this.showOrQuery(
          'SHOW TABLES',
          "SELECT table_schema AS schema_name, table_name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2",
        );
      case '\\x':
        this.expanded = arg === 'on' ? true : arg === 'off' ? false : !this.expanded;
        this.io.stdout.write(`Expanded display is ${this.expanded ? 'on' : 'off'}.\n`);
        return true;
      case '\\timing':
        this.timing = arg === 'on' ? true : arg === 'off' ? false : !this.timing;
        this.io.stdout.write(`Timing is ${this.timing ? 'on' : 'off'}.\n`);
        return true;
      default:
        this.failed = true;
        this.io.stderr.write(`ERROR: invalid command ${name}; try \\? for help\n`);
        return !this.stopOnError;
    }
  }
}

function loadHistory(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').reverse().slice(0, HISTORY_SIZE);
  } catch {
    return [];
  }
}

function saveHistory(file: string, newestFirst: readonly string[]): void {
  try {
    writeFileSync(file, `${newestFirst.slice(0, HISTORY_SIZE).reverse().join('\n')}\n`, { mode: 0o600 });
  } catch {
    // history is a convenience: an unwritable home directory is not an error
  }
}

/** The interactive loop on a terminal; resolves with the exit status. */
function runInteractive(shell: SqlShell, io: SqlShellIo): Promise<number> {
  const historyFile = io.historyFile ?? join(homedir(), HISTORY_FILE_NAME);
  let history = loadHistory(historyFile);
  const rl: Interface = createInterface({
    input: io.stdin,
    output: io.stdout,
    terminal: true,
    history,
    historySize: HISTORY_SIZE,
    removeHistoryDuplicates: true,
  });
  rl.on('history', (h: string[]) => {
    history = h;
  });
  const queue: string[] = [];
  let busy = false;
  let closed = false;
  const showPrompt = (): void => {
    const p = shell.prompt;
    rl.setPrompt(shell.continuing ? continuationPrompt(p) : p);
    rl.prompt();
  };
  return new Promise((resolve) => {
    const finish = (): void => {
      saveHistory(historyFile, history);
      resolve(0);
    };
    const drain = async (): Promise<void> => {
      if (busy) return;
      busy = true;
      while (queue.length > 0 && !shell.quit) {
        try {
          await shell.feedLine(queue.shift() as string);
        } catch (e) {
          // execute() reports statement errors itself; anything else is shown and the session goes on
          io.stderr.write(`ERROR: ${e instanceof Error ? e.message : String(e)}\n`);
        }
      }
      busy = false;
      if (shell.quit) rl.close();
      else if (closed) finish();
      else showPrompt();
    };
    rl.on('line', (line) => {
      queue.push(line);
      void drain();
    });
    rl.on('SIGINT', () => {
      if (shell.running) {
        shell.cancelRunning();
        return;
      }
      queue.length = 0;
      shell.clearInput();
      rl.write(null, { ctrl: true, name: 'u' });
      io.stdout.write('^C\n');
      showPrompt();
    });
    rl.on('close', () => {
      closed = true;
      if (!busy) {
        io.stdout.write('\n');
        finish();
      }
    });
    io.stdout.write('# Welcome to the Cairn SQL shell. \\? for help, \\q or Ctrl-D to quit.\n');
    showPrompt();
  });
}

/**
 * Feeds a stream line by line (so meta-commands work in files, and a script
 * of any size is read as it runs); false if it stopped early.
 */
async function feedStream(shell: SqlShell, input: NodeJS.ReadableStream): Promise<boolean> {
  const lines = createInterface({ input, crlfDelay: Infinity, terminal: false });
  try {
    for await (const line of lines) if (!(await shell.feedLine(line))) return false;
  } finally {
    lines.close();
  }
  return shell.finish();
}

/** Runs the shell to completion; returns the process exit status. */
export async function runSqlShell(flags: SqlShellFlags, io: SqlShellIo): Promise<number> {
  const target = resolveConnection(flags, io.env);
  const execute = flags.execute ?? [];
  const interactive = execute.length === 0 && flags.file === undefined && io.stdin.isTTY === true;
  const format = flags.format ?? (io.stdout.isTTY === true ? 'table' : 'tsv');
  // Open the file before connecting: a missing file is the user's error, not the server's.
  let fileStream: ReadStream | undefined;
  if (flags.file !== undefined) {
    try {
      fileStream = createReadStream('', { fd: openSync(flags.file, 'r'), encoding: 'utf8' });
    } catch (e) {
      io.stderr.write(`ERROR: sql: cannot read ${flags.file}: ${(e as Error).message}\n`);
      return 1;
    }
  }
  let session: ShellSession;
  try {
    session = await ShellSession.open(target, io);
  } catch (e) {
    const code = (e as { code?: string }).code;
    io.stderr.write(`ERROR: ${(e as Error).message}\n${code !== undefined && /^[0-9A-Z]{5}$/.test(code) ? `SQLSTATE: ${code}\n` : ''}`);
    fileStream?.destroy();
    return 1;
  }
  const shell = new SqlShell(session, io, format, !(flags.continueOnError ?? false) && !interactive, interactive);
  try {
    if (interactive) return await runInteractive(shell, io);
    for (const e of execute) if (!(await shell.feedText(e))) break;
    if (!shell.hadError || flags.continueOnError === true) {
      if (fileStream !== undefined) await feedStream(shell, fileStream);
      else if (execute.length === 0) await feedStream(shell, io.stdin);
    }
    return shell.hadError ? 1 : 0;
  } finally {
    fileStream?.destroy();
    await shell.currentSession.close();
  }
}

function collect(v: string, prev: string[]): string[] {
  return [...prev, v];
}

/** The `sql` subcommand for the cairn CLI. */
export function sqlCommand(): Command {
  return new Command('sql')
    .description('the SQL shell: interactive on a terminal, or run -e/-f/stdin statements')
    .option('--url <url>', `connection URL (default $CAIRN_URL, $PG* or ${DEFAULT_SQL_URL})`)
    .option('-e, --execute <statements>', 'run these statements and exit (repeatable)', collect, [] as string[])
    .option('-f, --file <file>', 'run the statements of FILE and exit')
    .addOption(new Option('--format <format>', 'result format (default: table on a terminal, tsv otherwise)').choices(OUTPUT_FORMATS as string[]))
    .option('--insecure', 'connect without TLS (sslmode=disable)', false)
    .option('-u, --user <user>', 'user name (overrides the URL\'s)')
    .option('-d, --database <database>', 'database (overrides the URL\'s)')
    .option('--continue-on-error', 'in batch mode, run the remaining statements after an error (exit status still 1)', false)
    .action(async (flags: SqlShellFlags) => {
      const code = await runSqlShell(flags, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env });
      await exitAfterFlush(code);
    });
}

/** Adds `cairn sql` to a commander program. */
export function registerSqlCommand(program: Command): void {
  program.addCommand(sqlCommand());
}
