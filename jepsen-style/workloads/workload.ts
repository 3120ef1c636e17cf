/**
 * The contract every jepsen-style workload implements, and the SQL transaction helper
 * that decides each operation's outcome.
 *
 *   parent (run)                         client process (client-worker.ts)
 *   ───────────────────────────────      ─────────────────────────────────
 *   setup(conn)          once
 *   generator.next(p) ──── OpRequest ──▶ execute(conn, op) → OpResult
 *   record invoke/complete ◀─ times ───  (invoke/complete stamped with CLOCK_MONOTONIC)
 *   finalOps()           after healing, executed like any op (reads, retried until ok)
 *   checkers(ctx)        on the finished history
 *
 * Ownership: a workload module is stateless except its generator (parent) — the same
 * module is loaded in every client process to execute operations. Generators are
 * deterministic for a seed: they draw only from the injected Prng.
 *
 * Outcome rule (DESIGN.md §6; history/outcome.ts): an operation is `fail` only when it
 * certainly did not take effect. Inside an explicit transaction every error before
 * COMMIT is sent is a fail (the server never commits a transaction whose COMMIT it did
 * not receive); an error from COMMIT itself is classified by outcomeOfError (40001 →
 * fail, connection loss / timeout / 40003 → info). Read-only operations fail on any
 * error. Nothing is retried silently.
 */
import type { Checker } from '../checkers/index.js';
import { outcomeOfError, sqlStateOf } from '../history/outcome.js';
import type { Prng } from '../../src/util/index.js';
import { CairnError } from '../../src/util/index.js';

/** What the parent asks a client to do. */
export interface OpRequest {
  readonly f: string;
  readonly value: unknown;
  readonly key?: string | number;
  /** Client-side timeout of this operation (ms); default the run's --op-timeout (the final reads get longer). */
  readonly timeoutMs?: number;
}

/** What the client learned. `value` is the result on ok, the argument otherwise. */
export interface OpResult {
  readonly type: 'ok' | 'fail' | 'info';
  readonly value: unknown;
  readonly error?: string;
}

/** The subset of pg.Client the workloads use. */
export interface SqlConn {
  query(text: string, params?: readonly unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>;
}

/**
 * Knobs shared by the parent and the clients (sent to every client process as JSON).
 * `isolation` other than 'serializable' is the deliberately broken mode that proves the
 * pipeline can fail.
 */
export interface WorkloadOptions {
  readonly isolation: 'serializable' | 'repeatable read' | 'read committed';
  readonly target: 'cairn' | 'postgres';
  /** monotonic: how commit timestamps are read ('value' = order by the value itself). */
  readonly tsMode?: 'cluster_logical_timestamp' | 'value';
}

export interface OpGenerator {
  /** The next operation for client process `process` (worker index `worker`); undefined = none now. */
  next(process: number, worker: number): OpRequest | undefined;
}

export interface Workload {
  readonly name: string;
  /** The tables under test (the split nemesis splits them). */
  readonly tables: readonly string[];
  /**
   * How clients reach the system: SQL over pgwire (default), or Cairn's admin KV endpoint
   * (`executeKv`), for single-key workloads while a build has no SQL layer mounted.
   */
  readonly transport?: 'sql' | 'admin-kv';
  executeKv?(httpUrl: string, op: OpRequest, timeoutMs: number): Promise<OpResult>;
  /** Creates the schema and initial data (idempotent on a fresh database). */
  setup(conn: SqlConn, opts: WorkloadOptions): Promise<void>;
  /** `nodes`: the cluster size (client w talks to node w mod nodes). */
  generator(prng: Prng, concurrency: number, nodes: number): OpGenerator;
  execute(conn: SqlConn, op: OpRequest, opts: WorkloadOptions): Promise<OpResult>;
  /** Operations run after healing (read-only; retried until they succeed). */
  finalOps(gen: OpGenerator): readonly OpRequest[];
  checkers(gen: OpGenerator, opts: WorkloadOptions): readonly Checker[];
}

/** Thrown inside a transaction body to abort it with a definite `fail` (nothing written). */
export class OpAbort extends CairnError {
  constructor(reason: string) {
    super('jepsen.op_abort', `jepsen: ${reason}`);
  }
}

/**
 * SQLSTATE classes whose code alone says nothing useful (internal and system errors), or hides which of several causes it
 * was (40001 / 40003: which retry reason, which conflict): the history keeps the message too.
 */
const EXPLAINED_CLASSES = new Set(['XX', '58', '40']);

function errorName(e: unknown): string {
  if (e instanceof OpAbort) return e.message;
  const state = sqlStateOf(e);
  if (state === undefined) return e instanceof Error ? e.message : String(e);
  if (!EXPLAINED_CLASSES.has(state.slice(0, 2)) || !(e instanceof Error)) return state;
  return `${state}: ${e.message.slice(0, 300)}`;
}

/**
 * Runs `body` in one explicit transaction at `opts.isolation` and classifies the outcome.
 * `readOnly` marks operations that write nothing (any error → fail).
 */
export async function runTxn(conn: SqlConn, opts: WorkloadOptions, op: OpRequest, readOnly: boolean, body: () => Promise<unknown>): Promise<OpResult> {
  let result: unknown;
  try {
    await conn.query(`BEGIN TRANSACTION ISOLATION LEVEL ${opts.isolation.toUpperCase()}`);
    result = await body();
  } catch (e) {
    await conn.query('ROLLBACK').catch(() => undefined);
    return { type: 'fail', value: op.value, error: errorName(e) };
  }
  try {
    await conn.query('COMMIT');
  } catch (e) {
    return { type: readOnly ? 'fail' : outcomeOfError(e), value: op.value, error: errorName(e) };
  }
  return { type: 'ok', value: result };
}

/** Runs one statement outside an explicit transaction (implicitly committed). */
export async function runStatement(conn: SqlConn, op: OpRequest, readOnly: boolean, body: () => Promise<unknown>): Promise<OpResult> {
  try {
    return { type: 'ok', value: await body() };
  } catch (e) {
    return { type: outcomeOfError(e, { readOnly }), value: op.value, error: errorName(e) };
  }
}

/** Table name for a key spread over `tables` tables: `${prefix}${key % tables}`. */
export function tableOf(prefix: string, key: number, tables: number): string {
  return `${prefix}${key % tables}`;
}
