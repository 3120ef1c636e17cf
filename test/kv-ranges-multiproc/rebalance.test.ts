/**
 * Issue 4 must-show 5 on real processes over TCP, under a write load
 * throughout: 3 nodes with 11 ranges; two more nodes join and the replicate
 * queues move replicas and leases onto them; `cairn node decommission` of
 * n1 drains every replica off it (this stalled under load last session);
 * then n2 is killed and, once dead beyond --dead-node-timeout, its replicas
 * are replaced on the others — every range back to three voters on live,
 * non-decommissioned nodes, every acknowledged write readable, replicas
 * agreeing on checksums.
 */
import { describe, it, expect } from 'vitest';
import type { NodeStatusRow } from '../../src/server/node.js';
import { runCliAsync } from '../support/process-cluster.js';
import { autoClose, expectAckedReadable, expectNoCrash, keyHex, rangeCensus, waitFor, waitFullyReplicatedOn } from './support.js';

const start = autoClose();

describe('rebalancing on five processes', () => {
  it('joins rebalance onto new nodes, decommission drains a node under load, a dead node is replaced', async () => {
    const cl = await start.cluster({ nodes: 3, extraArgs: ['--dead-node-timeout=4s'] });
    for (let i = 1; i <= 10; i++) await cl.json(i % 3, '/_admin/split', 'POST', { key: keyHex(i * 200) });
    const wl = start.load(cl, { workers: 2, batch: 10, spread: 2_100, pauseMs: 30 });
    const ranges = (await rangeCensus(cl)).size;
    const t0 = Date.now();
    await Promise.all([cl.addNode(), cl.addNode()]);
    const ids = await Promise.all(cl.nodes.map(async (n) => (await cl.json<{ nodeId: number }>(n.index, '/health')).nodeId));
    const rows = (): Promise<NodeStatusRow[]> => cl.json<NodeStatusRow[]>(2, '/_status/nodes');

    // 1. The new nodes get replicas and leases.
    const joined = await waitFor('replicas and leases on the two new nodes', 120_000, async () => {
      const r = await rows();
      const fresh = r.filter((x) => x.id === ids[3] || x.id === ids[4]);
      return fresh.length === 2 && fresh.every((x) => (x.ranges ?? 0) >= 2 && (x.leaseholders ?? 0) >= 1) ? r : undefined;
    });
    const tJoin = Date.now() - t0;

    // 2. Decommission n1 under the load: every replica moves off it.
    const t1 = Date.now();
    const out = await runCliAsync(['node', 'decommission', String(ids[0]), `--host=${cl.node(2).rpcAddr}`, '--wait=90s'], 120_000);
    expect(out.status, `${out.stdout}\n${out.stderr}`).toBe(0);
    expect(out.stdout).toContain(`n${ids[0]} decommissioned: it holds no replicas`);
    const tDecom = Date.now() - t1;

    // 3. Kill n2: once dead beyond the timeout its replicas are replaced on n3–n5.
    const t2 = Date.now();
    await cl.kill(1);
    await waitFullyReplicatedOn(cl, 'every range on three voters of n3–n5', [ids[2], ids[3], ids[4]] as number[], ranges, 90_000);
    const tDead = Date.now() - t2;
    await wl.stop();
    const final = await rows();
    console.log(
      `${ranges} ranges; joined n${ids[3]}/n${ids[4]} hold ${joined.filter((x) => x.id === ids[3] || x.id === ids[4]).map((x) => `${x.ranges} replicas ${x.leaseholders} leases`).join(', ')} after ${tJoin} ms; ` +
        `n${ids[0]} decommissioned in ${tDecom} ms; dead n${ids[1]} replaced in ${tDead} ms (timeout 4 s); ` +
        `now ${final.map((x) => `n${x.id}:${x.ranges ?? '-'}/${x.leaseholders ?? '-'}`).join(' ')}; writes acknowledged ${wl.acked.size}, failed or unknown ${wl.failures}`,
    );
    for (const i of [2, 3, 4]) await expectAckedReadable(cl, i, wl.acked);
    await cl.expectChecksumsAgree(2, 3);
    expectNoCrash(cl, [1]);
  }, 360_000);
});
