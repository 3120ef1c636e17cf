/**
 * Replication driven by the node layer (issue 4 "Must show" 5, the parts a
 * single range can show): the store queues run on the node's tick timer and
 * allocate from the NodeStorePool (liveness records + store loads from the
 * directory exchange). Five processes: three initial nodes holding r1 and
 * two joined spares.
 *
 *   - a node dead beyond --dead-node-timeout has its replica replaced on a
 *     spare; the range is back to three replicas whose checksums agree;
 *   - `cairn node decommission N` moves N's replica (and lease) to a spare and
 *     waits until N holds none.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import type { NodeStatusRow, RangeStatus } from '../../src/server/node.js';
import { ProcessCluster, runCliAsync } from '../support/process-cluster.js';

let c: ProcessCluster;
let ids: number[] = [];

async function waitFor<T>(what: string, timeoutMs: number, f: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** r1's replica node ids as node i sees them. */
async function replicaNodes(i: number): Promise<number[]> {
  const r = await c.json<RangeStatus[]>(i, '/_status/ranges');
  return (r.find((x) => x.rangeId === 1)?.replicas ?? []).map((x) => x.nodeId).sort();
}

beforeAll(async () => {
  c = await ProcessCluster.start({ nodes: 3, extraArgs: ['--dead-node-timeout=3s'] });
  await Promise.all([c.addNode(), c.addNode()]);
  ids = await Promise.all(c.nodes.map(async (n) => (await c.json<{ nodeId: number }>(n.index, '/health')).nodeId));
}, 120_000);

afterAll(async () => {
  await c?.close();
});

describe('replication through the node layer', () => {
  it('replaces the replica of a node dead beyond the timeout', async () => {
    const [w] = await c.kv(0, [{ op: 'put', key: '90a1', value: '01' }]);
    expect(w?.ok, w?.message).toBe(true);
    const lh = (await c.json<RangeStatus[]>(0, '/_status/ranges'))[0]?.leaseholderNodeId;
    const victim = [0, 1, 2].find((i) => ids[i] !== lh) as number;
    const survivor = [0, 1, 2].find((i) => i !== victim && ids[i] === lh) as number;
    await c.kill(victim);
    const t0 = Date.now();
    const after = await waitFor('r1 re-replicated without the dead node', 40_000, async () => {
      const nodes = await replicaNodes(survivor);
      return nodes.length === 3 && !nodes.includes(ids[victim] as number) ? nodes : undefined;
    });
    console.log(`dead n${ids[victim]} replaced after ${Date.now() - t0} ms (timeout 3 s): r1 on ${after.join(',')}`);
    const [r] = await c.kv(survivor, [{ op: 'get', key: '90a1' }]);
    expect(r?.value).toBe('01');
    await c.expectChecksumsAgree(survivor, 3);
  }, 90_000);

  it('cairn node decommission moves the node\'s replica away and waits until none is left', async () => {
    const live = c.nodes.filter((n) => n.running).map((n) => n.index);
    const holders = await replicaNodes(live[0] as number);
    const target = ids.indexOf(holders.find((id) => live.includes(ids.indexOf(id))) as number);
    const host = live.find((i) => i !== target) as number;
    const out = await runCliAsync(['node', 'decommission', String(ids[target]), `--host=${c.node(host).rpcAddr}`, '--wait=60s'], 90_000);
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toContain(`n${ids[target]} decommissioned: it holds no replicas`);
    const nodes = await replicaNodes(host);
    expect(nodes).toHaveLength(3);
    expect(nodes).not.toContain(ids[target]);
    const rows = await c.json<NodeStatusRow[]>(host, '/_status/nodes');
    expect(rows.find((r) => r.id === ids[target])?.decommissioning).toBe(true);
    const [r] = await c.kv(host, [{ op: 'get', key: '90a1' }]);
    expect(r?.value).toBe('01');
  }, 120_000);
});
