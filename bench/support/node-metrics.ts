/**
 * Counters of a bench cluster's nodes (their Prometheus text at
 * /_status/vars, src/server/node.ts registerMetrics), summed over the nodes,
 * and the difference between two scrapes — what a measured run cost in KV
 * batches, RPCs, NotLeaseHolder redirects, Raft proposals, leader changes and
 * transaction commits, to divide by the run's operations. Load distorts
 * these counts far less than throughput, so they are what a change's
 * before/after compares on the shared machine.
 *
 * Ownership: stateless; the cluster handle is the caller's. Off the hot path.
 */
import { httpRequest } from '../../src/cli/node-process.js';
import type { CairnCluster } from './cluster.js';

/** The counters kept (metric name without the cairn_ prefix and _total suffix). */
export const COUNTERS = [
  'distsender_batches',
  'distsender_multi_range_batches',
  'distsender_rpcs',
  'distsender_not_lease_holder',
  'distsender_retries',
  'raft_proposals',
  'raft_reproposals',
  'raft_syncs',
  'storage_writes',
  'raft_messages_sent',
  'raft_message_batches_sent',
  'raft_appends_during_sync',
  'raft_ready_rounds',
  'raft_leader_changes',
  'rpc_messages_sent',
  'rpc_frames_sent',
  'txn_commits',
  'txn_one_phase_commits',
  'txn_parallel_commits',
  'txn_refreshes',
  'txn_restarts',
  'txn_pushes',
  'txn_push_waits',
  'txn_refresh_failures',
  'txn_aborts',
  'txn_deadlocks_broken',
  'txn_lock_wait_timeouts',
  'kv_lock_waits',
  'kv_push_handoffs',
  'kv_intent_discoveries',
  'kv_read_bumps',
  'kv_tscache_pushes',
  'kv_tscache_retries',
] as const;
export type Counter = (typeof COUNTERS)[number];
export type Counters = Record<Counter, number>;

/** Parses the counters of one node's /_status/vars text (a missing one reads 0). */
export function parseCounters(text: string): Counters {
  const out = Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Counters;
  const wanted = new Set<string>(COUNTERS);
  for (const line of text.split('\n')) {
    if (!line.startsWith('cairn_')) continue;
    const sp = line.indexOf(' ');
    const name = line.slice('cairn_'.length, sp).replace(/_total$/, '');
    if (wanted.has(name)) out[name as Counter] = Number(line.slice(sp + 1));
  }
  return out;
}

/** Every node's counters, summed; a node that does not answer counts 0. */
export async function scrapeCounters(cluster: Pick<CairnCluster, 'nodes'>): Promise<Counters> {
  const per = await Promise.all(
    cluster.nodes.map(async (n) => {
      try {
        const r = await httpRequest('127.0.0.1', n.httpPort, '/_status/vars', 'GET', undefined, 10_000);
        return r.status === 200 ? parseCounters(r.body) : parseCounters('');
      } catch {
        return parseCounters('');
      }
    }),
  );
  const sum = parseCounters('');
  for (const c of per) for (const k of COUNTERS) sum[k] += c[k];
  return sum;
}

/** (after - before) / ops per counter, rounded to 2 decimals. */
export function perOp(before: Counters, after: Counters, ops: number): Counters {
  const out = parseCounters('');
  for (const k of COUNTERS) out[k] = ops > 0 ? Math.round(((after[k] - before[k]) / ops) * 100) / 100 : 0;
  return out;
}

/** A histogram's running totals: observations and their sum (seconds), summed over the nodes. */
export interface HistogramTotals {
  readonly count: number;
  readonly sumSec: number;
}

/** Reads `<name>_count` and `<name>_sum` of one node's /_status/vars text (absent: 0). */
export function parseHistogramTotals(text: string, name: string): HistogramTotals {
  let count = 0;
  let sumSec = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}_count `)) count = Number(line.slice(name.length + 7));
    else if (line.startsWith(`${name}_sum `)) sumSec = Number(line.slice(name.length + 5));
  }
  return { count, sumSec };
}

/**
 * The totals of histogram `name` (full metric name, e.g.
 * cairn_storage_sync_latency_seconds) over every node; a node that does not
 * answer counts 0. The mean over a run is (Δsum / Δcount).
 */
export async function scrapeHistogramTotals(cluster: Pick<CairnCluster, 'nodes'>, name: string): Promise<HistogramTotals> {
  let count = 0;
  let sumSec = 0;
  for (const n of cluster.nodes) {
    try {
      const r = await httpRequest('127.0.0.1', n.httpPort, '/_status/vars', 'GET', undefined, 10_000);
      if (r.status !== 200) continue;
      const t = parseHistogramTotals(r.body, name);
      count += t.count;
      sumSec += t.sumSec;
    } catch {
      // counts 0
    }
  }
  return { count, sumSec };
}

/** "n syncs, mean m ms" between two scrapes of the same histogram. */
export function meanBetween(before: HistogramTotals, after: HistogramTotals): { count: number; meanMs: number } {
  const count = after.count - before.count;
  return { count, meanMs: count > 0 ? Math.round(((after.sumSec - before.sumSec) / count) * 1e4) / 10 : 0 };
}
