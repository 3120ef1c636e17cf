/**
 * Range lookups on the request path (issue 4, finding 1: a YCSB run made
 * ~1,460 meta2 lookups, one per key of each range after a split or a lease
 * move). Checks that lookups coalesce by the range that will hold the key
 * (range-cache.ts header), that prefetch fills neighbouring ranges, and that
 * a lease move costs no lookup at all (dist-sender.ts: the NotLeaseHolder
 * hint updates the cached lease; the descriptor stays).
 */
import { CairnError } from '../../src/util/errors.js';
import { describe, it, expect, afterEach } from 'vitest';
import fc from 'fast-check';
import { RangeCache } from '../../src/kv/range-cache.js';
import type { RangeDescriptor, ReplicaDescriptor } from '../../src/kv/api.js';
import { KEY_MAX, KEY_MIN } from '../../storage/keys.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { adminSplit } from '../../src/kv/split.js';
import { KvClient } from '../../src/kv/kv-client.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import { TestCluster } from '../support/test-cluster.js';
import { HEALTHY_RECHECK_SCANS, isSuspectReplica, newReplicaGCQueue } from '../../src/kv/replica-change-gc.js';
import { DEFAULT_RANGE_QUEUE_SETTINGS } from '../../src/kv/queue.js';
import { descriptors, distSender, key, val } from '../kv-ranges/support.js';

/** Ranges split at the given keys (sorted), generation 1. */
function layout(splits: readonly Buffer[]): RangeDescriptor[] {
  const bounds = [KEY_MIN, ...splits, KEY_MAX];
  return splits.concat([KEY_MAX]).map((_, i) => ({ rangeId: i + 1, startKey: bounds[i] as Buffer, endKey: bounds[i + 1] as Buffer, replicas: [], nextReplicaId: 1, generation: 1 }));
}

/** A meta2 stand-in over `ranges`: the range holding key (reverse: the key before it) and the next `prefetch - 1`, answered after a macrotask. */
function meta(ranges: readonly RangeDescriptor[], prefetch: number): (key: Buffer, reverse: boolean) => Promise<RangeDescriptor[]> {
  return async (k, reverse) => {
    await new Promise((r) => setImmediate(r));
    const i = ranges.findIndex((d) => (reverse ? compareBytes(k, d.endKey) <= 0 : compareBytes(k, d.endKey) < 0));
    return reverse ? [ranges[i] as RangeDescriptor] : ranges.slice(i, i + prefetch);
  };
}

const k = (i: number): Buffer => key(i);

describe('RangeCache lookup coalescing', () => {
  it('1,000 concurrent misses over 20 ranges: one lookup per prefetch window, each key answered by its own range', async () => {
    const ranges = layout(Array.from({ length: 19 }, (_, i) => k((i + 1) * 50)));
    const cache = new RangeCache(meta(ranges, 4));
    const keys = Array.from({ length: 1000 }, (_, i) => k(i));
    const got = await Promise.all(keys.map((x) => cache.lookup(x)));
    got.forEach((d, i) => expect(d.rangeId).toBe(Math.floor(i / 50) + 1));
    // Before: one lookup per distinct key (1,000). Coalesced: waves of misses,
    // each covering up to 4 ranges; at most one lookup per range.
    expect(cache.lookups).toBeLessThanOrEqual(20);
    expect(cache.size).toBe(20);
  });

  it('after an eviction (a split seen through RangeKeyMismatch), the keys of the evicted range cost one lookup', async () => {
    let ranges = layout([k(100), k(200)]);
    const cache = new RangeCache(async (key, reverse) => meta(ranges, 16)(key, reverse));
    await cache.lookup(k(150));
    const stale = cache.get(k(150)) as RangeDescriptor;
    // r3 = [k100,k200) splits into 10 ranges.
    ranges = layout([k(100), ...Array.from({ length: 9 }, (_, i) => k(110 + i * 10)), k(200)]).map((d) => ({ ...d, generation: 2 }));
    cache.evict(stale);
    const before = cache.lookups;
    const got = await Promise.all(Array.from({ length: 100 }, (_, i) => cache.lookup(k(100 + i))));
    got.forEach((d, i) => expect(compareBytes(d.startKey, k(100 + i)) <= 0 && compareBytes(k(100 + i), d.endKey) < 0).toBe(true));
    expect(cache.lookups - before).toBe(1);
  });

  it('reverse lookups coalesce too and answer the range holding the key before', async () => {
    const ranges = layout([k(100), k(200), k(300)]);
    const cache = new RangeCache(meta(ranges, 1));
    const got = await Promise.all(Array.from({ length: 99 }, (_, i) => cache.lookup(k(202 + i), true)));
    for (const d of got) expect(d.rangeId).toBe(3);
    expect(cache.lookups).toBe(1);
    expect((await cache.lookup(k(200), true)).rangeId).toBe(2);
  });

  it('lookupFresh reads meta2 even on a hit, and keeps the cached entry and its leaseholder when meta2 agrees', async () => {
    let ranges = layout([k(100), k(200)]);
    const cache = new RangeCache(async (key, reverse) => meta(ranges, 16)(key, reverse));
    const d = await cache.lookup(k(150));
    const lh: ReplicaDescriptor = { nodeId: 2, storeId: 2, replicaId: 2, type: 0 };
    cache.setLeaseholder(d.rangeId, lh);
    const before = cache.lookups;
    expect(await cache.lookupFresh(k(150))).toEqual(d);
    expect(cache.lookups).toBe(before + 1);
    expect(cache.get(k(150))).toBe(d);
    expect(cache.leaseholder(d.rangeId)).toEqual(lh);
    // meta2 moved on (the range split): the fresh answer replaces the stale entry.
    ranges = layout([k(100), k(150), k(200)]).map((x) => ({ ...x, generation: 2 }));
    expect((await cache.lookupFresh(k(170))).startKey).toEqual(k(150));
    expect(cache.get(k(170))?.generation).toBe(2);
    expect(cache.get(k(120))).toBeUndefined(); // the stale [k100, k200) is gone, not kept beside it
  });

  it('a failed lookup fails its own key; waiters for other keys look up themselves', async () => {
    const ranges = layout([k(100)]);
    let failNext = true;
    const cache = new RangeCache(async (key, reverse) => {
      await new Promise((r) => setImmediate(r));
      if (failNext) {
        failNext = false;
        throw new Error('meta2 unavailable');
      }
      return meta(ranges, 16)(key, reverse);
    });
    const [a, b] = await Promise.allSettled([cache.lookup(k(1)), cache.lookup(k(2))]);
    expect(a.status).toBe('rejected');
    expect(b.status === 'fulfilled' && b.value.rangeId).toBe(1);
  });

  it('property: any layout, any keys, any prefetch: every answer holds its key, and lookups ≤ ranges touched', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 1, max: 999 }), { maxLength: 30 }),
        fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 8 }),
        async (splitAt, keys, prefetch) => {
          const ranges = layout([...splitAt].sort((x, y) => x - y).map(k));
          const cache = new RangeCache(meta(ranges, prefetch));
          const got = await Promise.all(keys.map((x) => cache.lookup(k(x))));
          const touched = new Set<number>();
          got.forEach((d, i) => {
            const x = k(keys[i] as number);
            expect(compareBytes(d.startKey, x) <= 0 && compareBytes(x, d.endKey) < 0).toBe(true);
            touched.add(d.rangeId);
          });
          expect(cache.lookups).toBeLessThanOrEqual(touched.size);
        },
      ),
      { numRuns: 100 },
    );
  });
});

let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.close();
  cluster = null;
});

/** A ticking 3-node cluster holding key(0) … key(n - 1), and node 1's DistSender and client. */
async function startWithKeys(n: number): Promise<{ c: TestCluster; ds: DistSender; kv: KvClient }> {
  const c = (cluster = await TestCluster.start({ nodes: 3 }));
  c.startTicker();
  const ds = distSender(c, 0);
  const kv = new KvClient(ds);
  for (let b = 0; b < n; b += 250) await kv.batch(Array.from({ length: Math.min(250, n - b) }, (_, j) => ({ kind: 'put' as const, key: key(b + j), value: val(b + j) })));
  return { c, ds, kv };
}

describe('DistSender meta2 lookups on a cluster', () => {
  it('1,000 concurrent gets over a freshly split table: O(ranges) lookups (cold and stale caches); a lease move costs none', async () => {
    const N = 1000;
    const { c, ds } = await startWithKeys(N);
    // A client whose cache holds the one range before the splits.
    const stale = distSender(c, 1);
    expect((await new KvClient(stale).get(key(0)))?.equals(val(0))).toBe(true);
    for (let i = 50; i < N; i += 50) expect(await adminSplit(ds, key(i))).not.toBeNull();
    const ranges = descriptors(c).length;
    expect(ranges).toBeGreaterThanOrEqual(20);
    const cold = distSender(c, 2);
    for (const s of [cold, stale]) {
      const before = s.cache.lookups;
      const got = await Promise.all(Array.from({ length: N }, (_, i) => new KvClient(s).get(key(i))));
      got.forEach((v, i) => expect(v?.equals(val(i))).toBe(true));
      // Before coalescing: ~1,000 (one per key).
      expect(s.cache.lookups - before).toBeLessThanOrEqual(ranges);
    }
    // Move the lease of the range holding key(500) to another node: no lookup, the descriptor stays cached.
    const desc = cold.cache.get(key(500)) as RangeDescriptor;
    // A read takes a lapsed lease; wait (bounded) until one replica holds it.
    let holder = -1;
    for (const deadline = Date.now() + 10_000; holder < 0 && Date.now() < deadline; holder = c.leaseholder(desc.rangeId)) await new KvClient(cold).get(key(500));
    expect(holder).toBeGreaterThanOrEqual(0);
    const target = desc.replicas.find((r) => r.nodeId !== holder + 1) as (typeof desc.replicas)[number];
    // The holder may have the lease before its Raft group has a leader (an expired lease is re-acquired
    // through a read); the transfer's proposal is then dropped: retry it (bounded) until a leader exists.
    for (let attempt = 1; ; attempt++) {
      try {
        await c.node(holder).store?.transferLease(desc.rangeId, target.replicaId);
        break;
      } catch (e) {
        if (!(e instanceof CairnError) || e.code !== 'kv.proposal_dropped' || attempt >= 50) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const before = cold.cache.lookups;
    const got = await Promise.all(Array.from({ length: 50 }, (_, i) => new KvClient(cold).get(key(500 + i))));
    got.forEach((v, i) => expect(v?.equals(val(500 + i))).toBe(true));
    expect(cold.cache.lookups).toBe(before);
    expect(cold.cache.get(key(500))).toBe(desc);
  }, 60_000);

  it("the replica GC queue's checks leave the node's cached leaseholders alone: no lookups, no NotLeaseHolder redirects after them", async () => {
    // The queue looked each follower replica up after evicting its descriptor from the node's range cache, so every
    // scan (once a second) dropped the cached leaseholder of every range the node follows — the ranges its gateway
    // routes elsewhere — and YCSB over 12 ranges paid a meta2 lookup and a NotLeaseHolder redirect on 0.4 of its
    // operations (throughput 30–140 ops/s).
    const N = 200;
    const { c, ds, kv } = await startWithKeys(N);
    for (let i = 20; i < N; i += 20) expect(await adminSplit(ds, key(i))).not.toBeNull();
    // Every range's lease held somewhere and known to the cache (reads take lapsed leases; bounded).
    const ids = (): number[] => descriptors(c).map((d) => d.rangeId);
    for (const deadline = Date.now() + 20_000; ids().some((r) => c.leaseholder(r) < 0) && Date.now() < deadline; ) {
      await Promise.all(Array.from({ length: N }, (_, i) => kv.get(key(i))));
    }
    await Promise.all(Array.from({ length: N }, (_, i) => kv.get(key(i))));
    const touched = [...new Set(Array.from({ length: N }, (_, i) => (ds.cache.get(key(i)) as RangeDescriptor).rangeId))];
    expect(touched.length).toBe(10);
    // (A range whose entry was re-inserted by a concurrent get's split discovery may have lost its hint: not counted.)
    const ranges = touched.filter((r) => ds.cache.leaseholder(r) !== undefined);
    expect(ranges.length).toBeGreaterThanOrEqual(8);
    // The GC queue of node 1's store, over node 1's DistSender (as node.ts wires it), on the replicas it follows.
    const gc = newReplicaGCQueue(() => c.store(0), ds, DEFAULT_RANGE_QUEUE_SETTINGS);
    const checked = await gc.runOnce();
    expect(checked).toBeGreaterThan(0);
    for (const r of ranges) expect(ds.cache.leaseholder(r)).toBeDefined();
    const lookups = ds.cache.lookups;
    const nlh = ds.metrics.notLeaseHolder;
    // One get per range, one after another (concurrent gets to a range whose lease just moved would each count).
    for (let i = 0; i < N; i += 20) expect((await kv.get(key(i)))?.equals(val(i))).toBe(true);
    expect(ds.cache.lookups).toBe(lookups);
    // A lease may still move on its own (the ticker runs): a redirect or two, not one per range the node follows.
    expect(ds.metrics.notLeaseHolder - nlh).toBeLessThanOrEqual(2 + touched.length - ranges.length);

    // Healthy followers (of a known leader) are checked once per HEALTHY_RECHECK_SCANS scans, suspect ones every scan:
    // the scans in between look up only the suspects (before: one meta2 scan per followed range per scan).
    // A replica that is suspect only for a moment inside a scan (a follower between leaders while a lease holder asks
    // for leadership: lead 0) is checked although it is not suspect before or after: seen once in a clean-clone CI
    // ('expected 1 to be ≤ 0'). The ticker is stopped for these scans, so no election or leadership request starts,
    // and a replica whose Raft state, term or leader changed across a scan is allowed for.
    const suspects = (): number => c.store(0).allReplicas().filter((r) => !r.isLeader() && !r.ownsValidLease() && isSuspectReplica(r)).length;
    const raftStates = (): Map<number, string> => new Map(c.store(0).allReplicas().map((r) => [r.rangeId, `${r.raw.raft.state}/${r.raw.raft.term}/${r.raw.raft.lead}`]));
    c.stopTicker();
    try {
      for (let scan = 1; scan < HEALTHY_RECHECK_SCANS; scan++) {
        const before = suspects();
        const statesBefore = raftStates();
        const n = await gc.runOnce();
        const changed = [...raftStates()].filter(([id, st]) => statesBefore.get(id) !== st).length;
        expect(n).toBeLessThanOrEqual(Math.max(before, suspects()) + changed);
      }
    } finally {
      c.startTicker();
    }
    // The HEALTHY_RECHECK_SCANS-th scan after the first checks the healthy followers again.
    expect(await gc.runOnce()).toBeGreaterThan(0);
  }, 60_000);
});
