/**
 * The request sequencer that ties latches and the lock table together
 * (CockroachDB's concurrency_manager.go: SequenceReq / FinishReq /
 * HandleWriterIntentError), for the Replica on the leaseholder.
 *
 *     sequenceReq(req):
 *       loop
 *         latches ← LatchManager.acquire(req.latchSpans)     (bounded by req.signal)
 *         guard   ← LockTable.scanAndEnqueue(req)
 *         if not guard.shouldWait → return {latches, guard}   evaluate now
 *         release latches                                     never wait holding latches
 *         outcome ← LockTable.waitOn(guard, pushAfter, deadline, signal)
 *         if outcome = push → pusher.push(req, outcome)       PushTxn + resolve intents,
 *                                                             which call updateLocks
 *     finishReq(g):                 release latches, leave the lock table
 *     handleWriterIntentError(g, intents):
 *                                   release latches, add the discovered locks; the
 *                                   caller then calls sequenceReq(req, g) again
 *
 * The push itself (reading the pushee's record, decidePush, the txn wait
 * queue, writing the record, resolving intents) needs the KV layer, so it is
 * injected as a Pusher; so are the push delay and the lock-wait deadline,
 * which are timers the server owns. On any failure the request's latches are
 * released and it leaves the lock table before the error propagates.
 *
 * Ownership: one ConcurrencyManager per range on its leaseholder; a
 * RequestGuard belongs to its request until finishReq.
 */
import type { Timestamp } from '../../util/hlc.js';
import { LatchManager, type LatchGuard } from './latch-manager.js';
import { LockTable, type DiscoveredIntent, type LockTableGuard, type LockTxn, type WaitingState, type WaitOutcome } from './lock-table.js';
import type { SpanSet } from './span-set.js';

export interface SequencedRequest {
  /** Undefined: non-transactional. */
  readonly txn?: LockTxn;
  /** The read timestamp. */
  readonly timestamp: Timestamp;
  /** The spans to latch (with timestamps for MVCC-aware latching). */
  readonly latchSpans: SpanSet;
  /** The user-key spans the lock table checks (usually latchSpans minus range-local keys). */
  readonly lockSpans: SpanSet;
  readonly name?: string;
  /** Cancels waiting (latches and locks) — the client went away or its deadline passed. */
  readonly signal?: AbortSignal;
}

export type PushOutcome = Extract<WaitOutcome, { kind: 'push' }>;

export interface Pusher {
  /**
   * Pushes the transaction in the request's way and resolves its intents (so
   * that the lock table learns of it through updateLocks); resolves when the
   * request should re-scan. Rejects to fail the request (e.g. the pusher was
   * itself aborted as a deadlock victim). It must make progress: returning
   * while the lock table still shows the same blocker, with a push delay that
   * is already due, makes sequenceReq push again at once (a hot loop).
   */
  push(req: SequencedRequest, outcome: PushOutcome): Promise<void>;
  /** When the waiter should push (e.g. at once for an expired holder, after a delay otherwise). */
  pushDelay(req: SequencedRequest, state: WaitingState): PromiseLike<unknown>;
  /** When waiting for locks gives up (LockWaitTimeoutError); undefined: no bound but the signal. */
  lockTimeout?(req: SequencedRequest): PromiseLike<unknown> | undefined;
}

export class RequestGuard {
  /** @internal */ latches: LatchGuard | null = null;
  /** @internal */ locks: LockTableGuard | null = null;
  /** Waits in the lock table so far (each ends in a re-scan or a push). */
  waits = 0;
  constructor(readonly req: SequencedRequest) {}

  /** Whether the request holds its latches (it may evaluate). */
  get holdsLatches(): boolean {
    return this.latches?.held === true;
  }

  /** The request's place in the lock table (null before the first scan). */
  get lockGuard(): LockTableGuard | null {
    return this.locks;
  }
}

export interface ConcurrencyManagerOptions {
  readonly pusher: Pusher;
  readonly latches?: LatchManager;
  readonly lockTable?: LockTable;
  /** Called when a request first waits in the lock table (once per request, whichever sequenceReq call waits). */
  readonly onFirstWait?: () => void;
}

export class ConcurrencyManager {
  readonly latches: LatchManager;
  readonly lockTable: LockTable;
  private readonly pusher: Pusher;
  private readonly onFirstWait: (() => void) | undefined;

  constructor(opts: ConcurrencyManagerOptions) {
    this.pusher = opts.pusher;
    this.onFirstWait = opts.onFirstWait;
    this.latches = opts.latches ?? new LatchManager();
    this.lockTable = opts.lockTable ?? new LockTable();
  }

  /**
   * Returns once the request holds its latches and no lock of another
   * transaction blocks it. Pass the previous guard when re-sequencing (after
   * handleWriterIntentError) to keep the request's place in the lock table.
   */
  async sequenceReq(req: SequencedRequest, prev?: RequestGuard): Promise<RequestGuard> {
    const g = prev ?? new RequestGuard(req);
    const lockReq = { txn: req.txn, timestamp: req.timestamp, spans: req.lockSpans, name: req.name };
    try {
      for (;;) {
        g.latches = await this.latches.acquire(req.latchSpans, req.signal);
        g.locks = this.lockTable.scanAndEnqueue(lockReq, g.locks ?? undefined);
        if (!g.locks.shouldWait) return g;
        g.latches.release();
        g.latches = null;
        if (g.waits++ === 0) this.onFirstWait?.();
        const outcome = await this.lockTable.waitOn(g.locks, {
          signal: req.signal,
          pushAfter: this.pusher.pushDelay(req, g.locks.state),
          deadline: this.pusher.lockTimeout?.(req),
        });
        if (outcome.kind === 'push') await this.pusher.push(req, outcome);
      }
    } catch (e) {
      this.finishReq(g);
      throw e;
    }
  }

  /** The request is done: releases its latches and leaves the lock table. */
  finishReq(g: RequestGuard): void {
    g.latches?.release();
    g.latches = null;
    if (g.locks !== null) this.lockTable.dequeue(g.locks);
    g.locks = null;
  }

  /**
   * Evaluation met intents the lock table did not know (WriteIntentError):
   * releases the latches and records the intents as locks. The caller then
   * re-sequences with sequenceReq(req, g), which waits for them.
   */
  handleWriterIntentError(g: RequestGuard, intents: readonly DiscoveredIntent[]): void {
    g.latches?.release();
    g.latches = null;
    for (const i of intents) this.lockTable.addDiscoveredLock(i);
  }

  /** After evaluation: the request's transaction holds locks on the keys it wrote. */
  onLocksAcquired(txn: LockTxn, keys: readonly Buffer[], durability: 'replicated' | 'unreplicated' = 'replicated'): void {
    for (const k of keys) this.lockTable.acquireLock(txn, k, durability);
  }
}
