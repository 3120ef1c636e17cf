/**
 * kvnemesis-style randomized transactions (CockroachDB's kvnemesis, reduced):
 *   generator  — random transactions of gets (some locking), scans (forward
 *                or reverse, some limited, some locking), puts, deletes,
 *                cputs and savepoints (rolled back or released), ending in
 *                commit, commitInBatch or rollback; every written value is
 *                unique
 *   applier    — concurrent workers on every node's TxnDB, retrying
 *                retryable errors, logging exactly what the final attempt
 *                read and wrote and the commit timestamp
 *   nemesis    — splits, merges, lease transfers and replica moves running
 *                concurrently (counted); and MVCC GC at a threshold below
 *                every live transaction (gcNemesis: the versions it may
 *                remove are recorded first and handed to the validator)
 *   validator  — reads every version of every key (with its timestamp) from
 *                the leaseholders' engines and checks: every visible value
 *                was written by a committed (or ambiguous) transaction's final
 *                attempt and not rolled back to a savepoint; each committed
 *                transaction's writes sit exactly at its commit timestamp;
 *                each committed transaction's reads equal the MVCC state at
 *                its commit timestamp (its own earlier writes included) —
 *                together: the committed history is serializable in
 *                commit-timestamp order. An ambiguous transaction is
 *                resolved from the data: nothing it wrote may show unless it
 *                had sent its commit; if a final value of it shows, it
 *                committed at that value's timestamp and is checked as a
 *                committed one (all its writes there, its reads there).
 *                statsMismatches: every replica's MVCC stats equal a recount
 *                (a command applied twice agrees on every replica, so
 *                checksums miss it; the stats do not).
 *   tracer       — (RpcTracer) every RPC of every transaction, with the
 *                serving node/range/lease and the evaluation timestamp; a
 *                violation prints the violator's and the nearby writers'
 *                traces (which read was a refresh, who was pushed, when).
 */
import { CairnError } from '../../src/util/errors.js';
import { ZERO_TIMESTAMP, compareTimestamps, formatTimestamp, tsEqual, tsLess, tsPrev, MAX_TIMESTAMP, type Timestamp } from '../../src/util/hlc.js';
import { Prng } from '../../src/util/prng.js';
import { mvccGet, computeStats, addStats } from '../../storage/mvcc.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { LOCAL_MAX, rangeAppliedStateKey, rangeLocalSpan } from '../../storage/keys.js';
import { decodeAppliedState } from '../../src/kv/api-codec.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { adminSplit } from '../../src/kv/split.js';
import { adminMerge, completeMerge } from '../../src/kv/merge.js';
import { isFrozen } from '../../src/kv/merge-queue.js';
import { addVoter } from '../../src/kv/replica-change.js';
import { runGcAt } from '../../src/kv/gc-queue.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';
import type { TxnCoordSender } from '../../src/kv/client/txn-coord-sender.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import type { TestCluster } from '../support/test-cluster.js';
import { descriptors, members } from '../kv-ranges/support.js';
import { KVBatch } from '../../sql/kv.js';
import { DistSender as DistSenderClass } from '../../src/kv/dist-sender.js';
import { RpcNodeDialer, type NodeDialer } from '../../src/kv/kv-client.js';
import type { BatchRequest, BatchResponse, Request } from '../../src/kv/api.js';
import { tkey } from './support.js';

export interface Read {
  readonly key: number;
  readonly value: string | null;
  /** Own value written earlier in the txn (then the read must see it), else undefined. */
  readonly own: string | null | undefined;
  /** The read timestamp before and after the operation (diagnostics). */
  readonly at?: string;
}
export interface ScanRead {
  readonly lo: number;
  readonly hi: number;
  /** Reverse scan (rows descending) / at most `limit` rows (0: no limit). */
  readonly reverse?: boolean;
  readonly limit?: number;
  readonly rows: readonly [number, string][];
  readonly own: ReadonlyMap<number, string | null>;
  /** The read timestamp before and after the operation (diagnostics). */
  readonly at?: string;
}
export interface TxnLog {
  readonly name: string;
  /** The transaction's id (hex prefix) and gateway node, for diagnostics. */
  id?: string;
  node?: number;
  status: 'committed' | 'aborted' | 'ambiguous';
  commitTs: Timestamp | null;
  reads: Read[];
  scans: ScanRead[];
  /** Final value per key (null: deleted). */
  writes: Map<number, string | null>;
  /** Values this txn wrote that must never be visible (earlier attempts, rolled-back savepoints, aborts). */
  discarded: string[];
  /** Ambiguous only: whether the commit had been sent (else the txn cannot have committed). */
  commitSent?: boolean;
}

export interface NemesisOptions {
  readonly seed: number;
  readonly keys: number;
  readonly workers: number;
  readonly txnsPerWorker: number;
  readonly nemesis: boolean;
}

export interface NemesisCounts {
  splits: number;
  merges: number;
  /** Merges refused: the neighbours were (or became, during the merge) on different stores. */
  refusedMerges: number;
  leaseTransfers: number;
  replicaMoves: number;
  failedOps: number;
  /** Frozen ranges whose merge driver failed after the freeze, merged by rollForwardFrozen. */
  rolledForward: number;
  /** MVCC GC requests the GC nemesis sent (gcNemesis) that applied. */
  gcs: number;
}

/**
 * The GC nemesis's bookkeeping (issue 5, MVCC GC): the start timestamp of
 * every transaction that may still read or write (running, or ambiguous:
 * its record may yet be recovered and its intents resolved) — the GC
 * threshold stays below all of them, so no worker is ever refused — and the
 * versions each GC may have removed, read from the leaseholder's engine just
 * before it, which readHistory adds back so the validator replays the whole
 * history. A version at or below the threshold cannot appear after that
 * read: every transaction that can still commit writes above its start.
 */
const liveTxnStarts = new Map<string, Timestamp>();
const gcRecorded = new Map<number, { ts: Timestamp; value: string | null }[]>();

const val = (s: string): Buffer => Buffer.from(s);
const span = (a: Timestamp, b: Timestamp): string => (tsEqual(a, b) ? formatTimestamp(a) : `${formatTimestamp(a)}→${formatTimestamp(b)}`);
const keyIndex = (k: Buffer): number => Number(k.toString('latin1').slice(2));

/** Runs one random transaction on db; returns its log. */
/** What each worker is doing now (printed by the progress reporter, TXN_NEMESIS_PROGRESS=1). */
const doing = new Map<string, { what: string; since: number }>();
const note = (name: string, what: string): void => void doing.set(name.replace(/t\d+$/, ''), { what: `${name} ${what}`, since: Date.now() });

async function runOne(db: TxnDB, rng: Prng, name: string, nkeys: number, node: number): Promise<TxnLog> {
  const log = await runOneTxn(db, rng, name, nkeys, node);
  if (log.status !== 'ambiguous') liveTxnStarts.delete(name);
  return log;
}

async function runOneTxn(db: TxnDB, rng: Prng, name: string, nkeys: number, node: number): Promise<TxnLog> {
  const log: TxnLog = { name, status: 'aborted', commitTs: null, reads: [], scans: [], writes: new Map(), discarded: [] };
  const txn: TxnCoordSender = db.newTxn(rng.bool(0.1) ? { priority: rng.bool() ? 'high' : 'low' } : {});
  liveTxnStarts.set(name, txn.readTimestamp());
  log.node = node;
  const nops = 1 + rng.intn(6);
  const planMax = Number(process.env.TXN_NEMESIS_OPMAX ?? 100);
  const plan = Array.from({ length: nops }, () => rng.intn(planMax));
  const keysOf = Array.from({ length: nops }, () => rng.intn(nkeys));
  const ending = rng.intn(100);
  for (let attempt = 0; attempt < 30; attempt++) {
    const writes = new Map<number, string | null>();
    const reads: Read[] = [];
    const scans: ScanRead[] = [];
    const written: string[] = [];
    let sp: { token: unknown; writes: Map<number, string | null>; nWritten: number } | null = null;
    let committedInBatch = false;
    let commitSent = false;
    try {
      for (let i = 0; i < nops; i++) {
        const p = plan[i] as number;
        note(name, `attempt ${attempt} op ${i} (${p}) key ${keysOf[i]}`);
        const k = keysOf[i] as number;
        const v = `${name}.${attempt}.${i}`;
        const b = new KVBatch();
        if (p < 30) {
          // A quarter of the gets lock the key (SELECT … FOR UPDATE, UPDATE's reads): unreplicated locks.
          b.get(tkey(k), rng.intn(4) === 0 ? 'exclusive' : 'none');
          const before = txn.readTimestamp();
          const r = await txn.run(b);
          reads.push({ key: k, value: (r[0] as { value: Buffer | null }).value?.toString() ?? null, own: writes.has(k) ? (writes.get(k) as string | null) : undefined, at: span(before, txn.readTimestamp()) });
        } else if (p < 42) {
          const hi = Math.min(nkeys, k + 1 + rng.intn(5));
          // Forward or reverse, limited or not, locking or not (SQL's ORDER BY … DESC, LIMIT, FOR UPDATE scans).
          const reverse = rng.bool(0.3);
          const limit = rng.bool(0.3) ? 1 + rng.intn(3) : 0;
          const lock = rng.intn(5) === 0 ? ('exclusive' as const) : ('none' as const);
          if (reverse) b.reverseScan(tkey(k), tkey(hi), { limit, lock });
          else b.scan(tkey(k), tkey(hi), { limit, lock });
          const before = txn.readTimestamp();
          const r = await txn.run(b);
          const own = new Map<number, string | null>();
          for (const [wk, wv] of writes) if (wk >= k && wk < hi) own.set(wk, wv);
          scans.push({ lo: k, hi, reverse, limit, rows: (r[0] as unknown as { rows: { key: Buffer; value: Buffer }[] }).rows.map((kv) => [keyIndex(kv.key), kv.value.toString()] as [number, string]), own, at: span(before, txn.readTimestamp()) });
        } else if (p < 67) {
          b.put(tkey(k), val(v));
          written.push(v);
          if (i === nops - 1 && ending >= 12 && ending % 2 === 0) {
            // The last write rides with the commit (1PC on one range, else a parallel commit).
            commitSent = true;
            writes.set(k, v); // before the call: an ambiguous answer leaves it possibly committed
            await txn.commitInBatch(b);
            committedInBatch = true;
            break;
          }
          await txn.run(b);
          writes.set(k, v);
        } else if (p < 77) {
          b.del(tkey(k));
          await txn.run(b);
          writes.set(k, null);
        } else if (p < 90) {
          // cput against what this txn believes (its own write, else its last read, else absent)
          const lastRead = [...reads].reverse().find((x) => x.key === k);
          const expected = writes.has(k) ? (writes.get(k) as string | null) : (lastRead?.value ?? null);
          b.cput(tkey(k), val(v), expected === null ? null : val(expected));
          written.push(v);
          const before = txn.readTimestamp();
          try {
            await txn.run(b);
            reads.push({ key: k, value: expected, own: writes.has(k) ? (writes.get(k) as string | null) : undefined, at: span(before, txn.readTimestamp()) });
            writes.set(k, v);
          } catch (e) {
            if (!(e instanceof CairnError && e.code === 'kv.condition_failed')) throw e;
            const actual = (e as unknown as { actual: Buffer | null }).actual;
            reads.push({ key: k, value: actual === null ? null : actual.toString(), own: writes.has(k) ? (writes.get(k) as string | null) : undefined, at: span(before, txn.readTimestamp()) });
          }
        } else if (sp === null) {
          sp = { token: await txn.createSavepoint(), writes: new Map(writes), nWritten: written.length };
        } else if (p < 95) {
          await txn.rollbackToSavepoint(sp.token);
          writes.clear();
          for (const [a, c] of sp.writes) writes.set(a, c);
          sp = null;
        } else {
          await txn.releaseSavepoint(sp.token);
          sp = null;
        }
      }
      if (ending < 12) {
        await txn.rollback();
        log.discarded.push(...written);
        return log;
      }
      note(name, `attempt ${attempt} ${ending < 12 ? 'rollback' : 'commit'}`);
      commitSent = true;
      if (!committedInBatch) await txn.commit();
      log.status = 'committed';
      log.id = txn.txnId.toString('hex').slice(0, 8);
      log.commitTs = txn.provisionalCommitTimestamp();
      log.reads = reads;
      log.scans = scans;
      log.writes = writes;
      // Values overwritten within the txn, or rolled back, never show.
      const final = new Set([...writes.values()].filter((x): x is string => x !== null));
      log.discarded.push(...written.filter((x) => !final.has(x)));
      return log;
    } catch (e) {
      if (e instanceof CairnError && e.ambiguous) {
        // Resolved from the data by the validator: committed (all final writes at one timestamp, reads checked
        // there) or not (none visible). Without a commit sent it cannot have committed: nothing it wrote may show.
        log.status = 'ambiguous';
        log.commitSent = commitSent;
        log.id = txn.txnId.toString('hex').slice(0, 8);
        log.writes = writes;
        log.reads = reads;
        log.scans = scans;
        const final = new Set([...writes.values()].filter((x): x is string => x !== null));
        log.discarded.push(...written.filter((x) => !commitSent || !final.has(x)));
        return log;
      }
      log.discarded.push(...written);
      if (e instanceof CairnError && e.retryable) {
        await txn.restart();
        continue;
      }
      await txn.rollback();
      throw e;
    }
  }
  await txn.rollback();
  return log;
}

/** Refusals of a merge of neighbours on different stores (merge.ts, cmd-subsume.ts): expected, and counted. */
const MERGE_REFUSED = new Set(['kv.merge_not_colocated', 'kv.merge_replicas_changed']);

/**
 * The merge queue's roll-forward (merge-queue.ts), which a TestCluster does
 * not run: a merge whose driver failed after the Subsume freeze leaves the
 * right range frozen — its nobody-lease admits no request, so every
 * transaction touching its keys stalls until the run times out (seen with
 * LevelDB engines, 2026-11-30: seed 25681 keys 8). Completes the merge of
 * every frozen range into its left neighbour, as the queue would.
 */
export async function rollForwardFrozen(c: TestCluster, ds: DistSender, counts: NemesisCounts): Promise<void> {
  const descs = descriptors(c);
  for (const d of descs) {
    if (!c.replicas(d.rangeId).some(({ r }) => r.initialized && !r.stopped && r.desc.generation === d.generation && isFrozen(r))) continue;
    const left = descs.find((x) => compareBytes(x.endKey, d.startKey) === 0);
    if (left === undefined) continue;
    await completeMerge(ds, left.startKey, d, {}, left);
    counts.rolledForward++;
  }
}

async function nemesisLoop(c: TestCluster, ds: DistSender, rng: Prng, nkeys: number, stop: () => boolean, counts: NemesisCounts, gcRng: Prng): Promise<void> {
  while (!stop()) {
    try {
      await rollForwardFrozen(c, ds, counts);
    } catch {
      counts.failedOps++;
    }
    const op = rng.intn(4);
    if (op === 1 && process.env.TXN_NEMESIS_MERGES === '0') continue;
    try {
      if (op === 0) {
        if ((await adminSplit(ds, tkey(1 + rng.intn(nkeys - 1)))) !== null) counts.splits++;
      } else if (op === 1) {
        const ds_ = descriptors(c).filter((d) => compareBytes(d.startKey, tkey(0)) >= 0 && compareBytes(d.endKey, tkey(nkeys)) <= 0);
        const d = ds_[rng.intn(Math.max(1, ds_.length))];
        // Any neighbours, colocated or not: adminMerge refuses non-colocated ones before the freeze, and Subsume
        // refuses them when a replica move lands between that check and the freeze (the refused-merge path).
        try {
          if (d !== undefined && (await adminMerge(ds, d.startKey)) !== null) counts.merges++;
        } catch (e) {
          if (!(e instanceof CairnError) || !MERGE_REFUSED.has(e.code)) throw e;
          counts.refusedMerges++;
        }
      } else if (op === 2) {
        const descs = descriptors(c);
        const d = descs[rng.intn(descs.length)];
        if (d !== undefined) {
          const lh = c.leaseholder(d.rangeId);
          const voters = d.replicas.filter((r) => r.type === 0 && r.nodeId - 1 !== lh && c.isRunning(r.nodeId - 1));
          const target = voters[rng.intn(Math.max(1, voters.length))];
          if (lh >= 0 && target !== undefined) {
            await c.store(lh).transferLease(d.rangeId, target.replicaId);
            counts.leaseTransfers++;
          }
        }
      } else if (c.size > 3) {
        const descs = descriptors(c).filter((d) => compareBytes(d.startKey, tkey(0)) >= 0);
        const d = descs[rng.intn(descs.length)];
        if (d !== undefined) {
          const lh = c.leaseholder(d.rangeId);
          const inRange = new Set(d.replicas.map((r) => r.nodeId));
          const out = Array.from({ length: c.size }, (_, j) => j + 1).filter((n) => !inRange.has(n));
          const victims = d.replicas.filter((r) => r.nodeId - 1 !== lh && r.type === 0);
          const add = out[rng.intn(Math.max(1, out.length))];
          const rem = victims[rng.intn(Math.max(1, victims.length))];
          if (add !== undefined && rem !== undefined) {
            await addVoter(ds, d, { nodeId: add, storeId: add }, { nodeId: rem.nodeId, storeId: rem.storeId });
            counts.replicaMoves++;
          }
        }
      }
    } catch {
      counts.failedOps++;
    }
    // MVCC GC, from its own generator so the other ops' sequence for a seed is what it was before GC existed.
    if (gcRng.intn(4) === 0) {
      try {
        if (await gcNemesis(c, ds, gcRng, nkeys)) counts.gcs++;
      } catch {
        counts.failedOps++;
      }
    }
    await new Promise((r) => setTimeout(r, 20 + rng.intn(60)));
  }
}

/**
 * One GC of a random range of the test span at a threshold below every live
 * transaction's start (and 50 ms before now): records every version of its
 * keys at or below the threshold from the leaseholder's engine (gcRecorded),
 * then collects them: a GCRequest naming them, or the GC queue's run over
 * the whole range (range-local keys included). Returns whether a GC was sent.
 */
async function gcNemesis(c: TestCluster, ds: DistSender, rng: Prng, nkeys: number): Promise<boolean> {
  const gcWholeRange = rng.bool();
  let t: Timestamp = { wall: c.node(0).clock.now().wall - 50_000, logical: 0 };
  for (const s of liveTxnStarts.values()) if (!tsLess(t, s)) t = tsPrev(s);
  const descs = descriptors(c).filter((d) => compareBytes(d.endKey, tkey(0)) > 0 && compareBytes(d.startKey, tkey(nkeys)) < 0);
  const d = descs[rng.intn(descs.length)];
  if (d === undefined) return false;
  const lh = c.leaseholder(d.rangeId);
  if (lh < 0) return false;
  const eng = c.node(lh).engine;
  const keys: Buffer[] = [];
  for (let k = 0; k < nkeys; k++) {
    const key = tkey(k);
    if (compareBytes(key, d.startKey) < 0 || compareBytes(key, d.endKey) >= 0) continue;
    const versions = gcRecorded.get(k) ?? [];
    let ts = t;
    let any = false;
    for (;;) {
      const r = await mvccGet(eng, key, ts, { inconsistent: true, tombstones: true });
      if (r.value === null) break;
      versions.push({ ts: r.value.ts, value: r.value.value === null ? null : r.value.value.toString() });
      any = true;
      if (r.value.ts.wall === 0 && r.value.ts.logical === 0) break;
      ts = tsPrev(r.value.ts);
    }
    if (!any) continue;
    gcRecorded.set(k, versions);
    keys.push(key);
  }
  if (keys.length === 0) return false;
  // Half the time the GC queue's whole-range run (its range-local keys too: transaction records rewritten by
  // heartbeats, descriptors) on the leaseholder, if the range is still the one recorded; else a GCRequest of the
  // recorded keys through the DistSender.
  const rep = c.store(lh).replica(d.rangeId);
  if (gcWholeRange && rep !== undefined && rep.desc.generation === d.generation) return (await runGcAt(c.store(lh), rep, t)).requests > 0;
  const last = keys[keys.length - 1] as Buffer;
  await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'gc', key: keys[0] as Buffer, endKey: Buffer.concat([last, Buffer.from([0])]), threshold: t, keys }] });
  return true;
}

export async function runNemesis(c: TestCluster, ds: readonly DistSender[], dbs: readonly TxnDB[], o: NemesisOptions): Promise<{ logs: TxnLog[]; counts: NemesisCounts }> {
  const logs: TxnLog[] = [];
  const counts: NemesisCounts = { splits: 0, merges: 0, refusedMerges: 0, leaseTransfers: 0, replicaMoves: 0, failedOps: 0, rolledForward: 0, gcs: 0 };
  liveTxnStarts.clear();
  gcRecorded.clear();
  let done = false;
  const t0 = Date.now();
  const progress =
    process.env.TXN_NEMESIS_PROGRESS === '1'
      ? setInterval(() => {
          const now = Date.now();
          console.log(`nemesis progress at ${Math.round((now - t0) / 1000)} s: ${logs.length} txns done; ${JSON.stringify(counts)}; ${[...doing.values()].map((d) => `${d.what} for ${now - d.since} ms`).join('; ')}`);
          if (process.env.TXN_NEMESIS_DUMP === '1') console.log(dumpRanges(c));
        }, 20_000)
      : null;
  const nem = o.nemesis ? nemesisLoop(c, ds[0] as DistSender, new Prng(o.seed ^ 0x5a5a), o.keys, () => done, counts, new Prng(o.seed ^ 0x6c6c)) : Promise.resolve();
  await Promise.all(
    Array.from({ length: o.workers }, async (_, w) => {
      const rng = new Prng(o.seed * 1000 + w);
      const db = dbs[w % dbs.length] as TxnDB;
      for (let t = 0; t < o.txnsPerWorker; t++) logs.push(await runOne(db, rng, `w${w}t${t}`, o.keys, (w % dbs.length) + 1));
    }),
  );
  done = true;
  if (progress !== null) clearInterval(progress);
  doing.clear();
  await nem;
  // A merge the last nemesis op left frozen would stall readHistory: roll it forward (bounded).
  if (o.nemesis) {
    for (let attempt = 0; ; attempt++) {
      try {
        await rollForwardFrozen(c, ds[0] as DistSender, counts);
        break;
      } catch (e) {
        if (attempt >= 10) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  return { logs, counts };
}

/** Every version of every key, oldest first, read from the leaseholders' engines (after a final resolving scan). */
export async function readHistory(c: TestCluster, db: TxnDB, nkeys: number): Promise<Map<number, { ts: Timestamp; value: string | null }[]>> {
  for (const d of dbs(db)) await d.resolver.drain();
  // A final scan meets (and resolves) every intent left behind.
  for (let attempt = 0; ; attempt++) {
    const t = db.newTxn({ priority: 'high' });
    try {
      const b = new KVBatch();
      b.scan(tkey(0), tkey(nkeys));
      await t.run(b);
      await t.commit();
      break;
    } catch (e) {
      if (attempt > 20) throw e;
      await t.rollback();
    }
  }
  await db.resolver.drain();
  const out = new Map<number, { ts: Timestamp; value: string | null }[]>();
  const descs = descriptors(c);
  for (let k = 0; k < nkeys; k++) {
    const key = tkey(k);
    // The newest generation holding the key: a replica removed by a move and never collected keeps its stale
    // descriptor — sometimes of a range since merged away, which then appears only there.
    const d = descs.filter((x) => compareBytes(x.startKey, key) <= 0 && compareBytes(key, x.endKey) < 0).sort((a, b) => b.generation - a.generation)[0];
    if (d === undefined) throw new Error(`no range holds key ${k}`);
    let lh = -1;
    for (let i = 0; i < 200 && lh < 0; i++) {
      lh = c.leaseholder(d.rangeId);
      if (lh < 0) {
        // An idle range's lease may have lapsed (a loaded machine): a read makes a replica take it again.
        if (i % 10 === 0) await readKey(db, key).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    if (lh < 0) throw new Error(`no leaseholder for r${d.rangeId}${process.env.TXN_NEMESIS_DUMP === '1' ? `\n${dumpRanges(c)}` : ''}`);
    const eng = c.node(lh).engine;
    const versions: { ts: Timestamp; value: string | null }[] = [];
    let ts: Timestamp = MAX_TIMESTAMP;
    for (;;) {
      const r = await mvccGet(eng, key, ts, { inconsistent: true, tombstones: true });
      if (r.value === null) break;
      versions.push({ ts: r.value.ts, value: r.value.value === null ? null : r.value.value.toString() });
      if (r.value.ts.wall === 0 && r.value.ts.logical === 0) break;
      ts = tsPrev(r.value.ts);
    }
    // The versions the GC nemesis may have collected (see gcRecorded), each once.
    const seen = new Set(versions.map((x) => formatTimestamp(x.ts)));
    for (const x of gcRecorded.get(k) ?? []) {
      if (seen.has(formatTimestamp(x.ts))) continue;
      seen.add(formatTimestamp(x.ts));
      versions.push(x);
    }
    versions.sort((a, b) => compareTimestamps(b.ts, a.ts));
    out.set(k, versions.reverse());
  }
  return out;
}

async function readKey(db: TxnDB, key: Buffer): Promise<void> {
  const t = db.newTxn();
  const b = new KVBatch();
  b.get(key);
  await t.run(b);
  await t.commit();
}

function dbs(db: TxnDB): TxnDB[] {
  return [db];
}

/**
 * Every replica's persisted MVCC stats against a recount of its data (range-
 * local keys + user data), both read from one engine snapshot (the applied
 * state and the data it describes are written in one batch, so no apply in
 * flight can skew the comparison). A command applied twice (06852b9's shape)
 * leaves every replica agreeing — checksums match — but counted twice; this
 * is what sees it. Returns the mismatches, one line per replica.
 */
export async function statsMismatches(c: TestCluster): Promise<string[]> {
  const out: string[] = [];
  for (const d of descriptors(c)) {
    for (const { i, r } of members(c, d)) {
      if (r.desc.generation !== d.generation) continue;
      const snap = c.node(i).engine.snapshot();
      try {
        const raw = snap.getSync(encodeMvccKey(rangeAppliedStateKey(d.rangeId)));
        if (raw === undefined) {
          out.push(`r${d.rangeId} on n${i + 1}: no applied state`);
          continue;
        }
        const applied = decodeAppliedState(raw);
        const local = rangeLocalSpan(d.startKey, d.endKey);
        const recount = await computeStats(snap, local.key, local.endKey);
        addStats(recount, await computeStats(snap, compareBytes(d.startKey, LOCAL_MAX) < 0 ? LOCAL_MAX : Buffer.from(d.startKey), Buffer.from(d.endKey)));
        const a = applied.stats as unknown as Record<string, number>;
        const b = recount as unknown as Record<string, number>;
        if ([...new Set([...Object.keys(a), ...Object.keys(b)])].some((f) => a[f] !== b[f])) {
          out.push(`r${d.rangeId} on n${i + 1} at applied index ${applied.raftAppliedIndex}: stats ${JSON.stringify(applied.stats)}, recount ${JSON.stringify(recount)}`);
        }
      } finally {
        await snap.close();
      }
    }
  }
  return out;
}

/**
 * The RPC trace of every transaction (diagnostics of a violation): each batch
 * a txn's coordinator sent (gets, scans, writes, refreshes, QueryIntents,
 * EndTxn), and each PushTxn / ResolveIntent / RecoverTxn naming it, with the
 * node and range that answered, the lease sequence that replica held then,
 * the header timestamp and the response's (evaluation) timestamp or the error.
 */
export class RpcTracer {
  readonly byTxn = new Map<string, string[]>();
  private readonly t0 = performance.now();
  constructor(private readonly c: TestCluster) {}

  /** A DistSender entering the cluster through node i whose calls are traced. */
  distSender(i: number): DistSender {
    const rpc = this.c.node(i).rpc;
    if (rpc === null) throw new Error(`node ${i} stopped`);
    const inner = new RpcNodeDialer(rpc, 10_000);
    const dialer: NodeDialer = { send: (nodeId, ba, opts) => this.traced(nodeId, ba, () => inner.send(nodeId, ba, opts)) };
    const c = this.c;
    return new DistSenderClass(dialer, {
      nodes: () => Array.from({ length: c.size }, (_, j) => j).filter((j) => c.isRunning(j)).map((j) => j + 1),
      now: () => c.node(i).clock.now(),
    });
  }

  private note(id: string, line: string): void {
    let l = this.byTxn.get(id);
    if (l === undefined) this.byTxn.set(id, (l = []));
    l.push(line);
  }

  private async traced(nodeId: number, ba: BatchRequest, send: () => Promise<BatchResponse>): Promise<BatchResponse> {
    const ids = new Set<string>();
    const own = ba.header.txn?.id.toString('hex').slice(0, 8);
    if (own !== undefined) ids.add(own);
    for (const q of ba.requests) {
      if (q.kind === 'pushTxn') ids.add(q.pushee.id.toString('hex').slice(0, 8));
      else if (q.kind === 'resolveIntent' || q.kind === 'resolveIntentRange' || q.kind === 'recoverTxn') ids.add(q.txn.id.toString('hex').slice(0, 8));
      else if (q.kind === 'queryTxn' || q.kind === 'queryIntent') ids.add(q.txnId.toString('hex').slice(0, 8));
    }
    if (ids.size === 0) return send();
    const start = performance.now() - this.t0;
    const what = `${own === undefined ? 'nontxn' : `${own} e${ba.header.txn?.epoch}`} ts=${formatTimestamp(ba.header.timestamp)} [${ba.requests.map(describe).join(', ')}]`;
    const where = (): string => {
      const r = this.c.isRunning(nodeId - 1) ? this.c.store(nodeId - 1).replica(ba.header.rangeId) : undefined;
      return `n${nodeId} r${ba.header.rangeId} ${r === undefined ? 'no-replica' : `lease=r${r.lease?.replica.replicaId ?? '-'}@n${r.lease?.replica.nodeId ?? '-'} seq${r.lease?.sequence ?? '-'} me=r${r.replicaId} gen${r.desc.generation}`}`;
    };
    const at = (): string => `${start.toFixed(1)}..${(performance.now() - this.t0).toFixed(1)}ms`;
    try {
      const res = await send();
      const line = `${at()} ${where()} ${what} → ts=${formatTimestamp(res.timestamp)} ${res.responses.map(describeRes).join(' ')}`;
      for (const id of ids) this.note(id, line);
      return res;
    } catch (e) {
      const line = `${at()} ${where()} ${what} → ${e instanceof CairnError ? e.code : 'error'}: ${(e as Error).message.slice(0, 160)}`;
      for (const id of ids) this.note(id, line);
      throw e;
    }
  }
}

const kname = (k: Buffer): string => (k.length === 8 && k[0] === 0x90 && k[1] === 0x74 ? `k${keyIndex(k)}` : `<${k.toString('hex').slice(0, 16)}>`);

function describe(q: Request): string {
  const k = (q as { key?: Buffer }).key;
  const e = (q as { endKey?: Buffer }).endKey;
  const base = `${q.kind}${k === undefined ? '' : ` ${kname(k)}`}${e === undefined ? '' : `-${kname(e)}`}`;
  switch (q.kind) {
    case 'refresh':
    case 'refreshRange':
      return `${base} from ${formatTimestamp(q.refreshFrom)}`;
    case 'pushTxn':
      return `${base} ${q.pushType} pushee=${q.pushee.id.toString('hex').slice(0, 8)}@${formatTimestamp(q.pushee.writeTimestamp)} by ${q.pusherId.toString('hex').slice(0, 8) || 'nontxn'} to ${formatTimestamp(q.pushTo)}`;
    case 'resolveIntent':
    case 'resolveIntentRange':
      return `${base} ${q.status}@${formatTimestamp(q.txn.writeTimestamp)}`;
    case 'endTxn':
      return `${base} commit=${q.commit} inflight=${q.inFlightWrites.map((w) => kname(w.key)).join('/')}`;
    default:
      return base;
  }
}

function describeRes(r: unknown): string {
  const x = r as { kind?: string; value?: Buffer | null; ts?: Timestamp; rows?: { key: Buffer; value: Buffer }[]; record?: { status: string; writeTimestamp: Timestamp } | null; pushed?: boolean };
  if (x.kind === 'get') return `=${x.value == null ? 'null' : x.value.toString()}${x.ts === undefined ? '' : `@${formatTimestamp(x.ts)}`}`;
  if (x.kind === 'scan') return `={${(x.rows ?? []).map((kv) => `${kname(kv.key)}=${kv.value.toString()}`).join(',')}}`;
  if (x.record !== undefined) return x.record === null ? 'rec=null' : `rec=${x.record.status}@${formatTimestamp(x.record.writeTimestamp)}${x.pushed === undefined ? '' : ` pushed=${x.pushed}`}`;
  return '';
}

/** The checks of the header; returns the violations found (empty: valid). */
export function validate(logs: readonly TxnLog[], history: Map<number, { ts: Timestamp; value: string | null }[]>): string[] {
  const errs: string[] = [];
  const writer = new Map<string, TxnLog>();
  const discarded = new Set<string>();
  for (const l of logs) {
    for (const v of l.discarded) discarded.add(v);
    if (l.status !== 'aborted') for (const v of l.writes.values()) if (v !== null) writer.set(v, l);
  }
  // 1. Visible values come from committed (or ambiguous) final writes, at the commit timestamp.
  for (const [k, versions] of history) {
    for (const ver of versions) {
      if (ver.value === null) continue;
      if (discarded.has(ver.value)) errs.push(`key ${k}: discarded/aborted value ${ver.value} visible at ${formatTimestamp(ver.ts)}`);
      const w = writer.get(ver.value);
      if (w === undefined) {
        if (!discarded.has(ver.value)) errs.push(`key ${k}: value ${ver.value} of no known final write`);
        continue;
      }
      if (w.status === 'committed' && !tsEqual(w.commitTs as Timestamp, ver.ts)) errs.push(`key ${k}: ${w.name}'s value at ${formatTimestamp(ver.ts)}, commit ts ${formatTimestamp(w.commitTs as Timestamp)}`);
    }
  }
  const at = (k: number, ts: Timestamp, strictly: boolean): string | null => {
    let v: string | null = null;
    for (const ver of history.get(k) ?? []) {
      const c = compareTimestamps(ver.ts, ts);
      if (c < 0 || (c === 0 && !strictly)) v = ver.value;
    }
    return v;
  };
  // Where an ambiguous transaction's final values show (any one's timestamp), or null: none shows.
  const shownAt = (l: TxnLog): Timestamp | null => {
    for (const [k, v] of l.writes) {
      const ver = v === null ? undefined : (history.get(k) ?? []).find((x) => x.value === v);
      if (ver !== undefined) return ver.ts;
    }
    return null;
  };
  for (const l of logs) {
    let C: Timestamp;
    let name = l.name;
    if (l.status === 'committed') C = l.commitTs as Timestamp;
    else if (l.status === 'ambiguous' && l.commitSent === true) {
      // 4. An ambiguous commit is resolved from the data: a final value of it shows → it committed, at that
      // value's timestamp, and is checked like a committed one (all or nothing; its reads at C). None shows →
      // aborted (or it wrote only deletes: undecidable, and then unchecked).
      const t = shownAt(l);
      if (t === null) continue;
      C = t;
      name = `${l.name} (ambiguous; its writes show: committed)`;
    } else continue;
    // 2. Every committed write is there, at C.
    for (const [k, v] of l.writes) {
      const ver = (history.get(k) ?? []).find((x) => tsEqual(x.ts, C));
      if (ver === undefined || ver.value !== v) errs.push(`${name}: write of key ${k} = ${v} missing at ${formatTimestamp(C)} (found ${ver === undefined ? 'nothing' : ver.value})`);
    }
    // 3. Reads equal the state at C (below C for keys the txn itself writes).
    const expect = (k: number, own: string | null | undefined): string | null => (own !== undefined ? own : at(k, C, l.writes.has(k)));
    for (const r of l.reads) {
      const e = expect(r.key, r.own);
      if (e !== r.value) errs.push(`${name}: read key ${r.key} = ${r.value}, but at its commit ts ${formatTimestamp(C)} the value is ${e}`);
    }
    for (const s of l.scans) {
      const want: string[] = [];
      for (let k = s.lo; k < s.hi; k++) {
        const e = expect(k, s.own.has(k) ? (s.own.get(k) as string | null) : undefined);
        if (e !== null) want.push(`${k}=${e}`);
      }
      if (s.reverse === true) want.reverse();
      if ((s.limit ?? 0) > 0) want.length = Math.min(want.length, s.limit as number);
      const got = s.rows.map(([k, v]) => `${k}=${v}`);
      const how = `${s.reverse === true ? ' reverse' : ''}${(s.limit ?? 0) > 0 ? ` limit ${s.limit}` : ''}`;
      if (want.join(',') !== got.join(',')) errs.push(`${name}: scan${how} [${s.lo},${s.hi}) = {${got.join(',')}}, at ${formatTimestamp(C)} {${want.join(',')}}`);
    }
  }
  void tsLess;
  return errs;
}

/**
 * Diagnostics for violations: the violating transaction (its reads with the
 * read timestamps they were served at, its writes, its commit timestamp) and
 * the whole history of every key the first violations name, each version
 * with its writer, the writer's status and commit timestamp.
 */
export function explainViolations(errs: readonly string[], logs: readonly TxnLog[], history: Map<number, { ts: Timestamp; value: string | null }[]>, max = 3, tracer?: RpcTracer): string {
  const writer = new Map<string, TxnLog>();
  for (const l of logs) for (const v of l.writes.values()) if (v !== null) writer.set(v, l);
  const byKeyTs = new Map<string, TxnLog>();
  for (const l of logs) if (l.commitTs !== null) for (const k of l.writes.keys()) byKeyTs.set(`${k}@${formatTimestamp(l.commitTs)}`, l);
  const out: string[] = [];
  const traced = new Set<string>();
  const trace = (l: TxnLog | undefined): void => {
    if (tracer === undefined || l === undefined || l.id === undefined || traced.has(l.id)) return;
    traced.add(l.id);
    out.push(`  rpc trace of ${l.name} id=${l.id}:`);
    for (const line of tracer.byTxn.get(l.id) ?? []) out.push(`    ${line}`);
  };
  const txnLine = (l: TxnLog): string =>
    `${l.name} id=${l.id ?? '?'} n${l.node ?? '?'} ${l.status} commit=${l.commitTs === null ? '-' : formatTimestamp(l.commitTs)}\n` +
    l.reads.map((r) => `    read ${r.key} = ${r.value}${r.own !== undefined ? ' (own)' : ''} at ${r.at ?? '?'}\n`).join('') +
    l.scans.map((sc) => `    scan [${sc.lo},${sc.hi}) = {${sc.rows.map(([k, v]) => `${k}=${v}`).join(',')}} at ${sc.at ?? '?'}\n`).join('') +
    [...l.writes].map(([k, v]) => `    write ${k} = ${v}\n`).join('');
  for (const e of errs.slice(0, max)) {
    out.push(`violation: ${e}`);
    const name = /^(w\d+t\d+)[: ]/.exec(e)?.[1];
    const l = name === undefined ? undefined : logs.find((x) => x.name === name);
    const keys = new Set<number>();
    if (l !== undefined) {
      out.push(`  txn ${txnLine(l)}`);
      for (const r of l.reads) keys.add(r.key);
      for (const sc of l.scans) for (let k = sc.lo; k < sc.hi; k++) keys.add(k);
    }
    const km = /key (\d+)/.exec(e);
    if (km !== null) keys.add(Number(km[1]));
    const sm = /scan \[(\d+),(\d+)\)/.exec(e);
    if (sm !== null) for (let k = Number(sm[1]); k < Number(sm[2]); k++) keys.add(k);
    const writers: TxnLog[] = [];
    for (const k of [...keys].sort((a, b) => a - b)) {
      out.push(`  key ${k}:`);
      for (const ver of history.get(k) ?? []) {
        const w = ver.value === null ? byKeyTs.get(`${k}@${formatTimestamp(ver.ts)}`) : writer.get(ver.value);
        if (w !== undefined) writers.push(w);
        out.push(`    ${formatTimestamp(ver.ts)} ${ver.value}${w === undefined ? '' : ` by ${w.name} id=${w.id ?? '?'} n${w.node ?? '?'} ${w.status} commit=${w.commitTs === null ? '-' : formatTimestamp(w.commitTs)}`}`);
      }
    }
    trace(l);
    // The writers of the versions around the violating read (a deleted version names no writer: the txn that wrote it is not traced).
    if (l !== undefined && l.commitTs !== null) {
      const C = l.commitTs;
      const near = writers.filter((w) => w.commitTs !== null && Math.abs(w.commitTs.wall - C.wall) < 2_000_000);
      for (const w of near) trace(w);
    }
  }
  return out.join('\n');
}

/** Every replica of every range on every running store: descriptor, Raft state and lease (TXN_NEMESIS_DUMP=1). */
export function dumpRanges(c: TestCluster): string {
  const lines: string[] = [];
  for (let i = 0; i < c.size; i++) {
    if (!c.isRunning(i)) continue;
    for (const r of c.store(i).allReplicas()) {
      const rf = r.raw.raft;
      const reps = r.desc.replicas.map((x) => `n${x.nodeId}/r${x.replicaId}t${x.type}`).join(',');
      const l = r.lease;
      lines.push(
        `n${i + 1} r${r.rangeId} init=${r.initialized} rid=${r.replicaId} gen=${r.desc.generation} [${reps}] raft{state=${rf.state} term=${rf.term} lead=${rf.lead} commit=${rf.raftLog.committed} applied=${rf.raftLog.applied}} ` +
          `lease=${l === null ? '-' : `r${l.replica.replicaId}@n${l.replica.nodeId} seq${l.sequence}`} valid=${r.ownsValidLease(c.node(i).clock.now())} pending=${r.pendingProposals} leaseApplyWaiters=${r.leaseApplyWaiters}`,
      );
    }
  }
  return lines.join('\n');
}
