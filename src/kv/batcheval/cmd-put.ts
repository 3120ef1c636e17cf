/**
 * Put: writes a value at the batch timestamp (an intent when transactional).
 * Spans: the key, write.
 */
import { mvccPut } from '../../../storage/mvcc.js';
import type { PutRequest } from '../api.js';
import { registerCommand, writeOptions } from './command-util.js';

registerCommand<PutRequest>({
  kind: 'put',
  isWrite: true,
  declareKeys(_h, req, _d, out) {
    out.push({ key: req.key, endKey: null, write: true });
  },
  evaluate(ctx, rw, h, req) {
    mvccPut(rw, req.key, h.timestamp, req.value, writeOptions(ctx, h));
    return { kind: 'put' };
  },
});
