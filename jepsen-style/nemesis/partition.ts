/**
 * partition: network faults between nodes, each node on its own loopback address.
 *
 * Shapes (Jepsen's partitioners), as the set of directed pairs [from, to] that are cut:
 *   isolate  — one node cut off from all others;
 *   halves   — a random minority | majority split;
 *   ring     — majority ring: each node still reaches a majority (its nearest neighbours
 *              on a ring) but no two nodes agree on which majority;
 *   bridge   — two halves that only one bridge node connects;
 *   flaky    — no cut, but one node's RPC messages are dropped (20 %), delayed
 *              (0–50 ms, reordering) and duplicated (10 %) through the fault hook;
 *   leaseholder — n1, after the lease of the newest range (the tables or keys under
 *              test) was moved to it, cut off from all others for 2× the lease duration + 12 s (the
 *              majority's gateways first wait out a whole 10 s KV RPC timeout on the cut-off
 *              holder, then need the old lease's expiry and a new lease before a write
 *              succeeds again — measured: with 2× lease + 4 s no write succeeded at all)
 *              (`partition-leaseholder`): the majority elects a new holder once the lease
 *              expires and writes go on there, while the old holder's own clients keep
 *              asking it — a build that serves reads on an expired lease (the
 *              expired-lease-reads canary) answers them from its stale state.
 * Cuts go through iptables (iptables.ts) where it is usable; otherwise through each
 * node's RPC fault hook (`POST /_admin/faults`, partition: true per peer). Heal removes
 * every rule / clears every hook. Evidence: the rules or hook calls made.
 */
import type { Prng } from '../../src/util/index.js';
import { CairnError } from '../../src/util/index.js';
import { adminPost, clusterRanges } from '../control/admin.js';
import { IptablesPartitioner, iptablesAvailable } from './iptables.js';
import type { FaultStart, Nemesis, NemesisContext } from './nemesis.js';
import { minority, pickNodes } from './nemesis.js';

/** Cuts between node `a` and every other node, both directions. */
function isolationCuts(a: number, n: number): [number, number][] {
  const cuts: [number, number][] = [];
  for (let b = 0; b < n; b++) if (b !== a) cuts.push([a, b], [b, a]);
  return cuts;
}

export type PartitionShape = 'isolate' | 'halves' | 'ring' | 'bridge' | 'flaky' | 'leaseholder';

/** Directed pairs [from, to] (0-based node indexes) that must not communicate. */
export function partitionCuts(shape: Exclude<PartitionShape, 'flaky' | 'leaseholder'>, n: number, prng: Prng): [number, number][] {
  const cuts: [number, number][] = [];
  const cutBoth = (a: number, b: number): void => {
    cuts.push([a, b], [b, a]);
  };
  const order = pickNodes(prng, n, n);
  for (let i = order.length - 1; i > 0; i--) {
    const j = prng.intn(i + 1); // pickNodes sorts; the shapes need a random order
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  switch (shape) {
    case 'isolate':
    case 'halves': {
      const k = shape === 'isolate' ? 1 : minority(n);
      const side = new Set(order.slice(0, k));
      for (const a of side) for (let b = 0; b < n; b++) if (!side.has(b)) cutBoth(a, b);
      return cuts;
    }
    case 'bridge': {
      // order[0] is the bridge: it keeps both sides.
      const half = Math.floor((n - 1) / 2);
      const left = new Set(order.slice(1, 1 + half));
      const right = order.slice(1 + half);
      for (const a of left) for (const b of right) cutBoth(a, b);
      return cuts;
    }
    case 'ring': {
      // Each node keeps its ring neighbours within ⌈⌊n/2⌋/2⌉ steps: itself plus them is a
      // majority, and no two nodes' majorities coincide. Below 5 nodes no such ring
      // exists; halves stand in.
      if (n < 5) return partitionCuts('halves', n, prng);
      const reach = Math.floor(n / 2);
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          const d = Math.min(j - i, n - (j - i));
          if (d > Math.ceil(reach / 2)) cutBoth(order[i]!, order[j]!);
        }
      }
      return cuts;
    }
  }
}

export class PartitionNemesis implements Nemesis {
  readonly name = 'partition';
  private iptables: IptablesPartitioner | undefined;
  private hookUsed = false;
  /** Each node's cumulative hook counters at the last heal, so evidence shows this window's. */
  private readonly totals = new Map<number, Record<string, number>>();

  constructor(
    private readonly shapes: readonly PartitionShape[] = ['isolate', 'halves', 'ring', 'bridge', 'flaky'],
    useIptables: boolean = iptablesAvailable(),
    /** The nodes' lease duration (ms): the leaseholder shape lasts 2× it + 12 s. */
    private readonly leaseMs = 6000,
  ) {
    if (useIptables) this.iptables = new IptablesPartitioner();
  }

  private async hook(ctx: NemesisContext, i: number, body: unknown): Promise<unknown> {
    const url = ctx.target.nodes[i]!.httpUrl;
    if (url === undefined) throw new CairnError('jepsen.unsupported', `jepsen: partition needs Cairn's admin endpoint (${ctx.target.kind} has none)`);
    this.hookUsed = true;
    return adminPost(url, '/_admin/faults', body);
  }

  async start(ctx: NemesisContext): Promise<FaultStart> {
    const n = ctx.target.nodes.length;
    const shape = this.shapes[ctx.prng.intn(this.shapes.length)]!;
    const evidence: string[] = [];
    if (shape === 'flaky') {
      const [victim] = pickNodes(ctx.prng, n, 1);
      const spec = { dropProbability: 0.2, delayMs: [0, 50], duplicateProbability: 0.1 };
      for (let b = 0; b < n; b++) {
        if (b === victim) continue;
        await this.hook(ctx, victim!, { nodeId: b + 1, spec });
        evidence.push(`hook n${victim! + 1}→n${b + 1} ${JSON.stringify(spec)}`);
      }
      return { description: `flaky n${victim! + 1}`, nodes: [victim! + 1], evidence };
    }
    let durationMs: number | undefined;
    let cuts: [number, number][];
    if (shape === 'leaseholder') {
      const victim = await this.leaseToFirstNode(ctx, evidence);
      cuts = isolationCuts(victim, n);
      durationMs = Math.round(this.leaseMs * 2 + 12_000);
    } else {
      cuts = partitionCuts(shape, n, ctx.prng);
    }
    const host = (i: number): string => ctx.target.nodes[i]!.host;
    if (this.iptables !== undefined) {
      this.iptables.install(cuts.map(([a, b]) => [host(a), host(b)] as const));
      evidence.push(`iptables: ${cuts.length} DROP rules`);
    } else {
      for (const [a, b] of cuts) await this.hook(ctx, a, { nodeId: b + 1, spec: { partition: true } });
      evidence.push(`fault hook: ${cuts.length} directed cuts`);
    }
    const affected = [...new Set(cuts.flat())].sort((a, b) => a - b);
    return { description: `${shape} ${cuts.filter(([a, b]) => a < b).map(([a, b]) => `n${a + 1}-n${b + 1}`).join(' ')}`, nodes: affected.map((i) => i + 1), evidence, ...(durationMs === undefined ? {} : { durationMs }) };
  }

  /**
   * The leaseholder shape's victim: n1, after the newest range's lease was moved there
   * (so that workloads can give n1's clients a role — kv-register-n1-reads); the current
   * holder when the transfer fails, a random node when no holder is known.
   */
  private async leaseToFirstNode(ctx: NemesisContext, evidence: string[]): Promise<number> {
    // The transfer is retried (up to ~5 s, reading the holder again each time): right after start-up or a
    // lease change the named holder may refuse it (`kv.not_lease_holder` naming itself while its lease is not
    // yet usable), and a window whose victim is not n1 does not put the n1-reads workloads on the stale path.
    for (let attempt = 1; ; attempt++) {
      const ranges = (await clusterRanges(ctx.target.nodes.filter((m) => ctx.target.pid(m.id - 1) !== undefined)))?.filter((r) => r.leaseholder !== undefined) ?? [];
      const hot = ranges.sort((a, b) => b.rangeId - a.rangeId)[0];
      if (hot === undefined) {
        const i = pickNodes(ctx.prng, ctx.target.nodes.length, 1)[0]!;
        evidence.push(`leaseholder unknown: n${i + 1} picked at random`);
        return i;
      }
      if (hot.leaseholder === 1) {
        evidence.push(`n1 holds r${hot.rangeId}'s lease`);
        break;
      }
      try {
        await adminPost(ctx.target.nodes[hot.leaseholder! - 1]!.httpUrl!, '/_admin/transfer-lease', { rangeId: hot.rangeId, toNodeId: 1 });
        evidence.push(`r${hot.rangeId} lease moved n${hot.leaseholder} → n1${attempt > 1 ? ` (attempt ${attempt})` : ''}`);
        break;
      } catch (e) {
        if (attempt < 10) {
          await new Promise((r) => setTimeout(r, 500));
          continue;
        }
        evidence.push(`r${hot.rangeId} lease stays on n${hot.leaseholder} (transfer failed ${attempt} times: ${e instanceof Error ? e.message : String(e)})`);
        return hot.leaseholder! - 1;
      }
    }
    // Let n1's gateway learn (from its own requests) that the lease is local before the cut.
    await new Promise((r) => setTimeout(r, 1500));
    return 0;
  }

  async stop(ctx: NemesisContext): Promise<readonly string[]> {
    this.iptables?.heal();
    const evidence: string[] = [];
    if (this.hookUsed) {
      for (let i = 0; i < ctx.target.nodes.length; i++) {
        // The answer carries the hook's cumulative counters (dropped, delayed, duplicated).
        const r = (await this.hook(ctx, i, { clear: true }).catch(() => undefined)) as { counters?: Record<string, number> } | undefined;
        if (r?.counters === undefined) continue;
        const prev = this.totals.get(i) ?? {};
        this.totals.set(i, r.counters);
        const delta = Object.entries(r.counters).map(([k, v]) => [k, v - (prev[k] ?? 0)] as const).filter(([, d]) => d > 0);
        if (delta.length > 0) evidence.push(`n${i + 1} hook ${delta.map(([k, d]) => `${k} ${d}`).join(', ')}`);
      }
    }
    return evidence.length > 0 ? evidence : ['healed'];
  }

  async healAll(ctx: NemesisContext): Promise<void> {
    await this.stop(ctx);
    this.iptables?.removeAll();
  }
}
