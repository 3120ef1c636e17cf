/**
 * Issue 5 (kvnemesis serializability violation), bug 1: a parallel commit
 * whose attempt fails after its record was staged must not leave the
 * transaction implicitly committed behind the coordinator's back.
 *
 * Parallel commits RFC: a STAGING record at (epoch, T) whose in-flight
 * writes are all present at ≤ T is committed, whoever finds out. The
 * coordinator re-sends a failed commit batch as a whole, and a re-sent write
 * that is already there (a replay) is a no-op that keeps its first timestamp;
 * so an earlier attempt's STAGING record can be completed by a later attempt
 * that itself fails (here: attempt 1 stages and writes b but meets a lock on
 * c; attempt 2, after the push, writes c but its EndTxn part is refused by the
 * anchor range's timestamp cache after a lease transfer). The coordinator
 * then refreshes (which fails) and reports a retryable error — while a
 * recoverer finds every in-flight write and commits the record: the
 * transaction is both "failed" (the client retries it) and committed. In
 * kvnemesis this shows as "commit on transaction … with status COMMITTED"
 * (the restarted epoch meets the recovered record), or, when the coordinator
 * re-stages higher, as intents written above a commit timestamp a recoverer
 * chose: a reader between the two misses a write below its timestamp.
 *
 * The invariant checked: a commit that fails (non-ambiguously) leaves a
 * transaction that no recovery can commit; a commit that succeeds reports
 * the record's commit timestamp, where its writes are. The interleaving is
 * fixed by holding X's second commit attempt in a gate (a Sender around the
 * real DistSender) until the lease has moved and Y's lock is gone.
 */
import { afterEach, describe, it, expect } from 'vitest';
import { ZERO_TIMESTAMP, compareTimestamps, formatTimestamp, tsLessEq, type Timestamp } from '../../src/util/hlc.js';
import { CairnError } from '../../src/util/errors.js';
import { mvccGet } from '../../storage/mvcc.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import type { TxnRecord, TxnRecordResponse } from '../../src/kv/txn-api.js';
import type { BatchRequest, BatchResponse } from '../../src/kv/api.js';
import type { Sender } from '../../src/kv/kv-client.js';
import { TxnDB } from '../../src/kv/client/txn-db.js';
import { Prng } from '../../src/util/prng.js';
import { recoverTxn } from '../../src/kv/txn-recovery.js';
import { txnLiveness } from '../../src/kv/txn-record.js';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { descriptors } from '../kv-ranges/support.js';
import { startTxnCluster, tkey, batch, str } from './support.js';

const start = autoCloseClusters();
const savedExpiry = txnLiveness.expiryMicros;
afterEach(() => {
  txnLiveness.expiryMicros = savedExpiry;
});
const v = (s: string): Buffer => Buffer.from(s);

async function record(ds: DistSender, anchor: Buffer, id: Buffer): Promise<TxnRecord | null> {
  const res = await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'queryTxn', key: anchor, txnId: id }] });
  return (res.responses[0] as TxnRecordResponse).record;
}

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const x = await f();
    if (x !== null && x !== undefined && x !== false) return x;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function rangeOf(c: TestCluster, k: Buffer): number {
  const d = descriptors(c).find((x) => compareBytes(x.startKey, k) <= 0 && compareBytes(k, x.endKey) < 0);
  if (d === undefined) throw new Error('no range');
  return d.rangeId;
}

/** Every committed version of key k, newest first, from the leaseholder's engine. */
async function versionAt(c: TestCluster, k: Buffer, ts: Timestamp): Promise<string | null> {
  const lh = c.leaseholder(rangeOf(c, k));
  const r = await mvccGet(c.node(lh).engine, k, ts, { inconsistent: true });
  return r.value === null || r.value.value === null ? null : r.value.value.toString();
}

describe('parallel commit retried after a partial failure (issue 5)', () => {
  it('a commit reported failed is never committed by a recoverer; one reported committed is at its record\'s timestamp', async () => {
    // Y must stay live while X waits for it (a loaded machine can delay its heartbeats past the default expiry).
    txnLiveness.expiryMicros = 60_000_000;
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(10), tkey(20)] });
    const { c } = env;
    const ds = env.ds[0] as DistSender;
    const other = env.dbs[1] as NonNullable<(typeof env.dbs)[1]>;
    const a = tkey(5); // anchor, range [0,10) — the EndTxn's part
    const b = tkey(15); // in flight on [10,20)
    const cKey = tkey(25); // in flight on [20,…), locked by Y
    const r = tkey(6); // X's read

    // X's coordinator talks to the cluster through node 1's DistSender, with a gate: its second commit attempt
    // waits until the test opens it (nothing else is held; pushes, queries and resolution pass).
    let commitAttempts = 0;
    let openGate: () => void = () => undefined;
    const gate = new Promise<void>((res) => (openGate = res));
    let firstDone: () => void = () => undefined;
    const firstAttempt = new Promise<void>((res) => (firstDone = res));
    const gated: Sender = {
      async send(ba: BatchRequest): Promise<BatchResponse> {
        if (!ba.requests.some((q) => q.kind === 'endTxn' && q.commit && q.inFlightWrites.length > 0)) return ds.send(ba);
        const n = ++commitAttempts;
        if (n >= 2) await gate;
        try {
          return await ds.send(ba);
        } finally {
          if (n === 1) firstDone();
        }
      },
    };
    const xdb = new TxnDB({ sender: gated, clock: c.node(0).clock, nodeId: 1, prng: new Prng(77) });

    // X reads r (so a later refresh can fail), then Y locks c.
    const x = xdb.newTxn();
    await x.run(batch((q) => q.get(r)));
    const y = other.newTxn();
    await y.run(batch((q) => q.put(cKey, v('y'))));

    // X commits a, b, c in one batch. Attempt 1: the record goes STAGING with b and c in flight, b lands, c meets
    // Y's lock (WriteIntentError); X pushes Y (same priority, live: it waits) and sends attempt 2, held at the gate.
    let outcome: { ok: true } | { ok: false; e: unknown } | null = null;
    const commit = x.commitInBatch(batch((q) => {
      q.put(a, v('xa'));
      q.put(b, v('xb'));
      q.put(cKey, v('xc'));
    })).then(
      () => (outcome = { ok: true }),
      (e: unknown) => (outcome = { ok: false, e }),
    );
    await firstAttempt;
    const staged = await record(ds, a, x.txnId);
    if (staged === null || staged.status !== 'staging') throw new Error(`attempt 1 left the record ${staged?.status ?? 'absent'}`);
    const T = staged.writeTimestamp;

    // W overwrites X's read above T (X's refresh will fail), then the anchor range's lease moves: the new holder's
    // timestamp cache starts above every read the old one may have served, so X's next EndTxn part is refused.
    const w = other.newTxn();
    await w.commitInBatch(batch((q) => q.put(r, v('w'))));
    const ra = rangeOf(c, a);
    const lh = c.leaseholder(ra);
    const d = descriptors(c).find((x2) => x2.rangeId === ra);
    const target = d?.replicas.find((rep) => rep.nodeId - 1 !== lh);
    if (target === undefined) throw new Error('no lease target');
    await c.store(lh).transferLease(ra, target.replicaId);
    await until('the new lease', async () => c.leaseholder(ra) === target.nodeId - 1);

    // Y gives up (its intent on c resolved); X's attempt 2 goes: its EndTxn part is refused by the new holder's
    // timestamp cache, b is a replay, c lands at T — completing attempt 1's STAGING record.
    await y.rollback();
    await other.resolver.drain();
    openGate();
    await commit;
    const out = outcome as { ok: true } | { ok: false; e: unknown } | null;
    if (out === null) throw new Error('commit did not settle');

    // Whatever X's coordinator answered, recovery (what any pusher of X would do) must agree with it.
    const rec = await record(ds, a, x.txnId);
    const final = rec !== null && rec.status === 'staging' ? await recoverTxn(ds, rec) : rec;
    console.log(`X staged at ${formatTimestamp(T)}; coordinator: ${out.ok ? `committed at ${formatTimestamp(x.provisionalCommitTimestamp())}` : (out.e as Error).message}; record after recovery: ${final?.status ?? 'none'}`);
    if (!out.ok) {
      expect(out.e instanceof CairnError && (out.e.retryable || out.e.ambiguous)).toBe(true);
      if (!(out.e as CairnError).ambiguous) expect(final?.status ?? 'none', `X was told its commit failed (${(out.e as Error).message}), but its record is`).not.toBe('committed');
      return;
    }
    // Committed: at the record's timestamp, where all three writes are.
    expect(final?.status).toBe('committed');
    const C = x.provisionalCommitTimestamp();
    expect(compareTimestamps(C, (final as TxnRecord).writeTimestamp)).toBe(0);
    expect(tsLessEq(T, C)).toBe(true);
    await xdb.resolver.drain();
    for (const [k, want] of [[a, 'xa'], [b, 'xb'], [cKey, 'xc']] as const) {
      expect(await versionAt(c, k, C)).toBe(want);
    }
    const check = xdb.newTxn();
    const got = await check.run(batch((q) => {
      q.get(a);
      q.get(b);
      q.get(cKey);
    }));
    await check.commit();
    expect(got.map((g) => str((g as { value: Buffer | null }).value))).toEqual(['xa', 'xb', 'xc']);
  }, 60_000);
});
