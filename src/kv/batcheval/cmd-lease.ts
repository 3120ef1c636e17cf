/**
 * RequestLease and TransferLease: write the new lease under the range's lease
 * key and carry it as a replicated side effect; every replica installs it on
 * apply if the lease it holds then still equals `prevLease` (the command is
 * otherwise rejected — two concurrent lease requests cannot both win).
 * The lease itself is built and checked by replica-lease.ts before proposing.
 * Spans: the lease key, write. A transfer carries the outgoing holder's read
 * summary as a side effect (see api-codec.ts; Replica.transferLease takes it).
 */
import { encodeMvccKey } from '../../../storage/mvcc-key.js';
import { rangeLeaseKey } from '../../../storage/keys.js';
import { encodeLease } from '../api-codec.js';
import type { RequestLeaseRequest, TransferLeaseRequest } from '../api.js';
import { registerCommand } from './command.js';

for (const kind of ['requestLease', 'transferLease'] as const) {
  registerCommand<RequestLeaseRequest | TransferLeaseRequest>({
    kind,
    isWrite: true,
    declareKeys(h, _req, _d, out) {
      out.push({ key: rangeLeaseKey(h.rangeId), endKey: null, write: true });
    },
    evaluate(ctx, rw, _h, req) {
      rw.put(encodeMvccKey(rangeLeaseKey(ctx.rangeId)), encodeLease(req.lease));
      ctx.sideEffects.newLease = req.lease;
      if (req.kind === 'transferLease' && req.priorReadSummary !== undefined) ctx.sideEffects.priorReadSummary = req.priorReadSummary;
      return { kind };
    },
  });
}
