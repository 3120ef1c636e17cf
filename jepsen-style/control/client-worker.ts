/**
 * A client process: one per concurrent client, started by the runner with an IPC channel.
 * It owns one pg connection (reconnected after a connection-level error), executes the
 * operations the runner sends, and replies with the outcome and the invoke/complete
 * instants read from CLOCK_MONOTONIC (process.hrtime.bigint — one clock for every
 * process on the machine, so the runner can merge all clients into one history).
 *
 *   client → runner   { kind: 'ready' }                  once loaded and connected
 *   runner → client   { kind: 'op', id, op }
 *   client → runner   { kind: 'done', id, invokeNs, completeNs, result }
 *
 * Timeouts: an operation still running after `timeoutMs` (or the op's own `timeoutMs`:
 * the final reads) has its socket destroyed; the pending query then rejects with a connection error and the workload's outcome rule
 * decides (before COMMIT → fail, during COMMIT → info). A connect that fails means the
 * operation was never sent: fail. The client never retries anything.
 */
import pg from 'pg';
import { workloadNamed } from '../workloads/index.js';
import type { OpRequest, OpResult, SqlConn, WorkloadOptions } from '../workloads/index.js';
import { sqlStateOf } from '../history/outcome.js';

export interface WorkerInit {
  readonly url: string;
  /** Cairn's admin HTTP base URL, for admin-kv workloads. */
  readonly httpUrl: string | undefined;
  readonly workload: string;
  readonly opts: WorkloadOptions;
  readonly timeoutMs: number;
}

export type ToWorker = { readonly kind: 'op'; readonly id: number; readonly op: OpRequest } | { readonly kind: 'close' };
export type FromWorker = WorkerReady | WorkerDone;
/** Sent once the worker has loaded its workload and connected (or failed to): the run clock may start. */
export interface WorkerReady {
  readonly kind: 'ready';
}
export interface WorkerDone {
  readonly kind: 'done';
  readonly id: number;
  readonly invokeNs: string;
  readonly completeNs: string;
  readonly result: OpResult;
}

interface Conn {
  client: pg.Client;
  broken: boolean;
}

async function connect(url: string, timeoutMs: number): Promise<Conn> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, keepAlive: true });
  const conn: Conn = { client, broken: false };
  client.on('error', () => {
    conn.broken = true;
  });
  await client.connect();
  return conn;
}

function destroy(conn: Conn): void {
  conn.broken = true;
  const stream = (conn.client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
  stream?.destroy();
  conn.client.end().catch(() => undefined);
}

export async function runWorker(init: WorkerInit, send: (m: FromWorker) => void, onMessage: (h: (m: ToWorker) => void) => void): Promise<void> {
  const workload = workloadNamed(init.workload);
  let conn: Conn | undefined;
  let queue = Promise.resolve();
  let closed!: () => void;
  const done = new Promise<void>((r) => (closed = r));
  const executeKv = async (id: number, op: OpRequest): Promise<void> => {
    const invoke = process.hrtime.bigint();
    let result: OpResult;
    try {
      result = await workload.executeKv!(init.httpUrl!, op, op.timeoutMs ?? init.timeoutMs);
    } catch (e) {
      result = { type: 'info', value: op.value, error: `client: ${e instanceof Error ? e.message : String(e)}` };
    }
    send({ kind: 'done', id, invokeNs: invoke.toString(), completeNs: process.hrtime.bigint().toString(), result });
  };
  const execute = async (id: number, op: OpRequest): Promise<void> => {
    if (workload.transport === 'admin-kv') return executeKv(id, op);
    const invoke = process.hrtime.bigint();
    let result: OpResult;
    if (conn === undefined || conn.broken) {
      if (conn !== undefined) destroy(conn);
      conn = undefined;
      try {
        conn = await connect(init.url, init.timeoutMs);
      } catch (e) {
        result = { type: 'fail', value: op.value, error: `connect: ${e instanceof Error ? e.message : String(e)}` };
      }
    }
    if (conn !== undefined) {
      const c = conn;
      const timer = setTimeout(() => destroy(c), op.timeoutMs ?? init.timeoutMs);
      try {
        result = await workload.execute(c.client as unknown as SqlConn, op, init.opts);
      } catch (e) {
        // A workload bug, not an outcome we understand: never claim it did not happen.
        result = { type: 'info', value: op.value, error: `client: ${e instanceof Error ? e.message : String(e)}` };
      } finally {
        clearTimeout(timer);
      }
      // Errors without a SQLSTATE are connection-level: start over on a new connection.
      if (result.type !== 'ok' && result.error !== undefined && sqlStateOf({ code: result.error }) === undefined && !result.error.startsWith('jepsen:')) {
        destroy(c);
      }
    }
    const complete = process.hrtime.bigint();
    send({ kind: 'done', id, invokeNs: invoke.toString(), completeNs: complete.toString(), result: result! });
  };
  // Connect before saying ready, so the run's clock does not include start-up; a failed
  // connect is retried by the first operation.
  if (workload.transport !== 'admin-kv') conn = await connect(init.url, init.timeoutMs).catch(() => undefined);
  send({ kind: 'ready' });
  onMessage((m) => {
    if (m.kind === 'close') {
      queue = queue.then(async () => {
        if (conn !== undefined) await conn.client.end().catch(() => undefined);
        closed();
      });
      return;
    }
    queue = queue.then(() => execute(m.id, m.op));
  });
  await done;
}

// Entry point when forked by the runner: argv[2] is the WorkerInit as JSON.
if (process.send !== undefined && process.argv[2] !== undefined && process.argv[1]?.endsWith('client-worker.js')) {
  const init = JSON.parse(process.argv[2]) as WorkerInit;
  const send = process.send.bind(process);
  void runWorker(
    init,
    (m) => send(m),
    (h) => process.on('message', (m) => h(m as ToWorker)),
  ).then(() => process.exit(0));
  process.on('disconnect', () => process.exit(0));
}
