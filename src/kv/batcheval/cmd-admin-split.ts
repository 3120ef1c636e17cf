/**
 * AdminSplit: splits the range at `key` into [start, key) — keeping the range
 * id — and [key, end) with the caller-allocated id `newRangeId`
 * (CockroachDB's AdminSplit + splitTrigger, done as ONE Raft command of the
 * range being split instead of a distributed transaction; split-trigger.ts
 * describes what the command writes and why it is atomic on every replica).
 *
 * Evaluated on the leaseholder under a write latch over the whole range (every
 * request to the range waits, and re-checks its keys against the shrunken
 * descriptor after the split). The right half's MVCC stats are recounted from
 * the engine (its user data and range-local keys); the left's delta is minus
 * that. A key the range already starts at: kv.already_split (a retried split
 * finds its own work done). Refused (kv.invalid_split_key): keys outside (start, end), local keys,
 * keys below META2_MAX (meta2 and meta1 stay in the first range).
 * Spans: the whole range (global and range-local), write; its GC threshold key, read.
 */
import { CairnError } from '../../util/errors.js';
import { encodeMvccKey } from '../../../storage/mvcc-key.js';
import { compareBytes } from '../../../storage/encoding/bytes.js';
import { META2_MAX, META2_PREFIX, isValidSplitKey, meta2Key, rangeAppliedStateKey, rangeDescriptorKey, rangeGCThresholdKey, rangeLeaseKey, rangeLocalSpan } from '../../../storage/keys.js';
import { addStats, computeStats, emptyStats } from '../../../storage/mvcc-stats.js';
import { mvccPut } from '../../../storage/mvcc.js';
import { encodeAppliedState, encodeLease, encodeRangeDescriptor } from '../api-codec.js';
import type { AdminSplitRequest, RangeDescriptor } from '../api.js';
import { RAFT_INITIAL_LOG_INDEX, RAFT_INITIAL_LOG_TERM } from '../bootstrap.js';
import { encodeRangeTrigger } from '../split-trigger-codec.js';
import { registerCommand, type DeclaredSpan } from './command.js';

/** Whether a range's span holds the meta2 records (then a split writes them in the same batch). */
export function holdsMeta2(desc: RangeDescriptor): boolean {
  return compareBytes(desc.startKey, META2_PREFIX) <= 0 && compareBytes(desc.endKey, META2_MAX) >= 0;
}

/** The latches of a descriptor-changing command: the whole range, global and range-local keys, write. */
export function declareWholeRange(desc: RangeDescriptor, out: DeclaredSpan[]): void {
  out.push({ key: desc.startKey, endKey: desc.endKey, write: true });
  const local = rangeLocalSpan(desc.startKey, desc.endKey);
  out.push({ key: local.key, endKey: local.endKey, write: true });
}

registerCommand<AdminSplitRequest>({
  kind: 'adminSplit',
  isWrite: true,
  declareKeys(_h, _req, desc, out) {
    declareWholeRange(desc, out);
    // The GC threshold it copies right: a GCRequest raising it (even one naming no keys) goes before or after.
    out.push({ key: rangeGCThresholdKey(desc.rangeId), endKey: null, write: false });
  },
  async evaluate(ctx, rw, h, req) {
    const d = ctx.desc;
    const key = req.key;
    if (compareBytes(key, d.startKey) === 0) throw new CairnError('kv.already_split', `kv: r${d.rangeId} already starts at ${key.toString('hex')}`);
    if (!isValidSplitKey(key) || compareBytes(key, META2_MAX) < 0 || compareBytes(key, d.startKey) <= 0 || compareBytes(key, d.endKey) >= 0) {
      throw new CairnError('kv.invalid_split_key', `kv: cannot split r${d.rangeId} at ${key.toString('hex')}`);
    }
    if (ctx.lease === null) throw new CairnError('kv.invalid_split_key', `kv: r${d.rangeId} has no lease to copy`);
    const left: RangeDescriptor = { ...d, endKey: key, generation: d.generation + 1 };
    // A manual split makes the new boundary sticky (api.ts RangeDescriptor.stickyBit).
    const sticky = req.expiration === undefined ? {} : { stickyBit: req.expiration };
    const right: RangeDescriptor = { rangeId: req.newRangeId, startKey: key, endKey: d.endKey, replicas: d.replicas, nextReplicaId: d.nextReplicaId, generation: d.generation + 1, ...sticky };
    // Everything in [key, end) and its range-local keys moves right.
    const local = rangeLocalSpan(key, d.endKey);
    const rightStats = await computeStats(rw, key, d.endKey);
    addStats(rightStats, await computeStats(rw, local.key, local.endKey));
    addStats(ctx.stats, rightStats, -1);
    const ts = h.timestamp;
    mvccPut(rw, rangeDescriptorKey(d.startKey), ts, encodeRangeDescriptor(left), { stats: ctx.stats });
    mvccPut(rw, rangeDescriptorKey(key), ts, encodeRangeDescriptor(right), { stats: rightStats });
    if (holdsMeta2(d)) {
      mvccPut(rw, meta2Key(key), ts, encodeRangeDescriptor(left), { stats: ctx.stats });
      mvccPut(rw, meta2Key(d.endKey), ts, encodeRangeDescriptor(right), { stats: ctx.stats });
    }
    rw.put(
      encodeMvccKey(rangeAppliedStateKey(right.rangeId)),
      encodeAppliedState({ raftAppliedIndex: RAFT_INITIAL_LOG_INDEX, raftAppliedTerm: RAFT_INITIAL_LOG_TERM, leaseAppliedIndex: 0, stats: rightStats }),
    );
    rw.put(encodeMvccKey(rangeLeaseKey(right.rangeId)), encodeLease(ctx.lease));
    // Both halves keep the GC threshold: the right half's data was collected at it too (the left keeps its key).
    const gc = rw.getSync(encodeMvccKey(rangeGCThresholdKey(d.rangeId)));
    if (gc !== undefined) rw.put(encodeMvccKey(rangeGCThresholdKey(right.rangeId)), gc);
    ctx.sideEffects.trigger = encodeRangeTrigger({ kind: 'split', left, right });
    return { kind: 'adminSplit', left, right };
  },
});
