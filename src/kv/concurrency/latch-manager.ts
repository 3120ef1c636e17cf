/**
 * Latches: short-lived, in-memory, per-range locks that serialize requests
 * whose declared spans conflict (CockroachDB's kv/kvserver/spanlatch). A
 * request holds its latches while it evaluates (and, for writes, until its
 * command applies), so that overlapping conflicting requests run one after
 * the other and the rest run concurrently.
 *
 * Sequencing. acquire() gives the request the next sequence number, finds
 * the already-inserted latches (held or still waiting) that conflict with its
 * spans, inserts its own latches, and then waits for exactly that snapshot of
 * earlier conflicting requests to release. A request therefore never waits
 * for a later one (no deadlock: waits-for edges point back in sequence order)
 * and a later request can never overtake an earlier conflicting one (FIFO
 * fairness); non-conflicting requests never wait for each other.
 *
 *     seq 1  write [a,c)@10   held
 *     seq 2  read  b@5        runs at once (the write at 10 is above it)
 *     seq 3  read  b@12       waits for 1
 *     seq 4  write b@12       waits for 1 and 3
 *
 * Conflicts follow span-set.ts (MVCC-aware: a read at ts conflicts only with
 * writes at ≤ ts; non-MVCC spans conflict regardless of timestamp). Latches
 * live in two interval trees (reads, writes), so the conflict search costs
 * O(log n + k) per declared span however many latches are held.
 *
 * Bounded waiting: acquire(spans, signal) rejects with LatchWaitCancelledError
 * when the signal aborts first; the request's latches are removed and the
 * requests that queued behind it stop waiting for it. Time never enters this
 * module: the caller arms the signal with its own timer.
 *
 * Ownership: one LatchManager per replica, on the leaseholder; the guard's
 * owner must call release() exactly once (further calls are no-ops).
 */
import { CairnError } from '../../util/errors.js';
import type { Timestamp } from '../../util/hlc.js';
import { IntervalTree, type IntervalHandle, type IntervalItem } from './interval-tree.js';
import { accessesConflict, validateSpanSet, type SpanAccess, type SpanSet } from './span-set.js';

/** The wait for latches was cancelled by the caller's signal (timeout or cancellation). */
export class LatchWaitCancelledError extends CairnError {
  override name = 'LatchWaitCancelledError';
  constructor(cause: unknown) {
    super('concurrency.latch_wait_cancelled', 'latch-manager: wait for latches cancelled', { cause, sqlState: '57014' });
  }
}

interface Latch extends IntervalItem {
  readonly access: SpanAccess;
  readonly ts: Timestamp | undefined;
  readonly guard: LatchGuard;
}

type GuardState = 'waiting' | 'held' | 'released';

export class LatchGuard {
  /** @internal */ state: GuardState = 'waiting';
  /** @internal Callbacks of later requests waiting for this one. */ waiters: (() => void)[] | null = null;
  /** @internal */ handles: IntervalHandle<Latch>[] = [];
  /** @internal Conflict-search mark (the seq of the last request that counted this guard). */ mark = 0;

  constructor(
    private readonly manager: LatchManager,
    /** Arrival order among this manager's requests. */
    readonly seq: number,
    readonly spans: SpanSet,
  ) {}

  /** Whether the latches are held (acquired and not released). */
  get held(): boolean {
    return this.state === 'held';
  }

  /** Releases the latches; the next conflicting requests may proceed. Idempotent. */
  release(): void {
    this.manager.releaseGuard(this);
  }
}

export interface LatchMetrics {
  /** Requests holding their latches. */
  readonly held: number;
  /** Requests waiting for earlier conflicting requests. */
  readonly waiting: number;
  /** Latches (one per declared span) in the trees, held or waiting. */
  readonly latches: number;
  /** Total acquisitions that had to wait / did not. */
  readonly acquiredAfterWait: number;
  readonly acquiredImmediately: number;
  readonly cancelled: number;
}

export class LatchManager {
  private readonly reads = new IntervalTree<Latch>();
  private readonly writes = new IntervalTree<Latch>();
  private seq = 0;
  private heldCount = 0;
  private waitingCount = 0;
  private acquiredAfterWait = 0;
  private acquiredImmediately = 0;
  private cancelled = 0;

  /**
   * Waits for every earlier conflicting request, then holds `spans` until
   * guard.release(). Rejects with LatchWaitCancelledError when `signal`
   * aborts before the latches are acquired (nothing is then held).
   */
  acquire(spans: SpanSet, signal?: AbortSignal): Promise<LatchGuard> {
    const g = this.sequence(spans);
    const prior = this.conflicting(g);
    this.insert(g);
    if (prior.length === 0) {
      this.grant(g);
      this.acquiredImmediately++;
      return Promise.resolve(g);
    }
    if (signal?.aborted === true) {
      this.abandon(g);
      return Promise.reject(new LatchWaitCancelledError(signal.reason));
    }
    this.waitingCount++;
    return new Promise<LatchGuard>((resolve, reject) => {
      let pending = prior.length;
      const onAbort = (): void => {
        if (g.state !== 'waiting') return;
        this.waitingCount--;
        this.abandon(g);
        reject(new LatchWaitCancelledError(signal?.reason));
      };
      const onRelease = (): void => {
        if (g.state !== 'waiting' || --pending > 0) return;
        signal?.removeEventListener('abort', onAbort);
        this.waitingCount--;
        this.acquiredAfterWait++;
        this.grant(g);
        resolve(g);
      };
      for (const p of prior) (p.waiters ??= []).push(onRelease);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Acquires at once when no earlier request conflicts, else returns null and
   * leaves nothing behind (CockroachDB's optimistic latching fallback).
   */
  tryAcquire(spans: SpanSet): LatchGuard | null {
    const g = this.sequence(spans);
    if (this.conflicting(g).length > 0) return null;
    this.insert(g);
    this.grant(g);
    this.acquiredImmediately++;
    return g;
  }

  /**
   * Whether a latch-free read of the point `key` would conflict with a write
   * latch (held or still waiting) — what acquire() of a read span without a
   * timestamp would wait for. For a read served within one synchronous step
   * (Replica's point-read fast path): it inserts nothing, so it is only
   * valid until the caller yields.
   */
  writeLatchedAt(key: Buffer): boolean {
    return this.writes.size > 0 && this.writes.any(key, null);
  }

  metrics(): LatchMetrics {
    return {
      held: this.heldCount,
      waiting: this.waitingCount,
      latches: this.reads.size + this.writes.size,
      acquiredAfterWait: this.acquiredAfterWait,
      acquiredImmediately: this.acquiredImmediately,
      cancelled: this.cancelled,
    };
  }

  /** @internal Called by LatchGuard.release(). */
  releaseGuard(g: LatchGuard): void {
    if (g.state === 'released') return;
    if (g.state === 'held') this.heldCount--;
    // A waiting guard released by its owner gives up its place (like a cancellation).
    else this.waitingCount--;
    this.remove(g);
  }

  private sequence(spans: SpanSet): LatchGuard {
    validateSpanSet(spans);
    return new LatchGuard(this, ++this.seq, spans);
  }

  /** The earlier requests (held or waiting) whose latches conflict with g's spans. */
  private conflicting(g: LatchGuard): LatchGuard[] {
    const out: LatchGuard[] = [];
    const mark = g.seq;
    for (const d of g.spans) {
      const end = d.span.endKey ?? null;
      const ts = d.timestamp;
      const access = d.access;
      const visit = (l: Latch): void => {
        if (l.guard.mark === mark || !accessesConflict(access, ts, l.access, l.ts)) return;
        l.guard.mark = mark;
        out.push(l.guard);
      };
      this.writes.search(d.span.key, end, visit);
      if (access === 'write') this.reads.search(d.span.key, end, visit);
    }
    return out;
  }

  private insert(g: LatchGuard): void {
    for (const d of g.spans) {
      const latch: Latch = { key: d.span.key, endKey: d.span.endKey ?? null, access: d.access, ts: d.timestamp, guard: g };
      g.handles.push((d.access === 'write' ? this.writes : this.reads).insert(latch));
    }
  }

  private grant(g: LatchGuard): void {
    g.state = 'held';
    this.heldCount++;
  }

  private abandon(g: LatchGuard): void {
    this.cancelled++;
    this.remove(g);
  }

  private remove(g: LatchGuard): void {
    g.state = 'released';
    for (const h of g.handles) (h.item.access === 'write' ? this.writes : this.reads).delete(h);
    g.handles = [];
    const ws = g.waiters;
    g.waiters = null;
    if (ws !== null) for (const w of ws) w();
  }
}
