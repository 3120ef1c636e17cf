/**
 * TxnCoordSender: one transaction's coordinator on the gateway node
 * (CockroachDB's kvcoord.TxnCoordSender and its interceptors, folded into
 * one object), implementing sql/kv.ts's KVTxn over a Sender (DistSender).
 *
 *   run(batch) ─► segments (runs of reads and runs of writes, in order; a new
 *                 segment whenever a key would be written twice: one sequence
 *                 number per segment)
 *              ─► seq-num allocator: txn.sequence = ++seq for a writing segment
 *              ─► send(ts = read ts = write ts, uncertaintyLimit, txn, observed timestamps)
 *                   WriteIntentError    → TxnPusher (push / wait / recover / resolve), resend
 *                   reads served higher (a locking read met a newer version and
 *                   the leaseholder read the batch above it): refresh the earlier
 *                   read spans to the response's timestamp
 *                   WriteTooOld, uncertainty, pushed by the tscache
 *                                       → span refresher: Refresh(Range) every read span
 *                                         from the read ts to the new ts; success moves
 *                                         the read ts up (no restart), failure is a
 *                                         retryable TxnRetryError with its reason
 *                   a (non-committing) write refused as pushed by the tscache
 *                                       → carried refresh: the next attempt is sent at the
 *                                         named ts with the Refresh(Range)s of every read
 *                                         span at the head of its batch, evaluated with the
 *                                         write under its latches (one range) — a refresh
 *                                         enters the tscache, so refreshing first and then
 *                                         resending let concurrent writers of a span they
 *                                         all read push each other's writes for ever (the
 *                                         g2 stall of issue 9: no intent ever written, every
 *                                         refresh succeeds, MAX_RETRIES rounds); now a failed
 *                                         attempt enters nothing and the first write to land
 *                                         fails the others' refreshes
 *              ─► track read spans (refresh) and lock spans (resolution; also the
 *                 keys of locking reads — FOR UPDATE — whose unreplicated locks
 *                 EndTxn and resolution release on the leaseholders)
 *                 — both footprints byte-budgeted (lock-footprint.ts: past
 *                 kv.transaction.max_intents_bytes / max_refresh_spans_bytes they
 *                 condense per range into covering spans, resolved by ResolveIntentRange)
 *   heartbeater: after the first write, BeginTxn then HeartbeatTxn every
 *                heartbeatIntervalMs; an ABORTED record marks the txn aborted
 *   committer:   the last segment's writes + EndTxn in one batch (the
 *                DistSender sends the parts in parallel): one range → 1PC
 *                (no record, no intents left); several → parallel commit:
 *                the record goes STAGING with the batch's other-range writes
 *                in flight; all parts succeeding at the staging timestamp is
 *                the (implicit) commit, acknowledged at once; the record is
 *                then made COMMITTED and the intents resolved asynchronously
 *                (IntentResolver). A part pushed above the staging ts →
 *                refresh and stage again higher. Before moving on from an
 *                attempt that failed or was pushed, the coordinator proves
 *                or prevents its own implicit commit (settleStaging): writes
 *                of earlier attempts may complete a record staged earlier.
 *                A commit timestamp ahead of the clock is acknowledged after
 *                the clock passes it (commit wait).
 *   pipeliner:   (txn-pipeliner.ts) a write segment is sent with
 *                asyncConsensus and answered before its Raft round; its
 *                writes stay in flight until a later batch touching them
 *                carries a QueryIntent for them (prepended, same batch) or the
 *                commit proves them all (QueryIntents in the commit batch, and
 *                listed as the EndTxn's in-flight writes: a STAGING record
 *                names those on other ranges than the record; on its own
 *                range the query proves them in the record's Raft command,
 *                replica.ts dropProvenInFlightWrites). A write found
 *                missing → restart (AsyncWriteFailureError,
 *                RETRY_ASYNC_WRITE_FAILURE). Setting:
 *                kv.transaction.write_pipelining.* (settings.ts txnSettings).
 *   uncertainty: the global limit read_ts + max_offset goes in every header
 *                with the observed timestamps: per node, the first (lowest)
 *                arrival reading a response reported (../uncertainty.ts);
 *                the leaseholder narrows the limit to its node's entry (never
 *                below its lease start). Entries never move up, and survive
 *                restarts (epoch bumps and new ids after an abort: the SQL
 *                transaction began before every one of them).
 *   read-only:   no record, no EndTxn; commit just stops.
 *   savepoints:  the sequence number; rollback adds (sp, now] to the
 *                ignored seqnum ranges, which reads, commits and resolution honour.
 *
 * Invariant: when a batch is sent the read timestamp equals the write
 * timestamp (refreshes happen eagerly as soon as the write ts moves), so
 * one header timestamp serves reads and writes. A new epoch (restart)
 * starts at or above every timestamp a refresh of this id was sent at: the
 * timestamp cache lets a transaction's writes pass under its own reads,
 * which a failed refresh leaves behind on the ranges where it succeeded.
 *
 * Departures: a chained QueryIntent that misses a pipelined intent a
 * pusher moved up costs a record read and a refresh before it is proven
 * again (QueryIntent reports no pushed timestamp; txn-pipeliner.ts); the
 * writes of a batch that failed without ending the epoch (a cput's
 * ConditionFailed beside a pipelined put on another range) are not
 * tracked as in flight, as in CockroachDB, so the commit does not prove
 * them; values carry no local timestamp, so the observed-timestamp
 * narrowing has CockroachDB-before-22.2's gap for intents committed above
 * their written timestamp (../uncertainty.ts); targetBytes is applied on the
 * returned rows.
 *
 * Ownership: one per transaction; calls are never concurrent (KVTxn's rule).
 */
import { AmbiguousResultError, CairnError } from '../../util/errors.js';
import { ZERO_TIMESTAMP, tsLess, tsMax, tsNext, type Clock, type Timestamp } from '../../util/hlc.js';
import { keyNext, ConditionFailedError, ReadWithinUncertaintyIntervalError, WriteIntentError, WriteTooOldError, type SeqRange, type Txn, type TxnMeta } from '../../../storage/mvcc.js';
import type { BatchResponse, KeyValue, ObservedTimestamp, Request, Response, ScanResponse } from '../api.js';
import { mergeObservedTimestamps } from '../uncertainty.js';
import type { Sender } from '../kv-client.js';
import { MAX_TXN_PRIORITY } from '../concurrency/push-policy.js';
import { TransactionAbortedError, TxnRetryError, recordResponse, retryTimestampOf, type InFlightWrite, type LockSpan, type RetryReason, type TxnRecord, type TxnRecordResponse } from '../txn-api.js';
import type { IntentResolver } from '../txn-intent-resolver.js';
import type { TxnPusher } from '../txn-pusher.js';
import { txnLiveness } from '../txn-record.js';
import { queryInFlightWrites } from '../txn-recovery.js';
import { crashPoint, sendAtCrashPoint } from '../crash-point.js';
import { recordMeta } from '../txn-eval.js';
import { txnSettings, type TxnSettings } from '../settings.js';
import { AsyncWriteFailureError, TxnPipeliner, isIntentMissing } from './txn-pipeliner.js';
import { CondensableSpanSet, cachedRangeBounds, footprintSettings } from './lock-footprint.js';
import { KvConditionFailedError, type KVBatchLike, type KVPriority, type KVRequest, type KVResult, type KVTxnOptions } from './kv-txn-types.js';

export interface TxnCoordContext {
  readonly sender: Sender;
  readonly clock: Clock;
  readonly resolver: IntentResolver;
  readonly pusher: TxnPusher;
  /** 16 random bytes. */
  newTxnId(): Buffer;
  readonly sleep: (ms: number) => Promise<void>;
  /** Calls fn every ms until the returned stop is called (the heartbeat loop). */
  every(ms: number, fn: () => void): () => void;
  readonly metrics: TxnMetrics;
  /** kv.transaction.* settings (default: the process's, settings.ts txnSettings), read at creation. */
  readonly settings?: TxnSettings;
}

export interface TxnMetrics {
  commits: number;
  onePhaseCommits: number;
  parallelCommits: number;
  aborts: number;
  refreshes: number;
  refreshFailures: number;
  restarts: number;
}

export const NORMAL_PRIORITY = 1 << 20;

function priorityOf(p: KVPriority | undefined): number {
  return p === 'high' ? MAX_TXN_PRIORITY : p === 'low' ? 1 : NORMAL_PRIORITY;
}

type State = 'pending' | 'retry' | 'aborted' | 'committed' | 'rolledBack' | 'ambiguous';

interface Savepoint {
  readonly seq: number;
  readonly epoch: number;
  readonly id: Buffer;
}

const MAX_RETRIES = 200;

/** TxnMeta.key before the first write chooses the anchor (zero-length: nothing can write into it). */
const NO_ANCHOR = Buffer.alloc(0);

export class TxnCoordSender {
  private id: Buffer;
  private epoch = 0;
  private priority: number;
  private readTs: Timestamp;
  private writeTs: Timestamp;
  private minTs: Timestamp;
  private uncertaintyLimit: Timestamp;
  /** Per node, the first (lowest) reading it reported (../uncertainty.ts); kept across restarts. */
  private observed: readonly ObservedTimestamp[] | undefined;
  private seq = 0;
  private anchor: Buffer | null = null;
  /** Lock and refresh footprints, condensed past their byte budgets (lock-footprint.ts). */
  private readonly lockSpans: CondensableSpanSet;
  private readonly readSpans: CondensableSpanSet;
  private ignored: SeqRange[] = [];
  private fixed = false;
  /** cluster_logical_timestamp() was read: the commit timestamp may not move (refreshTo fails instead). */
  private commitTsFixed = false;
  private state: State = 'pending';
  /** A batch with the EndTxn is in flight (startHeartbeat holds back the record-creating beat meanwhile). */
  private committing = false;
  private stopHeartbeat: (() => void) | null = null;
  private recordCreated = false;
  /** Set by the heartbeat: the record says ABORTED / pushed. */
  private abortedByOther = false;
  private pushedTo: Timestamp | null = null;
  /**
   * The highest timestamp a refresh of this epoch was sent at: ranges where it
   * succeeded hold this transaction's reads there, under its id, which its own
   * writes may skip (concurrency-manager.ts prepare). A restart starts the new
   * epoch at least here (see restart).
   */
  private refreshedTo: Timestamp = ZERO_TIMESTAMP;
  /** Write pipelining: the writes acknowledged before their Raft round, to prove (txn-pipeliner.ts). */
  private readonly pipeliner: TxnPipeliner;
  /** The statement's cancel check (KVTxn.setCancelCheck): called at the safe points, throws to end the statement. */
  private cancelCheck: (() => void) | undefined;
  /** setDeadline: the commit timestamp must stay below this (SQL descriptor leases); null: none. */
  private deadline: Timestamp | null = null;

  constructor(
    private readonly ctx: TxnCoordContext,
    opts: KVTxnOptions = {},
  ) {
    this.id = ctx.newTxnId();
    const settings = ctx.settings ?? txnSettings;
    this.pipeliner = new TxnPipeliner({ enabled: settings.writePipeliningEnabled, maxInFlightBytes: settings.writePipeliningMaxInFlightBytes });
    const rangeOf = cachedRangeBounds(ctx.sender);
    this.lockSpans = new CondensableSpanSet(footprintSettings.maxIntentsBytes, rangeOf);
    this.readSpans = new CondensableSpanSet(footprintSettings.maxRefreshSpansBytes, rangeOf);
    this.priority = priorityOf(opts.priority);
    const now = ctx.clock.now();
    this.readTs = this.writeTs = this.minTs = now;
    this.uncertaintyLimit = { wall: now.wall + ctx.clock.maxOffsetMicros, logical: 0 };
    if (opts.asOf !== undefined) this.setFixedTimestamp(opts.asOf);
  }

  // ---- KVTxn -------------------------------------------------------------------------

  readTimestamp(): Timestamp {
    return this.readTs;
  }
  provisionalCommitTimestamp(): Timestamp {
    return this.writeTs;
  }
  fixCommitTimestamp(): Timestamp {
    this.commitTsFixed = true;
    return this.writeTs;
  }
  /** The observed timestamps recorded so far, per node (tests, logs). */
  observedTimestamps(): readonly ObservedTimestamp[] {
    return this.observed ?? [];
  }
  /** The transaction's id (tests, logs). */
  get txnId(): Buffer {
    return this.id;
  }
  setFixedTimestamp(ts: Timestamp): void {
    this.readTs = this.writeTs = ts;
    this.uncertaintyLimit = ts;
    this.fixed = true;
  }
  setPriority(p: KVPriority): void {
    this.priority = priorityOf(p);
  }
  /**
   * Safe points — before each new attempt of a batch (after the last one's failure is settled: a STAGING record
   * proven or prevented) and between the pushes of a lock wait — call `check`; what it throws ends the call
   * (nothing marked: the caller rolls back, which aborts the record and releases the intents).
   */
  setCancelCheck(check: (() => void) | undefined): void {
    this.cancelCheck = check;
  }
  /**
   * The commit deadline (CockroachDB's Txn.UpdateDeadline): every commit
   * attempt is sent only while the write timestamp is below it — the commit
   * timestamp is the one the coordinator sends (a push makes the attempt fail
   * and come back here), so the check is exact; a read-only commit checks its
   * read timestamp. Past it: TxnRetryError(RETRY_COMMIT_DEADLINE). Kept across
   * restarts; undefined clears it.
   */
  setDeadline(ts: Timestamp | undefined): void {
    this.deadline = ts ?? null;
  }
  private checkDeadline(at: Timestamp): void {
    if (this.deadline !== null && !tsLess(at, this.deadline)) {
      throw this.fail(new TxnRetryError('RETRY_COMMIT_DEADLINE', `commit timestamp ${at.wall},${at.logical} is not below the deadline ${this.deadline.wall},${this.deadline.logical}`));
    }
  }

  async run(batch: KVBatchLike): Promise<KVResult[]> {
    this.checkUsable();
    const segs = segments(batch.requests);
    // One segment (a statement's reads, or its writes): its results as they are.
    if (segs.length === 1) return this.runSegment(segs[0] as KVRequest[], null);
    const out: KVResult[] = [];
    for (const seg of segs) for (const r of await this.runSegment(seg, null)) out.push(r);
    return out;
  }

  async commitInBatch(batch: KVBatchLike): Promise<KVResult[]> {
    this.checkUsable();
    const segs = segments(batch.requests);
    let last = segs.pop() ?? [];
    if (!last.every((q) => isWriteOp(q) && q.kind !== 'delRange')) {
      // Reads are served before the commit round (its parts run in parallel with the EndTxn), and so are ranged
      // writes: a parallel commit must be able to prove every in-flight write key by key.
      segs.push(last);
      last = [];
    }
    const out: KVResult[] = [];
    for (const seg of segs) for (const r of await this.runSegment(seg, null)) out.push(r);
    const hasWrites = last.some(isWriteOp);
    if (!hasWrites && this.lockSpans.size === 0) {
      // Read-only: no record, nothing to end.
      for (const r of await this.runSegment(last, null)) out.push(r);
      this.finishReadOnly();
      return out;
    }
    for (const r of await this.runSegment(last, 'commit')) out.push(r);
    await this.commitWait();
    return out;
  }

  /**
   * Commit wait: a commit timestamp ahead of the clock (pushed by a fresh
   * range's or a new lease's timestamp-cache horizon) is acknowledged only
   * once the clock has passed it, so a transaction that starts after the
   * acknowledgement reads at or above it (real-time order, DESIGN.md §6).
   */
  private async commitWait(): Promise<void> {
    for (;;) {
      const ahead = this.writeTs.wall - this.ctx.clock.now().wall;
      if (ahead < 0) return;
      await this.ctx.sleep(Math.ceil(ahead / 1000) + 1);
    }
  }

  /** Commits; a no-op on a transaction already committed (by commitInBatch). */
  async commit(): Promise<void> {
    if (this.state === 'committed') return;
    if (this.lockSpans.size === 0) {
      // Read-only (no write or lock was ever sent, so nothing is in flight either): what commitInBatch does for an
      // empty batch, without its segments and empty send (an implicit SELECT's commit).
      this.checkUsable();
      this.finishReadOnly();
      return;
    }
    await this.commitInBatch({ requests: [] });
  }

  /** Commits a transaction that wrote and locked nothing: no record, nothing to end; its deadline still holds. */
  private finishReadOnly(): void {
    this.checkDeadline(this.readTs);
    this.finish('committed');
    this.ctx.metrics.commits++;
  }

  async rollback(): Promise<void> {
    if (this.state === 'committed' || this.state === 'rolledBack' || this.state === 'ambiguous') return;
    this.finish('rolledBack');
    this.ctx.metrics.aborts++;
    await this.abortRecord();
  }

  async createSavepoint(): Promise<unknown> {
    this.checkUsable();
    const sp: Savepoint = { seq: this.seq, epoch: this.epoch, id: this.id };
    return sp;
  }

  async rollbackToSavepoint(token: unknown): Promise<void> {
    const sp = token as Savepoint;
    if (this.state !== 'pending') this.checkUsable();
    if (sp.epoch !== this.epoch || !sp.id.equals(this.id)) throw new CairnError('kv.savepoint_stale', 'kv: savepoint from an earlier epoch of the transaction', { sqlState: '3B001' });
    if (this.seq > sp.seq) this.ignored = [...this.ignored, { start: sp.seq + 1, end: this.seq }];
    this.pipeliner.rollbackTo(sp.seq);
  }

  async releaseSavepoint(_token: unknown): Promise<void> {
    this.checkUsable();
  }

  async restart(): Promise<void> {
    if (this.state === 'committed' || this.state === 'rolledBack') throw new CairnError('kv.txn_finished', 'kv: restart of a finished transaction');
    this.ctx.metrics.restarts++;
    const now = this.ctx.clock.now();
    if (this.state === 'aborted' || this.abortedByOther) {
      // The record is ABORTED for good: a new transaction id, the old intents cleaned up.
      await this.abortRecord();
      this.id = this.ctx.newTxnId();
      this.epoch = 0;
      this.anchor = null;
      this.lockSpans.clear();
      this.recordCreated = false;
      this.abortedByOther = false;
      this.minTs = now;
    } else {
      this.epoch++;
    }
    this.stopHeartbeat?.();
    this.stopHeartbeat = null;
    if (!this.fixed) {
      // Never below a refresh of the old epoch (CockroachDB forwards the write timestamp before refreshing): a failed
      // refresh still left its reads at refreshedTo in the timestamp caches of the ranges where it succeeded, under
      // this id, hiding other transactions' reads below it from this id's writes — a new epoch below refreshedTo
      // wrote under reads it never saw (kvnemesis's stale read; test/kv-txn/refresh-restart-tscache).
      this.readTs = this.writeTs = tsMax(tsMax(now, this.writeTs), this.refreshedTo);
      this.uncertaintyLimit = { wall: this.readTs.wall + this.ctx.clock.maxOffsetMicros, logical: 0 };
    }
    this.pushedTo = null;
    this.commitTsFixed = false;
    this.pipeliner.clear();
    this.readSpans.clear();
    this.ignored = [];
    this.state = 'pending';
  }

  // ---- the request path ------------------------------------------------------------------

  private checkUsable(): void {
    if (this.abortedByOther && this.state === 'pending') this.state = 'aborted';
    switch (this.state) {
      case 'pending':
        return;
      case 'aborted':
        throw new TransactionAbortedError(this.id);
      case 'retry':
        throw new TxnRetryError('RETRY_SERIALIZABLE', 'the transaction must restart after a retryable error');
      default:
        throw new CairnError('kv.txn_finished', `kv: transaction already ${this.state}`);
    }
  }

  private meta(): Txn {
    const m: TxnMeta = { id: this.id, epoch: this.epoch, writeTimestamp: this.writeTs, minTimestamp: this.minTs, sequence: this.seq, key: this.anchor ?? NO_ANCHOR, priority: this.priority };
    return this.ignored.length === 0 ? m : { ...m, ignoredSeqNums: this.ignored };
  }

  private async runSegment(seg: readonly KVRequest[], end: 'commit' | null): Promise<KVResult[]> {
    const writes = seg.some(isWriteOp);
    if (writes) {
      this.seq++;
      if (this.anchor === null) this.anchor = firstWriteKey(seg);
    }
    // Locking reads (FOR UPDATE) hold unreplicated locks until EndTxn releases them: they count as lock spans.
    const locking = seg.filter(isLockingRead);
    if (locking.length > 0) {
      if (this.anchor === null) this.anchor = (locking[0] as KVRequest & { key: Buffer }).key;
      this.noteWrites(locking);
    }
    const reqs = seg.map(toApiRequest);
    // Pipelining: earlier writes this segment touches (all of them, at commit) are proven in the same batch; a plain
    // write segment is answered before its Raft round.
    const chained = this.pipeliner.chain(reqs, { id: this.id, epoch: this.epoch }, end !== null);
    const pipelined = end === null && writes && this.pipeliner.canPipeline(reqs);
    const inFlight: InFlightWrite[] = end === null ? [] : this.pipeliner.inFlight();
    for (const q of seg) if (isWriteOp(q) && q.kind !== 'delRange') inFlight.push({ key: q.key, seq: this.seq });
    // Lock spans before sending: a failed multi-range batch may still have left intents.
    if (writes) this.noteWrites(seg);
    let readsNoted = false;
    let provedNoted = false;
    let pushRetried = false;
    // A write of this segment was refused as pushed by the timestamp cache: the next attempt carries the refresh of
    // the read spans to this timestamp in its own batch (carried refresh, see the header).
    let refreshWith: Timestamp | null = null;
    for (let attempt = 0; ; attempt++) {
      if (attempt > 0) this.cancelCheck?.();
      const all: readonly Request[] = end === null ? chained.requests : [...chained.requests, this.endTxnRequest(inFlight)];
      if (all.length === 0) return [];
      let res: BatchResponse;
      let carried = 0;
      try {
        if (this.pushedTo !== null && tsLess(this.writeTs, this.pushedTo)) await this.refreshTo(this.pushedTo, 'RETRY_SERIALIZABLE');
        if (refreshWith !== null && !tsLess(this.readTs, refreshWith)) refreshWith = null;
        this.committing = end !== null;
        if (end !== null) this.checkDeadline(this.writeTs);
        const observed = this.observed === undefined || this.fixed ? {} : { observedTimestamps: this.observed };
        const head = refreshWith === null ? [] : this.refreshRequests();
        carried = head.length;
        // Parts of a carried refresh may succeed on some ranges while the batch fails: like refreshTo, mark it sent.
        if (carried > 0) this.refreshedTo = tsMax(this.refreshedTo, refreshWith as Timestamp);
        const ts = refreshWith ?? this.readTs;
        const txn = refreshWith === null ? this.meta() : { ...this.meta(), writeTimestamp: refreshWith };
        const ba = { header: { rangeId: 0, timestamp: ts, txn, uncertaintyLimit: tsMax(this.uncertaintyLimit, ts), ...(pipelined && carried === 0 ? { asyncConsensus: true } : {}), ...observed }, requests: carried === 0 ? all : [...head, ...all] };
        // Test-only (CAIRN_CRASH_POINT, src/kv/crash-point.ts): off in production, where `armed` is false.
        res = await (crashPoint.armed && end !== null ? sendAtCrashPoint(this.ctx.sender, ba) : this.ctx.sender.send(ba));
      } catch (e) {
        this.committing = false;
        // A failed commit attempt may still have completed a STAGING record (this one's or an earlier attempt's).
        if (end !== null && inFlight.length > 0 && !(e instanceof CairnError && e.ambiguous) && (await this.settleStaging(null))) return seg.map((q) => toKvResult(q, writeResponse(q)));
        if (e instanceof TxnRetryError && e.reason === 'RETRY_COMMIT_DEADLINE') throw e;
        if (isIntentMissing(e) && chained.proved.length > 0) {
          // A chained QueryIntent also misses an intent a pusher moved above our timestamp: the record tells where
          // (PushTxn wrote it); refresh there and prove again. Missing there too: the pipelined write was lost —
          // never accepted silently.
          const pushed = pushRetried ? null : await this.recordTimestamp();
          pushRetried = true;
          if (pushed === null || !tsLess(this.writeTs, pushed)) throw this.fail(new AsyncWriteFailureError(`a pipelined write of txn ${this.id.toString('hex').slice(0, 8)} is missing`, e));
          await this.refreshTo(pushed, 'RETRY_SERIALIZABLE');
          continue;
        }
        if (attempt >= MAX_RETRIES) throw this.fail(e);
        const pushedTo = end === null && writes ? this.cachePushOf(e) : null;
        if (pushedTo !== null) {
          refreshWith = refreshWith === null ? pushedTo : tsMax(refreshWith, pushedTo);
          continue;
        }
        if (carried > 0 && e instanceof CairnError && e.code === 'kv.refresh_failed') {
          this.ctx.metrics.refreshes++;
          this.ctx.metrics.refreshFailures++;
          throw this.fail(new TxnRetryError('RETRY_SERIALIZABLE', e.message));
        }
        if (carried > 0 && !(e instanceof CairnError && e.ambiguous)) {
          // Whatever else the attempt met (a cput's actual value, a newer version, an intent) it met at refreshWith,
          // above the reads not yet validated there — a failed cput would report a value from our future. Validate the
          // reads there on their own (the old path) and evaluate the segment again at that timestamp.
          await this.refreshTo(refreshWith as Timestamp, 'RETRY_SERIALIZABLE');
          refreshWith = null;
          continue;
        }
        // A locking read conflicts like a write, whatever the timestamps: it pushes to abort, as writers do.
        await this.handleError(e, writes || end !== null || locking.length > 0);
        continue;
      }
      if (carried > 0) {
        // The carried refresh succeeded with the batch: the reads hold up to refreshWith.
        this.ctx.metrics.refreshes++;
        this.readTs = this.writeTs = refreshWith as Timestamp;
        refreshWith = null;
      }
      this.observed = mergeObservedTimestamps(this.observed, res.observedTimestamps);
      // The chained QueryIntents proved their writes; a pipelined segment's writes are in flight from now on (a batch
      // that carried a refresh was not pipelined: its writes applied before the answer).
      if (!provedNoted) this.pipeliner.onSuccess(chained.proved, pipelined && carried === 0 ? reqs : null, this.seq);
      provedNoted = true;
      if (!writes && end === null && tsLess(this.writeTs, res.timestamp)) {
        // A leaseholder served this segment's reads above our timestamp (a locking read met a newer version and
        // its range re-read the whole batch there). When the DistSender split the segment over several ranges,
        // the other ranges' parts were served at our timestamp, and a write between the two timestamps would go
        // unseen (kvnemesis: a scan missed a write committed below the reader's commit timestamp). So refresh the
        // earlier reads to the new timestamp and read the whole segment again there.
        await this.refreshTo(res.timestamp, 'RETRY_WRITE_TOO_OLD');
        if (attempt >= MAX_RETRIES) throw this.fail(new TxnRetryError('RETRY_WRITE_TOO_OLD', 'reads kept being served above the transaction timestamp'));
        continue;
      }
      this.committing = false;
      // This segment's reads count from now on: a refresh below must cover them too.
      if (!readsNoted) this.noteReads(seg);
      readsNoted = true;
      if (tsLess(this.writeTs, res.timestamp)) {
        // A write was pushed by the timestamp cache: refresh eagerly, and for a commit, stage again — unless the
        // record staged at the old timestamp is committed already (a pushed write may be a replay kept below it).
        if (end !== null && (await this.settleStaging((res.responses[res.responses.length - 1] as TxnRecordResponse).record))) return seg.map((q) => toKvResult(q, writeResponse(q)));
        await this.refreshTo(res.timestamp, 'RETRY_SERIALIZABLE');
        if (end !== null) continue;
      }
      if (end !== null) this.afterCommit(res.responses[res.responses.length - 1] as TxnRecordResponse);
      if ((writes || locking.length > 0) && !this.recordCreated && this.stopHeartbeat === null && this.state === 'pending') this.startHeartbeat();
      const off = carried + chained.proved.length;
      return seg.map((q, i) => toKvResult(q, res.responses[i + off] as Response));
    }
  }

  private endTxnRequest(inFlight: readonly InFlightWrite[]): Request {
    const spans = this.lockSpans.spans();
    return { kind: 'endTxn', key: this.anchor as Buffer, commit: true, inFlightWrites: inFlight, lockSpans: spans };
  }

  /**
   * After a commit attempt that did not cleanly succeed (it failed, or a write
   * was pushed above the staging timestamp), before the coordinator moves on —
   * stages again higher, restarts, rolls back —, it proves or prevents its own
   * implicit commit, as a recoverer would (txn-recovery.ts): a STAGING record
   * of this epoch is committed as soon as all its in-flight writes are there at
   * or below its timestamp, and some may come from earlier attempts (a re-sent
   * write that is already there is a no-op that keeps its first timestamp), so
   * this attempt's failure proves nothing. QueryIntent of every in-flight
   * write at the staging timestamp: one missing is thereby prevented (the
   * record can never be committed at that timestamp; false), all found means
   * committed (made explicit here; true). `staged`: the record this attempt's
   * EndTxn returned; null: read it (no record, another epoch's, or not
   * STAGING: false; COMMITTED: true; ABORTED: TransactionAbortedError).
   * An answer we cannot get leaves the outcome unknown: AmbiguousResultError.
   */
  private async settleStaging(staged: TxnRecord | null): Promise<boolean> {
    let rec = staged;
    try {
      if (rec === null && this.anchor !== null) {
        const res = await this.ctx.sender.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'queryTxn', key: this.anchor, txnId: this.id }] });
        rec = (res.responses[0] as TxnRecordResponse).record;
      }
      if (rec === null || rec.epoch !== this.epoch) return false;
      if (rec.status === 'staging') {
        if (!(await queryInFlightWrites(this.ctx.sender, rec))) return false;
        const res = await this.ctx.sender.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'recoverTxn', key: rec.key, txn: recordMeta(rec), implicitlyCommitted: true }] });
        rec = (res.responses[0] as TxnRecordResponse).record;
        if (rec === null) return false;
      }
    } catch (e) {
      throw this.fail(new AmbiguousResultError(`kv: could not tell whether the staged commit of txn ${this.id.toString('hex').slice(0, 8)} happened`, e));
    }
    if (rec.status === 'aborted') throw this.fail(new TransactionAbortedError(this.id));
    if (rec.status !== 'committed') return false;
    this.afterCommit(recordResponse('endTxn', rec));
    return true;
  }

  /** Translates an error of a send into a retry of the segment, or throws. */
  private async handleError(e: unknown, write: boolean): Promise<void> {
    if (e instanceof WriteIntentError) {
      await this.ctx.pusher.handle(e.intents, { id: this.id, priority: this.priority, anchor: this.recordCreated || this.lockSpans.size > 0 ? this.anchor : null, pushTo: tsNext(tsMax(this.readTs, this.uncertaintyLimit)), checkCancel: this.cancelCheck }, write);
      return;
    }
    if (e instanceof WriteTooOldError) return this.refreshTo(tsMax(e.actualTimestamp, this.writeTs), 'RETRY_WRITE_TOO_OLD');
    if (e instanceof ReadWithinUncertaintyIntervalError) return this.refreshTo(tsNext(e.valueTimestamp), 'RETRY_UNCERTAINTY');
    if (e instanceof CairnError && e.code === 'kv.txn_retry') return this.refreshTo(await this.pushedTimestamp(e), 'RETRY_SERIALIZABLE');
    throw this.fail(e);
  }

  /**
   * The timestamp a write of a (non-committing) segment was refused at because the timestamp cache pushed it
   * (ReplicaConcurrency.prepare names it), when the next attempt may carry the refresh there; null otherwise (the
   * error is handled as before: no read spans — nothing to refresh —, a read set over budget, a fixed timestamp).
   */
  private cachePushOf(e: unknown): Timestamp | null {
    if (!(e instanceof CairnError) || e.code !== 'kv.txn_retry') return null;
    if (this.readSpans.size === 0 || this.readSpans.overBudget || this.fixed || this.commitTsFixed) return null;
    const named = retryTimestampOf(e);
    return named === null ? null : tsMax(named, this.writeTs);
  }

  /** Where a commit refused as pushed must move: above the record's pushed timestamp and the clock. */
  private async pushedTimestamp(e: CairnError): Promise<Timestamp> {
    const named = retryTimestampOf(e);
    if (named !== null) return tsMax(named, this.writeTs);
    const ts = tsNext(tsMax(this.ctx.clock.now(), this.writeTs));
    const rec = await this.recordTimestamp();
    return rec === null ? ts : tsMax(ts, rec);
  }

  /** The write timestamp of this transaction's record (null: no record yet); an ABORTED record throws. */
  private async recordTimestamp(): Promise<Timestamp | null> {
    if (this.anchor === null) return null;
    const res = await this.ctx.sender.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'queryTxn', key: this.anchor, txnId: this.id }] });
    const rec = (res.responses[0] as TxnRecordResponse).record;
    if (rec !== null && rec.status === 'aborted') throw this.fail(new TransactionAbortedError(this.id));
    return rec === null ? null : rec.writeTimestamp;
  }

  /** Marks the txn after a failed send; returns the error to throw. */
  private fail(e: unknown): unknown {
    if (e instanceof ConditionFailedError) {
      // The failed cput read its key: a later refresh must validate that read.
      this.readSpans.insert({ key: e.key, endKey: null });
      return new KvConditionFailedError(e.key, e.actual);
    }
    if (e instanceof CairnError) {
      if (e.code === 'kv.txn_aborted') {
        this.state = 'aborted';
        this.abortedByOther = true;
        this.stopHeartbeat?.();
        this.stopHeartbeat = null;
      } else if (e.ambiguous) this.state = 'ambiguous';
      else if (e.retryable) this.state = 'retry';
    }
    return e;
  }

  /** Span refresher: moves the read ts to `ts` if nothing read changed; else a retryable error. */
  private async refreshTo(ts: Timestamp, reason: RetryReason): Promise<void> {
    if (!tsLess(this.readTs, ts)) {
      this.writeTs = tsMax(this.writeTs, ts);
      return;
    }
    if (this.fixed) throw this.fail(new TxnRetryError(reason, 'a fixed-timestamp (AS OF SYSTEM TIME) transaction cannot move'));
    if (this.commitTsFixed) throw this.fail(new TxnRetryError(reason, 'the commit timestamp was fixed by cluster_logical_timestamp()'));
    this.ctx.metrics.refreshes++;
    // A read set condensing could not bring under its budget is not refreshed: restart (CockroachDB's refreshInvalid).
    if (this.readSpans.overBudget) throw this.fail(new TxnRetryError(reason, 'the read set is too large to refresh'));
    if (this.readSpans.size > 0) {
      this.refreshedTo = tsMax(this.refreshedTo, ts);
      const requests = this.refreshRequests();
      try {
        const res = await this.ctx.sender.send({ header: { rangeId: 0, timestamp: ts, txn: { ...this.meta(), writeTimestamp: ts } }, requests });
        this.observed = mergeObservedTimestamps(this.observed, res.observedTimestamps);
      } catch (e) {
        this.ctx.metrics.refreshFailures++;
        if (e instanceof CairnError && (e.code === 'kv.refresh_failed' || e instanceof WriteIntentError)) throw this.fail(new TxnRetryError(reason, e.message));
        throw this.fail(e);
      }
    }
    this.readTs = this.writeTs = ts;
  }

  /** Refresh(Range) of every read span from the read timestamp (to the timestamp of the batch carrying them). */
  private refreshRequests(): Request[] {
    return this.readSpans.spans().map((s) => (s.endKey === null ? { kind: 'refresh', key: s.key, refreshFrom: this.readTs } : { kind: 'refreshRange', key: s.key, endKey: s.endKey, refreshFrom: this.readTs }));
  }

  private noteReads(seg: readonly KVRequest[]): void {
    for (const q of seg) {
      if (q.kind === 'get' || q.kind === 'cput') this.readSpans.insert({ key: q.key, endKey: null });
      else if (q.kind === 'scan' || q.kind === 'delRange') this.readSpans.insert({ key: q.key, endKey: q.endKey });
    }
  }

  private noteWrites(seg: readonly KVRequest[]): void {
    for (const q of seg) {
      if (!isWriteOp(q) && !isLockingRead(q)) continue;
      this.lockSpans.insert(lockSpanOf(q));
    }
  }

  private afterCommit(r: TxnRecordResponse): void {
    const rec = r.record as TxnRecord;
    // The record's timestamp is the commit timestamp (a retried commit may find the record already committed).
    if (rec.status === 'committed' || rec.status === 'staging') this.readTs = this.writeTs = rec.writeTimestamp;
    this.finish('committed');
    this.ctx.metrics.commits++;
    if (r.onePhase) this.ctx.metrics.onePhaseCommits++;
    const meta: TxnMeta = { ...this.meta(), writeTimestamp: rec.writeTimestamp, epoch: rec.epoch };
    const update = { txn: meta, status: 'committed' as const, ignoredSeqNums: this.ignored };
    if (rec.status === 'staging') {
      // Implicitly committed: acknowledge now; make it explicit and clean up asynchronously.
      this.ctx.metrics.parallelCommits++;
      void this.ctx.sender
        .send({ header: { rangeId: 0, timestamp: this.writeTs, txn: this.meta() }, requests: [{ kind: 'endTxn', key: rec.key, commit: true, inFlightWrites: [], lockSpans: rec.lockSpans }] })
        .then(
          (res) => this.ctx.resolver.enqueue(update, ((res.responses[0] as TxnRecordResponse).record as TxnRecord).lockSpans),
          () => undefined, // a recoverer will finalize it
        );
      return;
    }
    this.ctx.resolver.enqueue(update, rec.lockSpans);
  }

  private finish(state: State): void {
    this.state = state;
    this.pipeliner.clear();
    this.stopHeartbeat?.();
    this.stopHeartbeat = null;
  }

  /** Writes ABORTED (best effort) and resolves the intents left elsewhere. */
  private async abortRecord(): Promise<void> {
    if (this.anchor === null || this.lockSpans.size === 0) return;
    const spans = this.lockSpans.spans();
    const meta = this.meta();
    try {
      const res = await this.ctx.sender.send({ header: { rangeId: 0, timestamp: this.ctx.clock.now(), txn: meta }, requests: [{ kind: 'endTxn', key: this.anchor, commit: false, inFlightWrites: [], lockSpans: spans }] });
      const rec = (res.responses[0] as TxnRecordResponse).record;
      this.ctx.resolver.enqueue({ txn: meta, status: 'aborted' }, rec?.lockSpans ?? spans);
    } catch {
      this.ctx.resolver.enqueue({ txn: meta, status: 'aborted' }, spans);
    }
  }

  private startHeartbeat(): void {
    const anchor = this.anchor as Buffer;
    let busy = false;
    const since = this.ctx.clock.now().wall;
    this.stopHeartbeat = this.ctx.every(txnLiveness.heartbeatIntervalMs, () => {
      if (busy || this.state !== 'pending') return;
      // The first beat creates the record, and a one-phase commit in flight must not find one (it would commit
      // through a record and an intent, resolved by one more Raft write: a slow implicit UPDATE's locking read
      // started this loop). So no record is created while the commit is in flight — unless the transaction is
      // half its expiry old, past which a record-less transaction starts to look abandoned to pushers.
      if (this.committing && !this.recordCreated && this.ctx.clock.now().wall - since < txnLiveness.expiryMicros / 2) return;
      busy = true;
      const kind = this.recordCreated ? 'heartbeatTxn' : 'beginTxn';
      const req: Request = kind === 'beginTxn' ? { kind, key: anchor } : { kind, key: anchor, now: this.ctx.clock.now() };
      this.ctx.sender
        .send({ header: { rangeId: 0, timestamp: this.ctx.clock.now(), txn: this.meta() }, requests: [req] })
        .then(
          (res) => {
            this.recordCreated = true;
            const rec = (res.responses[0] as TxnRecordResponse).record;
            if (rec !== null && rec.status === 'aborted') this.abortedByOther = true;
            else if (rec !== null && tsLess(this.writeTs, rec.writeTimestamp)) this.pushedTo = rec.writeTimestamp;
          },
          (e: unknown) => {
            if (e instanceof CairnError && e.code === 'kv.txn_aborted') this.abortedByOther = true;
          },
        )
        .finally(() => (busy = false));
    });
  }
}

// ---- request translation ------------------------------------------------------------------

function isWriteOp(q: KVRequest): boolean {
  return q.kind === 'put' || q.kind === 'cput' || q.kind === 'del' || q.kind === 'delRange';
}

function firstWriteKey(seg: readonly KVRequest[]): Buffer {
  for (const q of seg) if (isWriteOp(q)) return q.key;
  throw new Error('unreachable');
}

function isLockingRead(q: KVRequest): boolean {
  return (q.kind === 'get' || q.kind === 'scan') && q.lock === 'exclusive';
}

function lockSpanOf(q: KVRequest): LockSpan {
  return q.kind === 'delRange' || q.kind === 'scan' ? { key: q.key, endKey: q.endKey } : { key: q.key, endKey: null };
}

/** Splits a batch into runs of reads and runs of writes, so that no segment writes one key twice (one sequence number per segment). */
function segments(reqs: readonly KVRequest[]): KVRequest[][] {
  const out: KVRequest[][] = [[]];
  // The keys written in the current segment; created at its first write (a read-only batch needs none).
  let written: Set<string> | null = null;
  let ranged = false;
  let writing: boolean | null = null;
  for (const q of reqs) {
    // Reads and writes go in separate sends (in order): a write batch the timestamp cache pushes then never carries reads.
    if (writing !== null && writing !== isWriteOp(q)) {
      out.push([]);
      written = null;
      ranged = false;
    }
    writing = isWriteOp(q);
    if (isWriteOp(q)) {
      const k = q.key.toString('latin1');
      written ??= new Set();
      if (written.has(k) || ranged || (q.kind === 'delRange' && written.size > 0)) {
        out.push([]);
        written = new Set();
        ranged = false;
      }
      written.add(k);
      if (q.kind === 'delRange') ranged = true;
    }
    (out[out.length - 1] as KVRequest[]).push(q);
  }
  return out;
}

function toApiRequest(q: KVRequest): Request {
  switch (q.kind) {
    case 'get':
      return q.lock === 'exclusive' ? { kind: 'get', key: q.key, lock: 'exclusive' } : { kind: 'get', key: q.key };
    case 'scan': {
      const scan = { kind: q.reverse ? 'reverseScan' : 'scan', key: q.key, endKey: q.endKey, maxKeys: q.limit } as const;
      return q.lock === 'exclusive' ? { ...scan, lock: 'exclusive' } : scan;
    }
    case 'put':
      return { kind: 'put', key: q.key, value: q.value };
    case 'cput':
      return { kind: 'cput', key: q.key, value: q.value, expected: q.expected, allowIfDoesNotExist: false };
    case 'del':
      return { kind: 'delete', key: q.key };
    case 'delRange':
      return { kind: 'deleteRange', key: q.key, endKey: q.endKey, returnKeys: true };
  }
}

/** The response of a write of a commit found committed by settleStaging (writes answer nothing more). */
function writeResponse(q: KVRequest): Response {
  return { kind: q.kind === 'del' ? 'delete' : q.kind } as Response;
}

function toKvResult(q: KVRequest, r: Response): KVResult {
  switch (q.kind) {
    case 'get':
      return { kind: 'get', value: (r as { value: Buffer | null }).value };
    case 'scan': {
      const s = r as ScanResponse;
      let rows: readonly KeyValue[] = s.rows;
      let resumeKey = q.reverse ? s.resumeEndKey : s.resumeKey;
      if (q.targetBytes > 0) {
        let bytes = 0;
        for (let i = 0; i < rows.length; i++) {
          const kv = rows[i] as KeyValue;
          bytes += kv.key.length + kv.value.length;
          if (bytes >= q.targetBytes && i < rows.length - 1) {
            resumeKey = q.reverse ? kv.key : keyNext(kv.key);
            rows = rows.slice(0, i + 1);
            break;
          }
        }
      }
      return { kind: 'scan', rows, resumeKey };
    }
    case 'put':
      return { kind: 'put' };
    case 'cput':
      return { kind: 'cput' };
    case 'del':
      return { kind: 'del' };
    case 'delRange':
      return { kind: 'delRange', deleted: (r as { keys: readonly Buffer[] }).keys.length };
  }
}
