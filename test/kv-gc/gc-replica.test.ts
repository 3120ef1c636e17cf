/**
 * MVCC GC on a real 3-node cluster (issue 5: "AS OF SYSTEM TIME reads at a
 * historical timestamp (bounded by the GC threshold)"; CockroachDB's GC
 * queue, GCRequest and replicated GC threshold — src/kv/gc-queue.ts,
 * src/kv/batcheval/cmd-gc.ts):
 *   - a GCRequest removes exactly the collectable versions on EVERY replica
 *     (raw versions counted in each store's engine), replica checksums agree,
 *     and the incremental stats equal a recount;
 *   - reads, scans, writes and refreshes at or below the threshold fail with
 *     kv.batch_timestamp_before_gc (typed across RPC), reads above it see
 *     the right version; the threshold never moves back;
 *   - the GC queue (runGc, TTL shortened) collects a tombstone and raises
 *     the threshold to now − TTL; its score is 0 once nothing is left;
 *   - a split gives both halves the threshold, a merge the higher of the two,
 *     on every replica; a restarted node reloads it from its engine; a
 *     replica added by snapshot receives it with the data.
 */
import { describe, it, expect } from 'vitest';
import { ZERO_TIMESTAMP, tsLess, tsNext, tsPrev, type Timestamp } from '../../src/util/hlc.js';
import { KvClient } from '../../src/kv/kv-client.js';
import { adminSplit } from '../../src/kv/split.js';
import { adminMerge } from '../../src/kv/merge.js';
import { addVoter } from '../../src/kv/replica-change.js';
import { gcScore, newGcQueue, runGc } from '../../src/kv/gc-queue.js';
import { DEFAULT_RANGE_QUEUE_SETTINGS } from '../../src/kv/queue.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import type { GetResponse } from '../../src/kv/api.js';
import { mvccLoadHead } from '../../storage/mvcc.js';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { KEY_MIN, rangeDescriptorKey } from '../../storage/keys.js';
import { checkConsistency, distSender, key, putAt } from '../kv-ranges/support.js';
import { expectBeforeGc, rangeOf, rawVersionCount, recountRange, sendGc, waitThreshold } from './support.js';

const start = autoCloseClusters();
const v = (s: string): Buffer => Buffer.from(s);

async function getAt(ds: DistSender, k: Buffer, ts: Timestamp): Promise<string | null> {
  const r = (await ds.send({ header: { rangeId: 0, timestamp: ts }, requests: [{ kind: 'get', key: k }] })).responses[0] as GetResponse;
  return r.value === null ? null : r.value.toString();
}

async function deleteAt(ds: DistSender, k: Buffer): Promise<Timestamp> {
  return (await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'delete', key: k }] })).timestamp;
}

/** The newest version timestamp (wall) of r1's descriptor on node 0: the last split's. */
function lastWriteWall(c: TestCluster): number {
  const head = mvccLoadHead(c.node(0).engine, rangeDescriptorKey(KEY_MIN));
  return head?.committed?.ts.wall ?? 0;
}

describe('MVCC GC on every replica (issue 5)', () => {
  it('removes the same versions everywhere; reads and writes at or below the threshold fail, above it see the right version', async () => {
    const c = await start({ nodes: 3 });
    c.startTicker();
    const ds = distSender(c, 0);
    const kv = new KvClient(ds);
    const [a, b, d] = [key(1), key(2), key(3)];
    const t1 = await putAt(ds, a, v('a1'));
    const t2 = await putAt(ds, a, v('a2'));
    const t3 = await putAt(ds, a, v('a3'));
    await putAt(ds, b, v('b1'));
    const tb = await deleteAt(ds, b);
    await putAt(ds, d, v('d1'));
    expect(await getAt(ds, a, t1)).toBe('a1');
    const r1 = rangeOf(c, a);

    // GC at t2: a1 is shadowed by a2 (≤ t2) and goes; a2 (the newest ≤ t2) and a3 stay; b and d are all above t2.
    await sendGc(ds, r1, t2, [a, b, d]);
    await waitThreshold(c, r1.rangeId, t2);
    await checkConsistency(c, kv, 100);
    for (let i = 0; i < 3; i++) {
      const e = c.node(i).engine;
      expect([await rawVersionCount(e, a), await rawVersionCount(e, b), await rawVersionCount(e, d)]).toEqual([2, 2, 1]);
    }
    for (const { i, r } of c.replicas(r1.rangeId)) expect(r.applied.stats).toEqual(await c.recountStats(i));

    // At or below the threshold: refused, naming both timestamps; just above it: the right versions.
    const e1 = await expectBeforeGc(getAt(ds, a, t1));
    expect((e1 as unknown as { threshold: Timestamp }).threshold).toEqual(t2);
    await expectBeforeGc(getAt(ds, a, t2));
    await expectBeforeGc(ds.send({ header: { rangeId: 0, timestamp: t1 }, requests: [{ kind: 'scan', key: a, endKey: key(9), maxKeys: 0 }] }));
    await expectBeforeGc(ds.send({ header: { rangeId: 0, timestamp: t1 }, requests: [{ kind: 'put', key: key(4), value: v('late') }] }));
    await expectBeforeGc(ds.send({ header: { rangeId: 0, timestamp: t3 }, requests: [{ kind: 'refresh', key: a, refreshFrom: t1 }] }));
    expect(await getAt(ds, a, tsNext(t2))).toBe('a2');
    expect(await getAt(ds, a, tsPrev(t3))).toBe('a2');
    expect(await getAt(ds, a, t3)).toBe('a3');
    expect(await getAt(ds, b, tsPrev(tb))).toBe('b1');
    expect(await kv.get(key(4))).toBeNull();

    // A lower threshold never moves it back (and collects nothing more).
    await sendGc(ds, r1, t1, [a]);
    for (const { r } of c.replicas(r1.rangeId)) expect(r.gcThreshold).toEqual(t2);

    // The queue, TTL shortened: once the clock passes tb + TTL, the tombstone of b and everything under it go,
    // and a keeps only a3.
    const ttl = 0.05;
    const lh = c.leaseholder(r1.rangeId);
    await c.waitFor(() => c.node(lh).clock.now().wall > tb.wall + ttl * 1e6 + 1000, 5_000, 'the clock past the tombstone + TTL');
    const rep = c.store(lh).replica(r1.rangeId);
    expect(rep).toBeDefined();
    expect(gcScore(rep!, c.node(lh).clock.now(), ttl)).toBeGreaterThan(0);
    const run = await runGc(c.store(lh), rep!, ttl);
    expect(run.requests).toBeGreaterThanOrEqual(1);
    expect(tsLess(tb, run.threshold)).toBe(true);
    await waitThreshold(c, r1.rangeId, run.threshold);
    await checkConsistency(c, kv, 200);
    for (let i = 0; i < 3; i++) {
      const e = c.node(i).engine;
      expect([await rawVersionCount(e, a), await rawVersionCount(e, b), await rawVersionCount(e, d)]).toEqual([1, 0, 1]);
    }
    for (const { i, r } of c.replicas(r1.rangeId)) expect(r.applied.stats).toEqual(await c.recountStats(i));
    expect(await kv.get(a)).toEqual(v('a3'));
    expect(await kv.get(b)).toBeNull();
    await expectBeforeGc(getAt(ds, a, t3));
  }, 60_000);

  it('the GC queue on each store collects only the ranges it holds the lease of', async () => {
    const c = await start({ nodes: 3 });
    c.startTicker();
    const ds = distSender(c, 0);
    await putAt(ds, key(1), v('x1'));
    const last = await putAt(ds, key(1), v('x2'));
    const ttl = 0.05;
    const settings = { ...DEFAULT_RANGE_QUEUE_SETTINGS, gcTtlSeconds: ttl };
    await c.waitFor(() => c.node(0).clock.now().wall > last.wall + ttl * 1e6 + 1000, 5_000, 'the clock past the last write + TTL');
    const queues = [0, 1, 2].map((i) => newGcQueue(() => c.store(i), settings));
    const processed = await Promise.all(queues.map((q) => q.runOnce()));
    // One leaseholder for r1: one store processed it, the others had nothing to do.
    expect(processed.reduce((x, y) => x + y, 0)).toBe(1);
    for (let i = 0; i < 3; i++) await c.waitFor(() => (c.store(i).replica(1)?.gcThreshold.wall ?? 0) > last.wall, 10_000, 'the threshold on every replica');
    await checkConsistency(c, new KvClient(ds), 300);
    for (let i = 0; i < 3; i++) expect(await rawVersionCount(c.node(i).engine, key(1))).toBe(1);
  }, 60_000);

  it('collects superseded range-local versions too (the left descriptor rewritten by splits), keeping the newest', async () => {
    const c = await start({ nodes: 3 });
    c.startTicker();
    const ds = distSender(c, 0);
    await adminSplit(ds, key(50));
    await adminSplit(ds, key(40));
    const descKey = rangeDescriptorKey(KEY_MIN);
    for (let i = 0; i < 3; i++) expect(await rawVersionCount(c.node(i).engine, descKey)).toBe(3);
    const ttl = 0.05;
    const lh = c.leaseholder(1);
    const last = c.store(lh).replica(1)!.desc;
    const splitWall = lastWriteWall(c);
    await c.waitFor(() => c.node(lh).clock.now().wall > splitWall + ttl * 1e6 + 1000, 5_000, 'the clock past the last split + TTL');
    const run = await runGc(c.store(lh), c.store(lh).replica(1)!, ttl);
    expect(run.keys).toBeGreaterThanOrEqual(1);
    await waitThreshold(c, 1, run.threshold);
    await checkConsistency(c, new KvClient(ds), 600);
    for (let i = 0; i < 3; i++) expect(await rawVersionCount(c.node(i).engine, descKey)).toBe(1);
    expect(c.store(lh).replica(1)!.desc).toEqual(last);
    for (const { i, r } of c.replicas(1)) expect(r.applied.stats).toEqual(await recountRange(c.node(i).engine, r.desc));
  }, 60_000);

  it('a split gives both halves the threshold, a merge the higher one; a restart reloads it', async () => {
    const c = await start({ nodes: 3 });
    c.startTicker();
    const ds = distSender(c, 0);
    const kv = new KvClient(ds);
    const o100 = await putAt(ds, key(100), v('old'));
    const o200 = await putAt(ds, key(200), v('old'));
    await putAt(ds, key(100), v('new'));
    await putAt(ds, key(200), v('new'));
    await adminSplit(ds, key(50));
    const mid = rangeOf(c, key(100));
    await sendGc(ds, mid, o100, [key(100)]);
    await waitThreshold(c, mid.rangeId, o100);

    // Split [50, max) at 150: both halves keep the threshold o100, on every replica.
    const split = await adminSplit(ds, key(150));
    expect(split).not.toBeNull();
    const right = split!.right;
    await waitThreshold(c, right.rangeId, o100);
    for (const id of [mid.rangeId, right.rangeId]) for (const { r } of c.replicas(id)) expect(r.gcThreshold).toEqual(o100);
    await expectBeforeGc(getAt(ds, key(200), o100));
    expect(await getAt(ds, key(200), o200)).toBe('old');

    // Raise the right half to o200 + collect; merge: the merged range has max(o100, o200) = o200 everywhere.
    await sendGc(ds, right, o200, [key(200)]);
    await waitThreshold(c, right.rangeId, o200);
    const merged = await adminMerge(ds, key(50));
    expect(merged).not.toBeNull();
    await waitThreshold(c, mid.rangeId, o200);
    for (const { r } of c.replicas(mid.rangeId)) expect(r.gcThreshold).toEqual(o200);
    // The left half's data is now bounded by the higher threshold too.
    await expectBeforeGc(getAt(ds, key(100), o200));
    expect(await kv.get(key(100))).toEqual(v('new'));
    await checkConsistency(c, kv, 400);

    // A restarted node loads the threshold from its engine.
    await c.stopNode(2);
    await c.restartNode(2);
    const again = c.store(2).replica(mid.rangeId);
    expect(again?.gcThreshold).toEqual(o200);
  }, 60_000);

  it('a replica added by snapshot gets the threshold with the data; checksums agree', async () => {
    const c = await start({ nodes: 3 });
    c.startTicker();
    const ds = distSender(c, 0);
    const t1 = await putAt(ds, key(7), v('one'));
    await putAt(ds, key(7), v('two'));
    const d = rangeOf(c, key(7));
    await sendGc(ds, d, t1, [key(7)]);
    await waitThreshold(c, d.rangeId, t1);
    await c.addNode();
    // Replace a voter that does not hold the lease.
    const lh = c.leaseholder(d.rangeId);
    const gone = [1, 2, 3].find((n) => n - 1 !== lh) as number;
    const moved = await addVoter(ds, rangeOf(c, key(7)), { nodeId: 4, storeId: 4 }, { nodeId: gone, storeId: gone });
    expect(moved.replicas.some((r) => r.nodeId === 4)).toBe(true);
    await c.waitFor(() => c.store(3).replica(d.rangeId)?.initialized === true, 10_000, 'the new replica initialized by its snapshot');
    expect(c.store(3).replica(d.rangeId)?.gcThreshold).toEqual(t1);
    await checkConsistency(c, new KvClient(ds), 900);
    expect(await rawVersionCount(c.node(3).engine, key(7))).toBe(2);
  }, 60_000);
});
