/**
 * The uncertainty interval of a transactional read, narrowed per node by
 * observed timestamps (CockroachDB's kvserver/uncertainty and the
 * ObservedTimestamps of its Transaction; DESIGN.md §3 "Transactions").
 *
 *   global limit  = read_ts + max_offset (set by the coordinator)
 *   observed(N)   = the lowest HLC reading node N took when a batch of this
 *                   transaction arrived there (Store.send, before evaluation)
 *   local limit   = min(global limit, max(observed(N), lease.start))
 *                   on a leaseholder on node N; no observation → global limit
 *
 *   ──────────┬───────────────────┬──────────────────┬────────────► ts
 *          read_ts           local limit        global limit
 *             │  uncertain: the  │  ignored: written │
 *             │  reader restarts │  after the reader │
 *             │  (or refreshes)  │  first reached N  │
 *
 * Why it is safe: a value the leaseholder on N writes after the reading
 * observed(N) was taken carries a timestamp above it (N's clock only moves
 * forward and stamps what N evaluates), so such a value was written after the
 * transaction started and may be ignored: it cannot have committed before the
 * transaction began. A value written under a previous lease, on another
 * node, may carry a timestamp above N's reading although it was written
 * earlier: the lease start bounds those (the previous holder served only
 * below it), so the local limit is never below the lease start.
 *
 * Invariants: the coordinator keeps, per node, the FIRST (minimum) reading it
 * was given; entries never move up; a restart (new epoch, or a new id after
 * an abort) keeps them — the SQL transaction began before all of them, which
 * is what the rule needs. A reading is only ever taken by the node it names
 * (Store.send): no node narrows with another's clock.
 *
 * Skewed values, and the guard (a departure). CockroachDB 22.2+ records on
 * each value the leaseholder's clock reading when it was written
 * (MVCCValueHeader.LocalTimestamp) and compares THAT with the local limit,
 * because some values carry a version timestamp above the reading at which
 * they were written: an intent written earlier and committed at a pushed (or
 * refreshed) timestamp above it, or a write evaluated at a timestamp ahead of
 * the leaseholder's clock (a timestamp-cache push into the future). Such a
 * value can sit above observed(N) although its transaction committed before
 * the reader began (DESIGN.md §6, "Stale reads from uncertainty"). Cairn's
 * MVCC values carry no local timestamp (that is a storage format change), so
 * each replica keeps instead an in-memory floor, UncertaintyGuard: a
 * timestamp at or above every skewed value the replica may hold. The local
 * limit is never below it:
 *
 *   local limit = min(global limit, max(observed(N), lease.start, guard floor))
 *
 * The leaseholder raises the floor before it evaluates a batch that may
 * create a skewed value: a resolution to COMMITTED (or a committing EndTxn),
 * or a push of intents (a pending resolution), of a transaction whose
 * timestamp is above its start (its intents may be below it; without the
 * intents' timestamps at hand this is conservative), or a write at a
 * timestamp (after the timestamp cache's push) ahead of its clock. History it did
 * not evaluate itself — a new replica (split, restart), a merge, a snapshot,
 * a lease taken from another replica — raises the floor to now + 2 × max
 * offset: the future timestamps this design produces (pushes to a reader's
 * uncertainty limit, the timestamp-cache horizon of a fresh replica) stay
 * within that of some clock. A chain of pushes, each moving a transaction
 * another max offset ahead, could exceed it: CockroachDB's per-value local
 * timestamp is the complete fix. The floor only matters for readers whose
 * window reaches it, so a quiet range narrows fully again 2 × max offset
 * after such an event.
 *
 * Pure functions and one plain object (UncertaintyGuard, one per Replica):
 * no clock of their own, no I/O. Ownership: src/kv (Store, Replica,
 * DistSender, TxnCoordSender).
 */
import { ZERO_TIMESTAMP, tsLess, tsMax, tsMin, type Timestamp } from '../util/hlc.js';
import type { TxnMeta } from '../../storage/mvcc.js';
import type { BatchHeader, BatchResponse, ObservedTimestamp, Request } from './api.js';

/** The reading recorded for nodeId, or undefined. */
export function observedTimestampOf(obs: readonly ObservedTimestamp[] | undefined, nodeId: number): Timestamp | undefined {
  if (obs === undefined) return undefined;
  for (const o of obs) if (o.nodeId === nodeId) return o.timestamp;
  return undefined;
}

/**
 * `obs` with nodeId's reading lowered to `ts` (or added): the same array
 * when nothing changes (the reading recorded is already ≤ ts), else a new
 * one — callers may share the input.
 */
export function withObservedTimestamp(obs: readonly ObservedTimestamp[] | undefined, nodeId: number, ts: Timestamp): readonly ObservedTimestamp[] {
  if (obs === undefined || obs.length === 0) return [{ nodeId, timestamp: ts }];
  const i = obs.findIndex((o) => o.nodeId === nodeId);
  if (i < 0) return [...obs, { nodeId, timestamp: ts }];
  if (!tsLess(ts, (obs[i] as ObservedTimestamp).timestamp)) return obs;
  const out = obs.slice();
  out[i] = { nodeId, timestamp: ts };
  return out;
}

/** Folds every reading of `from` into `into` (minimum per node). */
export function mergeObservedTimestamps(into: readonly ObservedTimestamp[] | undefined, from: readonly ObservedTimestamp[] | undefined): readonly ObservedTimestamp[] | undefined {
  if (from === undefined) return into;
  let out = into;
  for (const o of from) out = withObservedTimestamp(out, o.nodeId, o.timestamp);
  return out;
}

/** The readings of the responses of a batch's parts, merged (undefined: none). */
export function observedTimestampsOf(results: readonly BatchResponse[]): readonly ObservedTimestamp[] | undefined {
  let out: readonly ObservedTimestamp[] | undefined;
  for (const r of results) out = mergeObservedTimestamps(out, r.observedTimestamps);
  return out;
}

/**
 * The uncertainty limit a leaseholder applies (see the header): the global
 * limit narrowed to this node's observed timestamp, never below the lease
 * start nor the replica's guard floor. No observation: the global limit.
 */
export function localUncertaintyLimit(globalLimit: Timestamp, observed: Timestamp | undefined, leaseStart: Timestamp | undefined, floor: Timestamp = ZERO_TIMESTAMP): Timestamp {
  if (observed === undefined) return globalLimit;
  return tsMin(globalLimit, tsMax(tsMax(observed, floor), leaseStart ?? ZERO_TIMESTAMP));
}

/** A replica's floor under the local uncertainty limit: at or above every skewed value it may hold (see the header). */
export class UncertaintyGuard {
  private floorTs: Timestamp = ZERO_TIMESTAMP;

  constructor(
    private readonly clock: { now(): Timestamp; readonly maxOffsetMicros: number },
  ) {
    this.forgetHistory();
  }

  get floor(): Timestamp {
    return this.floorTs;
  }

  /** History this replica did not evaluate under its own lease: the floor covers whatever it may hold. */
  forgetHistory(): void {
    this.raise({ wall: this.clock.now().wall + 2 * this.clock.maxOffsetMicros, logical: 0 });
  }

  /**
   * Before the leaseholder evaluates a write batch: raise the floor over the
   * skewed values its resolutions may create — a commit, or a push (a pending
   * resolution moves an intent up), to a timestamp above the transaction's
   * start.
   */
  noteWriteBatch(h: BatchHeader, reqs: readonly Request[]): void {
    for (const q of reqs) {
      switch (q.kind) {
        case 'resolveIntent':
        case 'resolveIntentRange':
          if (q.status !== 'aborted') this.noteCommit(q.txn);
          break;
        case 'endTxn':
          if (q.commit && h.txn !== undefined) this.noteCommit(h.txn);
          break;
        default:
          break;
      }
    }
  }

  /** Before a write is evaluated at `ts` (after any timestamp-cache push): a timestamp ahead of the clock `now` is skewed. */
  noteWriteAt(ts: Timestamp, now: Timestamp): void {
    if (tsLess(now, ts)) this.raise(ts);
  }

  private noteCommit(txn: TxnMeta): void {
    const start = txn.minTimestamp;
    if (start === undefined || tsLess(start, txn.writeTimestamp)) this.raise(txn.writeTimestamp);
  }

  private raise(ts: Timestamp): void {
    if (tsLess(this.floorTs, ts)) this.floorTs = ts;
  }
}
