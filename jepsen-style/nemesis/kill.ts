/**
 * kill: SIGKILL of node processes — the server's own pid, never a wrapper — then restart
 * on the same data directory when the fault is healed.
 *
 * Targets, chosen per fault: one node, a minority, the leaseholder of a hot range (from
 * /_status/ranges, Cairn only; a random node otherwise), or all nodes. Evidence: each
 * killed pid and that it no longer exists; the new pid after restart.
 */
import { isAlive } from '../control/target.js';
import { clusterRanges } from '../control/admin.js';
import type { FaultStart, Nemesis, NemesisContext } from './nemesis.js';
import { minority, pickNodes } from './nemesis.js';

export type KillMode = 'one' | 'minority' | 'leaseholder' | 'all';

/** The 0-based index of the node holding the lease of the newest range (the tables under test); undefined when unknown. */
export async function leaseholderIndex(ctx: NemesisContext): Promise<number | undefined> {
  const live = ctx.target.nodes.filter((n) => ctx.target.pid(n.id - 1) !== undefined);
  const ranges = (await clusterRanges(live))?.filter((r) => r.leaseholder !== undefined) ?? [];
  // The newest ranges hold the tables under test (r1 starts with the system keyspace).
  const hot = ranges.sort((a, b) => b.rangeId - a.rangeId)[0];
  return hot?.leaseholder === undefined ? undefined : hot.leaseholder - 1;
}

export class KillNemesis implements Nemesis {
  readonly name = 'kill';
  private killed: number[] = [];

  constructor(private readonly modes: readonly KillMode[] = ['one', 'minority', 'leaseholder', 'all']) {}

  async start(ctx: NemesisContext): Promise<FaultStart> {
    const n = ctx.target.nodes.length;
    let mode = this.modes[ctx.prng.intn(this.modes.length)]!;
    let targets: number[];
    if (mode === 'leaseholder') {
      const lh = await leaseholderIndex(ctx);
      targets = lh === undefined ? pickNodes(ctx.prng, n, 1) : [lh];
      if (lh === undefined) mode = 'one';
    } else {
      targets = mode === 'all' ? pickNodes(ctx.prng, n, n) : pickNodes(ctx.prng, n, mode === 'one' ? 1 : minority(n));
    }
    const evidence: string[] = [];
    for (const i of targets) {
      const pid = ctx.target.pid(i);
      if (pid === undefined) {
        evidence.push(`n${i + 1} was already down`);
        continue;
      }
      await ctx.target.kill(i);
      evidence.push(`SIGKILL n${i + 1} pid ${pid}: ${isAlive(pid) ? 'STILL ALIVE' : 'gone'}`);
      this.killed.push(i);
    }
    return { description: `kill ${targets.map((i) => `n${i + 1}`).join(',')} (${mode})`, nodes: targets.map((i) => i + 1), evidence };
  }

  async stop(ctx: NemesisContext): Promise<readonly string[]> {
    const evidence: string[] = [];
    for (const i of this.killed) {
      await ctx.target.restart(i);
      evidence.push(`restarted n${i + 1} as pid ${ctx.target.pid(i) ?? '?'}`);
    }
    this.killed = [];
    return evidence;
  }

  async healAll(ctx: NemesisContext): Promise<void> {
    await this.stop(ctx);
    for (let i = 0; i < ctx.target.nodes.length; i++) if (ctx.target.pid(i) === undefined) await ctx.target.restart(i);
  }
}
