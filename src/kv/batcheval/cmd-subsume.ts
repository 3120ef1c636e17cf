/**
 * Subsume: freezes the range for a merge into its left neighbour
 * (CockroachDB's Subsume, made durable): the lease passes to replica id 0 —
 * nobody — with an expiration that never comes, installed on apply by a
 * freeze trigger (merge-trigger.ts stageFreezeTrigger). From the moment it applies no replica of the
 * range owns a lease or can acquire one, so no command can ever apply on the
 * range again: its state is final on every replica that applied the freeze,
 * across restarts. The merge (cmd-admin-merge.ts) then absorbs it; a merge
 * driver that died after the freeze is rolled forward by the merge queue
 * (merge.ts), never backward — a frozen range is only ever merged.
 * Refused unless `key` is the range's start (kv.merge_mismatch).
 *
 * Colocation, checked here (CockroachDB's Subsume checks the LHS's replica
 * set inside the merge transaction): with `left` — the left neighbour as
 * the merge driver read it — the freeze is refused (kv.merge_replicas_changed,
 * which the driver retries from a fresh lookup) unless this range's replicas,
 * read under its whole-range latch (so no replica change of this range can
 * interleave: AdminChangeReplicas latches the descriptor key), are on
 * exactly left's stores, all voters; and unless this store's replica of the
 * left range, which it must have when they are colocated, still holds
 * `left` or an older descriptor (a newer one: the left changed after the
 * driver read it). Without this check a replica change between the driver's
 * check and the freeze left the range frozen and unmergeable: a nobody-lease
 * forever (test/kv-ranges/merge-replica-change-race.test.ts). The left's
 * side after the freeze: cmd-admin-change-replicas.ts refuses a change of a
 * range whose right neighbour is frozen.
 * Spans: the whole range (global and range-local), write.
 */
import { CairnError } from '../../util/errors.js';
import { MAX_TIMESTAMP } from '../../util/hlc.js';
import { encodeMvccKey } from '../../../storage/mvcc-key.js';
import { compareBytes } from '../../../storage/encoding/bytes.js';
import { rangeDescriptorKey, rangeLeaseKey } from '../../../storage/keys.js';
import type { ReadWriter } from '../../../storage/engine.js';
import { mvccGet } from '../../../storage/mvcc.js';
import { decodeRangeDescriptor, encodeLease } from '../api-codec.js';
import type { Lease, RangeDescriptor, SubsumeRequest } from '../api.js';
import { FROZEN_REPLICA_ID } from '../merge-trigger.js';
import { encodeRangeTrigger } from '../split-trigger-codec.js';
import { colocated } from './cmd-admin-merge.js';
import { declareWholeRange } from './cmd-admin-split.js';
import { registerCommand } from './command.js';

const replicasChanged = (r: RangeDescriptor, l: RangeDescriptor, why: string): CairnError =>
  new CairnError('kv.merge_replicas_changed', `kv: cannot freeze r${r.rangeId} for a merge into r${l.rangeId}: ${why}`);

/** The colocation check of the header: `r` is this range's descriptor, `l` the driver's left neighbour. */
async function checkLeft(rw: ReadWriter, r: RangeDescriptor, l: RangeDescriptor): Promise<void> {
  if (compareBytes(l.endKey, r.startKey) !== 0) throw new CairnError('kv.merge_mismatch', `kv: r${l.rangeId} does not end where r${r.rangeId} starts`);
  if (!colocated(l, r)) throw replicasChanged(r, l, 'the replicas are not on the same stores');
  const raw = (await mvccGet(rw, rangeDescriptorKey(l.startKey), MAX_TIMESTAMP, { inconsistent: true })).value?.value;
  if (raw == null) throw replicasChanged(r, l, 'this store holds no replica of the left range');
  const stored = decodeRangeDescriptor(raw);
  if (stored.rangeId !== l.rangeId || stored.generation > l.generation) throw replicasChanged(r, l, `the left range is at generation ${stored.generation}, not ${l.generation}`);
}

registerCommand<SubsumeRequest>({
  kind: 'subsume',
  isWrite: true,
  declareKeys(h, _req, desc, out) {
    declareWholeRange(desc, out);
    out.push({ key: rangeLeaseKey(h.rangeId), endKey: null, write: true });
  },
  async evaluate(ctx, rw, h, req) {
    if (compareBytes(req.key, ctx.desc.startKey) !== 0) throw new CairnError('kv.merge_mismatch', `kv: r${ctx.rangeId} does not start at ${req.key.toString('hex')}`);
    if (req.left !== undefined) await checkLeft(rw, ctx.desc, req.left);
    const frozen: Lease = {
      replica: { nodeId: 0, storeId: 0, replicaId: FROZEN_REPLICA_ID, type: 0 },
      start: h.timestamp,
      expiration: MAX_TIMESTAMP,
      sequence: (ctx.lease?.sequence ?? 0) + 1,
    };
    rw.put(encodeMvccKey(rangeLeaseKey(ctx.rangeId)), encodeLease(frozen));
    ctx.sideEffects.trigger = encodeRangeTrigger({ kind: 'freeze', left: ctx.desc, right: ctx.desc });
    return { kind: 'subsume', desc: ctx.desc };
  },
});
