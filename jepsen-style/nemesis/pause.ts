/**
 * pause: SIGSTOP a node's process(es), SIGCONT on heal — a process that stops without
 * dying (GC pause, VM stall). Fault durations alternate between shorter and longer than
 * the lease duration (`leaseMs`), so both "pause and come back still leaseholder" and
 * "lease expired while paused" are exercised. Evidence: the process state read from
 * /proc/<pid>/stat ('T' = stopped), read once the signal has taken effect.
 *
 * pause-leaseholder: SIGSTOP of the node holding the lease of the newest range (the
 * tables or keys under test) for `factor` × the lease duration (default 1.5×), so the
 * lease expires and moves while the writes go on through the new holder; at SIGCONT the
 * old holder's queued requests meet a lease it no longer holds — the expired-lease-reads
 * canary serves them from its stale state, which a linearizability checker sees when the
 * read was invoked after a newer write completed (clients need an operation timeout
 * shorter than the pause, so that such reads are invoked during it). Not yet observed:
 * the majority's gateways keep sending to the cached (paused) holder and wait out 10 s
 * RPC timeouts, so few newer writes complete during a pause (RESULTS.md).
 */
import { readFileSync } from 'node:fs';
import type { FaultStart, Nemesis, NemesisContext } from './nemesis.js';
import { minority, pickNodes } from './nemesis.js';
import { leaseholderIndex } from './kill.js';

function procState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return '?';
  }
}

/** Waits (bounded) until the process reaches (stopped) or leaves (running) state T. */
async function settle(pid: number, stopped: boolean): Promise<string> {
  const deadline = Date.now() + 1000;
  for (;;) {
    const st = procState(pid);
    if ((st === 'T') === stopped || st === '?' || Date.now() > deadline) return st;
    await new Promise((r) => setTimeout(r, 5));
  }
}

export class PauseNemesis implements Nemesis {
  readonly name = 'pause';
  private paused: number[] = [];
  private count = 0;

  /** leaseMs: the lease duration of the system under test (Cairn's default is 6 s). */
  constructor(private readonly leaseMs = 6000) {}

  async start(ctx: NemesisContext): Promise<FaultStart> {
    const n = ctx.target.nodes.length;
    const targets = pickNodes(ctx.prng, n, ctx.prng.bool() ? 1 : minority(n));
    const long = this.count++ % 2 === 1;
    const durationMs = long ? Math.round(this.leaseMs * 1.5) : Math.round(this.leaseMs * 0.3);
    const evidence: string[] = [];
    for (const i of targets) {
      const pid = ctx.target.pid(i);
      if (pid === undefined) continue;
      await ctx.target.pause(i, true);
      this.paused.push(i);
      evidence.push(`SIGSTOP n${i + 1} pid ${pid}: state ${await settle(pid, true)}`);
    }
    return { description: `pause ${targets.map((i) => `n${i + 1}`).join(',')} for ${durationMs} ms (${long ? 'longer' : 'shorter'} than the lease)`, nodes: targets.map((i) => i + 1), evidence, durationMs };
  }

  async stop(ctx: NemesisContext): Promise<readonly string[]> {
    const evidence: string[] = [];
    for (const i of this.paused) {
      await ctx.target.pause(i, false);
      const pid = ctx.target.pid(i);
      evidence.push(`SIGCONT n${i + 1} pid ${pid ?? '?'}: state ${pid === undefined ? '?' : await settle(pid, false)}`);
    }
    this.paused = [];
    return evidence;
  }

  async healAll(ctx: NemesisContext): Promise<void> {
    await this.stop(ctx);
    for (let i = 0; i < ctx.target.nodes.length; i++) await ctx.target.pause(i, false);
  }
}

export class PauseLeaseholderNemesis implements Nemesis {
  readonly name = 'pause-leaseholder';
  private paused: number | undefined;

  constructor(
    private readonly leaseMs = 6000,
    private readonly factor = 1.5,
  ) {}

  async start(ctx: NemesisContext): Promise<FaultStart> {
    const lh = await leaseholderIndex(ctx);
    const i = lh ?? pickNodes(ctx.prng, ctx.target.nodes.length, 1)[0]!;
    const pid = ctx.target.pid(i);
    const durationMs = Math.round(this.leaseMs * this.factor);
    const evidence: string[] = [lh === undefined ? `leaseholder unknown: n${i + 1} picked at random` : `n${i + 1} holds the newest range's lease`];
    if (pid !== undefined) {
      await ctx.target.pause(i, true);
      this.paused = i;
      evidence.push(`SIGSTOP n${i + 1} pid ${pid}: state ${await settle(pid, true)}`);
    }
    return { description: `pause leaseholder n${i + 1} for ${durationMs} ms (${this.factor}× the ${this.leaseMs} ms lease)`, nodes: [i + 1], evidence, durationMs };
  }

  async stop(ctx: NemesisContext): Promise<readonly string[]> {
    const i = this.paused;
    this.paused = undefined;
    if (i === undefined) return [];
    await ctx.target.pause(i, false);
    const pid = ctx.target.pid(i);
    return [`SIGCONT n${i + 1} pid ${pid ?? '?'}: state ${pid === undefined ? '?' : await settle(pid, false)}`];
  }

  async healAll(ctx: NemesisContext): Promise<void> {
    await this.stop(ctx);
    for (let i = 0; i < ctx.target.nodes.length; i++) await ctx.target.pause(i, false);
  }
}
