// The txn wait queue and its deadlock detection (issue 5: "distributed
// deadlock detection breaks cycles by aborting one transaction").
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { PushWaitCancelledError, TxnWaitQueue, type PendingPush, type PushWaitOutcome } from '../../src/kv/concurrency/txn-wait-queue.js';
import { ts } from '../../src/util/hlc.js';
import { flushMicrotasks } from './support.js';

const cand = (id: string, priority = 1, start = 0) => ({ id, priority, minTimestamp: ts(start) });

/** Whether the edge list has a cycle (reference: repeatedly strip nodes without outgoing edges). */
function hasCycle(edges: readonly [string, string][]): boolean {
  let es = [...edges];
  for (;;) {
    const sources = new Set(es.map(([a]) => a));
    const next = es.filter(([, b]) => sources.has(b));
    if (next.length === es.length) return es.length > 0;
    es = next;
  }
}

/** Whether `to` can be reached from `from` along the edges (a node reaches itself). */
function reaches(edges: readonly [string, string][], from: string, to: string): boolean {
  const seen = new Set([from]);
  const stack = [from];
  while (stack.length > 0) {
    const x = stack.pop() as string;
    if (x === to) return true;
    for (const [a, b] of edges) if (a === x && !seen.has(b)) (seen.add(b), stack.push(b));
  }
  return false;
}

describe('TxnWaitQueue', () => {
  it('wakes pushers when the pushee finalizes, and timestamp pushers when it is pushed far enough', async () => {
    const q = new TxnWaitQueue();
    const abort = q.enqueue(cand('A'), 'C', 'abort', ts(5));
    const low = q.enqueue(cand('B'), 'C', 'timestamp', ts(5));
    const high = q.enqueue(cand('D'), 'C', 'timestamp', ts(9));
    const got: Record<string, PushWaitOutcome> = {};
    void q.wait(abort).then((o) => (got['abort'] = o));
    void q.wait(low).then((o) => (got['low'] = o));
    void q.wait(high).then((o) => (got['high'] = o));
    q.updateTxn('C', 'pending', ts(6));
    await flushMicrotasks();
    expect(got).toEqual({ low: { kind: 'pushee-pushed', writeTimestamp: ts(6) } });
    q.updateTxn('C', 'committed');
    await flushMicrotasks();
    expect(got['abort']).toEqual({ kind: 'pushee-finalized', status: 'committed' });
    expect(got['high']).toEqual({ kind: 'pushee-finalized', status: 'committed' });
    expect(q.metrics().waitingPushes).toBe(0);
  });

  it('a pusher that is finalized stops waiting; a cancelled wait leaves the graph', async () => {
    const q = new TxnWaitQueue();
    const p = q.enqueue(cand('A'), 'B', 'abort', ts(1));
    const c = q.enqueue(cand('C'), 'B', 'abort', ts(1));
    const ac = new AbortController();
    const cancelled = q.wait(c, ac.signal);
    ac.abort();
    await expect(cancelled).rejects.toBeInstanceOf(PushWaitCancelledError);
    expect(q.waitsFor()).toEqual([['A', 'B']]);
    q.updateTxn('A', 'aborted');
    await expect(q.wait(p)).resolves.toEqual({ kind: 'pusher-finalized', status: 'aborted' });
    expect(q.waitsFor()).toEqual([]);
  });

  it('breaks a 2-cycle at once, naming the lower-priority transaction', async () => {
    const q = new TxnWaitQueue();
    const ab = q.enqueue(cand('A', 2), cand('B', 1), 'abort', ts(1));
    expect(ab.done).toBe(false);
    const ba = q.enqueue(cand('B', 1), cand('A', 2), 'abort', ts(1));
    await expect(q.wait(ab)).resolves.toEqual({ kind: 'deadlock', victim: 'B' });
    await expect(q.wait(ba)).resolves.toEqual({ kind: 'deadlock', victim: 'B' });
    expect(q.metrics()).toEqual({ waitingPushes: 0, deadlocks: 1 });
  });

  it('breaks every cycle one edge closes', () => {
    const q = new TxnWaitQueue();
    q.enqueue(cand('B', 5), 'C', 'abort', ts(1));
    q.enqueue(cand('C', 1), 'A', 'abort', ts(1));
    q.enqueue(cand('B', 5), 'D', 'abort', ts(1));
    q.enqueue(cand('D', 2), 'A', 'abort', ts(1));
    q.enqueue(cand('A', 5), 'B', 'abort', ts(1)); // closes A→B→C→A and A→B→D→A
    expect(q.metrics().deadlocks).toBe(2);
    expect(q.findCycle('A')).toBeNull();
  });

  it('breaks a 3-cycle only at the victim, leaving the other edge waiting', async () => {
    const q = new TxnWaitQueue();
    q.enqueue(cand('A', 1, 1), 'B', 'abort', ts(1));
    q.enqueue(cand('B', 1, 3), 'C', 'abort', ts(1));
    expect(q.findCycle('A')).toBeNull();
    q.enqueue(cand('C', 1, 2), 'A', 'timestamp', ts(1));
    // B is the youngest: A → B and B → C are answered; C → A still waits.
    expect(q.waitsFor()).toEqual([['C', 'A']]);
  });

  it('never leaves a cycle in the waits-for graph, and reports a deadlock only when an edge closed one (property)', () => {
    const ids = ['A', 'B', 'C', 'D', 'E'];
    const op = fc.oneof(
      { weight: 5, arbitrary: fc.record({ kind: fc.constant('push' as const), from: fc.constantFrom(...ids), to: fc.constantFrom(...ids), pri: fc.integer({ min: 1, max: 3 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('finalize' as const), id: fc.constantFrom(...ids) }) },
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const q = new TxnWaitQueue();
        const pri = new Map<string, number>();
        const pushes: PendingPush[] = [];
        const seen = new Set<PendingPush>();
        for (const o of ops) {
          if (o.kind === 'finalize') {
            q.updateTxn(o.id, 'aborted');
            continue;
          }
          if (o.from === o.to) continue;
          // A transaction's priority is fixed once seen.
          const p = pri.get(o.from) ?? o.pri;
          pri.set(o.from, p);
          const before = q.metrics().deadlocks;
          const prior = q.waitsFor();
          const closes = hasCycle([...prior, [o.from, o.to]]);
          const push = q.enqueue(cand(o.from, p, ids.indexOf(o.from)), o.to, 'abort', ts(1));
          pushes.push(push);
          expect(q.metrics().deadlocks > before).toBe(closes);
          const answered = pushes.filter((x) => x.outcome?.kind === 'deadlock' && !seen.has(x));
          for (const x of answered) seen.add(x);
          expect(answered.length > 0).toBe(closes);
          if (closes) {
            // Each victim is on a cycle just closed: reachable from the new edge's pushee, reaching its pusher.
            for (const x of answered) {
              const v = (x.outcome as Extract<PushWaitOutcome, { kind: 'deadlock' }>).victim;
              expect(reaches(prior, o.to, v) && reaches(prior, v, o.from)).toBe(true);
            }
          }
          expect(hasCycle(q.waitsFor())).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });
});
