/**
 * Write pipelining (issue 5: "writes return before their Raft round
 * completes; a later read of the same key and the commit prove them
 * (QueryIntent)"; CockroachDB's txnPipeliner + async consensus). On
 * in-process clusters, with the replica's testing knobs (replica.ts
 * replicaTestingKnobs) holding or losing the leaseholder's proposals:
 *   (a) a pipelined write is answered before its leaseholder applies it (a
 *       synchronous one after); per-statement latency with and without
 *       pipelining, printed;
 *   (b) read-your-writes through an in-flight write: the read carries the
 *       QueryIntent and sees the write;
 *   (c) a lost pipelined write (proposal dropped, or the lease moved before
 *       it applied) fails the read or the commit retryably, never commits;
 *       a restart then commits;
 *   and the settings: the byte budget sends writes synchronously past it;
 *   savepoint rollback forgets in-flight writes above it.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, str, type TxnEnv } from './support.js';
import { TxnDB } from '../../src/kv/client/txn-db.js';
import { Prng } from '../../src/util/prng.js';
import { CairnError } from '../../src/util/errors.js';
import { replicaTestingKnobs, type Replica } from '../../src/kv/replica.js';
import { txnSettings, DEFAULT_TXN_SETTINGS } from '../../src/kv/settings.js';
import type { RaftCommand } from '../../src/kv/api-codec.js';
import type { BatchRequest, BatchResponse } from '../../src/kv/api.js';
import type { Sender } from '../../src/kv/kv-client.js';
import { recoverTxn } from '../../src/kv/txn-recovery.js';
import { txnLiveness } from '../../src/kv/txn-record.js';
import type { TxnRecord, TxnRecordResponse } from '../../src/kv/txn-api.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { ZERO_TIMESTAMP, tsLess } from '../../src/util/hlc.js';
import { decodeBatchRepr } from '../../storage/engine.js';
import { decodeMvccKey } from '../../storage/mvcc-key.js';

const start = autoCloseClusters();

const savedHeartbeatMs = txnLiveness.heartbeatIntervalMs;
afterEach(() => {
  txnLiveness.heartbeatIntervalMs = savedHeartbeatMs;
  replicaTestingKnobs.proposalFilter = undefined;
  replicaTestingKnobs.onApply = undefined;
  Object.assign(txnSettings, DEFAULT_TXN_SETTINGS);
});

const BACKGROUND_KINDS: ReadonlySet<string> = new Set(['beginTxn', 'heartbeatTxn', 'resolveIntent', 'resolveIntentRange']);

/** A Sender that records every batch it passes on (header flags, request kinds). */
class RecordingSender implements Sender {
  readonly sent: BatchRequest[] = [];
  constructor(private readonly inner: Sender) {}
  send(ba: BatchRequest): Promise<BatchResponse> {
    this.sent.push(ba);
    return this.inner.send(ba);
  }
  /** The transaction's own batches from `from` on (not its heartbeats, nor the intent resolver's batches). */
  kinds(from = 0): string[] {
    return this.sent
      .slice(from)
      .filter((b) => !b.requests.every((q) => BACKGROUND_KINDS.has(q.kind)))
      .map((b) => `${b.header.asyncConsensus === true ? 'async:' : ''}${b.requests.map((q) => q.kind).join(',')}`);
  }
}

function recordingDb(env: TxnEnv, i = 0): { db: TxnDB; rec: RecordingSender } {
  const rec = new RecordingSender(env.ds[i] as Sender);
  return { db: new TxnDB({ sender: rec, clock: env.c.node(i).clock, nodeId: i + 1, prng: new Prng(77 + i) }), rec };
}

/** The leaseholder's replica of the range holding `key`. */
function leaseholderOf(c: TestCluster, key: Buffer): Replica {
  for (let i = 0; i < c.size; i++) {
    for (const r of c.store(i).allReplicas()) {
      if (!r.initialized || compareBytes(r.desc.startKey, key) > 0 || compareBytes(key, r.desc.endKey) >= 0) continue;
      if (r.ownsValidLease(c.node(i).clock.now())) return r;
    }
  }
  throw new Error(`no leaseholder for ${key.toString('hex')}`);
}

/** Whether a command writes the user key `key` (its intent), not merely a range-local key derived from it. */
const touches = (cmd: RaftCommand, key: Buffer): boolean => !cmd.isLeaseRequest && decodeBatchRepr(cmd.repr).some((op) => decodeMvccKey(op.key).key.equals(key));
/**
 * Holds back from Raft every command of replica `lh` that writes `key`
 * while `hold` is set (re-proposals ask again, so clearing it lets them
 * through); `ids` are the commands held.
 */
function holdProposals(lh: Replica, key: Buffer): { hold: boolean; held: number; readonly ids: Set<number> } {
  const h = { hold: true, held: 0, ids: new Set<number>() };
  replicaTestingKnobs.proposalFilter = (r, cmd) => {
    if (r !== lh || !touches(cmd, key) || !h.hold) return undefined;
    h.held++;
    h.ids.add(cmd.cmdId);
    return 'hold';
  };
  return h;
}

/** Loses the first command of replica `lh` that writes `key`: never proposed, given up on the next tick. */
function dropFirstProposal(lh: Replica, key: Buffer): Set<number> {
  const dropped = new Set<number>();
  replicaTestingKnobs.proposalFilter = (r, cmd) => {
    if (dropped.has(cmd.cmdId)) return 'drop';
    if (r !== lh || !touches(cmd, key) || dropped.size > 0) return undefined;
    dropped.add(cmd.cmdId);
    return 'drop';
  };
  return dropped;
}

const v = (s: string): Buffer => Buffer.from(s);

async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, rej) => (t = setTimeout(() => rej(new Error(`timed out after ${ms} ms: ${what}`)), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(t);
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

describe('write pipelining', () => {
  it('(a) a pipelined write is answered before its leaseholder applies it; a synchronous one after', async () => {
    const env = await startTxnCluster(start, { nodes: 3 });
    const lh = leaseholderOf(env.c, tkey(1));
    const events: string[] = [];
    const h = holdProposals(lh, tkey(1));
    h.hold = false;
    // The held command (the write), not the earlier transaction's intent resolution on the same key.
    replicaTestingKnobs.onApply = (r, cmd) => {
      if (r === lh && h.ids.has(cmd.cmdId)) events.push('applied');
    };
    const { db, rec } = recordingDb(env);
    for (const pipelining of [true, false]) {
      txnSettings.writePipeliningEnabled = pipelining;
      events.length = 0;
      h.held = 0;
      h.ids.clear();
      h.hold = true;
      const txn = db.newTxn();
      const from = rec.sent.length;
      const write = txn.run(batch((b) => b.put(tkey(1), v(`x${pipelining}`)))).then(() => events.push('answered'));
      if (pipelining) {
        // Answered while the command is held back from Raft: nothing applied it.
        await within(write, 10_000, 'the pipelined write to be answered');
        expect(h.held).toBeGreaterThan(0);
        expect(events).toEqual(['answered']);
        h.hold = false;
        await env.c.waitFor(() => events.includes('applied'), 10_000, 'the held command to apply once released');
        expect(events).toEqual(['answered', 'applied']);
      } else {
        await env.c.waitFor(() => h.held > 0, 10_000, 'the write to be proposed');
        expect(events).toEqual([]);
        h.hold = false;
        await within(write, 10_000, 'the synchronous write');
        expect(events).toEqual(['applied', 'answered']);
      }
      await txn.commit();
      expect(rec.kinds(from)[0]).toBe(pipelining ? 'async:put' : 'put');
      // The commit proves the pipelined write in its own batch.
      expect(rec.kinds(from).some((k) => k === 'queryIntent,endTxn')).toBe(pipelining);
    }
    const check = db.newTxn();
    expect(str(((await check.run(batch((b) => b.get(tkey(1)))))[0] as { value: Buffer | null }).value)).toBe('xfalse');
    await check.commit();
  }, 60_000);

  it('(a) N sequential single-key write statements: per-statement latency with and without pipelining (printed)', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(100), tkey(200)] });
    const db = env.dbs[1] as TxnDB; // a gateway that is not every range's leaseholder
    const N = 6;
    const perWrite: Record<'on' | 'off', number[]> = { on: [], off: [] };
    const commit: Record<'on' | 'off', number[]> = { on: [], off: [] };
    const total: Record<'on' | 'off', number[]> = { on: [], off: [] };
    const runTxn = async (mode: 'on' | 'off', t: number): Promise<void> => {
      txnSettings.writePipeliningEnabled = mode === 'on';
      const txn = db.newTxn();
      const t0 = performance.now();
      for (let i = 0; i < N; i++) {
        const w0 = performance.now();
        await txn.run(batch((b) => b.put(tkey(((t * N + i) * 37) % 300), v(`${mode}${t}.${i}`))));
        perWrite[mode].push(performance.now() - w0);
      }
      const c0 = performance.now();
      await txn.commit();
      commit[mode].push(performance.now() - c0);
      total[mode].push(performance.now() - t0);
      await db.resolver.drain();
    };
    for (let t = 0; t < 3; t++) await runTxn(t % 2 === 0 ? 'on' : 'off', 1000 + t); // warm-up
    for (let t = 0; t < 24; t++) {
      // Interleaved, so that machine noise hits both alike.
      await runTxn('on', 2 * t);
      await runTxn('off', 2 * t + 1);
    }
    const f = (xs: number[]): string => `${median(xs).toFixed(2)} ms`;
    console.log(
      `pipelining: ${N} write statements + commit on 3 nodes / 3 ranges, medians of 24 txns each — ` +
        `per write statement: on ${f(perWrite.on)}, off ${f(perWrite.off)}; commit: on ${f(commit.on)}, off ${f(commit.off)}; ` +
        `whole txn: on ${f(total.on)}, off ${f(total.off)}; commits ${db.metrics.commits}, parallel ${db.metrics.parallelCommits}, restarts ${db.metrics.restarts}`,
    );
    expect(db.metrics.commits).toBe(51);
  }, 120_000);

  it('the leaseholder keeps an async write latched until it applies, learns its lock then; a (flagged, ineligible) non-transactional write of the key serializes behind it', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const lh = leaseholderOf(env.c, tkey(1));
    const h = holdProposals(lh, tkey(1));
    const db = env.dbs[0] as TxnDB;
    const a = db.newTxn();
    await within(a.run(batch((b) => b.put(tkey(1), v('a')))), 10_000, 'the pipelined write');
    const lockOn = (): boolean => lh.concurrency.lockTable.snapshot().some((l) => l.key.equals(tkey(1)) && l.holder !== null && l.holder.txn.id.equals(a.txnId));
    expect(lh.concurrency.latches.metrics().held).toBeGreaterThan(0);
    expect(lockOn()).toBe(false);
    // A non-transactional write of the key with the flag set is not eligible: it waits (behind a's latches, then a's lock).
    let other = false;
    const nonTxn = (env.ds[0] as Sender)
      .send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP, asyncConsensus: true }, requests: [{ kind: 'put', key: tkey(1), value: v('b') }] })
      .then(() => (other = true), (e: unknown) => (other = e instanceof Error));
    await env.c.waitFor(() => lh.concurrency.latches.metrics().waiting > 0, 10_000, 'the other write to wait for latches');
    expect(other).toBe(false);
    h.hold = false;
    await env.c.waitFor(lockOn, 10_000, "the lock table to learn a's intent on apply");
    await a.commit();
    await within(nonTxn, 20_000, 'the non-transactional write after the commit');
    expect(other).toBe(true);
    const got = await db.runTxn(async (t) => (await t.run(batch((b) => b.get(tkey(1)))))[0] as { value: Buffer | null });
    expect(str(got.value)).toBe('b');
    expect(h.held).toBeGreaterThan(0);
  }, 60_000);

  it('(b) read-your-writes through an in-flight write: the read proves it (QueryIntent in the same batch)', async () => {
    const env = await startTxnCluster(start, { nodes: 3 });
    const lh = leaseholderOf(env.c, tkey(1));
    const h = holdProposals(lh, tkey(1));
    const { db, rec } = recordingDb(env);
    const txn = db.newTxn();
    await within(txn.run(batch((b) => b.put(tkey(1), v('mine')))), 10_000, 'pipelined write');
    expect(h.held).toBeGreaterThan(0);
    const from = rec.sent.length;
    let readDone = false;
    const read = txn.run(batch((b) => b.get(tkey(1)))).then((r) => {
      readDone = true;
      return r;
    });
    // The query waits behind the write's latches on the leaseholder until the write applies.
    await env.c.waitFor(() => rec.sent.length > from, 10_000, 'the read to be sent');
    expect(readDone).toBe(false);
    h.hold = false;
    const r = await within(read, 10_000, 'the read');
    expect(str((r[0] as { value: Buffer | null }).value)).toBe('mine');
    expect(rec.kinds(from)[0]).toBe('queryIntent,get');
    // Proven: a second read carries no query; a scan over it neither.
    const from2 = rec.sent.length;
    await txn.run(batch((b) => b.get(tkey(1))));
    await txn.run(batch((b) => b.put(tkey(2), v('two'))));
    const s = await txn.run(batch((b) => b.scan(tkey(0), tkey(10))));
    expect((s[0] as unknown as { rows: { key: Buffer; value: Buffer }[] }).rows.map((kv) => kv.value.toString())).toEqual(['mine', 'two']);
    // The scan proves the in-flight write to tkey(2) (not tkey(1), already proven); the commit has nothing left to prove.
    expect(rec.kinds(from2)).toEqual(['get', 'async:put', 'queryIntent,scan']);
    await txn.commit();
    expect(rec.kinds(from2).slice(3)).toEqual(['endTxn']);
  }, 60_000);

  it('(c) a pipelined write whose proposal is lost fails the commit retryably, never commits; the restart commits', async () => {
    const env = await startTxnCluster(start, { nodes: 3 });
    const lh = leaseholderOf(env.c, tkey(1));
    const dropped = dropFirstProposal(lh, tkey(1));
    const { db, rec } = recordingDb(env);
    const txn = db.newTxn();
    await txn.run(batch((b) => b.put(tkey(1), v('lost'))));
    await txn.run(batch((b) => b.put(tkey(2), v('kept'))));
    expect(dropped.size).toBe(1);
    expect(rec.kinds()).toEqual(['async:put', 'async:put']);
    await env.c.waitFor(() => lh.pendingProposals === 0, 10_000, 'the dropped proposal to be given up');
    const err = await txn.commit().then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).retryable).toBe(true);
    expect((err as CairnError).message).toContain('RETRY_ASYNC_WRITE_FAILURE');
    // Nothing of it is visible: not the lost write, not the one that made it.
    const other = env.dbs[1] as TxnDB;
    const seen = await other.runTxn(async (t) => (await t.run(batch((b) => b.scan(tkey(0), tkey(10)))))[0] as unknown as { rows: { key: Buffer }[] });
    expect(seen.rows.length).toBe(0);
    // The restart (new epoch) writes both again and commits.
    await txn.restart();
    await txn.run(batch((b) => b.put(tkey(1), v('again'))));
    await txn.run(batch((b) => b.put(tkey(2), v('kept'))));
    await txn.commit();
    const after = await other.runTxn(async (t) => (await t.run(batch((b) => b.scan(tkey(0), tkey(10)))))[0] as unknown as { rows: { value: Buffer }[] });
    expect(after.rows.map((kv) => kv.value.toString())).toEqual(['again', 'kept']);
  }, 60_000);

  it('(c) parallel commit: a STAGING record naming a lost pipelined write on another range is never committed; recovery aborts it', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(100), tkey(200)] });
    const lh = leaseholderOf(env.c, tkey(150));
    const dropped = dropFirstProposal(lh, tkey(150));
    const { db, rec } = recordingDb(env);
    const txn = db.newTxn();
    await txn.run(batch((b) => b.put(tkey(1), v('anchor')))); // the record's range
    await txn.run(batch((b) => b.put(tkey(150), v('lost')))); // another range: lost
    expect(dropped.size).toBe(1);
    await env.c.waitFor(() => lh.pendingProposals === 0, 10_000, 'the dropped proposal to be given up');
    const from = rec.sent.length;
    const err = await txn.commitInBatch(batch((b) => b.put(tkey(250), v('last')))).then(() => null, (e: unknown) => e);
    expect((err as CairnError).message).toContain('RETRY_ASYNC_WRITE_FAILURE');
    // The commit batch proved the anchor's write in the record's own command; the record went STAGING naming the others.
    expect(rec.kinds(from)[0]).toBe('queryIntent,queryIntent,put,endTxn');
    const q = await (env.ds[1] as Sender).send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'queryTxn', key: tkey(1), txnId: txn.txnId }] });
    const staged = (q.responses[0] as TxnRecordResponse).record as TxnRecord;
    expect(staged.status).toBe('staging');
    expect(staged.inFlightWrites.map((w) => w.key.toString('latin1')).sort()).toEqual([tkey(150), tkey(250)].map((k) => k.toString('latin1')));
    // A recoverer finds the lost write missing (it is prevented for good) and aborts the record.
    const recovered = await recoverTxn(env.ds[2] as Sender, staged);
    expect(recovered?.status).toBe('aborted');
    const seen = await (env.dbs[2] as TxnDB).runTxn(async (t) => (await t.run(batch((b) => b.scan(tkey(0), tkey(300)))))[0] as unknown as { rows: unknown[] });
    expect(seen.rows).toEqual([]);
  }, 60_000);

  it('(c) a read of a lost pipelined write fails retryably instead of missing it', async () => {
    const env = await startTxnCluster(start, { nodes: 3 });
    const lh = leaseholderOf(env.c, tkey(1));
    const dropped = dropFirstProposal(lh, tkey(1));
    const db = env.dbs[0] as TxnDB;
    let attempts = 0;
    const got = await db.runTxn(async (t) => {
      attempts++;
      await t.run(batch((b) => b.put(tkey(1), v('w'))));
      await env.c.waitFor(() => lh.pendingProposals === 0, 10_000, 'the dropped proposal to be given up');
      return str(((await t.run(batch((b) => b.get(tkey(1)))))[0] as { value: Buffer | null }).value);
    });
    expect(got).toBe('w');
    expect(attempts).toBe(2);
    expect(db.metrics.restarts).toBe(1);
  }, 60_000);

  it('(c) the lease moves before a pipelined write applies: the commit fails retryably, nothing is written', async () => {
    const env = await startTxnCluster(start, { nodes: 3 });
    const lh = leaseholderOf(env.c, tkey(1));
    const h = holdProposals(lh, tkey(1));
    const db = env.dbs[0] as TxnDB;
    const txn = db.newTxn();
    await txn.run(batch((b) => b.put(tkey(1), v('moved'))));
    expect(h.held).toBeGreaterThan(0);
    const target = lh.desc.replicas.find((d) => d.replicaId !== lh.replicaId);
    if (target === undefined) throw new Error('no other replica');
    const holderStore = env.c.store(env.c.leaseholder(lh.rangeId));
    await holderStore.transferLease(lh.rangeId, target.replicaId);
    h.hold = false; // the held command was rejected when the new lease applied: it can never apply now
    const err = await txn.commit().then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(CairnError);
    expect((err as CairnError).retryable).toBe(true);
    expect((err as CairnError).message).toContain('RETRY_ASYNC_WRITE_FAILURE');
    const seen = await (env.dbs[2] as TxnDB).runTxn(async (t) => (await t.run(batch((b) => b.get(tkey(1)))))[0] as { value: Buffer | null });
    expect(seen.value).toBe(null);
  }, 60_000);

  it('a pipelined intent pushed by a higher-priority reader is proven again above the push (record read + refresh), not lost', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const { db, rec } = recordingDb(env);
    // No heartbeat within the test: the coordinator learns of the push from its failed proof, not from its record.
    txnLiveness.heartbeatIntervalMs = 60_000;
    const pushee = db.newTxn();
    await pushee.run(batch((b) => b.put(tkey(1), v('p'))));
    const before = pushee.provisionalCommitTimestamp();
    // A high-priority reader pushes the pushee's timestamp (its record, then its intent) and reads below it.
    const reader = (env.dbs[0] as TxnDB).newTxn({ priority: 'high' });
    expect(str(((await reader.run(batch((b) => b.get(tkey(1)))))[0] as { value: Buffer | null }).value)).toBe(null);
    await reader.commit();
    const from = rec.sent.length;
    const r = await pushee.run(batch((b) => b.get(tkey(1))));
    expect(str((r[0] as { value: Buffer | null }).value)).toBe('p');
    expect(tsLess(before, pushee.provisionalCommitTimestamp())).toBe(true);
    // The first proof missed (the intent sits above the old timestamp), the record told where, the second proved it.
    expect(rec.kinds(from)).toEqual(['queryIntent,get', 'queryTxn', 'queryIntent,get']);
    await pushee.commit();
    expect(db.metrics.restarts).toBe(0);
  }, 60_000);

  it('past the in-flight byte budget writes are sent synchronously; a savepoint rollback forgets in-flight writes above it', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    txnSettings.writePipeliningMaxInFlightBytes = 2 * (tkey(0).length + 32);
    const { db, rec } = recordingDb(env);
    const txn = db.newTxn();
    for (let i = 0; i < 3; i++) await txn.run(batch((b) => b.put(tkey(i), v(`v${i}`))));
    // Overwriting an in-flight key keeps the budget (the new write replaces the proven one).
    await txn.run(batch((b) => b.put(tkey(1), v('v1b'))));
    expect(rec.kinds()).toEqual(['async:put', 'async:put', 'put', 'async:queryIntent,put']);
    await txn.commit();

    // Savepoint: the rolled-back write's proposal is lost; the commit does not need it.
    txnSettings.writePipeliningMaxInFlightBytes = DEFAULT_TXN_SETTINGS.writePipeliningMaxInFlightBytes;
    const lh = leaseholderOf(env.c, tkey(5));
    const dropped = dropFirstProposal(lh, tkey(6));
    const t2 = db.newTxn();
    await t2.run(batch((b) => b.put(tkey(5), v('five'))));
    const sp = await t2.createSavepoint();
    await t2.run(batch((b) => b.put(tkey(6), v('six'))));
    expect(dropped.size).toBe(1);
    await t2.rollbackToSavepoint(sp);
    await t2.commit();
    const got = await db.runTxn(async (t) => (await t.run(batch((b) => b.scan(tkey(0), tkey(10)))))[0] as unknown as { rows: { value: Buffer }[] });
    expect(got.rows.map((kv) => kv.value.toString())).toEqual(['v0', 'v1b', 'v2', 'five']);
  }, 60_000);
});
