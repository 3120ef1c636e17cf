/**
 * Helpers the transaction commands share during evaluation: the record's
 * declared span, the record-or-error reads, clipping lock spans to the range
 * and resolving the local intents of a finished transaction in the same
 * write batch as its record (CockroachDB's resolveLocalLocks).
 *
 * Ownership: src/kv (transaction layer); pure functions over the batch.
 */
import { compareBytes } from '../../storage/encoding/bytes.js';
import { transactionKey } from '../../storage/keys.js';
import { mvccResolveIntent, mvccResolveIntentRange, type LockUpdate, type MvccStats, type Txn, type TxnMeta } from '../../storage/mvcc.js';
import type { ReadWriter } from '../../storage/engine.js';
import type { RangeDescriptor } from './api.js';
import type { DeclaredSpan } from './batcheval/command.js';
import type { Timestamp } from '../util/hlc.js';
import type { EndTxnRequest, LockSpan, TxnRecord } from './txn-api.js';

export function declareRecord(anchor: Buffer, id: Buffer, write: boolean, out: DeclaredSpan[]): void {
  out.push({ key: transactionKey(anchor, id), endKey: null, write });
}

function inRange(desc: RangeDescriptor, k: Buffer): boolean {
  return compareBytes(k, desc.startKey) >= 0 && compareBytes(k, desc.endKey) < 0;
}

/**
 * The PENDING record an EndTxn of `txn` starts from (its status, in-flight
 * writes and lock spans then set by the outcome); `record` is the one stored
 * (null: none), `now` the batch timestamp.
 */
export function recordBase(txn: Txn, req: EndTxnRequest, record: TxnRecord | null, now: Timestamp): TxnRecord {
  return {
    id: txn.id,
    key: req.key,
    epoch: txn.epoch,
    status: 'pending',
    writeTimestamp: txn.writeTimestamp,
    minTimestamp: record?.minTimestamp ?? txn.minTimestamp ?? txn.writeTimestamp,
    priority: txn.priority ?? 0,
    lastHeartbeat: record?.lastHeartbeat ?? now,
    inFlightWrites: [],
    lockSpans: req.lockSpans,
    ignoredSeqNums: txn.ignoredSeqNums ?? [],
  };
}

/** The record's metadata as resolution needs it. */
export function recordMeta(rec: TxnRecord): TxnMeta {
  return { id: rec.id, epoch: rec.epoch, writeTimestamp: rec.writeTimestamp, sequence: 0, key: rec.key, priority: rec.priority, minTimestamp: rec.minTimestamp };
}

/**
 * Intents an EndTxn resolves in its own batch at most (CockroachDB's
 * lockResolutionBatchSize): the rest are left in the record's lock spans for
 * the coordinator's asynchronous resolution. Unbounded, the commit of a COPY
 * of 100,000 rows resolved all of them in ONE command — a ~110 MB write batch
 * and Raft entry, beyond the RPC frame limit (the COPY never finished).
 */
export const END_TXN_LOCAL_RESOLVE_MAX_KEYS = 500;

/**
 * Resolves the parts of `spans` inside the range, up to `maxKeys` intents
 * (points looked at count as one each); returns the spans (or parts of spans)
 * outside the range and the local ones left over, which the coordinator
 * resolves afterwards.
 */
export async function resolveLocal(rw: ReadWriter, desc: RangeDescriptor, spans: readonly LockSpan[], update: LockUpdate, stats: MvccStats, maxKeys = END_TXN_LOCAL_RESOLVE_MAX_KEYS): Promise<LockSpan[]> {
  const external: LockSpan[] = [];
  let budget = maxKeys;
  for (const s of spans) {
    if (s.endKey === null) {
      if (!inRange(desc, s.key) || budget <= 0) external.push(s);
      else {
        mvccResolveIntent(rw, s.key, update, stats);
        budget--;
      }
      continue;
    }
    const lo = compareBytes(s.key, desc.startKey) > 0 ? s.key : desc.startKey;
    const hi = compareBytes(s.endKey, desc.endKey) < 0 ? s.endKey : desc.endKey;
    if (compareBytes(lo, hi) < 0) {
      if (budget <= 0) external.push({ key: lo, endKey: hi });
      else {
        const res = await mvccResolveIntentRange(rw, lo, hi, update, { stats, max: budget });
        budget -= res.keys.length;
        if (res.resumeSpan !== null) external.push({ key: res.resumeSpan.key, endKey: hi });
      }
    }
    if (compareBytes(s.key, desc.startKey) < 0) external.push({ key: s.key, endKey: compareBytes(s.endKey, desc.startKey) < 0 ? s.endKey : desc.startKey });
    if (compareBytes(s.endKey, desc.endKey) > 0) external.push({ key: compareBytes(s.key, desc.endKey) > 0 ? s.key : desc.endKey, endKey: s.endKey });
  }
  return external;
}
