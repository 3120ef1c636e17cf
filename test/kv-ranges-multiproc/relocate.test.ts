/**
 * POST /_admin/relocate on real processes (issue 9's replica-move nemesis
 * needs it): on four nodes, the voter on a range's leaseholder is replaced by
 * one on a node without a replica (the lease is handed off first); the
 * descriptor lists the new node, the data is readable through every node,
 * replicas agree on checksums; typed refusals answer 4xx JSON.
 */
import { describe, it, expect } from 'vitest';
import { autoClose, expectNoCrash, keyHex, putAll, rangeCensus, waitFor } from './support.js';

const start = autoClose();

interface Desc {
  rangeId: number;
  replicas: { nodeId: number; type: number }[];
}

describe('/_admin/relocate on four processes', () => {
  it('moves a voter of a range holding data off its leaseholder; data readable everywhere, checksums agree', async () => {
    const cl = await start.cluster({ nodes: 3 });
    await cl.json(0, '/_admin/split', 'POST', { key: keyHex(100) });
    await cl.json(0, '/_admin/split', 'POST', { key: keyHex(200) });
    const puts = Array.from({ length: 50 }, (_, i) => ({ op: 'put' as const, key: keyHex(100 + i), value: Buffer.from(`v${i}`).toString('hex') }));
    // The replicate queue may move the fresh ranges' leases meanwhile: ambiguous answers are settled from the data.
    await putAll(cl, 1, puts);
    await cl.addNode();
    const ids = await Promise.all(cl.nodes.map(async (n) => (await cl.json<{ nodeId: number }>(n.index, '/health')).nodeId));

    // The range holding k100…k199, its leaseholder, and a node without a replica of it. The
    // replicate queue rebalances onto the new node meanwhile: when it put a replica on the chosen
    // node first (409, replica_exists), choose again (bounded).
    let rangeId = 0;
    let lh = 0;
    let to = 0;
    let tMove = 0;
    const desc = await waitFor('a relocation off the leaseholder', 60_000, async () => {
      const c = await rangeCensus(cl);
      const r = [...c.values()].find((x) => x.status.startKey === keyHex(100) && typeof x.status.leaseholderNodeId === 'number');
      if (r === undefined || r.status.replicas.some((x) => x.type !== 0)) return undefined;
      rangeId = r.status.rangeId;
      lh = r.status.leaseholderNodeId as number;
      const voters = r.status.replicas.map((x) => x.nodeId);
      to = ids.find((id) => !voters.includes(id)) ?? 0;
      if (to === 0) return undefined;
      const t0 = Date.now();
      const res = await cl.http(0, '/_admin/relocate', 'POST', { rangeId, addNodeId: to, removeNodeId: lh });
      tMove = Date.now() - t0;
      if (res.status === 409) return undefined;
      expect(res.status, res.body).toBe(200);
      return (JSON.parse(res.body) as { desc: Desc }).desc;
    });
    const nodes = desc.replicas.map((x) => x.nodeId);
    expect(nodes).toContain(to);
    expect(nodes).not.toContain(lh);
    expect(desc.replicas.every((x) => x.type === 0)).toBe(true);

    // Readable through every node.
    for (const n of cl.nodes) {
      const [res] = await cl.kv(n.index, [{ op: 'scan', key: keyHex(100), endKey: keyHex(200) }]);
      expect(res?.ok, res?.message).toBe(true);
      expect(res?.rows?.length).toBe(50);
    }
    // Replicas agree (a replica still catching up answers null: ask again, bounded).
    await waitFor('every replica of the moved range agreeing on a checksum', 30_000, async () => {
      const rows = await cl.json<{ rangeId: number; checksums: Record<string, string | null> }[]>(2, '/_admin/checksum', 'POST');
      const row = rows.find((x) => x.rangeId === rangeId);
      const sums = Object.values(row?.checksums ?? {});
      if (row === undefined || sums.some((s) => s === null)) return undefined;
      for (const r of rows) expect(new Set(Object.values(r.checksums).filter((s) => s !== null)).size, `r${r.rangeId} checksums`).toBeLessThanOrEqual(1);
      return true;
    });

    // Typed refusals.
    const bad = async (body: unknown): Promise<{ status: number; code: string }> => {
      const r = await cl.http(1, '/_admin/relocate', 'POST', body);
      return { status: r.status, code: (JSON.parse(r.body) as { code: string }).code };
    };
    expect(await bad({ rangeId: 99_999, addNodeId: to })).toEqual({ status: 404, code: 'server.unknown_range' });
    expect(await bad({ rangeId, addNodeId: to })).toEqual({ status: 409, code: 'server.replica_exists' });
    expect(await bad({ rangeId, removeNodeId: lh })).toEqual({ status: 400, code: 'server.no_replica' });
    expect(await bad({ rangeId })).toEqual({ status: 400, code: 'server.bad_request' });
    expect(await bad({ rangeId, addNodeId: 77 })).toEqual({ status: 400, code: 'server.unknown_node' });
    expectNoCrash(cl);
    console.log(`relocate r${rangeId} n${lh} → n${to}: ${tMove} ms`);
  }, 120_000);
});
