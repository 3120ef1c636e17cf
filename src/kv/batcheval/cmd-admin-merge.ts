/**
 * AdminMerge: the left range absorbs its right neighbour `right`, which
 * Subsume froze (CockroachDB's AdminMerge + mergeTrigger, as ONE Raft command
 * of the left range; merge-trigger.ts applies its per-store part).
 *
 * Checked on the leaseholder, from its own engine (the ranges are
 * colocated, so it holds a replica of the right range): the right range
 * starts where the left ends, its stored descriptor is `right`, its lease is
 * the frozen one, and both ranges have replicas on exactly the same stores,
 * all voters (kv.merge_mismatch / kv.merge_not_frozen / kv.merge_not_colocated
 * otherwise). The merged descriptor keeps the left's id and gets generation
 * max(left, right) + 1. Writes: merged descriptor, deletion of the right's
 * descriptor and replicated range-ID state, the right's stats added to the
 * left's, meta2 when the left holds it, and the higher of the two GC
 * thresholds as the merged range's (a side effect every replica adopts).
 * Spans: the left range (global and range-local) and its GC threshold key, write.
 */
import { CairnError } from '../../util/errors.js';
import { MAX_TIMESTAMP, tsLess } from '../../util/hlc.js';
import { encodeMvccKey } from '../../../storage/mvcc-key.js';
import { compareBytes } from '../../../storage/encoding/bytes.js';
import { meta2Key, rangeAppliedStateKey, rangeDescriptorKey, rangeGCThresholdKey, rangeIdReplicatedSpan, rangeLeaseKey } from '../../../storage/keys.js';
import { addStats } from '../../../storage/mvcc-stats.js';
import { mvccDelete, mvccGet, mvccPut } from '../../../storage/mvcc.js';
import { decodeAppliedState, decodeLease, decodeTimestamp, encodeRangeDescriptor } from '../api-codec.js';
import type { AdminMergeRequest, RangeDescriptor } from '../api.js';
import { FROZEN_REPLICA_ID } from '../merge-trigger.js';
import { encodeRangeTrigger } from '../split-trigger-codec.js';
import { declareWholeRange, holdsMeta2 } from './cmd-admin-split.js';
import { registerCommand } from './command.js';

function storesOf(d: RangeDescriptor): string {
  return d.replicas
    .map((r) => (r.type === 0 ? r.storeId : -r.storeId))
    .sort((a, b) => a - b)
    .join(',');
}

/** Whether two ranges can merge: replicas on exactly the same stores, all voters. */
export function colocated(l: RangeDescriptor, r: RangeDescriptor): boolean {
  return storesOf(l) === storesOf(r) && l.replicas.every((x) => x.type === 0);
}

registerCommand<AdminMergeRequest>({
  kind: 'adminMerge',
  isWrite: true,
  declareKeys(_h, _req, desc, out) {
    declareWholeRange(desc, out);
    out.push({ key: rangeGCThresholdKey(desc.rangeId), endKey: null, write: true });
  },
  async evaluate(ctx, rw, h, req) {
    const l = ctx.desc;
    const r = req.right;
    const mismatch = (why: string): CairnError => new CairnError('kv.merge_mismatch', `kv: cannot merge r${l.rangeId} with r${r.rangeId}: ${why}`);
    if (compareBytes(req.key, l.startKey) !== 0) throw mismatch('the left range does not start at the key');
    if (compareBytes(l.endKey, r.startKey) !== 0) throw mismatch('not adjacent');
    const stored = (await mvccGet(rw, rangeDescriptorKey(r.startKey), MAX_TIMESTAMP, { inconsistent: true })).value?.value;
    if (stored == null || !stored.equals(encodeRangeDescriptor(r))) throw mismatch('its descriptor changed');
    const leaseRaw = rw.getSync(encodeMvccKey(rangeLeaseKey(r.rangeId)));
    if (leaseRaw === undefined || decodeLease(leaseRaw).replica.replicaId !== FROZEN_REPLICA_ID) throw new CairnError('kv.merge_not_frozen', `kv: r${r.rangeId} is not frozen for the merge`);
    if (!colocated(l, r)) throw new CairnError('kv.merge_not_colocated', `kv: r${l.rangeId} and r${r.rangeId} are not on the same stores`);
    const asRaw = rw.getSync(encodeMvccKey(rangeAppliedStateKey(r.rangeId)));
    if (asRaw === undefined) throw mismatch('no applied state');
    const merged: RangeDescriptor = { ...l, endKey: r.endKey, generation: Math.max(l.generation, r.generation) + 1 };
    addStats(ctx.stats, decodeAppliedState(asRaw).stats);
    const ts = h.timestamp;
    mvccPut(rw, rangeDescriptorKey(l.startKey), ts, encodeRangeDescriptor(merged), { stats: ctx.stats });
    mvccDelete(rw, rangeDescriptorKey(r.startKey), ts, { stats: ctx.stats });
    // The merged range keeps the higher GC threshold: the right's data below it may be gone (CockroachDB's merge
    // trigger takes the max too). Read before the right's range-ID state is deleted below.
    const rightGc = rw.getSync(encodeMvccKey(rangeGCThresholdKey(r.rangeId)));
    if (rightGc !== undefined && tsLess(ctx.gcThreshold, decodeTimestamp(rightGc))) {
      rw.put(encodeMvccKey(rangeGCThresholdKey(l.rangeId)), rightGc);
      ctx.sideEffects.gcThreshold = decodeTimestamp(rightGc);
    }
    const rid = rangeIdReplicatedSpan(r.rangeId);
    const doomed: Buffer[] = [];
    const it = rw.iterator({ gte: encodeMvccKey(rid.key), lt: encodeMvccKey(rid.endKey) });
    try {
      for (;;) {
        const rows = await it.nextBatch(256);
        if (rows.length === 0) break;
        for (const { key } of rows) doomed.push(Buffer.from(key));
      }
    } finally {
      await it.close();
    }
    for (const k of doomed) rw.delete(k);
    if (holdsMeta2(l)) {
      mvccDelete(rw, meta2Key(l.endKey), ts, { stats: ctx.stats });
      mvccPut(rw, meta2Key(r.endKey), ts, encodeRangeDescriptor(merged), { stats: ctx.stats });
    }
    ctx.sideEffects.trigger = encodeRangeTrigger({ kind: 'merge', left: merged, right: r });
    return { kind: 'adminMerge', desc: merged };
  },
});
