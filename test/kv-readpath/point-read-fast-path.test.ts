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
 *   (d) a locking get (FOR UPDATE) never takes it;
 *   (e) a get of a key under another transaction's unreplicated lock (FOR
 *       UPDATE: no intent in the data, only the lock table knows) waits for
 *       that transaction.
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

  it('(d) a locking get never takes the fast path', async () => {
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
});
