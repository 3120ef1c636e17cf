/**
 * EndTxn: commits or aborts the transaction (CockroachDB's EndTxn).
 *
 *   abort            → ABORTED record; local intents resolved in this batch
 *                      (at most END_TXN_LOCAL_RESOLVE_MAX_KEYS of them, here and
 *                      below: the rest stay in the record's lock spans, which
 *                      the coordinator resolves asynchronously)
 *   commit, no in-flight write outside this batch (1PC when every lock span is on this range)
 *                    → COMMITTED, local intents resolved in this batch; with
 *                      no record before, no record is written at all (1PC:
 *                      the batch's intents never reach the engine as intents)
 *   commit, in-flight writes on other ranges (parallel commit)
 *                    → STAGING record listing them (the writes of this
 *                      batch on this range are durable with the record)
 *   commit, record STAGING and no in-flight writes → COMMITTED (the
 *                      coordinator's asynchronous finalization)
 *   commit otherwise → COMMITTED record listing the lock spans still to resolve
 * Commit-time checks: an ABORTED record → TransactionAbortedError; a record
 * pushed above the txn's write timestamp → TxnRetryError(RETRY_SERIALIZABLE)
 * (the coordinator refreshes and retries); a record of a later epoch or a
 * rollback of a COMMITTED txn → TransactionStatusError.
 * Spans: the record and every lock span, write.
 */
import { assert } from '../../util/assert.js';
import { formatTimestamp, tsLess } from '../../util/hlc.js';
import type { EndTxnRequest } from '../txn-api.js';
import { TransactionAbortedError, TransactionStatusError, TxnRetryError, recordResponse } from '../txn-api.js';
import { loadTxnRecord, storeTxnRecord } from '../txn-record.js';
import { declareRecord, recordBase, recordMeta, resolveLocal } from '../txn-eval.js';
import { registerCommand } from './command.js';

registerCommand<EndTxnRequest>({
  kind: 'endTxn',
  isWrite: true,
  declareKeys(h, req, _d, out) {
    assert(h.txn !== undefined, 'kv: endTxn without a transaction');
    declareRecord(req.key, h.txn.id, true, out);
    for (const s of req.lockSpans) out.push({ key: s.key, endKey: s.endKey, write: true });
  },
  async evaluate(ctx, rw, h, req) {
    const txn = h.txn;
    assert(txn !== undefined, 'kv: endTxn without a transaction');
    const { record, versionTs } = loadTxnRecord(rw, req.key, txn.id);
    if (record !== null) {
      if (record.status === 'aborted') {
        if (!req.commit) return recordResponse('endTxn', record);
        throw new TransactionAbortedError(txn.id);
      }
      if (record.status === 'committed') {
        if (req.commit && record.epoch === txn.epoch) return recordResponse('endTxn', record);
        throw new TransactionStatusError(txn.id, record.status, req.commit ? 'commit' : 'rollback');
      }
      if (record.epoch > txn.epoch) throw new TransactionStatusError(txn.id, record.status, `epoch ${txn.epoch} ended below the record's epoch ${record.epoch}`);
    }
    const base = recordBase(txn, req, record, h.timestamp);
    if (!req.commit) {
      const rest = await resolveLocal(rw, ctx.desc, req.lockSpans, { txn: recordMeta(base), status: 'aborted' }, ctx.stats);
      const rec = { ...base, status: 'aborted' as const, lockSpans: rest };
      storeTxnRecord(rw, rec, h.timestamp, versionTs, ctx.stats);
      return recordResponse('endTxn', rec);
    }
    if (record !== null && tsLess(txn.writeTimestamp, record.writeTimestamp)) {
      throw new TxnRetryError('RETRY_SERIALIZABLE', `txn pushed from ${formatTimestamp(txn.writeTimestamp)} to ${formatTimestamp(record.writeTimestamp)}`);
    }
    // The in-flight writes of this very batch were taken out (concurrency-manager.ts rewriteBatch): the rest are elsewhere.
    const external = req.inFlightWrites;
    if (external.length > 0) {
      const rec = { ...base, status: 'staging' as const, inFlightWrites: external };
      storeTxnRecord(rw, rec, h.timestamp, versionTs, ctx.stats);
      return recordResponse('endTxn', rec);
    }
    const committed = { ...base, status: 'committed' as const };
    const rest = await resolveLocal(rw, ctx.desc, req.lockSpans, { txn: recordMeta(committed), status: 'committed', ignoredSeqNums: base.ignoredSeqNums }, ctx.stats);
    const onePhase = record === null && rest.length === 0;
    const rec = { ...committed, lockSpans: rest };
    if (!onePhase) storeTxnRecord(rw, rec, h.timestamp, versionTs, ctx.stats);
    return recordResponse('endTxn', rec, { onePhase });
  },
});
