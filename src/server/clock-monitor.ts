/**
 * The node's verdict on its own clock (DESIGN.md §6, "Clock offset beyond
 * the bound"; CockroachDB's RemoteClockMonitor.VerifyClockOffset).
 *
 * Evidence per peer, the latest wins:
 *   ok   a ping did not show the offset surely at or beyond the tolerance (80 %
 *        of the max offset): |offset| − uncertainty < tolerance. An ambiguous
 *        measurement (the tolerance inside offset ± uncertainty) counts as ok,
 *        as in CockroachDB's RemoteOffset.isHealthy: a skew below the max offset
 *        — the 0.8× jump of the jepsen clock-safe nemesis, measured as 400 ms
 *        ± a busy event loop's round trip — must not stop anybody, while a
 *        skew beyond the max offset is still surely beyond the tolerance
 *        (for any round trip shorter than twice the excess)
 *   bad  a ping showed |offset| − uncertainty ≥ tolerance; or a message between us was refused with
 *        hlc.clock_offset (either side: the peer refused our request because our
 *        clock is ahead, or we refused its answer because its clock is ahead)
 *   —    the peer did not answer for another reason: nothing new; its last
 *        evidence stands until it is `maxAgeMs` old (a transient failure to
 *        reach a good peer must not flip the verdict), then it no longer counts
 *
 * Verdict: this node is healthy iff the nodes it agrees with — the `ok`
 * peers plus itself — are a strict majority of the nodes it has evidence
 * about plus itself: (ok + 1) · 2 > ok + bad + 1. So in a 3-node cluster
 * with one skewed node, the two good nodes (1 ok, 1 bad: 4 > 3) keep serving
 * and the skewed one (0 ok, 2 bad: 2 > 3 fails) stops. Counting oneself
 * matters: without it each good node would see only half of its peers
 * agreeing and stop too. No evidence at all: healthy.
 *
 * Ownership: src/server. Pure (time is passed in, monotonic ms); node.ts
 * feeds it from its ping timer and the RPC layer's clock-offset callback.
 */
import type { OffsetMeasurement } from '../rpc/clock-offset.js';

export type PeerClockEvidence = 'ok' | 'bad';

export class ClockMonitor {
  private readonly peers = new Map<number, { evidence: PeerClockEvidence; atMs: number }>();

  constructor(
    private readonly toleranceMicros: number,
    private readonly maxAgeMs = 5_000,
  ) {}

  recordMeasurement(peer: number, m: OffsetMeasurement, nowMs: number): void {
    this.peers.set(peer, { evidence: Math.abs(m.offsetMicros) - m.uncertaintyMicros < this.toleranceMicros ? 'ok' : 'bad', atMs: nowMs });
  }

  /** A message to or from the peer was refused for clock offset. */
  recordOffsetError(peer: number, nowMs: number): void {
    this.peers.set(peer, { evidence: 'bad', atMs: nowMs });
  }

  forget(peer: number): void {
    this.peers.delete(peer);
  }

  /** The evidence that still counts at nowMs. */
  evidence(nowMs: number): Map<number, PeerClockEvidence> {
    const out = new Map<number, PeerClockEvidence>();
    for (const [peer, e] of this.peers) if (nowMs - e.atMs <= this.maxAgeMs) out.set(peer, e.evidence);
    return out;
  }

  healthy(nowMs: number): boolean {
    let ok = 0;
    let bad = 0;
    for (const e of this.evidence(nowMs).values()) {
      if (e === 'ok') ok++;
      else bad++;
    }
    return (ok + 1) * 2 > ok + bad + 1;
  }
}
