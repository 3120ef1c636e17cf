/**
 * TruncateLog: a replicated command that makes every replica drop its Raft
 * log entries ≤ index (each replica deletes its own, unreplicated, entries on
 * apply and records the truncated state). The index must be applied on the
 * proposer; its term is read from the proposer's log.
 * Spans: none.
 */
import type { TruncateLogRequest } from '../api.js';
import { registerCommand } from './command.js';

registerCommand<TruncateLogRequest>({
  kind: 'truncateLog',
  isWrite: true,
  declareKeys() {},
  evaluate(ctx, _rw, _h, req) {
    ctx.sideEffects.truncatedState = { index: req.index, term: ctx.raftTerm(req.index) };
    return { kind: 'truncateLog' };
  },
});
