/**
 * Recovery of a STAGING transaction record whose coordinator went quiet
 * (CockroachDB's txnrecovery): the parallel-commit protocol's other half.
 *
 *   QueryIntent every in-flight write at the staging timestamp (one batch;
 *   a missing write is thereby *prevented*: the query leaves the staging
 *   timestamp in that range's timestamp cache, so the write can only land
 *   above it and can no longer satisfy the implicit commit)
 *   all found → RecoverTxn(implicitlyCommitted)  → COMMITTED
 *   any missing → RecoverTxn(not)                 → ABORTED
 * then the record's intents are resolved to that outcome (by the caller).
 * The coordinator itself runs the first half (queryInFlightWrites) on its own
 * record after a commit attempt that did not cleanly succeed
 * (client/txn-coord-sender.ts settleStaging).
 * Ownership: stateless; I/O through the Sender.
 */
import { ZERO_TIMESTAMP } from '../util/hlc.js';
import type { Request } from './api.js';
import type { Sender } from './kv-client.js';
import type { TxnFoundResponse, TxnRecord, TxnRecordResponse } from './txn-api.js';
import { recordMeta } from './txn-eval.js';

/**
 * Whether every in-flight write of the STAGING record `rec` is there, at or
 * below the staging timestamp (one QueryIntent batch). A write found missing
 * is thereby prevented: it can never land at or below that timestamp.
 */
export async function queryInFlightWrites(sender: Sender, rec: TxnRecord): Promise<boolean> {
  if (rec.inFlightWrites.length === 0) return true;
  const qs: Request[] = rec.inFlightWrites.map((w) => ({ kind: 'queryIntent', key: w.key, txnId: rec.id, epoch: rec.epoch, seq: w.seq, errorIfMissing: false }));
  const res = await sender.send({ header: { rangeId: 0, timestamp: rec.writeTimestamp }, requests: qs });
  return res.responses.every((r) => (r as TxnFoundResponse).found > 0);
}

/** Decides a STAGING record; returns the record after recovery (COMMITTED or ABORTED, or whatever it became meanwhile). */
export async function recoverTxn(sender: Sender, rec: TxnRecord): Promise<TxnRecord | null> {
  const all = await queryInFlightWrites(sender, rec);
  const res = await sender.send({
    header: { rangeId: 0, timestamp: ZERO_TIMESTAMP },
    requests: [{ kind: 'recoverTxn', key: rec.key, txn: recordMeta(rec), implicitlyCommitted: all }],
  });
  return (res.responses[0] as TxnRecordResponse).record;
}
