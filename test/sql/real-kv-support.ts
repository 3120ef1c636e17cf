/**
 * SQL over an in-process cluster's real transactional KV (TestCluster +
 * TxnDB per node), for tests whose SQL behaviour depends on the KV layer
 * (conflicts, locks, retries). One fixture per test file: its cluster,
 * SQL servers and clients are closed after the file's tests.
 */
import { afterAll } from 'vitest';
import pg from 'pg';
import { TestCluster, type TestClusterOptions } from '../support/test-cluster.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { startTxnCluster, type TxnEnv } from '../kv-txn/support.js';

export interface RealKvSql {
  /** Starts the file's 3-node cluster (once). */
  start(opts?: Partial<TestClusterOptions>): Promise<TxnEnv>;
  /** A SQL server (insecure) over one node's TxnDB. */
  server(db: TxnEnv['dbs'][number]): Promise<TestSqlServer>;
  /** A connected client of `srv`. */
  client(srv: TestSqlServer): Promise<pg.Client>;
  readonly servers: readonly TestSqlServer[];
  readonly cluster: TestCluster | undefined;
}

export function realKvSql(): RealKvSql {
  let cluster: TestCluster | undefined;
  const servers: TestSqlServer[] = [];
  const clients: pg.Client[] = [];
  afterAll(async () => {
    for (const c of clients) await c.end();
    for (const s of servers) await s.stop();
    await cluster?.close();
  });
  return {
    start: (opts = {}) => startTxnCluster(async (o: TestClusterOptions) => (cluster = await TestCluster.start(o)), opts),
    server: async (db) => {
      const srv = await startSqlServer({ insecure: true, db });
      servers.push(srv);
      return srv;
    },
    client: async (srv) => {
      const c = new pg.Client(srv.url);
      await c.connect();
      clients.push(c);
      return c;
    },
    servers,
    get cluster() {
      return cluster;
    },
  };
}
