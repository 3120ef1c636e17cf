/**
 * The transaction wait queue and deadlock detector (CockroachDB's
 * kv/kvserver/txnwait): where a pusher that may not push (push-policy.ts
 * said 'wait') waits on the pushee's transaction record, and where the
 * waits-for graph between transactions lives.
 *
 *     enqueue(A, B)         edge A → B ("A waits for B")
 *     enqueue(B, A)         edge B → A closes the cycle A → B → A:
 *                           the victim (lowest priority, then youngest) is
 *                           chosen at once and both pushes on the cycle that
 *                           touch it resolve {deadlock, victim}; the caller
 *                           aborts the victim's record (a forced push) and
 *                           reports it with updateTxn(victim, 'aborted').
 *
 * A push waiting here resolves when the pushee's record is finalized
 * (updateTxn committed/aborted), when it is pushed past the pusher's
 * timestamp (timestamp pushes), when the pusher itself is finalized, or when
 * it is part of a deadlock. Cycles are checked whenever an edge is added, by a
 * depth-first search from the new edge's pushee: O(edges) per enqueue, which
 * is small because only blocked transactions have edges. CockroachDB finds
 * cycles by periodically querying dependents across ranges; here the queue is
 * per node (the one owning the pushee's record), and the edges of a
 * transaction waiting on several records are registered on each — a
 * distributed deployment merges them through the records' "dependents", as
 * CockroachDB's QueryTxn does (not built yet; see the report).
 *
 * No timers: waiting is bounded by the caller's AbortSignal. Ownership: one
 * TxnWaitQueue per store.
 */
import { assert } from '../../util/assert.js';
import { CairnError } from '../../util/errors.js';
import { compareTimestamps, type Timestamp } from '../../util/hlc.js';
import { chooseDeadlockVictim, type DeadlockCandidate } from './push-policy.js';
import type { PushType } from './lock-table.js';
import type { TxnId } from './timestamp-cache.js';


export type PushWaitOutcome =
  | { readonly kind: 'pushee-finalized'; readonly status: 'committed' | 'aborted' }
  | { readonly kind: 'pushee-pushed'; readonly writeTimestamp: Timestamp }
  | { readonly kind: 'pusher-finalized'; readonly status: 'committed' | 'aborted' }
  /** Abort `victim`: the pushee (force-push it) or the pusher itself. */
  | { readonly kind: 'deadlock'; readonly victim: TxnId };

export class PushWaitCancelledError extends CairnError {
  override name = 'PushWaitCancelledError';
  constructor(cause: unknown) {
    super('concurrency.push_wait_cancelled', 'txn-wait-queue: wait for a pushee cancelled', { cause, sqlState: '57014' });
  }
}

export class PendingPush {
  /** @internal */ outcome: PushWaitOutcome | null = null;
  /** @internal */ resolve: ((o: PushWaitOutcome) => void) | null = null;
  constructor(
    readonly pusher: DeadlockCandidate,
    readonly pushee: TxnId,
    readonly pushType: PushType,
    /** For a timestamp push: the pushee must reach at least this timestamp. */
    readonly pushTo: Timestamp,
  ) {}

  get done(): boolean {
    return this.outcome !== null;
  }
}

export class TxnWaitQueue {
  /** Unresolved pushes by pushee. */
  private readonly byPushee = new Map<TxnId, Set<PendingPush>>();
  /** Unresolved pushes by pusher: the waits-for edges. */
  private readonly byPusher = new Map<TxnId, Set<PendingPush>>();
  private readonly candidates = new Map<TxnId, DeadlockCandidate>();
  private deadlocks = 0;

  /**
   * Registers a push of `pushee` by `pusher` that has to wait. The pushee's
   * own candidate info (priority, age) is needed for victim choice; pass it
   * when known (it is also learned when the pushee enqueues a push itself).
   */
  enqueue(pusher: DeadlockCandidate, pushee: DeadlockCandidate | TxnId, pushType: PushType, pushTo: Timestamp): PendingPush {
    const pusheeId = typeof pushee === 'string' ? pushee : pushee.id;
    assert(pusher.id !== pusheeId, 'txn-wait-queue: a transaction pushing itself');
    this.candidates.set(pusher.id, pusher);
    if (typeof pushee !== 'string') this.candidates.set(pushee.id, pushee);
    const p = new PendingPush(pusher, pusheeId, pushType, pushTo);
    addTo(this.byPushee, pusheeId, p);
    addTo(this.byPusher, pusher.id, p);
    // The new edge may close several cycles; each round removes at least one edge.
    for (let cycle = this.findCycle(pusher.id); cycle !== null; cycle = this.findCycle(pusher.id)) this.breakDeadlock(cycle);
    return p;
  }

  /** Waits for the push's outcome (at once if it already has one); a cancelled wait is dequeued. */
  wait(p: PendingPush, signal?: AbortSignal): Promise<PushWaitOutcome> {
    if (p.outcome !== null) return Promise.resolve(p.outcome);
    assert(p.resolve === null, 'txn-wait-queue: two waits on one push');
    return new Promise<PushWaitOutcome>((resolve, reject) => {
      const onAbort = (): void => {
        this.dequeue(p);
        reject(new PushWaitCancelledError(signal?.reason));
      };
      if (signal?.aborted === true) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      p.resolve = (o) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(o);
      };
    });
  }

  /** Withdraws a push (its pusher gave up or was answered elsewhere). */
  dequeue(p: PendingPush): void {
    removeFrom(this.byPushee, p.pushee, p);
    removeFrom(this.byPusher, p.pusher.id, p);
    p.resolve = null;
  }

  /**
   * Reports a change of a transaction's record: finalized wakes everyone
   * pushing it and every push it was making; pending at a higher timestamp
   * answers the timestamp pushes it now satisfies.
   */
  updateTxn(id: TxnId, status: 'pending' | 'committed' | 'aborted', writeTimestamp?: Timestamp): void {
    if (status !== 'pending') {
      for (const p of [...(this.byPushee.get(id) ?? [])]) this.finish(p, { kind: 'pushee-finalized', status });
      for (const p of [...(this.byPusher.get(id) ?? [])]) this.finish(p, { kind: 'pusher-finalized', status });
      this.candidates.delete(id);
      return;
    }
    if (writeTimestamp === undefined) return;
    for (const p of [...(this.byPushee.get(id) ?? [])]) {
      if (p.pushType === 'timestamp' && compareTimestamps(writeTimestamp, p.pushTo) >= 0) this.finish(p, { kind: 'pushee-pushed', writeTimestamp });
    }
  }

  /** A cycle of waits-for edges through `from` (as the list of transactions from it), or null. */
  findCycle(from: TxnId): TxnId[] | null {
    // Iterative DFS over pusher → pushee edges, remembering the path.
    const path: TxnId[] = [from];
    const iters: Iterator<PendingPush>[] = [this.edgesOf(from)];
    const visited = new Set<TxnId>([from]);
    while (iters.length > 0) {
      const next = (iters[iters.length - 1] as Iterator<PendingPush>).next();
      if (next.done === true) {
        iters.pop();
        path.pop();
        continue;
      }
      const to = next.value.pushee;
      if (to === from) return [...path];
      if (visited.has(to)) continue;
      visited.add(to);
      path.push(to);
      iters.push(this.edgesOf(to));
    }
    return null;
  }

  /** The waits-for edges, for debugging: pusher → pushee, sorted. */
  waitsFor(): [TxnId, TxnId][] {
    const out: [TxnId, TxnId][] = [];
    for (const [pusher, ps] of this.byPusher) for (const p of ps) out.push([pusher, p.pushee]);
    return out.sort((a, b) => (a[0] + '\0' + a[1] < b[0] + '\0' + b[1] ? -1 : 1));
  }

  metrics(): { readonly waitingPushes: number; readonly deadlocks: number } {
    let n = 0;
    for (const ps of this.byPusher.values()) n += ps.size;
    return { waitingPushes: n, deadlocks: this.deadlocks };
  }

  private edgesOf(id: TxnId): Iterator<PendingPush> {
    return (this.byPusher.get(id) ?? new Set<PendingPush>()).values();
  }

  private breakDeadlock(cycle: readonly TxnId[]): void {
    this.deadlocks++;
    // Every transaction on a cycle is a pusher, so its candidate info is known.
    const cands = cycle.map((id) => {
      const c = this.candidates.get(id);
      assert(c !== undefined, 'txn-wait-queue: cycle through an unknown transaction');
      return c;
    });
    const victim = chooseDeadlockVictim(cands).id;
    const i = cycle.indexOf(victim);
    const pred = cycle[(i + cycle.length - 1) % cycle.length] as TxnId;
    const succ = cycle[(i + 1) % cycle.length] as TxnId;
    const outcome: PushWaitOutcome = { kind: 'deadlock', victim };
    for (const p of [...(this.byPusher.get(pred) ?? [])]) if (p.pushee === victim) this.finish(p, outcome);
    for (const p of [...(this.byPusher.get(victim) ?? [])]) if (p.pushee === succ) this.finish(p, outcome);
  }

  private finish(p: PendingPush, o: PushWaitOutcome): void {
    if (p.outcome !== null) return;
    p.outcome = o;
    const r = p.resolve;
    this.dequeue(p);
    r?.(o);
  }
}

function addTo(m: Map<TxnId, Set<PendingPush>>, id: TxnId, p: PendingPush): void {
  let s = m.get(id);
  if (s === undefined) m.set(id, (s = new Set()));
  s.add(p);
}

function removeFrom(m: Map<TxnId, Set<PendingPush>>, id: TxnId, p: PendingPush): void {
  const s = m.get(id);
  if (s === undefined) return;
  s.delete(p);
  if (s.size === 0) m.delete(id);
}
