/**
 * The transaction layer's KV API: the request/response variants of the txn
 * commands (batcheval/cmd-*-txn.ts, cmd-query-intent.ts, cmd-resolve-intent*.ts,
 * cmd-refresh*.ts), the transaction record as commands see it, and the
 * typed errors of the layer (CockroachDB's roachpb txn requests, reduced).
 *
 *   client (TxnCoordSender, txn-pusher) ──► BeginTxn / HeartbeatTxn / EndTxn
 *                                           PushTxn / QueryTxn / RecoverTxn  on the anchor's range
 *                                           QueryIntent / ResolveIntent(Range) / Refresh(Range)
 *                                                                            on the key's range
 * Contracts:
 *   - `key` of a record command is the transaction's anchor key (a user
 *     key); the record lives at keys.transactionKey(anchor, id) on the range
 *     that holds the anchor (txn-record.ts).
 *   - Requests are plain readonly objects tagged by `kind`, encoded by
 *     txn-codec.ts (api-codec.ts delegates these kinds to it).
 *
 * Errors (CairnError, code prefixed `kv.`):
 *   TransactionAbortedError  kv.txn_aborted      retryable (40001): the record is ABORTED
 *   TxnNotFoundError         kv.txn_not_found    a heartbeat/recovery found no record
 *   TransactionStatusError   kv.txn_status       a commit/heartbeat on a finalized txn
 *   TxnRetryError            kv.txn_retry        retryable (40001) with a typed reason
 *   RefreshFailedError       kv.refresh_failed   retryable: a read span changed since refreshFrom
 *   IntentMissingError       kv.intent_missing   a proven/strict-resolved intent is gone
 *   TimestampInFutureError   kv.timestamp_in_future  a request beyond now + max offset
 *
 * Ownership: src/kv (transaction layer).
 */
import { CairnError } from '../util/errors.js';
import { formatTimestamp, type Timestamp } from '../util/hlc.js';
import type { SeqRange, TxnMeta, TxnStatus } from '../../storage/mvcc.js';

export type TxnRecordStatus = 'pending' | 'staging' | 'committed' | 'aborted';

/** A write a STAGING record waits on: the intent at `key` written at sequence `seq`. */
export interface InFlightWrite {
  readonly key: Buffer;
  readonly seq: number;
}

/** A span of intents (endKey null: one key). */
export interface LockSpan {
  readonly key: Buffer;
  readonly endKey: Buffer | null;
}

/** A transaction record (txn-record.ts draws its encoding). */
export interface TxnRecord {
  readonly id: Buffer;
  /** The anchor key. */
  readonly key: Buffer;
  readonly epoch: number;
  readonly status: TxnRecordStatus;
  /** Provisional commit timestamp (the commit timestamp once COMMITTED). */
  readonly writeTimestamp: Timestamp;
  readonly minTimestamp: Timestamp;
  readonly priority: number;
  readonly lastHeartbeat: Timestamp;
  readonly inFlightWrites: readonly InFlightWrite[];
  readonly lockSpans: readonly LockSpan[];
  readonly ignoredSeqNums: readonly SeqRange[];
}

export interface BeginTxnRequest {
  readonly kind: 'beginTxn';
  readonly key: Buffer;
}
export interface HeartbeatTxnRequest {
  readonly kind: 'heartbeatTxn';
  readonly key: Buffer;
  readonly now: Timestamp;
}
export interface EndTxnRequest {
  readonly kind: 'endTxn';
  readonly key: Buffer;
  readonly commit: boolean;
  /** Parallel commit: the writes of this batch (and any unproven earlier ones). */
  readonly inFlightWrites: readonly InFlightWrite[];
  /** Every span the transaction wrote (for intent resolution). */
  readonly lockSpans: readonly LockSpan[];
}
export type PushType = 'abort' | 'timestamp';
export interface PushTxnRequest {
  readonly kind: 'pushTxn';
  /** The pushee's anchor. */
  readonly key: Buffer;
  readonly pushee: TxnMeta;
  /** The pusher's id (16 bytes; empty for a non-transactional pusher). */
  readonly pusherId: Buffer;
  readonly pusherPriority: number;
  readonly pushType: PushType;
  /** Timestamp push: the pushee must move above this. */
  readonly pushTo: Timestamp;
  readonly now: Timestamp;
  /** Push regardless of priority/liveness (deadlock breaking). */
  readonly force: boolean;
  /** Hex ids of the transactions (transitively) waiting on the pusher. */
  readonly dependents: readonly string[];
}
export interface QueryTxnRequest {
  readonly kind: 'queryTxn';
  readonly key: Buffer;
  readonly txnId: Buffer;
}
export interface QueryIntentRequest {
  readonly kind: 'queryIntent';
  readonly key: Buffer;
  readonly txnId: Buffer;
  readonly epoch: number;
  readonly seq: number;
  /** Throw IntentMissingError instead of answering found=false. */
  readonly errorIfMissing: boolean;
}
export interface ResolveIntentRequest {
  readonly kind: 'resolveIntent';
  readonly key: Buffer;
  readonly txn: TxnMeta;
  readonly status: TxnStatus;
  readonly ignoredSeqNums: readonly SeqRange[];
  /** Throw IntentMissingError when no intent of txn is there. */
  readonly strict: boolean;
}
export interface ResolveIntentRangeRequest {
  readonly kind: 'resolveIntentRange';
  readonly key: Buffer;
  readonly endKey: Buffer;
  readonly txn: TxnMeta;
  readonly status: TxnStatus;
  readonly ignoredSeqNums: readonly SeqRange[];
}
export interface RecoverTxnRequest {
  readonly kind: 'recoverTxn';
  readonly key: Buffer;
  readonly txn: TxnMeta;
  /** Every in-flight write was found: the txn is implicitly committed. */
  readonly implicitlyCommitted: boolean;
}
export interface RefreshRequest {
  readonly kind: 'refresh';
  readonly key: Buffer;
  /** No write in (refreshFrom, header.timestamp] may exist on the key. */
  readonly refreshFrom: Timestamp;
}
export interface RefreshRangeRequest {
  readonly kind: 'refreshRange';
  readonly key: Buffer;
  readonly endKey: Buffer;
  readonly refreshFrom: Timestamp;
}

export type TxnRequest =
  | BeginTxnRequest
  | HeartbeatTxnRequest
  | EndTxnRequest
  | PushTxnRequest
  | QueryTxnRequest
  | QueryIntentRequest
  | ResolveIntentRequest
  | ResolveIntentRangeRequest
  | RecoverTxnRequest
  | RefreshRequest
  | RefreshRangeRequest;

export type TxnRequestKind = TxnRequest['kind'];

export const TXN_REQUEST_KINDS: readonly TxnRequestKind[] = ['beginTxn', 'heartbeatTxn', 'endTxn', 'pushTxn', 'queryTxn', 'queryIntent', 'resolveIntent', 'resolveIntentRange', 'recoverTxn', 'refresh', 'refreshRange'];

/** beginTxn, heartbeatTxn, endTxn, pushTxn, queryTxn, recoverTxn: the record after the command (null: none). */
export interface TxnRecordResponse {
  readonly kind: 'beginTxn' | 'heartbeatTxn' | 'endTxn' | 'pushTxn' | 'queryTxn' | 'recoverTxn';
  readonly record: TxnRecord | null;
  /** pushTxn: the push succeeded (or the pushee is finalized / already pushed). */
  readonly pushed: boolean;
  /** endTxn: committed in one phase (no record was ever written). */
  readonly onePhase: boolean;
  /** pushTxn / queryTxn: hex ids of transactions waiting on this one (deadlock detection). */
  readonly dependents: readonly string[];
}
export interface TxnFoundResponse {
  readonly kind: 'queryIntent' | 'resolveIntent' | 'resolveIntentRange' | 'refresh' | 'refreshRange';
  /** queryIntent/resolveIntent: found; resolveIntentRange: count of intents resolved. */
  readonly found: number;
  /**
   * resolveIntentRange: where to continue when the command stopped at its
   * limit (cmd-resolve-intent.ts RESOLVE_INTENT_RANGE_MAX_KEYS; the rest of
   * the span, up to its end key, still holds intents); null or absent: done.
   */
  readonly resumeKey?: Buffer | null;
}
export type TxnResponse = TxnRecordResponse | TxnFoundResponse;

export function recordResponse(kind: TxnRecordResponse['kind'], record: TxnRecord | null, extra: { pushed?: boolean; onePhase?: boolean } = {}): TxnRecordResponse {
  return { kind, record, pushed: extra.pushed ?? false, onePhase: extra.onePhase ?? false, dependents: [] };
}

// ---- errors ----------------------------------------------------------------------

/** Why a transaction must restart (CockroachDB's TransactionRetryReason, plus abort). */
export type RetryReason = 'RETRY_WRITE_TOO_OLD' | 'RETRY_SERIALIZABLE' | 'RETRY_UNCERTAINTY' | 'ABORT_REASON_ABORTED' | 'RETRY_COMMIT_DEADLINE';

export class TransactionAbortedError extends CairnError {
  override name = 'TransactionAbortedError';
  constructor(readonly txnId: Buffer, why = 'ABORT_REASON_ABORTED_RECORD_FOUND') {
    super('kv.txn_aborted', `restart transaction: TransactionAbortedError(${why}): txn ${txnId.toString('hex').slice(0, 8)}`, { retryable: true, sqlState: '40001' });
  }
}

export class TxnNotFoundError extends CairnError {
  override name = 'TxnNotFoundError';
  constructor(readonly txnId: Buffer) {
    super('kv.txn_not_found', `kv: transaction record for ${txnId.toString('hex').slice(0, 8)} not found`);
  }
}

export class TransactionStatusError extends CairnError {
  override name = 'TransactionStatusError';
  constructor(txnId: Buffer, status: TxnRecordStatus, what: string) {
    super('kv.txn_status', `kv: ${what} on transaction ${txnId.toString('hex').slice(0, 8)} with status ${status.toUpperCase()}`);
  }
}

export class TxnRetryError extends CairnError {
  override name = 'TxnRetryError';
  /** `pushedTo`: where the transaction must move (travels in the message as "(ts=wall,logical)"; see retryTimestampOf). */
  constructor(readonly reason: RetryReason, detail: string, pushedTo?: Timestamp) {
    super('kv.txn_retry', `restart transaction: TransactionRetryWithProtoRefreshError: ${reason}: ${detail}${pushedTo === undefined ? '' : ` (ts=${pushedTo.wall},${pushedTo.logical})`}`, { retryable: true, sqlState: '40001' });
  }
}

/** The timestamp a TxnRetryError names (it crosses RPC as a generic error: code + message), if any. */
export function retryTimestampOf(e: CairnError): Timestamp | null {
  const m = /\(ts=(\d+),(\d+)\)$/.exec(e.message);
  return m === null ? null : { wall: Number(m[1]), logical: Number(m[2]) };
}

export class RefreshFailedError extends CairnError {
  override name = 'RefreshFailedError';
  constructor(readonly key: Buffer, readonly conflictTs: Timestamp, intent: boolean) {
    super('kv.refresh_failed', `kv: refresh failed on ${key.toString('hex')}: ${intent ? 'intent' : 'committed value'} at ${formatTimestamp(conflictTs)}`, { retryable: true, sqlState: '40001' });
  }
}

export class IntentMissingError extends CairnError {
  override name = 'IntentMissingError';
  constructor(readonly key: Buffer) {
    super('kv.intent_missing', `kv: intent on ${key.toString('hex')} missing`);
  }
}

export class TimestampInFutureError extends CairnError {
  override name = 'TimestampInFutureError';
  constructor(ts: Timestamp, now: Timestamp, maxOffsetMicros: number) {
    super('kv.timestamp_in_future', `kv: request timestamp ${formatTimestamp(ts)} is more than the max offset (${maxOffsetMicros / 1000} ms) ahead of ${formatTimestamp(now)}`, { sqlState: '58000' });
  }
}
