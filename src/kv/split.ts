/**
 * Splitting a range, from the outside (CockroachDB's AdminSplit driver,
 * reduced): allocate the new range id, ask the range's leaseholder to split
 * (batcheval/cmd-admin-split.ts → split-trigger.ts), then make meta2 agree.
 *
 *   adminSplit(db, key)
 *     1. newRangeId ← a block of ids reserved by a cput-increment of
 *        RANGE_ID_GENERATOR_KEY, handed out one per split (an id lost to a
 *        failure later, or never handed out, is simply never used)
 *     2. AdminSplit{key, newRangeId} to the range holding key — ONE Raft
 *        command, atomic on every replica (split-trigger.ts); when the range
 *        holds meta2 (the first range) its meta2 records are in that command
 *     3. both meta2 records in one batch (fixSplitMeta2; fixMeta2 of each
 *        half when a condition fails) — for other ranges the meta2 records
 *        live in the first range, another Raft group: written afterwards.
 *
 * Kill safety: a kill before 2 leaves nothing; 2 is atomic on each store;
 * a kill between 2 and 3 leaves meta2 behind the descriptors — routers then
 * get RangeKeyMismatch and retry — until fixMeta2 runs again: the split queue
 * runs it for every range whose lease it holds (split-queue.ts), so the state
 * converges deterministically after a restart. fixMeta2 is idempotent and
 * never regresses a record: it writes a descriptor at meta2Key(end) only over
 * a record of a lower generation (a split gives both halves generation+1, a
 * merge max(left, right)+1, so along a key the newer descriptor always has
 * the higher generation), with a conditional put against the value it read.
 *
 * Stale records (issue 4: a record of a range merged away, r213, survived
 * every merge of test/kv-ranges-multiproc/split-merge). A repair works from
 * a descriptor read earlier — the split driver's retry after its meta2
 * batch's answer was lost, the split queue's check whose requests wait
 * seconds behind r1, a merge driver's retry — and its slot may hold NOTHING
 * by then: a later merge removed that boundary and fixed meta2 already. The
 * slot check alone wrote the dead range's record back, and nobody looked
 * again. So every writer of meta2 records (fixMeta2, fixSplitMeta2,
 * fixMergeMeta2) ends with a sweep: after its write, one scan of the
 * records overlapping what it wrote, deleting each record that a newer
 * descriptor overlaps — an older one, or its own when a concurrent change
 * superseded it. fixMeta2 also writes nothing from a descriptor that a
 * newer record already overlaps. Why that converges: take a stale record X
 * and a live range C overlapping it (C's generation is higher). Whichever of
 * the two was written later is followed by its writer's scan, which sees the
 * other (a live range's record is never deleted, and X is deleted only
 * here), and deletes X. So once every live range's record has been written,
 * meta2 holds exactly the live descriptors.
 *
 * A retried split (its first attempt's outcome unknown) that finds the range
 * already starting at `key` (kv.already_split) succeeds without doing anything.
 * Transient routing errors (range key mismatch, not lease holder, range not
 * found, proposal dropped — a concurrent split/merge or lease move) that
 * outlast the DistSender's own retries are retried here, bounded: callers
 * (/_admin/split, SPLIT AT) never see them while the cluster is healthy.
 *
 * Sticky bit: a manual split passes an expiration; the right-hand
 * descriptor carries it as stickyBit and the merge queue does not merge the
 * boundary away before it (CockroachDB's sticky bit; merge-queue.ts).
 *
 * Ownership: src/kv; all I/O through the injected Sender (a DistSender).
 */
import { CairnError } from '../util/errors.js';
import { ZERO_TIMESTAMP, type Timestamp } from '../util/hlc.js';
import { META2_MAX, RANGE_ID_GENERATOR_KEY, decodeMeta2Key, meta2Key, meta2LookupKey, rangeDescriptorKey } from '../../storage/keys.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { ConditionFailedError } from '../../storage/mvcc.js';
import { RangeKeyMismatchError, type AdminSplitRequest, type AdminSplitResponse, type GetResponse, type RangeDescriptor, type Request, type Response, type ScanResponse } from './api.js';
import { decodeRangeDescriptor, encodeRangeDescriptor } from './api-codec.js';
import type { Sender } from './kv-client.js';

async function send(db: Sender, requests: Request[]): Promise<readonly Response[]> {
  return (await db.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests })).responses;
}

function u64(b: Buffer | null): number {
  if (b === null) return 0;
  return b.readUInt32BE(0) * 2 ** 32 + b.readUInt32BE(4);
}

function u64Bytes(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeUInt32BE(Math.floor(n / 2 ** 32), 0);
  b.writeUInt32BE(n >>> 0, 4);
  return b;
}

/**
 * Range ids are reserved RANGE_ID_BLOCK at a time per Sender (one node's
 * DistSender): the conditional increment is a Raft write on the first range,
 * which also holds meta2 and which every split and lookup already queues on,
 * and concurrent splits contended on it (condition failures, retries). Ids of
 * a block a node never hands out (it restarts, two blocks were reserved at
 * once) are simply never used, like ids lost to a failed split.
 */
const RANGE_ID_BLOCK = 8;
const reservedIds = new WeakMap<Sender, { next: number; end: number }>();

/** Allocates a new range id (the generator holds the last one reserved). */
export async function allocateRangeId(db: Sender): Promise<number> {
  const block = reservedIds.get(db);
  if (block !== undefined && block.next < block.end) return block.next++;
  const last = await reserveRangeIds(db, RANGE_ID_BLOCK);
  reservedIds.set(db, { next: last - RANGE_ID_BLOCK + 2, end: last + 1 });
  return last - RANGE_ID_BLOCK + 1;
}

/** Moves the generator `n` ids up; returns the last id reserved (the caller owns last-n+1 … last). */
async function reserveRangeIds(db: Sender, n: number): Promise<number> {
  const [g] = await send(db, [{ kind: 'get', key: RANGE_ID_GENERATOR_KEY }]);
  let cur = (g as GetResponse).value;
  for (;;) {
    const next = u64(cur) + n;
    try {
      await send(db, [{ kind: 'cput', key: RANGE_ID_GENERATOR_KEY, value: u64Bytes(next), expected: cur, allowIfDoesNotExist: false }]);
      return next;
    } catch (e) {
      if (e instanceof CairnError && e.ambiguous) {
        // Our increment may or may not have happened: allocate afresh (an id
        // lost this way is never used; a late apply of ours fails its condition).
        cur = ((await send(db, [{ kind: 'get', key: RANGE_ID_GENERATOR_KEY }]))[0] as GetResponse).value;
        continue;
      }
      if (!(e instanceof ConditionFailedError)) throw e;
      cur = e.actual; // a concurrent allocation: try above it, no second read
    }
  }
}

/**
 * Makes meta2 agree with `desc` (a descriptor its range held when the caller
 * read it — possibly no longer): writes it at meta2Key(desc.endKey) unless a
 * record as new or newer is there, and deletes every record overlapping it
 * that is older (sweepMeta2). Writes nothing when a record overlapping desc
 * is newer: desc is stale then, and a record written from it could outlive
 * everyone who would remove it (see the header's "Stale records"). Returns
 * whether it changed anything.
 */
export async function fixMeta2(db: Sender, desc: RangeDescriptor): Promise<boolean> {
  const key = meta2Key(desc.endKey);
  const rows = await overlappingMeta2(db, desc.startKey, desc.endKey);
  if (rows.some((r) => r.desc.generation > desc.generation)) return sweep(db, rows, [desc]);
  // The record at desc's end is written below (never regressed); every other overlapping one older than desc goes.
  const slot = rows.find((r) => r.key.equals(key));
  const [written, swept] = await Promise.all([writeMeta2Record(db, desc, slot?.value ?? null), sweep(db, rows.filter((r) => r !== slot), [desc])]);
  // Written into a slot a concurrent change may have just superseded (a merge removing this
  // boundary, a split of desc): look again, after the write, and let the newer record win.
  if (written) await sweepMeta2(db, [desc]);
  return written || swept;
}

/** One meta2 record: its key, its value, its descriptor. */
interface Meta2Row {
  readonly key: Buffer;
  readonly value: Buffer;
  readonly desc: RangeDescriptor;
}

/** Records per page of overlappingMeta2's scan (a span rarely has more than its own record, one inner, the next). */
const META2_SCAN_PAGE = 8;

/**
 * The meta2 records whose descriptors overlap [start, end), in key order:
 * every record ending in (start, end], and the first one ending past end
 * when it starts before end (a stale record spanning the boundary).
 */
async function overlappingMeta2(db: Sender, start: Buffer, end: Buffer): Promise<Meta2Row[]> {
  const out: Meta2Row[] = [];
  let from = meta2LookupKey(start);
  for (;;) {
    const [s] = await send(db, [{ kind: 'scan', key: from, endKey: META2_MAX, maxKeys: META2_SCAN_PAGE }]);
    const res = s as ScanResponse;
    for (const row of res.rows) {
      const desc = decodeRangeDescriptor(Buffer.from(row.value));
      if (compareBytes(desc.startKey, end) < 0) out.push({ key: Buffer.from(row.key), value: Buffer.from(row.value), desc });
      if (compareBytes(decodeMeta2Key(Buffer.from(row.key)), end) >= 0) return out;
    }
    if (res.resumeKey === null || res.rows.length === 0) return out;
    from = res.resumeKey;
  }
}

function overlaps(a: RangeDescriptor, b: RangeDescriptor): boolean {
  return compareBytes(a.startKey, b.endKey) < 0 && compareBytes(b.startKey, a.endKey) < 0;
}

/**
 * Deletes each of `rows` that a newer descriptor overlaps — one of `known`
 * (descriptors the caller read from their ranges) or another row. Such a
 * record can only be stale: along any key, the range holding it only ever
 * moves to higher generations (a split gives both halves generation+1, a
 * merge max(left, right)+1, a replica change +1), so two different
 * descriptors covering one key differ in generation and the higher is the
 * later. Each deletion is conditioned on the value read (a concurrent
 * rewrite wins). Returns whether it deleted anything.
 */
async function sweep(db: Sender, rows: readonly Meta2Row[], known: readonly RangeDescriptor[]): Promise<boolean> {
  const witnesses = [...known, ...rows.map((r) => r.desc)];
  const stale = rows.filter((r) => witnesses.some((w) => w.generation > r.desc.generation && overlaps(w, r.desc)));
  const deleted = await Promise.all(
    stale.map(async (r) => {
      try {
        await send(db, [{ kind: 'cput', key: r.key, value: null, expected: r.value, allowIfDoesNotExist: false }]);
        return true;
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
        return false;
      }
    }),
  );
  return deleted.includes(true);
}

/**
 * After writing records for `descs` (adjacent, in key order): one scan of
 * the records overlapping them, and every one a newer descriptor overlaps is
 * deleted — older ones (an absorbed range's, a pre-split span's) and, when
 * a concurrent change already superseded them, the ones just written.
 */
async function sweepMeta2(db: Sender, descs: readonly RangeDescriptor[]): Promise<boolean> {
  const first = descs[0] as RangeDescriptor;
  const last = descs[descs.length - 1] as RangeDescriptor;
  return sweep(db, await overlappingMeta2(db, first.startKey, last.endKey), descs);
}

/**
 * Writes desc's own record over `cur` (what the caller read there) unless a
 * record as new is there; a failed condition returns the real value, which
 * is judged the same way. Returns whether it wrote.
 */
async function writeMeta2Record(db: Sender, desc: RangeDescriptor, cur: Buffer | null): Promise<boolean> {
  const key = meta2Key(desc.endKey);
  const want = encodeRangeDescriptor(desc);
  for (;;) {
    if (cur !== null) {
      if (cur.equals(want)) return false;
      const d = decodeRangeDescriptor(cur);
      if (d.generation > desc.generation || (d.generation === desc.generation && d.rangeId === desc.rangeId)) return false;
    }
    try {
      await send(db, [{ kind: 'cput', key, value: want, expected: cur, allowIfDoesNotExist: false }]);
      return true;
    } catch (e) {
      if (!(e instanceof ConditionFailedError)) throw e;
      cur = e.actual;
    }
  }
}

export interface SplitHooks {
  /** Called between the steps (kill tests stop nodes here). */
  readonly afterAllocate?: (rangeId: number) => Promise<void>;
  readonly afterSplit?: (res: AdminSplitResponse) => Promise<void>;
  /**
   * A manual split (/_admin/split, SPLIT AT): the new boundary is sticky — the
   * merge queue leaves it alone — until this time (MAX_TIMESTAMP: forever).
   * Absent: an automatic split (the split queue).
   */
  readonly expiration?: Timestamp;
  /** Backoff between attempts after a transient routing error (default: 50 ms × attempt, capped at 1 s). */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * The range id an earlier attempt at this split allocated, whose outcome is
   * unknown (adminSplitWithRetry): used again, and its split looked for as
   * after an ambiguous answer (findOwnSplit) — a fresh id could not find it.
   */
  readonly retryOf?: number;
}

/**
 * Transient routing errors an AdminSplit may meet while the range is moving
 * (a concurrent split or merge, a lease changing hands) after the
 * DistSender's own retries: the split is re-resolved and sent again. Never
 * an ambiguous error (that is answered by idempotence below). The SQL range
 * admin (client/kv-admin.ts: SHOW RANGES, SCATTER) retries the same set.
 */
export const TRANSIENT_RANGE_ERRORS: ReadonlySet<string> = new Set(['kv.range_key_mismatch', 'kv.not_lease_holder', 'kv.range_not_found', 'kv.proposal_dropped']);
/**
 * Bounded: about 20 s of backoff on top of the DistSender's own retries —
 * enough for a concurrent split's meta2 fix or a lease move to land on a
 * heavily loaded machine (a multi-process test under load average ~40 saw
 * kv.range_key_mismatch outlast 5 quick retries).
 */
const MAX_TRANSIENT_RETRIES = 25;
const transientBackoffMs = (attempt: number): number => Math.min(1_000, 50 * attempt);

function isTransient(e: unknown): boolean {
  return e instanceof CairnError && !e.ambiguous && TRANSIENT_RANGE_ERRORS.has(e.code);
}

/**
 * A split's two meta2 records in ONE batch — one Raft command on the first
 * range, which holds meta2 — each conditioned on what the split leaves there
 * (nothing at the split key; the pre-split descriptor at the range's end),
 * then the sweep over both halves (see the header). A condition failing (a
 * concurrent split or repair wrote there first; the first range's own split,
 * whose command wrote meta2 already): the general fixMeta2 of each half.
 */
async function fixSplitMeta2(db: Sender, left: RangeDescriptor, right: RangeDescriptor): Promise<void> {
  const before: RangeDescriptor = { ...left, endKey: right.endKey, generation: left.generation - 1 };
  try {
    await send(db, [
      { kind: 'cput', key: meta2Key(left.endKey), value: encodeRangeDescriptor(left), expected: null, allowIfDoesNotExist: false },
      { kind: 'cput', key: meta2Key(right.endKey), value: encodeRangeDescriptor(right), expected: encodeRangeDescriptor(before), allowIfDoesNotExist: false },
    ]);
  } catch (e) {
    if (!(e instanceof ConditionFailedError)) throw e;
    await Promise.all([fixMeta2(db, left), fixMeta2(db, right)]);
    return;
  }
  await sweepMeta2(db, [left, right]);
}

/**
 * A merge's meta2 change in ONE batch (merge.ts): the merged record over the
 * right's, and the left's record deleted, each conditioned on the
 * descriptor the merge driver read; then the sweep over the merged range
 * (see the header). A condition failing (meta2 lagged behind either range,
 * or the merged range holds meta2 and its command wrote it): fixMeta2.
 */
export async function fixMergeMeta2(db: Sender, left: RangeDescriptor, right: RangeDescriptor, merged: RangeDescriptor): Promise<void> {
  try {
    await send(db, [
      { kind: 'cput', key: meta2Key(right.endKey), value: encodeRangeDescriptor(merged), expected: encodeRangeDescriptor(right), allowIfDoesNotExist: false },
      { kind: 'cput', key: meta2Key(left.endKey), value: null, expected: encodeRangeDescriptor(left), allowIfDoesNotExist: false },
    ]);
  } catch (e) {
    if (!(e instanceof ConditionFailedError)) throw e;
    await fixMeta2(db, merged);
    return;
  }
  await sweepMeta2(db, [merged]);
}

/**
 * After an ambiguous attempt, the answer to a retry that says a range now
 * starts or ends at `key` (kv.already_split; a RangeKeyMismatch carrying a
 * descriptor that ends at `key`): did OUR attempt split there? The right half
 * would be range `newRangeId` — an id nobody else uses — so its descriptor is
 * read from its replicas by range id: neither meta2 (which only this driver
 * was going to fix) nor a range cache need to know it. Returns both halves
 * when our split applied and the retry showed the left, or meta2 still names
 * the unsplit range (leftOfOwnSplit) ('elsewhere': only the
 * right half is known, its meta2 record fixed here, the left's is the split
 * queue's), null when the range is not ours (looked up once per split),
 * 'unknown' when the answer says nothing about `key`.
 */
async function findOwnSplit(db: Sender, key: Buffer, newRangeId: number, e: unknown): Promise<AdminSplitResponse | 'elsewhere' | 'unknown' | null> {
  const left = e instanceof RangeKeyMismatchError ? e.descriptors.find((d) => compareBytes(d.endKey, key) === 0) : undefined;
  if (left === undefined && !(e instanceof CairnError && e.code === 'kv.already_split')) return 'unknown';
  let right: RangeDescriptor;
  try {
    const found = await readDescriptor(db, newRangeId, key);
    if (found === null) return null;
    right = found;
  } catch (x) {
    if (x instanceof CairnError && !x.ambiguous) return null; // no such range: another driver's split
    throw x;
  }
  const l = left ?? (await leftOfOwnSplit(db, key, right));
  if (l !== null) return { kind: 'adminSplit', left: l, right };
  await fixMeta2(db, right);
  return 'elsewhere';
}

/**
 * The left half of our split whose retry reached the right half itself
 * (kv.already_split: the store that answered the left half's
 * RangeKeyMismatch also named the right half, store.ts withKeyHolder): the
 * left half keeps the split range's id, which meta2's record for `key` still
 * names while unfixed — its descriptor is then read by that id. Null when
 * meta2 no longer names the unsplit range (someone fixed it).
 */
async function leftOfOwnSplit(db: Sender, key: Buffer, right: RangeDescriptor): Promise<RangeDescriptor | null> {
  const [m] = await send(db, [{ kind: 'scan', key: meta2LookupKey(key), endKey: META2_MAX, maxKeys: 1 }]);
  const row = (m as ScanResponse).rows[0];
  if (row === undefined) return null;
  const stale = decodeRangeDescriptor(Buffer.from(row.value));
  if (stale.rangeId === right.rangeId || compareBytes(stale.startKey, key) >= 0 || compareBytes(stale.endKey, key) <= 0) return null;
  const left = await readDescriptor(db, stale.rangeId, stale.startKey);
  return left !== null && compareBytes(left.endKey, key) === 0 ? left : null;
}

/**
 * The descriptor range `rangeId` stores at `startKey`, read from the range's
 * own replicas (addressed by id, so neither meta2 nor a range cache need to
 * know it); null when there is none. Errors (no such range, …) are the
 * caller's to judge.
 */
export async function readDescriptor(db: Sender, rangeId: number, startKey: Buffer): Promise<RangeDescriptor | null> {
  const res = await db.send({ header: { rangeId, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'get', key: rangeDescriptorKey(startKey) }] });
  const raw = (res.responses[0] as GetResponse).value;
  return raw === null ? null : decodeRangeDescriptor(raw);
}

/**
 * Splits the range holding `key` at `key` (see the header); null when a range
 * already starts there. An ambiguous AdminSplit (an RPC lost after sending)
 * is sent again: splitting is idempotent by key (the retry finds
 * kv.already_split, or — meta2 still naming the unsplit range — a
 * RangeKeyMismatch from the left half). Since only this driver knows that
 * the split happened and that meta2 still has to be fixed, such an answer
 * after an ambiguous attempt makes it look for its own right half by range
 * id (findOwnSplit) and fix meta2 itself: before, it left that to the split
 * queue and meanwhile retried into RangeKeyMismatch until it gave up (a
 * clean-clone CI run of test/kv-ranges-multiproc/split-merge: 25 retries;
 * test/kv-ranges/split-ambiguous.test.ts).
 */
export async function adminSplit(db: Sender, key: Buffer, hooks: SplitHooks = {}): Promise<AdminSplitResponse | null> {
  const newRangeId = hooks.retryOf ?? (await allocateRangeId(db));
  if (hooks.retryOf === undefined) await hooks.afterAllocate?.(newRangeId);
  const sleep = hooks.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const req: AdminSplitRequest = hooks.expiration === undefined ? { kind: 'adminSplit', key, newRangeId } : { kind: 'adminSplit', key, newRangeId, expiration: hooks.expiration };
  let res: AdminSplitResponse;
  let recovered = false;
  for (let ambiguous = hooks.retryOf === undefined ? 0 : 1, transient = 0, looked = false; ; ) {
    try {
      [res] = (await send(db, [req])) as [AdminSplitResponse];
      break;
    } catch (e) {
      if (ambiguous > 0 && !looked) {
        // An earlier attempt may have applied: then nobody fixes meta2 but us (see the header).
        const own = await findOwnSplit(db, key, newRangeId, e);
        if (own === 'elsewhere') return null;
        if (own !== null && own !== 'unknown') {
          res = own;
          recovered = true;
          break;
        }
        looked = own === null;
      }
      if (e instanceof CairnError && e.code === 'kv.already_split') return null;
      if (isTransient(e) && transient < MAX_TRANSIENT_RETRIES) {
        await sleep(transientBackoffMs(++transient));
        continue;
      }
      if (!(e instanceof CairnError) || !e.ambiguous || ambiguous >= 3) throw e;
      ambiguous++;
    }
  }
  await hooks.afterSplit?.(res);
  // Recovered from an ambiguous attempt: the records may be anything by now — read them.
  const fix = recovered ? Promise.all([fixMeta2(db, res.left), fixMeta2(db, res.right)]) : fixSplitMeta2(db, res.left, res.right);
  await fix.catch(async (e: unknown) => {
    // fixMeta2 is idempotent: after an ambiguous or transient failure (r1's
    // lease moving) it is simply run again from a fresh read, bounded.
    for (let attempt = 1; ; attempt++) {
      if (!(e instanceof CairnError) || !(e.ambiguous || e.retryable) || attempt > MAX_TRANSIENT_RETRIES) throw e;
      await sleep(transientBackoffMs(attempt));
      try {
        await Promise.all([fixMeta2(db, res.left), fixMeta2(db, res.right)]);
        return;
      } catch (again) {
        e = again;
      }
    }
  });
  return res;
}

/**
 * adminSplit for callers that should never see a transient failure
 * (/_admin/split, SPLIT AT): the whole split is asked again, bounded, after
 * an answer that is ambiguous (an RPC the DistSender's breaker abandoned on
 * a live but slow node — rpc.canceled after sending; a read of the id
 * generator or of the new half lost that way) or retryable. Asking again
 * settles it: the retry uses the range id the failed attempt allocated
 * (SplitHooks.retryOf) and so finds that attempt's split if it applied
 * (findOwnSplit: both halves answered, meta2 fixed here), or splits. A fresh
 * id could not: the retry would be routed by the unfixed meta2 into
 * RangeKeyMismatch until the split queue repaired it (see adminSplit).
 */
export async function adminSplitWithRetry(db: Sender, key: Buffer, hooks: SplitHooks = {}, maxAttempts = 5): Promise<AdminSplitResponse | null> {
  const sleep = hooks.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let id: number | undefined;
  const recording: SplitHooks = {
    ...hooks,
    afterAllocate: async (rangeId) => {
      id = rangeId;
      await hooks.afterAllocate?.(rangeId);
    },
  };
  for (let attempt = 1; ; attempt++) {
    try {
      return await adminSplit(db, key, id === undefined ? recording : { ...recording, retryOf: id });
    } catch (e) {
      if (!(e instanceof CairnError && (e.ambiguous || e.retryable)) || attempt >= maxAttempts) throw e;
      await sleep(transientBackoffMs(attempt));
    }
  }
}
