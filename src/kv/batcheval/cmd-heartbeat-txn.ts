/**
 * HeartbeatTxn: records that the coordinator is alive (lastHeartbeat = now),
 * so pushers do not treat the transaction as abandoned. Returns the record,
 * through which the coordinator learns of pushes and aborts.
 * Unknown txn → TxnNotFoundError; ABORTED → TransactionAbortedError;
 * COMMITTED → the record unchanged.
 * Spans: the record, write.
 */
import { tsLess } from '../../util/hlc.js';
import { assert } from '../../util/assert.js';
import type { HeartbeatTxnRequest } from '../txn-api.js';
import { TransactionAbortedError, TxnNotFoundError, recordResponse } from '../txn-api.js';
import { loadTxnRecord, storeTxnRecord } from '../txn-record.js';
import { declareRecord } from '../txn-eval.js';
import { registerCommand } from './command.js';

registerCommand<HeartbeatTxnRequest>({
  kind: 'heartbeatTxn',
  isWrite: true,
  declareKeys(h, req, _d, out) {
    assert(h.txn !== undefined, 'kv: heartbeatTxn without a transaction');
    declareRecord(req.key, h.txn.id, true, out);
  },
  evaluate(ctx, rw, h, req) {
    const txn = h.txn;
    assert(txn !== undefined, 'kv: heartbeatTxn without a transaction');
    const { record, versionTs } = loadTxnRecord(rw, req.key, txn.id);
    if (record === null) throw new TxnNotFoundError(txn.id);
    if (record.status === 'aborted') throw new TransactionAbortedError(txn.id);
    if (record.status === 'committed' || !tsLess(record.lastHeartbeat, req.now)) return recordResponse('heartbeatTxn', record);
    const rec = { ...record, lastHeartbeat: req.now };
    storeTxnRecord(rw, rec, h.timestamp, versionTs, ctx.stats);
    return recordResponse('heartbeatTxn', rec);
  },
});
