import { describe, it, expect, afterEach } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, str } from './support.js';
import type { KVDB, KVTxn } from '../../sql/kv.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';
import { replicaTestingKnobs } from '../../src/kv/replica.js';
import { decodeBatchRepr } from '../../storage/engine.js';
import { decodeMvccKey } from '../../storage/mvcc-key.js';
import { decodeHead } from '../../storage/mvcc-value.js';
import { hasPrefix } from '../../storage/encoding/bytes.js';
import { LOCAL_RANGE_PREFIX } from '../../storage/keys.js';

const start = autoCloseClusters();
afterEach(() => {
  replicaTestingKnobs.onApply = undefined;
});

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

  it('1PC: intents never hit the disk — the one command writes committed values, no intent, no record (issue 5)', async () => {
    const { dbs } = await startTxnCluster(start, { splits: [tkey(50)] });
    const db = dbs[0] as TxnDB;
    // Every engine write of every command applied anywhere while the transaction runs.
    const ops: { key: Buffer; value: Buffer | null }[] = [];
    replicaTestingKnobs.onApply = (_r, cmd) => void ops.push(...decodeBatchRepr(cmd.repr));
    const t = db.newTxn();
    const r = await t.run(batch((b) => b.get(tkey(5), 'exclusive')));
    expect(str((r[0] as { value: Buffer | null }).value)).toBe(null);
    await t.commitInBatch(batch((b) => {
      b.put(tkey(5), Buffer.from('x'));
      b.put(tkey(6), Buffer.from('y'));
    }));
    replicaTestingKnobs.onApply = undefined;
    expect(db.metrics.onePhaseCommits).toBe(1);
    const mine = ops.filter((op) => [tkey(5), tkey(6)].some((k) => decodeMvccKey(op.key).key.equals(k)));
    expect(mine.length).toBeGreaterThan(0);
    for (const op of mine) {
      const mk = decodeMvccKey(op.key);
      if (mk.ts !== undefined || op.value === null) continue;
      const h = decodeHead(op.key, op.value);
      expect(h.intent, `an intent written at ${mk.key.toString('latin1')}`).toBeNull();
      expect(h.committed).not.toBeNull();
    }
    // No transaction record (range-local) written by any command of the transaction's span.
    expect(ops.filter((op) => hasPrefix(decodeMvccKey(op.key).key, LOCAL_RANGE_PREFIX)).map((op) => decodeMvccKey(op.key).key.toString('hex'))).toEqual([]);
    const check = db.newTxn();
    const got = await check.run(batch((b) => {
      b.get(tkey(5));
      b.get(tkey(6));
    }));
    expect(got.map((x) => str((x as { value: Buffer | null }).value))).toEqual(['x', 'y']);
    await check.commit();
  });
});
