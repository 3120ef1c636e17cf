/** Shared helpers for the transaction tests: a cluster with a TxnDB per node, keys, splits. */
import { Prng } from '../../src/util/prng.js';
import { ZERO_TIMESTAMP } from '../../src/util/hlc.js';
import { adminSplit } from '../../src/kv/split.js';
import { TxnDB } from '../../src/kv/client/txn-db.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import type { TestCluster, TestClusterOptions } from '../support/test-cluster.js';
import { descriptors, distSender } from '../kv-ranges/support.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import type { RangeDescriptor, ReplicaDescriptor } from '../../src/kv/api.js';
import { KVBatch } from '../../sql/kv.js';
import type { BatchRequest, BatchResponse } from '../../src/kv/api.js';
import type { Sender } from '../../src/kv/kv-client.js';

export { distSender };

export const tkey = (i: number): Buffer => Buffer.from(`\x90t${String(i).padStart(6, '0')}`, 'latin1');
export const TSPAN_START = Buffer.from('\x90t', 'latin1');
export const TSPAN_END = Buffer.from('\x90u', 'latin1');

export interface TxnEnv {
  readonly c: TestCluster;
  readonly ds: DistSender[];
  readonly dbs: TxnDB[];
}

export async function startTxnCluster(start: (o: TestClusterOptions) => Promise<TestCluster>, opts: Partial<TestClusterOptions> & { splits?: readonly Buffer[] } = {}): Promise<TxnEnv> {
  const c = await start({ nodes: 3, ...opts });
  c.startTicker();
  const ds = Array.from({ length: c.size }, (_, i) => distSender(c, i));
  const dbs = ds.map((s, i) => new TxnDB({ sender: s, clock: c.node(i).clock, nodeId: i + 1, prng: new Prng(1000 + i) }));
  for (const k of opts.splits ?? []) await adminSplit(ds[0] as DistSender, k);
  // Acquire every range's lease now (a new lease's timestamp cache starts 2 max offsets ahead).
  for (const k of [tkey(0), ...(opts.splits ?? [])]) await (ds[0] as DistSender).send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'get', key: k }] });
  // Fresh replicas' timestamp caches start at now + 2 max offsets (concurrency-manager.ts): let the clocks pass it,
  // so that the tests' writes land at their own timestamps.
  await new Promise((r) => setTimeout(r, (2 * (opts.maxOffsetMicros ?? 100_000)) / 1000 + 30));
  return { c, ds, dbs };
}

export function batch(f: (b: KVBatch) => void): KVBatch {
  const b = new KVBatch();
  f(b);
  return b;
}

export const str = (b: Buffer | null | undefined): string | null => (b == null ? null : b.toString());

/**
 * The same sender with the observed timestamps stripped from every header
 * (src/kv/uncertainty.ts): leaseholders apply the global uncertainty limit, as
 * before observed timestamps existed — the baseline of the narrowing tests.
 */
export function withoutObservedTimestamps(s: Sender): Sender {
  return {
    send(ba: BatchRequest): Promise<BatchResponse> {
      if (ba.header.observedTimestamps === undefined) return s.send(ba);
      const { observedTimestamps: _, ...header } = ba.header;
      return s.send({ header, requests: ba.requests });
    },
  };
}

/**
 * The range holding `k`, the node index of its leaseholder and of a replica
 * that could take the lease (the lease-move tests' starting point).
 */
export function leaseMoveOf(c: TestCluster, k: Buffer): { d: RangeDescriptor; lh: number; target: ReplicaDescriptor; t: number } {
  const d = descriptors(c).find((x) => compareBytes(x.startKey, k) <= 0 && compareBytes(k, x.endKey) < 0);
  if (d === undefined) throw new Error('no range');
  const lh = c.leaseholder(d.rangeId);
  const target = d.replicas.find((r) => r.nodeId - 1 !== lh);
  if (target === undefined || lh < 0) throw new Error('no lease target');
  return { d, lh, target, t: target.nodeId - 1 };
}
