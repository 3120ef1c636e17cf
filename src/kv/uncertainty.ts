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
 * Departure (known gap): CockroachDB 22.2+ also records on each value the
 * local clock reading at which it was written (MVCCValueHeader.LocalTimestamp)
 * and compares THAT with the local limit, because an intent written before
 * the observation and committed later at a pushed timestamp above it — or a
 * write evaluated at a timestamp ahead of the leaseholder's clock — has a
 * version timestamp above the reading although it was written before it.
 * Cairn's MVCC values carry no local timestamp (a storage format change), so
 * such a value in (local limit, global limit] is ignored where CockroachDB
 * would restart. See the module's tests for what is covered.
 *
 * Pure functions: no clock, no I/O. Ownership: src/kv (Store, Replica,
 * DistSender, TxnCoordSender).
 */
import { tsLess, tsMax, tsMin, type Timestamp } from '../util/hlc.js';
import type { BatchResponse, ObservedTimestamp } from './api.js';

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
 * start. No observation: the global limit.
 */
export function localUncertaintyLimit(globalLimit: Timestamp, observed: Timestamp | undefined, leaseStart: Timestamp | undefined): Timestamp {
  if (observed === undefined) return globalLimit;
  return tsMin(globalLimit, leaseStart === undefined ? observed : tsMax(observed, leaseStart));
}
