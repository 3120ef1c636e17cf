/**
 * split, merge and lease: range reorganisation under load.
 *
 *   split — `ALTER TABLE <t> SPLIT AT VALUES (<k>)` on one of the workload's tables at a
 *           random key (through SQL on a random live node);
 *   merge — a random range other than the first is merged into its left neighbour
 *           (`POST /_admin/merge { key: <left's start key> }` through a random live node:
 *           the left range absorbs it), undoing a split (so: `split,merge`, with `kill`
 *           too); with one range it logs "nothing to merge";
 *   lease — moves a range's lease to another node through `POST /_admin/transfer-lease
 *           { rangeId, toNodeId }`, the range picked from /_status/ranges.
 * Both are instantaneous: stop() only collects evidence — the ranges / leaseholders that
 * changed between the snapshots taken before and after (leadershipChanges).
 */
import pg from 'pg';
import { CairnError } from '../../src/util/index.js';
import { adminPost, clusterRanges, leadershipChanges } from '../control/admin.js';
import type { RangeLeadership } from '../control/admin.js';
import type { FaultStart, Nemesis, NemesisContext } from './nemesis.js';

function snapshot(ctx: NemesisContext): Promise<RangeLeadership[] | undefined> {
  return clusterRanges(ctx.target.nodes.filter((n) => ctx.target.pid(n.id - 1) !== undefined));
}

function liveNode(ctx: NemesisContext): number {
  const live = ctx.target.nodes.map((_, i) => i).filter((i) => ctx.target.pid(i) !== undefined);
  if (live.length === 0) throw new CairnError('jepsen.no_live_node', 'jepsen: no live node');
  return live[ctx.prng.intn(live.length)]!;
}

abstract class RangeNemesis implements Nemesis {
  abstract readonly name: string;
  private before: RangeLeadership[] | undefined;

  protected abstract act(ctx: NemesisContext, ranges: RangeLeadership[] | undefined): Promise<FaultStart>;

  async start(ctx: NemesisContext): Promise<FaultStart> {
    this.before = await snapshot(ctx);
    return this.act(ctx, this.before);
  }

  async stop(ctx: NemesisContext): Promise<readonly string[]> {
    const after = await snapshot(ctx);
    const before = this.before;
    this.before = undefined;
    if (before === undefined || after === undefined) return ['range status unavailable'];
    const changes = leadershipChanges(before, after);
    return changes.length > 0 ? changes : [`no range or lease changed (${after.length} ranges)`];
  }

  async healAll(): Promise<void> {
    this.before = undefined;
  }
}

export class SplitNemesis extends RangeNemesis {
  readonly name = 'split';
  constructor(private readonly tables: readonly string[]) {
    super();
  }

  protected async act(ctx: NemesisContext): Promise<FaultStart> {
    if (this.tables.length === 0) throw new CairnError('jepsen.unsupported', 'jepsen: split: the workload names no tables');
    const table = this.tables[ctx.prng.intn(this.tables.length)]!;
    const key = ctx.prng.intn(1000);
    const i = liveNode(ctx);
    const c = new pg.Client({ connectionString: ctx.target.nodes[i]!.sqlUrl, connectionTimeoutMillis: 5000, query_timeout: 10_000 });
    c.on('error', () => undefined);
    let outcome: string;
    try {
      await c.connect();
      await c.query(`ALTER TABLE ${table} SPLIT AT VALUES (${key})`);
      outcome = 'ok';
    } catch (e) {
      outcome = `error: ${e instanceof Error ? e.message : String(e)}`;
    } finally {
      await c.end().catch(() => undefined);
    }
    return { description: `split ${table} at ${key} via n${i + 1}`, nodes: [i + 1], evidence: [`SPLIT AT: ${outcome}`], durationMs: 1000 };
  }
}

export class LeaseNemesis extends RangeNemesis {
  readonly name = 'lease';

  protected async act(ctx: NemesisContext, ranges: RangeLeadership[] | undefined): Promise<FaultStart> {
    const held = (ranges ?? []).filter((r) => r.leaseholder !== undefined);
    if (held.length === 0) return { description: 'lease: no range with a known leaseholder', nodes: [], evidence: [], durationMs: 1000 };
    const r = held[ctx.prng.intn(held.length)]!;
    const n = ctx.target.nodes.length;
    const to = ((r.leaseholder! - 1 + 1 + ctx.prng.intn(n - 1)) % n) + 1;
    let outcome: string;
    try {
      await adminPost(ctx.target.nodes[r.leaseholder! - 1]!.httpUrl!, '/_admin/transfer-lease', { rangeId: r.rangeId, toNodeId: to });
      outcome = 'ok';
    } catch (e) {
      outcome = `error: ${e instanceof Error ? e.message : String(e)}`;
    }
    return { description: `transfer r${r.rangeId} lease n${r.leaseholder} → n${to}`, nodes: [r.leaseholder!, to], evidence: [`transfer: ${outcome}`], durationMs: 1000 };
  }
}

export class MergeNemesis extends RangeNemesis {
  readonly name = 'merge';

  protected async act(ctx: NemesisContext, ranges: RangeLeadership[] | undefined): Promise<FaultStart> {
    // Hex strings of the start keys order as the keys do (same digits, a prefix first).
    const sorted = (ranges ?? []).filter((r) => r.startKey !== undefined).sort((a, b) => (a.startKey! < b.startKey! ? -1 : a.startKey! > b.startKey! ? 1 : 0));
    if (sorted.length < 2) return { description: `merge: ${sorted.length} range(s) known, nothing to merge`, nodes: [], evidence: [], durationMs: 1000 };
    const j = 1 + ctx.prng.intn(sorted.length - 1);
    const left = sorted[j - 1]!;
    const right = sorted[j]!;
    const i = liveNode(ctx);
    let outcome: string;
    try {
      const r = (await adminPost(ctx.target.nodes[i]!.httpUrl!, '/_admin/merge', { key: left.startKey }, 10_000)) as { merged?: { rangeId?: number } | null };
      outcome = r.merged === null || r.merged === undefined ? 'not merged (last range)' : `ok, r${r.merged.rangeId ?? '?'} now covers both`;
    } catch (e) {
      outcome = `error: ${e instanceof Error ? e.message : String(e)}`;
    }
    return { description: `merge r${right.rangeId} into r${left.rangeId} via n${i + 1}`, nodes: [i + 1], evidence: [`merge: ${outcome}`], durationMs: 1000 };
  }
}
