// The RPC fault hook (issue 4: drop / delay / duplicate / partition per peer
// pair, set at run time) — pure decisions, then its effect on real TCP
// traffic, with counters proving each fault took effect (DESIGN.md §6).
import { afterEach, describe, expect, it } from 'vitest';
import { FaultHook, InvalidFaultSpecError } from '../../src/rpc/fault-hook.js';
import { Prng } from '../../src/util/prng.js';
import { backoffDelay } from '../../src/rpc/rpc-context.js';
import { collectOneWays, countRuns, ECHO, Nodes, ONE_WAY, registerEcho, rejection, waitFor } from './nodes.js';

describe('FaultHook decisions', () => {
  it('passes everything untouched when no fault is set', () => {
    const h = new FaultHook(new Prng(1));
    for (let i = 0; i < 100; i++) {
      expect(h.plan(2)).toBe(1);
      expect(h.delayMs).toBe(0);
    }
    expect(h.active).toBe(false);
    expect(h.totals()).toEqual({ dropped: 0, delayed: 0, duplicated: 0 });
  });

  it('partitions one peer, leaves the others alone, and clears at run time', () => {
    const h = new FaultHook(new Prng(1));
    h.setFaults(2, { partition: true });
    expect(h.plan(2)).toBe(0);
    expect(h.plan(3)).toBe(1);
    expect(h.describe()).toEqual({ 2: { partition: true } });
    h.clearFaults(2);
    expect(h.plan(2)).toBe(1);
    expect(h.countersFor(2).dropped).toBe(1);
    h.setFaults(2, { partition: true });
    h.setFaults(3, { delayMs: 5 });
    h.clearFaults();
    expect(h.describe()).toEqual({});
    h.setFaults(4, { partition: false, dropProbability: 0 });
    expect(h.active).toBe(false); // an empty spec clears
  });

  it('the same seed makes the same decisions', () => {
    const run = (): string => {
      const h = new FaultHook(new Prng(42));
      h.setFaults(2, { dropProbability: 0.3, duplicateProbability: 0.3, delayMs: [1, 50] });
      let out = '';
      for (let i = 0; i < 200; i++) out += `${h.plan(2)}:${h.delayMs},`;
      return out;
    };
    expect(run()).toBe(run());
  });

  it('drops, duplicates and delays at the set rates, within range', () => {
    const h = new FaultHook(new Prng(7));
    h.setFaults(2, { dropProbability: 0.25, duplicateProbability: 0.1, delayMs: [10, 20] });
    const n = 20_000;
    let dropped = 0;
    let dup = 0;
    for (let i = 0; i < n; i++) {
      const c = h.plan(2);
      if (c === 0) dropped++;
      else {
        expect(h.delayMs).toBeGreaterThanOrEqual(10);
        expect(h.delayMs).toBeLessThanOrEqual(20);
      }
      if (c === 2) dup++;
    }
    // 5 standard deviations either side.
    expect(Math.abs(dropped - n * 0.25)).toBeLessThan(5 * Math.sqrt(n * 0.25 * 0.75));
    expect(Math.abs(dup - n * 0.75 * 0.1)).toBeLessThan(5 * Math.sqrt(n * 0.75 * 0.1 * 0.9));
    expect(h.countersFor(2)).toEqual({ dropped, duplicated: dup, delayed: n - dropped });
  });

  it('rejects invalid specs with a typed error', () => {
    const h = new FaultHook(new Prng(1));
    expect(() => h.setFaults(2, { dropProbability: 1.5 })).toThrow(InvalidFaultSpecError);
    expect(() => h.setFaults(2, { duplicateProbability: -0.1 })).toThrow(/duplicateProbability/);
    expect(() => h.setFaults(2, { delayMs: [30, 10] })).toThrow(/delay/);
    expect(() => h.setFaults(2, { delayMs: -1 })).toThrow(/delay/);
    expect(() => h.setFaults(2, { dropProbability: Number.NaN })).toThrow(
      expect.objectContaining({ code: 'rpc.invalid_fault_spec' }),
    );
    expect(h.active).toBe(false);
  });
});

describe('faults on real connections', () => {
  const nodes = new Nodes();
  afterEach(() => nodes.closeAll());

  it('a partition drops requests (the call times out ambiguous) until cleared', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const h = countRuns(n2.ctx, ECHO);
    await n1.ctx.call(2, ECHO, Buffer.alloc(0));
    n1.ctx.faults.setFaults(2, { partition: true });
    const e = await rejection(n1.ctx.call(2, ECHO, Buffer.alloc(0), { timeoutMs: 50 }));
    expect([e.code, e.ambiguous]).toEqual(['rpc.timeout', true]);
    expect(n1.ctx.send(2, ECHO, Buffer.alloc(0))).toBe(true); // accepted, then lost on the "wire"
    expect(n1.ctx.faults.countersFor(2).dropped).toBe(2);
    expect(h.ran).toBe(1);
    n1.ctx.faults.clearFaults();
    expect((await n1.ctx.call(2, ECHO, Buffer.from('back'))).toString()).toBe('back');
  });

  it('an asymmetric partition (responses dropped) is the classic ambiguous case: the handler ran', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const h = countRuns(n2.ctx, ECHO);
    n2.ctx.faults.setFaults(1, { partition: true }); // n2 → n1 only
    const e = await rejection(n1.ctx.call(2, ECHO, Buffer.alloc(0), { timeoutMs: 50 }));
    expect([e.code, e.ambiguous]).toEqual(['rpc.timeout', true]);
    expect(h.ran).toBe(1);
    expect(n2.ctx.faults.countersFor(1).dropped).toBe(1);
  });

  it('drops one-way messages at the set rate; the counter matches what went missing', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    let got = 0;
    n2.ctx.register(ONE_WAY, () => {
      got++;
    });
    registerEcho(n2.ctx);
    n1.ctx.faults.setFaults(2, { dropProbability: 0.3 });
    const n = 4000;
    for (let i = 0; i < n; i++) n1.ctx.send(2, ONE_WAY, Buffer.alloc(8));
    const dropped = n1.ctx.faults.countersFor(2).dropped;
    await waitFor(() => got === n - dropped, 5000, 'the surviving one-ways');
    expect(Math.abs(dropped - n * 0.3)).toBeLessThan(5 * Math.sqrt(n * 0.3 * 0.7));
    n1.ctx.faults.clearFaults(2);
    await n1.ctx.call(2, ECHO, Buffer.alloc(0)); // ordered after every one-way: nothing more arrives
    expect(got).toBe(n - dropped);
  });

  it('delays messages by the set time', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    registerEcho(n2.ctx);
    await n1.ctx.call(2, ECHO, Buffer.alloc(0));
    n1.ctx.faults.setFaults(2, { delayMs: 80 });
    const t0 = performance.now();
    await n1.ctx.call(2, ECHO, Buffer.alloc(0));
    expect(performance.now() - t0).toBeGreaterThanOrEqual(75);
    expect(n1.ctx.faults.countersFor(2).delayed).toBe(1);
  });

  it('a delay range reorders one-way messages', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const got = collectOneWays(n2.ctx, (p) => p.readUInt32BE(0));
    n1.ctx.faults.setFaults(2, { delayMs: [0, 40] });
    for (let i = 0; i < 50; i++) {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(i);
      n1.ctx.send(2, ONE_WAY, b);
    }
    await waitFor(() => got.length === 50, 5000, 'all delayed one-ways');
    expect([...got].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(got).not.toEqual([...got].sort((a, b) => a - b));
  });

  it('duplicates: the request runs twice, the caller gets one answer, the spare is counted', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const h = countRuns(n2.ctx, ECHO);
    n1.ctx.faults.setFaults(2, { duplicateProbability: 1 });
    expect((await n1.ctx.call(2, ECHO, Buffer.from('x'))).toString()).toBe('x');
    await waitFor(() => n1.ctx.metrics.peer(2).unmatchedResponses === 1, 5000, 'the duplicate response');
    expect(h.ran).toBe(2);
    expect(n1.ctx.faults.countersFor(2).duplicated).toBe(1);
  });
});

describe('every call settles under random faults', () => {
  const nodes = new Nodes();
  afterEach(() => nodes.closeAll());

  it('with drops, delays and duplicates both ways, each call answers correctly or fails typed, and nothing leaks', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const runs = new Map<string, number>();
    n2.ctx.register(ECHO, async (p) => {
      runs.set(p.toString(), (runs.get(p.toString()) ?? 0) + 1);
      return p;
    });
    await n1.ctx.call(2, ECHO, Buffer.from('warm'));
    const spec = { dropProbability: 0.15, duplicateProbability: 0.15, delayMs: [0, 20] as const };
    n1.ctx.faults.setFaults(2, spec);
    n2.ctx.faults.setFaults(1, spec);
    const n = 600;
    const outcomes = await Promise.allSettled(
      Array.from({ length: n }, (_, i) => n1.ctx.call(2, ECHO, Buffer.from(`k${i}`), { timeoutMs: 500 })),
    );
    let ok = 0;
    outcomes.forEach((o, i) => {
      if (o.status === 'fulfilled') {
        ok++;
        expect(o.value.toString()).toBe(`k${i}`);
        expect(runs.get(`k${i}`)).toBeGreaterThanOrEqual(1);
      } else {
        // Every request entered the faulty network, so every failure is ambiguous.
        expect([o.reason.code, o.reason.ambiguous]).toEqual(['rpc.timeout', true]);
      }
    });
    // Both directions dropped ~15 %: about 72 % succeed.
    expect(ok).toBeGreaterThan(n * 0.6);
    expect(ok).toBeLessThan(n * 0.85);
    const f1 = n1.ctx.faults.countersFor(2);
    const f2 = n2.ctx.faults.countersFor(1);
    expect(f1.dropped + f2.dropped).toBeGreaterThan(0);
    expect(f1.duplicated + f2.duplicated).toBeGreaterThan(0);
    expect([...runs.values()].some((r) => r === 2)).toBe(true); // a duplicated request ran twice
    n1.ctx.faults.clearFaults();
    n2.ctx.faults.clearFaults();
    expect((await n1.ctx.call(2, ECHO, Buffer.from('after'))).toString()).toBe('after');
    expect(n1.ctx.metrics.peer(2).callsAbandoned).toBe(n - ok);
    expect(n1.ctx.pendingCalls()).toBe(0);
  });
});

describe('reconnect backoff', () => {
  it('grows exponentially to the cap, with jitter inside its bounds, replayable from the seed', () => {
    const opts = { initialMs: 50, maxMs: 1000, multiplier: 2, jitter: 0.2 };
    const prng = new Prng(9);
    const delays = Array.from({ length: 8 }, (_, i) => backoffDelay(i, opts, prng));
    const bases = [50, 100, 200, 400, 800, 1000, 1000, 1000];
    delays.forEach((d, i) => {
      expect(d).toBeGreaterThanOrEqual((bases[i] as number) * 0.8);
      expect(d).toBeLessThan((bases[i] as number) * 1.2);
    });
    expect(new Set(delays.slice(5)).size).toBe(3); // jittered, not lockstep
    const again = new Prng(9);
    expect(Array.from({ length: 8 }, (_, i) => backoffDelay(i, opts, again))).toEqual(delays);
    expect(backoffDelay(3, { ...opts, jitter: 0 }, prng)).toBe(400);
  });
});
