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
 *   POST /_admin/transfer-lease        on the current leaseholder, one at a
 *        time from the node leading most of the table's ranges to the one
 *        leading fewest, until no node leads two more than another
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

/** Splits the keyspace at raw keys (hex) through node 1's admin split hook, one at a time. */
export async function splitAtKeys(cluster: CairnCluster, keysHex: readonly string[]): Promise<void> {
  for (const key of keysHex) await retrying(`split at ${key}`, 10, () => cluster.json(0, '/_admin/split', 'POST', { key }));
}

/** Splits `table`'s primary index at `keys` (string primary-key values); returns the table id. */
export async function splitTable(cluster: CairnCluster, table: string, keys: readonly string[]): Promise<number> {
  const id = await tableId(cluster.urls[0] as string, table);
  await splitAtKeys(
    cluster,
    keys.map((k) => tableKey(id, PRIMARY_INDEX_ID, [{ kind: 'string', value: k }]).toString('hex')),
  );
  return id;
}

/** splitTable, then scatterTable. */
export async function splitAndScatter(cluster: CairnCluster, table: string, keys: readonly string[], timeoutMs = 60_000): Promise<ScatterResult> {
  await splitTable(cluster, table, keys);
  return scatterTable(cluster, table, { timeoutMs });
}

/**
 * Balances the leases of `table`'s ranges over the nodes: while one node
 * leads more than one range more than another, one lease moves from the
 * most to the least loaded node per round (a range whose lease lapsed while
 * idle counts for its Raft leader); a range with neither lease nor leader
 * gets a lease through a read on the least loaded node. Counts, not positions:
 * the replicate queue balances lease counts too (src/kv/rebalance.ts), so
 * a balanced placement is one it leaves alone — forcing exact positions
 * made the two fight, and every lease move costs the clients
 * NotLeaseHolder retries and range lookups. Done once the placement held
 * for `stableRounds` consecutive looks `intervalMs` apart, or at `timeoutMs`.
 */
export async function scatterTable(cluster: CairnCluster, table: string, opts: ScatterOptions = {}): Promise<ScatterResult> {
  const id = await tableId(cluster.urls[0] as string, table);
  const r = await scatterSpan(cluster, tableIndexPrefix(id, PRIMARY_INDEX_ID).toString('hex'), tableIndexPrefix(id, PRIMARY_INDEX_ID + 1).toString('hex'), opts);
  return { tableId: id, ...r };
}

export interface ScatterOptions {
  readonly timeoutMs?: number;
  readonly stableRounds?: number;
  readonly intervalMs?: number;
}

/** scatterTable's balancing over the ranges of the raw key span [lo, hi) (hex keys; see scatterTable). */
export async function scatterSpan(
  cluster: CairnCluster,
  lo: string,
  hi: string,
  { timeoutMs = 60_000, stableRounds = 1, intervalMs = 200 }: ScatterOptions = {},
): Promise<Omit<ScatterResult, 'tableId'>> {
  const nodeIds = await Promise.all(cluster.nodes.map((_, i) => cluster.json<{ nodeId: number }>(i, '/health').then((h) => h.nodeId)));
  // The table's ranges: start inside [lo, hi), or the one range holding lo.
  const inTable = (r: RangeStatus): boolean => (r.startKey >= lo && r.startKey < hi) || (r.startKey <= lo && (r.endKey === '' || r.endKey > lo));
  const deadline = Date.now() + timeoutMs;
  let stable = 0;
  for (;;) {
    const views = await Promise.all(cluster.nodes.map((_, i) => cluster.json<RangeStatus[]>(i, '/_status/ranges').catch(() => [] as RangeStatus[])));
    // rangeId → node index holding a valid lease, or else leading the Raft
    // group: an idle range lets its lease lapse, and the next request has it
    // re-acquired by the leader (the lease follows the leader, replica-lease.ts).
    const holder = new Map<number, number>();
    const leader = new Map<number, number>();
    const startOf = new Map<number, string>();
    views.forEach((rs, i) => {
      for (const r of rs) {
        if (!inTable(r)) continue;
        startOf.set(r.rangeId, r.startKey);
        if (r.isLeaseholder) holder.set(r.rangeId, i);
        if (r.isLeader) leader.set(r.rangeId, i);
      }
    });
    const valid = new Set(holder.keys());
    for (const [rid, i] of leader) if (!holder.has(rid)) holder.set(rid, i);
    const held: number[][] = cluster.nodes.map(() => []); // node index → ranges it leads
    const unheld: number[] = [];
    for (const rid of startOf.keys()) {
      const at = holder.get(rid);
      if (at === undefined) unheld.push(rid);
      else (held[at] as number[]).push(rid);
    }
    const leasesByNode: Record<number, number> = {};
    nodeIds.forEach((nid, i) => (leasesByNode[nid] = (held[i] as number[]).length));
    const order = held.map((_, i) => i).sort((x, y) => (held[x] as number[]).length - (held[y] as number[]).length);
    const least = order[0] as number;
    const most = order[order.length - 1] as number;
    const balanced = unheld.length === 0 && (held[most] as number[]).length - (held[least] as number[]).length <= 1;
    stable = balanced ? stable + 1 : 0;
    if (stable >= stableRounds || Date.now() > deadline) return { ranges: startOf.size, leasesByNode, balanced };
    const moves: Promise<unknown>[] = [];
    // A range with neither a valid lease nor a leader (a new right-hand side):
    // a read through the least loaded node makes a replica take the lease.
    for (const rid of unheld) moves.push(cluster.json(least, '/_admin/kv', 'POST', { ops: [{ op: 'get', key: maxHex(startOf.get(rid) as string, lo) }] }).catch(() => undefined));
    if (!balanced && unheld.length === 0) {
      // Only a valid lease can be transferred: a lapsed one is first re-taken by a read.
      const rid = (held[most] as number[]).find((r) => valid.has(r));
      if (rid !== undefined) moves.push(cluster.json(most, '/_admin/transfer-lease', 'POST', { rangeId: rid, toNodeId: nodeIds[least] }).catch(() => undefined));
      else {
        const r0 = (held[most] as number[])[0] as number;
        moves.push(cluster.json(most, '/_admin/kv', 'POST', { ops: [{ op: 'get', key: maxHex(startOf.get(r0) as string, lo) }] }).catch(() => undefined));
      }
    }
    await Promise.all(moves);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
