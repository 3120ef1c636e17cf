/**
 * Issue 5 (session 5): the read a conditional put made stays protected after
 * a savepoint rollback ignores its write (CockroachDB #175036).
 *
 * A successful cput read its key (it checked the value) and left an intent;
 * the timestamp cache did not learn that read, since the intent kept any
 * writer below it out. But a savepoint rollback ignores the write, and
 * resolution at commit removes such an intent: a transaction with an older
 * timestamp could then write the key below the committed reader's timestamp,
 * unpushed — kvnemesis seed 92009: w1t66's rolled-back cput read key 13 as
 * absent at …194.811876 and committed; w2t45 then wrote key 13 at
 * …194.795892,1, below it.
 */
import { describe, it, expect } from 'vitest';
import { formatTimestamp, tsLess } from '../../src/util/hlc.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch } from './support.js';

const start = autoCloseClusters();

describe('a rolled-back conditional put (issue 5)', () => {
  it('keeps its read in the timestamp cache: an older writer lands above the committed reader', async () => {
    const { dbs } = await startTxnCluster(start, { nodes: 3 });
    const db = dbs[0] as NonNullable<(typeof dbs)[0]>;
    const k = tkey(13);
    const other = tkey(5);
    const B = db.newTxn(); // the older transaction
    const A = db.newTxn();
    expect(tsLess(B.readTimestamp(), A.readTimestamp())).toBe(true);
    const sp = await A.createSavepoint();
    await A.run(batch((q) => q.cput(k, Buffer.from('a'), null))); // reads k: absent
    await A.rollbackToSavepoint(sp);
    await A.commitInBatch(batch((q) => q.put(other, Buffer.from('a'))));
    await db.resolver.drain();
    const readTs = A.provisionalCommitTimestamp();

    await B.commitInBatch(batch((q) => q.put(k, Buffer.from('b'))));
    const writeTs = B.provisionalCommitTimestamp();
    console.log(`A read k (absent) and committed at ${formatTimestamp(readTs)}; B wrote k at ${formatTimestamp(writeTs)}`);
    expect(tsLess(readTs, writeTs), `B's write at ${formatTimestamp(writeTs)} landed at or below A's committed read at ${formatTimestamp(readTs)}`).toBe(true);
  }, 60_000);
});
