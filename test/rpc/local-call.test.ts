// src/rpc/local-call.ts: a node's calls to itself are served in process with
// the contract of a call over a connection (transport.ts). Each case runs the
// same call twice on one node — once in process, once over its loopback
// socket (a second RpcContext with the same node id and localCalls: false
// dials the first) — and the outcomes must match: response bytes, error
// class/code/flags/SQLSTATE, timeouts and cancellations (ambiguous once the
// handler started, retryable before).
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CairnError } from '../../src/util/errors.js';
import { AssertionError } from '../../src/util/assert.js';
import { RpcError } from '../../src/rpc/errors.js';
import type { RpcContext } from '../../src/rpc/rpc-context.js';
import { judgeCall, Nodes, rejection, waitFor, type OutcomeTally } from './nodes.js';

const ECHO = 1;
const FAIL_CAIRN = 2;
const FAIL_OTHER = 3;
const HANG = 4;
const SYNC_ECHO = 5;
const STARTED = 6;

class TestDomainError extends CairnError {}

/** Outcome of a call, in the fields a caller can observe. */
async function outcome(p: Promise<Buffer>): Promise<Record<string, unknown>> {
  try {
    const b = await p;
    return { ok: b.toString('hex') };
  } catch (e) {
    const err = e as CairnError;
    return { class: err.constructor.name, code: err.code, message: err.message.replace(/ \(local\)/, ''), retryable: err.retryable, ambiguous: err.ambiguous, sqlState: err.sqlState };
  }
}

function registerHandlers(ctx: RpcContext, started: { n: number }): void {
  ctx.register(ECHO, async (p) => Buffer.concat([Buffer.from('re:'), p]));
  ctx.register(SYNC_ECHO, (p) => p);
  ctx.register(FAIL_CAIRN, () => {
    throw new TestDomainError('kv.test_refusal', 'kv: refused for the test', { retryable: true, sqlState: '40001' });
  });
  ctx.register(FAIL_OTHER, async () => {
    throw new TypeError('not a CairnError');
  });
  ctx.register(HANG, () => new Promise<Uint8Array>(() => {}));
  ctx.register(STARTED, () => {
    started.n++;
    return new Promise<Uint8Array>(() => {});
  });
}

describe('calls to the node itself (local-call.ts)', () => {
  const nodes = new Nodes();
  afterEach(() => nodes.closeAll());

  /** n1 serving in process, and a twin of n1 (same id, no local calls) whose self-calls go over TCP to n1. */
  async function setup(): Promise<{ local: RpcContext; socket: RpcContext; started: { n: number } }> {
    const started = { n: 0 };
    const n1 = await nodes.start(1);
    registerHandlers(n1.ctx, started);
    // A node knows its own address (the directory lists every node); a method without a handler uses it.
    n1.ctx.setPeerAddress(1, n1.addr);
    const twin = await nodes.start(7, { localCalls: false });
    // The twin calls "node 1" over TCP: the address of n1 under n1's id.
    twin.ctx.setPeerAddress(1, n1.addr);
    return { local: n1.ctx, socket: twin.ctx, started };
  }

  it('answers like a remote call: responses, handler errors, unknown methods, oversized requests', async () => {
    const { local, socket } = await setup();
    const cases: [number, Buffer][] = [
      [ECHO, Buffer.from('abc')],
      [SYNC_ECHO, Buffer.from([0, 1, 2, 255])],
      [ECHO, Buffer.alloc(0)],
      [FAIL_CAIRN, Buffer.from('x')],
      [FAIL_OTHER, Buffer.from('x')],
      [99, Buffer.from('x')],
    ];
    for (const [method, payload] of cases) {
      const viaLocal = await outcome(local.call(1, method, payload, { timeoutMs: 5_000 }));
      const viaSocket = await outcome(socket.call(1, method, payload, { timeoutMs: 5_000 }));
      // The twin names itself n7 in its messages; the local answer names n1.
      expect(viaLocal).toEqual(viaSocket);
    }
    // A retryable handler error keeps its flags and SQLSTATE end to end.
    expect(await outcome(local.call(1, FAIL_CAIRN, Buffer.alloc(1)))).toMatchObject({ code: 'kv.test_refusal', retryable: true, ambiguous: false, sqlState: '40001' });
    expect(await outcome(local.call(1, FAIL_OTHER, Buffer.alloc(1)))).toMatchObject({ code: 'rpc.internal' });
    // A method without a handler is not served locally: the node answers itself over its socket, as before.
    const served = local.local.calls;
    expect(await outcome(local.call(1, 99, Buffer.alloc(0)))).toMatchObject({ code: 'rpc.unknown_method' });
    expect(local.local.calls).toBe(served);
    const big = Buffer.alloc(local.maxFrameBytes + 1);
    expect(await outcome(local.call(1, ECHO, big))).toEqual(await outcome(socket.call(1, ECHO, big)));
    expect(local.local.calls).toBeGreaterThan(0);
  });

  it('never serves the call inside the caller’s synchronous step', async () => {
    const { local } = await setup();
    let ran = false;
    local.register(42, () => {
      ran = true;
      return Buffer.from('done');
    });
    const p = local.call(1, 42, Buffer.alloc(0));
    expect(ran).toBe(false);
    expect((await p).toString()).toBe('done');
  });

  it('a deadline after the handler started is ambiguous; a cancellation before it started is retryable', async () => {
    const { local, started } = await setup();
    const t = await rejection(local.call(1, STARTED, Buffer.alloc(0), { timeoutMs: 20 }));
    expect(t).toBeInstanceOf(RpcError);
    expect(t).toMatchObject({ code: 'rpc.timeout', ambiguous: true, retryable: false });
    expect(started.n).toBe(1);
    // Aborted in the same step as the call: the handler never runs.
    const ac = new AbortController();
    const p = local.call(1, STARTED, Buffer.alloc(0), { signal: ac.signal });
    ac.abort();
    expect(await rejection(p)).toMatchObject({ code: 'rpc.canceled', ambiguous: false, retryable: true });
    // Aborted before the call: refused at once.
    expect(await rejection(local.call(1, STARTED, Buffer.alloc(0), { signal: ac.signal }))).toMatchObject({ code: 'rpc.canceled', ambiguous: false });
    // Aborted once the handler runs: ambiguous.
    const ac2 = new AbortController();
    const q = local.call(1, STARTED, Buffer.alloc(0), { signal: ac2.signal });
    await waitFor(() => started.n === 2, 5_000, 'the handler to start');
    ac2.abort();
    expect(await rejection(q)).toMatchObject({ code: 'rpc.canceled', ambiguous: true });
    expect(started.n).toBe(2);
  });

  it('closing the node fails a call in progress as ambiguous (connection lost)', async () => {
    const { local } = await setup();
    const p = local.call(1, HANG, Buffer.alloc(0));
    await Promise.resolve();
    await Promise.resolve();
    await local.close();
    expect(await rejection(p)).toMatchObject({ code: 'rpc.connection_lost', ambiguous: true });
  });

  it('with faults set toward itself, the node calls itself over its socket, where the faults apply', async () => {
    const n1 = await nodes.start(1);
    n1.ctx.register(ECHO, (p) => p);
    n1.ctx.setPeerAddress(1, n1.addr);
    n1.ctx.faults.setFaults(1, { partition: true });
    const before = n1.ctx.local.calls;
    const e = await rejection(n1.ctx.call(1, ECHO, Buffer.from('x'), { timeoutMs: 50 }));
    expect(e).toMatchObject({ code: 'rpc.timeout' });
    expect(n1.ctx.faults.countersFor(1).dropped).toBeGreaterThan(0);
    expect(n1.ctx.local.calls).toBe(before);
    n1.ctx.faults.clearFaults();
    expect((await n1.ctx.call(1, ECHO, Buffer.from('y'))).toString()).toBe('y');
    expect(n1.ctx.local.calls).toBe(before + 1);
  });

  it('an AssertionError in a handler answers rpc.internal and is rethrown (the process crashes on a bug)', async () => {
    const { local } = await setup();
    local.register(43, () => {
      throw new AssertionError('broken invariant for the test');
    });
    const thrown: unknown[] = [];
    const onError = (e: unknown): void => void thrown.push(e);
    process.on('uncaughtException', onError);
    try {
      expect(await outcome(local.call(1, 43, Buffer.alloc(0)))).toMatchObject({ code: 'rpc.internal' });
      await waitFor(() => thrown.length > 0, 2_000, 'the rethrown AssertionError');
    } finally {
      process.off('uncaughtException', onError);
    }
    expect(thrown[0]).toBeInstanceOf(AssertionError);
  });

  // DESIGN.md §6, "Timeouts not cancelled", on the path without a socket (test/rpc/ambiguity.test.ts is the same
  // property over TCP): a call to itself that failed without being ambiguous never ran its handler, not then and
  // not later; an answered call ran exactly once. Calls get random deadlines, cancellations (in the same step, or
  // later), handler times (synchronous, or a few ms), pauses between them, and the node may close right after the
  // last call.
  it('a call to itself that failed without being ambiguous never runs; an answered one ran once (property)', async () => {
    type Op =
      | { readonly op: 'call'; readonly timeoutMs: number; readonly abortAfterMs: number | null; readonly serveMs: number }
      | { readonly op: 'pause'; readonly ms: number };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.record({
          op: fc.constant('call' as const),
          timeoutMs: fc.constantFrom(0, 1, 3, 10),
          abortAfterMs: fc.option(fc.constantFrom(0, 1, 5), { nil: null }),
          serveMs: fc.constantFrom(-1, 0, 2, 8),
        }),
      },
      { weight: 1, arbitrary: fc.record({ op: fc.constant('pause' as const), ms: fc.constantFrom(0, 1, 4) }) },
    );
    const SERVE = 7;
    const tally: OutcomeTally = { ok: 0, ambiguous: 0, notSent: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 3, maxLength: 20 }), fc.boolean(), async (ops, closeAtEnd) => {
        const n1 = await nodes.start(1);
        const ran = new Map<number, number>();
        // serveMs -1: answered synchronously; otherwise after serveMs ms.
        n1.ctx.register(SERVE, (p) => {
          const id = p.readUInt32BE(0);
          const serveMs = p.readInt32BE(4);
          ran.set(id, (ran.get(id) ?? 0) + 1);
          if (serveMs < 0) return p.subarray(0, 4);
          return new Promise<Uint8Array>((r) => setTimeout(() => r(p.subarray(0, 4)), serveMs));
        });
        const calls: { id: number; p: Promise<Buffer> }[] = [];
        for (const op of ops) {
          if (op.op === 'pause') {
            await new Promise((r) => setTimeout(r, op.ms));
            continue;
          }
          const id = calls.length + 1;
          const payload = Buffer.alloc(8);
          payload.writeUInt32BE(id, 0);
          payload.writeInt32BE(op.serveMs, 4);
          const ac = new AbortController();
          const p = n1.ctx.call(1, SERVE, payload, { timeoutMs: op.timeoutMs, signal: ac.signal });
          if (op.abortAfterMs === 0) ac.abort();
          else if (op.abortAfterMs !== null) setTimeout(() => ac.abort(), op.abortAfterMs);
          p.catch(() => {}); // judged below; not an unhandled rejection meanwhile
          calls.push({ id, p });
        }
        // In the step of the last call: calls not yet started fail retryably, started ones ambiguously.
        const closing = closeAtEnd ? n1.ctx.close() : Promise.resolve();
        const outcomes = await Promise.allSettled(calls.map(({ p }) => p));
        await closing;
        // Every call was queued (one microtask) when it was made: any handler that was going to run has run.
        for (let i = 0; i < calls.length; i++) {
          const id = (calls[i] as { id: number }).id;
          judgeCall(id, outcomes[i] as PromiseSettledResult<Buffer>, ran.get(id) ?? 0, tally, true);
        }
        await nodes.closeAll();
      }),
      { numRuns: 40, seed: 20261130 },
    );
    // The property was exercised on every kind of outcome.
    expect(tally.ok).toBeGreaterThan(0);
    expect(tally.ambiguous).toBeGreaterThan(0);
    expect(tally.notSent).toBeGreaterThan(0);
  });
});
