/**
 * cluster_logical_timestamp() on the real KV (in-process 3-node cluster, real
 * TxnCoordSender): CockroachDB's contract — the call returns the commit timestamp
 * and fixes it, so a transaction pushed afterwards fails with a retryable error
 * (40001) instead of committing at another timestamp. The monotonic workload
 * (jepsen-style/workloads/monotonic.ts) orders rows by this value, so a
 * transaction that reported one timestamp and committed at another would be a
 * false anomaly — or hide a real one. Format and per-transaction stability are in
 * sql/testdata/logic/cluster-logical-timestamp.slt. Issue 9 (monotonic).
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { withSqlPair } from './sql-pair.js';
import { startTxnCluster, tkey, batch } from '../kv-txn/support.js';
import { tsLess } from '../../src/util/hlc.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';

const start = autoCloseClusters();

describe('cluster_logical_timestamp (real KV)', () => {
  it('KVTxn.fixCommitTimestamp: a later push is a retryable error; unfixed the txn refreshes and commits higher; restart unfixes', async () => {
    const { dbs } = await startTxnCluster(start);
    const db = dbs[0] as TxnDB;
    for (const fix of [false, true]) {
      const k = tkey(fix ? 2 : 1);
      const a = db.newTxn();
      const first = fix ? a.fixCommitTimestamp() : a.provisionalCommitTimestamp();
      // A read of k by a later transaction enters the timestamp cache above a's timestamp: a's write of k is pushed.
      const b = db.newTxn();
      expect(tsLess(first, b.readTimestamp())).toBe(true);
      await b.run(batch((x) => x.get(k)));
      await b.commit();
      if (!fix) {
        await a.commitInBatch(batch((x) => x.put(k, Buffer.from('a'))));
        expect(tsLess(first, a.provisionalCommitTimestamp())).toBe(true);
        continue;
      }
      await expect(a.commitInBatch(batch((x) => x.put(k, Buffer.from('a'))))).rejects.toMatchObject({ retryable: true });
      await a.restart();
      await a.commitInBatch(batch((x) => x.put(k, Buffer.from('a'))));
      expect(tsLess(first, a.provisionalCommitTimestamp())).toBe(true);
    }
  }, 60_000);

  it('SQL: the value read is the commit timestamp — pushed after reading it, the transaction fails with 40001', () =>
    withSqlPair(start, async (a, b) => {
      await a.query('CREATE TABLE clt (k INT PRIMARY KEY, ts DECIMAL)');
      for (const fix of [false, true]) {
        const k = fix ? 2 : 1;
        await a.query('BEGIN');
        const ts = fix ? String((await a.query('SELECT cluster_logical_timestamp()::TEXT AS ts')).rows[0].ts) : null;
        // b reads k later (its own implicit transaction): a's insert of k is pushed above that read.
        expect((await b.query('SELECT ts FROM clt WHERE k = $1', [k])).rows).toEqual([]);
        const outcome = await a
          .query('INSERT INTO clt VALUES ($1, $2)', [k, ts])
          .then(() => a.query('COMMIT'))
          .then(
            () => 'committed',
            (e: { code?: string }) => e.code,
          );
        if (fix) await a.query('ROLLBACK');
        expect(outcome).toBe(fix ? '40001' : 'committed');
      }
      // Without a push, the value stored is the one the transaction reported, and later transactions commit above it.
      const rows: string[] = [];
      for (const k of [3, 4]) {
        await a.query('BEGIN');
        rows.push(String((await a.query('SELECT cluster_logical_timestamp()::TEXT AS ts')).rows[0].ts));
        await a.query('INSERT INTO clt VALUES ($1, cluster_logical_timestamp())', [k]);
        await a.query('COMMIT');
      }
      const stored = (await b.query('SELECT k, ts::TEXT AS ts FROM clt WHERE k >= 3 ORDER BY k')).rows.map((r) => String(r.ts));
      expect(stored).toEqual(rows);
      expect(BigInt(rows[0]!.replace('.', '')) < BigInt(rows[1]!.replace('.', ''))).toBe(true);
    }), 60_000);
});
