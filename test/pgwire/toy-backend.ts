/**
 * A tiny fixed-table SessionBackend for the pgwire tests: just enough SQL,
 * recognised by regular expressions, to drive real clients (pg, postgres.js,
 * psql) through every protocol path. It is not a SQL engine; the real session
 * lives in sql/session.
 *
 * Statements (case-insensitive, one per ';'-separated piece of a Query):
 *   select <int>                      one int4 column
 *   select $1::<type>                 echoes a parameter (int4, int8, text, bool, float8, bytea)
 *   select $1 + 1                     int4 parameter inferred from the expression
 *   select * from t [where id = $1]   the fixed table t(id int4, name text, score float8, ok bool, data bytea, big int8)
 *   select * from generate_series(1, N)   N int4 rows, produced lazily
 *   select pg_sleep(S)                waits S seconds or until cancelled (57014)
 *   select * from flaky(N)            N rows, then a retryable error (40001) on the first
 *                                     attempt: retried transparently while sink.canRewind()
 *   select 1/0                        22012 division by zero
 *   select notice()                   a WARNING notice, then one row
 *   select boom()                     throws a plain Error: a bug, not an expected failure
 *   set timezone = 'Z'                ParameterStatus TimeZone
 *   copy t from stdin                 COPY IN: counts the lines received (kept in ToyFactory.copied)
 *   copy t to stdout                  COPY OUT: t as tab-separated text
 *   begin | commit | rollback         explicit transactions ('T', 'E' after an error)
 *   anything else                     42601 syntax error at position 1
 */
import { PgError } from '../../sql/pgwire/errors.js';
import type { ColumnDescriptor } from '../../sql/pgwire/backend.js';
import type { FormatCode } from '../../sql/pgwire/frontend.js';
import type { ScramCredential } from '../../sql/pgwire/scram.js';
import type {
  AuthMethod,
  BindParams,
  ExecuteResult,
  Portal,
  PreparedStatement,
  RowSink,
  SessionBackend,
  SessionFactory,
  SimpleQuerySink,
  StartupInfo,
} from '../../sql/pgwire/session-backend.js';

export const OID = { bool: 16, bytea: 17, int8: 20, int4: 23, text: 25, float8: 701 } as const;
type TypeName = keyof typeof OID;
const TYPE_SIZE: Record<TypeName, number> = { bool: 1, bytea: -1, int8: 8, int4: 4, text: -1, float8: 8 };

type Value = number | bigint | string | boolean | Buffer | null;

export const TABLE_T: readonly Value[][] = [
  [1, 'alice', 1.5, true, Buffer.from([0xde, 0xad]), 9007199254740993n],
  [2, 'bob', -2.25, false, Buffer.from([]), -1n],
  [3, 'carol', 0, true, null, 0n],
];
const T_COLUMNS: readonly [string, TypeName][] = [
  ['id', 'int4'],
  ['name', 'text'],
  ['score', 'float8'],
  ['ok', 'bool'],
  ['data', 'bytea'],
  ['big', 'int8'],
];

function column(name: string, type: TypeName, format: FormatCode = 0, attr = 0): ColumnDescriptor {
  return { name, tableOid: attr > 0 ? 16384 : 0, columnAttr: attr, typeOid: OID[type], typeSize: TYPE_SIZE[type], typeModifier: -1, format };
}

export function encodeValue(v: Value, type: TypeName, format: FormatCode): Buffer | null {
  if (v === null) return null;
  if (format === 0) {
    switch (type) {
      case 'bool': return Buffer.from(v ? 't' : 'f');
      case 'bytea': return Buffer.from(`\\x${(v as Buffer).toString('hex')}`);
      default: return Buffer.from(String(v));
    }
  }
  switch (type) {
    case 'int4': { const b = Buffer.alloc(4); b.writeInt32BE(v as number); return b; }
    case 'int8': { const b = Buffer.alloc(8); b.writeBigInt64BE(BigInt(v as bigint)); return b; }
    case 'float8': { const b = Buffer.alloc(8); b.writeDoubleBE(v as number); return b; }
    case 'bool': return Buffer.from([v ? 1 : 0]);
    case 'bytea': return v as Buffer;
    case 'text': return Buffer.from(String(v));
  }
}

function decodeParam(b: Uint8Array | null, type: TypeName, format: FormatCode): Value {
  if (b === null) return null;
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (format === 1) {
    switch (type) {
      case 'int4': return buf.readInt32BE(0);
      case 'int8': return buf.readBigInt64BE(0);
      case 'float8': return buf.readDoubleBE(0);
      case 'bool': return buf[0] === 1;
      case 'bytea': return Buffer.from(buf);
      case 'text': return buf.toString('utf8');
    }
  }
  const s = buf.toString('utf8');
  switch (type) {
    case 'int4': {
      const n = Number(s);
      if (!Number.isInteger(n)) throw new PgError('toy.invalid_input', '22P02', `invalid input syntax for type integer: "${s}"`);
      return n;
    }
    case 'int8': return BigInt(s);
    case 'float8': return Number(s);
    case 'bool': return s === 't' || s === 'true';
    case 'bytea': return Buffer.from(s.replace(/^\\x/, ''), 'hex');
    case 'text': return s;
  }
}

/** A planned statement: its shape and how to produce row i of n. */
interface ToyPlan {
  readonly tag: string;
  readonly params: readonly TypeName[];
  readonly columns: readonly [string, TypeName][] | null;
  readonly tableAttrs?: boolean;
  /** Rows for the given parameters: count and row(i). */
  rows(args: readonly Value[]): { readonly count: number; row(i: number): readonly Value[] };
  readonly sleepSeconds?: number;
  readonly effect?: 'begin' | 'commit' | 'rollback' | 'notice' | 'error' | 'set-timezone' | 'empty' | 'copy-in' | 'copy-out' | 'flaky';
  readonly setting?: string;
}

const NONE = { count: 0, row: () => [] };

function plan(sql: string): ToyPlan {
  const s = sql.trim().replace(/\s+/g, ' ').toLowerCase();
  let m: RegExpExecArray | null;
  if (s === '') return { tag: '', params: [], columns: null, rows: () => NONE, effect: 'empty' };
  if (s === 'begin' || s === 'start transaction') return { tag: 'BEGIN', params: [], columns: null, rows: () => NONE, effect: 'begin' };
  if (s === 'commit') return { tag: 'COMMIT', params: [], columns: null, rows: () => NONE, effect: 'commit' };
  if (s === 'rollback') return { tag: 'ROLLBACK', params: [], columns: null, rows: () => NONE, effect: 'rollback' };
  if ((m = /^set (?:time zone|timezone) (?:to |= ?)?'([^']*)'$/.exec(s))) {
    return { tag: 'SET', params: [], columns: null, rows: () => NONE, effect: 'set-timezone', setting: sql.trim().match(/'([^']*)'/)![1]! };
  }
  if (s === 'copy t from stdin') return { tag: 'COPY', params: [], columns: null, rows: () => NONE, effect: 'copy-in' };
  if (s === 'copy t to stdout') return { tag: 'COPY', params: [], columns: null, rows: () => NONE, effect: 'copy-out' };
  if ((m = /^select (-?\d+)$/.exec(s))) {
    const n = Number(m[1]);
    return { tag: 'SELECT', params: [], columns: [['?column?', 'int4']], rows: () => ({ count: 1, row: () => [n] }) };
  }
  if ((m = /^select \$1::(int4|int|integer|int8|bigint|text|bool|boolean|float8|bytea)$/.exec(s))) {
    const alias: Record<string, TypeName> = { int: 'int4', integer: 'int4', bigint: 'int8', boolean: 'bool' };
    const type = alias[m[1]!] ?? (m[1] as TypeName);
    return { tag: 'SELECT', params: [type], columns: [[type, type]], rows: (a) => ({ count: 1, row: () => [a[0]!] }) };
  }
  if (s === 'select $1 + 1') {
    return { tag: 'SELECT', params: ['int4'], columns: [['?column?', 'int4']], rows: (a) => ({ count: 1, row: () => [a[0] === null ? null : (a[0] as number) + 1] }) };
  }
  if (s === 'select * from t') {
    return { tag: 'SELECT', params: [], columns: T_COLUMNS, tableAttrs: true, rows: () => ({ count: TABLE_T.length, row: (i) => TABLE_T[i]! }) };
  }
  if (s === 'select * from t where id = $1') {
    return {
      tag: 'SELECT', params: ['int4'], columns: T_COLUMNS, tableAttrs: true,
      rows: (a) => {
        const hits = TABLE_T.filter((r) => r[0] === a[0]);
        return { count: hits.length, row: (i) => hits[i]! };
      },
    };
  }
  if ((m = /^select \* from generate_series\(1, ?(\d+)\)$/.exec(s))) {
    const n = Number(m[1]);
    return { tag: 'SELECT', params: [], columns: [['generate_series', 'int4']], rows: () => ({ count: n, row: (i) => [i + 1] }) };
  }
  if ((m = /^select \* from flaky\((\d+)\)$/.exec(s))) {
    const n = Number(m[1]);
    return { tag: 'SELECT', params: [], columns: [['flaky', 'int4']], rows: () => ({ count: n, row: (i) => [i + 1] }), effect: 'flaky' };
  }
  if ((m = /^select pg_sleep\((\d+(?:\.\d+)?)\)$/.exec(s))) {
    return { tag: 'SELECT', params: [], columns: [['pg_sleep', 'text']], rows: () => ({ count: 1, row: () => [''] }), sleepSeconds: Number(m[1]) };
  }
  if (s === 'select boom()') throw new TypeError('toy: a bug');
  if (s === 'select 1/0') return { tag: 'SELECT', params: [], columns: [['?column?', 'int4']], rows: () => NONE, effect: 'error' };
  if (s === 'select notice()') {
    return { tag: 'SELECT', params: [], columns: [['notice', 'text']], rows: () => ({ count: 1, row: () => ['done'] }), effect: 'notice' };
  }
  throw new PgError('toy.syntax_error', '42601', `syntax error at or near "${sql.trim().split(/\s+/)[0] ?? ''}"`, { position: 1, hint: 'the toy backend knows a handful of statements' });
}

class ToyStatement implements PreparedStatement {
  readonly paramTypes: readonly number[];
  readonly columns: readonly ColumnDescriptor[] | null;
  constructor(readonly plan: ToyPlan) {
    this.paramTypes = plan.params.map((t) => OID[t]);
    this.columns = describe(plan, () => 0);
  }
}

function describe(p: ToyPlan, format: (i: number) => FormatCode): ColumnDescriptor[] | null {
  return p.columns === null ? null : p.columns.map(([name, type], i) => column(name, type, format(i), p.tableAttrs ? i + 1 : 0));
}

class ToyPortal implements Portal {
  readonly columns: readonly ColumnDescriptor[] | null;
  next = 0;
  done = false;
  constructor(
    readonly stmt: ToyStatement,
    readonly args: readonly Value[],
    readonly formats: readonly FormatCode[],
  ) {
    this.columns = describe(stmt.plan, (i) => formats[i] ?? 0);
  }
}

export interface ToyOptions {
  /** Trust everyone (the --insecure mode). */
  readonly insecure?: boolean;
  /** Users and their stored credentials for password authentication. */
  readonly users?: ReadonlyMap<string, ScramCredential>;
}

/** Server-wide toy: counts open sessions so tests can check none leak. */
export class ToyFactory implements SessionFactory {
  openSessions = 0;
  /** Breaches of the session-backend.ts ordering guarantees seen by any session. */
  readonly contractViolations: string[] = [];
  /** Transparent retries made by the flaky statement. */
  retries = 0;
  /** Lines received by COPY FROM STDIN. */
  readonly copied: string[] = [];
  sessionsStarted = 0;
  readonly sessions = new Set<ToySession>();
  constructor(readonly opts: ToyOptions = {}) {}

  async authMethod(info: StartupInfo): Promise<AuthMethod> {
    if (this.opts.insecure) return { kind: 'trust' };
    if (info.user === 'blocked') return { kind: 'reject', sqlState: '28000', message: 'user "blocked" may not log in' };
    return { kind: 'password', credential: this.opts.users?.get(info.user) };
  }

  async startSession(info: StartupInfo): Promise<SessionBackend> {
    if (info.database === 'nodb') throw new PgError('toy.unknown_database', '3D000', `database "${info.database}" does not exist`);
    this.openSessions++;
    this.sessionsStarted++;
    const s = new ToySession(this, info.user);
    this.sessions.add(s);
    return s;
  }
}

export class ToySession implements SessionBackend<ToyStatement, ToyPortal> {
  private txn: 'I' | 'T' | 'E' = 'I';
  /** Inside an implicit transaction of the extended protocol that failed. */
  private cancelRequested = false;
  running = false;
  private wake: (() => void) | undefined;
  closed = false;
  calls: string[] = [];

  constructor(private readonly factory: ToyFactory, readonly user: string) {}

  parameterStatus(): Iterable<readonly [string, string]> {
    return [['is_superuser', this.user === 'root' ? 'on' : 'off']];
  }

  txnStatus(): 'I' | 'T' | 'E' {
    return this.txn;
  }

  private async runSimpleQuery(sql: string, sink: SimpleQuerySink): Promise<void> {
    const pieces = sql.split(';');
    if (pieces.length > 1 && pieces[pieces.length - 1]!.trim() === '') pieces.pop();
    const implicit = this.txn === 'I';
    try {
      for (const piece of pieces) {
        this.checkNotAborted(piece);
        const p = plan(piece);
        if (p.effect === 'empty') {
          sink.emptyQuery();
          continue;
        }
        const columns = describe(p, () => 0);
        const portal = new ToyPortal(new ToyStatement(p), [], []);
        const r = await this.withRetry(portal, sink, (retry) => {
          if (columns) sink.rowDescription(columns);
          return this.run(portal, 0, sink, retry);
        });
        if (r.kind === 'complete') sink.commandComplete(r.tag);
      }
    } catch (e) {
      // An error aborts the rest; an implicit transaction rolls back, an explicit one fails.
      if (this.txn === 'T') this.txn = 'E';
      else if (implicit) this.txn = 'I';
      throw e;
    }
  }

  private async runPrepare(sql: string, paramTypes: readonly number[]): Promise<ToyStatement> {
    this.calls.push(`prepare ${sql}`);
    this.checkNotAborted(sql);
    const p = plan(sql);
    paramTypes.forEach((oid, i) => {
      if (oid !== 0 && p.params[i] !== undefined && OID[p.params[i]!] !== oid) {
        throw new PgError('toy.type_mismatch', '42804', `parameter $${i + 1} has type ${p.params[i]}, not OID ${oid}`);
      }
    });
    return new ToyStatement(p);
  }

  private async runBind(stmt: ToyStatement, params: BindParams): Promise<ToyPortal> {
    const args = stmt.plan.params.map((t, i) => decodeParam(params.values[i]!, t, params.paramFormats[i]!));
    return new ToyPortal(stmt, args, params.resultFormats);
  }

  private async runExecute(portal: ToyPortal, maxRows: number, sink: RowSink): Promise<ExecuteResult> {
    this.checkNotAborted(portal.stmt.plan.tag);
    try {
      return await this.withRetry(portal, sink, (retry) => this.run(portal, maxRows, sink, retry));
    } catch (e) {
      if (this.txn === 'T') this.txn = 'E';
      throw e;
    }
  }

  private checkNotAborted(what: string): void {
    if (this.txn === 'E' && !/^\s*(rollback|commit)/i.test(what)) {
      throw new PgError('toy.in_failed_txn', '25P02', 'current transaction is aborted, commands ignored until end of transaction block');
    }
  }

  /**
   * Runs a statement's attempt; the flaky statement fails its first attempt
   * with 40001 and is retried once if its output can still be rewound.
   */
  private async withRetry<T>(portal: ToyPortal, sink: RowSink, attempt: (retry: boolean) => Promise<T>): Promise<T> {
    if (portal.stmt.plan.effect !== 'flaky') return attempt(false);
    try {
      return await attempt(false);
    } catch (e) {
      if (!(e instanceof PgError) || e.sqlState !== '40001' || !sink.canRewind()) throw e;
      sink.rewind();
      this.factory.retries++;
      portal.next = 0;
      return attempt(true);
    }
  }

  private async run(portal: ToyPortal, maxRows: number, sink: RowSink, retry = false): Promise<ExecuteResult> {
    const p = portal.stmt.plan;
    this.running = true;
    this.cancelRequested = false;
    try {
      switch (p.effect) {
        case 'begin': this.txn = 'T'; break;
        case 'commit':
        case 'rollback': this.txn = 'I'; break;
        case 'empty': return { kind: 'empty' };
        case 'error': throw new PgError('toy.division_by_zero', '22012', 'division by zero');
        case 'notice': sink.notice({ severity: 'WARNING', code: '01000', message: 'toy: a notice', detail: 'sent mid-statement' }); break;
        case 'set-timezone': sink.parameterStatus('TimeZone', p.setting!); break;
        case 'copy-in': {
          let text = '';
          for await (const chunk of sink.copyIn(0, T_COLUMNS.map(() => 0))) text += Buffer.from(chunk).toString('utf8');
          const lines = text.split('\n').filter((l) => l !== '' && l !== '\\.');
          this.factory.copied.push(...lines);
          return { kind: 'complete', tag: `COPY ${lines.length}` };
        }
        case 'copy-out': {
          sink.copyOut(0, T_COLUMNS.map(() => 0));
          for (const r of TABLE_T) {
            const line = r.map((v, i) => encodeValue(v, T_COLUMNS[i]![1], 0)?.toString('utf8') ?? '\\N').join('\t');
            const wait = sink.copyData(Buffer.from(`${line}\n`));
            if (wait) await wait;
          }
          sink.copyDone();
          return { kind: 'complete', tag: `COPY ${TABLE_T.length}` };
        }
        case 'flaky':
        case undefined: break;
      }
      if (p.sleepSeconds !== undefined) await this.sleep(p.sleepSeconds);
      const rows = p.rows(portal.args);
      const columns = p.columns ?? [];
      let sent = 0;
      while (portal.next < rows.count) {
        if (maxRows > 0 && sent === maxRows) return { kind: 'suspended' };
        if (this.cancelRequested) throw new PgError('toy.query_canceled', '57014', 'canceling statement due to user request');
        const r = rows.row(portal.next++);
        sent++;
        const wait = sink.row(r.map((v, i) => encodeValue(v, columns[i]![1], portal.formats[i] ?? 0)));
        if (wait) await wait;
      }
      if (p.effect === 'flaky' && !retry) {
        throw new PgError('toy.retry', '40001', 'restart transaction: toy conflict', {}, { retryable: true });
      }
      const tag = p.tag === 'SELECT' ? `SELECT ${sent}` : p.tag;
      return { kind: 'complete', tag };
    } finally {
      this.running = false;
    }
  }

  private sleep(seconds: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, seconds * 1000);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        reject(new PgError('toy.query_canceled', '57014', 'canceling statement due to user request'));
      };
    });
  }

  // The SessionBackend methods, each checking the ordering guarantees of
  // session-backend.ts: no overlapping calls, nothing after close().
  simpleQuery(sql: string, sink: SimpleQuerySink): Promise<void> {
    return this.guarded('simpleQuery', () => this.runSimpleQuery(sql, sink));
  }
  prepare(_name: string, sql: string, paramTypes: readonly number[]): Promise<ToyStatement> {
    return this.guarded('prepare', () => this.runPrepare(sql, paramTypes));
  }
  bind(stmt: ToyStatement, _portal: string, params: BindParams): Promise<ToyPortal> {
    return this.guarded('bind', () => this.runBind(stmt, params));
  }
  execute(portal: ToyPortal, maxRows: number, sink: RowSink): Promise<ExecuteResult> {
    return this.guarded('execute', () => this.runExecute(portal, maxRows, sink));
  }
  sync(failed: boolean): Promise<void> {
    return this.guarded('sync', () => this.runSync(failed));
  }
  closeStatement(_stmt: ToyStatement): void {
    this.checkSync('closeStatement');
  }
  closePortal(_portal: ToyPortal): void {
    this.checkSync('closePortal');
  }

  private checkSync(what: string): void {
    if (this.closed) this.factory.contractViolations.push(`${what} after close`);
    if (this.active > 0) this.factory.contractViolations.push(`${what} overlaps another call`);
  }

  private active = 0;

  private async guarded<T>(what: string, f: () => Promise<T>): Promise<T> {
    if (this.closed) this.factory.contractViolations.push(`${what} after close`);
    if (++this.active > 1) this.factory.contractViolations.push(`${what} overlaps another call`);
    try {
      return await f();
    } finally {
      this.active--;
    }
  }

  private async runSync(failed: boolean): Promise<void> {
    this.calls.push(failed ? 'sync failed' : 'sync');
    if (failed && this.txn === 'T') this.txn = 'E';
  }

  cancel(): void {
    if (!this.running) return;
    this.cancelRequested = true;
    this.wake?.();
  }

  async close(): Promise<void> {
    if (this.active > 0) this.factory.contractViolations.push('close during another call');
    if (this.closed) {
      this.factory.contractViolations.push('closed twice');
      return;
    }
    this.closed = true;
    this.factory.openSessions--;
    this.factory.sessions.delete(this);
  }
}
