/**
 * PushTxn: a waiter moves a conflicting transaction out of its way
 * (CockroachDB's PushTxn): abort it, or push its write timestamp to
 * `pushTo`, when the pushee's record lets it (kv/concurrency/push-policy.ts:
 * finalized → nothing to do; expired heartbeat or lower priority or force →
 * push; STAGING → only recovery may decide; otherwise the pusher waits).
 * A pushee without a record is judged by the intent's metadata (its start
 * as last activity); a successful push writes the record (ABORTED, or
 * PENDING at the pushed timestamp) so the pushee learns of it.
 * The response says whether the push took effect and carries the record.
 * Spans: the pushee's record, write.
 */
import { tsMax } from '../../util/hlc.js';
import { decidePush } from '../concurrency/push-policy.js';
import type { PushTxnRequest, TxnRecord } from '../txn-api.js';
import { recordResponse } from '../txn-api.js';
import { loadTxnRecord, recordLastActive, storeTxnRecord, txnLiveness } from '../txn-record.js';
import { declareRecord } from '../txn-eval.js';
import { registerCommand } from './command.js';

registerCommand<PushTxnRequest>({
  kind: 'pushTxn',
  isWrite: true,
  declareKeys(_h, req, _d, out) {
    declareRecord(req.key, req.pushee.id, true, out);
  },
  evaluate(ctx, rw, h, req) {
    const p = req.pushee;
    const { record, versionTs } = loadTxnRecord(rw, req.key, p.id);
    // A restarted pushee's intents carry a later epoch than its record: the record takes it, so the pushed-timestamp
    // resolution of those intents applies (it skips intents of an epoch above the update's).
    const cur: TxnRecord = record !== null ? (record.epoch < p.epoch && record.status !== 'committed' ? { ...record, epoch: p.epoch } : record) : {
      id: p.id,
      key: req.key,
      epoch: p.epoch,
      status: 'pending',
      writeTimestamp: p.writeTimestamp,
      minTimestamp: p.minTimestamp ?? p.writeTimestamp,
      priority: p.priority ?? 0,
      lastHeartbeat: p.minTimestamp ?? p.writeTimestamp,
      inFlightWrites: [],
      lockSpans: [],
      ignoredSeqNums: [],
    };
    const d = decidePush(
      { status: cur.status, priority: cur.priority, writeTimestamp: cur.writeTimestamp, lastActive: recordLastActive(cur) },
      { pushType: req.pushType, pusherPriority: req.pusherPriority, pushTo: req.pushTo, now: req.now, expiryMicros: txnLiveness.expiryMicros, force: req.force },
    );
    if (d.kind === 'already-finalized' || d.kind === 'already-pushed') return recordResponse('pushTxn', cur, { pushed: true });
    if (d.kind !== 'push') return recordResponse('pushTxn', record, { pushed: false });
    const rec: TxnRecord = req.pushType === 'abort' ? { ...cur, status: 'aborted' } : { ...cur, writeTimestamp: tsMax(cur.writeTimestamp, req.pushTo) };
    storeTxnRecord(rw, rec, h.timestamp, versionTs, ctx.stats);
    return recordResponse('pushTxn', rec, { pushed: true });
  },
});
