/**
 * Pre-splitting a table on a bench cluster and spreading its leases — what
 * `cockroach workload init` does with `ALTER TABLE … SPLIT AT` and
 * `ALTER TABLE … SCATTER` — through the nodes' HTTP admin hooks
 * (src/server/status-server.ts), for as long as SQL SPLIT AT / SCATTER is not
 * served by a real cluster's node:
 *
 *   SQL  SELECT oid FROM pg_class WHERE relname = $1  → table id
 *        (oid = 1,000,000 + id × 1000, sql/vtable/virtual-tables.ts)
 *   POST /_admin/split {key}           on node 1, once per split point
 *        (key = /Table/<id>/1/<ycsb_key>, the primary index — storage/keys.ts)
 *   GET  /_status/ranges               on every node: who holds which lease
 *   POST /_admin/transfer-lease        on the current leaseholder, until the
 *        table's i-th range (in key order) is led by node i mod n, and the
 *        other ranges' leases are spread the same way (lease counts balanced,
 *        so the replicate queue's lease rebalancing leaves them be)
 *
 * Ownership: stateless; the cluster handle is the caller's. Off the hot path
 * (JSON over HTTP is fine here). Bounded: gives up spreading after
 * `timeoutMs` and reports how the leases ended up, so a bench never hangs on it.
 */
import pg from 'pg';
import { tableIndexPrefix, tableKey } from '../../storage/keys.js';
import type { RangeStatus } from '../../src/server/node.js';
import type { CairnCluster } from './cluster.js';

const REL_OID_BASE = 1_000_000;
const PRIMARY_INDEX_ID = 1;

export interface ScatterResult {
  readonly tableId: number;
  /** Ranges of the table after the splits. */
  readonly ranges: number;
  /** Leases per node id once spreading ended. */
  readonly leasesByNode: Record<number, number>;
  /** Every range's lease is on its target node. */
  readonly balanced: boolean;
}

/** The descriptor id of `table` in the database of `url` (through pg_class). */
export async function tableId(url: string, table: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ oid: string | number }>('SELECT oid FROM pg_class WHERE relname = $1', [table]);
    const oid = Number(r.rows[0]?.oid);
    if (!Number.isInteger(oid) || oid < REL_OID_BASE) throw new Error(`bench: no table ${table} in pg_class`);
    return Math.floor((oid - REL_OID_BASE) / 1000);
  } finally {
    await c.end().catch(() => undefined);
  }
}

function maxHex(a: string, b: string): string {
  return a > b ? a : b;
}

async function retrying<T>(what: string, attempts: number, f: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await f();
    } catch (e) {
      if (i >= attempts) throw new Error(`bench: ${what} failed ${attempts} times: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, 100 * i));
    }
  }
}

/** Splits `table`'s primary index at `keys` (string primary-key values); returns the table id. */
export async function splitTable(cluster: CairnCluster, table: string, keys: readonly string[]): Promise<number> {
  const id = await tableId(cluster.urls[0] as string, table);
  for (const k of keys) {
    const key = tableKey(id, PRIMARY_INDEX_ID, [{ kind: 'string', value: k }]).toString('hex');
    await retrying(`split at ${k}`, 10, () => cluster.json(0, '/_admin/split', 'POST', { key }));
  }
  return id;
}

/** splitTable, then scatterTable. */
export async function splitAndScatter(cluster: CairnCluster, table: string, keys: readonly string[], timeoutMs = 60_000): Promise<ScatterResult> {
  await splitTable(cluster, table, keys);
  return scatterTable(cluster, table, { timeoutMs });
}

/**
 * Moves the lease of the i-th range of `table` (in key order) to the i-th
 * node (round robin over the cluster's nodes), and the other ranges' leases
 * likewise; done once the placement held for `stableRounds` consecutive
 * looks `intervalMs` apart (the replicate queue acts on lease counts gossiped
 * a second late, so a placement right after a move may still be undone), or
 * at `timeoutMs`.
 */
export async function scatterTable(
  cluster: CairnCluster,
  table: string,
  { timeoutMs = 60_000, stableRounds = 1, intervalMs = 200 }: { timeoutMs?: number; stableRounds?: number; intervalMs?: number } = {},
): Promise<ScatterResult> {
  const id = await tableId(cluster.urls[0] as string, table);
  const n = cluster.nodes.length;
  const nodeIds = await Promise.all(cluster.nodes.map((_, i) => cluster.json<{ nodeId: number }>(i, '/health').then((h) => h.nodeId)));
  const lo = tableIndexPrefix(id, PRIMARY_INDEX_ID).toString('hex');
  const hi = tableIndexPrefix(id, PRIMARY_INDEX_ID + 1).toString('hex');
  // The table's ranges: start inside [lo, hi), or the one range holding lo.
  const inTable = (r: RangeStatus): boolean => (r.startKey >= lo && r.startKey < hi) || (r.startKey <= lo && (r.endKey === '' || r.endKey > lo));
  const deadline = Date.now() + timeoutMs;
  let stable = 0;
  for (;;) {
    const views = await Promise.all(cluster.nodes.map((_, i) => cluster.json<RangeStatus[]>(i, '/_status/ranges').catch(() => [] as RangeStatus[])));
    const holder = new Map<number, number>(); // rangeId → node index holding a valid lease
    const startOf = new Map<number, string>();
    const starts = new Map<number, string>();
    const otherStarts = new Map<number, string>();
    views.forEach((rs, i) => {
      for (const r of rs) {
        (inTable(r) ? starts : otherStarts).set(r.rangeId, r.startKey);
        startOf.set(r.rangeId, r.startKey);
        if (r.isLeaseholder) holder.set(r.rangeId, i);
      }
    });
    const byStart = (a: [number, string], b: [number, string]): number => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
    const ranges = [...starts.entries()].sort(byStart).map(([rid]) => rid);
    // The other ranges (system, other tables) are spread too: the replicate
    // queue balances lease counts over all ranges, so a node holding every
    // system lease would shed the table's leases (src/kv/rebalance.ts).
    const others = [...otherStarts.entries()].sort(byStart).map(([rid]) => rid);
    const leasesByNode: Record<number, number> = {};
    for (const nid of nodeIds) leasesByNode[nid] = 0;
    let moves = 0;
    const transfers: Promise<unknown>[] = [];
    const place = (list: readonly number[], count: boolean): void =>
      list.forEach((rid, i) => {
        const at = holder.get(rid);
        if (at !== undefined && count) leasesByNode[nodeIds[at] as number]! += 1;
        const want = i % n;
        if (at === want) return;
        if (count) moves++;
        if (at !== undefined) transfers.push(cluster.json(at, '/_admin/transfer-lease', 'POST', { rangeId: rid, toNodeId: nodeIds[want] }).catch(() => undefined));
        // No valid lease anywhere (a new right-hand range, or a lease that
        // lapsed while idle): a read through the target node makes a replica
        // take one; the next round moves it if it landed elsewhere.
        else if (count || (startOf.get(rid) ?? '') !== '') transfers.push(cluster.json(want, '/_admin/kv', 'POST', { ops: [{ op: 'get', key: count ? maxHex(startOf.get(rid) ?? lo, lo) : (startOf.get(rid) ?? '') }] }).catch(() => undefined));
      });
    place(ranges, true);
    place(others, false);
    stable = moves === 0 ? stable + 1 : 0;
    if (stable >= stableRounds || Date.now() > deadline) return { tableId: id, ranges: ranges.length, leasesByNode, balanced: moves === 0 };
    await Promise.all(transfers);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
