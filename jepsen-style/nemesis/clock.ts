/**
 * clock: skews one node's HLC physical time source through `POST /_admin/clock
 * { offsetMs }` — CockroachDB's clock tests, black box.
 *
 *   jump    — one node's clock moves by ±f × maxOffset for the fault window;
 *   strobe  — the offset flips between +f × maxOffset and 0 every `strobeMs`.
 * Factors: 0.4 and 0.8 (below the max offset: the cluster must stay correct) and, unless
 * `belowMaxOffsetOnly`, 2.0 (beyond it: the node must refuse to serve — its errors in
 * the window are the evidence — rather than break consistency). Heal sets offset 0.
 */
import { CairnError } from '../../src/util/index.js';
import { adminPost } from '../control/admin.js';
import type { FaultStart, Nemesis, NemesisContext } from './nemesis.js';

export class ClockNemesis implements Nemesis {
  readonly name: string;
  private skewed: number[] = [];
  private strobe: NodeJS.Timeout | undefined;
  /** The strobe's calls, chained, so a heal can never be overtaken by a late strobe. */
  private inflight: Promise<void> = Promise.resolve();

  constructor(
    private readonly maxOffsetMs = 500,
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
