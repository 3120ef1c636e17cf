/**
 * Calls from a node to itself, served without a socket (CockroachDB's
 * internalClientAdapter: a node's own KV requests never go through gRPC).
 * A gateway holding the lease of the range it reads used to send the batch
 * over a loopback TCP connection to itself — a socket write and read each
 * way, frame and envelope coding, an HLC stamp — for a third of the requests
 * of a 3-node cluster.
 *
 *   RpcContext.call(self, m, payload) ──► LocalCalls.call ──(microtask)──►
 *       handler m (payload) ──► response bytes | error ──► the caller
 *
 * Same contract as a remote call (transport.ts), minus the network:
 *  - the payload is still the encoded request (the handler decodes it, so
 *    nothing of the caller's objects is shared with the server side) and the
 *    answer is the handler's encoded response;
 *  - the handler runs one microtask later, never inside the caller's
 *    synchronous step (as a remote call is never served before call()
 *    returns);
 *  - a thrown CairnError goes through the error payload codec, so the caller
 *    gets the same error class and fields a remote caller would; any other
 *    error becomes `rpc.internal` (an AssertionError also crashes the
 *    process after the caller has its answer, as in connection.ts);
 *  - size limits: a request or response above the frame limit fails with
 *    `rpc.message_too_large`, as it would on a connection;
 *  - deadlines and AbortSignals: a call is "sent" once its handler started;
 *    a deadline or abort before that is retryable, after it ambiguous
 *    (`rpc.timeout` / `rpc.canceled`); the handler's late answer is dropped.
 *    One timer for all local calls, armed for the earliest deadline.
 * Not covered: the fault hook (it models the network between nodes — a
 * self-call crosses none; RpcContext keeps the socket path when faults are set
 * toward the node itself) and the HLC update (same clock). RpcContext also
 * keeps the socket path for a method with no handler yet (a node still
 * starting answers itself as it answers its peers).
 *
 * Ownership: one per RpcContext; it holds only its pending calls.
 */
import { isCairnError, type CairnError } from '../util/errors.js';
import type { Clock } from '../util/hlc.js';
import type { Logger } from '../util/log.js';
import { BufReader } from './codec.js';
import { crashIfBug } from './connection.js';
import { decodeErrorPayload, encodeErrorPayload, ENVELOPE_MAX_OVERHEAD } from './envelope.js';
import { abandonedCallError, connectionLostError, RpcError, unavailableError, unknownMethodError } from './errors.js';
import { FRAME_HEADER_BYTES } from './frame.js';
import type { CallOptions, RpcHandler } from './transport.js';

/** What LocalCalls needs from its RpcContext. */
export interface LocalCallHost {
  readonly nodeId: number;
  readonly clock: Clock;
  readonly log: Logger;
  readonly maxFrameBytes: number;
  handler(method: number): RpcHandler | undefined;
}

interface LocalCall {
  readonly method: number;
  readonly resolve: (payload: Buffer) => void;
  readonly reject: (err: unknown) => void;
  /** performance.now() ms; Infinity without a timeout. */
  readonly deadline: number;
  readonly signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  sent: boolean;
  settled: boolean;
}

const EMPTY = Buffer.alloc(0);

function asBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

export class LocalCalls {
  private readonly pending = new Set<LocalCall>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerAt = Infinity;
  /** Calls served (for tests and the status page). */
  calls = 0;

  constructor(private readonly host: LocalCallHost) {}

  call(method: number, payload: Uint8Array, opts: CallOptions = {}): Promise<Buffer> {
    const tooLarge = this.sizeError(method, payload, 'request');
    if (tooLarge !== null) return Promise.reject(tooLarge);
    if (opts.signal?.aborted) return Promise.reject(abandonedCallError('rpc.canceled', this.peer(), method, false));
    return new Promise<Buffer>((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? 0;
      const call: LocalCall = {
        method,
        resolve,
        reject,
        deadline: timeoutMs > 0 ? performance.now() + timeoutMs : Infinity,
        signal: opts.signal,
        onAbort: undefined,
        sent: false,
        settled: false,
      };
      this.pending.add(call);
      if (call.signal !== undefined) {
        call.onAbort = () => this.abandon(call, 'rpc.canceled');
        call.signal.addEventListener('abort', call.onAbort, { once: true });
      }
      if (call.deadline < this.timerAt) this.arm(call.deadline);
      queueMicrotask(() => this.serve(call, asBuffer(payload)));
    });
  }

  /**
   * The RpcContext closed: the calls still waiting fail as on a closed
   * connection — ambiguous once their handler started (connection_lost),
   * retryable before (unavailable); their handlers' answers are dropped.
   */
  close(reason: CairnError): void {
    for (const call of [...this.pending]) {
      if (this.settle(call)) call.reject(call.sent ? connectionLostError(this.peer(), call.method, reason.message) : unavailableError(this.peer(), reason.message, reason));
    }
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
  }

  private serve(call: LocalCall, payload: Buffer): void {
    if (call.settled) return; // abandoned before it was "sent"
    call.sent = true;
    this.calls++;
    const handler = this.host.handler(call.method);
    if (handler === undefined) {
      this.fail(call, unknownMethodError(this.host.nodeId, call.method));
      return;
    }
    let result: ReturnType<RpcHandler>;
    try {
      result = handler(payload, { peerId: this.host.nodeId, method: call.method, ts: this.host.clock.now() });
    } catch (e) {
      this.fail(call, e);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (r) => this.answer(call, r ?? EMPTY),
        (e: unknown) => this.fail(call, e),
      );
    } else this.answer(call, result ?? EMPTY);
  }

  private answer(call: LocalCall, response: Uint8Array): void {
    const tooLarge = this.sizeError(call.method, response, 'response');
    if (tooLarge !== null) {
      this.fail(call, tooLarge);
      return;
    }
    if (this.settle(call)) call.resolve(asBuffer(response));
  }

  /** The handler's error as a remote caller would receive it (connection.ts respondError + the error codec). */
  private fail(call: LocalCall, e: unknown): void {
    let err: CairnError;
    if (isCairnError(e)) err = e;
    else {
      this.host.log.error({ method: call.method, err: String(e) }, 'rpc: local handler failed');
      err = new RpcError('rpc.internal', `rpc: handler for method ${call.method} on n${this.host.nodeId} failed: ${String(e)}`);
      crashIfBug(e);
    }
    if (this.settle(call)) call.reject(decodeErrorPayload(new BufReader(encodeErrorPayload(err))));
  }

  private sizeError(method: number, payload: Uint8Array, what: 'request' | 'response'): RpcError | null {
    if (payload.length + ENVELOPE_MAX_OVERHEAD + FRAME_HEADER_BYTES <= this.host.maxFrameBytes) return null;
    return what === 'request'
      ? new RpcError('rpc.message_too_large', `rpc: message of ${payload.length} bytes for method ${method} exceeds the frame limit of ${this.host.maxFrameBytes}`)
      : new RpcError('rpc.message_too_large', `rpc: response of ${payload.length} bytes for method ${method} exceeds the frame limit`);
  }

  /** Marks the call settled (false if it already was) and forgets its deadline and signal. */
  private settle(call: LocalCall): boolean {
    if (call.settled) return false;
    call.settled = true;
    this.pending.delete(call);
    if (call.onAbort !== undefined) call.signal?.removeEventListener('abort', call.onAbort);
    return true;
  }

  private abandon(call: LocalCall, code: 'rpc.timeout' | 'rpc.canceled'): void {
    if (this.settle(call)) call.reject(abandonedCallError(code, this.peer(), call.method, call.sent));
  }

  private arm(at: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.expire(), Math.max(0, at - performance.now()));
    this.timer.unref?.();
  }

  private expire(): void {
    this.timer = null;
    this.timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const call of [...this.pending]) {
      if (call.deadline <= now) this.abandon(call, 'rpc.timeout');
      else if (call.deadline < next) next = call.deadline;
    }
    if (next !== Infinity) this.arm(next);
  }

  private peer(): string {
    return `n${this.host.nodeId} (local)`;
  }
}
