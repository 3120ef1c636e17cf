/**
 * Merging two adjacent ranges, from the outside (CockroachDB's AdminMerge
 * driver, reduced; its three phases kept):
 *
 *   adminMerge(ds, leftKey)
 *     0. Fresh descriptors of L and R from meta2 (one scan of two records:
 *        freshPair); refused when they are not
 *        colocated (kv.merge_not_colocated) — nothing frozen.
 *     1. Subsume the right neighbour R (batcheval/cmd-subsume.ts): one Raft
 *        command on R that makes its lease nobody's, durably — R is frozen,
 *        serves nothing, and its state can never change again. It carries L
 *        as read in 0 and is refused (kv.merge_replicas_changed, retried by
 *        adminMergeWithRetry) unless R's replicas, under R's latches, are on
 *        L's stores and R's leaseholder store has not seen a newer L; after
 *        the freeze, L's replicas cannot change (cmd-admin-change-replicas.ts
 *        refuses while the right neighbour is frozen). A replica change
 *        between 0 and 1 therefore never leaves R frozen and unmergeable.
 *        Left open: both L-side checks read a replica of the other range on
 *        the evaluating store, which may not have applied the newest change
 *        (CockroachDB closes it with the merge transaction's intent on L's
 *        descriptor).
 *     2. Wait until every replica of R applied the freeze (leaseInfo on each
 *        replica): the left's replicas will absorb exactly that state.
 *     3. AdminMerge on the left range L (cmd-admin-merge.ts): ONE Raft command
 *        of L whose apply, on each store, absorbs R (merge-trigger.ts) in the
 *        same engine batch as L's applied index. The ranges must be
 *        colocated (same stores, all voters); meta2 is written in that command
 *        when L holds it (the first range).
 *     4. The merged record, and the deletion of L's old record, for ranges
 *        whose meta2 lives elsewhere: one batch conditioned on the records
 *        read in 0 (split.ts fixMergeMeta2), fixMeta2(merged) when either
 *        changed meanwhile.
 *
 * Kill safety: before 1 nothing happened; 1 and 3 are atomic on each store. A
 * driver that dies after 1 leaves R frozen: the merge queue on L's
 * leaseholder (merge-queue.ts) finds the frozen neighbour and runs 2–4
 * (completeMerge) — a frozen range is always rolled forward, never thawed,
 * so a merge command still in flight can never absorb a range that moved on.
 * A driver that dies after 3 leaves meta2 behind: fixMeta2 runs again from
 * the split queue's scan. Meanwhile routers retry (a frozen range answers
 * NotLeaseHolder with the nobody-lease; DistSender backs off).
 *
 * adminMergeWithRetry (Node.adminMerge, /_admin/merge) wraps adminMerge for
 * callers that must not see transient errors: bounded retries from a fresh
 * lookup; after an ambiguous answer it first finds out whether the freeze or
 * the merge happened (never freezing twice, never merging the next
 * neighbour by repeating a merge that did happen).
 *
 * Ownership: src/kv; I/O through the DistSender.
 */
import { CairnError } from '../util/errors.js';
import { ZERO_TIMESTAMP } from '../util/hlc.js';
import { KEY_MAX, META2_MAX, meta2LookupKey } from '../../storage/keys.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import type { LeaseInfoResponse, RangeDescriptor, RangeDescriptorResponse, Request, ScanResponse } from './api.js';
import { decodeRangeDescriptor } from './api-codec.js';
import type { DistSender } from './dist-sender.js';
import { FROZEN_REPLICA_ID } from './merge-trigger.js';
import { fixMergeMeta2, fixMeta2, readDescriptor } from './split.js';
import { colocated } from './batcheval/cmd-admin-merge.js';

export interface MergeHooks {
  /** Called after the colocation check, before the freeze (race tests change replicas here). */
  readonly beforeFreeze?: (left: RangeDescriptor, right: RangeDescriptor) => Promise<void>;
  /** Called between the steps (kill tests stop nodes or throw here). */
  readonly afterFreeze?: (right: RangeDescriptor) => Promise<void>;
  readonly afterMerge?: (merged: RangeDescriptor) => Promise<void>;
  /** How long to wait for the right range's replicas to apply the freeze (default 10 s). */
  readonly freezeWaitMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** adminMergeWithRetry is about to try again after `e` (Node.adminMerge logs it: where a slow merge spent its time). */
  readonly onRetry?: (attempt: number, e: CairnError) => void;
}

async function sendOne(ds: DistSender, q: Request): Promise<RangeDescriptorResponse> {
  const res = await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [q] });
  return res.responses[0] as RangeDescriptorResponse;
}

/** The range holding `key`, looked up afresh in meta2 (the cache may predate a split or merge). */
async function freshLookup(ds: DistSender, key: Buffer): Promise<RangeDescriptor> {
  const stale = ds.cache.get(key);
  if (stale !== undefined) ds.cache.evict(stale);
  return ds.cache.lookup(key);
}

/**
 * The range holding `key` and its right neighbour (null: it is the last),
 * afresh from meta2 in one scan of two records; a gap (meta2 lagging a
 * split) falls back to a lookup of each.
 */
async function freshPair(ds: DistSender, key: Buffer): Promise<[RangeDescriptor, RangeDescriptor | null]> {
  const res = await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'scan', key: meta2LookupKey(key), endKey: META2_MAX, maxKeys: 2 }] });
  const [l, r] = (res.responses[0] as ScanResponse).rows.map((row) => decodeRangeDescriptor(row.value));
  const left = l !== undefined && compareBytes(l.startKey, key) <= 0 ? l : await freshLookup(ds, key);
  ds.cache.insert(left);
  if (compareBytes(left.endKey, KEY_MAX) >= 0) return [left, null];
  const right = r !== undefined && compareBytes(r.startKey, left.endKey) === 0 ? r : await freshLookup(ds, left.endKey);
  ds.cache.insert(right);
  return [left, right];
}

/** Merges the range holding `leftKey` with its right neighbour; null when it is the last range. */
export async function adminMerge(ds: DistSender, leftKey: Buffer, hooks: MergeHooks = {}): Promise<RangeDescriptor | null> {
  const [left, rightNow] = await freshPair(ds, leftKey);
  if (rightNow === null) return null;
  // Refuse before freezing: a frozen right range that cannot merge would stay frozen (its
  // nobody-lease admits no requests). AdminMerge checks again atomically on the left range.
  if (!colocated(left, rightNow)) throw new CairnError('kv.merge_not_colocated', `kv: r${left.rangeId} and r${rightNow.rangeId} are not on the same stores`);
  await hooks.beforeFreeze?.(left, rightNow);
  // Subsume checks colocation again, atomically with the freeze (cmd-subsume.ts): a replica
  // change since the check above is refused there (kv.merge_replicas_changed), not frozen.
  const { desc: right } = await sendOne(ds, { kind: 'subsume', key: left.endKey, left });
  await hooks.afterFreeze?.(right);
  return completeMerge(ds, left.startKey, right, hooks, left);
}

/**
 * Steps 2–4 for a right range already frozen (see the header). With `left`
 * (the left range as the caller read it), meta2 is changed in one batch
 * conditioned on both records (split.ts fixMergeMeta2), else fixMeta2.
 */
export async function completeMerge(ds: DistSender, leftStart: Buffer, right: RangeDescriptor, hooks: MergeHooks = {}, left?: RangeDescriptor): Promise<RangeDescriptor> {
  await waitFrozen(ds, right, hooks);
  const { desc: merged } = await sendOne(ds, { kind: 'adminMerge', key: leftStart, right });
  await hooks.afterMerge?.(merged);
  if (left !== undefined && left.rangeId === merged.rangeId && compareBytes(left.endKey, right.startKey) === 0) await fixMergeMeta2(ds, left, right, merged);
  else await fixMeta2(ds, merged);
  return merged;
}

/**
 * Errors after which a merge is tried again from a fresh lookup: the routing
 * ones (the DistSender gave up), a boundary or descriptor that moved under
 * the merge (a concurrent split or merge: kv.merge_mismatch), a freeze not
 * yet visible (kv.merge_not_frozen) or not yet reached by every replica
 * (kv.merge_timeout), a replica change that Subsume caught between the
 * colocation check and the freeze (kv.merge_replicas_changed: the fresh
 * lookup then decides, kv.merge_not_colocated being final), and ambiguous results — but never blindly: after one,
 * the next attempt first finds out what happened (is the right range frozen?
 * is it still there?), because repeating a merge that did happen would merge
 * the next neighbour too.
 */
const MERGE_RETRY = new Set(['kv.merge_mismatch', 'kv.merge_not_frozen', 'kv.merge_replicas_changed']);

/**
 * adminMerge for callers that should never see transient errors (/_admin/merge,
 * Node.adminMerge): retried, bounded, from a fresh lookup each time; a right
 * neighbour that an earlier attempt froze (or may have frozen, when the
 * answer was ambiguous) is rolled forward (completeMerge) rather than frozen
 * again, and one that an ambiguous attempt already merged is not merged twice.
 */
export async function adminMergeWithRetry(ds: DistSender, leftKey: Buffer, hooks: MergeHooks = {}, maxAttempts = 8): Promise<RangeDescriptor | null> {
  const sleep = hooks.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let frozen: RangeDescriptor | null = null;
  let ambiguous = false;
  let uncertain = false; // some attempt of this call ended ambiguous: its merge may have happened
  const recording: MergeHooks = {
    ...hooks,
    afterFreeze: async (right) => {
      frozen = right;
      await hooks.afterFreeze?.(right);
    },
  };
  const holdsLeftKey = (d: RangeDescriptor): boolean => compareBytes(d.startKey, leftKey) <= 0 && compareBytes(leftKey, d.endKey) < 0;
  for (let attempt = 1; ; attempt++) {
    try {
      if (attempt > 1 && frozen === null) {
        // meta2 may lag a merge of L — one of ours whose answer was lost, or the
        // merge queue's roll-forward of a range we froze — and then sends every
        // attempt's freeze into L itself (kv.merge_mismatch, 6 attempts in a
        // loaded run of test/kv-ranges-multiproc/split-merge). Ask L, fix meta2.
        const [l] = await freshPair(ds, leftKey);
        const now = await currentDescriptor(ds, l);
        if (now !== null && (now.generation !== l.generation || compareBytes(now.endKey, l.endKey) !== 0)) {
          await fixMeta2(ds, now);
          ds.cache.evict(l);
          if (uncertain && compareBytes(now.endKey, l.endKey) > 0 && holdsLeftKey(now)) return now; // the boundary is gone
        }
      }
      if (ambiguous && frozen === null) {
        // The freeze may have applied: look before freezing anything again.
        const [, right] = await freshPair(ds, leftKey);
        if (right === null) return null;
        if (await isFrozenRange(ds, right)) frozen = right;
      }
      ambiguous = false;
      if (frozen !== null) {
        // An earlier attempt froze this range and then failed (its left
        // neighbour split meanwhile, or the merge's answer was lost): roll it
        // forward into whatever range now ends at its start — a frozen range
        // serves nothing until merged — unless it is merged already.
        const right: RangeDescriptor = frozen;
        const cur = await freshLookup(ds, right.startKey);
        // meta2 may still name R after the merge applied: its driver (an earlier
        // attempt whose answer was lost) fixes meta2 after the merge. Ask L.
        const absorbed = cur.rangeId === right.rangeId ? await absorberOf(ds, right) : cur;
        if (absorbed !== null) {
          frozen = null;
          if (absorbed !== cur) await fixMeta2(ds, absorbed);
          if (holdsLeftKey(absorbed)) return absorbed;
        } else {
          const cached = await ds.cache.lookup(right.startKey, true);
          ds.cache.evict(cached);
          const left = await ds.cache.lookup(right.startKey, true);
          const merged = await completeMerge(ds, left.startKey, right, hooks);
          frozen = null;
          if (holdsLeftKey(merged)) return merged;
        }
      }
      return await adminMerge(ds, leftKey, recording);
    } catch (e) {
      const retry = e instanceof CairnError && (e.ambiguous || e.retryable || MERGE_RETRY.has(e.code));
      if (!retry || attempt >= maxAttempts) throw e;
      hooks.onRetry?.(attempt, e);
      ambiguous = e.ambiguous;
      uncertain ||= e.ambiguous;
      await sleep(Math.min(500, 50 * attempt));
    }
  }
}

/**
 * The range that absorbed the frozen `right`, from its left neighbour's own
 * replicas: the descriptor that range holds now, if it covers right's start;
 * null when it does not (not merged yet) or cannot be told. meta2 cannot
 * answer this: a merge whose answer was lost leaves meta2 naming R (only the
 * driver fixes it, after the merge), and R's replicas are gone.
 */
async function absorberOf(ds: DistSender, right: RangeDescriptor): Promise<RangeDescriptor | null> {
  const d = await currentDescriptor(ds, await ds.cache.lookup(right.startKey, true));
  return d !== null && compareBytes(d.endKey, right.startKey) > 0 ? d : null;
}

/**
 * The descriptor range `d` holds now, read from its own replicas (by range
 * id, not through meta2); null when it cannot be told (the range is gone or
 * moved on: the caller's own checks decide).
 */
async function currentDescriptor(ds: DistSender, d: RangeDescriptor): Promise<RangeDescriptor | null> {
  try {
    const now = await readDescriptor(ds, d.rangeId, d.startKey);
    return now !== null && now.rangeId === d.rangeId ? now : null;
  } catch (e) {
    if (e instanceof CairnError) return null;
    throw e;
  }
}

/** Whether any replica of `d` reports the freeze (the nobody-lease; a lagging one may not yet). */
async function isFrozenRange(ds: DistSender, d: RangeDescriptor): Promise<boolean> {
  for (const rep of d.replicas) {
    try {
      const res = await ds.sendToNode(rep.nodeId, { header: { rangeId: d.rangeId, replicaId: rep.replicaId, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'leaseInfo' }] });
      if ((res.responses[0] as LeaseInfoResponse).lease?.replica.replicaId === FROZEN_REPLICA_ID) return true;
    } catch (e) {
      if (!(e instanceof CairnError)) throw e; // not there (yet), node down: ask the next
    }
  }
  return false;
}

async function waitFrozen(ds: DistSender, right: RangeDescriptor, hooks: MergeHooks): Promise<void> {
  const sleep = hooks.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = Date.now() + (hooks.freezeWaitMs ?? 10_000);
  for (const rep of right.replicas) {
    let last = 'no answer';
    // Polls back off 10 ms → 160 ms: a follower that is slow to apply (a loaded machine) is not
    // also asked 100 times a second by every merge waiting for it.
    for (let poll = 0; ; poll++) {
      try {
        const res = await ds.sendToNode(rep.nodeId, { header: { rangeId: right.rangeId, replicaId: rep.replicaId, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'leaseInfo' }] });
        const lease = (res.responses[0] as LeaseInfoResponse).lease;
        if (lease?.replica.replicaId === FROZEN_REPLICA_ID) break;
        last = lease === null || lease === undefined ? 'no lease' : `lease ${lease.sequence} of replica ${lease.replica.replicaId}`;
      } catch (e) {
        if (!(e instanceof CairnError)) throw e; // not there yet (RangeNotFound, node down): poll again
        last = `${e.code}: ${e.message}`;
      }
      if (Date.now() > deadline) throw new CairnError('kv.merge_timeout', `kv: replica ${rep.replicaId} of r${right.rangeId} on n${rep.nodeId} has not applied the merge freeze (last answer: ${last})`, { retryable: true });
      await sleep(10 * 2 ** Math.min(poll, 4));
    }
  }
}
