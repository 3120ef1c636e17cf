/**
 * ResolveIntent / ResolveIntentRange: commit (at the txn's write timestamp),
 * abort, or move up (pending) the intents of a finished or pushed
 * transaction (storage/mvcc.ts mvccResolveIntent[Range]). Resolving an
 * intent that is gone is a no-op (found 0), or IntentMissingError when
 * `strict`. ResolveIntentRange resolves at most RESOLVE_INTENT_RANGE_MAX_KEYS
 * intents per command and answers a resume key for the rest (a condensed
 * lock span of a bulk transaction covers 100,000 intents: resolved in one
 * command they made one ~110 MB Raft entry, beyond the RPC frame limit —
 * COPY of 100,000 rows never finished). The caller sends the rest again.
 * Spans: the key / span, write.
 */
import { mvccResolveIntent, mvccResolveIntentRange } from '../../../storage/mvcc.js';
import type { ResolveIntentRangeRequest, ResolveIntentRequest } from '../txn-api.js';
import { IntentMissingError } from '../txn-api.js';
import { registerCommand } from './command.js';

/** Intents one ResolveIntentRange resolves at most (CockroachDB pages range resolution the same way). */
export const RESOLVE_INTENT_RANGE_MAX_KEYS = 1000;

registerCommand<ResolveIntentRequest>({
  kind: 'resolveIntent',
  isWrite: true,
  declareKeys(_h, req, _d, out) {
    out.push({ key: req.key, endKey: null, write: true });
  },
  evaluate(ctx, rw, _h, req) {
    const found = mvccResolveIntent(rw, req.key, { txn: req.txn, status: req.status, ignoredSeqNums: req.ignoredSeqNums }, ctx.stats);
    if (!found && req.strict) throw new IntentMissingError(req.key);
    return { kind: 'resolveIntent', found: found ? 1 : 0 };
  },
});

registerCommand<ResolveIntentRangeRequest>({
  kind: 'resolveIntentRange',
  isWrite: true,
  declareKeys(_h, req, _d, out) {
    out.push({ key: req.key, endKey: req.endKey, write: true });
  },
  async evaluate(ctx, rw, _h, req) {
    const res = await mvccResolveIntentRange(rw, req.key, req.endKey, { txn: req.txn, status: req.status, ignoredSeqNums: req.ignoredSeqNums }, { stats: ctx.stats, max: RESOLVE_INTENT_RANGE_MAX_KEYS });
    return { kind: 'resolveIntentRange', found: res.keys.length, resumeKey: res.resumeSpan?.key ?? null };
  },
});
