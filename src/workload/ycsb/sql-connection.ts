/**
 * Connections for the workload tool: one pg.Client per client loop, with
 * 'error' and 'end' listeners so that a connection dying (between queries or
 * during one) marks the connection broken — its owner reconnects — instead of
 * crashing the process; and the classification of errors by SQLSTATE.
 */
import pg from 'pg';
import { WorkloadError } from './workload-spec.js';

export interface Output {
  write(text: string): void;
  /** A terminal: progress bars redraw in place. */
  readonly isTTY?: boolean;
}

export const SERIALIZATION_FAILURE = '40001';
/** statement_completion_unknown: the outcome of a commit is unknown (CockroachDB's ambiguous result). */
export const AMBIGUOUS_RESULT = '40003';

export class Connection {
  broken = false;
  lastError: unknown;

  private constructor(
    readonly url: string,
    readonly client: pg.Client,
  ) {
    client.on('error', (e) => {
      this.broken = true;
      this.lastError = e;
    });
    // The server closed the connection (e.g. after FATAL 57P01): unusable from now on.
    client.on('end', () => {
      this.broken = true;
    });
  }

  static async open(url: string): Promise<Connection> {
    const client = new pg.Client({ connectionString: url });
    const conn = new Connection(url, client);
    try {
      await client.connect();
    } catch (e) {
      await client.end().catch(() => undefined);
      throw e;
    }
    return conn;
  }

  async close(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }
}

/**
 * Opens `n` connections, connection i to urls[i % urls.length]; on any
 * failure closes those already open and throws WorkloadError (workload.connect).
 */
export async function openConnections(urls: readonly string[], n: number): Promise<Connection[]> {
  const conns: Connection[] = [];
  try {
    for (let i = 0; i < n; i++) conns.push(await Connection.open(urls[i % urls.length] as string));
  } catch (e) {
    await Promise.all(conns.map((c) => c.close()));
    throw new WorkloadError('connect', `cannot connect: ${errorMessage(e)}`, e);
  }
  return conns;
}

/**
 * The error's SQLSTATE when the server sent one; otherwise a label for the
 * client-side failure ("connection:ECONNRESET", "client").
 */
export function sqlStateOf(e: unknown): string {
  if (e instanceof pg.DatabaseError && typeof e.code === 'string') return e.code;
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return `connection:${code}`;
  return 'client';
}

/** True when the error came from the server as a SQL error. */
export function isServerError(e: unknown): boolean {
  return e instanceof pg.DatabaseError;
}

/**
 * True when the connection cannot be used after this error: every client-side
 * failure, and the server's connection-exception (08…) and operator-
 * intervention (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot
 * connect now) errors, which PostgreSQL sends just before closing.
 */
export function breaksConnection(e: unknown): boolean {
  if (!isServerError(e)) return true;
  const state = sqlStateOf(e);
  return state.startsWith('08') || state.startsWith('57P');
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
