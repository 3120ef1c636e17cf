// Lock-table limits (issue 5: "waiting is bounded and observable"): the
// wait-queue length bound, the lock-count bound, and the snapshot/metrics
// a status page reads. Behaviour is in the transcripts
// (src/kv/concurrency/testdata/lock_table/).
import { describe, it, expect } from 'vitest';
import { LockTable, LockWaitQueueFullError, type LockTxn } from '../../src/kv/concurrency/lock-table.js';
import { ts } from '../../src/util/hlc.js';
import { k } from './support.js';

const txn = (name: string): LockTxn => ({ id: Buffer.from(name), epoch: 0, writeTimestamp: ts(10) });
const write = (t: LockTxn | undefined, key: string) => ({ txn: t, timestamp: ts(10), spans: [{ access: 'write' as const, span: { key: k(key) } }] });

describe('LockTable limits', () => {
  it('refuses a writer when the key already has maxWaitQueueLength waiting writers, leaving it unqueued', () => {
    const lt = new LockTable({ maxWaitQueueLength: 2 });
    lt.acquireLock(txn('h'), k('a'));
    lt.scanAndEnqueue(write(txn('w1'), 'a'));
    lt.scanAndEnqueue(write(txn('w2'), 'a'));
    expect(() => lt.scanAndEnqueue(write(txn('w3'), 'a'))).toThrow(LockWaitQueueFullError);
    try {
      lt.scanAndEnqueue(write(txn('w4'), 'a'));
    } catch (e) {
      expect((e as LockWaitQueueFullError).code).toBe('concurrency.lock_wait_queue_full');
      expect((e as LockWaitQueueFullError).retryable).toBe(true);
    }
    // Readers are not limited.
    expect(lt.scanAndEnqueue({ txn: txn('r'), timestamp: ts(10), spans: [{ access: 'read', span: { key: k('a') } }] }).shouldWait).toBe(true);
    expect(lt.metrics()).toMatchObject({ locks: 1, held: 1, waiters: 3 });
  });

  it('past maxLocks forgets only replicated locks nobody waits for', () => {
    const lt = new LockTable({ maxLocks: 3 });
    lt.acquireLock(txn('t1'), k('a'), 'replicated');
    lt.acquireLock(txn('t1'), k('b'), 'unreplicated');
    lt.acquireLock(txn('t1'), k('c'), 'replicated');
    const waiter = lt.scanAndEnqueue(write(txn('t2'), 'c'));
    expect(waiter.shouldWait).toBe(true);
    lt.acquireLock(txn('t1'), k('d'), 'replicated'); // over the bound: a goes, b (unreplicated) and c (waited for) stay
    expect(lt.snapshot().map((l) => l.key.toString())).toEqual(['b', 'c', 'd']);
    expect(lt.metrics()).toMatchObject({ locks: 3, cleared: 1 });
    expect(waiter.state).toMatchObject({ kind: 'waitFor', held: true });
  });

  it('snapshot and metrics describe holders, claimants and waiters', () => {
    const lt = new LockTable();
    lt.acquireLock(txn('t1'), k('a'));
    const w = lt.scanAndEnqueue({ ...write(txn('t2'), 'a'), name: 'w' });
    const n = lt.scanAndEnqueue({ ...write(undefined, 'b'), name: 'n' });
    lt.scanAndEnqueue(write(txn('t3'), 'a'));
    expect(n.shouldWait).toBe(false); // no lock on b: nothing to queue at
    expect(lt.snapshot()).toEqual([
      {
        key: k('a'),
        holder: { txn: txn('t1'), durability: 'replicated' },
        queue: [
          { seq: w.seq, name: 'w', txn: txn('t2'), access: 'write', role: 'waiting' },
          { seq: 3, name: undefined, txn: txn('t3'), access: 'write', role: 'waiting' },
        ],
      },
    ]);
    lt.updateLocks({ span: { key: k('a') }, txn: txn('t1'), status: 'committed' });
    expect(lt.snapshot()[0]?.queue.map((q) => q.role)).toEqual(['claimant', 'waiting']);
    expect(lt.metrics()).toMatchObject({ locks: 1, held: 0, waiters: 1, claimants: 1 });
    expect(lt.guardState(w)).toBe('doneWaiting');
  });
});

// The replica's request path (src/kv/concurrency-manager.ts) clears the table on lease changes, splits, merges and
// replica removal, and acquires after evaluation without trusting that the table still agrees with it.
describe('LockTable clear and tryAcquireLock', () => {
  it('clear forgets every lock and wakes every waiter, whose re-scan then finds nothing', async () => {
    const lt = new LockTable();
    lt.acquireLock(txn('h1'), k('a'));
    lt.acquireLock(txn('h2'), k('b'), 'unreplicated');
    const wa = lt.scanAndEnqueue(write(txn('w1'), 'a'));
    const wb = lt.scanAndEnqueue(write(txn('w2'), 'b'));
    const waits = [lt.waitOn(wa), lt.waitOn(wb)];
    lt.clear();
    expect(await Promise.all(waits)).toEqual([{ kind: 'done' }, { kind: 'done' }]);
    expect(lt.metrics()).toMatchObject({ locks: 0, held: 0, waiters: 0 });
    expect(lt.scanAndEnqueue(write(txn('w1'), 'a'), wa).shouldWait).toBe(false);
  });

  it('tryAcquireLock refuses a key another transaction holds, and acquires or re-acquires otherwise', () => {
    const lt = new LockTable();
    expect(lt.tryAcquireLock(txn('t1'), k('a'), 'unreplicated')).toBe(true);
    expect(lt.tryAcquireLock(txn('t2'), k('a'))).toBe(false);
    expect(lt.snapshot()[0]?.holder).toEqual({ txn: txn('t1'), durability: 'unreplicated' });
    // The holder's own intent upgrades its lock to replicated.
    expect(lt.tryAcquireLock(txn('t1'), k('a'), 'replicated')).toBe(true);
    expect(lt.snapshot()[0]?.holder?.durability).toBe('replicated');
  });
});
