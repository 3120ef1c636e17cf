/**
 * A call waiting for its answer, and the deadlines of a set of them behind
 * one timer — shared by a connection's calls (connection.ts) and a node's
 * calls to itself (local-call.ts), which settle, time out and cancel alike:
 *
 *   newPendingCall(method, resolve, reject, opts, onAbort)   the record; its
 *       AbortSignal (if any) calls onAbort once
 *   settlePending(call)     true the first time only; unhooks the signal
 *   DeadlineTimer.watch(deadline)   one timer, armed for the earliest
 *       deadline; when it fires it hands every call past its deadline to
 *       `expire` and re-arms for the next one
 *
 * Ownership: the owner (a connection, LocalCalls) keeps the calls; this
 * module keeps only the timer.
 */
import type { CallOptions } from './transport.js';

export interface PendingCall {
  readonly method: number;
  readonly resolve: (payload: Buffer) => void;
  readonly reject: (err: Error) => void;
  /** performance.now() ms; Infinity without a timeout. */
  readonly deadline: number;
  readonly signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  /** The request left (handed to the socket or the fault hook; a local handler started): its outcome is unknown once abandoned. */
  sent: boolean;
  settled: boolean;
}

/** The record of a new call; with a signal, `onAbort(call)` runs once when it aborts. */
export function newPendingCall<C extends PendingCall>(base: Omit<C, 'deadline' | 'signal' | 'onAbort' | 'sent' | 'settled'>, opts: CallOptions, onAbort: (call: C) => void): C {
  const timeoutMs = opts.timeoutMs ?? 0;
  const call = { ...base, deadline: timeoutMs > 0 ? performance.now() + timeoutMs : Infinity, signal: opts.signal, onAbort: undefined, sent: false, settled: false } as C;
  if (call.signal !== undefined) {
    call.onAbort = () => onAbort(call);
    call.signal.addEventListener('abort', call.onAbort, { once: true });
  }
  return call;
}

/** Marks the call settled; false if it already was. Unhooks its signal. */
export function settlePending(call: PendingCall): boolean {
  if (call.settled) return false;
  call.settled = true;
  if (call.onAbort !== undefined) call.signal?.removeEventListener('abort', call.onAbort);
  return true;
}

/** One timer for the deadlines of a set of calls, armed for the earliest. */
export class DeadlineTimer<C extends PendingCall> {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private at = Infinity;
  private readonly fireBound = (): void => this.fire();

  /**
   * @param calls the calls still pending (scanned when the timer fires)
   * @param expire called for each call past its deadline (it must settle it)
   * @param unref whether the timer may let the process exit
   */
  constructor(
    private readonly calls: () => Iterable<C>,
    private readonly expire: (call: C) => void,
    private readonly unref = false,
  ) {}

  /** A call with this deadline started. */
  watch(deadline: number): void {
    if (deadline < this.at) this.arm(deadline);
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.at = Infinity;
  }

  private arm(at: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(this.fireBound, Math.max(0, at - performance.now()));
    if (this.unref) this.timer.unref?.();
  }

  private fire(): void {
    this.timer = null;
    this.at = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const call of [...this.calls()]) {
      if (call.deadline <= now) this.expire(call);
      else if (!call.settled && call.deadline < next) next = call.deadline;
    }
    if (next !== Infinity) this.arm(next);
  }
}
