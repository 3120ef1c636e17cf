/**
 * QueryTxn: reads a transaction record (null when there is none). The
 * concurrency hook adds the ids of the transactions waiting on it (deadlock
 * detection). Spans: the record, read.
 */
import type { QueryTxnRequest } from '../txn-api.js';
import { recordResponse } from '../txn-api.js';
import { loadTxnRecord } from '../txn-record.js';
import { declareRecord } from '../txn-eval.js';
import { registerCommand } from './command.js';

registerCommand<QueryTxnRequest>({
  kind: 'queryTxn',
  isWrite: false,
  declareKeys(_h, req, _d, out) {
    declareRecord(req.key, req.txnId, false, out);
  },
  evaluate(_ctx, r, _h, req) {
    return recordResponse('queryTxn', loadTxnRecord(r, req.key, req.txnId).record);
  },
});
