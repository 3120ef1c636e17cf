/**
 * A read-only batch that the DistSender splits over two ranges, where one
 * range's leaseholder serves its part above the transaction's timestamp (a
 * locking read met a newer committed version and the range re-read its batch
 * there, concurrency-manager evaluateReads) while the other range served its
 * part at the old timestamp. The transaction moves to the higher timestamp, so
 * every read of the batch must hold there: the coordinator reads the segment
 * again at it (txn-coord-sender). Before that, the part read at the old
 * timestamp was counted as read at the new one and a write between the two
 * went unseen — the kvnemesis violation of seed 90455.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, str } from './support.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';

const start = autoCloseClusters();
const MAX_OFFSET_MICROS = 100_000;

describe('a split read-only batch served at two timestamps', () => {
  it('reads every part at the higher timestamp: a write between the two is seen', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(1)], maxOffsetMicros: MAX_OFFSET_MICROS });
    const db = env.dbs[0] as TxnDB;
    const clock = env.c.node(0).clock;
    // T fixes its read timestamp t0 with a first read.
    const t = db.newTxn();
    await t.run(batch((b) => b.get(tkey(5))));
    const t0 = t.readTimestamp();
    // Writes beyond T's uncertainty interval (no uncertainty restart hides the bug): wait for the clock to pass it.
    const deadline = Date.now() + 5_000;
    while (clock.now().wall <= t0.wall + MAX_OFFSET_MICROS) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setImmediate(r));
    }
    // X writes key 0 (range A) at tx, then W writes key 2 (range B) at t1 > tx.
    await db.runTxn(async (x) => x.run(batch((b) => b.put(tkey(0), Buffer.from('x')))));
    await db.runTxn(async (w) => w.run(batch((b) => b.put(tkey(2), Buffer.from('w')))));
    // T: one segment, a scan of range A and a locking read of key 2 on range B, which meets W's newer version.
    const [scan, get] = await t.run(
      batch((b) => {
        b.scan(tkey(0), tkey(1));
        b.get(tkey(2), 'exclusive');
      }),
    );
    expect(get?.kind === 'get' ? str(get.value) : undefined).toBe('w');
    // T now reads at or above W's commit, so also above X's: the scan must contain X's write.
    expect(scan?.kind === 'scan' ? scan.rows.map((r) => str(r.value)) : undefined).toEqual(['x']);
    await t.commit();
  }, 60_000);
});
