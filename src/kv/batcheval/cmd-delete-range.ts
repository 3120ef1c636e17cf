/**
 * DeleteRange: deletes every live key in [key, endKey) at the batch timestamp.
 * Spans: the span, write.
 */
import { mvccDeleteRange } from '../../../storage/mvcc.js';
import type { DeleteRangeRequest } from '../api.js';
import { registerCommand, writeOptions } from './command-util.js';

registerCommand<DeleteRangeRequest>({
  kind: 'deleteRange',
  isWrite: true,
  declareKeys(_h, req, _d, out) {
    out.push({ key: req.key, endKey: req.endKey, write: true });
  },
  async evaluate(ctx, rw, h, req) {
    const res = await mvccDeleteRange(rw, req.key, req.endKey, h.timestamp, writeOptions(ctx, h));
    return { kind: 'deleteRange', keys: req.returnKeys ? res.keys : [] };
  },
});
