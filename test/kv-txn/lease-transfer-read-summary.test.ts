/**
 * A lease transfer carries the outgoing holder's read summary (the highest
 * timestamp it served a read at, src/kv/batcheval/cmd-lease.ts and the design
 * note in src/kv/api-codec.ts), and the new holder's timestamp cache starts
 * there (ReplicaConcurrency.onLeaseApplied).
 *
 * Before, the new holder raised its cache to a horizon 2 max offsets ahead of
 * its clock: every write right after a transfer was pushed into the future,
 * and a non-transactional one then waited for the clock (~1 s at the default
 * 500 ms max offset) — the ~1 s write stall after a drained node exited
 * (test/server/cluster.test.ts, session 7's failed CI).
 *   - the new holder's cache starts at or below its clock: nothing is pushed;
 *   - a read the old holder served ahead of the clock still pushes a write on
 *     the new holder above it;
 *   - the transfer latches the whole range, so a read in flight when the
 *     transfer starts is in the summary (it could not be, with only the lease
 *     key latched: the summary would be taken before the read recorded).
 */
import { describe, it, expect } from 'vitest';
import { ZERO_TIMESTAMP, formatTimestamp, tsLess, tsLessEq, type Timestamp } from '../../src/util/hlc.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, leaseMoveOf } from './support.js';

const start = autoCloseClusters();
const MAX_OFFSET = 200_000;

async function until(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function setup() {
  const env = await startTxnCluster(start, { nodes: 3, maxOffsetMicros: MAX_OFFSET });
  const k = tkey(1);
  // A lease must exist before the move is planned (CI1 at load ~30: 'no lease target'): a read through the
  // DistSender acquires one, then the test waits for a replica to hold it.
  await (env.ds[0] as DistSender).send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'get', key: k }] });
  const hasLease = (): boolean => {
    try {
      leaseMoveOf(env.c, k);
      return true;
    } catch {
      return false;
    }
  };
  await until('a leaseholder of the test key', hasLease);
  const move = leaseMoveOf(env.c, k);
  const replicaOn = (node: number) => {
    const r = env.c.store(node).replica(move.d.rangeId);
    if (r === undefined) throw new Error(`no replica of r${move.d.rangeId} on node ${node}`);
    return r;
  };
  const holdsLease = (node: number): boolean => replicaOn(node).lease?.replica.replicaId === move.target.replicaId && replicaOn(node).ownsValidLease();
  return { ...env, k, ...move, replicaOn, holdsLease };
}

async function putAt(ds: DistSender, k: Buffer): Promise<Timestamp> {
  const res = await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: k, value: Buffer.from('v') }] });
  return res.timestamp;
}

describe('lease transfer with a read summary', () => {
  it("starts the new holder's timestamp cache at or below its clock: a write right after the transfer is not pushed into the future", async () => {
    const env = await setup();
    await env.c.store(env.lh).transferLease(env.d.rangeId, env.target.replicaId);
    await until('the target serving under the new lease', () => env.holdsLease(env.t));
    const low = env.replicaOn(env.t).concurrency.tscache.lowWater;
    const now = env.c.node(env.t).clock.now();
    console.log(`new holder n${env.t + 1}: cache low water ${formatTimestamp(low)}, clock ${formatTimestamp(now)}`);
    expect(tsLessEq(low, now), `low water ${formatTimestamp(low)} is ahead of the clock ${formatTimestamp(now)}`).toBe(true);
    const ts = await putAt(env.ds[env.t] as DistSender, env.k);
    expect(ts.wall - now.wall).toBeLessThan(MAX_OFFSET);
  }, 30_000);

  it('keeps a read the old holder served ahead of the clock: a write on the new holder lands above it', async () => {
    const env = await setup();
    const lhNow = env.c.node(env.lh).clock.now();
    const readTs = { wall: lhNow.wall + MAX_OFFSET / 2, logical: 0 };
    await (env.ds[env.lh] as DistSender).send({ header: { rangeId: 0, timestamp: readTs }, requests: [{ kind: 'get', key: env.k }] });
    await env.c.store(env.lh).transferLease(env.d.rangeId, env.target.replicaId);
    await until('the target serving under the new lease', () => env.holdsLease(env.t));
    const ts = await putAt(env.ds[env.t] as DistSender, env.k);
    expect(tsLess(readTs, ts), `the write at ${formatTimestamp(ts)} landed at or below the read at ${formatTimestamp(readTs)}`).toBe(true);
  }, 30_000);

  it('waits for requests in flight: a read that records after the transfer started is in the summary', async () => {
    const env = await setup();
    const old = env.replicaOn(env.lh);
    // An in-flight read: holds its latch on k, and records into the cache only when it finishes.
    const guard = await old.concurrency.acquireLatches([{ key: env.k, endKey: null, write: false }]);
    const transfer = env.c.store(env.lh).transferLease(env.d.rangeId, env.target.replicaId);
    await until('the transfer started (the old holder stops serving)', () => !old.ownsValidLease());
    // One macrotask: a transfer that latched only the lease key would have proposed by now.
    await new Promise((r) => setImmediate(r));
    expect(old.pendingProposals).toBe(0);
    const readTs = { wall: env.c.node(env.lh).clock.now().wall + MAX_OFFSET / 2, logical: 0 };
    old.concurrency.tscache.add({ key: env.k, endKey: null }, readTs);
    guard.release();
    await transfer;
    await until('the target serving under the new lease', () => env.holdsLease(env.t));
    const low = env.replicaOn(env.t).concurrency.tscache.lowWater;
    expect(tsLessEq(readTs, low), `low water ${formatTimestamp(low)} is below the read at ${formatTimestamp(readTs)}`).toBe(true);
  }, 30_000);
});
