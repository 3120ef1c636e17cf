/**
 * Whether a waiting transaction may push the transaction in its way, and how
 * a deadlock victim is chosen: pure decisions, tested with tables
 * (CockroachDB's batcheval/cmd_push_txn.go and txnwait/queue.go rules).
 *
 * A pusher blocked by a lock asks the pushee's record (PushTxn):
 *
 *   pushee record          push type   decision
 *   committed / aborted    any         already-finalized (resolve its intents)
 *   pending, ts ≥ pushTo   timestamp   already-pushed (the reader is below it)
 *   staging                any         recover when expired (parallel-commit
 *                                      recovery decides), else wait
 *   pending, expired       any         push as an abort (expired: the
 *                                      coordinator stopped heartbeating — it
 *                                      is abandoned, so clean it up rather
 *                                      than move it)
 *   pending, force         any         push (force: a deadlock victim)
 *   pending, live          any         push when pusher priority > pushee
 *                                      priority (MAX_TXN_PRIORITY always wins
 *                                      against lower, MIN always loses), else wait
 *
 * "push" means: for an abort push, write ABORTED into the pushee's record;
 * for a timestamp push, move its write timestamp to pushTo. "wait" means:
 * queue in the TxnWaitQueue on the pushee's record until it finalizes or a
 * deadlock is found.
 *
 * A record is expired when its last activity (last heartbeat, or its start
 * when it never heartbeated) is older than `expiryMicros` before `now` (the
 * caller uses a multiple of the heartbeat interval, as CockroachDB's
 * TxnLivenessThreshold). Time is passed in; nothing here reads a clock.
 */
import { assert } from '../../util/assert.js';
import { compareTimestamps, type Timestamp } from '../../util/hlc.js';
import type { PushType } from './lock-table.js';

export const MIN_TXN_PRIORITY = 0;
export const MAX_TXN_PRIORITY = 0x7fffffff;

export type TxnRecordStatus = 'pending' | 'staging' | 'committed' | 'aborted';

export interface PusheeRecord {
  readonly status: TxnRecordStatus;
  readonly priority: number;
  readonly writeTimestamp: Timestamp;
  /** The last heartbeat, or the start of the transaction when it never heartbeated. */
  readonly lastActive: Timestamp;
}

export interface PushArgs {
  readonly pushType: PushType;
  readonly pusherPriority: number;
  /** For a timestamp push: the timestamp the pushee must move above (or to). */
  readonly pushTo: Timestamp;
  readonly now: Timestamp;
  /** How long a record may go without a heartbeat before it counts as abandoned. */
  readonly expiryMicros: number;
  /** Push regardless of priority and liveness (breaking a deadlock). */
  readonly force?: boolean;
}

export type PushDecision =
  | { readonly kind: 'already-finalized' }
  | { readonly kind: 'already-pushed' }
  /** pushType: what to do — an expired pushee is aborted even by a timestamp push. */
  | { readonly kind: 'push'; readonly reason: 'expired' | 'priority' | 'force'; readonly pushType: PushType }
  | { readonly kind: 'recover' }
  | { readonly kind: 'wait' };

/** Whether a pusher of this priority wins against a pushee of that one. */
export function canPushWithPriority(pusher: number, pushee: number): boolean {
  if (pusher === MAX_TXN_PRIORITY && pushee < MAX_TXN_PRIORITY) return true;
  if (pushee === MIN_TXN_PRIORITY && pusher > MIN_TXN_PRIORITY) return true;
  return pusher > pushee;
}

/** Whether a record's coordinator has stopped heartbeating it. */
export function isTxnExpired(lastActive: Timestamp, now: Timestamp, expiryMicros: number): boolean {
  return now.wall - lastActive.wall > expiryMicros;
}

export function decidePush(pushee: PusheeRecord, args: PushArgs): PushDecision {
  if (pushee.status === 'committed' || pushee.status === 'aborted') return { kind: 'already-finalized' };
  if (args.pushType === 'timestamp' && pushee.status === 'pending' && compareTimestamps(pushee.writeTimestamp, args.pushTo) >= 0) return { kind: 'already-pushed' };
  const expired = isTxnExpired(pushee.lastActive, args.now, args.expiryMicros);
  // A staging transaction may already be implicitly committed: only recovery may decide its fate.
  if (pushee.status === 'staging') return expired || args.force === true ? { kind: 'recover' } : { kind: 'wait' };
  if (expired) return { kind: 'push', reason: 'expired', pushType: 'abort' };
  if (args.force === true) return { kind: 'push', reason: 'force', pushType: args.pushType };
  if (canPushWithPriority(args.pusherPriority, pushee.priority)) return { kind: 'push', reason: 'priority', pushType: args.pushType };
  return { kind: 'wait' };
}

/** Whether the pusher may abort / push the pushee now (decidePush said 'push'). */
export function shouldPush(pushee: PusheeRecord, args: PushArgs): boolean {
  return decidePush(pushee, args).kind === 'push';
}

/** A transaction in a waits-for cycle, as the victim choice sees it. */
export interface DeadlockCandidate {
  readonly id: string;
  readonly priority: number;
  /** When it started; the youngest (latest) loses ties. */
  readonly minTimestamp: Timestamp;
}

/**
 * The transaction to abort to break a deadlock: the lowest priority; among
 * equals the youngest (latest start); among those the largest id — a total
 * order, so every node picks the same victim for the same cycle.
 */
export function chooseDeadlockVictim(cycle: readonly DeadlockCandidate[]): DeadlockCandidate {
  let v = cycle[0];
  assert(v !== undefined, 'push-policy: empty deadlock cycle');
  for (const c of cycle) {
    if (c.priority !== v.priority) {
      if (c.priority < v.priority) v = c;
      continue;
    }
    const age = compareTimestamps(c.minTimestamp, v.minTimestamp);
    if (age > 0 || (age === 0 && c.id > v.id)) v = c;
  }
  return v;
}
