// Latches (issue 5): conflicting requests are serialized in arrival order, the
// rest run concurrently; MVCC-aware conflicts; bounded waiting. The property
// test drives random acquire/release/cancel interleavings against a simple
// reference (a list of requests in arrival order).
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { LatchManager, LatchWaitCancelledError, type LatchGuard } from '../../src/kv/concurrency/latch-manager.js';
import { accessesConflict, spanSetFromCommandSpans, spansOverlap, type DeclaredSpan, type SpanSet } from '../../src/kv/concurrency/span-set.js';
import { ts } from '../../src/util/hlc.js';
import { arbDeclared, flushMicrotasks, k } from './support.js';

const write = (key: string, end?: string, at?: number): DeclaredSpan => ({ access: 'write', span: { key: k(key), endKey: end === undefined ? null : k(end) }, ...(at === undefined ? {} : { timestamp: ts(at) }) });
const read = (key: string, end?: string, at?: number): DeclaredSpan => ({ access: 'read', span: { key: k(key), endKey: end === undefined ? null : k(end) }, ...(at === undefined ? {} : { timestamp: ts(at) }) });

/** Starts an acquire and records when it completes. */
function start(m: LatchManager, spans: SpanSet, signal?: AbortSignal): { guard: LatchGuard | null; error: unknown } {
  const r: { guard: LatchGuard | null; error: unknown } = { guard: null, error: null };
  m.acquire(spans, signal).then(
    (g) => (r.guard = g),
    (e: unknown) => (r.error = e),
  );
  return r;
}

function conflict(a: SpanSet, b: SpanSet): boolean {
  return a.some((x) => b.some((y) => spansOverlap(x.span, y.span) && accessesConflict(x.access, x.timestamp, y.access, y.timestamp)));
}

describe('LatchManager', () => {
  it('serializes overlapping writes and lets disjoint ones run', async () => {
    const m = new LatchManager();
    const g1 = await m.acquire([write('a', 'c')]);
    const r2 = start(m, [write('b')]);
    const r3 = start(m, [write('c')]);
    await flushMicrotasks();
    expect(r2.guard).toBeNull();
    expect(r3.guard).not.toBeNull();
    expect(m.metrics()).toMatchObject({ held: 2, waiting: 1 });
    g1.release();
    await flushMicrotasks();
    expect(r2.guard?.held).toBe(true);
    expect(m.metrics()).toMatchObject({ held: 2, waiting: 0, acquiredAfterWait: 1 });
  });

  it('MVCC-aware: a read below a write does not wait; at or above it does; non-MVCC always', async () => {
    const m = new LatchManager();
    await m.acquire([write('a', undefined, 10)]);
    const below = start(m, [read('a', undefined, 9)]);
    const at = start(m, [read('a', undefined, 10)]);
    const nonMvcc = start(m, [read('a')]);
    await flushMicrotasks();
    expect(below.guard).not.toBeNull();
    expect(at.guard).toBeNull();
    expect(nonMvcc.guard).toBeNull();
  });

  it('a write waits for reads at or above its timestamp, not below', async () => {
    const m = new LatchManager();
    const r = await m.acquire([read('a', 'z', 5)]);
    const w1 = start(m, [write('b', undefined, 6)]);
    const w2 = start(m, [write('c', undefined, 5)]);
    await flushMicrotasks();
    expect(w1.guard).not.toBeNull();
    expect(w2.guard).toBeNull();
    r.release();
    await flushMicrotasks();
    expect(w2.guard).not.toBeNull();
  });

  it('is FIFO: a later request waits behind an earlier waiting one it conflicts with', async () => {
    const m = new LatchManager();
    const g1 = await m.acquire([read('a', undefined, 10)]);
    const w = start(m, [write('a', undefined, 5)]); // waits for the read at 10
    const r = start(m, [read('a', undefined, 10)]); // does not conflict with g1, but with the waiting write
    await flushMicrotasks();
    expect(w.guard).toBeNull();
    expect(r.guard).toBeNull();
    g1.release();
    await flushMicrotasks();
    expect(w.guard).not.toBeNull();
    expect(r.guard).toBeNull();
    w.guard?.release();
    await flushMicrotasks();
    expect(r.guard).not.toBeNull();
  });

  it('cancelling a wait removes its latches and unblocks the requests behind it', async () => {
    const m = new LatchManager();
    const g1 = await m.acquire([write('a')]);
    const ac = new AbortController();
    const w = start(m, [write('a', 'c')], ac.signal);
    const behind = start(m, [write('b')]);
    await flushMicrotasks();
    expect(behind.guard).toBeNull();
    ac.abort(new Error('deadline'));
    await flushMicrotasks();
    expect(w.error).toBeInstanceOf(LatchWaitCancelledError);
    expect((w.error as LatchWaitCancelledError).code).toBe('concurrency.latch_wait_cancelled');
    expect(behind.guard).not.toBeNull();
    expect(m.metrics()).toMatchObject({ held: 2, waiting: 0, cancelled: 1 });
    g1.release();
    g1.release(); // idempotent
    expect(m.metrics().held).toBe(1);
  });

  it('an already-aborted signal rejects only when the request would wait', async () => {
    const ac = new AbortController();
    ac.abort();
    const m = new LatchManager();
    const g = await m.acquire([write('a')], ac.signal);
    await expect(m.acquire([write('a')], ac.signal)).rejects.toBeInstanceOf(LatchWaitCancelledError);
    expect(m.metrics().latches).toBe(1);
    g.release();
    expect(m.metrics().latches).toBe(0);
  });

  it('tryAcquire fails without leaving latches behind', async () => {
    const m = new LatchManager();
    const g = m.tryAcquire([write('a', 'c')]);
    expect(g).not.toBeNull();
    expect(m.tryAcquire([read('b')])).toBeNull();
    expect(m.metrics().latches).toBe(1);
    g?.release();
    expect(m.tryAcquire([read('b')])).not.toBeNull();
  });

  it('never holds two conflicting latches and grants exactly when earlier conflicts are gone (property, vs reference)', async () => {
    type Op = { kind: 'acquire'; spans: DeclaredSpan[]; cancellable: boolean } | { kind: 'release'; pick: number } | { kind: 'cancel'; pick: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('acquire' as const), spans: fc.array(arbDeclared, { minLength: 1, maxLength: 3 }), cancellable: fc.boolean() }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
        const m = new LatchManager();
        interface Req {
          spans: SpanSet;
          gone: boolean;
          ac: AbortController | null;
          r: { guard: LatchGuard | null; error: unknown };
        }
        const reqs: Req[] = []; // in arrival order
        for (const o of ops) {
          const present = reqs.filter((q) => !q.gone);
          if (o.kind === 'acquire') {
            const ac = o.cancellable ? new AbortController() : null;
            reqs.push({ spans: o.spans, gone: false, ac, r: start(m, o.spans, ac?.signal) });
          } else if (o.kind === 'release') {
            const held = present.filter((q) => q.r.guard !== null);
            const q = held[o.pick % Math.max(1, held.length)];
            if (q === undefined) continue;
            q.r.guard?.release();
            q.gone = true;
          } else {
            const waiting = present.filter((q) => q.r.guard === null && q.ac !== null);
            const q = waiting[o.pick % Math.max(1, waiting.length)];
            if (q === undefined) continue;
            q.ac?.abort();
            q.gone = true;
          }
          await flushMicrotasks();
          // Reference: a present request holds its latches iff no earlier present request conflicts with it.
          const live = reqs.filter((q) => !q.gone);
          for (let i = 0; i < live.length; i++) {
            const q = live[i] as Req;
            const blocked = live.slice(0, i).some((p) => conflict(p.spans, q.spans));
            expect(q.r.guard !== null).toBe(!blocked);
            expect(q.r.error).toBeNull();
          }
          const held = live.filter((q) => q.r.guard !== null);
          for (let i = 0; i < held.length; i++) for (let j = i + 1; j < held.length; j++) expect(conflict((held[i] as Req).spans, (held[j] as Req).spans)).toBe(false);
          expect(m.metrics()).toMatchObject({ held: held.length, waiting: live.length - held.length });
        }
        // Draining: releasing in arrival order lets everything through.
        for (const q of reqs) {
          if (q.gone) continue;
          await flushMicrotasks();
          expect(q.r.guard).not.toBeNull();
          q.r.guard?.release();
        }
        expect(m.metrics()).toMatchObject({ held: 0, waiting: 0, latches: 0 });
      }),
      { numRuns: 150 },
    );
  });
});

describe('spanSetFromCommandSpans', () => {
  // batcheval's commands declare { key, endKey, write } (src/kv/batcheval/command.ts).
  it('turns command-declared spans into MVCC latches at the batch timestamp, or non-MVCC ones', async () => {
    const declared = [
      { key: k('a'), endKey: null, write: true },
      { key: k('b'), endKey: k('d'), write: false },
    ];
    const m = new LatchManager();
    const w = await m.acquire(spanSetFromCommandSpans(declared, ts(10)));
    const below = m.tryAcquire([read('a', undefined, 9)]); // below the write at 10
    expect(below).not.toBeNull();
    below?.release();
    expect(m.tryAcquire([write('c', undefined, 10)])).toBeNull(); // the read of [b,d) at 10 would see it
    const above = m.tryAcquire([write('c', undefined, 11)]); // invisible to the read at 10
    expect(above).not.toBeNull();
    above?.release();
    w.release();
    const nonMvcc = spanSetFromCommandSpans(declared);
    expect(nonMvcc.every((d) => d.timestamp === undefined)).toBe(true);
    const g = await m.acquire(nonMvcc);
    expect(m.tryAcquire([read('a', undefined, 1)])).toBeNull();
    g.release();
  });
});
