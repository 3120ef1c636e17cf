/**
 * The lock table: per-key locks of transactions on one range, with a fair
 * wait queue per key (CockroachDB's kv/kvserver/concurrency/lock_table.go,
 * simplified). Requests hold their latches while they scan the table and
 * release them while they wait, so the table is the place where conflicting
 * transactions queue for each other.
 *
 * One lockState per key that has a holder or waiters:
 *
 *     key "a"
 *       holder:   txn t1 epoch 0 ts 10 (replicated | unreplicated) — or none
 *       queue:    req2 write (claimant) → req3 write (waiting) → req4 read (waiting)
 *
 * Rules (a request is a transaction's or a non-transactional read/write at a
 * timestamp, with the spans it declared):
 *   - a held lock blocks writes of other transactions, and reads of other
 *     transactions at or above the lock's timestamp (a read below an intent
 *     does not see it); a transaction never waits for its own lock. That
 *     holds for unreplicated (FOR UPDATE) locks too, as CockroachDB's
 *     exclusive locks: a stream of reads above the holder would otherwise
 *     push its writes above them forever (writer starvation);
 *   - waiters queue in request-sequence order (a re-scanning request keeps its
 *     place), so nobody overtakes an earlier waiter;
 *   - when the lock is released, the readers in its queue proceed and the
 *     first writer becomes the "claimant": it proceeds (to evaluate and then
 *     acquire the lock), and the writers behind it keep waiting — now for the
 *     claimant's transaction. Readers never wait for a claimant. If the
 *     claimant finishes without acquiring (dequeue), the next writer claims.
 *
 * Waiting is driven by the caller (the replica's request sequencer): it
 * calls scanAndEnqueue, then, while guard.shouldWait, waitOn(guard, …), which
 * resolves with 'done' (re-scan: nothing blocks any more) or 'push' (the
 * pushAfter delay passed while blocked: push the blocking transaction —
 * abort for writers, timestamp for readers — see push-policy.ts and
 * txn-wait-queue.ts, then resolve its intents through updateLocks). Every
 * waiter pushes, not only the head of the queue, so that the waits-for graph
 * used for deadlock detection sees every blocked transaction. No timers live
 * here: pushAfter and deadline are promises the caller resolves from its own
 * clock, and signal cancels.
 *
 * Discovered locks: a request whose evaluation met an intent unknown to the
 * table (an MVCC WriteIntentError) reports it with addDiscoveredLock and
 * re-scans; the intent becomes a replicated lock.
 *
 * Ownership: one LockTable per range on the leaseholder. Guards belong to
 * their request, which must dequeue() when it finishes (also after a failed
 * or cancelled wait). Key Buffers are kept by reference.
 */
import { compareKeys } from '../../../storage/engine.js';
import { assert } from '../../util/assert.js';
import { CairnError } from '../../util/errors.js';
import { compareTimestamps, formatTimestamp, tsMax, type Timestamp } from '../../util/hlc.js';
import { IntervalTree, type IntervalHandle } from './interval-tree.js';
import { formatKey, type Span, type SpanAccess, type SpanSet } from './span-set.js';

/** The fields of a transaction the lock table needs (a structural subset of storage's TxnMeta). */
export interface LockTxn {
  readonly id: Buffer;
  readonly epoch: number;
  readonly writeTimestamp: Timestamp;
  readonly priority?: number;
  readonly minTimestamp?: Timestamp;
}

export interface LockRequest {
  /** Undefined: a non-transactional request. */
  readonly txn?: LockTxn;
  /** The read timestamp (for a transaction, its read timestamp). */
  readonly timestamp: Timestamp;
  /** The declared spans; only access and span are used. */
  readonly spans: SpanSet;
  /** For printing. */
  readonly name?: string;
}

export type Durability = 'replicated' | 'unreplicated';

/** An intent met during evaluation (storage's Intent, by shape). */
export interface DiscoveredIntent {
  readonly key: Buffer;
  readonly txn: LockTxn;
}

/** The outcome of a transaction's intents (storage's LockUpdate with a span). */
export interface LockUpdate {
  readonly span: Span;
  readonly txn: LockTxn;
  readonly status: 'pending' | 'committed' | 'aborted';
}

export type PushType = 'abort' | 'timestamp';

export type WaitingState =
  | { readonly kind: 'doneWaiting' }
  | {
      readonly kind: 'waitFor';
      readonly key: Buffer;
      /** The transaction to push: the holder, or the claimant's (undefined: a non-transactional claimant). */
      readonly pushee: LockTxn | undefined;
      /** true: the lock is held; false: waiting behind a claimant. */
      readonly held: boolean;
      /** First in the key's queue among those waiting. */
      readonly isHead: boolean;
      readonly access: SpanAccess;
    };

export type WaitOutcome =
  | { readonly kind: 'done' }
  | { readonly kind: 'push'; readonly key: Buffer; readonly pushee: LockTxn; readonly pushType: PushType; readonly isHead: boolean; readonly held: boolean };

export interface WaitOptions {
  readonly signal?: AbortSignal;
  /** When it resolves while the request is blocked by a transaction, waitOn returns 'push'. */
  readonly pushAfter?: PromiseLike<unknown>;
  /** When it resolves first, waitOn rejects with LockWaitTimeoutError. */
  readonly deadline?: PromiseLike<unknown>;
}

export class LockWaitTimeoutError extends CairnError {
  override name = 'LockWaitTimeoutError';
  constructor(readonly key: Buffer) {
    super('concurrency.lock_timeout', `lock-table: timed out waiting for the lock on ${formatKey(key)}`, { sqlState: '55P03' });
  }
}

export class LockWaitCancelledError extends CairnError {
  override name = 'LockWaitCancelledError';
  constructor(cause: unknown) {
    super('concurrency.lock_wait_cancelled', 'lock-table: wait for a lock cancelled', { cause, sqlState: '57014' });
  }
}

export class LockWaitQueueFullError extends CairnError {
  override name = 'LockWaitQueueFullError';
  constructor(readonly key: Buffer, max: number) {
    super('concurrency.lock_wait_queue_full', `lock-table: wait queue of ${formatKey(key)} has reached its limit of ${max}`, { retryable: true, sqlState: '40001' });
  }
}

interface QueuedRequest {
  readonly guard: LockTableGuard;
  access: SpanAccess;
  /** Actually waiting (false: the claimant, or a request of the claimant's transaction). */
  active: boolean;
}

interface Holder {
  txn: LockTxn;
  durability: Durability;
}

class LockState {
  readonly endKey = null;
  holder: Holder | null = null;
  readonly queue: QueuedRequest[] = [];
  handle: IntervalHandle<LockState> | null = null;
  constructor(readonly key: Buffer) {}

  claimant(): QueuedRequest | undefined {
    if (this.holder !== null) return undefined;
    return this.queue.find((q) => q.access === 'write');
  }
}

const DONE: WaitingState = Object.freeze({ kind: 'doneWaiting' });

export class LockTableGuard {
  /** @internal the locks where this request is queued. */ readonly entries = new Map<LockState, QueuedRequest>();
  /** @internal */ waitState: WaitingState = DONE;
  /** @internal */ listener: (() => void) | null = null;
  /** @internal */ dequeued = false;

  constructor(
    readonly seq: number,
    public req: LockRequest,
  ) {}

  get state(): WaitingState {
    return this.waitState;
  }

  get shouldWait(): boolean {
    return this.waitState.kind !== 'doneWaiting';
  }
}

export interface LockSnapshot {
  readonly key: Buffer;
  readonly holder: { readonly txn: LockTxn; readonly durability: Durability } | null;
  /** In queue order; role 'proceeding': not waiting here (a request of the claimant's transaction). */
  readonly queue: readonly { readonly seq: number; readonly name: string | undefined; readonly txn: LockTxn | undefined; readonly access: SpanAccess; readonly role: 'claimant' | 'waiting' | 'proceeding' }[];
}

export interface LockTableMetrics {
  readonly locks: number;
  readonly held: number;
  /** Queued requests actually waiting. */
  readonly waiters: number;
  readonly claimants: number;
  /** Replicated locks forgotten to stay within maxLocks (since creation). */
  readonly cleared: number;
}

export interface LockTableOptions {
  /** Writers refused (LockWaitQueueFullError) when a key already has this many waiting writers (default unlimited). */
  readonly maxWaitQueueLength?: number;
  /**
   * Bound on the locks tracked (default 10,000). Past it, replicated locks
   * nobody waits for are forgotten: they are intents in the MVCC data and a
   * request meeting one rediscovers it (addDiscoveredLock). Unreplicated
   * locks and locks with waiters are never dropped.
   */
  readonly maxLocks?: number;
}

function sameTxn(a: LockTxn | undefined, b: LockTxn | undefined): boolean {
  return a !== undefined && b !== undefined && a.id.equals(b.id);
}

function bySeq(a: QueuedRequest, b: QueuedRequest): number {
  return a.guard.seq - b.guard.seq;
}

export class LockTable {
  private readonly locks = new IntervalTree<LockState>();
  private readonly byKey = new Map<string, LockState>();
  private seq = 0;
  private readonly maxQueue: number;
  private readonly maxLocks: number;
  private cleared = 0;

  constructor(opts: LockTableOptions = {}) {
    this.maxQueue = opts.maxWaitQueueLength ?? Infinity;
    this.maxLocks = opts.maxLocks ?? 10_000;
  }

  /**
   * Finds the locks that conflict with `req` and queues it at each; returns
   * its guard (pass the previous guard when re-scanning, to keep the request's
   * place). guard.shouldWait tells whether it must wait before evaluating.
   */
  scanAndEnqueue(req: LockRequest, guard?: LockTableGuard): LockTableGuard {
    const g = guard ?? new LockTableGuard(++this.seq, req);
    assert(!g.dequeued, 'lock-table: scanning with a dequeued guard');
    g.req = req;
    const touched: LockState[] = [];
    for (const d of req.spans) {
      this.locks.search(d.span.key, d.span.endKey ?? null, (l) => {
        if (this.mustQueue(l, req, d.access)) touched.push(l);
      });
    }
    for (const l of touched) {
      const cur = g.entries.get(l);
      if (cur !== undefined) {
        cur.access = accessAt(req, l.key);
        continue;
      }
      const access = accessAt(req, l.key);
      if (access === 'write' && this.waitingWriters(l) >= this.maxQueue) {
        this.dequeue(g);
        throw new LockWaitQueueFullError(l.key, this.maxQueue);
      }
      const q: QueuedRequest = { guard: g, access, active: true };
      l.queue.push(q);
      l.queue.sort(bySeq);
      g.entries.set(l, q);
    }
    // Also the locks where an earlier scan queued the request: its timestamp may have moved.
    this.recomputeAll(new Set([...touched, ...g.entries.keys()]), g);
    return g;
  }

  /** Removes the request from every queue (it finished, or gave up waiting). */
  dequeue(g: LockTableGuard): void {
    if (g.dequeued) return;
    g.dequeued = true;
    const locks = [...g.entries.keys()];
    for (const l of locks) {
      const i = l.queue.findIndex((q) => q.guard === g);
      if (i >= 0) l.queue.splice(i, 1);
    }
    g.entries.clear();
    this.recomputeAll(locks);
    this.setState(g, DONE);
  }

  /** Records that `txn` holds the lock on `key`: replicated after writing an intent there, unreplicated for a lock held only in memory (SELECT FOR UPDATE). */
  acquireLock(txn: LockTxn, key: Buffer, durability: Durability = 'replicated'): void {
    const l = this.getOrCreate(key);
    const h = l.holder;
    if (h === null) l.holder = { txn, durability };
    else {
      if (!sameTxn(h.txn, txn)) assert(false, `lock-table: ${formatKey(key)} acquired while held by another transaction`);
      if (txn.epoch > h.txn.epoch) h.txn = txn;
      else if (txn.epoch === h.txn.epoch && compareTimestamps(txn.writeTimestamp, h.txn.writeTimestamp) > 0) h.txn = txn;
      if (durability === 'replicated') h.durability = 'replicated';
    }
    // The acquiring transaction's queued requests are done with this key.
    for (let i = l.queue.length - 1; i >= 0; i--) {
      const q = l.queue[i] as QueuedRequest;
      if (sameTxn(q.guard.req.txn, txn)) {
        l.queue.splice(i, 1);
        q.guard.entries.delete(l);
        this.updateGuard(q.guard);
      }
    }
    this.recompute(l);
  }

  /**
   * Whether the table tracks anything at the point `key` (a holder, or
   * requests queued there). When it does not, scanAndEnqueue of a read of
   * that key would queue nowhere and not wait: the point-read fast path
   * (Replica) then skips the guard.
   */
  hasLockAt(key: Buffer): boolean {
    return this.locks.size > 0 && this.locks.any(key, null);
  }

  /**
   * acquireLock unless another transaction holds the key's lock (the table
   * learned of it after this request evaluated — e.g. a discovered intent):
   * then nothing changes and it returns false. For the request path, where a
   * stale table must never crash the node.
   */
  tryAcquireLock(txn: LockTxn, key: Buffer, durability: Durability = 'replicated'): boolean {
    const h = this.byKey.get(key.toString('latin1'))?.holder ?? null;
    if (h !== null && !sameTxn(h.txn, txn)) return false;
    this.acquireLock(txn, key, durability);
    return true;
  }

  /**
   * Forgets every lock and wakes every waiter (their waits end 'done'; they
   * re-scan an empty table and rediscover replicated locks as intents).
   * Unreplicated locks are lost. For lease changes, splits, merges and
   * replica removal (CockroachDB's lockTable.Clear).
   */
  clear(): void {
    const guards = new Set<LockTableGuard>();
    const all: LockState[] = [];
    this.locks.forEach((l) => all.push(l));
    for (const l of all) {
      for (const q of l.queue) {
        q.guard.entries.delete(l);
        guards.add(q.guard);
      }
      this.locks.delete(l.handle as IntervalHandle<LockState>);
    }
    this.byKey.clear();
    for (const g of guards) this.updateGuard(g);
  }

  /**
   * Adds an intent met during evaluation (a WriteIntentError) as a replicated
   * lock; the discovering request then re-scans (scanAndEnqueue with its guard).
   */
  addDiscoveredLock(intent: DiscoveredIntent): void {
    const l = this.getOrCreate(intent.key);
    if (l.holder === null) {
      l.holder = { txn: intent.txn, durability: 'replicated' };
      this.recompute(l);
    } else if (sameTxn(l.holder.txn, intent.txn)) {
      l.holder.durability = 'replicated';
    }
    // Held by another transaction: the table is ahead of the engine (that
    // lock was acquired after the evaluation read); keep the newer holder.
  }

  /**
   * Applies the resolution of `txn`'s intents over `span`: committed or
   * aborted releases its locks (waking the waiters fairly); pending with a
   * higher timestamp (a push) moves the locks up, which unblocks readers now
   * below them. Returns how many locks changed.
   */
  updateLocks(up: LockUpdate): number {
    const hit: LockState[] = [];
    this.locks.search(up.span.key, up.span.endKey ?? null, (l) => {
      if (l.holder !== null && sameTxn(l.holder.txn, up.txn)) hit.push(l);
    });
    for (const l of hit) {
      const h = l.holder as Holder;
      if (up.status !== 'pending' || up.txn.epoch > h.txn.epoch) l.holder = null;
      else h.txn = { ...h.txn, writeTimestamp: tsMax(h.txn.writeTimestamp, up.txn.writeTimestamp) };
    }
    this.recomputeAll(hit);
    return hit.length;
  }

  /**
   * Waits while the guard's request is blocked. Resolves 'done' once nothing
   * blocks it, or 'push' when opts.pushAfter resolves while a transaction
   * blocks it; rejects on opts.deadline (LockWaitTimeoutError) or opts.signal
   * (LockWaitCancelledError). The guard stays queued in every case: re-scan
   * or dequeue next. One waitOn per guard at a time.
   */
  waitOn(g: LockTableGuard, opts: WaitOptions = {}): Promise<WaitOutcome> {
    assert(g.listener === null, 'lock-table: two concurrent waits on one guard');
    return new Promise<WaitOutcome>((resolve, reject) => {
      let settled = false;
      const { signal } = opts;
      const settle = (f: () => void): void => {
        if (settled) return;
        settled = true;
        g.listener = null;
        signal?.removeEventListener('abort', onAbort);
        f();
      };
      const onAbort = (): void => settle(() => reject(new LockWaitCancelledError(signal?.reason)));
      // Once the push delay has passed, the waiter pushes as soon as a transaction blocks it
      // (at once, or later: e.g. after waiting behind a non-transactional claimant).
      let pushDue = false;
      const onChange = (): void => {
        const s = g.waitState;
        if (s.kind === 'doneWaiting') return settle(() => resolve({ kind: 'done' }));
        if (!pushDue || s.pushee === undefined) return;
        const pushee = s.pushee;
        const pushType: PushType = s.access === 'write' ? 'abort' : 'timestamp';
        settle(() => resolve({ kind: 'push', key: s.key, pushee, pushType, isHead: s.isHead, held: s.held }));
      };
      onChange();
      if (settled) return;
      if (signal?.aborted === true) return onAbort();
      g.listener = onChange;
      signal?.addEventListener('abort', onAbort, { once: true });
      opts.pushAfter?.then(() => {
        pushDue = true;
        onChange();
      });
      opts.deadline?.then(() => {
        const s = g.waitState;
        settle(() => (s.kind === 'doneWaiting' ? resolve({ kind: 'done' }) : reject(new LockWaitTimeoutError(s.key))));
      });
    });
  }

  metrics(): LockTableMetrics {
    let held = 0;
    let waiters = 0;
    let claimants = 0;
    this.locks.forEach((l) => {
      if (l.holder !== null) held++;
      else if (l.claimant() !== undefined) claimants++;
      for (const q of l.queue) if (q.active) waiters++;
    });
    return { locks: this.locks.size, held, waiters, claimants, cleared: this.cleared };
  }

  /**
   * The keys (in key order, at most `limit`) of the replicated locks — intents
   * — that `txn` holds within `spans`: a waiter that hands a blocker to its
   * client names all of them, so one push resolves them in one batch instead
   * of one push per intent (a reader behind a bulk writer's 100,000 intents).
   */
  intentsHeldBy(txn: LockTxn, spans: SpanSet, limit: number): Buffer[] {
    const keys: Buffer[] = [];
    for (const d of spans) {
      this.locks.search(d.span.key, d.span.endKey ?? null, (l) => {
        if (l.holder !== null && l.holder.durability === 'replicated' && sameTxn(l.holder.txn, txn)) keys.push(l.key);
        return keys.length >= limit;
      });
      if (keys.length >= limit) break;
    }
    return keys;
  }

  /** Every lock, its holder and its queue in order, as data (for status pages and tests). */
  snapshot(): LockSnapshot[] {
    const out: LockSnapshot[] = [];
    this.locks.forEach((l) => {
      const claimant = l.claimant();
      out.push({
        key: l.key,
        holder: l.holder === null ? null : { txn: l.holder.txn, durability: l.holder.durability },
        queue: l.queue.map((q) => ({ seq: q.guard.seq, name: q.guard.req.name, txn: q.guard.req.txn, access: q.access, role: q === claimant ? 'claimant' : q.active ? 'waiting' : 'proceeding' })),
      });
    });
    return out;
  }

  /** A readable dump of every lock, its holder and its queue (for debugging and transcripts). */
  lockTableState(fmtTxn: (t: LockTxn) => string = (t) => t.id.toString('hex').slice(0, 8)): string {
    const snap = this.snapshot();
    const lines: string[] = [`num=${snap.length}`];
    for (const l of snap) {
      lines.push(` lock: ${formatKey(l.key)}`);
      if (l.holder !== null) {
        const t = l.holder.txn;
        lines.push(`  holder: txn: ${fmtTxn(t)} epoch: ${t.epoch} ts: ${formatTimestamp(t.writeTimestamp)} ${l.holder.durability}`);
      }
      for (const q of l.queue) {
        const txn = q.txn === undefined ? 'non-txn' : fmtTxn(q.txn);
        lines.push(`  ${q.access === 'write' ? 'writer' : 'reader'}: ${q.name ?? `seq ${q.seq}`} (${txn}, seq ${q.seq}) ${q.role}`);
      }
    }
    return lines.join('\n');
  }

  /** A guard's waiting state in words (observability of waiting; transcripts). */
  guardState(g: LockTableGuard, fmtTxn: (t: LockTxn) => string = (t) => t.id.toString('hex').slice(0, 8)): string {
    const s = g.waitState;
    if (s.kind === 'doneWaiting') return 'doneWaiting';
    const who = s.pushee === undefined ? 'a non-txn request' : `txn ${fmtTxn(s.pushee)}`;
    return `waitFor key=${formatKey(s.key)} ${s.held ? 'held' : 'claimed'} by ${who}${s.isHead ? ' (head)' : ''} ${s.access}`;
  }

  // ---------------------------------------------------------------------------

  private getOrCreate(key: Buffer): LockState {
    const id = key.toString('latin1');
    let l = this.byKey.get(id);
    if (l === undefined) {
      if (this.locks.size >= this.maxLocks) this.clearIdleReplicatedLocks();
      l = new LockState(key);
      l.handle = this.locks.insert(l);
      this.byKey.set(id, l);
    }
    return l;
  }

  /** Forgets the replicated locks without waiters (see LockTableOptions.maxLocks). */
  private clearIdleReplicatedLocks(): void {
    const idle: LockState[] = [];
    this.locks.forEach((l) => {
      if (l.queue.length === 0 && l.holder?.durability === 'replicated') idle.push(l);
    });
    for (const l of idle) {
      this.locks.delete(l.handle as IntervalHandle<LockState>);
      this.byKey.delete(l.key.toString('latin1'));
    }
    this.cleared += idle.length;
  }

  /** Whether a request accessing l this way must enter l's queue now. */
  private mustQueue(l: LockState, req: LockRequest, access: SpanAccess): boolean {
    const h = l.holder;
    if (h !== null) return this.blockedByHolder(h, req, access);
    // Unheld: writers queue (the first one becomes the claimant); readers pass.
    return access === 'write';
  }

  private blockedByHolder(h: Holder, req: LockRequest, access: SpanAccess): boolean {
    if (sameTxn(h.txn, req.txn)) return false;
    if (access === 'write') return true;
    return compareTimestamps(req.timestamp, h.txn.writeTimestamp) >= 0;
  }

  private waitingWriters(l: LockState): number {
    let n = 0;
    for (const q of l.queue) if (q.access === 'write' && q.active) n++;
    return n;
  }

  /**
   * recompute() of many locks, each affected guard's state refreshed once at
   * the end (and `also`'s): a guard's refresh walks all its entries, so one
   * per lock made a scan or a resolution over n locks cost n² — seconds of
   * CPU for a reader queued at 10,000 locks of a bulk writer.
   */
  private recomputeAll(locks: Iterable<LockState>, also?: LockTableGuard): void {
    const affected = new Set<LockTableGuard>();
    for (const l of locks) this.recompute(l, affected);
    if (also !== undefined) affected.add(also);
    for (const g of affected) this.updateGuard(g);
  }

  /**
   * Re-derives which queued requests still wait at l after any change, drops
   * the ones no longer concerned, deletes l when empty, and refreshes the
   * states of the affected guards — or adds them to `defer`, for the caller
   * to refresh once (recomputeAll).
   */
  private recompute(l: LockState, defer?: Set<LockTableGuard>): void {
    const affected: LockTableGuard[] = [];
    const h = l.holder;
    let claimantTxn: LockTxn | undefined;
    let claimed = false;
    for (let i = 0; i < l.queue.length; i++) {
      const q = l.queue[i] as QueuedRequest;
      let keep: boolean;
      let active: boolean;
      if (h !== null) {
        keep = active = this.blockedByHolder(h, q.guard.req, q.access);
      } else if (q.access === 'read') {
        keep = active = false;
      } else if (!claimed) {
        claimed = true;
        claimantTxn = q.guard.req.txn;
        keep = true;
        active = false;
      } else {
        keep = true;
        active = !sameTxn(claimantTxn, q.guard.req.txn);
      }
      if (!keep) {
        l.queue.splice(i--, 1);
        q.guard.entries.delete(l);
      } else q.active = active;
      affected.push(q.guard);
    }
    if (l.holder === null && l.queue.length === 0) {
      this.locks.delete(l.handle as IntervalHandle<LockState>);
      this.byKey.delete(l.key.toString('latin1'));
    }
    if (defer !== undefined) for (const g of affected) defer.add(g);
    else for (const g of affected) this.updateGuard(g);
  }

  /** Computes a guard's waiting state: the lowest key where it is actively waiting. */
  private updateGuard(g: LockTableGuard): void {
    let best: LockState | null = null;
    for (const [l, q] of g.entries) if (q.active && (best === null || compareKeys(l.key, best.key) < 0)) best = l;
    if (best === null) return this.setState(g, DONE);
    const l = best;
    const q = g.entries.get(l) as QueuedRequest;
    const head = l.queue.find((x) => x.active) === q;
    const pushee = l.holder !== null ? l.holder.txn : l.claimant()?.guard.req.txn;
    this.setState(g, { kind: 'waitFor', key: l.key, pushee, held: l.holder !== null, isHead: head, access: q.access });
  }

  private setState(g: LockTableGuard, s: WaitingState): void {
    g.waitState = s;
    g.listener?.();
  }
}

/** The access a request has at `key`: write if one of its write spans covers it. */
function accessAt(req: LockRequest, key: Buffer): SpanAccess {
  for (const d of req.spans) {
    if (d.access !== 'write') continue;
    const end = d.span.endKey ?? null;
    const c = compareKeys(d.span.key, key);
    if (end === null ? c === 0 : c <= 0 && compareKeys(key, end) < 0) return 'write';
  }
  return 'read';
}
