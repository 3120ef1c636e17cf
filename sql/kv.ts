/**
 * sql/kv.ts — the transactional key-value contract the SQL layer is written against.
 *
 *   sql/session ─► sql/exec ─► KVTxn.run(KVBatch) ─► (src/kv: TxnCoordSender/DistSender)
 *
 * SQL never imports src/kv or raft (DESIGN.md §2). It declares here what it
 * needs; src/server wires the real distributed implementation in, and
 * test/support/memory-kv.ts is an in-memory stand-in for SQL unit tests.
 *
 * Batching: every call to `run` is one round trip to the KV layer, so the
 * executor builds one KVBatch per operator step (all point lookups of an IN
 * list, all writes of a statement) rather than one per row. Operations of a
 * batch are applied in order: a get after a put of the same key in the same
 * batch sees the put, and results come back in op order.
 *
 * Ordering and visibility: a transaction reads its own writes (including
 * those of earlier batches). Reads are at `readTimestamp()`; under
 * serializable isolation the committed history is equivalent to running
 * every committed transaction alone at its commit timestamp.
 *
 * Pipelining: a write may be acknowledged before it is durable (the real
 * implementation pipelines intents through Raft); `commit()` proves every
 * earlier write before it reports success. A conditional put's failure
 * (ConditionFailedError) is nevertheless reported by the batch that issued it.
 *
 * Ownership: keys and values handed to a batch must not be mutated until the
 * batch's `run` settles; buffers returned in results belong to the caller
 * (the implementation does not reuse them).
 *
 * What SQL sends (for the implementers' benefit):
 *   - with a descriptor lease (sql/catalog/lease-manager.ts; implicit
 *     statements on a KVTxn with setDeadline) no catalog key at all: the
 *     commit carries the lease's expiration as its deadline. Otherwise (explicit
 *     transactions, no lease held) the first batch of the transaction also gets
 *     the schema-version key (descriptorKey(0), system range) — the
 *     descriptor-cache check of sql/catalog/catalog.ts; on a cache miss, one
 *     batch of get(version) + scan(descriptors);
 *   - point SELECT: one batch of gets (IN lists batched); span SELECT: scans
 *     with `limit` (pushed-down LIMIT, else 128 → 8192 rows) and targetBytes
 *     (4 MiB), continued from resumeKey;
 *   - UPDATE/DELETE/SELECT FOR UPDATE read with lock 'exclusive';
 *   - all writes of a statement in ONE batch (cput for INSERT and unique
 *     checks, put for UPDATE/UPSERT, del/delRange for DELETE/DROP); an
 *     implicit single-statement transaction sends that batch with
 *     commitInBatch. NB: because the first batch must also verify the schema
 *     version, an implicit INSERT whose only batch is its commit batch runs it
 *     as run() + commit() (two rounds); an "assert value" request kind (fail
 *     the batch if a key's value differs, without writing it) would let it
 *     commit in one — a suggested extension;
 *   - plain SELECTs outside BEGIN ask for { readOnly: true }; AS OF SYSTEM
 *     TIME for { asOf } (or setFixedTimestamp on BEGIN … AS OF SYSTEM TIME).
 *
 * Errors (all CairnError):
 *   - retryable (e.retryable): the transaction must restart from the beginning
 *     (write-too-old, serialization failure, aborted by a pusher, uncertainty
 *     restart). SQL reports 40001 `restart transaction: <reason>`; implicit
 *     transactions are retried by the server while no rows reached the client.
 *     After a retryable error the KVTxn is finished: call `restart()` for a
 *     fresh epoch of the same transaction (keeps its priority), or roll back.
 *   - ambiguous (e.ambiguous): a commit's outcome is unknown — 40003, never
 *     reported as failure and never retried blindly.
 *   - ConditionFailedError (code `kv.condition_failed`): a cput found a value
 *     other than the expected one; SQL maps it to 23505 for unique checks.
 *     It does not finish the transaction, but the batch may have applied a
 *     prefix of its operations: SQL never commits after a failed statement
 *     without first rolling back to a savepoint taken before it (explicit
 *     transactions become aborted, implicit ones roll back).
 *   - anything else: the statement fails with the error's sqlState.
 */
import type { CairnError } from '../src/util/errors.js';
import { CairnError as CairnErrorClass } from '../src/util/errors.js';
import type { Timestamp } from '../src/util/hlc.js';

/** A key-value pair as returned by scans and gets. */
export interface KeyValue {
  readonly key: Buffer;
  readonly value: Buffer;
}

/** Lock strength a read may take (SELECT … FOR UPDATE, and the reads of UPDATE/DELETE). */
export type KVLockStrength = 'none' | 'exclusive';

/** One operation of a batch. Spans are [key, endKey). */
export type KVRequest =
  | { readonly kind: 'get'; readonly key: Buffer; readonly lock: KVLockStrength }
  | {
      readonly kind: 'scan';
      readonly key: Buffer;
      readonly endKey: Buffer;
      /** Newest-to-oldest key order when true (ORDER BY … DESC). */
      readonly reverse: boolean;
      /** Max rows to return; 0 = unlimited. */
      readonly limit: number;
      /** Stop after the first key that makes the byte total reach this; 0 = unlimited. */
      readonly targetBytes: number;
      readonly lock: KVLockStrength;
    }
  | { readonly kind: 'put'; readonly key: Buffer; readonly value: Buffer }
  /** Write `value` iff the current value equals `expected` (null = must not exist). */
  | { readonly kind: 'cput'; readonly key: Buffer; readonly value: Buffer; readonly expected: Buffer | null }
  | { readonly kind: 'del'; readonly key: Buffer }
  | { readonly kind: 'delRange'; readonly key: Buffer; readonly endKey: Buffer };

/** The result of one operation, at the same index as its request. */
export type KVResult =
  | { readonly kind: 'get'; readonly value: Buffer | null }
  | {
      readonly kind: 'scan';
      readonly rows: readonly KeyValue[];
      /**
       * When the scan stopped on limit/targetBytes with more keys possibly in
       * the span: the span still to read ([resumeKey, endKey) forward, or
       * [key, resumeKey) in reverse). Null when the span was exhausted.
       */
      readonly resumeKey: Buffer | null;
    }
  | { readonly kind: 'put' }
  | { readonly kind: 'cput' }
  | { readonly kind: 'del' }
  | { readonly kind: 'delRange'; readonly deleted: number };

/** Builder of a batch of operations; cheap, reusable after `run` settles via `reset()`. */
export class KVBatch {
  readonly requests: KVRequest[] = [];

  get length(): number {
    return this.requests.length;
  }
  get(key: Buffer, lock: KVLockStrength = 'none'): number {
    return this.push({ kind: 'get', key, lock });
  }
  scan(key: Buffer, endKey: Buffer, opts: { limit?: number; targetBytes?: number; lock?: KVLockStrength } = {}): number {
    return this.push({ kind: 'scan', key, endKey, reverse: false, limit: opts.limit ?? 0, targetBytes: opts.targetBytes ?? 0, lock: opts.lock ?? 'none' });
  }
  reverseScan(key: Buffer, endKey: Buffer, opts: { limit?: number; targetBytes?: number; lock?: KVLockStrength } = {}): number {
    return this.push({ kind: 'scan', key, endKey, reverse: true, limit: opts.limit ?? 0, targetBytes: opts.targetBytes ?? 0, lock: opts.lock ?? 'none' });
  }
  put(key: Buffer, value: Buffer): number {
    return this.push({ kind: 'put', key, value });
  }
  cput(key: Buffer, value: Buffer, expected: Buffer | null): number {
    return this.push({ kind: 'cput', key, value, expected });
  }
  del(key: Buffer): number {
    return this.push({ kind: 'del', key });
  }
  delRange(key: Buffer, endKey: Buffer): number {
    return this.push({ kind: 'delRange', key, endKey });
  }
  reset(): void {
    this.requests.length = 0;
  }
  private push(r: KVRequest): number {
    this.requests.push(r);
    return this.requests.length - 1;
  }
}

export interface KVTxnOptions {
  /** Transaction priority: 'low' | 'normal' | 'high' (SET TRANSACTION PRIORITY). */
  readonly priority?: 'low' | 'normal' | 'high';
  /** The transaction promises not to write; implementations may skip the txn record. */
  readonly readOnly?: boolean;
  /** AS OF SYSTEM TIME: read at this fixed timestamp (implies readOnly). */
  readonly asOf?: Timestamp;
}

/** A savepoint token, opaque to SQL. */
export type KVSavepoint = unknown;

/**
 * One transaction. Calls are never concurrent (the session awaits each); after
 * commit/rollback or a retryable/ambiguous error only `rollback()` (a no-op
 * then) and `restart()` (after a retryable error) may be called.
 */
export interface KVTxn {
  /** Runs a batch; results are in request order. Throws on the first failed op. */
  run(batch: KVBatch): Promise<KVResult[]>;
  /** Runs `batch` and commits in the same round (1PC when possible); an empty batch just commits. */
  commitInBatch(batch: KVBatch): Promise<KVResult[]>;
  commit(): Promise<void>;
  /** Aborts; never throws for an already-finished txn. */
  rollback(): Promise<void>;
  /** Marks the current write state; rolling back to it undoes later writes (SAVEPOINT). */
  createSavepoint(): Promise<KVSavepoint>;
  rollbackToSavepoint(sp: KVSavepoint): Promise<void>;
  releaseSavepoint(sp: KVSavepoint): Promise<void>;
  /** The timestamp reads are served at (now(), current_timestamp derive from it). */
  readTimestamp(): Timestamp;
  /** The timestamp the txn would commit at if it committed now. */
  provisionalCommitTimestamp(): Timestamp;
  /**
   * cluster_logical_timestamp(): the commit timestamp, fixed from this call on — a later
   * push makes the transaction fail with a retryable error (40001) instead of moving it
   * (CockroachDB's Txn.CommitTimestamp); a restart unfixes it. Optional: an implementation
   * that never moves a commit timestamp (MemoryKV) leaves it out and SQL reads
   * provisionalCommitTimestamp().
   */
  fixCommitTimestamp?(): Timestamp;
  /** AS OF SYSTEM TIME inside BEGIN: fixes the read timestamp before the first read. */
  setFixedTimestamp(ts: Timestamp): void;
  /**
   * Starts a new epoch of the same transaction after a retryable error (or
   * when the client asks: ROLLBACK TO SAVEPOINT cockroach_restart). Writes of
   * earlier epochs are discarded; the read timestamp moves forward.
   */
  restart(): Promise<void>;
  /** Priority, set by SET TRANSACTION PRIORITY before the first batch. */
  setPriority(p: 'low' | 'normal' | 'high'): void;
  /**
   * The session's cancel check (a statement cancelled by CancelRequest, statement_timeout or its client's
   * disconnect): the KV layer calls it at safe points of a long call — a retry of a batch, between the pushes of a
   * lock wait — and lets what it throws end the call; the caller then rolls back. Optional (MemoryKV never waits).
   */
  setCancelCheck?(check: (() => void) | undefined): void;
  /**
   * Commit deadline (descriptor leases, sql/catalog/lease-manager.ts): the
   * transaction commits only at a timestamp below `ts`, else the commit fails
   * with a retryable error (RETRY_COMMIT_DEADLINE); undefined clears it. It
   * survives restart(). Optional: without it, SQL never uses a descriptor
   * lease and reads the schema version in the transaction instead.
   */
  setDeadline?(ts: Timestamp | undefined): void;
}

/** One range, as SHOW RANGES reports it. */
export interface KVRangeInfo {
  readonly rangeId: number;
  readonly startKey: Buffer;
  readonly endKey: Buffer;
  readonly replicas: readonly number[];
  readonly leaseholder: number | null;
}

/**
 * Optional admin operations (SPLIT AT, SHOW RANGES, SCATTER). The real
 * node's is src/kv/client/kv-admin.ts (TxnDB.admin).
 */
export interface KVAdmin {
  /**
   * Splits the range holding `key` at `key` (a no-op when a range starts
   * there). A manual split is sticky: the merge queue does not merge the
   * boundary away before `expiration` (default: never).
   */
  adminSplit(key: Buffer, opts?: { readonly expiration?: Timestamp }): Promise<void>;
  /** Ranges overlapping [key, endKey), in key order. */
  ranges(key: Buffer, endKey: Buffer): Promise<KVRangeInfo[]>;
  /** Spreads the leases of the ranges overlapping [key, endKey) over their replicas' nodes; the ranges afterwards. */
  scatter?(key: Buffer, endKey: Buffer): Promise<KVRangeInfo[]>;
}

/** The database handle of one node. */
export interface KVDB {
  newTxn(opts?: KVTxnOptions): KVTxn;
  /** The node's HLC now (for unique_rowid and statement timestamps). */
  now(): Timestamp;
  /** The node id (unique_rowid() mixes it in). */
  readonly nodeId: number;
  readonly admin?: KVAdmin;
}

/** A cput found a different value than expected. */
export class ConditionFailedError extends CairnErrorClass {
  override name = 'ConditionFailedError';
  constructor(
    readonly key: Buffer,
    readonly actual: Buffer | null,
  ) {
    super('kv.condition_failed', 'kv: unexpected value', { sqlState: '23505' });
  }
}

/** Classification the session uses: retryable → 40001, ambiguous → 40003. */
export function isRetryable(e: unknown): e is CairnError {
  return e instanceof CairnErrorClass && e.retryable;
}

/** A retryable transaction error with the message SQL clients expect. */
export class TransactionRetryError extends CairnErrorClass {
  override name = 'TransactionRetryError';
  constructor(reason: string) {
    super('kv.txn_retry', `restart transaction: ${reason}`, { retryable: true, sqlState: '40001' });
  }
}
