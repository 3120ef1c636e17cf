/**
 * QueryIntent: is the intent of txn (id, epoch) with a write at sequence
 * `seq` on `key`, at a timestamp at or below the batch timestamp? Proves an
 * in-flight write (parallel-commit recovery, pipelining). Being a read, it
 * leaves the batch timestamp in the timestamp cache, so a missing write can
 * never land at or below it later: the query also *prevents* the write.
 * Spans: the key, read.
 */
import { tsLessEq } from '../../util/hlc.js';
import { mvccLoadHead } from '../../../storage/mvcc.js';
import type { QueryIntentRequest } from '../txn-api.js';
import { IntentMissingError } from '../txn-api.js';
import { registerCommand } from './command.js';

registerCommand<QueryIntentRequest>({
  kind: 'queryIntent',
  isWrite: false,
  declareKeys(_h, req, _d, out) {
    out.push({ key: req.key, endKey: null, write: false });
  },
  evaluate(_ctx, r, h, req) {
    const it = mvccLoadHead(r, req.key)?.intent ?? null;
    const found =
      it !== null && it.txn.id.equals(req.txnId) && it.txn.epoch === req.epoch && tsLessEq(it.txn.writeTimestamp, h.timestamp) && it.writes.some((w) => w.seq === req.seq);
    if (!found && req.errorIfMissing) throw new IntentMissingError(req.key);
    return { kind: 'queryIntent', found: found ? 1 : 0 };
  },
});
