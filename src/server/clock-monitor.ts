/**
 * The node's verdict on its own clock (DESIGN.md §6, "Clock offset beyond
 * the bound"; CockroachDB's RemoteClockMonitor.VerifyClockOffset).
 *
 * Evidence per peer, the latest wins:
 *   ok   a ping measured |offset| + uncertainty ≤ tolerance (80 % of the max offset)
 *   bad  a ping measured more; or a message between us was refused with
 *        hlc.clock_offset (either side: the peer refused our request because our
 *        clock is ahead, or we refused its answer because its clock is ahead)
 *   —    the peer did not answer for another reason: no evidence (forgotten)
 *
 * Verdict: this node is healthy iff the nodes it agrees with — the `ok`
 * peers plus itself — are a strict majority of the nodes it has evidence
 * about plus itself: (ok + 1) · 2 > ok + bad + 1. So in a 3-node cluster
 * with one skewed node, the two good nodes (1 ok, 1 bad: 4 > 3) keep serving
 * and the skewed one (0 ok, 2 bad: 2 > 3 fails) stops. Counting oneself
 * matters: without it each good node would see only half of its peers
 * agreeing and stop too. No evidence at all: healthy.
 *
 * Ownership: src/server. Pure; node.ts feeds it from its ping timer and
 * the RPC layer's clock-offset callback.
 */
import type { OffsetMeasurement } from '../rpc/clock-offset.js';

export type PeerClockEvidence = 'ok' | 'bad';

export class ClockMonitor {
  private readonly peers = new Map<number, PeerClockEvidence>();

  constructor(private readonly toleranceMicros: number) {}

  recordMeasurement(peer: number, m: OffsetMeasurement): void {
    this.peers.set(peer, Math.abs(m.offsetMicros) + m.uncertaintyMicros <= this.toleranceMicros ? 'ok' : 'bad');
  }

  /** A message to or from the peer was refused for clock offset. */
  recordOffsetError(peer: number): void {
    this.peers.set(peer, 'bad');
  }

  forget(peer: number): void {
    this.peers.delete(peer);
  }

  get evidence(): ReadonlyMap<number, PeerClockEvidence> {
    return this.peers;
  }

  healthy(): boolean {
    let ok = 0;
    let bad = 0;
    for (const e of this.peers.values()) {
      if (e === 'ok') ok++;
      else bad++;
    }
    return (ok + 1) * 2 > ok + bad + 1;
  }
}
