/**
 * The conflict matrix (reader / writer against committed, pending, staging
 * and aborted intents; higher / lower priority; expired heartbeat), refresh
 * success and failure, uncertainty, write-too-old, deadlocks of 2 and 3
 * transactions, and the bad-input cases — on a real (single-node or
 * 3-node) cluster through the DistSender.
 */
import { afterEach, describe, it, expect } from 'vitest';
import { ZERO_TIMESTAMP, tsLess, tsMax, type Timestamp } from '../../src/util/hlc.js';
import { CairnError } from '../../src/util/errors.js';
import type { TxnMeta } from '../../storage/mvcc.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import type { Request } from '../../src/kv/api.js';
import type { TxnRecordResponse } from '../../src/kv/txn-api.js';
import { txnLiveness } from '../../src/kv/txn-record.js';
import { NORMAL_PRIORITY } from '../../src/kv/client/txn-coord-sender.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, str, withoutObservedTimestamps, type TxnEnv } from './support.js';
import { TxnDB } from '../../src/kv/client/txn-db.js';
import { Prng } from '../../src/util/prng.js';

const start = autoCloseClusters();
const savedExpiry = txnLiveness.expiryMicros;
afterEach(() => {
  txnLiveness.expiryMicros = savedExpiry;
});

const v = (s: string): Buffer => Buffer.from(s);
let idSeq = 1;
function rawTxn(env: TxnEnv, anchor: Buffer, opts: { priority?: number; ts?: Timestamp } = {}): TxnMeta {
  const id = Buffer.alloc(16);
  id.writeUInt32BE(0xabc00000 + idSeq++, 0);
  const ts = opts.ts ?? env.c.node(0).clock.now();
  return { id, epoch: 0, writeTimestamp: ts, minTimestamp: ts, sequence: 1, key: anchor, priority: opts.priority ?? NORMAL_PRIORITY };
}
async function send(ds: DistSender, meta: TxnMeta | null, reqs: Request[], ts: Timestamp = ZERO_TIMESTAMP) {
  return ds.send({ header: { rangeId: 0, timestamp: meta === null ? ts : meta.writeTimestamp, ...(meta === null ? {} : { txn: meta }) }, requests: reqs });
}
/** Leaves an intent of `meta` on key and the record in `status` (intent not resolved). */
async function intentWithRecord(env: TxnEnv, meta: TxnMeta, key: Buffer, value: string, status: 'pending' | 'committed' | 'aborted' | 'none'): Promise<void> {
  const ds = env.ds[0] as DistSender;
  await send(ds, meta, [{ kind: 'put', key, value: v(value) }]);
  if (status === 'none') return;
  await send(ds, meta, [{ kind: 'beginTxn', key: meta.key }]);
  if (status === 'committed') await send(ds, meta, [{ kind: 'endTxn', key: meta.key, commit: true, inFlightWrites: [], lockSpans: [] }]);
  if (status === 'aborted') await send(ds, meta, [{ kind: 'endTxn', key: meta.key, commit: false, inFlightWrites: [], lockSpans: [] }]);
}
/** Waits (bounded) until node 0's clock passes `since` + the liveness expiry: a record last active at or before `since` has expired. */
async function untilExpired(env: TxnEnv, since: Timestamp): Promise<void> {
  await env.c.waitFor(() => env.c.node(0).clock.now().wall > since.wall + txnLiveness.expiryMicros, 10_000, 'the record expired');
}
async function get(env: TxnEnv, key: Buffer, priority: 'low' | 'normal' | 'high' = 'normal'): Promise<string | null> {
  const t = (env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>).newTxn({ priority });
  const r = await t.run(batch((b) => b.get(key)));
  await t.commit();
  return str((r[0] as { value: Buffer | null }).value);
}
async function put(env: TxnEnv, key: Buffer, value: string, priority: 'low' | 'normal' | 'high' = 'normal'): Promise<void> {
  const t = (env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>).newTxn({ priority });
  await t.commitInBatch(batch((b) => b.put(key, v(value))));
}

describe('conflict matrix', () => {
  it('reader and writer against a COMMITTED intent: resolve and see / overwrite it', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    await intentWithRecord(env, rawTxn(env, tkey(1)), tkey(1), 'c1', 'committed');
    expect(await get(env, tkey(1))).toBe('c1');
    await intentWithRecord(env, rawTxn(env, tkey(2)), tkey(2), 'c2', 'committed');
    await put(env, tkey(2), 'w2');
    expect(await get(env, tkey(2))).toBe('w2');
  });

  it('reader and writer against an ABORTED intent: resolve it away', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    await intentWithRecord(env, rawTxn(env, tkey(1)), tkey(1), 'a1', 'aborted');
    expect(await get(env, tkey(1))).toBe(null);
    await intentWithRecord(env, rawTxn(env, tkey(2)), tkey(2), 'a2', 'aborted');
    await put(env, tkey(2), 'w2');
    expect(await get(env, tkey(2))).toBe('w2');
  });

  it('PENDING intent, higher-priority reader: pushes its timestamp and reads below it; the pushee must commit above', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const db = env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>;
    const pushee = db.newTxn();
    await pushee.run(batch((b) => b.put(tkey(1), v('p'))));
    const before = pushee.provisionalCommitTimestamp();
    expect(await get(env, tkey(1), 'high')).toBe(null);
    await pushee.commit();
    expect(tsLess(before, pushee.provisionalCommitTimestamp())).toBe(true);
    expect(await get(env, tkey(1))).toBe('p');
  });

  it('PENDING intent, higher-priority writer: aborts the pushee, whose commit fails retryably', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const db = env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>;
    const pushee = db.newTxn();
    await pushee.run(batch((b) => b.put(tkey(1), v('p'))));
    await put(env, tkey(1), 'w', 'high');
    const err = await pushee.commit().then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).code).toBe('kv.txn_aborted');
    expect((err as CairnError).retryable).toBe(true);
    expect(await get(env, tkey(1))).toBe('w');
  });

  it('PENDING intent, lower-priority reader and writer: wait for the pushee to finish', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const db = env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>;
    const pushee = db.newTxn({ priority: 'high' });
    await pushee.run(batch((b) => b.put(tkey(1), v('p'))));
    let readDone = false;
    const reader = get(env, tkey(1), 'low').then((x) => {
      readDone = true;
      return x;
    });
    const writer = put(env, tkey(1), 'w', 'low');
    // They wait in the leaseholder's lock table (after the push delays: in their client's pusher).
    const waiting = (): number => env.c.store(0).allReplicas().reduce((a, r) => a + r.concurrency.lockTable.metrics().waiters, 0) + db.pusher.metrics.waits;
    await env.c.waitFor(() => waiting() > 0 || readDone, 10_000, 'the reader waiting');
    expect(readDone).toBe(false);
    await pushee.commit();
    expect(await reader).toBe('p');
    await writer;
    expect(await get(env, tkey(1))).toBe('w');
  });

  it('PENDING intent with an expired heartbeat: a lower-priority writer aborts it', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    txnLiveness.expiryMicros = 100_000;
    const old = env.c.node(0).clock.now();
    const meta = rawTxn(env, tkey(1), { priority: 1 << 30, ts: old });
    await intentWithRecord(env, meta, tkey(1), 'x', 'pending');
    await untilExpired(env, env.c.node(0).clock.now());
    await put(env, tkey(1), 'w', 'low');
    const rec = await send(env.ds[0] as DistSender, null, [{ kind: 'queryTxn', key: meta.key, txnId: meta.id }]);
    expect((rec.responses[0] as TxnRecordResponse).record?.status).toBe('aborted');
    expect(await get(env, tkey(1))).toBe('w');
  });

  it('STAGING intent, coordinator alive: even a higher-priority reader and writer wait for it, never recover it', async () => {
    const env = await startTxnCluster(start, { nodes: 1, splits: [tkey(50)] });
    txnLiveness.expiryMicros = 60_000_000; // the record stays live for the whole test
    const ds = env.ds[0] as DistSender;
    const db = env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>;
    let meta = rawTxn(env, tkey(1));
    let ts = (await send(ds, meta, [{ kind: 'put', key: tkey(1), value: v('a') }])).timestamp;
    ts = tsMax(ts, (await send(ds, { ...meta, writeTimestamp: ts }, [{ kind: 'put', key: tkey(60), value: v('b') }])).timestamp);
    meta = { ...meta, writeTimestamp: ts };
    const lockSpans = [{ key: tkey(1), endKey: null }, { key: tkey(60), endKey: null }];
    const staged = await send(ds, meta, [{ kind: 'endTxn', key: tkey(1), commit: true, inFlightWrites: [{ key: tkey(60), seq: 1 }], lockSpans }]);
    expect((staged.responses[0] as TxnRecordResponse).record?.status).toBe('staging');
    let readDone = false;
    const reader = get(env, tkey(1), 'high').then((x) => ((readDone = true), x));
    const writer = put(env, tkey(60), 'w', 'high');
    const waiting = (): number => env.c.store(0).allReplicas().reduce((a, r) => a + r.concurrency.lockTable.metrics().waiters, 0) + db.pusher.metrics.waits;
    await env.c.waitFor(() => waiting() >= 2 || readDone, 10_000, 'the reader and the writer waiting');
    expect(readDone).toBe(false);
    expect(db.pusher.metrics.recoveries).toBe(0);
    // The coordinator finishes its commit: the record goes COMMITTED, the reader sees 'a', the writer lands above 'b'.
    const done = await send(ds, meta, [{ kind: 'endTxn', key: tkey(1), commit: true, inFlightWrites: [], lockSpans }]);
    expect((done.responses[0] as TxnRecordResponse).record?.status).toBe('committed');
    expect(await reader).toBe('a');
    await writer;
    expect(await get(env, tkey(60))).toBe('w');
    expect(db.pusher.metrics.recoveries).toBe(0);
  });

  for (const present of [true, false]) {
    it(`STAGING intent, expired: recovery ${present ? 'proves every in-flight write → COMMITTED' : 'prevents a missing write → ABORTED'}`, async () => {
      const env = await startTxnCluster(start, { nodes: 1, splits: [tkey(50)] });
      txnLiveness.expiryMicros = 100_000;
      const ds = env.ds[0] as DistSender;
      let meta = rawTxn(env, tkey(1));
      // Anchor write on range 1; the in-flight write on the other range.
      // (Writes may be pushed — a fresh range's timestamp cache starts at now + max offset —: stage at the highest.)
      let ts = (await send(ds, meta, [{ kind: 'put', key: tkey(1), value: v('a') }])).timestamp;
      if (present) ts = tsMax(ts, (await send(ds, { ...meta, writeTimestamp: ts }, [{ kind: 'put', key: tkey(60), value: v('b') }])).timestamp);
      meta = { ...meta, writeTimestamp: ts };
      const staged = await send(ds, meta, [{ kind: 'endTxn', key: tkey(1), commit: true, inFlightWrites: [{ key: tkey(60), seq: 1 }], lockSpans: [{ key: tkey(1), endKey: null }, { key: tkey(60), endKey: null }] }]);
      expect((staged.responses[0] as TxnRecordResponse).record?.status).toBe('staging');
      await untilExpired(env, tsMax(env.c.node(0).clock.now(), staged.timestamp));
      expect(await get(env, tkey(1), 'low')).toBe(present ? 'a' : null);
      const rec = await send(ds, null, [{ kind: 'queryTxn', key: meta.key, txnId: meta.id }]);
      expect((rec.responses[0] as TxnRecordResponse).record?.status).toBe(present ? 'committed' : 'aborted');
      if (!present) {
        // The prevented write can no longer land at the staging timestamp.
        const late = await send(ds, meta, [{ kind: 'put', key: tkey(60), value: v('late') }]);
        expect(tsLess(meta.writeTimestamp, late.timestamp)).toBe(true);
      }
      expect(env.dbs[0]?.pusher.metrics.recoveries).toBeGreaterThan(0);
    });
  }
});

describe('refresh, uncertainty, write-too-old', () => {
  it('a write pushed by a later read refreshes its reads and commits without restarting', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const db = env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>;
    const t = db.newTxn();
    await t.run(batch((b) => b.get(tkey(1))));
    expect(await get(env, tkey(2))).toBe(null); // a read at a later timestamp: tscache
    const before = t.readTimestamp();
    await t.run(batch((b) => b.put(tkey(2), v('t'))));
    expect(tsLess(before, t.readTimestamp())).toBe(true);
    await t.commit();
    expect(db.metrics.refreshes).toBeGreaterThan(0);
    expect(db.metrics.restarts).toBe(0);
  });

  it('the refresh fails when a read span changed: retryable RETRY_SERIALIZABLE', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const db = env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>;
    const t = db.newTxn();
    await t.run(batch((b) => b.get(tkey(1))));
    await put(env, tkey(1), 'other');
    expect(await get(env, tkey(2))).toBe(null);
    const err = await t.run(batch((b) => b.put(tkey(2), v('t')))).then(() => null, (e: unknown) => e);
    expect((err as CairnError).retryable).toBe(true);
    expect((err as CairnError).message).toMatch(/RETRY_SERIALIZABLE/);
    await t.restart();
    await t.commitInBatch(batch((b) => b.put(tkey(2), v('t2'))));
    expect(await get(env, tkey(2))).toBe('t2');
  });

  it('uncertainty: a value committed after the reader started, inside its window, moves the reader up (or restarts it)', async () => {
    const env = await startTxnCluster(start, { nodes: 1, maxOffsetMicros: 1_000_000, settings: { leaseDurationMicros: 6_000_000 } });
    const db = env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>;
    const t = db.newTxn();
    // t2 applies the global limit (its observed timestamp of the one node would predate both writes and hide
    // them: observed-timestamps.test.ts); t2 shares the cluster and the clock.
    const global = new TxnDB({ sender: withoutObservedTimestamps(env.ds[0] as DistSender), clock: env.c.node(0).clock, nodeId: 1, prng: new Prng(5) });
    const t2 = global.newTxn();
    await t2.run(batch((b) => b.get(tkey(3))));
    await put(env, tkey(3), 'later3');
    await put(env, tkey(1), 'later');
    // t: nothing read yet → refresh above the uncertain value and see it.
    expect(str(((await t.run(batch((b) => b.get(tkey(1)))))[0] as { value: Buffer | null }).value)).toBe('later');
    await t.commit();
    // t2 read tkey(3) before the write, so moving up fails: uncertainty restart.
    const err = await t2.run(batch((b) => b.get(tkey(1)))).then(() => null, (e: unknown) => e);
    expect((err as CairnError).message).toMatch(/RETRY_UNCERTAINTY/);
  });

  it('write-too-old: a blind write moves above the newer version; after a read of the key it restarts', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const db = env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>;
    const blind = db.newTxn();
    const reader = db.newTxn();
    await reader.run(batch((b) => b.get(tkey(1))));
    const fixedTs = env.c.node(0).clock.now();
    blind.setFixedTimestamp(fixedTs);
    const blind2 = db.newTxn();
    await put(env, tkey(1), 'newer');
    await blind2.commitInBatch(batch((b) => b.put(tkey(1), v('blind'))));
    expect(await get(env, tkey(1))).toBe('blind');
    const err = await reader.commitInBatch(batch((b) => b.put(tkey(1), v('r')))).then(() => null, (e: unknown) => e);
    expect((err as CairnError).retryable).toBe(true);
    expect((err as CairnError).message).toMatch(/RETRY_WRITE_TOO_OLD|RETRY_SERIALIZABLE/);
    await blind.rollback();
  });
});

describe('deadlocks', () => {
  for (const n of [2, 3]) {
    it(`a waits-for cycle of ${n} transactions is broken by aborting one`, async () => {
      const env = await startTxnCluster(start, { nodes: 1, splits: [tkey(10), tkey(20)] });
      const db = env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>;
      const keys = [tkey(1), tkey(11), tkey(21)].slice(0, n);
      const txns = keys.map(() => db.newTxn());
      await Promise.all(txns.map((t, i) => t.run(batch((b) => b.put(keys[i] as Buffer, v(`own${i}`))))));
      const results = await Promise.allSettled(
        txns.map(async (t, i) => {
          await t.run(batch((b) => b.put(keys[(i + 1) % n] as Buffer, v(`next${i}`))));
          await t.commit();
        }),
      );
      const ok = results.filter((r) => r.status === 'fulfilled').length;
      const failed = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
      expect(ok).toBeGreaterThanOrEqual(1);
      expect(failed.length).toBeGreaterThanOrEqual(1);
      for (const f of failed) expect((f.reason as CairnError).retryable).toBe(true);
      expect(db.pusher.metrics.deadlocksBroken).toBeGreaterThan(0);
    });
  }
});

describe('bad input', () => {
  it('typed errors for commit after abort, unknown heartbeat, future timestamp, gone intent; state intact', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const ds = env.ds[0] as DistSender;
    const meta = rawTxn(env, tkey(1));
    await intentWithRecord(env, meta, tkey(1), 'x', 'aborted');
    const codeOf = (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (e as CairnError).code);
    expect(await codeOf(send(ds, meta, [{ kind: 'endTxn', key: meta.key, commit: true, inFlightWrites: [], lockSpans: [] }]))).toBe('kv.txn_aborted');
    const unknown = rawTxn(env, tkey(2));
    expect(await codeOf(send(ds, unknown, [{ kind: 'heartbeatTxn', key: unknown.key, now: env.c.node(0).clock.now() }]))).toBe('kv.txn_not_found');
    const now = env.c.node(0).clock.now();
    expect(await codeOf(send(ds, null, [{ kind: 'get', key: tkey(3) }], { wall: now.wall + 60_000_000, logical: 0 }))).toMatch(/kv.timestamp_in_future|hlc/);
    const res = await send(ds, null, [{ kind: 'resolveIntent', key: tkey(4), txn: unknown, status: 'committed', ignoredSeqNums: [], strict: false }]);
    expect((res.responses[0] as { found: number }).found).toBe(0);
    expect(await codeOf(send(ds, null, [{ kind: 'resolveIntent', key: tkey(4), txn: unknown, status: 'committed', ignoredSeqNums: [], strict: true }]))).toBe('kv.intent_missing');
    await put(env, tkey(1), 'fine');
    expect(await get(env, tkey(1))).toBe('fine');
  });
});
