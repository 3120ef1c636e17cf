/** Shared by the MVCC GC tests (test/kv-gc): raw version counts, GC requests sent to a leaseholder, waits on thresholds. */
import { expect } from 'vitest';
import type { Engine } from '../../storage/engine.js';
import { encodeMvccKey, mvccKeyHistoryEnd } from '../../storage/mvcc-key.js';
import { addStats, computeStats, mvccLoadHead, type MvccStats } from '../../storage/mvcc.js';
import { LOCAL_MAX, rangeLocalSpan } from '../../storage/keys.js';
import { ZERO_TIMESTAMP, tsLessEq, type Timestamp } from '../../src/util/hlc.js';
import { CairnError } from '../../src/util/errors.js';
import type { RangeDescriptor } from '../../src/kv/api.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import type { TestCluster } from '../support/test-cluster.js';
import { descriptors } from '../kv-ranges/support.js';
import { compareBytes } from '../../storage/encoding/bytes.js';

/** The committed versions of `key` stored in `e`: the head's newest one plus the version entries (read raw). */
export async function rawVersionCount(e: Engine, key: Buffer): Promise<number> {
  const head = mvccLoadHead(e, key);
  const it = e.iterator({ gte: encodeMvccKey(key), lt: mvccKeyHistoryEnd(key) });
  const rows = await it.nextBatch(100_000);
  await it.close();
  if (head === null) return rows.length;
  // rows[0] is the head; an out-of-line newest version is one of the entries after it, counted once.
  const stored = rows.length - 1;
  return head.committed === null || head.committed.value === undefined ? stored : stored + 1;
}

/** The MVCC stats of range `d`'s data in `e` recounted (its user keys and range-local keys). */
export async function recountRange(e: Engine, d: RangeDescriptor): Promise<MvccStats> {
  const local = rangeLocalSpan(d.startKey, d.endKey);
  const s = await computeStats(e, compareBytes(d.startKey, LOCAL_MAX) < 0 ? LOCAL_MAX : d.startKey, d.endKey);
  addStats(s, await computeStats(e, local.key, local.endKey));
  return s;
}

/** The range holding `key`, as the running stores see it. */
export function rangeOf(c: TestCluster, key: Buffer): RangeDescriptor {
  const d = descriptors(c).find((x) => compareBytes(x.startKey, key) <= 0 && compareBytes(key, x.endKey) < 0);
  if (d === undefined) throw new Error('no range holds the key');
  return d;
}

/** Sends a GCRequest for range `d` (threshold `t`, `keys`) through the DistSender (it routes to the leaseholder). */
export async function sendGc(ds: DistSender, d: RangeDescriptor, t: Timestamp, keys: readonly Buffer[]): Promise<void> {
  await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'gc', key: keys[0] ?? d.startKey, endKey: d.endKey, threshold: t, keys }] });
}

/** Waits until every replica of `rangeId` has adopted a GC threshold ≥ t. */
export async function waitThreshold(c: TestCluster, rangeId: number, t: Timestamp): Promise<void> {
  await c.waitFor(() => c.replicas(rangeId).length > 0 && c.replicas(rangeId).every(({ r }) => tsLessEq(t, r.gcThreshold)), 10_000, `r${rangeId}'s GC threshold on every replica`);
}

/** `p` fails with BatchTimestampBeforeGCError naming `ts` and a threshold ≥ it. */
export async function expectBeforeGc(p: Promise<unknown>): Promise<CairnError> {
  const e = await p.then(
    () => null,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(CairnError);
  const ce = e as CairnError;
  expect(ce.code).toBe('kv.batch_timestamp_before_gc');
  expect(ce.retryable).toBe(false);
  expect(ce.sqlState).toBe('22023');
  expect(ce.message).toMatch(/batch timestamp \S+ must be after replica GC threshold \S+/);
  return ce;
}
