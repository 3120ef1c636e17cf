/**
 * Issue 5: "read-only transactions that never write a record" and "AS OF
 * SYSTEM TIME reads at a historical timestamp", at the KV level (TxnDB /
 * TxnCoordSender; SQL's AS OF SYSTEM TIME maps onto the same asOf option).
 *
 *   - a read-only transaction over two ranges — gets and scans, a value
 *     committed inside its uncertainty window that moves it up (refreshing
 *     its earlier reads), a commit — sends nothing but reads and refreshes:
 *     no BeginTxn, HeartbeatTxn or EndTxn, and no record exists;
 *   - an asOf transaction reads the versions as of its timestamp (below,
 *     between and above two writes of a key; a scan across both ranges);
 *     an intent above that timestamp does not block it; and, fixed, it
 *     cannot move: a write below a newer version fails retryably (40001)
 *     instead of being pushed above it.
 *
 * The GC threshold bound on AS OF SYSTEM TIME is tested in test/kv-gc
 * (gc-replica: KV reads/writes at or below the threshold; aost-gc: over pgwire).
 */
import { describe, it, expect } from 'vitest';
import { ZERO_TIMESTAMP, tsLess, tsPrev, type Timestamp } from '../../src/util/hlc.js';
import { CairnError } from '../../src/util/errors.js';
import { Prng } from '../../src/util/prng.js';
import { transactionKey } from '../../storage/keys.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { TxnDB } from '../../src/kv/client/txn-db.js';
import type { BatchRequest, BatchResponse } from '../../src/kv/api.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, str, withoutObservedTimestamps, type TxnEnv } from './support.js';

const start = autoCloseClusters();
const v = (s: string): Buffer => Buffer.from(s);

/**
 * A TxnDB on node 0 whose every request kind is recorded; observed timestamps
 * stripped, so that a value committed after the transaction began, inside its
 * uncertainty window, moves it up wherever it is read.
 */
function countingDb(env: TxnEnv): { db: TxnDB; kinds: string[] } {
  const kinds: string[] = [];
  const ds = withoutObservedTimestamps(env.ds[0]!);
  const sender = {
    send(ba: BatchRequest): Promise<BatchResponse> {
      for (const q of ba.requests) kinds.push(q.kind);
      return ds.send(ba);
    },
  };
  return { db: new TxnDB({ sender, clock: env.c.node(0).clock, nodeId: 1, prng: new Prng(7) }), kinds };
}

async function putAt(env: TxnEnv, k: Buffer, value: string): Promise<Timestamp> {
  return (await env.ds[0]!.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: k, value: v(value) }] })).timestamp;
}

describe('read-only and historical transactions (issue 5)', () => {
  it('a read-only transaction sends only reads and refreshes and leaves no record, even when it moves', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(50)] });
    await putAt(env, tkey(1), 'a');
    await putAt(env, tkey(60), 'b');
    const { db, kinds } = countingDb(env);
    const t = db.newTxn();
    const r = await t.run(batch((b) => {
      b.get(tkey(1));
      b.get(tkey(60));
    }));
    expect(r.map((x) => str((x as { value: Buffer | null }).value))).toEqual(['a', 'b']);
    // Committed after t's reads, above its read timestamp and inside its uncertainty window (global limit: t's
    // read timestamp + the max offset): t must move above it and read it. Written at an explicit timestamp 30 ms
    // above t's, so that a loaded machine's delays cannot carry it past the window (or t past it).
    const before = t.readTimestamp();
    const at = { wall: before.wall + 30_000, logical: 0 };
    const late = (await env.ds[0]!.send({ header: { rangeId: 0, timestamp: at }, requests: [{ kind: 'put', key: tkey(2), value: v('late') }] })).timestamp;
    expect(tsLess(before, late) && tsLess(late, { wall: before.wall + env.c.node(0).clock.maxOffsetMicros, logical: 0 }), 'late is inside the window').toBe(true);
    const s = await t.run(batch((b) => b.scan(tkey(0), tkey(100))));
    expect((s[0] as unknown as { rows: { value: Buffer }[] }).rows.map((kv) => kv.value.toString())).toEqual(['a', 'late', 'b']);
    expect(tsLess(t.readTimestamp(), late)).toBe(false);
    await t.commit();
    expect(kinds.filter((k) => k === 'refresh' || k === 'refreshRange').length, 'its earlier reads refreshed').toBeGreaterThan(0);
    expect(kinds.filter((k) => !['get', 'scan', 'refresh', 'refreshRange'].includes(k))).toEqual([]);
    // No record at any anchor it could have had, on any node.
    for (const k of [tkey(1), tkey(60), tkey(0)]) {
      for (let i = 0; i < env.c.size; i++) expect(env.c.node(i).engine.getSync(encodeMvccKey(transactionKey(k, t.txnId)))).toBeUndefined();
    }
    expect(db.metrics.commits).toBe(1);
    expect(db.metrics.onePhaseCommits + db.metrics.parallelCommits).toBe(0);
  });

  it('AS OF SYSTEM TIME reads the versions of its timestamp, is not blocked by newer intents, and cannot move', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(50)] });
    const db = env.dbs[0]!;
    const t1 = await putAt(env, tkey(1), 'v1');
    const u1 = await putAt(env, tkey(60), 'u1');
    const t2 = await putAt(env, tkey(1), 'v2');
    const u2 = await putAt(env, tkey(60), 'u2');
    const readAt = async (ts: Timestamp): Promise<(string | null)[]> => {
      const t = db.newTxn({ asOf: ts });
      const r = await t.run(batch((b) => {
        b.get(tkey(1));
        b.get(tkey(60));
      }));
      const s = await t.run(batch((b) => b.scan(tkey(0), tkey(100))));
      await t.commit();
      const gets = r.map((x) => str((x as { value: Buffer | null }).value));
      // The scan across both ranges agrees with the point reads.
      expect((s[0] as unknown as { rows: { value: Buffer }[] }).rows.map((kv) => kv.value.toString())).toEqual(gets.filter((x) => x !== null));
      return gets;
    };
    expect(await readAt(tsPrev(t1))).toEqual([null, null]);
    expect(await readAt(t1)).toEqual(['v1', null]);
    expect(await readAt(u1)).toEqual(['v1', 'u1']);
    expect(await readAt(tsPrev(t2))).toEqual(['v1', 'u1']);
    expect(await readAt(t2)).toEqual(['v2', 'u1']);
    expect(await readAt(u2)).toEqual(['v2', 'u2']);

    // A pending intent above the historical timestamp: the read neither waits nor sees it.
    const w = db.newTxn();
    await w.run(batch((b) => b.put(tkey(1), v('pending'))));
    expect(await readAt(u2)).toEqual(['v2', 'u2']);
    await w.rollback();

    // Fixed at t1 (below v2), a write of tkey(1) would have to move above v2: a retryable error instead.
    const f = db.newTxn({ asOf: t1 });
    const err = await f.run(batch((b) => b.put(tkey(1), v('late')))).then(
      () => null,
      (e: unknown) => e,
    );
    await f.rollback();
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).retryable).toBe(true);
    expect((err as CairnError).sqlState).toBe('40001');
    expect(await readAt(u2)).toEqual(['v2', 'u2']);
  });
});
