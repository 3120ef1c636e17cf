/**
 * clock: skews one node's HLC physical time source through `POST /_admin/clock
 * { offsetMs }` — CockroachDB's clock tests, black box.
 *
 *   jump    — one node's clock moves by ±f × maxOffset for the fault window;
 *   strobe  — the offset flips between +f × maxOffset and 0 every `strobeMs`.
 * Factors: 0.4 and 0.8 (below the max offset: the cluster must stay correct) and, unless
 * `belowMaxOffsetOnly`, 2.0 (beyond it: the node must refuse to serve — its errors in
 * the window are the evidence — rather than break consistency). Heal sets offset 0.
 *
 * clock-lag: one node R, not the leaseholder of the newest range, runs `skew` × maxOffset
 * slow (default −0.7×) and every other node delays its RPC messages to R by `lag` ×
 * maxOffset (default 0.5×, through the fault hook): a slow node behind slow links.
 * Everything stays inside the max offset, so a correct build must stay linearizable.
 * It was meant to make R's HLC lag (a transaction R starts just after a write elsewhere
 * would read below it, inside its uncertainty window — the skip-uncertainty-restart
 * canary's case), but it does not: src/rpc stamps a delayed message with the sender's
 * clock when it is finally flushed, so R keeps hearing current timestamps (RESULTS.md,
 * "skip-uncertainty-restart: not detected"). Evidence: the offset set, the hook's
 * delayed-message counters.
 */
import { CairnError } from '../../src/util/index.js';
import { adminPost } from '../control/admin.js';
import type { FaultStart, Nemesis, NemesisContext } from './nemesis.js';
import { leaseholderIndex } from './kill.js';

export class ClockNemesis implements Nemesis {
  readonly name: string;
  private skewed: number[] = [];
  private strobe: NodeJS.Timeout | undefined;
  /** The strobe's calls, chained, so a heal can never be overtaken by a late strobe. */
  private inflight: Promise<void> = Promise.resolve();

  constructor(
    private readonly maxOffsetMs: number = 500,
    private readonly belowMaxOffsetOnly = false,
    private readonly strobeMs = 200,
  ) {
    this.name = belowMaxOffsetOnly ? 'clock-safe' : 'clock';
  }

  private async set(ctx: NemesisContext, i: number, offsetMs: number): Promise<void> {
    const url = ctx.target.nodes[i]!.httpUrl;
    if (url === undefined) throw new CairnError('jepsen.unsupported', `jepsen: clock skew needs Cairn's admin endpoint (${ctx.target.kind} has none)`);
    await adminPost(url, '/_admin/clock', { offsetMs });
  }

  async start(ctx: NemesisContext): Promise<FaultStart> {
    const factors = this.belowMaxOffsetOnly ? [0.4, 0.8] : [0.4, 0.8, 2];
    const f = factors[ctx.prng.intn(factors.length)]!;
    const i = ctx.prng.intn(ctx.target.nodes.length);
    const offsetMs = Math.round(f * this.maxOffsetMs) * (ctx.prng.bool() ? 1 : -1);
    const strobe = ctx.prng.bool(0.3);
    await this.set(ctx, i, offsetMs);
    this.skewed.push(i);
    if (strobe) {
      let on = true;
      this.strobe = setInterval(() => {
        on = !on;
        this.inflight = this.inflight.then(() => this.set(ctx, i, on ? offsetMs : 0)).catch((e: unknown) => ctx.log(`clock strobe n${i + 1}: ${String(e)}`));
      }, this.strobeMs);
    }
    return {
      description: `${strobe ? 'strobe' : 'jump'} n${i + 1} ${offsetMs > 0 ? '+' : ''}${offsetMs} ms (${f}× max offset)`,
      nodes: [i + 1],
      evidence: [`n${i + 1} clock offset set to ${offsetMs} ms`],
    };
  }

  async stop(ctx: NemesisContext): Promise<readonly string[]> {
    if (this.strobe !== undefined) clearInterval(this.strobe);
    this.strobe = undefined;
    await this.inflight;
    const evidence: string[] = [];
    for (const i of this.skewed) {
      await this.set(ctx, i, 0);
      evidence.push(`n${i + 1} clock offset reset to 0`);
    }
    this.skewed = [];
    return evidence;
  }

  async healAll(ctx: NemesisContext): Promise<void> {
    await this.stop(ctx);
    for (let i = 0; i < ctx.target.nodes.length; i++) await this.set(ctx, i, 0).catch(() => undefined);
  }
}

/**
 * clock-writer: n1's clock runs `factor` × maxOffset ahead (default 0.6: the offset check
 * refuses a node at |offset| + ping uncertainty > 0.8 × max offset) for the fault window —
 * the writer's node of register-handoff, whose writes then carry timestamps above the other
 * gateways' clocks, inside their reads' uncertainty windows. A correct build must stay
 * linearizable; the skip-uncertainty-restart canary must not. Evidence: the offset set.
 */
export class ClockWriterNemesis implements Nemesis {
  readonly name = 'clock-writer';
  private on = false;

  constructor(
    private readonly maxOffsetMs: number = 500,
    private readonly factor = 0.6,
  ) {}

  private async set(ctx: NemesisContext, offsetMs: number): Promise<void> {
    const url = ctx.target.nodes[0]!.httpUrl;
    if (url === undefined) throw new CairnError('jepsen.unsupported', `jepsen: clock-writer needs Cairn's admin endpoint (${ctx.target.kind} has none)`);
    await adminPost(url, '/_admin/clock', { offsetMs });
  }

  async start(ctx: NemesisContext): Promise<FaultStart> {
    const offsetMs = Math.round(this.factor * this.maxOffsetMs);
    await this.set(ctx, offsetMs);
    this.on = true;
    return { description: `n1 clock +${offsetMs} ms (${this.factor}× max offset)`, nodes: [1], evidence: [`n1 clock offset set to ${offsetMs} ms`] };
  }

  async stop(ctx: NemesisContext): Promise<readonly string[]> {
    if (!this.on) return [];
    this.on = false;
    await this.set(ctx, 0);
    return ['n1 clock offset reset to 0'];
  }

  async healAll(ctx: NemesisContext): Promise<void> {
    this.on = true;
    await this.stop(ctx).catch(() => undefined);
  }
}

export class ClockLagNemesis implements Nemesis {
  readonly name = 'clock-lag';
  private lagging: number | undefined;

  constructor(
    private readonly maxOffsetMs: number = 500,
    private readonly skew = -0.7,
    private readonly lag = 0.5,
  ) {}

  private url(ctx: NemesisContext, i: number): string {
    const url = ctx.target.nodes[i]!.httpUrl;
    if (url === undefined) throw new CairnError('jepsen.unsupported', `jepsen: clock-lag needs Cairn's admin endpoint (${ctx.target.kind} has none)`);
    return url;
  }

  async start(ctx: NemesisContext): Promise<FaultStart> {
    const n = ctx.target.nodes.length;
    const lh = await leaseholderIndex(ctx);
    const others = Array.from({ length: n }, (_, i) => i).filter((i) => i !== lh && ctx.target.pid(i) !== undefined);
    const r = others[ctx.prng.intn(others.length)]!;
    const offsetMs = Math.round(this.skew * this.maxOffsetMs);
    const delayMs = Math.round(this.lag * this.maxOffsetMs);
    this.lagging = r;
    await adminPost(this.url(ctx, r), '/_admin/clock', { offsetMs });
    const evidence = [`n${r + 1} clock offset set to ${offsetMs} ms`];
    for (let b = 0; b < n; b++) {
      if (b === r) continue;
      await adminPost(this.url(ctx, b), '/_admin/faults', { nodeId: r + 1, spec: { delayMs } });
      evidence.push(`hook n${b + 1}→n${r + 1} delay ${delayMs} ms`);
    }
    return { description: `lag n${r + 1}: clock ${offsetMs} ms, messages to it +${delayMs} ms${lh === undefined ? '' : ` (leaseholder n${lh + 1})`}`, nodes: [r + 1], evidence };
  }

  async stop(ctx: NemesisContext): Promise<readonly string[]> {
    const r = this.lagging;
    this.lagging = undefined;
    if (r === undefined) return [];
    const evidence: string[] = [];
    await adminPost(this.url(ctx, r), '/_admin/clock', { offsetMs: 0 });
    evidence.push(`n${r + 1} clock offset reset to 0`);
    for (let b = 0; b < ctx.target.nodes.length; b++) {
      if (b === r) continue;
      const res = (await adminPost(this.url(ctx, b), '/_admin/faults', { clear: true }).catch(() => undefined)) as { counters?: Record<string, number> } | undefined;
      if (res?.counters !== undefined) evidence.push(`n${b + 1} hook delayed ${res.counters['delayed'] ?? 0} (cumulative)`);
    }
    return evidence;
  }

  async healAll(ctx: NemesisContext): Promise<void> {
    await this.stop(ctx).catch(() => undefined);
    for (let i = 0; i < ctx.target.nodes.length; i++) {
      await adminPost(this.url(ctx, i), '/_admin/clock', { offsetMs: 0 }).catch(() => undefined);
      await adminPost(this.url(ctx, i), '/_admin/faults', { clear: true }).catch(() => undefined);
    }
  }
}
