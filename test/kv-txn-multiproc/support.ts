/**
 * Helpers of the multi-process transaction tests: pgwire clients of a
 * ProcessCluster's nodes, bounded waits for a condition, and the SQLSTATE /
 * connection-loss classification of a failed statement.
 *
 * Ownership: test/kv-txn-multiproc only.
 */
import pg from 'pg';
import type { ProcessCluster } from '../support/process-cluster.js';

/**
 * A connected `pg` client of node i (an 'error' event after a node dies is
 * swallowed: the query that was running fails on its own); queryTimeoutMs
 * makes a statement that gets no answer fail client-side, without SQLSTATE.
 */
export async function connect(c: ProcessCluster, i: number, queryTimeoutMs?: number): Promise<pg.Client> {
  const client = new pg.Client({ host: '127.0.0.1', port: c.node(i).spec.sqlPort, user: 'root', database: 'defaultdb', connectionTimeoutMillis: 10_000, ...(queryTimeoutMs === undefined ? {} : { query_timeout: queryTimeoutMs }) });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** Polls cond every intervalMs until it holds; throws what after timeoutMs. */
export async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** The SQLSTATE of a pg error ('' when none: a connection lost or refused). */
export function sqlState(e: unknown): string {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : '';
}

/** Whether a failed COMMIT (or autocommit statement) leaves the outcome unknown: 40003, or the connection gone. */
export function outcomeUnknown(e: unknown): boolean {
  const s = sqlState(e);
  return s === '40003' || s === '08006' || s === '08003' || s === '57P01' || s === '';
}
