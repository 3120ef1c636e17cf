import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, str } from './support.js';
import type { KVDB, KVTxn } from '../../sql/kv.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';

const start = autoCloseClusters();

describe('txn basics', () => {
  it('TxnDB satisfies sql/kv.ts KVDB and KVTxn', async () => {
    const { dbs } = await startTxnCluster(start);
    const db: KVDB = dbs[0] as TxnDB;
    const t: KVTxn = db.newTxn();
    await t.rollback();
  });

  it('commits on one range (1PC) and on two ranges (parallel commit)', async () => {
    const { dbs } = await startTxnCluster(start, { splits: [tkey(50)] });
    const db = dbs[0] as TxnDB;
    const t1 = db.newTxn();
    await t1.run(batch((b) => b.put(tkey(1), Buffer.from('a'))));
    expect(str((await t1.run(batch((b) => b.get(tkey(1)))))[0]?.kind === 'get' ? ((await t1.run(batch((b) => b.get(tkey(1)))))[0] as { value: Buffer }).value : null)).toBe('a');
    await t1.commitInBatch(batch((b) => b.put(tkey(2), Buffer.from('b'))));
    expect(db.metrics.onePhaseCommits).toBe(1);
    const t2 = db.newTxn();
    await t2.commitInBatch(batch((b) => {
      b.put(tkey(3), Buffer.from('c'));
      b.put(tkey(60), Buffer.from('d'));
    }));
    expect(db.metrics.parallelCommits).toBe(1);
    const r = db.newTxn();
    const res = await r.run(batch((b) => {
      b.get(tkey(1));
      b.get(tkey(2));
      b.get(tkey(3));
      b.get(tkey(60));
    }));
    expect(res.map((x) => str((x as { value: Buffer | null }).value))).toEqual(['a', 'b', 'c', 'd']);
    await r.commit();
    await db.resolver.drain();
  });
});
