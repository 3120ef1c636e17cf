/**
 * bench/support/node-metrics.ts: the counters a bench reads from the nodes'
 * Prometheus text (/_status/vars) and their per-operation differences — the
 * figures bench:ycsb prints beside throughput (issue 8).
 */
import { describe, expect, it } from 'vitest';
import { COUNTERS, parseCounters, perOp } from '../../bench/support/node-metrics.js';

const VARS = [
  '# HELP cairn_distsender_batches_total Batches routed by this node\'s DistSender',
  '# TYPE cairn_distsender_batches_total counter',
  'cairn_distsender_batches_total 120',
  'cairn_distsender_rpcs_total 250',
  'cairn_distsender_not_lease_holder_total 3',
  'cairn_kv_request_latency_seconds_bucket{le="0.001"} 7',
  'cairn_raft_leader_changes_total 2',
  'cairn_txn_one_phase_commits_total 40',
  'cairn_liveness_live_nodes 3',
  '',
].join('\n');

describe('node metrics for benches', () => {
  it('parses the listed counters by name (without cairn_ and _total), ignores the rest, and reads a missing one as 0', () => {
    const c = parseCounters(VARS);
    expect(c.distsender_batches).toBe(120);
    expect(c.distsender_rpcs).toBe(250);
    expect(c.distsender_not_lease_holder).toBe(3);
    expect(c.raft_leader_changes).toBe(2);
    expect(c.txn_one_phase_commits).toBe(40);
    expect(c.raft_proposals).toBe(0);
    expect(Object.keys(c).sort()).toEqual([...COUNTERS].sort());
  });

  it('per operation: the difference of two scrapes over the operations, 2 decimals; no operations give zeros', () => {
    const before = parseCounters(VARS);
    const after = parseCounters(VARS.replace('batches_total 120', 'batches_total 1120').replace('rpcs_total 250', 'rpcs_total 2350'));
    const k = perOp(before, after, 1000);
    expect(k.distsender_batches).toBe(1);
    expect(k.distsender_rpcs).toBe(2.1);
    expect(k.distsender_not_lease_holder).toBe(0);
    expect(perOp(before, after, 0).distsender_batches).toBe(0);
  });
});
