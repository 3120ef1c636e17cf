/**
 * CockroachDB's transaction priorities through SQL: `BEGIN PRIORITY HIGH`,
 * `BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE, PRIORITY LOW`,
 * `SET TRANSACTION PRIORITY …` reach the KV transaction (sql/kv.ts
 * KVTxnOptions.priority / KVTxn.setPriority, which the KV layer's pusher
 * ranks conflicting transactions by). The KV side of priorities is tested in
 * test/kv-txn; here, what the session hands it, over a MemoryKV that records it.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import type { KVDB, KVTxn, KVTxnOptions } from '../../sql/kv.js';
import { MemoryKV } from '../support/memory-kv.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

/** MemoryKV whose transactions log the priority they were given (at creation and by setPriority). */
function recordingDb(log: string[]): KVDB {
  const kv = new MemoryKV();
  return {
    nodeId: kv.nodeId,
    admin: kv.admin,
    now: () => kv.now(),
    newTxn(opts?: KVTxnOptions): KVTxn {
      if (opts?.priority !== undefined) log.push(`new:${opts.priority}`);
      const txn = kv.newTxn(opts);
      return new Proxy(txn, {
        get(target, prop, receiver) {
          if (prop === 'setPriority') return (p: 'low' | 'normal' | 'high') => log.push(`set:${p}`);
          const v = Reflect.get(target, prop, receiver) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
    },
  };
}

describe('transaction priority', () => {
  const log: string[] = [];
  let srv: TestSqlServer;
  let c: pg.Client;
  beforeAll(async () => {
    srv = await startSqlServer({ insecure: true, db: recordingDb(log) });
    c = new pg.Client(srv.url);
    await c.connect();
    await c.query('CREATE TABLE t (k INT PRIMARY KEY)');
  });
  afterAll(async () => {
    await c.end();
    await srv.stop();
  });

  it('BEGIN … PRIORITY and SET TRANSACTION PRIORITY reach the KV transaction', async () => {
    log.length = 0;
    await c.query('BEGIN PRIORITY HIGH');
    await c.query('INSERT INTO t VALUES (1)');
    await c.query('COMMIT');
    await c.query('BEGIN TRANSACTION ISOLATION LEVEL SERIALIZABLE, PRIORITY LOW');
    await c.query('SET TRANSACTION PRIORITY NORMAL');
    await c.query('COMMIT');
    await c.query('START TRANSACTION PRIORITY LOW, READ ONLY');
    await c.query('ROLLBACK');
    expect(log).toEqual(['new:high', 'new:low', 'set:normal', 'new:low']);
    expect((await c.query('SELECT k FROM t')).rows).toEqual([{ k: 1 }]);
  });

  it('errors name what is wrong', async () => {
    await expect(c.query('BEGIN PRIORITY URGENT')).rejects.toMatchObject({ code: '42601' });
    await expect(c.query('SET TRANSACTION PRIORITY HIGH')).resolves.toBeDefined(); // outside BEGIN: a warning, as PostgreSQL's SET TRANSACTION
  });
});
