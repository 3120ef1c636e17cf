// One-phase commit without intents (src/kv/one-phase-commit.ts; CockroachDB's
// evaluate1PC): a batch that is a whole transaction on one range is evaluated
// as non-transactional writes at the transaction's timestamp. The intent path
// (each write an intent, the EndTxn resolving them in the same batch) is the
// reference: over random engine states and random commit batches, both paths
// (evaluateWriteBatch with the knob on / off — what Replica.evaluateAndPropose
// calls) must give the same outcome: the same error (class, code, message), or
// the same responses, the same write-batch bytes key by key, and the same
// MVCC stats delta. The engine states hold committed histories (puts and
// tombstones at timestamps around the transaction's), other transactions'
// intents, the transaction's own intents from an earlier batch or epoch (in
// its lock spans or written again), and sometimes its record; the batches hold
// puts, cputs (expected value right, wrong or absent; allowIfDoesNotExist),
// deletes, duplicate keys, lock spans beyond the writes, out of the range or
// ranged, savepoint rollbacks, a header timestamp off the write timestamp.
// Fixed seed (CAIRN_1PC_SEED overrides): the path counts asserted at the end
// are a property of the generated set.
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, str, TSPAN_START, TSPAN_END, type TxnEnv } from './support.js';
import { statsMismatches } from './nemesis-support.js';
import { mvccScan } from '../../storage/mvcc.js';
import { MAX_TIMESTAMP } from '../../src/util/hlc.js';
import { CairnError } from '../../src/util/errors.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';
import fc from 'fast-check';
import { MemoryEngine } from '../../storage/memory-engine.js';
import type { WriteBatch } from '../../storage/engine.js';
import { emptyStats, mvccDelete, mvccPut, type MvccStats, type Txn } from '../../storage/mvcc.js';
import { ZERO_TIMESTAMP, type Timestamp } from '../../src/util/hlc.js';
import type { RangeDescriptor, Request, Response } from '../../src/kv/api.js';
import type { EvalContext, EvalHeader } from '../../src/kv/batcheval/index.js';
import { evaluateWriteBatch, onePhaseCommitCounters } from '../../src/kv/one-phase-commit.js';
import { storeTxnRecord } from '../../src/kv/txn-record.js';
import type { LockSpan, TxnRecord } from '../../src/kv/txn-api.js';

const K = (i: number): Buffer => Buffer.from(`\x90k${i}`, 'latin1');
const T = (wall: number, logical = 0): Timestamp => ({ wall, logical });
const DESC: RangeDescriptor = { rangeId: 1, startKey: K(0), endKey: K(8), replicas: [], nextReplicaId: 1, generation: 0 };
const OWN = Buffer.alloc(16, 1);
const OTHER = Buffer.alloc(16, 2);
const VALUES = ['a', 'b', 'cc', 'x'.repeat(40)];
/** A cput expecting the key's newest committed value (so that most succeed). */
const CURRENT = '<current>';

interface KeyState {
  readonly versions: readonly { wall: number; value: string | null }[];
  /** An intent on top: another transaction's, or this one's from an earlier batch (epoch, sequence). */
  readonly intent: null | { own: boolean; epoch: number; seq: number; wall: number; value: string | null };
}
type Op = { kind: 'put'; key: number; value: string } | { kind: 'delete'; key: number } | { kind: 'cput'; key: number; value: string | null; expected: string | null; allow: boolean };
interface Case {
  readonly keys: readonly KeyState[];
  readonly record: null | 'pending' | 'aborted' | 'committed';
  readonly epoch: number;
  readonly wall: number;
  readonly offTs: boolean;
  readonly ops: readonly Op[];
  readonly extraSpans: readonly number[];
  readonly dropSpan: boolean;
  readonly rangedSpan: boolean;
  readonly outsideSpan: boolean;
  readonly ignored: boolean;
}

const valueArb = fc.constantFrom(...VALUES);
const keyStateArb: fc.Arbitrary<KeyState> = fc.record({
  versions: fc.uniqueArray(fc.record({ wall: fc.integer({ min: 1, max: 35 }), value: fc.option(valueArb, { freq: 4 }) }), { selector: (v) => v.wall, maxLength: 3 }).map((vs) => [...vs].sort((a, b) => a.wall - b.wall)),
  intent: fc.oneof(
    { arbitrary: fc.constant(null), weight: 12 },
    { arbitrary: fc.record({ own: fc.boolean(), epoch: fc.integer({ min: 0, max: 1 }), seq: fc.integer({ min: 1, max: 3 }), wall: fc.integer({ min: 36, max: 45 }), value: fc.option(valueArb, { freq: 4 }) }), weight: 1 },
  ),
});
const expectedArb: fc.Arbitrary<string | null> = fc.integer({ min: 0, max: 3 }).chain((n): fc.Arbitrary<string | null> => (n < 3 ? fc.constant(CURRENT) : fc.option(valueArb, { freq: 2 })));
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('put' as const), key: fc.integer({ min: 0, max: 5 }), value: valueArb }),
  fc.record({ kind: fc.constant('delete' as const), key: fc.integer({ min: 0, max: 5 }) }),
  fc.record({ kind: fc.constant('cput' as const), key: fc.integer({ min: 0, max: 5 }), value: fc.option(valueArb, { freq: 4 }), expected: expectedArb, allow: fc.boolean() }),
);
const caseArb: fc.Arbitrary<Case> = fc.record({
  keys: fc.array(keyStateArb, { minLength: 6, maxLength: 6 }),
  record: fc.oneof({ arbitrary: fc.constant(null), weight: 5 }, { arbitrary: fc.constantFrom('pending' as const, 'aborted' as const, 'committed' as const), weight: 1 }),
  epoch: fc.integer({ min: 0, max: 1 }),
  wall: fc.integer({ min: 33, max: 50 }),
  offTs: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  // Distinct keys (as the coordinator sends them), now and then a key written twice.
  ops: fc.tuple(fc.uniqueArray(opArb, { selector: (o) => o.key, minLength: 1, maxLength: 5 }), fc.oneof({ arbitrary: fc.constant(null), weight: 9 }, { arbitrary: opArb, weight: 1 })).map(([ops, dup]) => (dup === null ? ops : [...ops, dup])),
  extraSpans: fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { maxLength: 2 }),
  dropSpan: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  rangedSpan: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  outsideSpan: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  ignored: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
});

async function engineOf(c: Case, txn: Txn): Promise<MemoryEngine> {
  const e = new MemoryEngine();
  const b = e.newBatch();
  const stats = emptyStats();
  c.keys.forEach((ks, i) => {
    for (const v of ks.versions) {
      if (v.value === null) mvccDelete(b, K(i), T(v.wall), { stats });
      else mvccPut(b, K(i), T(v.wall), Buffer.from(v.value), { stats });
    }
    const it = ks.intent;
    if (it === null) return;
    const owner: Txn = { id: it.own ? OWN : OTHER, epoch: it.epoch, writeTimestamp: T(it.wall), sequence: it.seq, key: it.own ? txn.key : K(7) };
    if (it.value === null) mvccDelete(b, K(i), T(it.wall), { txn: owner, stats });
    else mvccPut(b, K(i), T(it.wall), Buffer.from(it.value), { txn: owner, stats });
  });
  if (c.record !== null) {
    const rec: TxnRecord = { id: OWN, key: txn.key, epoch: txn.epoch, status: c.record, writeTimestamp: txn.writeTimestamp, minTimestamp: txn.writeTimestamp, priority: 0, lastHeartbeat: T(10), inFlightWrites: [], lockSpans: [], ignoredSeqNums: [] };
    storeTxnRecord(b, rec, T(10), null, stats);
  }
  await e.write(b);
  return e;
}

function batchOf(c: Case, txn: Txn): { h: EvalHeader; reqs: Request[] } {
  const reqs: Request[] = c.ops.map((o): Request => {
    if (o.kind === 'put') return { kind: 'put', key: K(o.key), value: Buffer.from(o.value) };
    if (o.kind === 'delete') return { kind: 'delete', key: K(o.key) };
    const expected = o.expected === CURRENT ? (c.keys[o.key]?.versions.at(-1)?.value ?? null) : o.expected;
    return { kind: 'cput', key: K(o.key), value: o.value === null ? null : Buffer.from(o.value), expected: expected === null ? null : Buffer.from(expected), allowIfDoesNotExist: o.allow };
  });
  const spanKeys = [...new Set([...c.ops.map((o) => o.key), ...c.extraSpans])].sort((a, b) => a - b);
  if (c.dropSpan && spanKeys.length > 1) spanKeys.shift();
  const lockSpans: LockSpan[] = spanKeys.map((k) => ({ key: K(k), endKey: null }));
  if (c.rangedSpan) lockSpans.push({ key: K(6), endKey: K(7) });
  if (c.outsideSpan) lockSpans.push({ key: K(9), endKey: null });
  reqs.push({ kind: 'endTxn', key: txn.key, commit: true, inFlightWrites: [], lockSpans });
  return { h: { rangeId: 1, timestamp: c.offTs ? T(c.wall, 1) : txn.writeTimestamp, txn }, reqs };
}

interface Outcome {
  readonly error?: string;
  readonly responses?: string;
  readonly ops?: string[];
  readonly stats?: MvccStats;
}

function show(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (x !== null && typeof x === 'object' && (x as { type?: string }).type === 'Buffer' ? Buffer.from((x as { data: number[] }).data).toString('hex') : x));
}

async function outcome(e: MemoryEngine, h: EvalHeader, reqs: Request[], withoutIntents: boolean): Promise<Outcome> {
  const ctx = (stats: MvccStats): EvalContext => ({ rangeId: 1, desc: DESC, lease: null, stats, sideEffects: {}, raftTerm: () => 0, gcThreshold: ZERO_TIMESTAMP });
  try {
    const r = await evaluateWriteBatch({ newBatch: (): WriteBatch => e.newBatch(), evalContext: ctx, withoutIntents }, h, reqs, reqs.length > 2 ? reqs.filter((q) => q.kind !== 'endTxn').map((q) => (q as { key: Buffer }).key) : null);
    const ops: string[] = [];
    r.batch.forEachOp((k, v) => ops.push(`${k.toString('hex')}=${v === null ? 'DEL' : v.toString('hex')}`));
    return { responses: show(r.responses as Response[]), ops, stats: r.stats };
  } catch (err) {
    const x = err as { name?: string; code?: string; message?: string };
    return { error: `${x.name} ${x.code} ${x.message}` };
  }
}

describe('one-phase commit without intents (one-phase-commit.ts)', () => {
  it('gives the intent path\'s errors, responses, write-batch bytes and stats delta over random engine states and commit batches', async () => {
    const before = { ...onePhaseCommitCounters };
    let committed = 0;
    let failed = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const txn: Txn = { id: OWN, epoch: c.epoch, writeTimestamp: T(c.wall), minTimestamp: T(c.wall), sequence: 4, key: K(c.ops[0]?.key ?? 0), priority: 0, ...(c.ignored ? { ignoredSeqNums: [{ start: 2, end: 2 }] } : {}) };
        const e = await engineOf(c, txn);
        const { h, reqs } = batchOf(c, txn);
        const intentPath = await outcome(e, h, reqs, false);
        const without = await outcome(e, h, reqs, true);
        expect(without).toEqual(intentPath);
        if (intentPath.error === undefined) committed++;
        else failed++;
      }),
      { numRuns: 600, seed: Number(process.env['CAIRN_1PC_SEED'] ?? 20261201) },
    );
    const withoutIntents = onePhaseCommitCounters.withoutIntents - before.withoutIntents;
    const fallbacks = onePhaseCommitCounters.fallbacks - before.fallbacks;
    // Both paths were taken (fixed seed: counts of this generated set).
    console.log(`1PC property: ${committed} committed (${withoutIntents} without intents), ${failed} failed; ${fallbacks} fallbacks`);
    expect(withoutIntents).toBeGreaterThan(50);
    expect(fallbacks).toBeGreaterThan(50);
    expect(committed).toBeGreaterThan(withoutIntents);
    expect(failed).toBeGreaterThan(50);
  });
});

const start = autoCloseClusters();

async function get(env: TxnEnv, key: Buffer): Promise<string | null> {
  const t = (env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>).newTxn();
  const r = await t.run(batch((b) => b.get(key)));
  await t.commit();
  return str((r[0] as { value: Buffer | null }).value);
}

describe('one-phase commit without intents in a cluster', () => {
  it('commits a whole-transaction batch without intents; a newer version (WriteTooOld) and another transaction\'s intent fall back to the intent path, whose outcome the client gets', async () => {
    const env = await startTxnCluster(start, { nodes: 1 });
    const db = env.dbs[0] as NonNullable<TxnEnv['dbs'][0]>;
    const c0 = { ...onePhaseCommitCounters };
    const onePhase0 = db.metrics.onePhaseCommits;
    // 1. The plain case: two puts and the commit, one batch.
    await db.newTxn().commitInBatch(batch((b) => {
      b.put(tkey(1), Buffer.from('a'));
      b.put(tkey(2), Buffer.from('b'));
    }));
    // (At least: a command whose proposal is refused — a lease index overtaken under load — is evaluated again.)
    expect(onePhaseCommitCounters.withoutIntents - c0.withoutIntents).toBeGreaterThanOrEqual(1);
    expect(db.metrics.onePhaseCommits - onePhase0).toBe(1);
    expect([await get(env, tkey(1)), await get(env, tkey(2))]).toEqual(['a', 'b']);

    // 2. WriteTooOld: the transaction's timestamp is below a version written after it began. The non-transactional
    // evaluation fails, the intent path fails the same way, the coordinator (no reads) moves up and commits.
    const c1 = { ...onePhaseCommitCounters };
    const late = db.newTxn();
    await db.newTxn().commitInBatch(batch((b) => b.put(tkey(3), Buffer.from('newer'))));
    await late.commitInBatch(batch((b) => b.put(tkey(3), Buffer.from('late'))));
    expect(await get(env, tkey(3))).toBe('late');
    expect(onePhaseCommitCounters.fallbacks - c1.fallbacks).toBeGreaterThanOrEqual(1);
    expect(onePhaseCommitCounters.withoutIntents - c1.withoutIntents).toBeGreaterThanOrEqual(2);

    // 3. Another transaction's intent: the commit batch waits for it in the lock table (known there, it is met before
    // evaluation; an intent the lock table did not know is met by the non-transactional evaluation, which falls back —
    // the property above), then commits without intents.
    const c2 = { ...onePhaseCommitCounters };
    const holder = db.newTxn({ priority: 'high' });
    await holder.run(batch((b) => b.put(tkey(4), Buffer.from('holder'))));
    const waiter = db.newTxn({ priority: 'low' });
    const waiting = waiter.commitInBatch(batch((b) => b.put(tkey(4), Buffer.from('waiter'))));
    await holder.commit();
    await waiting;
    expect(await get(env, tkey(4))).toBe('waiter');
    expect(onePhaseCommitCounters.withoutIntents - c2.withoutIntents).toBeGreaterThanOrEqual(1);

    // 4. A failed condition is the intent path's ConditionFailedError.
    const err = await db.newTxn().commitInBatch(batch((b) => b.cput(tkey(4), Buffer.from('x'), Buffer.from('not-this')))).then(() => null, (e: unknown) => e);
    expect((err as { code?: string }).code).toBe('kv.condition_failed');
    expect(await get(env, tkey(4))).toBe('waiter');
  });
});

describe('one-phase commit without intents under contention', () => {
  it('read-modify-write increments on 3 nodes lose no update, leave no intent, and keep every replica\'s MVCC stats equal to a recount', async () => {
    const env = await startTxnCluster(start, { nodes: 3 });
    const c0 = { ...onePhaseCommitCounters };
    const HOT = 3;
    const dec = (b: Buffer | null | undefined): number => (b == null ? 0 : Number(b.toString()));
    let committed = 0;
    let ambiguous = 0;
    // 6 workers on the three nodes' coordinators, 15 increments each of one of 3 hot counters (a locking read, then the
    // write and the commit in one batch: the implicit UPDATE's shape), plus a log key of the worker's own in the same batch.
    const worker = async (w: number): Promise<void> => {
      const db = env.dbs[w % 3] as TxnDB;
      for (let i = 0; i < 15; i++) {
        const counter = tkey(900 + ((w + i) % HOT)); // every counter gets increments from every worker
        try {
          await db.runTxn(async (t) => {
            const r = await t.run(batch((b) => b.get(counter, 'exclusive')));
            const n = dec((r[0] as { value: Buffer | null }).value);
            await t.commitInBatch(batch((b) => {
              b.put(counter, Buffer.from(String(n + 1)));
              b.put(tkey(100 + w), Buffer.from(String(i)));
            }));
          });
          committed++;
        } catch (e) {
          if (e instanceof CairnError && e.ambiguous) ambiguous++;
          else throw e;
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)));
    let total = 0;
    for (let h = 0; h < HOT; h++) total += Number((await get(env, tkey(900 + h))) ?? 0);
    // No lost update: every committed increment is counted (an ambiguous one may or may not be).
    expect(total).toBeGreaterThanOrEqual(committed);
    expect(total).toBeLessThanOrEqual(committed + ambiguous);
    expect(committed).toBeGreaterThan(0);
    expect(onePhaseCommitCounters.withoutIntents - c0.withoutIntents).toBeGreaterThan(0);
    // Every write of these transactions went in its commit batch: none ever left an intent, on any replica (at
    // whatever index each has applied).
    for (let i = 0; i < env.c.size; i++) {
      expect((await mvccScan(env.c.node(i).engine, TSPAN_START, TSPAN_END, MAX_TIMESTAMP, { inconsistent: true })).intents.filter((x) => x !== null)).toEqual([]);
    }
    expect(await statsMismatches(env.c)).toEqual([]);
  });
});
