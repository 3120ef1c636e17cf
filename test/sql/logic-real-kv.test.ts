/**
 * The SQL logic tests on the real transactional KV: an in-process 3-node
 * cluster (test/support/test-cluster.ts) with src/kv's TxnDB as the KVDB of
 * sql/server-entry.ts — the same pgwire server, the real TxnCoordSender,
 * DistSender, Raft and MVCC underneath. One cluster serves every file; each
 * file gets a database of its own (a fresh cluster per file would cost ~10 s
 * each). Files whose expectations depend on the whole catalog or the database
 * name (ddl.slt: SHOW
 * DATABASES/TABLES) or on MemoryKV's admin stand-in (session.slt: SPLIT AT /
 * SHOW RANGES) run only on MemoryKV (logic.test.ts).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { join } from 'node:path';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { TestCluster, type TestClusterOptions } from '../support/test-cluster.js';
import { startTxnCluster } from '../kv-txn/support.js';
import { runSltFile } from './slt-runner.js';

const DIR = join(import.meta.dirname, '../../sql/testdata/logic');
const FILES = ['dml.slt', 'select.slt', 'nulls.slt', 'txn.slt', 'types.slt', 'errors.slt'];
let cluster: TestCluster | undefined;
/** One cluster for the whole file, closed after the last test (autoCloseClusters closes after each). */
const startCluster = async (opts: TestClusterOptions): Promise<TestCluster> => {
  cluster = await TestCluster.start(opts);
  return cluster;
};

describe('sql logic tests on the real KV (3-node in-process cluster)', () => {
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
      const db = `slt_${file.replace('.slt', '')}`;
      const admin = new pg.Client(srv.url);
      await admin.connect();
      await admin.query(`CREATE DATABASE ${db}`);
      await admin.end();
      await runSltFile(join(DIR, file), file, srv.url.replace(/\/defaultdb$/, `/${db}`));
      expect(srv.internalErrors).toEqual([]);
    }, 120_000);
  }
});
