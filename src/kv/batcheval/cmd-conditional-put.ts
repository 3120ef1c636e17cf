/**
 * ConditionalPut: writes (or deletes, value null) a key only when its current
 * value equals `expected` (null: absent); ConditionFailedError otherwise.
 * Spans: the key, write.
 */
import { mvccConditionalPut } from '../../../storage/mvcc.js';
import type { ConditionalPutRequest } from '../api.js';
import { registerCommand, writeOptions } from './command-util.js';

registerCommand<ConditionalPutRequest>({
  kind: 'cput',
  isWrite: true,
  declareKeys(_h, req, _d, out) {
    out.push({ key: req.key, endKey: null, write: true });
  },
  evaluate(ctx, rw, h, req) {
    mvccConditionalPut(rw, req.key, h.timestamp, req.value, req.expected, { ...writeOptions(ctx, h), allowIfDoesNotExist: req.allowIfDoesNotExist });
    return { kind: 'cput' };
  },
});
