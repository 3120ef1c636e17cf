/**
 * Progress: the leader's view of one follower (or learner), as in etcd/raft's
 * tracker.Progress.
 *
 *   Probe      the leader does not know the follower's last index; it sends one
 *              MsgApp at a time (per heartbeat interval) and waits for the answer
 *              to find the matching point (fast backtracking with rejectHint).
 *   Replicate  the follower is known to match up to `match`; the leader streams
 *              MsgApps optimistically, bounded by the Inflights window.
 *   Snapshot   the follower needs a snapshot (its next entry was compacted
 *              away); nothing is sent until the snapshot is reported done/failed
 *              or the follower acks an index ≥ pendingSnapshot.
 *
 * Invariants: match < next; in Snapshot state pendingSnapshot > 0.
 */
import { Inflights } from './inflights.js';

export enum ProgressStateType {
  Probe = 0,
  Replicate = 1,
  Snapshot = 2,
}

export const PROGRESS_STATE_NAMES: readonly string[] = ['StateProbe', 'StateReplicate', 'StateSnapshot'];

export class Progress {
  match = 0;
  next = 0;
  state: ProgressStateType = ProgressStateType.Probe;
  /** In Snapshot state: the index of the snapshot being sent. */
  pendingSnapshot = 0;
  /** The follower was heard from since the last check-quorum round. */
  recentActive = false;
  /**
   * MsgApp flow to this follower is paused: in Probe state after one MsgApp
   * was sent (until a response or heartbeat response), in Replicate state
   * when the inflights window is full.
   */
  msgAppFlowPaused = false;
  inflights: Inflights;
  isLearner = false;
  /** A MsgApp went to this follower since the leader's last heartbeat round (Config.skipHeartbeatsAfterAppends). */
  appendSentSinceBeat = false;

  constructor(next: number, inflights: Inflights, isLearner = false, match = 0) {
    this.next = next;
    this.match = match;
    this.inflights = inflights;
    this.isLearner = isLearner;
  }

  /** A copy sharing the inflights window (config changes copy progress maps). */
  clone(): Progress {
    const c = new Progress(this.next, this.inflights, this.isLearner, this.match);
    c.state = this.state;
    c.pendingSnapshot = this.pendingSnapshot;
    c.recentActive = this.recentActive;
    c.msgAppFlowPaused = this.msgAppFlowPaused;
    c.appendSentSinceBeat = this.appendSentSinceBeat;
    return c;
  }

  private resetState(state: ProgressStateType): void {
    this.msgAppFlowPaused = false;
    this.pendingSnapshot = 0;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    // After a snapshot, resume right after it (if the follower did not ack more).
    if (this.state === ProgressStateType.Snapshot) {
      const pending = this.pendingSnapshot;
      this.resetState(ProgressStateType.Probe);
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState(ProgressStateType.Probe);
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState(ProgressStateType.Replicate);
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.resetState(ProgressStateType.Snapshot);
    this.pendingSnapshot = snapshotIndex;
  }

  /** Updates flow state after a MsgApp carrying `entries` entries / `bytes` bytes was sent. */
  sentEntries(entries: number, bytes: number): void {
    this.appendSentSinceBeat = true;
    if (this.state === ProgressStateType.Replicate) {
      if (entries > 0) {
        this.next += entries;
        this.inflights.add(this.next - 1, bytes);
      }
      this.msgAppFlowPaused = this.inflights.full();
    } else if (this.state === ProgressStateType.Probe) {
      if (entries > 0) this.msgAppFlowPaused = true;
    }
  }

  /**
   * Called on a successful MsgAppResp for index n. Returns false when n is
   * stale (already matched).
   */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.msgAppFlowPaused = false;
    }
    if (this.next < n + 1) this.next = n + 1;
    return updated;
  }

  /**
   * Called on a rejected MsgApp for index `rejected`; `matchHint` is the
   * follower's guess of the largest index where its log may match ours.
   * Returns false when the rejection is stale.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === ProgressStateType.Replicate) {
      // A rejection at or below match is stale; otherwise fall back to match+1.
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    // In probe state only the rejection of the last sent MsgApp counts.
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.msgAppFlowPaused = false;
    return true;
  }

  /** Whether sending MsgApp to this follower is paused (heartbeats still flow). */
  isPaused(): boolean {
    switch (this.state) {
      case ProgressStateType.Probe:
      case ProgressStateType.Replicate:
        return this.msgAppFlowPaused;
      case ProgressStateType.Snapshot:
        return true;
    }
  }

  toString(): string {
    let s = `${PROGRESS_STATE_NAMES[this.state]} match=${this.match} next=${this.next}`;
    if (this.isLearner) s += ' learner';
    if (this.isPaused()) s += ' paused';
    if (this.pendingSnapshot > 0) s += ` pendingSnap=${this.pendingSnapshot}`;
    if (!this.recentActive) s += ' inactive';
    if (this.inflights.count > 0) s += ` inflight=${this.inflights.count}`;
    if (this.inflights.full()) s += '[full]';
    return s;
  }
}
