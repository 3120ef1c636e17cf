/**
 * The KV API: the requests a replica serves, their responses, the batch that
 * carries them, the range and lease descriptors, and the KV errors with the
 * hints a router needs (CockroachDB's roachpb api.proto, reduced).
 *
 *   BatchRequest { header: { rangeId, replicaId?, timestamp, txn?, … }, requests[] }
 *        │  a router (Sender, kv-client.ts / the DistSender) addresses one range;
 *        ▼  the Store hands it to that range's Replica
 *   BatchResponse { header: { now }, responses[] }   — aligned with requests
 *   or a KV error (encoded as a value by api-codec.ts, never thrown through RPC)
 *
 * Contracts:
 *   - Every request and response is a readonly object with a `kind` tag; the
 *     tags of a response match its request's. Each kind has one command file
 *     in batcheval/ (cmd-*.ts: the spans it declares and how it evaluates);
 *     the command registry (batcheval/command.ts) is how later kinds (EndTxn,
 *     PushTxn, AdminSplit, …) plug in: add the variant here and in
 *     api-codec.ts, and register a Command.
 *   - A batch is all reads or contains writes; a batch with writes is
 *     evaluated on the leaseholder into one write batch and replicated through
 *     Raft as one command. Admin/lease requests travel alone.
 *   - `header.timestamp` zero means "the leaseholder's clock now".
 *   - `header.txn` marks the batch transactional: writes become intents of
 *     that transaction, reads see its own intents. Conflicting intents of
 *     other transactions surface as WriteIntentError (storage/mvcc.ts).
 *   - Keys are user keys (storage/keys.ts); values are opaque bytes.
 *
 * Async consensus (write pipelining, issue 5; CockroachDB's
 * BatchRequest.AsyncConsensus and replica_write.go's early return):
 *   header.asyncConsensus on a transactional batch of only put / cput /
 *   delete / queryIntent (no EndTxn, no ranged write, no locking read):
 *     leaseholder: latches ─► evaluate ─► propose ─► answer the client
 *                                                 └─► (Raft commits, applies)
 *                                                     ─► lock table learns the
 *                                                        intents, tscache, latches
 *                                                        released
 *   so a conflicting request (including the transaction's own QueryIntent)
 *   still serializes behind the write. If the command never applies (lease
 *   changed, proposal lost), nothing told the client it was durable: its
 *   QueryIntent finds the intent missing. Any other batch carrying the flag
 *   is served as if it were absent. On the wire it is bit 0 of the header's
 *   flags byte (api-codec.ts); every node of one build knows it.
 *
 * Errors (all CairnError, code prefixed `kv.`):
 *   NotLeaseHolderError   kv.not_lease_holder  retryable: the hint names the
 *                         lease (if known) or the replica believed to be it
 *   RangeNotFoundError    kv.range_not_found   retryable elsewhere
 *   RangeKeyMismatchError kv.range_key_mismatch retryable after a descriptor
 *                         refresh; carries the store's descriptors
 *   AmbiguousResultError  kv.ambiguous_result  (src/util/errors.ts) the
 *                         command may or may not have applied
 *   ProposalDroppedKvError kv.proposal_dropped retryable: never proposed
 *   ClockUnhealthyError   kv.clock_unhealthy   retryable elsewhere: this node's
 *                         clock is out of bounds (DESIGN.md §6)
 *   StoreStoppedError     kv.store_stopped     retryable elsewhere
 *   BatchTimestampBeforeGCError kv.batch_timestamp_before_gc  not retryable:
 *                         the batch reads or writes at or below the range's
 *                         GC threshold (history there may be gone)
 *   plus storage's WriteIntentError, WriteTooOldError, ConditionFailedError,
 *   ReadWithinUncertaintyIntervalError.
 *
 * Ownership: src/kv. Buffers in requests and responses are shared, never
 * mutated after construction.
 */
import { CairnError } from '../util/errors.js';
import { formatTimestamp, type Timestamp } from '../util/hlc.js';
import type { Txn } from '../../storage/mvcc.js';
import type { MvccStats } from '../../storage/mvcc-stats.js';
import type { TxnRequest, TxnResponse } from './txn-api.js';

// ---- Descriptors -------------------------------------------------------------

/**
 * Voter, Learner; and, only while a replication change is in a joint
 * configuration (replica-change.ts), VoterIncoming (a voter of the incoming
 * config only) and VoterOutgoing (of the outgoing config only) — CockroachDB's
 * VOTER_INCOMING / VOTER_DEMOTING_*.
 */
export const ReplicaType = { Voter: 0, Learner: 1, VoterIncoming: 2, VoterOutgoing: 3 } as const;
export type ReplicaType = (typeof ReplicaType)[keyof typeof ReplicaType];

/** One replica of a range (CockroachDB's ReplicaDescriptor). */
export interface ReplicaDescriptor {
  readonly nodeId: number;
  readonly storeId: number;
  /** The Raft id of the replica inside its range; unique per range, never reused. */
  readonly replicaId: number;
  readonly type: ReplicaType;
}

/** A range: [startKey, endKey) and its replicas (CockroachDB's RangeDescriptor). */
export interface RangeDescriptor {
  readonly rangeId: number;
  readonly startKey: Buffer;
  readonly endKey: Buffer;
  readonly replicas: readonly ReplicaDescriptor[];
  readonly nextReplicaId: number;
  /** Bumped by every split, merge and replica change. */
  readonly generation: number;
  /**
   * CockroachDB's sticky bit: the range's start is a manual split point (an
   * AdminSplit with an expiration, e.g. /_admin/split or SPLIT AT), and the
   * merge queue leaves it alone until this time (MAX_TIMESTAMP: forever).
   * Absent: the boundary came from the split queue and may be merged away.
   * Split halves: the right one carries the split's expiration, the left one
   * keeps its own; a merge keeps the left's.
   */
  readonly stickyBit?: Timestamp;
}

/**
 * A range lease (expiration-based): `replica` may serve reads and evaluate
 * writes while its clock is below `expiration - maxOffset`. `sequence` grows
 * with each new holder; an extension by the same holder keeps it.
 */
export interface Lease {
  readonly replica: ReplicaDescriptor;
  readonly start: Timestamp;
  readonly expiration: Timestamp;
  readonly sequence: number;
}

/** The Raft log truncation point: entries ≤ index are gone. */
export interface TruncatedState {
  readonly index: number;
  readonly term: number;
}

/** Persisted with every applied command, atomically (replicated range-ID-local). */
export interface RangeAppliedState {
  readonly raftAppliedIndex: number;
  readonly raftAppliedTerm: number;
  /** The max lease index of the last command applied under the lease rules. */
  readonly leaseAppliedIndex: number;
  readonly stats: MvccStats;
}

export interface StoreIdent {
  readonly clusterId: string;
  readonly nodeId: number;
  readonly storeId: number;
}

export function replicaOf(desc: RangeDescriptor, replicaId: number): ReplicaDescriptor | undefined {
  return desc.replicas.find((r) => r.replicaId === replicaId);
}

export function replicaOnStore(desc: RangeDescriptor, storeId: number): ReplicaDescriptor | undefined {
  return desc.replicas.find((r) => r.storeId === storeId);
}

export function leaseEqual(a: Lease | null, b: Lease | null): boolean {
  if (a === null || b === null) return a === b;
  return (
    a.sequence === b.sequence &&
    a.replica.replicaId === b.replica.replicaId &&
    a.start.wall === b.start.wall &&
    a.start.logical === b.start.logical &&
    a.expiration.wall === b.expiration.wall &&
    a.expiration.logical === b.expiration.logical
  );
}

// ---- Requests --------------------------------------------------------------------

/**
 * The lock a transactional read takes (SELECT … FOR UPDATE): 'exclusive'
 * holds an unreplicated lock on every key read (for a scan: every row
 * returned) until the transaction ends, blocking other transactions' writes,
 * locking reads, and plain reads at or above the lock's timestamp
 * (CockroachDB's exclusive locks). A newer committed version makes the
 * leaseholder read the batch again just above it; the response's timestamp
 * says so. Best effort: the lock is leaseholder memory, lost on a lease
 * change, split or merge. Absent: 'none'; ignored without a transaction.
 */
export type LockStrength = 'none' | 'exclusive';

export interface GetRequest {
  readonly kind: 'get';
  readonly key: Buffer;
  readonly lock?: LockStrength;
}
export interface PutRequest {
  readonly kind: 'put';
  readonly key: Buffer;
  readonly value: Buffer;
}
export interface ConditionalPutRequest {
  readonly kind: 'cput';
  readonly key: Buffer;
  /** null: delete. */
  readonly value: Buffer | null;
  /** null: the key must be absent. */
  readonly expected: Buffer | null;
  readonly allowIfDoesNotExist: boolean;
}
export interface DeleteRequest {
  readonly kind: 'delete';
  readonly key: Buffer;
}
export interface DeleteRangeRequest {
  readonly kind: 'deleteRange';
  readonly key: Buffer;
  readonly endKey: Buffer;
  readonly returnKeys: boolean;
}
export interface ScanRequest {
  readonly kind: 'scan' | 'reverseScan';
  readonly key: Buffer;
  readonly endKey: Buffer;
  /** 0: no limit. */
  readonly maxKeys: number;
  readonly lock?: LockStrength;
}
/** Acquire or extend the lease for the proposing replica (built by the replica itself). */
export interface RequestLeaseRequest {
  readonly kind: 'requestLease';
  readonly lease: Lease;
  readonly prevLease: Lease | null;
}
/** Hand the lease to `lease.replica` (proposed by the current holder). */
export interface TransferLeaseRequest {
  readonly kind: 'transferLease';
  readonly lease: Lease;
  readonly prevLease: Lease | null;
  /**
   * The highest timestamp the outgoing holder served a read at (set by
   * Replica.proposeLease under the transfer's latches; never sent over RPC —
   * lease requests are proposed by replicas, not clients).
   */
  readonly priorReadSummary?: Timestamp;
}
export interface LeaseInfoRequest {
  readonly kind: 'leaseInfo';
}
/** Replicated: every replica computes a checksum of the range's data at the same applied index. */
export interface ComputeChecksumRequest {
  readonly kind: 'computeChecksum';
  /** Chosen by the caller; results are collected by it (Store.checksumResult). */
  readonly checksumId: number;
}
/** Replicated: every replica drops its Raft log up to and including `index`. */
export interface TruncateLogRequest {
  readonly kind: 'truncateLog';
  readonly index: number;
}

/**
 * MVCC garbage collection (batcheval/cmd-gc.ts; CockroachDB's GCRequest):
 * raises the range's replicated GC threshold to `threshold` (never lowers it)
 * and removes, for each of `keys`, the versions at or below it that no read
 * above it can see — every version shadowed by a newer one at or below the
 * threshold, and the newest one at or below it when that is a tombstone.
 * Intents and versions above the threshold are never touched. Sent by the
 * GC queue to its own replica (gc-queue.ts); `key`/`endKey` bound `keys`
 * (the range's checks use them). Replicated like any write.
 */
export interface GCRequest {
  readonly kind: 'gc';
  readonly key: Buffer;
  readonly endKey: Buffer;
  readonly threshold: Timestamp;
  /** User keys in [key, endKey), ascending; may be empty (the threshold alone moves). */
  readonly keys: readonly Buffer[];
}

/**
 * Admin: split the range containing `key` at `key` (batcheval/cmd-admin-split.ts);
 * the right-hand range [key, end) gets the id `newRangeId` (allocated by the
 * caller, split.ts). Travels alone.
 */
export interface AdminSplitRequest {
  readonly kind: 'adminSplit';
  readonly key: Buffer;
  readonly newRangeId: number;
  /** A manual split: the right-hand range's stickyBit (see RangeDescriptor). */
  readonly expiration?: Timestamp;
}

/**
 * Freezes the range starting at `key` for a merge into its left neighbour
 * (batcheval/cmd-subsume.ts): its lease passes to nobody, durably, so it
 * serves nothing until the merge absorbs it. Travels alone.
 */
export interface SubsumeRequest {
  readonly kind: 'subsume';
  readonly key: Buffer;
  /**
   * The left neighbour as the merge driver read it: the freeze is refused
   * unless the range's replicas are on the same stores (CockroachDB's
   * SubsumeRequest.LeftDesc check, done under the range's latches).
   */
  readonly left?: RangeDescriptor;
}

/**
 * Admin: merges the range starting at `key` with its right neighbour `right`,
 * frozen by Subsume and caught up on every replica (cmd-admin-merge.ts).
 */
export interface AdminMergeRequest {
  readonly kind: 'adminMerge';
  readonly key: Buffer;
  readonly right: RangeDescriptor;
}

/** A replication step of replica-change.ts (the op decides how adds/removes apply). */
export const ChangeReplicasOp = {
  /** adds become learners (new replica ids). */
  AddLearners: 0,
  /** adds (learners) become voters, removes (voters) leave: one change directly, several through a joint config. */
  ChangeVoters: 1,
  /** Leaves the joint config: incoming voters become voters, outgoing ones leave. */
  LeaveJoint: 2,
  /** removes (learners) leave. */
  RemoveLearners: 3,
} as const;
export type ChangeReplicasOp = (typeof ChangeReplicasOp)[keyof typeof ChangeReplicasOp];

export interface ReplicationTarget {
  readonly nodeId: number;
  readonly storeId: number;
}

/**
 * Admin: one replication step on the range starting at `key`, refused unless
 * its descriptor is still at `generation` (batcheval/cmd-admin-change-replicas.ts).
 */
export interface AdminChangeReplicasRequest {
  readonly kind: 'adminChangeReplicas';
  readonly key: Buffer;
  readonly generation: number;
  readonly op: ChangeReplicasOp;
  readonly adds: readonly ReplicationTarget[];
  readonly removes: readonly ReplicationTarget[];
}

export type Request =
  | TxnRequest
  | GetRequest
  | PutRequest
  | ConditionalPutRequest
  | DeleteRequest
  | DeleteRangeRequest
  | ScanRequest
  | RequestLeaseRequest
  | TransferLeaseRequest
  | LeaseInfoRequest
  | ComputeChecksumRequest
  | TruncateLogRequest
  | GCRequest
  | AdminSplitRequest
  | SubsumeRequest
  | AdminMergeRequest
  | AdminChangeReplicasRequest;

export type RequestKind = Request['kind'];

// ---- Responses -------------------------------------------------------------------

export interface KeyValue {
  readonly key: Buffer;
  readonly value: Buffer;
}

export interface GetResponse {
  readonly kind: 'get';
  readonly value: Buffer | null;
  /** The version's timestamp (zero when absent). */
  readonly ts: Timestamp;
}
export interface EmptyResponse {
  readonly kind: 'put' | 'cput' | 'delete' | 'requestLease' | 'transferLease' | 'computeChecksum' | 'truncateLog' | 'gc';
}
export interface DeleteRangeResponse {
  readonly kind: 'deleteRange';
  readonly keys: readonly Buffer[];
}
export interface ScanResponse {
  readonly kind: 'scan' | 'reverseScan';
  readonly rows: readonly KeyValue[];
  /** Where to continue when maxKeys stopped the scan. */
  readonly resumeKey: Buffer | null;
  readonly resumeEndKey: Buffer | null;
}
export interface LeaseInfoResponse {
  readonly kind: 'leaseInfo';
  readonly lease: Lease | null;
}

/** The descriptors an applied split installed. */
export interface AdminSplitResponse {
  readonly kind: 'adminSplit';
  readonly left: RangeDescriptor;
  readonly right: RangeDescriptor;
}

/** Subsume: the frozen range's descriptor; AdminMerge: the merged one. */
export interface RangeDescriptorResponse {
  readonly kind: 'subsume' | 'adminMerge' | 'adminChangeReplicas';
  readonly desc: RangeDescriptor;
}

export type Response = TxnResponse | GetResponse | EmptyResponse | DeleteRangeResponse | ScanResponse | LeaseInfoResponse | AdminSplitResponse | RangeDescriptorResponse;

// ---- Batches ---------------------------------------------------------------------------

export interface BatchHeader {
  /** The range addressed; 0 lets a router (Sender) choose. */
  readonly rangeId: number;
  /** The replica addressed (0: whichever the store holds). */
  readonly replicaId?: number;
  /** Zero: the leaseholder's clock now. */
  readonly timestamp: Timestamp;
  readonly txn?: Txn;
  /** Reads fail with ReadWithinUncertaintyIntervalError on values in (timestamp, uncertaintyLimit] (the txn layer sets it). */
  readonly uncertaintyLimit?: Timestamp;
  /**
   * Write pipelining (CockroachDB's AsyncConsensus): the leaseholder answers
   * as soon as the batch's command is proposed to Raft, before it commits and
   * applies; its latches stay held until it applies, and the lock table
   * learns its locks then. Honoured only for a transactional batch of point
   * intent writes (put, cput, delete) and the QueryIntents that chain onto
   * earlier ones; ignored otherwise (the batch waits for its Raft round). An
   * acknowledged write is not durable: the coordinator proves it later with
   * QueryIntent (client/txn-pipeliner.ts). See "Async consensus" above.
   */
  readonly asyncConsensus?: boolean;
  /**
   * The transaction's observed timestamps (uncertainty.ts): per node, the
   * lowest clock reading a node returned to it. The serving node narrows the
   * uncertainty limit with its own entry (and its arrival reading). Only
   * transactional batches carry them.
   */
  readonly observedTimestamps?: readonly ObservedTimestamp[];
}

/**
 * A node's HLC reading, taken when a transactional batch arrived there and
 * before it was evaluated (CockroachDB's roachpb.ObservedTimestamp): every
 * value that node's leaseholders write later carries a higher timestamp.
 */
export interface ObservedTimestamp {
  readonly nodeId: number;
  readonly timestamp: Timestamp;
}

export interface BatchRequest {
  readonly header: BatchHeader;
  readonly requests: readonly Request[];
}

export interface BatchResponse {
  /** The serving node's clock when it answered. */
  readonly now: Timestamp;
  /** The timestamp reads and writes were evaluated at. */
  readonly timestamp: Timestamp;
  readonly responses: readonly Response[];
  /** Transactional batches: the serving nodes' arrival readings (one per node; a batch the DistSender split may name several). */
  readonly observedTimestamps?: readonly ObservedTimestamp[];
}

/** Does the request change replicated state (so the batch goes through Raft)? */
export function isWriteRequest(r: Request): boolean {
  switch (r.kind) {
    case 'get':
    case 'scan':
    case 'reverseScan':
    case 'leaseInfo':
    case 'queryTxn':
    case 'queryIntent':
    case 'refresh':
    case 'refreshRange':
      return false;
    default:
      return true;
  }
}

// ---- RPC methods ---------------------------------------------------------------------

/** The KV layer's RPC method ids (src/rpc reserves the top of the u16 space). */
export const KvMethod = {
  /** request: encoded BatchRequest; response: encoded BatchResponse or KV error. */
  Batch: 100,
  /** one-way: a coalesced RaftMessageBatch from one store to another. */
  RaftMessages: 101,
  /** request: one snapshot chunk; response: empty (ack). */
  RaftSnapshot: 102,
} as const;

// ---- Errors --------------------------------------------------------------------------

export class NotLeaseHolderError extends CairnError {
  override name = 'NotLeaseHolderError';
  constructor(
    readonly rangeId: number,
    /** The lease this replica knows of, if any. */
    readonly lease: Lease | null,
    /** A replica more likely to hold the lease (e.g. the Raft leader), if known. */
    readonly hint: ReplicaDescriptor | null,
    why = '',
  ) {
    const who = lease !== null ? `lease held by n${lease.replica.nodeId} (r${rangeId}/${lease.replica.replicaId}, seq ${lease.sequence})` : hint !== null ? `try n${hint.nodeId}` : 'leaseholder unknown';
    super('kv.not_lease_holder', `kv: not lease holder for r${rangeId}: ${who}${why === '' ? '' : `: ${why}`}`, { retryable: true, sqlState: '40001' });
  }
}

export class RangeNotFoundError extends CairnError {
  override name = 'RangeNotFoundError';
  constructor(
    readonly rangeId: number,
    readonly storeId: number,
  ) {
    super('kv.range_not_found', `kv: r${rangeId} not found on s${storeId}`, { retryable: true, sqlState: '40001' });
  }
}

export class RangeKeyMismatchError extends CairnError {
  override name = 'RangeKeyMismatchError';
  constructor(
    readonly key: Buffer,
    readonly endKey: Buffer | null,
    /** The descriptors the store holds that are relevant: the addressed range's first (if any), then the store's range holding `key` (store.ts withKeyHolder). */
    readonly descriptors: readonly RangeDescriptor[],
  ) {
    super('kv.range_key_mismatch', `kv: key range ${key.toString('hex')}${endKey === null ? '' : `-${endKey.toString('hex')}`} outside the addressed range`, { retryable: true, sqlState: '40001' });
  }
}

/** Raft refused the proposal (no leader known, …): nothing was proposed. */
export class ProposalDroppedKvError extends CairnError {
  override name = 'ProposalDroppedKvError';
  constructor(rangeId: number, why: string) {
    super('kv.proposal_dropped', `kv: proposal to r${rangeId} dropped: ${why}`, { retryable: true, sqlState: '40001' });
  }
}

/** The store is shutting down or not started. */
export class StoreStoppedError extends CairnError {
  override name = 'StoreStoppedError';
  constructor(storeId: number) {
    super('kv.store_stopped', `kv: s${storeId} is stopped`, { retryable: true, sqlState: '57P01' });
  }
}

/** This node's clock is out of bounds against a majority of its peers: it stops serving until it is back. */
export class ClockUnhealthyError extends CairnError {
  override name = 'ClockUnhealthyError';
  constructor(nodeId: number) {
    super('kv.clock_unhealthy', `kv: n${nodeId} does not serve: its clock is beyond the max offset from a majority of its peers`, { retryable: true, sqlState: '58000' });
  }
}

/**
 * A read or write at or below the range's GC threshold (CockroachDB's
 * BatchTimestampBeforeGCError): the versions it would need may have been
 * garbage collected. Not retryable — the same timestamp fails again; a
 * transaction must restart at a new timestamp, an AS OF SYSTEM TIME query
 * must pick a newer time. SQLSTATE 22023 (invalid_parameter_value), the
 * class CockroachDB gives this error at its SQL edge.
 */
export class BatchTimestampBeforeGCError extends CairnError {
  override name = 'BatchTimestampBeforeGCError';
  constructor(
    readonly rangeId: number,
    readonly timestamp: Timestamp,
    readonly threshold: Timestamp,
  ) {
    super('kv.batch_timestamp_before_gc', `kv: batch timestamp ${formatTimestamp(timestamp)} must be after replica GC threshold ${formatTimestamp(threshold)} (r${rangeId})`, { sqlState: '22023' });
  }
}
