/**
 * Issue 5 (session 5): a transaction restarted after a failed refresh must
 * start its new epoch at or above the timestamp it tried to refresh to.
 *
 * A refresh to ts reads the transaction's read spans at ts, and every range
 * whose part succeeded records them in its timestamp cache at ts under the
 * transaction's id. The timestamp cache keeps one (timestamp, txn) maximum
 * per key, and a write skips a maximum that is its own transaction's read
 * (concurrency-manager.ts prepare) — sound only while a transaction never
 * writes below its own recorded reads. When another range's part failed, the
 * coordinator restarted at max(now, old write ts): below ts whenever ts lay
 * ahead of the clock (a push to a reader's uncertainty limit, a fresh
 * range's timestamp-cache horizon). Another transaction's read of the key
 * between the new epoch's timestamp and ts was hidden under the own entry,
 * and the new epoch's write of the key was not pushed above it: the reader
 * committed having missed a write below its timestamp, whose writer was
 * never pushed — kvnemesis's stale-read shape.
 *
 * CockroachDB forwards the transaction's write timestamp before refreshing,
 * so a restart after a failed refresh starts at least there.
 */
import { describe, it, expect } from 'vitest';
import { formatTimestamp, tsLess, tsNext } from '../../src/util/hlc.js';
import { CairnError } from '../../src/util/errors.js';
import { adminSplit } from '../../src/kv/split.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, str } from './support.js';

const start = autoCloseClusters();

describe('restart after a failed refresh (issue 5)', () => {
  it('starts the new epoch at or above the refresh timestamp, so its writes land above reads hidden under its own', async () => {
    // A max offset of 0.5 s (leases of 4 s, to stay clear of stasis): the fresh range's horizon lies 1 s ahead, and
    // the refresh there waits for the clock only until 0.5 s ahead — the restart comes well below it.
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(10), tkey(20)], maxOffsetMicros: 500_000, settings: { leaseDurationMicros: 4_000_000 } });
    const [db, db2] = env.dbs as [NonNullable<(typeof env.dbs)[0]>, NonNullable<(typeof env.dbs)[1]>];
    const a = tkey(1); // r: [.., 10)
    const b = tkey(11); // r: [10, 20)
    const w = tkey(25);

    // A reads a and b at T0.
    const A = db.newTxn();
    await A.run(batch((q) => {
      q.get(a);
      q.get(b);
    }));
    const t0 = A.readTimestamp();
    // C commits a write of b above T0: A's refresh of b will fail.
    const C = db2.newTxn();
    await C.commitInBatch(batch((q) => q.put(b, Buffer.from('c'))));
    expect(tsLess(t0, C.provisionalCommitTimestamp())).toBe(true);
    // A fresh range at w: its timestamp cache starts 2 max offsets ahead of the clock, so A's write there is
    // pushed into the future and A refreshes {a, b} to that timestamp: a succeeds (recorded at Tr under A's id),
    // b fails.
    await adminSplit(env.ds[0] as NonNullable<(typeof env.ds)[0]>, w);
    let err: unknown = null;
    await A.run(batch((q) => q.put(w, Buffer.from('a0')))).catch((e: unknown) => (err = e));
    expect(err instanceof CairnError && err.retryable, `A's refresh failed retryably (got ${String(err)})`).toBe(true);
    await A.restart();

    // B reads a just above A's new timestamp (fixed, so no clock timing matters): below the refresh timestamp,
    // its entry hides under A's own.
    const B = db2.newTxn({ asOf: tsNext(A.readTimestamp()) });
    const seen = str(((await B.run(batch((q) => q.get(a))))[0] as { value: Buffer | null }).value);
    const readTs = B.readTimestamp();
    await B.commit();
    expect(seen).toBeNull();

    // A's new epoch writes a and commits: its write must land above B's read.
    await A.commitInBatch(batch((q) => q.put(a, Buffer.from('a1'))));
    const commitTs = A.provisionalCommitTimestamp();
    console.log(`B read a at ${formatTimestamp(readTs)}; A (restarted) wrote a and committed at ${formatTimestamp(commitTs)}`);
    expect(tsLess(readTs, commitTs), `A's write of a at ${formatTimestamp(commitTs)} landed at or below B's read at ${formatTimestamp(readTs)}`).toBe(true);
  }, 60_000);
});
