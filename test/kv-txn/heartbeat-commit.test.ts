/**
 * The coordinator's heartbeat loop and a one-phase commit in flight
 * (txn-coord-sender.ts startHeartbeat). An implicit UPDATE's locking read
 * starts the loop; under load its commit (put + EndTxn, one Raft round) can
 * take longer than a heartbeat interval. The loop's first beat (BeginTxn)
 * would then write a record — one more Raft proposal per statement, on a
 * loaded cluster for most statements (bench:sql at load ~20: 1.57 proposals
 * per UPDATE). While the commit is in flight, and the transaction is younger
 * than half its expiry, no record is created; the commit stays 1PC and
 * leaves no record behind.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch } from './support.js';
import { replicaTestingKnobs } from '../../src/kv/replica.js';
import { txnLiveness } from '../../src/kv/txn-record.js';
import type { BatchRequest } from '../../src/kv/api.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';

const start = autoCloseClusters();
const savedHeartbeatMs = txnLiveness.heartbeatIntervalMs;
const savedExpiry = txnLiveness.expiryMicros;
afterEach(() => {
  txnLiveness.heartbeatIntervalMs = savedHeartbeatMs;
  txnLiveness.expiryMicros = savedExpiry;
  replicaTestingKnobs.proposalFilter = undefined;
});

describe('heartbeats and a commit in flight', () => {
  it('a locking read then a 1PC commit held in Raft for many heartbeat intervals: no record written, still 1PC', async () => {
    const { c, dbs } = await startTxnCluster(start);
    const db = dbs[0] as TxnDB;
    const kinds: string[] = [];
    for (let i = 0; i < c.size; i++) {
      const store = c.store(i);
      const send = store.send.bind(store);
      store.send = (ba: BatchRequest) => {
        for (const q of ba.requests) kinds.push(q.kind);
        return send(ba);
      };
    }
    await db.newTxn().commitInBatch(batch((b) => b.put(tkey(1), Buffer.from('a'))));
    const commits0 = db.metrics.onePhaseCommits;
    txnLiveness.heartbeatIntervalMs = 20;
    // The record-less escape starts at half the expiry (1 s by default) after the loop started: a loaded machine can
    // spend that between the locking read and the end of the hold. The test owns that time: the escape is far away.
    txnLiveness.expiryMicros = 60_000_000;
    const t = db.newTxn();
    await t.run(batch((b) => b.get(tkey(1), 'exclusive'))); // starts the heartbeat loop
    let held = 0;
    replicaTestingKnobs.proposalFilter = () => {
      held++;
      return 'hold';
    };
    kinds.length = 0;
    const commit = t.commitInBatch(batch((b) => b.put(tkey(1), Buffer.from('b'))));
    await c.waitFor(() => held > 0, 10_000, 'the commit held in Raft');
    // The scenario: the commit stays in flight for ~15 heartbeat intervals (a duration, not a condition to wait for).
    await new Promise((r) => setTimeout(r, 300));
    replicaTestingKnobs.proposalFilter = undefined;
    await commit;
    expect(kinds.filter((k) => k === 'beginTxn' || k === 'heartbeatTxn')).toEqual([]);
    expect(db.metrics.onePhaseCommits).toBe(commits0 + 1);
    const r = db.newTxn();
    const got = await r.run(batch((b) => b.get(tkey(1))));
    expect((got[0] as { value: Buffer | null }).value?.toString()).toBe('b');
    await r.commit();
  });
});
