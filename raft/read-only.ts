/**
 * ReadOnly: pending linearizable reads on the leader (Raft thesis §6.4,
 * "Processing read-only queries more efficiently"; etcd/raft read_only.go).
 *
 * ReadIndex protocol (ReadOnlyOption.Safe):
 *   1. the leader records its commit index as the request's read index;
 *   2. it sends a heartbeat round carrying the request context;
 *   3. once a quorum acked a heartbeat with that context (or a later one —
 *      requests are queued in order and an ack for a later request confirms
 *      leadership for every earlier one), the read index is released: the
 *      state machine may serve the read once it has applied that index.
 *
 * Contexts are identified by their bytes (a latin1 string key).
 * Invariant: `queue` and `pending` hold the same keys, in arrival order.
 */
import { assert } from '../src/util/assert.js';
import type { Message, ReadOnlyOption } from './types.js';

export interface ReadIndexStatus {
  readonly req: Message;
  readonly index: number;
  /** Voters that acked the heartbeat carrying this context (including the leader). */
  readonly acks: Map<number, boolean>;
}

function ctxKey(ctx: Uint8Array): string {
  return Buffer.from(ctx.buffer, ctx.byteOffset, ctx.byteLength).toString('latin1');
}

export class ReadOnly {
  private readonly pending = new Map<string, ReadIndexStatus>();
  private queue: string[] = [];

  constructor(readonly option: ReadOnlyOption) {}

  /** Queues a read request (m.entries[0].data is its context) at read index `index`. */
  addRequest(index: number, m: Message): void {
    const key = ctxKey((m.entries[0] as { data: Uint8Array }).data);
    if (this.pending.has(key)) return;
    this.pending.set(key, { req: m, index, acks: new Map() });
    this.queue.push(key);
  }

  /** Records a heartbeat ack for `context`; returns the acks so far, or null when unknown. */
  recvAck(id: number, context: Uint8Array): Map<number, boolean> | null {
    const rs = this.pending.get(ctxKey(context));
    if (rs === undefined) return null;
    rs.acks.set(id, true);
    return rs.acks;
  }

  /**
   * Releases the request with `context` and every request queued before it;
   * returns them in order (empty when the context is unknown).
   */
  advance(context: Uint8Array): ReadIndexStatus[] {
    const key = ctxKey(context);
    const at = this.queue.indexOf(key);
    if (at < 0) return [];
    const keys = this.queue.slice(0, at + 1);
    this.queue = this.queue.slice(at + 1);
    const out: ReadIndexStatus[] = [];
    for (const k of keys) {
      const rs = this.pending.get(k);
      assert(rs !== undefined, 'raft: cannot find corresponding read state from pending map');
      out.push(rs);
      this.pending.delete(k);
    }
    return out;
  }

  /** The context of the newest pending request, sent with heartbeats; null when none. */
  lastPendingRequestCtx(): Uint8Array | null {
    const last = this.queue[this.queue.length - 1];
    if (last === undefined) return null;
    return (this.pending.get(last) as ReadIndexStatus).req.entries[0]?.data ?? null;
  }

  get pendingCount(): number {
    return this.queue.length;
  }
}
