/** Shared helpers for the range tests: a DistSender per node, keys, and the whole-cluster consistency check. */
import { expect } from 'vitest';
import { KEY_MAX, META2_MAX, META2_PREFIX, decodeMeta2Key, prettyKey } from '../../storage/keys.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { RpcNodeDialer, KvClient } from '../../src/kv/kv-client.js';
import { DistSender } from '../../src/kv/dist-sender.js';
import { decodeRangeDescriptor, encodeRangeDescriptor } from '../../src/kv/api-codec.js';
import type { AdminSplitResponse, BatchRequest, RangeDescriptor } from '../../src/kv/api.js';
import { RpcError } from '../../src/rpc/errors.js';
import { adminSplit } from '../../src/kv/split.js';
import { ZERO_TIMESTAMP, type Timestamp } from '../../src/util/hlc.js';
import type { TestCluster } from '../support/test-cluster.js';

export const key = (i: number): Buffer => Buffer.from(`\x90k${String(i).padStart(6, '0')}`, 'latin1');
export const val = (i: number): Buffer => Buffer.from(`value-${i}`);
export const SPAN_START = Buffer.from('\x90', 'latin1');
export const SPAN_END = Buffer.from('\x91', 'latin1');

/** Every key 0…n-1 of the test span is there, once, in order, with `value(i)`; a sample of point reads agrees. */
export async function expectAllKeys(kv: KvClient, n: number, value: (i: number) => Buffer = val): Promise<void> {
  const rows = await kv.scan(SPAN_START, SPAN_END);
  expect(rows.map((r) => r.key)).toEqual(Array.from({ length: n }, (_, i) => key(i)));
  rows.forEach((r, i) => expect(r.value.equals(value(i))).toBe(true));
  for (let i = 0; i < n; i += 13) expect((await kv.get(key(i)))?.equals(value(i))).toBe(true);
}

/** A DistSender entering the cluster through node i. */
export function distSender(c: TestCluster, i = 0, timeoutMs = 10_000): DistSender {
  const rpc = c.node(i).rpc;
  if (rpc === null) throw new Error(`node ${i} stopped`);
  return new DistSender(new RpcNodeDialer(rpc, timeoutMs), {
    nodes: () => Array.from({ length: c.size }, (_, j) => j).filter((j) => c.isRunning(j)).map((j) => j + 1),
    now: () => c.node(i).clock.now(),
  });
}

/**
 * A DistSender through node 1 (no backoff) whose dialer loses the answer to
 * every batch `lose` picks — applied or refused, the caller sees rpc.canceled
 * after sending (ambiguous), as when the DistSender's breaker abandons a call
 * to a live but slow node.
 */
export function lossyDistSender(c: TestCluster, lose: (ba: BatchRequest) => boolean): DistSender {
  const real = new RpcNodeDialer(c.node(0).rpc!, 10_000);
  const dialer = {
    send: async (n: number, ba: BatchRequest) => {
      const res = real.send(n, ba);
      if (!lose(ba)) return res;
      await res.catch(() => undefined);
      throw new RpcError('rpc.canceled', `rpc: call of method 100 to n${n} canceled after the request was sent (outcome unknown)`, { ambiguous: true, retryable: false, sqlState: '40003' });
    },
  };
  return new DistSender(dialer, { nodes: () => [1, 2, 3], now: () => c.node(0).clock.now(), sleep: async () => undefined });
}

export function client(c: TestCluster, i = 0): KvClient {
  return new KvClient(distSender(c, i));
}

/**
 * Writes through `ds` and returns the timestamp the write was acknowledged
 * at. A write on a replica whose timestamp cache starts in the future (a new
 * replica, a merged range, a new lease) is pushed above the clocks; the
 * server commit-waits it (concurrency-manager.ts), so a read right after it
 * sees it (test/kv-bugs2/new-replica-read.test.ts).
 */
export async function putAt(ds: DistSender, k: Buffer, v: Buffer): Promise<Timestamp> {
  return (await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: k, value: v }] })).timestamp;
}

/** A non-transactional read of `k` at the leaseholder's now, right away. */
export async function getNow(ds: DistSender, k: Buffer): Promise<Buffer | null> {
  const r = (await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'get', key: k }] })).responses[0];
  return r?.kind === 'get' ? r.value : null;
}

/** Every range descriptor by rangeId as the running stores see it (the highest generation wins). */
export function descriptors(c: TestCluster): RangeDescriptor[] {
  const byId = new Map<number, RangeDescriptor>();
  for (let i = 0; i < c.size; i++) {
    if (!c.isRunning(i)) continue;
    for (const r of c.store(i).allReplicas()) {
      if (!r.initialized) continue;
      const cur = byId.get(r.rangeId);
      if (cur === undefined || cur.generation < r.desc.generation) byId.set(r.rangeId, r.desc);
    }
  }
  return [...byId.values()].sort((a, b) => compareBytes(a.startKey, b.startKey));
}

/** The running replicas of d that its descriptor lists (not placeholders left on other stores). */
export function members(c: TestCluster, d: RangeDescriptor): ReturnType<TestCluster['replicas']> {
  return c.replicas(d.rangeId).filter(({ i, r }) => r.initialized && d.replicas.some((x) => x.nodeId === i + 1));
}

/** Whether meta2 holds exactly the running stores' descriptors. */
export async function metaMatches(c: TestCluster, kv: KvClient): Promise<boolean> {
  const meta = await kv.scan(META2_PREFIX, META2_MAX);
  const want = descriptors(c).map((d) => encodeRangeDescriptor(d));
  return meta.length === want.length && meta.every((m, i) => m.value.equals(want[i] as Buffer));
}

/** Whether `descs` (in start key order) tile [KEY_MIN, KEY_MAX) without gaps or overlaps. */
function tiles(descs: readonly RangeDescriptor[]): boolean {
  return descs.length > 0 && (descs[0] as RangeDescriptor).startKey.length === 0 && compareBytes((descs[descs.length - 1] as RangeDescriptor).endKey, KEY_MAX) === 0 && descs.every((d, i) => i === 0 || (descs[i - 1] as RangeDescriptor).endKey.equals(d.startKey));
}

/**
 * The running stores' descriptors once they tile the keyspace (bounded): a
 * store that has not applied the last merge yet still holds the absorbed
 * range's replica, which descriptors() lists beside the merged range.
 */
export async function settledDescriptors(c: TestCluster): Promise<RangeDescriptor[]> {
  await c.waitFor(() => tiles(descriptors(c)), 10_000, "the stores' descriptors tiling the keyspace");
  return descriptors(c);
}

/** A bound as the range tests write it: `k000050` for key(50), else the keyspace's pretty form. */
function showKey(k: Buffer): string {
  return k[0] === 0x90 && k[1] === 0x6b ? k.subarray(1).toString('latin1') : prettyKey(k);
}

/** A range descriptor in one line: `r7 [k000010, k000050) g3`. */
export function showDesc(d: RangeDescriptor): string {
  return `r${d.rangeId} [${showKey(d.startKey)}, ${showKey(d.endKey)}) g${d.generation}`;
}

/**
 * meta2 holds exactly the running stores' descriptors: one record per live
 * range, at its end key, equal to its descriptor — no record of a range
 * merged away, none of an older span (issue 4: a stale record left at the end
 * of test/kv-ranges-multiproc/split-merge). The failure lists both sides.
 */
export async function expectMeta2MatchesDescriptors(c: TestCluster, kv: KvClient): Promise<void> {
  const descs = await settledDescriptors(c);
  const meta = (await kv.scan(META2_PREFIX, META2_MAX)).map((row) => ({ at: decodeMeta2Key(Buffer.from(row.key)), d: decodeRangeDescriptor(Buffer.from(row.value)) }));
  const shown = meta.map(({ at, d }) => (at.equals(d.endKey) ? showDesc(d) : `${showDesc(d)} at ${showKey(at)}`));
  expect(shown, 'meta2 records (left) vs the stores\' descriptors').toEqual(descs.map(showDesc));
  expect(meta.map(({ d }) => d)).toEqual(descs);
}

/** Runs `repair` (the queues) until meta2 matches the descriptors (bounded): a restarted cluster elects leaders first. */
export async function repairUntil(c: TestCluster, kv: () => KvClient, repair: () => Promise<void>): Promise<void> {
  for (let round = 0; round < 40; round++) {
    await repair();
    if (await metaMatches(c, kv())) return;
    await c.waitFor(() => descriptors(c).every((d) => c.leader(d.rangeId) >= 0), 5_000, 'a leader on every range');
  }
  expect(await metaMatches(c, kv()), 'meta2 repaired').toBe(true);
}

/**
 * The cluster-wide invariants after splits/merges: descriptors tile
 * [KEY_MIN, KEY_MAX) without gaps or overlaps; meta2 holds exactly one record
 * per range, equal to its descriptor; every replica of a range agrees on its
 * descriptor and on a checksum computed at one applied index.
 */
export async function checkConsistency(c: TestCluster, kv: KvClient, checksumBase: number): Promise<RangeDescriptor[]> {
  const descs = descriptors(c);
  expect(descs[0]?.startKey.length).toBe(0);
  for (let i = 1; i < descs.length; i++) expect(compareBytes((descs[i - 1] as RangeDescriptor).endKey, (descs[i] as RangeDescriptor).startKey)).toBe(0);
  expect(compareBytes((descs[descs.length - 1] as RangeDescriptor).endKey, KEY_MAX)).toBe(0);
  await expectMeta2MatchesDescriptors(c, kv);
  let n = checksumBase;
  for (const d of descs) {
    // Every replica hashes the state at the command's own apply position, so
    // any disagreement is a real divergence. Asked again only when a replica
    // was caught up past the command by a snapshot (kv.checksum_superseded).
    let sums: string[] = [];
    for (let attempt = 0; attempt < 4 && sums.length === 0; attempt++) {
      const id = n++;
      await kv.sender.send({ header: { rangeId: d.rangeId, timestamp: { wall: 0, logical: 0 } }, requests: [{ kind: 'computeChecksum', checksumId: id }] });
      // Bounded: a replica that never applies the command counts as disagreeing.
      const bounded = (p: Promise<string>, i: number): Promise<string> => Promise.race([p, new Promise<string>((r) => setTimeout(() => r(`timeout-${i}`), 10_000))]);
      try {
        sums = await Promise.all(members(c, d).map(({ i }) => bounded(c.store(i).checksum(d.rangeId, id), i)));
      } catch (e) {
        if ((e as { code?: string }).code !== 'kv.checksum_superseded') throw e;
      }
    }
    expect(sums.length).toBe(d.replicas.length);
    expect(new Set(sums).size, `replica checksums of r${d.rangeId}: ${sums.join(' ')}`).toBe(1);
    for (const { r } of members(c, d)) expect(r.desc).toEqual(d);
  }
  return descs;
}

/**
 * The merge race tests' layout: three nodes plus a fourth without replicas,
 * the span split at key(50) — L = [.., key(50)), R = [key(50), ..), both on
 * n1–n3 — with key(1) and key(100) written and R's lease acquired.
 */
export async function startSplitPair(start: (opts: { nodes: number }) => Promise<TestCluster>): Promise<{ c: TestCluster; ds: DistSender; left: RangeDescriptor; right: RangeDescriptor }> {
  const c = await start({ nodes: 3 });
  c.startTicker();
  await c.addNode();
  const ds = distSender(c, 0, 2_000);
  await putAt(ds, key(1), val(1));
  await putAt(ds, key(100), val(100));
  const split = await adminSplit(ds, key(50));
  expect(split).not.toBeNull();
  expect(await getNow(ds, key(100))).toEqual(val(100));
  return { c, ds, left: (split as AdminSplitResponse).left, right: (split as AdminSplitResponse).right };
}

/** R of startSplitPair still serves (not frozen): key(i) written and read, key(100) read, within a few seconds. */
export async function expectRightServes(ds: DistSender, i: number): Promise<void> {
  const deadline = Date.now() + 8_000;
  for (;;) {
    try {
      await putAt(ds, key(i), val(i));
      expect(await getNow(ds, key(100))).toEqual(val(100));
      expect(await getNow(ds, key(i))).toEqual(val(i));
      return;
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
