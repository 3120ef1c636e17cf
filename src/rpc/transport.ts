/**
 * The transport contract the KV layer programs against: handlers registered
 * by method id, request/response calls and one-way sends addressed by node
 * id. RpcContext implements it over TCP; an in-process simulated network
 * (DESIGN.md §5, one seed drives the whole cluster) can implement it too,
 * with the same error classification (errors.ts), so KV code cannot tell
 * them apart.
 *
 * Payloads are opaque bytes built with BufWriter and read with BufReader
 * (codec.ts). A received payload is a view into the frame it arrived in: a
 * handler that keeps it beyond its own run should copy it (Buffer.from), or
 * it pins the whole frame in memory.
 *
 * Ownership: src/rpc.
 */
import type { Timestamp } from '../util/hlc.js';

/** What a handler learns about the message it serves. */
export interface RpcCallContext {
  /** The sending node's id (0 if it has none yet: joining). */
  readonly peerId: number;
  readonly method: number;
  /** The sender's HLC timestamp carried by the message (already folded into our clock). */
  readonly ts: Timestamp;
}

/**
 * Serves one method. For a request the returned bytes are the response
 * (nothing = empty); a thrown CairnError travels to the caller unchanged
 * (code, message, retryable, ambiguous, sqlState); any other error becomes
 * `rpc.internal`, and an AssertionError also crashes the process after the
 * caller has its answer. For a one-way message the result is ignored.
 */
export type RpcHandler = (payload: Buffer, ctx: RpcCallContext) => Uint8Array | void | Promise<Uint8Array | void>;

/**
 * Traffic that must not wait behind other traffic gets its own connection
 * (CockroachDB's rpc.ConnectionClass): a multi-megabyte snapshot on the
 * default class cannot delay a liveness heartbeat on the system class.
 */
export const ConnectionClass = {
  Default: 0,
  /** Node liveness, system ranges, clock-offset pings. */
  System: 1,
  /** Raft messages and snapshots. */
  Raft: 2,
} as const;
export type ConnectionClass = (typeof ConnectionClass)[keyof typeof ConnectionClass];
export const CONNECTION_CLASSES = 3;

export interface CallOptions {
  /** Deadline in ms from now; none if absent or 0 (then the call waits until answered or the connection closes). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Which connection to the peer carries it; ConnectionClass.Default if absent. */
  readonly connectionClass?: ConnectionClass;
}

export interface RpcTransport {
  /** This node's id (0 while joining). */
  readonly nodeId: number;
  /** Registers the handler of a method id (a u16); each id has exactly one handler. */
  register(method: number, handler: RpcHandler): void;
  /**
   * Calls method on node nodeId; resolves with the response payload. Rejects
   * with a CairnError: `rpc.unavailable` / `rpc.backpressure` (retryable,
   * never sent), `rpc.timeout` / `rpc.canceled` (ambiguous if the request was
   * sent, else retryable), `rpc.connection_lost` (ambiguous), a handshake
   * refusal, `hlc.clock_offset`, or the remote handler's error.
   */
  call(nodeId: number, method: number, payload: Uint8Array, opts?: CallOptions): Promise<Buffer>;
  /** Queues a one-way message (Raft); never blocks; false if it was dropped here. */
  send(nodeId: number, method: number, payload: Uint8Array, cls?: ConnectionClass): boolean;
}
