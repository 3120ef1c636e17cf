/**
 * Test support for the RPC tests: in-process nodes over real TCP on loopback
 * (ephemeral ports), each with a manual physical clock, and a bounded
 * wait-for-condition helper.
 */
import { expect } from 'vitest';
import { Clock, ManualPhysical } from '../../src/util/hlc.js';
import { Prng } from '../../src/util/prng.js';
import { RpcContext, type PeerAddress, type RpcContextOptions } from '../../src/rpc/rpc-context.js';

export const T0 = 1_700_000_000_000_000;

export interface TestNode {
  readonly ctx: RpcContext;
  readonly clock: Clock;
  readonly physical: ManualPhysical;
  readonly addr: PeerAddress;
}

export class Nodes {
  private readonly all: TestNode[] = [];

  async start(nodeId: number, opts: Partial<RpcContextOptions> & { host?: string; port?: number } = {}): Promise<TestNode> {
    const physical = new ManualPhysical(T0);
    const clock = opts.clock ?? new Clock(physical.read, 500_000);
    const ctx = new RpcContext({
      nodeId,
      clusterId: 'cluster-a',
      clock,
      prng: new Prng(1000 + nodeId),
      backoff: { initialMs: 20, maxMs: 200 },
      ...opts,
    });
    const addr = await ctx.listen(opts.host ?? '127.0.0.1', opts.port ?? 0);
    const node = { ctx, clock, physical, addr };
    for (const other of this.all) {
      other.ctx.setPeerAddress(nodeId, addr);
      ctx.setPeerAddress(other.ctx.nodeId, other.addr);
    }
    this.all.push(node);
    return node;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.all.splice(0).map((n) => n.ctx.close()));
  }
}

/** Resolves when cond() holds; fails after timeoutMs. Polls every few ms. */
export async function waitFor(cond: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The rejection of p (fails the test if p resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error & { code?: string; retryable?: boolean; ambiguous?: boolean }> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected the promise to reject');
}

/** Retries fn until it resolves (only retryable CairnErrors are retried); fails after timeoutMs. */
export async function eventually<T>(fn: () => Promise<T>, timeoutMs = 5_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      const retryable = (e as { retryable?: boolean }).retryable === true;
      if (!retryable || performance.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

export const ECHO = 1;
export const NEVER = 2;

export function registerEcho(ctx: RpcContext): void {
  ctx.register(ECHO, (p) => p);
}

export const ONE_WAY = 9;

/** Registers a one-way handler that collects the payloads it receives, decoded by `as`. */
export function collectOneWays<T = string>(ctx: RpcContext, as: (p: Buffer) => T = (p) => p.toString() as T): T[] {
  const got: T[] = [];
  ctx.register(ONE_WAY, (p) => {
    got.push(as(p));
  });
  return got;
}

/** Registers a handler that counts its runs: ECHO echoes, NEVER never answers. */
export function countRuns(ctx: RpcContext, method: typeof ECHO | typeof NEVER): { ran: number } {
  const counter = { ran: 0 };
  ctx.register(method, (p) => {
    counter.ran++;
    return method === ECHO ? p : new Promise<Uint8Array>(() => {});
  });
  return counter;
}

/** How the calls of a property run ended (to show every kind of outcome was exercised). */
export interface OutcomeTally {
  ok: number;
  ambiguous: number;
  notSent: number;
}

/**
 * DESIGN.md §6 ("Timeouts not cancelled") for one settled call whose handler
 * ran `runs` times: an answer is the call's own (its payload starts with the
 * call's id) and its handler ran — exactly once with `exactlyOnce` (no network
 * to duplicate the request); a failure is an rpc.* error, and one that is not
 * ambiguous never ran.
 */
export function judgeCall(id: number, o: PromiseSettledResult<Buffer>, runs: number, tally: OutcomeTally, exactlyOnce: boolean): void {
  if (o.status === 'fulfilled') {
    tally.ok++;
    expect(o.value.readUInt32BE(0)).toBe(id);
    if (exactlyOnce) expect(runs).toBe(1);
    else expect(runs).toBeGreaterThanOrEqual(1);
    return;
  }
  const err = o.reason as { code?: string; ambiguous?: boolean; message: string };
  expect(err.code, err.message).toMatch(/^rpc\./);
  if (err.ambiguous) {
    tally.ambiguous++;
    if (exactlyOnce) expect(runs).toBeLessThanOrEqual(1);
  } else {
    tally.notSent++;
    expect(runs, `call ${id} failed with ${err.code} but ran`).toBe(0);
  }
}
