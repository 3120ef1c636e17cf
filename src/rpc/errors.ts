/**
 * The typed errors of the RPC layer, with the retry classification callers
 * rely on (DESIGN.md §3, "Errors"; §6, "Timeouts not cancelled"):
 *
 *   code                    retryable  ambiguous  when
 *   rpc.unavailable         yes        no         the request was never handed to the
 *                                                 network: peer unknown, dial failed,
 *                                                 in backoff, connection closed before send
 *   rpc.backpressure        yes        no         the connection's outgoing queue is full
 *   rpc.timeout             !sent      sent       the deadline passed; `sent` says
 *   rpc.canceled            !sent      sent       the AbortSignal fired;      whether the
 *   rpc.connection_lost     no         yes        connection closed after     request may
 *                                                 the request was written     have run
 *   rpc.cluster_id_mismatch no         no         handshake: the peer belongs to another cluster
 *   rpc.node_id_mismatch    no         no         handshake: the address is another node
 *   rpc.version_mismatch    no         no         handshake: incompatible protocol
 *   rpc.unknown_method      yes        no         the peer has no handler for the method: the
 *                                                 request never ran (a restarting node accepts
 *                                                 connections before its store registers the
 *                                                 KV methods) — another replica may serve it
 *   rpc.message_too_large   no         no         the message cannot fit a frame
 *   rpc.internal            no         no         the remote handler failed with a non-Cairn error
 *   rpc.closed              no         no         this RpcContext was closed
 *   rpc.listen_failed       no         no         the listen address is taken or invalid
 *   hlc.clock_offset        no         no         the peer refused our request (our clock is too far ahead)
 *   hlc.clock_offset        no         yes        we refused the peer's response (its clock is too far ahead)
 *   rpc.invalid_fault_spec  no         no         FaultHook.setFaults got an impossible spec
 *
 * Errors raised by a remote handler travel as (code, message, retryable,
 * ambiguous, sqlState) and are re-raised unchanged as CairnError.
 *
 * Ownership: src/rpc.
 */
import { CairnError } from '../util/errors.js';

export class RpcError extends CairnError {
  override name = 'RpcError';
}

/** Never sent: safe to retry, here or on another replica. */
export function unavailableError(peer: string, why: string, cause?: unknown): RpcError {
  return new RpcError('rpc.unavailable', `rpc: ${peer} unavailable: ${why}`, { retryable: true, sqlState: '08006', cause });
}

/**
 * A call that ended without a response, by deadline or cancellation. Once the
 * request was handed to the network its effect is unknown: ambiguous.
 */
export function abandonedCallError(code: 'rpc.timeout' | 'rpc.canceled', peer: string, method: number, sent: boolean): RpcError {
  const what = code === 'rpc.timeout' ? 'timed out' : 'canceled';
  const state = sent ? 'after the request was sent (outcome unknown)' : 'before the request was sent';
  return new RpcError(code, `rpc: call of method ${method} to ${peer} ${what} ${state}`, {
    retryable: !sent,
    ambiguous: sent,
    sqlState: sent ? '40003' : '57014',
  });
}

/** The peer has no handler for the method (see the table): nothing ran, so it is safe to retry elsewhere. */
export function unknownMethodError(nodeId: number, method: number): RpcError {
  return new RpcError('rpc.unknown_method', `rpc: n${nodeId} has no handler for method ${method} (not served there, or not yet: a node still starting)`, {
    retryable: true,
    sqlState: '57P03',
  });
}

export function connectionLostError(peer: string, method: number, why: string): RpcError {
  return new RpcError('rpc.connection_lost', `rpc: connection to ${peer} lost after method ${method} was sent (outcome unknown): ${why}`, {
    ambiguous: true,
  });
}
