/**
 * Counters of the RPC layer, per peer node id, as plain numbers (the HTTP
 * status layer in src/server exports them). Peer 0 collects what happened on
 * connections before the handshake named the peer (garbage, refused dials).
 *
 * Bytes count whole frames including headers; messages count envelopes.
 * Hot path: one Map lookup per connection, then plain field increments.
 *
 * Ownership: src/rpc.
 */

export class PeerMetrics {
  bytesSent = 0;
  bytesReceived = 0;
  messagesSent = 0;
  messagesReceived = 0;
  framesSent = 0;
  framesReceived = 0;
  /** Dial attempts (outgoing connections started). */
  dials = 0;
  /** Dials after a connection to this peer had been established once. */
  reconnects = 0;
  /** Handshakes completed (either direction). */
  connectionsEstablished = 0;
  /** Connections closed for an error (malformed frame, refused handshake, socket error). */
  errors = 0;
  malformedFrames = 0;
  /** Messages whose HLC was beyond the max offset (rejected). */
  clockOffsetErrors = 0;
  /** One-way messages dropped because the queue was full or the peer unreachable. */
  oneWayDropped = 0;
  /** Calls that ended by deadline or cancellation. */
  callsAbandoned = 0;
  /** Messages held back by the fault hook whose connection closed before their delay ended. */
  delayedDiscarded = 0;
  /** Responses that matched no pending call (late, duplicated). */
  unmatchedResponses = 0;
}

export type MetricsSnapshot = Record<keyof PeerMetrics, number>;

export class RpcMetrics {
  private readonly peers = new Map<number, PeerMetrics>();

  peer(nodeId: number): PeerMetrics {
    let m = this.peers.get(nodeId);
    if (m === undefined) {
      m = new PeerMetrics();
      this.peers.set(nodeId, m);
    }
    return m;
  }

  peerIds(): number[] {
    return [...this.peers.keys()].sort((a, b) => a - b);
  }

  /** The sum over all peers. */
  totals(): MetricsSnapshot {
    const t = new PeerMetrics();
    const keys = Object.keys(t) as (keyof PeerMetrics)[];
    for (const m of this.peers.values()) for (const k of keys) t[k] += m[k];
    return { ...t };
  }

  snapshot(): Record<number, MetricsSnapshot> {
    const out: Record<number, MetricsSnapshot> = {};
    for (const [id, m] of this.peers) out[id] = { ...m };
    return out;
  }
}
