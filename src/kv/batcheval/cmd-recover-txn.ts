/**
 * RecoverTxn: decides a STAGING transaction whose coordinator went quiet
 * (CockroachDB's RecoverTxn), after the recoverer queried every in-flight
 * write with QueryIntent (which also prevents the missing ones):
 * all found → COMMITTED (it was implicitly committed); one missing →
 * ABORTED. A record no longer STAGING at the queried epoch and timestamp
 * (finalized, restarted, re-staged higher) is returned unchanged.
 * No record → TxnNotFoundError. Spans: the record, write.
 */
import { tsEqual } from '../../util/hlc.js';
import type { RecoverTxnRequest } from '../txn-api.js';
import { TxnNotFoundError, recordResponse } from '../txn-api.js';
import { loadTxnRecord, storeTxnRecord } from '../txn-record.js';
import { declareRecord } from '../txn-eval.js';
import { registerCommand } from './command.js';

registerCommand<RecoverTxnRequest>({
  kind: 'recoverTxn',
  isWrite: true,
  declareKeys(_h, req, _d, out) {
    declareRecord(req.key, req.txn.id, true, out);
  },
  evaluate(ctx, rw, h, req) {
    const { record, versionTs } = loadTxnRecord(rw, req.key, req.txn.id);
    if (record === null) throw new TxnNotFoundError(req.txn.id);
    if (record.status !== 'staging' || record.epoch !== req.txn.epoch || !tsEqual(record.writeTimestamp, req.txn.writeTimestamp)) return recordResponse('recoverTxn', record);
    const rec = { ...record, status: req.implicitlyCommitted ? ('committed' as const) : ('aborted' as const), inFlightWrites: [] };
    storeTxnRecord(rw, rec, h.timestamp, versionTs, ctx.stats);
    return recordResponse('recoverTxn', rec);
  },
});
