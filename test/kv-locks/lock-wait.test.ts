/**
 * The lock table in the replica's request path (issue 5, Server side "Lock
 * table"; src/kv/concurrency-manager.ts): a request that meets another
 * transaction's lock waits in the key's queue on the leaseholder instead of
 * going back to its client, is woken by the holder's commit, abort or
 * resolution, and the table is cleared (waiters woken to rediscover) when the
 * lease moves, the range splits, or the replica stops. Also SELECT … FOR
 * UPDATE (GetRequest.lock = 'exclusive'): it blocks other writers, not
 * plain readers; hot-key read-modify-write queues instead of restarting.
 */
import { describe, it, expect } from 'vitest';
import { CairnError } from '../../src/util/errors.js';
import { compareTimestamps, type Timestamp } from '../../src/util/hlc.js';
import { adminSplit } from '../../src/kv/split.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import type { Replica } from '../../src/kv/replica.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';
import type { TxnCoordSender } from '../../src/kv/client/txn-coord-sender.js';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, str, type TxnEnv } from '../kv-txn/support.js';
import { leaseholder, until } from './support.js';

const start = autoCloseClusters();
const v = (s: string): Buffer => Buffer.from(s);

/**
 * Settings for the tests that depend on who is served first. Queue order is
 * promised only while the lease stays put (a lease changing hands clears the
 * lock table; woken waiters re-queue in rediscovery order) and while each
 * waiter keeps its place (after a few push delays still blocked by the same
 * transaction, a waiter leaves the queue for its client to push, and
 * re-queues at the end). With the test defaults (100 ms elections, 1 s
 * leases, 100 ms push delays) a loaded machine did both mid-test and flipped
 * the order; 1 s elections, 10 s leases and 5 s push delays keep both still.
 */
const STILL = { electionTicks: 100, leaseDurationMicros: 10_000_000, lockPushDelayMs: 5_000 };

/** No waiter left its queue to push (the regime the FIFO tests are about). */
function expectNoPushHandoffs(c: TestCluster, key: Buffer): void {
  expect(leaseholder(c, key)?.concurrency.counters.pushHandoffs).toBe(0);
}

/** Requests waiting in the lock table of the leaseholder of `key`. */
function waiters(c: TestCluster, key: Buffer): number {
  return leaseholder(c, key)?.concurrency.lockTable.metrics().waiters ?? 0;
}

function db(env: TxnEnv, i = 0): TxnDB {
  return env.dbs[i] as TxnDB;
}

async function getNow(env: TxnEnv, key: Buffer): Promise<string | null> {
  const t = db(env).newTxn();
  const r = await t.run(batch((b) => b.get(key)));
  await t.commit();
  return str((r[0] as { value: Buffer | null }).value);
}

/** A transaction of node 0 holding an intent of `value` on `key`, still open. */
async function holding(env: TxnEnv, key: Buffer, value: string): Promise<TxnCoordSender> {
  const t = db(env).newTxn();
  await t.run(batch((b) => b.put(key, v(value))));
  return t;
}

describe('lock table in the request path', () => {
  it('a writer blocked by an intent waits on the leaseholder and proceeds when the holder commits', async () => {
    const env = await startTxnCluster(start, { nodes: 3 });
    const k = tkey(1);
    const holder = await holding(env, k, 'h');
    const pushes0 = db(env, 1).pusher.metrics.pushes;
    let done = false;
    const writer = db(env, 1)
      .newTxn()
      .commitInBatch(batch((b) => b.put(k, v('w'))))
      .then(() => (done = true));
    // The writer's request is queued in the lock table (discovered intent), not pushing from its client.
    await until('the writer to queue', () => waiters(env.c, k) === 1);
    expect(done).toBe(false);
    await holder.commit();
    await writer;
    expect(await getNow(env, k)).toBe('w');
    expect(leaseholder(env.c, k)?.concurrency.lockTable.metrics().locks).toBe(0);
    // Woken by the commit's resolution well within the push delay: at most the pushes of a slow machine.
    expect(db(env, 1).pusher.metrics.pushes - pushes0).toBeLessThanOrEqual(2);
  });

  it('waiters queue fairly behind a lock and are all served when it is released', async () => {
    const env = await startTxnCluster(start, { nodes: 1, settings: STILL });
    const k = tkey(2);
    const holder = await holding(env, k, '0');
    const order: number[] = [];
    const writers = [1, 2, 3].map(async (i) => {
      // Queue one after the other, so the expected order is known. Each locks k (FOR UPDATE) and then writes it:
      // a locking read meeting its predecessor's newer version is read again on the leaseholder, so no request
      // goes back to its client (and to the end of the queue) on the way.
      await until(`writer ${i} to be next`, () => waiters(env.c, k) === i - 1);
      await db(env).runTxn(async (t) => {
        const r = await t.run(batch((b) => b.get(k, 'exclusive')));
        order.push(Number(str((r[0] as { value: Buffer | null }).value)));
        await t.commitInBatch(batch((b) => b.put(k, v(String(i)))));
      });
    });
    await until('three waiters', () => waiters(env.c, k) === 3);
    const lt = leaseholder(env.c, k)?.concurrency.lockTable;
    expect(lt?.snapshot()[0]?.queue.map((q) => q.role)).toEqual(['waiting', 'waiting', 'waiting']);
    await holder.commit();
    await Promise.all(writers);
    // Each writer read its predecessor's value: served in arrival order.
    expect(order).toEqual([0, 1, 2]);
    expectNoPushHandoffs(env.c, k);
    expect(await getNow(env, k)).toBe('3');
  });

  it('a rolled-back holder releases its waiters, who do not see its write', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const k = tkey(3);
    const holder = await holding(env, k, 'aborted');
    const reader = getNow(env, k);
    await until('the reader to queue', () => waiters(env.c, k) === 1);
    await holder.rollback();
    expect(await reader).toBe(null);
  });

  it('a lease transfer clears the lock table: the waiter is served by the new leaseholder', async () => {
    // The lease must stay where leaseholder() finds it until the test moves it. With the test settings (100 ms
    // elections, 1 s leases) a machine at load ~30 moved it on its own in between, and the transfer was refused:
    // 'NotLeaseHolderError … lease held by n1 (r1/1, seq 2): the lease changed' (coalesce, s7 23:07). As the FIFO tests.
    const env = await startTxnCluster(start, { nodes: 3, settings: STILL });
    const k = tkey(4);
    const holder = db(env).newTxn();
    await holder.run(batch((b) => b.get(k, 'exclusive')));
    let done = false;
    const written: { ts?: Timestamp } = {};
    const writer = db(env, 1)
      .runTxn(async (t) => {
        await t.commitInBatch(batch((b) => b.put(k, v('w'))));
        written.ts = t.provisionalCommitTimestamp();
      })
      .then(() => (done = true));
    await until('the writer to queue', () => waiters(env.c, k) === 1);
    const lh = leaseholder(env.c, k) as Replica;
    const target = lh.desc.replicas.find((r) => r.replicaId !== lh.replicaId) as { replicaId: number };
    await env.c.store(lh.replica.nodeId - 1).transferLease(lh.rangeId, target.replicaId);
    // The unreplicated FOR UPDATE lock was leaseholder memory: it is gone, and the writer goes ahead.
    await until('the writer to finish', () => done, 10_000);
    await writer;
    expect(lh.concurrency.lockTable.metrics().locks).toBe(0);
    // The lock was best-effort (as CockroachDB's unreplicated locks): the writer went ahead. The holder only read,
    // below the writer's write, so it still commits — serialized before the writer.
    await holder.commit();
    expect(compareTimestamps(holder.provisionalCommitTimestamp(), written.ts as Timestamp)).toBeLessThan(0);
    expect(await getNow(env, k)).toBe('w');
  });

  it('a split clears the lock table: a waiter on the right-hand side rediscovers the intent and still waits', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const k = tkey(50);
    const holder = await holding(env, k, 'h');
    let done = false;
    const writer = db(env)
      .runTxn((t) => t.commitInBatch(batch((b) => b.put(k, v('w')))))
      .then(() => (done = true));
    await until('the writer to queue', () => waiters(env.c, k) === 1);
    await adminSplit(env.ds[0] as DistSender, tkey(10));
    // The right-hand side holds k now; the writer is queued there again (the intent was rediscovered).
    await until('the writer to queue on the right-hand side', () => waiters(env.c, k) === 1 && (leaseholder(env.c, k)?.desc.startKey.equals(tkey(10)) ?? false));
    expect(done).toBe(false);
    await holder.commit();
    await writer;
    expect(await getNow(env, k)).toBe('w');
  });

  it('a stopped replica wakes its waiters', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const k = tkey(6);
    const holder = await holding(env, k, 'h');
    const writer = db(env)
      .newTxn()
      .commitInBatch(batch((b) => b.put(k, v('w'))))
      .then(
        () => null,
        (e: unknown) => e,
      );
    await until('the writer to queue', () => waiters(env.c, k) === 1);
    const lh = leaseholder(env.c, k) as Replica;
    const guard = lh.concurrency.lockTable.snapshot()[0]?.queue[0];
    expect(guard?.role).toBe('waiting');
    lh.stop();
    // Woken at once: the table is empty and the request re-sequenced into a stopped replica, which refuses it
    // (the DistSender then retries elsewhere until its own deadline; the writer's outcome is not this test's).
    expect(lh.concurrency.lockTable.metrics()).toMatchObject({ locks: 0, waiters: 0 });
    await until('the woken request to leave the latches', () => lh.concurrency.activeRequests === 0);
    void writer;
  });
});

describe('pushing from the client after the push delays', () => {
  it('a waiter of higher rank that is not in a waits-for cycle never force-aborts a live holder', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const k = tkey(12);
    const holder = await holding(env, k, 'h');
    // The waiter outranks the holder (same priority, larger id): before the fix, its own registration as the
    // holder's waiter read as a cycle and it aborted the holder.
    let waiter = db(env).newTxn();
    while (Buffer.compare(waiter.txnId, holder.txnId) <= 0) waiter = db(env).newTxn();
    const waits0 = db(env).pusher.metrics.waits;
    const w = waiter.commitInBatch(batch((b) => b.put(k, v('w'))));
    // Past the push delays (3 × 100 ms) the waiter's client pushes, and is told to wait (a cycle would force instead).
    await until('the waiter to push from its client and wait', () => db(env).pusher.metrics.waits > waits0, 10_000);
    expect(db(env).pusher.metrics.deadlocksBroken).toBe(0);
    await holder.commit();
    await w;
    expect(await getNow(env, k)).toBe('w');
  });
});

describe('SELECT FOR UPDATE (GetRequest.lock = exclusive)', () => {
  /**
   * A FOR UPDATE holder on k (value '0'), then a writer of 'w' and a locking reader queued behind it in the
   * order `first`; the holder commits 'h'. The queue order is made explicit: the second request starts only once
   * the first is in the lock table — a request's arrival order at the leaseholder is not its call order (a call
   * to the node itself is served in process, one microtask later, while a peer's call is still in its socket).
   * Before that, the first test assumed call order: with local calls the locking reader, on the leaseholder's
   * node, came first, read 'h' and looked stale — it was not (the writer committed above its read).
   */
  async function writerAndLocker(first: 'writer' | 'locker', localCalls: boolean): Promise<{ locked: string | null; lockerTs: Timestamp; writerTs: Timestamp }> {
    // Queue order holds only while the lease stays put and waiters keep their places (STILL; the clearing path
    // has its own test). Seen at load ~25 with 10 s leases but 100 ms push delays: the writer, queued first, left
    // to push the holder before its commit landed and re-queued behind the locker ('expected h to be w').
    const env = await startTxnCluster(start, { nodes: 3, localCalls, settings: STILL });
    const k = tkey(first === 'writer' ? 7 : 13);
    await db(env).runTxn((t) => t.commitInBatch(batch((b) => b.put(k, v('0')))));
    const holder = db(env).newTxn();
    const r = await holder.run(batch((b) => b.get(k, 'exclusive')));
    expect(str((r[0] as { value: Buffer | null }).value)).toBe('0');
    let wrote = false;
    const ts: { writer?: Timestamp; locker?: Timestamp } = {};
    const startWriter = (): Promise<void> =>
      db(env, 1)
        .runTxn(async (t) => {
          await t.commitInBatch(batch((b) => b.put(k, v('w'))));
          ts.writer = t.provisionalCommitTimestamp();
        })
        .then(() => void (wrote = true));
    const startLocker = (): Promise<string | null> =>
      db(env, 2).runTxn(async (t) => {
        const x = await t.run(batch((b) => b.get(k, 'exclusive')));
        await t.commit();
        ts.locker = t.provisionalCommitTimestamp();
        return str((x[0] as { value: Buffer | null }).value);
      });
    let writer: Promise<void>;
    let locker: Promise<string | null>;
    if (first === 'writer') {
      writer = startWriter();
      await until('the writer to queue', () => waiters(env.c, k) === 1);
      locker = startLocker();
    } else {
      locker = startLocker();
      await until('the locking reader to queue', () => waiters(env.c, k) === 1);
      writer = startWriter();
    }
    await until('writer and locking reader to queue', () => waiters(env.c, k) === 2);
    expect(wrote).toBe(false);
    await holder.commitInBatch(batch((b) => b.put(k, v('h'))));
    const [, locked] = await Promise.all([writer, locker]);
    expect(await getNow(env, k)).toBe('w');
    expect(leaseholder(env.c, k)?.concurrency.lockTable.metrics().locks).toBe(0);
    expectNoPushHandoffs(env.c, k);
    return { locked, lockerTs: ts.locker as Timestamp, writerTs: ts.writer as Timestamp };
  }

  for (const localCalls of [true, false]) {
    const path = localCalls ? 'calls to self in process' : 'calls to self over a socket';
    it(`blocks other writers and locking readers until the holder commits (${path})`, async () => {
      // The locking reader queued after the writer: it sees the writer's value, serialized after it.
      const { locked, lockerTs, writerTs } = await writerAndLocker('writer', localCalls);
      expect(locked).toBe('w');
      expect(compareTimestamps(writerTs, lockerTs)).toBeLessThan(0);
    });

    it(`a locking reader queued before a writer reads the holder's value, and the writer commits above its read (${path})`, async () => {
      // Served first, it reads 'h'; the writer's commit is pushed above that read (timestamp cache), never under it.
      const { locked, lockerTs, writerTs } = await writerAndLocker('locker', localCalls);
      expect(locked).toBe('h');
      expect(compareTimestamps(lockerTs, writerTs)).toBeLessThan(0);
    });
  }

  it('a locking read above a newer committed version moves up and reads it (no restart)', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const k = tkey(8);
    const t = db(env).newTxn();
    const first = await t.run(batch((b) => b.get(tkey(9))));
    expect(first).toHaveLength(1);
    // A newer committed version of k after t's read timestamp.
    await db(env).runTxn((w) => w.commitInBatch(batch((b) => b.put(k, v('new')))));
    const restarts = db(env).metrics.restarts;
    const r = await t.run(batch((b) => b.get(k, 'exclusive')));
    expect(str((r[0] as { value: Buffer | null }).value)).toBe('new');
    await t.commit();
    expect(db(env).metrics.restarts).toBe(restarts);
  });

  it('hot-key read-modify-write with FOR UPDATE queues: no lost update, no restart', async () => {
    const env = await startTxnCluster(start, { nodes: 3 });
    const k = tkey(11);
    const clients = 8;
    const each = 5;
    const restarts0 = env.dbs.reduce((a, d) => a + d.metrics.restarts, 0);
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        for (let i = 0; i < each; i++) {
          await db(env, c % 3).runTxn(async (t) => {
            const r = await t.run(batch((b) => b.get(k, 'exclusive')));
            const n = Number(str((r[0] as { value: Buffer | null }).value) ?? '0');
            await t.commitInBatch(batch((b) => b.put(k, v(String(n + 1)))));
          });
        }
      }),
    );
    expect(await getNow(env, k)).toBe(String(clients * each));
    expect(env.dbs.reduce((a, d) => a + d.metrics.restarts, 0) - restarts0).toBe(0);
  });
});
