// The sequencer end to end with real latches, lock table, push policy and txn
// wait queue; only the KV side of a push (transaction records, intent
// resolution) is a small in-memory stand-in, as the Replica will
// provide it. Covers: waiting for a lock without holding latches, waking on
// commit, a 2-txn deadlock broken by aborting the victim, discovered intents,
// and cancellation leaving nothing behind.
import { describe, it, expect } from 'vitest';
import { ConcurrencyManager, type PushOutcome, type SequencedRequest, type RequestGuard } from '../../src/kv/concurrency/concurrency-manager.js';
import { LockWaitCancelledError, type LockTxn } from '../../src/kv/concurrency/lock-table.js';
import { decidePush, type TxnRecordStatus } from '../../src/kv/concurrency/push-policy.js';
import { TxnWaitQueue } from '../../src/kv/concurrency/txn-wait-queue.js';
import { CairnError } from '../../src/util/errors.js';
import { ts, tsNext, type Timestamp } from '../../src/util/hlc.js';
import { flushMicrotasks, k } from './support.js';

const ALL = { key: Buffer.alloc(0), endKey: Buffer.from([0xff]) };

/** Transaction records and intent resolution, as the KV layer will provide them. */
class Cluster {
  readonly twq = new TxnWaitQueue();
  readonly records = new Map<string, { txn: LockTxn; status: TxnRecordStatus; lastActive: Timestamp }>();
  now = ts(100);
  readonly cm: ConcurrencyManager;

  /** pushDelay: when waiters push (default at once). */
  constructor(pushDelay: () => PromiseLike<unknown> = () => Promise.resolve()) {
    this.cm = new ConcurrencyManager({ pusher: { pushDelay, push: (req, o) => this.push(req, o) } });
  }

  txn(name: string, priority = 1, at = 10): LockTxn {
    const txn: LockTxn = { id: Buffer.from(name), epoch: 0, writeTimestamp: ts(at), priority, minTimestamp: ts(at) };
    this.records.set(name, { txn, status: 'pending', lastActive: this.now });
    return txn;
  }

  /** Ends a transaction: its record, then its intents, then its waiters. */
  finish(name: string, status: 'committed' | 'aborted'): void {
    const r = this.records.get(name);
    if (r === undefined || r.status === 'committed' || r.status === 'aborted') return;
    r.status = status;
    this.cm.lockTable.updateLocks({ span: ALL, txn: r.txn, status });
    this.twq.updateTxn(name, status);
  }

  private async push(req: SequencedRequest, o: PushOutcome): Promise<void> {
    const pusherName = req.txn?.id.toString() ?? 'non-txn';
    const pusheeName = o.pushee.id.toString();
    const rec = this.records.get(pusheeName);
    if (rec === undefined) throw new Error(`unknown txn ${pusheeName}`);
    for (;;) {
      const d = decidePush({ status: rec.status, priority: rec.txn.priority ?? 1, writeTimestamp: rec.txn.writeTimestamp, lastActive: rec.lastActive }, { pushType: o.pushType, pusherPriority: req.txn?.priority ?? 1, pushTo: tsNext(req.timestamp), now: this.now, expiryMicros: 5_000_000 });
      if (d.kind === 'already-finalized' || d.kind === 'already-pushed') return;
      if (d.kind === 'push') return this.finish(pusheeName, 'aborted');
      const me = { id: pusherName, priority: req.txn?.priority ?? 1, minTimestamp: req.txn?.minTimestamp ?? req.timestamp };
      const w = this.twq.enqueue(me, { id: pusheeName, priority: rec.txn.priority ?? 1, minTimestamp: rec.txn.minTimestamp ?? rec.txn.writeTimestamp }, o.pushType, tsNext(req.timestamp));
      const r = await this.twq.wait(w, req.signal);
      if (r.kind === 'deadlock') {
        if (r.victim === pusherName) {
          this.finish(pusherName, 'aborted');
          throw new CairnError('kv.txn_aborted', `txn ${pusherName} aborted as a deadlock victim`, { retryable: true, sqlState: '40001' });
        }
        return this.finish(r.victim, 'aborted');
      }
      if (r.kind === 'pusher-finalized') throw new CairnError('kv.txn_aborted', `txn ${pusherName} finalized while pushing`, { retryable: true, sqlState: '40001' });
      return;
    }
  }
}

function request(name: string, txn: LockTxn | undefined, access: 'read' | 'write', key: string, signal?: AbortSignal): SequencedRequest {
  const spans = [{ access, span: { key: k(key) }, timestamp: txn?.writeTimestamp ?? ts(10) }] as const;
  return { name, txn, timestamp: txn?.writeTimestamp ?? ts(10), latchSpans: spans, lockSpans: spans, ...(signal === undefined ? {} : { signal }) };
}

/** Runs a request's sequencing in the background, recording how it ends. */
function start(c: Cluster, req: SequencedRequest): { guard: RequestGuard | null; error: unknown } {
  const r: { guard: RequestGuard | null; error: unknown } = { guard: null, error: null };
  c.cm.sequenceReq(req).then(
    (g) => (r.guard = g),
    (e: unknown) => (r.error = e),
  );
  return r;
}

describe('ConcurrencyManager', () => {
  it('a writer waits for a lock without holding latches and proceeds when the holder commits', async () => {
    const c = new Cluster();
    const t1 = c.txn('t1');
    const t2 = c.txn('t2');
    const g1 = await c.cm.sequenceReq(request('w1', t1, 'write', 'a'));
    c.cm.onLocksAcquired(t1, [k('a')]);
    c.cm.finishReq(g1);
    const w2 = start(c, request('w2', t2, 'write', 'a'));
    await flushMicrotasks();
    expect(w2.guard).toBeNull();
    // It waits in the txn wait queue, not on latches: another request on a can latch.
    expect(c.cm.latches.metrics()).toMatchObject({ held: 0, waiting: 0 });
    expect(c.twq.waitsFor()).toEqual([['t2', 't1']]);
    c.finish('t1', 'committed');
    await flushMicrotasks();
    expect(w2.guard?.holdsLatches).toBe(true);
    c.cm.finishReq(w2.guard as RequestGuard);
    expect(c.cm.lockTable.metrics()).toMatchObject({ locks: 0, held: 0, waiters: 0, claimants: 0 });
  });

  it('breaks a deadlock between two transactions by aborting the victim (the younger)', async () => {
    const c = new Cluster();
    const t1 = c.txn('t1', 1, 10);
    const t2 = c.txn('t2', 1, 20);
    for (const [t, key] of [[t1, 'a'], [t2, 'b']] as const) {
      const g = await c.cm.sequenceReq(request(`hold-${key}`, t, 'write', key));
      c.cm.onLocksAcquired(t, [k(key)]);
      c.cm.finishReq(g);
    }
    const r1 = start(c, request('t1-b', t1, 'write', 'b'));
    const r2 = start(c, request('t2-a', t2, 'write', 'a'));
    for (let i = 0; i < 5 && (r1.guard === null || r2.error === null); i++) await flushMicrotasks();
    expect(r2.error).toBeInstanceOf(CairnError);
    expect((r2.error as CairnError).code).toBe('kv.txn_aborted');
    expect(c.records.get('t2')?.status).toBe('aborted');
    expect(r1.guard?.holdsLatches).toBe(true);
    c.cm.finishReq(r1.guard as RequestGuard);
    expect(c.twq.metrics()).toEqual({ waitingPushes: 0, deadlocks: 1 });
  });

  it('an intent discovered during evaluation makes the request wait for it, keeping its place', async () => {
    const c = new Cluster();
    const t1 = c.txn('t1');
    const t2 = c.txn('t2', 1, 20);
    const req = request('r', t2, 'read', 'x');
    const g = await c.cm.sequenceReq(req);
    // Evaluation found t1's intent at x (below the read at 20).
    c.cm.handleWriterIntentError(g, [{ key: k('x'), txn: t1 }]);
    const again = c.cm.sequenceReq(req, g);
    let done = false;
    void again.then(() => (done = true));
    await flushMicrotasks();
    expect(done).toBe(false);
    expect(c.cm.lockTable.lockTableState((t) => t.id.toString())).toContain('reader: r (t2, seq 1) waiting');
    c.finish('t1', 'aborted');
    await flushMicrotasks();
    expect(done).toBe(true);
    c.cm.finishReq(g);
  });

  it('a cancelled wait fails with a typed error and leaves no latch or queue entry behind', async () => {
    for (const pushesAtOnce of [true, false]) {
      // Cancelled while pushing (waiting in the txn wait queue), or while waiting in the lock table.
      const c = new Cluster(pushesAtOnce ? undefined : () => new Promise<void>(() => {}));
      const t1 = c.txn('t1');
      const g1 = await c.cm.sequenceReq(request('w1', t1, 'write', 'a'));
      c.cm.onLocksAcquired(t1, [k('a')]);
      c.cm.finishReq(g1);
      const ac = new AbortController();
      // A non-transactional reader at 10, at the lock's timestamp, must wait.
      const r = start(c, request('rd', undefined, 'read', 'a', ac.signal));
      await flushMicrotasks();
      expect(r.guard).toBeNull();
      expect(c.cm.lockTable.metrics().waiters).toBe(1);
      ac.abort(new Error('statement timeout'));
      await flushMicrotasks();
      expect((r.error as CairnError).code).toBe(pushesAtOnce ? 'concurrency.push_wait_cancelled' : 'concurrency.lock_wait_cancelled');
      if (!pushesAtOnce) expect(r.error).toBeInstanceOf(LockWaitCancelledError);
      expect(c.cm.latches.metrics()).toMatchObject({ held: 0, waiting: 0, latches: 0 });
      expect(c.cm.lockTable.metrics()).toMatchObject({ locks: 1, held: 1, waiters: 0, claimants: 0 });
      expect(c.twq.metrics().waitingPushes).toBe(0);
    }
  });
});
