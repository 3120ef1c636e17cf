/**
 * TxnPipeliner: write pipelining for one transaction's coordinator
 * (CockroachDB's kvcoord txnPipeliner, issue 5). Writes are sent with
 * asyncConsensus (api.ts): the leaseholder answers once it has proposed them,
 * before Raft commits them, so a transaction of N write statements pays one
 * consensus round at its commit instead of N + 1. A write answered that way
 * is *in flight* — acknowledged, not known durable — until something proves
 * it with a QueryIntent:
 *
 *   write batch (point writes, within the byte budget)
 *        └─► asyncConsensus; on success its writes join the in-flight set
 *   a later batch touching an in-flight key (read, write, locking read, scan)
 *        └─► QueryIntent(key, txn, epoch, seq, errorIfMissing) prepended to the
 *            same batch ("prove, then read": the leaseholder serializes the
 *            query behind the write's latches, so it sees the applied write or
 *            its absence); on success the key leaves the set
 *   commit: every in-flight write gets its QueryIntent in the commit batch
 *            and is listed in the EndTxn's in-flight writes, so a STAGING
 *            record (parallel commit) names it for recoverers; a QueryIntent
 *            on the record's own range proves its write in the record's own
 *            Raft command
 *   a QueryIntent that finds its write missing (the proposal was lost: lease
 *   moved, leader changed, replica stopped) fails its batch with
 *   kv.intent_missing, which the coordinator turns into a retryable
 *   AsyncWriteFailureError (RETRY_ASYNC_WRITE_FAILURE): never silently
 *   accepted.
 *
 * Invariants:
 *   - one entry per key: a write to an in-flight key is chained (its
 *     QueryIntent travels in the same batch), so after the batch succeeds the
 *     old entry is proven and the new write replaces it;
 *   - every in-flight write is also in the coordinator's lock spans (noted
 *     before sending), so an abort or a restart cleans it up without the set;
 *   - the set is dropped on an epoch restart (the old epoch's writes no longer
 *     count) and loses the writes above a savepoint rolled back to (ignored
 *     sequence numbers: their loss does not matter);
 *   - the set's bytes (key bytes + IN_FLIGHT_WRITE_OVERHEAD each) stay within
 *     the max: a batch that would pass it is sent synchronously.
 *
 * Departures: QueryIntent answers "not found" for an intent pushed above the
 * batch timestamp (cmd-query-intent.ts) where CockroachDB's reports the
 * pushed timestamp; so on kv.intent_missing the coordinator first reads its
 * record, and if a pusher moved it up, refreshes there and proves again
 * (one extra round trip); only a write missing at the record's timestamp
 * is lost. The ranged look-up for scans walks the whole set (bounded by the
 * byte budget) instead of an ordered tree.
 *
 * Ownership: one per TxnCoordSender; calls are never concurrent. Pure: no
 * I/O, no clock; the coordinator sends what it builds.
 */
import { CairnError } from '../../util/errors.js';
import { compareBytes } from '../../../storage/encoding/bytes.js';
import type { Request } from '../api.js';
import type { InFlightWrite } from '../txn-api.js';

/** Bytes counted per in-flight write beyond its key (sequence, map entry). */
export const IN_FLIGHT_WRITE_OVERHEAD = 32;

export interface PipelinerSettings {
  readonly enabled: boolean;
  readonly maxInFlightBytes: number;
}

/**
 * A pipelined write was lost before it was proven (its QueryIntent found it
 * missing): the transaction restarts (CockroachDB's
 * TransactionRetryWithProtoRefreshError(RETRY_ASYNC_WRITE_FAILURE)).
 */
export class AsyncWriteFailureError extends CairnError {
  override name = 'AsyncWriteFailureError';
  constructor(detail: string, cause?: unknown) {
    super('kv.txn_retry', `restart transaction: TransactionRetryWithProtoRefreshError: RETRY_ASYNC_WRITE_FAILURE: ${detail}`, { retryable: true, sqlState: '40001', cause });
  }
}

/** Whether an error of a send is a chained QueryIntent that found its write missing. */
export function isIntentMissing(e: unknown): boolean {
  return e instanceof CairnError && e.code === 'kv.intent_missing';
}

/** A batch with QueryIntents prepended for the in-flight writes it touches. */
export interface ChainedBatch {
  readonly requests: readonly Request[];
  /** The in-flight writes the prepended QueryIntents prove (responses[0 .. proved.length) are theirs). */
  readonly proved: readonly InFlightWrite[];
}

export class TxnPipeliner {
  private readonly writes = new Map<string, InFlightWrite>();
  private bytes = 0;

  constructor(private readonly settings: PipelinerSettings) {}

  get size(): number {
    return this.writes.size;
  }

  get inFlightBytes(): number {
    return this.bytes;
  }

  /** The writes not proven yet, in no particular order. */
  inFlight(): InFlightWrite[] {
    return [...this.writes.values()];
  }

  /**
   * Whether a batch may be sent with asyncConsensus: pipelining on, only
   * point writes (put, cput, delete — the QueryIntents chained later are
   * fine), and the set stays within its byte budget once they join.
   */
  canPipeline(reqs: readonly Request[]): boolean {
    if (!this.settings.enabled) return false;
    let add = 0;
    let writes = 0;
    for (const q of reqs) {
      if (q.kind !== 'put' && q.kind !== 'cput' && q.kind !== 'delete') return false;
      writes++;
      if (!this.writes.has(q.key.toString('latin1'))) add += q.key.length + IN_FLIGHT_WRITE_OVERHEAD;
    }
    return writes > 0 && this.bytes + add <= this.settings.maxInFlightBytes;
  }

  /**
   * Prepends a QueryIntent for every in-flight write `reqs` touch (all of
   * them when `all`: the commit proves everything). `txn` names the
   * transaction's id and epoch.
   */
  chain(reqs: readonly Request[], txn: { readonly id: Buffer; readonly epoch: number }, all: boolean): ChainedBatch {
    if (this.writes.size === 0) return { requests: reqs, proved: [] };
    const proved: InFlightWrite[] = [];
    if (all) proved.push(...this.writes.values());
    else {
      const seen = new Set<string>();
      const take = (w: InFlightWrite, k: string): void => {
        if (seen.has(k)) return;
        seen.add(k);
        proved.push(w);
      };
      for (const q of reqs) {
        const s = q as { key?: Buffer; endKey?: Buffer | null };
        if (s.key === undefined || q.kind === 'endTxn') continue;
        if (s.endKey === undefined || s.endKey === null) {
          const k = s.key.toString('latin1');
          const w = this.writes.get(k);
          if (w !== undefined) take(w, k);
          continue;
        }
        for (const [k, w] of this.writes) if (compareBytes(w.key, s.key) >= 0 && compareBytes(w.key, s.endKey) < 0) take(w, k);
      }
    }
    if (proved.length === 0) return { requests: reqs, proved };
    const qs: Request[] = proved.map((w) => ({ kind: 'queryIntent', key: w.key, txnId: txn.id, epoch: txn.epoch, seq: w.seq, errorIfMissing: true }));
    return { requests: [...qs, ...reqs], proved };
  }

  /**
   * A batch succeeded: the writes its QueryIntents proved leave the set,
   * and, if it was sent with asyncConsensus, its writes (at `seq`) join it.
   */
  onSuccess(proved: readonly InFlightWrite[], pipelined: readonly Request[] | null, seq: number): void {
    for (const w of proved) {
      const k = w.key.toString('latin1');
      const cur = this.writes.get(k);
      if (cur !== undefined && cur.seq === w.seq) this.remove(k, cur);
    }
    if (pipelined === null) return;
    for (const q of pipelined) {
      if (q.kind !== 'put' && q.kind !== 'cput' && q.kind !== 'delete') continue;
      const k = q.key.toString('latin1');
      const cur = this.writes.get(k);
      if (cur !== undefined) this.remove(k, cur);
      this.writes.set(k, { key: q.key, seq });
      this.bytes += q.key.length + IN_FLIGHT_WRITE_OVERHEAD;
    }
  }

  /** A savepoint at `seq` was rolled back to: the writes above it no longer matter. */
  rollbackTo(seq: number): void {
    for (const [k, w] of this.writes) if (w.seq > seq) this.remove(k, w);
  }

  /** The epoch ended (restart) or the transaction finished: nothing left to prove. */
  clear(): void {
    this.writes.clear();
    this.bytes = 0;
  }

  private remove(k: string, w: InFlightWrite): void {
    this.writes.delete(k);
    this.bytes -= w.key.length + IN_FLIGHT_WRITE_OVERHEAD;
  }
}
