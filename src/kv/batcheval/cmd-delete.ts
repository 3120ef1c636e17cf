/**
 * Delete: writes a tombstone at the batch timestamp (an intent when transactional).
 * Spans: the key, write.
 */
import { mvccDelete } from '../../../storage/mvcc.js';
import type { DeleteRequest } from '../api.js';
import { registerCommand, writeOptions } from './command-util.js';

registerCommand<DeleteRequest>({
  kind: 'delete',
  isWrite: true,
  declareKeys(_h, req, _d, out) {
    out.push({ key: req.key, endKey: null, write: true });
  },
  evaluate(ctx, rw, h, req) {
    mvccDelete(rw, req.key, h.timestamp, writeOptions(ctx, h));
    return { kind: 'delete' };
  },
});
