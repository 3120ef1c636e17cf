/**
 * BeginTxn: writes the transaction's PENDING record on its anchor's range
 * (the coordinator sends it with its first heartbeat). Idempotent for a
 * PENDING/STAGING record of the same txn; an ABORTED record (a pusher got
 * there first) is TransactionAbortedError; a COMMITTED one TransactionStatusError.
 * Spans: the record, write.
 */
import { tsMax } from '../../util/hlc.js';
import { assert } from '../../util/assert.js';
import type { BeginTxnRequest, TxnRecord } from '../txn-api.js';
import { TransactionAbortedError, TransactionStatusError, recordResponse } from '../txn-api.js';
import { loadTxnRecord, storeTxnRecord } from '../txn-record.js';
import { declareRecord } from '../txn-eval.js';
import { registerCommand } from './command.js';

registerCommand<BeginTxnRequest>({
  kind: 'beginTxn',
  isWrite: true,
  declareKeys(h, req, _d, out) {
    assert(h.txn !== undefined, 'kv: beginTxn without a transaction');
    declareRecord(req.key, h.txn.id, true, out);
  },
  evaluate(ctx, rw, h, req) {
    const txn = h.txn;
    assert(txn !== undefined, 'kv: beginTxn without a transaction');
    const { record, versionTs } = loadTxnRecord(rw, req.key, txn.id);
    if (record !== null) {
      if (record.status === 'aborted') throw new TransactionAbortedError(txn.id);
      if (record.status === 'committed') throw new TransactionStatusError(txn.id, record.status, 'begin');
      return recordResponse('beginTxn', record);
    }
    const rec: TxnRecord = {
      id: txn.id,
      key: req.key,
      epoch: txn.epoch,
      status: 'pending',
      writeTimestamp: txn.writeTimestamp,
      minTimestamp: txn.minTimestamp ?? txn.writeTimestamp,
      priority: txn.priority ?? 0,
      lastHeartbeat: tsMax(h.timestamp, txn.writeTimestamp),
      inFlightWrites: [],
      lockSpans: [],
      ignoredSeqNums: txn.ignoredSeqNums ?? [],
    };
    storeTxnRecord(rw, rec, h.timestamp, versionTs, ctx.stats);
    return recordResponse('beginTxn', rec);
  },
});
