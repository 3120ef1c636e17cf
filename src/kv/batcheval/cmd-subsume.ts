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
 * Spans: the whole range (global and range-local), write.
 */
import { CairnError } from '../../util/errors.js';
import { MAX_TIMESTAMP } from '../../util/hlc.js';
import { encodeMvccKey } from '../../../storage/mvcc-key.js';
import { compareBytes } from '../../../storage/encoding/bytes.js';
import { rangeLeaseKey } from '../../../storage/keys.js';
import { encodeLease } from '../api-codec.js';
import type { Lease, SubsumeRequest } from '../api.js';
import { FROZEN_REPLICA_ID } from '../merge-trigger.js';
import { encodeRangeTrigger } from '../split-trigger-codec.js';
import { declareWholeRange } from './cmd-admin-split.js';
import { registerCommand } from './command.js';

registerCommand<SubsumeRequest>({
  kind: 'subsume',
  isWrite: true,
  declareKeys(h, _req, desc, out) {
    declareWholeRange(desc, out);
    out.push({ key: rangeLeaseKey(h.rangeId), endKey: null, write: true });
  },
  evaluate(ctx, rw, h, req) {
    if (compareBytes(req.key, ctx.desc.startKey) !== 0) throw new CairnError('kv.merge_mismatch', `kv: r${ctx.rangeId} does not start at ${req.key.toString('hex')}`);
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
