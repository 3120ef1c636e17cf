/**
 * The schema logic files on the real transactional KV: an in-process 3-node
 * cluster (src/kv's TxnDB over Raft and MVCC) under the pgwire server, as
 * test/sql/logic-real-kv.test.ts does for the core files. One cluster, one
 * database per file.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { join } from 'node:path';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { TestCluster, type TestClusterOptions } from '../support/test-cluster.js';
import { startTxnCluster } from '../kv-txn/support.js';
import { runSltFile } from '../sql/slt-runner.js';

const DIR = join(import.meta.dirname, '../../sql/testdata/logic');
const FILES = ['index.slt', 'alter.slt', 'view.slt', 'sequence.slt', 'fk.slt', 'fk-primary-key.slt'];
let cluster: TestCluster | undefined;
const startCluster = async (opts: TestClusterOptions): Promise<TestCluster> => {
  cluster = await TestCluster.start(opts);
  return cluster;
};

describe('schema logic tests on the real KV (3-node in-process cluster)', () => {
  let srv: TestSqlServer;
  beforeAll(async () => {
    const { dbs } = await startTxnCluster(startCluster);
    srv = await startSqlServer({ insecure: true, db: dbs[0] });
  }, 120_000);
  afterAll(async () => {
    await srv?.stop();
    await cluster?.close();
  });

  for (const file of FILES) {
    it(file, async () => {
      const db = `slt_${file.replace('.slt', '').replace(/-/g, '_')}`;
      const admin = new pg.Client(srv.url);
      await admin.connect();
      await admin.query(`CREATE DATABASE ${db}`);
      await admin.end();
      await runSltFile(join(DIR, file), file, srv.url.replace(/\/defaultdb$/, `/${db}`));
      expect(srv.internalErrors).toEqual([]);
    }, 120_000);
  }
});
