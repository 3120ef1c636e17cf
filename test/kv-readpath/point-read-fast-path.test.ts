/**
 * Replica's point-read fast path (replica.ts serveReadsFast, issue 6): a
 * batch of plain gets is served in one synchronous step, without latches or
 * a lock-table guard, only when nothing could make the sequenced path wait —
 * and it stays linearizable:
 *   (a) a plain get is served on the fast path and enters the timestamp
 *       cache (a later write below it is pushed above it);
 *   (b) a get of a key under a write's latch (its proposal held back from
 *       Raft) is not served until the write applies, and sees it;
 *   (c) a get of a key the lock table holds a lock on (another
 *       transaction's intent) waits for that transaction and sees its
 *       commit (or, having pushed it, reads below it); a get of another key
 *       meanwhile takes the fast path;
 *   (d) a non-transactional locking get never takes it (it locks nothing:
 *       the sequenced path serves it as a plain read);
 *   (e) a get of a key under another transaction's unreplicated lock (FOR
 *       UPDATE: no intent in the data, only the lock table knows) waits for
 *       that transaction;
 *   (f) a transaction's locking get of an unblocked key whose newest version
 *       is committed below it takes the fast path and leaves the same
 *       unreplicated lock as the sequenced path: another transaction's
 *       locking get and write wait for it, and run once it commits;
 *   (g) a transaction's locking get that would meet a newer committed
 *       version (the sequenced path bumps it above: WriteTooOld) or an
 *       intent — its own too — is not served fast, and reads what cmd-get
 *       reads.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, str } from '../kv-txn/support.js';
import { replicaTestingKnobs, type Replica } from '../../src/kv/replica.js';
import { leaseholder } from '../kv-locks/support.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';
import type { GetResponse } from '../../src/kv/api.js';
import { decodeBatchRepr } from '../../storage/engine.js';
import { decodeMvccKey } from '../../storage/mvcc-key.js';
import { ZERO_TIMESTAMP, tsLess, type Timestamp } from '../../src/util/hlc.js';

const start = autoCloseClusters();

afterEach(() => {
  replicaTestingKnobs.proposalFilter = undefined;
});

/** The leaseholder's replica of the range holding `key`. */
function leaseholderOf(c: TestCluster, key: Buffer): Replica {
  const r = leaseholder(c, key);
  if (r === null) throw new Error(`no leaseholder for ${key.toString('hex')}`);
  return r;
}

async function get(ds: DistSender, key: Buffer, lock?: 'exclusive'): Promise<{ value: string | null; ts: Timestamp }> {
  const res = await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [lock === undefined ? { kind: 'get', key } : { kind: 'get', key, lock }] });
  return { value: str((res.responses[0] as GetResponse).value), ts: res.timestamp };
}

/**
 * A plain get that gets past a lock holder as a client does: the waiter hands
 * a blocker that outlives its push delays (~300 ms, easily passed on a loaded
 * machine) back to its client as a WriteIntentError, and a raw DistSender has
 * no pusher — a read-only transaction's coordinator pushes it. Answers the
 * value and the timestamp it was read at.
 */
async function getPushing(db: TxnDB, key: Buffer): Promise<{ value: string | null; ts: Timestamp }> {
  const t = db.newTxn();
  const [res] = await t.run(batch((b) => b.get(key)));
  const ts = t.readTimestamp();
  await t.commit();
  return { value: str((res as { value: Buffer | null }).value), ts };
}

async function put(ds: DistSender, key: Buffer, value: string): Promise<void> {
  await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key, value: Buffer.from(value) }] });
}

/**
 * A read blocked by a transaction's lock answers either after the commit
 * (the new value) or, having pushed the holder after the push delays (a
 * loaded machine can keep the holder from committing that long), below it:
 * the old value at a timestamp under the commit's. Anything else is not
 * linearizable.
 */
function expectOrdered(got: { value: string | null; ts: Timestamp }, old: string, written: string, commitTs: Timestamp): void {
  if (got.value === old) expect(tsLess(got.ts, commitTs)).toBe(true);
  else expect(got.value).toBe(written);
}

/** Resolves true if `p` settles within `ms` (a bounded look at whether a request is still blocked). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)));
  try {
    return await Promise.race([p.then(() => true, () => true), t]);
  } finally {
    clearTimeout(timer);
  }
}

describe('point-read fast path', () => {
  it('(a) serves a plain get unsequenced and records it in the timestamp cache', async () => {
    const { c, ds } = await startTxnCluster(start);
    const d = ds[0] as DistSender;
    await put(d, tkey(1), 'one');
    const r = leaseholderOf(c, tkey(1));
    // The put is acknowledged once committed, maybe before the leaseholder applied it (its write latch still held,
    // and a get would rightly take the slow path): wait for the apply — sooner reached now that a node's calls to
    // itself skip the socket (src/rpc/local-call.ts), which made this race show under load.
    await c.waitFor(() => !r.concurrency.latches.writeLatchedAt(tkey(1)), 5_000, 'the put to apply on the leaseholder');
    const before = r.concurrency.fastPointReads;
    const got = await get(d, tkey(1));
    expect(got.value).toBe('one');
    expect(r.concurrency.fastPointReads).toBe(before + 1);
    // The read holds against later writers: the cache covers the key at the read's timestamp.
    const max = r.concurrency.tscache.getMax({ key: tkey(1), endKey: null }).ts;
    expect(tsLess(max, got.ts)).toBe(false);
    // Nothing is left behind: no latches (a lease extension may hold some for a moment), no lock-table entries.
    await c.waitFor(() => r.concurrency.activeRequests === 0, 5_000, 'no request holding or waiting for latches');
    expect(r.concurrency.lockTable.hasLockAt(tkey(1))).toBe(false);
  });

  it('(b) a get under a write latch waits for the write to apply and sees it', async () => {
    const { c, ds } = await startTxnCluster(start);
    const d = ds[0] as DistSender;
    await put(d, tkey(2), 'old');
    const r = leaseholderOf(c, tkey(2));
    // Hold the write's proposal back from Raft: its latches stay held.
    let held = true;
    replicaTestingKnobs.proposalFilter = (rep, cmd) =>
      held && rep === r && !cmd.isLeaseRequest && decodeBatchRepr(cmd.repr).some((op) => decodeMvccKey(op.key).key.equals(tkey(2))) ? 'hold' : undefined;
    const w = put(d, tkey(2), 'new');
    await c.waitFor(() => r.concurrency.latches.writeLatchedAt(tkey(2)), 5_000, "the held write latch");
    expect(r.concurrency.latches.writeLatchedAt(tkey(2))).toBe(true);
    const fast0 = r.concurrency.fastPointReads;
    const g = get(d, tkey(2));
    expect(await settlesWithin(g, 150)).toBe(false);
    expect(r.concurrency.fastPointReads).toBe(fast0);
    held = false; // the next re-proposal goes to Raft
    await w;
    expect((await g).value).toBe('new');
  });

  it('(c) a get of a locked key waits for the lock holder; other keys stay fast', async () => {
    const { c, ds, dbs } = await startTxnCluster(start);
    const d = ds[0] as DistSender;
    await put(d, tkey(3), 'before');
    await put(d, tkey(4), 'other');
    const txn = dbs[0]!.newTxn();
    await txn.run(batch((b) => b.put(tkey(3), Buffer.from('after'))));
    const r = leaseholderOf(c, tkey(3));
    // The intent's lock reaches the lock table when the write applies on the leaseholder.
    await c.waitFor(() => r.concurrency.lockTable.hasLockAt(tkey(3)), 5_000, "the intent's lock");
    expect(r.concurrency.lockTable.hasLockAt(tkey(3))).toBe(true);
    const fast0 = r.concurrency.fastPointReads;
    const g = getPushing(dbs[1]!, tkey(3));
    expect(await settlesWithin(g, 150)).toBe(false);
    expect((await get(d, tkey(4))).value).toBe('other');
    expect(r.concurrency.fastPointReads).toBe(fast0 + 1);
    await txn.commit();
    expectOrdered(await g, 'before', 'after', txn.provisionalCommitTimestamp());
  });

  it('(d) a non-transactional locking get never takes the fast path', async () => {
    const { c, ds } = await startTxnCluster(start);
    const d = ds[0] as DistSender;
    await put(d, tkey(5), 'x');
    const r = leaseholderOf(c, tkey(5));
    const fast0 = r.concurrency.fastPointReads;
    expect((await get(d, tkey(5), 'exclusive')).value).toBe('x');
    expect(r.concurrency.fastPointReads).toBe(fast0);
  });

  it('(e) a get of a key locked FOR UPDATE (no intent) waits for the lock holder', async () => {
    const { c, ds, dbs } = await startTxnCluster(start);
    const d = ds[0] as DistSender;
    await put(d, tkey(6), 'v1');
    const txn = dbs[0]!.newTxn();
    await txn.run(batch((b) => b.get(tkey(6), 'exclusive')));
    const r = leaseholderOf(c, tkey(6));
    expect(r.concurrency.lockTable.hasLockAt(tkey(6))).toBe(true);
    const fast0 = r.concurrency.fastPointReads;
    const g = getPushing(dbs[1]!, tkey(6));
    expect(await settlesWithin(g, 150)).toBe(false);
    // Not after the commit: a read re-sent once the lock is gone may take the fast path.
    expect(r.concurrency.fastPointReads).toBe(fast0);
    await txn.run(batch((b) => b.put(tkey(6), Buffer.from('v2'))));
    await txn.commit();
    expectOrdered(await g, 'v1', 'v2', txn.provisionalCommitTimestamp());
  });

  it('(f) a transaction\'s locking get takes the fast path and leaves its unreplicated lock', async () => {
    const { c, ds, dbs } = await startTxnCluster(start);
    const d = ds[0] as DistSender;
    await put(d, tkey(7), 'v1');
    const r = leaseholderOf(c, tkey(7));
    await c.waitFor(() => !r.concurrency.latches.writeLatchedAt(tkey(7)), 5_000, 'the put to apply on the leaseholder');
    const fast0 = r.concurrency.fastPointReads;
    const locking0 = r.concurrency.fastLockingReads;
    const t1 = dbs[0]!.newTxn();
    const [got] = await t1.run(batch((b) => b.get(tkey(7), 'exclusive')));
    expect(str((got as { value: Buffer | null }).value)).toBe('v1');
    expect(r.concurrency.fastPointReads).toBe(fast0 + 1);
    expect(r.concurrency.fastLockingReads).toBe(locking0 + 1);
    // The lock, unreplicated (no intent in the data), held by t1.
    const snap = r.concurrency.lockTable.snapshot().find((l) => l.key.equals(tkey(7)));
    expect(snap?.holder?.durability).toBe('unreplicated');
    expect(snap?.holder?.txn.id.equals(t1.txnId)).toBe(true);
    // The read entered the timestamp cache at t1's read timestamp.
    expect(tsLess(r.concurrency.tscache.getMax({ key: tkey(7), endKey: null }).ts, t1.readTimestamp())).toBe(false);
    // Another transaction's locking get and its write of the key wait for t1 (neither served while t1 holds the lock).
    const t2 = dbs[1]!.newTxn();
    const waits0 = r.concurrency.counters.lockWaits;
    const g2 = t2.run(batch((b) => b.get(tkey(7), 'exclusive')));
    expect(await settlesWithin(g2, 150)).toBe(false);
    expect(r.concurrency.fastLockingReads).toBe(locking0 + 1);
    await t1.run(batch((b) => b.put(tkey(7), Buffer.from('v2'))));
    await t1.commit();
    // t2 was queued behind t1: it reads t1's write (its read moved above t1's commit) or, having pushed t1 after
    // the push delays, t1 found itself aborted — t1 committed here, so only the first can happen.
    const [got2] = await g2;
    expect(str((got2 as { value: Buffer | null }).value)).toBe('v2');
    // It was served after waiting in the key's queue (counted as cairn_kv_lock_waits; more than once if it went back to its client to push).
    expect(r.concurrency.counters.lockWaits).toBeGreaterThanOrEqual(waits0 + 1);
    await t2.run(batch((b) => b.put(tkey(7), Buffer.from('v3'))));
    await t2.commit();
    expect((await get(d, tkey(7))).value).toBe('v3');
  });

  it('(g) a locking get meeting a newer version or an intent is served on the sequenced path', async () => {
    const { c, ds, dbs } = await startTxnCluster(start);
    const d = ds[0] as DistSender;
    await put(d, tkey(8), 'old');
    const r = leaseholderOf(c, tkey(8));
    // A transaction whose read timestamp lies below a version written after it began.
    const t1 = dbs[0]!.newTxn();
    await t1.run(batch((b) => b.get(tkey(9))));
    await put(d, tkey(8), 'new');
    await c.waitFor(() => !r.concurrency.latches.writeLatchedAt(tkey(8)), 5_000, 'the put to apply on the leaseholder');
    const locking0 = r.concurrency.fastLockingReads;
    const bumps0 = r.concurrency.counters.readBumps;
    const [got] = await t1.run(batch((b) => b.get(tkey(8), 'exclusive')));
    // cmd-get's WriteTooOld, evaluated again above the newer version: it reads 'new', the lock is held.
    expect(str((got as { value: Buffer | null }).value)).toBe('new');
    expect(r.concurrency.fastLockingReads).toBe(locking0);
    expect(r.concurrency.counters.readBumps).toBe(bumps0 + 1);
    expect(r.concurrency.lockTable.snapshot().find((l) => l.key.equals(tkey(8)))?.holder?.txn.id.equals(t1.txnId)).toBe(true);
    await t1.commit();
    // Its own intent: a locking get of a key the transaction wrote reads its own write, on the sequenced path.
    const t2 = dbs[0]!.newTxn();
    await t2.run(batch((b) => b.put(tkey(10), Buffer.from('mine'))));
    await c.waitFor(() => r.concurrency.lockTable.hasLockAt(tkey(10)) || leaseholderOf(c, tkey(10)).concurrency.lockTable.hasLockAt(tkey(10)), 5_000, "t2's intent's lock");
    const r10 = leaseholderOf(c, tkey(10));
    const l10 = r10.concurrency.fastLockingReads;
    const [own] = await t2.run(batch((b) => b.get(tkey(10), 'exclusive')));
    expect(str((own as { value: Buffer | null }).value)).toBe('mine');
    expect(r10.concurrency.fastLockingReads).toBe(l10);
    await t2.commit();
  });
});
