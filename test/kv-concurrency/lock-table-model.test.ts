// The lock table under random interleavings of requests, evaluations,
// intent resolutions and pushes, as the replica's sequencer drives it (scan,
// evaluate when nothing blocks, acquire the written keys, dequeue), against a
// model of which transaction holds which key at which timestamp.
//   - a request proceeds only when no other live transaction's lock blocks
//     it (writes: any lock; reads: locks at or below the read timestamp);
//   - acquireLock never finds another holder (it asserts);
//   - past maxLocks only replicated locks are forgotten, and evaluation
//     rediscovers them (addDiscoveredLock) so the request then waits;
//   - a waiting request names a pushee that holds the key or claims it;
//   - queues stay in arrival order, a held lock's queue only holds waiters,
//     and an unheld lock's first writer claims it while the rest wait;
//   - once every transaction finishes, every request gets through.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { LockTable, type LockRequest, type LockTableGuard, type LockTxn } from '../../src/kv/concurrency/lock-table.js';
import type { DeclaredSpan } from '../../src/kv/concurrency/span-set.js';
import { spansOverlap } from '../../src/kv/concurrency/span-set.js';
import { compareTimestamps, ts, tsMax } from '../../src/util/hlc.js';
import { arbSpan, k } from './support.js';

const TXNS = ['t0', 't1', 't2', 't3'];
const KEYS = ['a', 'b', 'bb', 'c', 'd', 'e', 'f', 'g'];

type Op =
  | { kind: 'start'; txn: number; ts: number; spans: DeclaredSpan[]; replicated: boolean }
  | { kind: 'eval'; pick: number }
  | { kind: 'resolve'; txn: number; commit: boolean }
  | { kind: 'push'; txn: number; ts: number };

const arbOp: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('start' as const),
      txn: fc.integer({ min: -1, max: TXNS.length - 1 }),
      ts: fc.integer({ min: 1, max: 6 }),
      spans: fc.array(fc.record({ access: fc.constantFrom('read' as const, 'write' as const), span: arbSpan }), { minLength: 1, maxLength: 3 }),
      replicated: fc.boolean(),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('eval' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resolve' as const), txn: fc.integer({ min: 0, max: TXNS.length - 1 }), commit: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('push' as const), txn: fc.integer({ min: 0, max: TXNS.length - 1 }), ts: fc.integer({ min: 1, max: 8 }) }) },
);

interface Req {
  req: LockRequest;
  replicated: boolean;
  txn: string | null;
  guard: LockTableGuard;
  done: boolean;
}

describe('lock table (model)', () => {
  it('proceeds only when unblocked, never double-grants, and drains (property)', () => {
    let drainedTotal = 0;
    let waited = 0;
    let discovered = 0;
    fc.assert(
      fc.property(fc.array(arbOp, { minLength: 20, maxLength: 70 }), fc.constantFrom(1, 2, 4, 10_000), (ops, maxLocks) => {
        const lt = new LockTable({ maxLocks });
        const txns = new Map<string, LockTxn>(TXNS.map((n) => [n, { id: Buffer.from(n), epoch: 0, writeTimestamp: ts(1) }]));
        const epochs = new Map<string, number>(TXNS.map((n) => [n, 0]));
        const held = new Map<string, string>(); // key → txn (the model)
        const reqs: Req[] = [];
        const full = { key: Buffer.alloc(0), endKey: Buffer.from([0xff]) };

        /** The model's locks that block r: the intents its evaluation would meet. */
        const blockingInModel = (r: Req): { key: Buffer; txn: LockTxn }[] =>
          KEYS.filter((key) => {
            const h = held.get(key);
            if (h === undefined || h === r.txn) return false;
            return r.req.spans.some((d) => spansOverlap(d.span, { key: k(key) }) && (d.access === 'write' || compareTimestamps(r.req.timestamp, (txns.get(h) as LockTxn).writeTimestamp) >= 0));
          }).map((key) => ({ key: k(key), txn: txns.get(held.get(key) as string) as LockTxn }));

        const evaluate = (r: Req): boolean => {
          // Re-scan with the transaction's current state, as the sequencer does after waiting.
          r.req = { ...r.req, txn: r.txn === null ? undefined : txns.get(r.txn) };
          lt.scanAndEnqueue(r.req, r.guard);
          if (r.guard.shouldWait) {
            const s = r.guard.state;
            waited++;
            if (s.kind === 'waitFor' && s.held) expect(held.get(s.key.toString('latin1'))).toBe(s.pushee?.id.toString('latin1'));
            return false;
          }
          const intents = blockingInModel(r);
          if (intents.length > 0) {
            // Only a lock the table forgot (a replicated one, past maxLocks) can be missed:
            // evaluation meets the intent, reports it, and the request waits.
            expect(lt.metrics().cleared).toBeGreaterThan(0);
            for (const i of intents) lt.addDiscoveredLock(i);
            lt.scanAndEnqueue(r.req, r.guard);
            expect(r.guard.shouldWait).toBe(true);
            discovered++;
            return false;
          }
          if (r.txn !== null) {
            for (const d of r.req.spans) {
              if (d.access !== 'write' || d.span.endKey != null) continue;
              lt.acquireLock(txns.get(r.txn) as LockTxn, d.span.key, r.replicated ? 'replicated' : 'unreplicated');
              held.set(d.span.key.toString('latin1'), r.txn);
            }
          }
          lt.dequeue(r.guard);
          r.done = true;
          return true;
        };

        /** The transaction's intents are resolved; it continues in a new epoch. */
        const release = (name: string, commit: boolean): void => {
          const t = txns.get(name) as LockTxn;
          lt.updateLocks({ span: full, txn: t, status: commit ? 'committed' : 'aborted' });
          for (const [key, h] of [...held]) if (h === name) held.delete(key);
          const e = (epochs.get(name) as number) + 1;
          epochs.set(name, e);
          txns.set(name, { ...t, epoch: e });
        };

        /** The transaction finished: its unfinished requests give up. */
        const finish = (name: string, commit: boolean): void => {
          release(name, commit);
          for (const r of reqs) if (!r.done && r.txn === name) (lt.dequeue(r.guard), (r.done = true));
        };

        /** Fairness: in every queue, requests are in arrival order and no writer proceeds ahead of a waiting writer of another transaction. */
        const checkQueues = (): void => {
          for (const l of lt.snapshot()) {
            expect(l.queue.map((q) => q.seq)).toEqual(l.queue.map((q) => q.seq).sort((a, b) => a - b));
            if (l.holder !== null) expect(l.queue.every((q) => q.role === 'waiting')).toBe(true);
            const writers = l.queue.filter((q) => q.access === 'write');
            if (l.holder === null) {
              expect(l.queue.every((q) => q.access === 'write')).toBe(true);
              expect(writers[0]?.role).toBe('claimant');
              const ct = writers[0]?.txn;
              for (const w of writers.slice(1)) expect(w.role).toBe(ct !== undefined && w.txn?.id.equals(ct.id) === true ? 'proceeding' : 'waiting');
            }
          }
        };

        for (const o of ops) {
          if (o.kind === 'start') {
            const name = o.txn < 0 ? null : (TXNS[o.txn] as string);
            const txn = name === null ? undefined : txns.get(name);
            const req: LockRequest = { txn, timestamp: tsMax(ts(o.ts), txn?.writeTimestamp ?? ts(0)), spans: o.spans };
            reqs.push({ req, replicated: o.replicated, txn: name, guard: lt.scanAndEnqueue(req), done: false });
          } else if (o.kind === 'eval') {
            const live = reqs.filter((r) => !r.done);
            const r = live[o.pick % Math.max(1, live.length)];
            if (r !== undefined) evaluate(r);
          } else if (o.kind === 'resolve') {
            finish(TXNS[o.txn] as string, o.commit);
          } else {
            const name = TXNS[o.txn] as string;
            const t = txns.get(name) as LockTxn;
            const pushed = { ...t, writeTimestamp: tsMax(t.writeTimestamp, ts(o.ts)) };
            txns.set(name, pushed);
            lt.updateLocks({ span: full, txn: pushed, status: 'pending' });
          }
          checkQueues();
        }
        // Drain: resolve every transaction's intents, then every request, in
        // arrival order, must get through (each committing right after).
        for (const name of TXNS) release(name, true);
        let drained = 0;
        for (const r of reqs) {
          if (r.done) continue;
          // (A request may first rediscover a forgotten intent; it is resolved by now.)
          expect(evaluate(r)).toBe(true);
          drained++;
          if (r.txn !== null) release(r.txn, true);
        }
        drainedTotal += drained;
        expect(lt.metrics()).toMatchObject({ locks: 0, held: 0, waiters: 0, claimants: 0 });
      }),
      { numRuns: 250, seed: Number(process.env['LOCK_TABLE_MODEL_SEED'] ?? 20261130) },
    );
    // The runs exercised both waiting and draining.
    expect(waited).toBeGreaterThan(300);
    expect(drainedTotal).toBeGreaterThan(300);
    expect(discovered).toBeGreaterThan(0);
  });
});
