/**
 * One-phase commit without intents (CockroachDB's evaluate1PC in
 * replica_write.go): a batch that is a whole transaction on one range —
 * its point writes and its committing EndTxn, nothing else — is evaluated
 * as NON-transactional writes at the transaction's write timestamp, so the
 * batch never writes an intent, never decodes it again to resolve it, and
 * writes no record. The result must be exactly the one of the intent path
 * (cmd-end-txn.ts: intents written, then resolved committed by the EndTxn
 * in the same batch): the same engine bytes, MVCC stats delta and
 * responses. Test: test/kv-txn/one-phase-commit.test.ts compares both paths
 * over random batches.
 *
 * When it applies (onePhaseCandidate, checked without reading anything):
 *   - the transaction has no ignored sequence numbers (rolled-back
 *     savepoints: the intent path would drop a write of this batch at one);
 *   - the header timestamp equals the transaction's write timestamp (the
 *     intents would be written at the one, committed at the other);
 *   - the requests are put / cput / delete, then ONE EndTxn(commit) last,
 *     with no in-flight writes left elsewhere (rewriteBatch took out this
 *     batch's own) and at most END_TXN_LOCAL_RESOLVE_MAX_KEYS lock spans, all
 *     single keys inside the range (anything else leaves a record: not 1PC);
 *   - every write's key is one of the lock spans and no key is written twice
 *     (a second write at the same timestamp would be WriteTooOld here, while
 *     the intent path stacks it on the first).
 * Then (evaluateOnePhase): no transaction record may exist (a heartbeat or
 * a push wrote one: the intent path writes a record too, so not 1PC); the
 * writes are evaluated without the transaction; lock spans not written by
 * this batch (intents of the transaction's earlier batches, or locks of its
 * locking reads) are resolved as the intent path does.
 *
 * Fallback: ANY error of the non-transactional evaluation (another
 * transaction's intent, the transaction's own intent of an earlier batch or
 * epoch, a newer committed version, a failed condition) makes the caller
 * throw the batch away and evaluate the intent path from scratch, which
 * meets the same condition and answers it as it always did (an intent found
 * → WriteIntentError and the lock-table wait, WriteTooOld, ConditionFailed):
 * the client sees the intent path's outcome, only the successful case is
 * cheaper.
 *
 * Timestamps: a batch pushed by the timestamp cache never gets here as a
 * commit (concurrency-manager.ts prepare refuses a committing batch whose
 * writes were pushed: RETRY_SERIALIZABLE), so the write timestamp is the one
 * the transaction read at or refreshed to; the answer carries it as the
 * COMMITTED record's writeTimestamp, as the intent path's does.
 *
 * Knob: KvSettings.onePhaseCommitWithoutIntents (CAIRN_KV_1PC_WITHOUT_INTENTS=
 * false turns it off for a process, for A/B runs). Counters:
 * onePhaseCommitCounters (process-wide).
 *
 * Ownership: src/kv (transaction layer); pure functions over the batch.
 */
import { compareBytes } from '../../storage/encoding/bytes.js';
import type { ReadWriter, WriteBatch } from '../../storage/engine.js';
import { emptyStats, mvccPrefetch, type MvccStats } from '../../storage/mvcc.js';
import { tsEqual } from '../util/hlc.js';
import type { Request, Response } from './api.js';
import { lookupCommand, type EvalContext, type EvalHeader } from './batcheval/index.js';
import { recordResponse, type EndTxnRequest, type LockSpan } from './txn-api.js';
import { loadTxnRecord } from './txn-record.js';
import { END_TXN_LOCAL_RESOLVE_MAX_KEYS, recordBase, recordMeta, resolveLocal } from './txn-eval.js';

/** Process-wide counts, for benchmarks and tests. */
export const onePhaseCommitCounters = {
  /** Batches committed without intents. */
  withoutIntents: 0,
  /** Candidates that fell back to the intent path (an error, or a record found). */
  fallbacks: 0,
};

/**
 * The batch's EndTxn when the batch may commit without intents (see the
 * header), else null. Reads nothing.
 */
export function onePhaseCandidate(h: EvalHeader, reqs: readonly Request[], desc: { readonly startKey: Buffer; readonly endKey: Buffer }): EndTxnRequest | null {
  const txn = h.txn;
  const n = reqs.length;
  if (txn === undefined || n < 2) return null;
  const end = reqs[n - 1] as Request;
  if (end.kind !== 'endTxn' || !end.commit || end.inFlightWrites.length > 0) return null;
  if ((txn.ignoredSeqNums !== undefined && txn.ignoredSeqNums.length > 0) || !tsEqual(h.timestamp, txn.writeTimestamp)) return null;
  const spans = end.lockSpans;
  if (spans.length < n - 1 || spans.length > END_TXN_LOCAL_RESOLVE_MAX_KEYS) return null;
  for (let i = 0; i < n - 1; i++) {
    const k = (reqs[i] as Request).kind;
    if (k !== 'put' && k !== 'cput' && k !== 'delete') return null;
  }
  for (const s of spans) {
    if (s.endKey !== null || compareBytes(s.key, desc.startKey) < 0 || compareBytes(s.key, desc.endKey) >= 0) return null;
  }
  return end;
}

/**
 * Evaluates a candidate (onePhaseCandidate returned `end`) into `rw` without
 * intents; null when it does not apply after all or any write failed — the
 * caller then discards `rw` and ctx's stats and evaluates the intent path.
 */
export async function evaluateOnePhase(ctx: EvalContext, rw: ReadWriter, h: EvalHeader, reqs: readonly Request[], end: EndTxnRequest): Promise<Response[] | null> {
  const txn = h.txn;
  if (txn === undefined) return null;
  const n = reqs.length - 1;
  // Which lock spans this batch writes; each write must be a lock span of its own.
  let unwritten: Map<string, LockSpan> | null = null;
  if (end.lockSpans.length === 1 && n === 1) {
    if (!(end.lockSpans[0] as LockSpan).key.equals((reqs[0] as { key: Buffer }).key)) return null;
  } else {
    unwritten = new Map();
    for (const s of end.lockSpans) unwritten.set(s.key.toString('latin1'), s);
    for (let i = 0; i < n; i++) {
      if (!unwritten.delete((reqs[i] as { key: Buffer }).key.toString('latin1'))) return null;
    }
  }
  const { record } = loadTxnRecord(rw, end.key, txn.id);
  if (record !== null) {
    onePhaseCommitCounters.fallbacks++;
    return null;
  }
  const plain: EvalHeader = { rangeId: h.rangeId, timestamp: h.timestamp };
  const responses: Response[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const q = reqs[i] as Request;
      responses.push(await lookupCommand(q.kind).evaluate(ctx, rw as never, plain, q));
    }
  } catch {
    onePhaseCommitCounters.fallbacks++;
    return null;
  }
  const committed = { ...recordBase(txn, end, null, h.timestamp), status: 'committed' as const, lockSpans: [] };
  if (unwritten !== null && unwritten.size > 0) {
    // The transaction's earlier writes (and locking reads) on this range: resolved as the intent path resolves them.
    const rest = await resolveLocal(rw, ctx.desc, [...unwritten.values()], { txn: recordMeta(committed), status: 'committed', ignoredSeqNums: [] }, ctx.stats);
    if (rest.length > 0) {
      onePhaseCommitCounters.fallbacks++;
      return null;
    }
  }
  responses.push(recordResponse('endTxn', committed, { onePhase: true }));
  onePhaseCommitCounters.withoutIntents++;
  return responses;
}

/** What evaluateWriteBatch needs of its replica. */
export interface WriteBatchEnv {
  newBatch(): WriteBatch;
  /** An evaluation context adding its MVCC stats delta into `stats`. */
  evalContext(stats: MvccStats): EvalContext;
  /** KvSettings.onePhaseCommitWithoutIntents. */
  readonly withoutIntents: boolean;
}

/**
 * Evaluates a write batch into a new WriteBatch: without intents when it is
 * a one-phase-commit candidate and that succeeds, else request by request
 * (the intent path), from scratch. `prefetch`: the point-write keys whose
 * heads are read ahead in one getMany (null: none).
 */
export async function evaluateWriteBatch(env: WriteBatchEnv, h: EvalHeader, reqs: readonly Request[], prefetch: readonly Buffer[] | null): Promise<{ batch: WriteBatch; stats: MvccStats; responses: Response[] }> {
  let batch = env.newBatch();
  let stats = emptyStats();
  let ec = env.evalContext(stats);
  if (prefetch !== null) await mvccPrefetch(batch, prefetch);
  const end = env.withoutIntents ? onePhaseCandidate(h, reqs, ec.desc) : null;
  if (end !== null) {
    const responses = await evaluateOnePhase(ec, batch, h, reqs, end);
    if (responses !== null) return { batch, stats, responses };
    if (!batch.isEmpty()) {
      // Only point writes ran into the discarded batch (no side effects): its stats go with it.
      batch = env.newBatch();
      stats = emptyStats();
      ec = env.evalContext(stats);
      if (prefetch !== null) await mvccPrefetch(batch, prefetch);
    }
  }
  const responses: Response[] = [];
  for (const q of reqs) responses.push(await lookupCommand(q.kind).evaluate(ec, batch as never, h, q));
  return { batch, stats, responses };
}
