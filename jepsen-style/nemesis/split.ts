/**
 * split, merge and lease: range reorganisation under load.
 *
 *   split — `ALTER TABLE <t> SPLIT AT VALUES (<k>)` on one of the workload's tables at a
 *           random key (through SQL on a random live node);
 *   merge — a random range other than the first is merged into its left neighbour
 *           (`POST /_admin/merge { key: <left's start key> }` through a random live node:
 *           the left range absorbs it), undoing a split (so: `split,merge`, with `kill`
 *           too); with one range it logs "nothing to merge";
 *           Before merging, the right range's voters are moved onto the left's nodes
 *           (`POST /_admin/relocate`, at most 3 steps) so the merge is not refused with
 *           kv.merge_not_colocated (CockroachDB's AdminMerge relocates first too).
 *   lease — moves a range's lease to another node through `POST /_admin/transfer-lease
 *           { rangeId, toNodeId }`, the range picked from /_status/ranges.
 *   move  — moves one voter of a range of the workload's tables (`SHOW RANGES FROM TABLE t`
 *           through SQL) to a live node holding none: `POST /_admin/relocate { rangeId,
 *           addNodeId, removeNodeId }` through a random live node; evidence that it bit is
 *           the new descriptor ("r5 replicas n1,n2,n3 → n1,n2,n4").
 * All are instantaneous: stop() only collects evidence — the ranges / leaseholders that
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

const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e));
const nodeList = (ids: readonly number[]): string => ids.map((id) => `n${id}`).join(',');

/** Node ids (1-based) whose process is running. */
function liveIds(ctx: NemesisContext): number[] {
  return ctx.target.nodes.map((_, i) => i).filter((i) => ctx.target.pid(i) !== undefined).map((i) => i + 1);
}

/** Runs f on a fresh SQL connection to node index i (closed after). */
async function sqlOn<T>(ctx: NemesisContext, i: number, f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ctx.target.nodes[i]!.sqlUrl, connectionTimeoutMillis: 5000, query_timeout: 10_000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return await f(c);
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** POST /_admin/relocate through node index i; the new voters, sorted. */
async function relocate(ctx: NemesisContext, i: number, rangeId: number, addNodeId: number, removeNodeId: number): Promise<number[]> {
  const r = (await adminPost(ctx.target.nodes[i]!.httpUrl!, '/_admin/relocate', { rangeId, addNodeId, removeNodeId }, 30_000)) as { desc: { replicas: { nodeId: number; type: number }[] } };
  return r.desc.replicas.filter((x) => x.type === 0).map((x) => x.nodeId).sort((a, b) => a - b);
}

/** One of the workload's tables, at random; a workload naming none cannot be split or moved. */
function pickTable(ctx: NemesisContext, tables: readonly string[], nemesis: string): string {
  if (tables.length === 0) throw new CairnError('jepsen.unsupported', `jepsen: ${nemesis}: the workload names no tables`);
  return tables[ctx.prng.intn(tables.length)]!;
}

export class SplitNemesis extends RangeNemesis {
  readonly name = 'split';
  constructor(private readonly tables: readonly string[]) {
    super();
  }

  protected async act(ctx: NemesisContext): Promise<FaultStart> {
    const table = pickTable(ctx, this.tables, this.name);
    const key = ctx.prng.intn(1000);
    const i = liveNode(ctx);
    let outcome: string;
    try {
      await sqlOn(ctx, i, (c) => c.query(`ALTER TABLE ${table} SPLIT AT VALUES (${key})`));
      outcome = 'ok';
    } catch (e) {
      outcome = `error: ${errText(e)}`;
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
    const evidence = await this.colocate(ctx, i, left, right);
    let outcome: string;
    try {
      const r = (await adminPost(ctx.target.nodes[i]!.httpUrl!, '/_admin/merge', { key: left.startKey }, 10_000)) as { merged?: { rangeId?: number } | null };
      outcome = r.merged === null || r.merged === undefined ? 'not merged (last range)' : `ok, r${r.merged.rangeId ?? '?'} now covers both`;
    } catch (e) {
      outcome = `error: ${e instanceof Error ? e.message : String(e)}`;
    }
    return { description: `merge r${right.rangeId} into r${left.rangeId} via n${i + 1}`, nodes: [i + 1], evidence: [...evidence, `merge: ${outcome}`], durationMs: 1000 };
  }

  /** Moves right's voters onto left's nodes, one relocation per differing pair (at most 3). */
  private async colocate(ctx: NemesisContext, i: number, left: RangeLeadership, right: RangeLeadership): Promise<string[]> {
    if (left.voters === undefined || right.voters === undefined) return [];
    const live = liveIds(ctx);
    let voters = right.voters;
    const out: string[] = [];
    for (let step = 0; step < 3; step++) {
      const add = left.voters.find((id) => !voters.includes(id) && live.includes(id));
      const remove = voters.find((id) => !left.voters!.includes(id));
      if (add === undefined || remove === undefined) break;
      try {
        const next = await relocate(ctx, i, right.rangeId, add, remove);
        out.push(`colocate: r${right.rangeId} replicas ${nodeList(voters)} → ${nodeList(next)}`);
        voters = next;
      } catch (e) {
        out.push(`colocate: r${right.rangeId} n${remove} → n${add}: error: ${errText(e)}`);
        break;
      }
    }
    return out;
  }
}

export class MoveNemesis extends RangeNemesis {
  readonly name = 'move';
  constructor(private readonly tables: readonly string[]) {
    super();
  }

  protected async act(ctx: NemesisContext): Promise<FaultStart> {
    const table = pickTable(ctx, this.tables, this.name);
    const i = liveNode(ctx);
    let rows: { range_id: string | number; replicas: string }[];
    try {
      rows = (await sqlOn(ctx, i, (c) => c.query<{ range_id: string | number; replicas: string }>(`SHOW RANGES FROM TABLE ${table}`))).rows;
    } catch (e) {
      return { description: `move: SHOW RANGES FROM TABLE ${table} via n${i + 1} failed`, nodes: [i + 1], evidence: [`SHOW RANGES: error: ${errText(e)}`], durationMs: 1000 };
    }
    const live = liveIds(ctx);
    // SHOW RANGES lists voters first, then learners ('{1,2,3}'); a range mid-change is moved anyway (relocate finishes it).
    const ranges = rows.map((r) => ({ rangeId: Number(r.range_id), voters: r.replicas.replace(/[{}]/g, '').split(',').filter((x) => x !== '').map(Number) }));
    const movable = ranges.filter((r) => live.some((id) => !r.voters.includes(id)));
    if (movable.length === 0) return { description: `move: no range of ${table} has a live node without a replica`, nodes: [], evidence: [], durationMs: 1000 };
    const r = movable[ctx.prng.intn(movable.length)]!;
    const targets = live.filter((id) => !r.voters.includes(id));
    const add = targets[ctx.prng.intn(targets.length)]!;
    const remove = r.voters[ctx.prng.intn(r.voters.length)]!;
    let outcome: string;
    try {
      outcome = `r${r.rangeId} replicas ${nodeList(r.voters)} → ${nodeList(await relocate(ctx, i, r.rangeId, add, remove))}`;
    } catch (e) {
      outcome = `relocate: error: ${errText(e)}`;
    }
    return { description: `move ${table} r${r.rangeId} replica n${remove} → n${add} via n${i + 1}`, nodes: [remove, add], evidence: [outcome], durationMs: 1000 };
  }
}
