/**
 * Two pgwire clients of one SQL server over a fresh in-process 3-node KV cluster (real
 * TxnCoordSender): what the jepsen workload tests that interleave two clients' statements
 * need. `withSqlPair(start, async (a, b) => …)` connects both, runs the body, and closes
 * the clients and the server whatever happens; the server's internal errors must stay empty.
 */
import { expect } from 'vitest';
import pg from 'pg';
import { startSqlServer } from '../support/sql-server.js';
import { startTxnCluster } from '../kv-txn/support.js';
import type { autoCloseClusters } from '../support/test-cluster.js';

export async function withSqlPair(start: ReturnType<typeof autoCloseClusters>, body: (a: pg.Client, b: pg.Client) => Promise<void>): Promise<void> {
  const { dbs } = await startTxnCluster(start);
  const srv = await startSqlServer({ insecure: true, db: dbs[0] });
  const a = new pg.Client(srv.url);
  const b = new pg.Client(srv.url);
  await a.connect();
  await b.connect();
  try {
    await body(a, b);
    expect(srv.internalErrors).toEqual([]);
  } finally {
    await a.end();
    await b.end();
    await srv.stop();
  }
}
