/**
 * One TCP connection between two nodes, either end: the handshake, the
 * outgoing queue with coalesced writes, the incoming frame decoder, pending
 * calls with deadlines and cancellation, and dispatch to handlers.
 *
 *   call()/send()/responses ──► fault hook ──► queue ──(setImmediate)──► flush:
 *        one clock.now(), every queued message encoded into frames in one
 *        buffer, one socket.write
 *   socket 'data' ──► FrameDecoder ──► envelopes ──► clock.update ──► handler /
 *        pending call
 *
 * Coalescing: every message queued during one event-loop turn leaves in one
 * socket.write (DESIGN.md §4: ~650k round trips/s coalesced against ~50k with
 * one write per message; bench/rpc.ts here: ~290k against ~60k round trips
 * per CPU-second with 1 KB payloads). A queue above FLUSH_EAGER_BYTES is
 * flushed at once to bound memory. The written buffer is handed to the socket
 * without a copy; the writer continues in a second buffer and takes the first
 * back when the socket is done with it.
 *
 * Reading: a dialed socket reads into one reused 256 KiB buffer (net's onread)
 * and the decoder copies each frame out of it — one allocation per frame
 * instead of one per read plus one per frame (+20 % round trips per
 * CPU-second on the caller's side). Accepted sockets cannot use onread and
 * get one buffer per read from net; frames inside a read are views of it.
 *
 * HLC: each flush takes one clock.now() and stamps it on every message of the
 * write. That timestamp is at least every timestamp the payloads could carry
 * (they were produced before the flush), strictly advances the sender's clock
 * like a per-message now() would, and reports the sender's current physical
 * time — for the price of one clock read per write instead of per message.
 * The receiver calls clock.update() once per distinct timestamp. A
 * ClockOffsetError fails that message — a request is not served and gets the
 * error as its response; a response is refused and its call rejects with an
 * ambiguous `hlc.clock_offset` (the request may have run); a one-way is
 * dropped — and is counted, logged (at most once a second per connection)
 * and reported through the host's onClockOffset (the node layer decides
 * whether to stop serving).
 *
 * Call outcomes (errors.ts): a call is `sent` once its bytes were handed to the
 * socket, or to the fault hook's simulated network (dropped or delayed). A
 * call that ends before that is never written: messages are encoded at flush
 * time and abandoned ones are skipped — so "not sent" is a guarantee and such
 * failures are retryable, not ambiguous.
 *
 * Bad input: a malformed or truncated frame or envelope closes this
 * connection (logged with the peer); nothing else is affected. So does a
 * one-way message whose handler cannot decode its payload (the handler
 * throws RpcCodecError — e.g. a truncated RaftMessageBatch): nobody waits for
 * an answer that could carry the error, and a peer that sends garbage should
 * be cut off, not quietly half-served. The handler decodes before it acts, so
 * such a message has no effect (for Raft: a dropped batch, retransmitted). A
 * request's decoding failure goes back to its caller as the error instead.
 *
 * Ownership: src/rpc. The socket belongs to this object once constructed.
 */
import type { Socket } from 'node:net';
import { assert, AssertionError } from '../util/assert.js';
import { CairnError, isCairnError } from '../util/errors.js';
import { ClockOffsetError, type Clock, type Timestamp } from '../util/hlc.js';
import type { Logger } from '../util/log.js';
import { BufReader, BufWriter, RpcCodecError } from './codec.js';
import {
  decodeEnvelope,
  decodeErrorPayload,
  encodeEnvelope,
  encodeErrorPayload,
  ENVELOPE_MAX_OVERHEAD,
  type Envelope,
  MessageKind,
} from './envelope.js';
import { abandonedCallError, connectionLostError, RpcError, unavailableError, unknownMethodError } from './errors.js';
import type { FaultHook } from './fault-hook.js';
import { beginFrame, encodeFrame, endFrame, FRAME_HEADER_BYTES, FrameDecoder } from './frame.js';
import { clusterIdConflict, decodeHandshake, encodeHandshake, type Handshake } from './handshake.js';
import type { PeerMetrics, RpcMetrics } from './metrics.js';
import type { CallOptions, RpcHandler } from './transport.js';

/** What a connection needs from the node it belongs to (RpcContext). */
export interface ConnectionHost {
  readonly clock: Clock;
  readonly faults: FaultHook;
  readonly metrics: RpcMetrics;
  readonly log: Logger;
  readonly maxFrameBytes: number;
  readonly maxQueuedBytes: number;
  readonly handshakeTimeoutMs: number;
  /** Measurement only: write each message on its own instead of coalescing a turn's worth. */
  readonly flushEachMessage: boolean;
  readonly nodeId: number;
  readonly clusterId: string;
  handler(method: number): RpcHandler | undefined;
  onClockOffset(peerId: number, err: ClockOffsetError): void;
}

export type ConnectionRole = { readonly kind: 'dialer'; readonly expectNodeId: number } | { readonly kind: 'acceptor' };

interface PendingCall {
  readonly requestId: number;
  readonly method: number;
  readonly resolve: (payload: Buffer) => void;
  readonly reject: (err: Error) => void;
  /** performance.now() ms; Infinity without a timeout. */
  readonly deadline: number;
  readonly signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  sent: boolean;
  settled: boolean;
}

interface OutMessage {
  readonly kind: MessageKind;
  readonly method: number;
  readonly requestId: number;
  readonly payload: Uint8Array;
  readonly call: PendingCall | null;
}

/** Initial size of each of the two outgoing buffers; larger ones are kept for reuse up to MAX_SPARE_BYTES. */
const OUT_BUFFER_BYTES = 64 * 1024;
const MAX_SPARE_BYTES = 4 * 1024 * 1024;
const KEEPALIVE_MS = 10_000;
/** Largest frame accepted before the handshake completes (a handshake is < 300 bytes). */
const HANDSHAKE_MAX_FRAME_BYTES = 4096;

/** Queued payload bytes above which a flush happens without waiting for the turn to end. */
const FLUSH_EAGER_BYTES = 1 << 20;

/** Close reasons handed to unsent calls as they are (the rest become rpc.unavailable). */
const PASS_THROUGH_CODES = new Set([
  'rpc.cluster_id_mismatch',
  'rpc.node_id_mismatch',
  'rpc.version_mismatch',
  'rpc.closed',
  'hlc.clock_offset',
]);

const EMPTY = Buffer.alloc(0);

/**
 * A handler that broke an invariant is a bug: after the caller got its
 * answer, the process crashes as DESIGN.md §3 requires — never swallowed here.
 */
/** An AssertionError from a handler crashes the process once the caller has its answer (a bug, DESIGN.md §3). */
export function crashIfBug(e: unknown): void {
  if (e instanceof AssertionError) {
    queueMicrotask(() => {
      throw e;
    });
  }
}

export class Connection {
  state: 'handshaking' | 'ready' | 'closed' = 'handshaking';
  /** The remote node id; for a dialer, the expected one until the ack names it. */
  peerId: number;
  /** The remote's cluster id from the handshake ('' until then, or if joining). */
  remoteClusterId = '';
  /** Why the connection closed. */
  closeReason: CairnError | null = null;
  /** Called once the handshake succeeded. */
  onEstablished: (() => void) | null = null;
  /** Called once, when the connection closes for any reason. */
  onClose: ((reason: CairnError) => void) | null = null;

  private readonly decoder: FrameDecoder;
  private readonly out = new BufWriter(OUT_BUFFER_BYTES);
  private spare: Buffer | null = null;
  private queue: OutMessage[] = [];
  private queuedBytes = 0;
  private flushScheduled = false;
  private readonly pending = new Map<number, PendingCall>();
  private nextRequestId = 1;
  private metrics: PeerMetrics;
  private handshakeTimer: NodeJS.Timeout | null = null;
  private deadlineTimer: NodeJS.Timeout | null = null;
  private deadlineTimerAt = Infinity;
  private remoteAddr = '';
  private offsetLoggedAt = -Infinity;
  private readonly flushBound = (): void => this.flush();
  private readonly onFrameBound = (body: Buffer): void => this.onFrame(body);
  private readonly expireBound = (): void => this.expireCalls();

  constructor(
    private readonly host: ConnectionHost,
    private readonly socket: Socket,
    private readonly role: ConnectionRole,
    reusedReadBuffer = false,
  ) {
    this.peerId = role.kind === 'dialer' ? role.expectNodeId : 0;
    this.metrics = host.metrics.peer(this.peerId);
    // Until the handshake succeeds the peer is unknown: it may not make us
    // buffer more than a handshake needs.
    this.decoder = new FrameDecoder(HANDSHAKE_MAX_FRAME_BYTES, reusedReadBuffer);
    socket.setNoDelay(true);
    // Finds peers that vanished without a FIN (power loss, iptables drop) on idle connections.
    socket.setKeepAlive(true, KEEPALIVE_MS);
    if (!reusedReadBuffer) socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (e: Error) => this.close(unavailableError(this.describePeer(), `socket error: ${e.message}`, e)));
    socket.on('close', () => this.close(unavailableError(this.describePeer(), 'connection closed')));
    socket.on('end', () => this.close(unavailableError(this.describePeer(), 'peer ended the connection')));
    this.handshakeTimer = setTimeout(
      () => this.close(unavailableError(this.describePeer(), `handshake not completed within ${host.handshakeTimeoutMs} ms`)),
      host.handshakeTimeoutMs,
    );
    if (role.kind === 'dialer') {
      const hello: Handshake = {
        type: 'hello',
        clusterId: host.clusterId,
        fromNodeId: host.nodeId,
        toNodeId: role.expectNodeId,
        ts: host.clock.now(),
      };
      // Written as soon as the socket connects (net queues writes until then).
      this.writeRaw(encodeFrame(encodeHandshake(hello)));
    }
  }

  /** Bytes read from the socket (a 'data' event, or the onread callback of a reused read buffer). */
  onData(chunk: Buffer): void {
    if (this.state === 'closed') return;
    try {
      this.decoder.push(chunk, this.onFrameBound);
    } catch (e) {
      if (e instanceof AssertionError) throw e; // a bug of ours, not bad input
      this.onBadInput(e);
      return;
    }
    // Read-side backpressure: a peer that sends requests but does not read
    // our responses stops being read until the socket drains.
    const socket = this.socket;
    if (socket.writableLength > this.host.maxQueuedBytes && !socket.isPaused()) {
      socket.pause();
      socket.once('drain', () => socket.resume());
    }
  }

  /** "n3 (127.0.0.3:26257)" — for errors and logs. */
  describePeer(): string {
    if (this.remoteAddr === '' && this.socket.remoteAddress !== undefined) {
      this.remoteAddr = `${this.socket.remoteAddress}:${this.socket.remotePort}`;
    }
    const addr = this.remoteAddr === '' ? 'unconnected' : this.remoteAddr;
    return this.peerId > 0 ? `n${this.peerId} (${addr})` : addr;
  }

  /** Bytes waiting to leave: queued messages plus the socket's unwritten buffer. */
  get backlogBytes(): number {
    return this.queuedBytes + this.socket.writableLength;
  }

  get pendingCalls(): number {
    return this.pending.size;
  }

  // ---------------------------------------------------------------- sending

  /** Sends a request and resolves with the response payload; see errors.ts for the failures. */
  call(method: number, payload: Uint8Array, opts: CallOptions = {}): Promise<Buffer> {
    const refused = this.admissionError(method, payload);
    if (refused !== null) return Promise.reject(refused);
    if (opts.signal?.aborted) return Promise.reject(abandonedCallError('rpc.canceled', this.describePeer(), method, false));
    return new Promise<Buffer>((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? 0;
      const call: PendingCall = {
        requestId: this.nextRequestId++,
        method,
        resolve,
        reject,
        deadline: timeoutMs > 0 ? performance.now() + timeoutMs : Infinity,
        signal: opts.signal,
        onAbort: undefined,
        sent: false,
        settled: false,
      };
      this.pending.set(call.requestId, call);
      if (call.signal !== undefined) {
        call.onAbort = () => this.abandon(call, 'rpc.canceled');
        call.signal.addEventListener('abort', call.onAbort, { once: true });
      }
      if (call.deadline !== Infinity && call.deadline < this.deadlineTimerAt) this.armDeadlineTimer(call.deadline);
      this.sendWithFaults({ kind: MessageKind.Request, method, requestId: call.requestId, payload, call });
    });
  }

  /**
   * Queues a one-way message; never blocks. Returns false when it was refused
   * (connection closed, queue full, too large) — the message is then dropped,
   * as the network may drop it anyway.
   */
  send(method: number, payload: Uint8Array): boolean {
    if (this.admissionError(method, payload) !== null) {
      this.metrics.oneWayDropped++;
      return false;
    }
    this.sendWithFaults({ kind: MessageKind.OneWay, method, requestId: 0, payload, call: null });
    return true;
  }

  private admissionError(method: number, payload: Uint8Array): CairnError | null {
    if (this.state === 'closed') {
      const reason = this.closeReason;
      return reason !== null && PASS_THROUGH_CODES.has(reason.code)
        ? reason
        : unavailableError(this.describePeer(), `connection closed${reason === null ? '' : `: ${reason.message}`}`);
    }
    if (payload.length + ENVELOPE_MAX_OVERHEAD + FRAME_HEADER_BYTES > this.host.maxFrameBytes) {
      return new RpcError(
        'rpc.message_too_large',
        `rpc: message of ${payload.length} bytes for method ${method} exceeds the frame limit of ${this.host.maxFrameBytes}`,
      );
    }
    if (this.backlogBytes > this.host.maxQueuedBytes) {
      return new RpcError(
        'rpc.backpressure',
        `rpc: outgoing queue to ${this.describePeer()} holds ${this.backlogBytes} bytes (limit ${this.host.maxQueuedBytes})`,
        { retryable: true },
      );
    }
    return null;
  }

  private sendWithFaults(msg: OutMessage): void {
    const faults = this.host.faults;
    const copies = faults.plan(this.peerId);
    if (copies === 1 && faults.delayMs === 0) {
      this.enqueue(msg);
      return;
    }
    // The message entered the (simulated) network: its fate is unknown to the caller.
    if (msg.call !== null) msg.call.sent = true;
    if (copies === 0) return;
    const delay = faults.delayMs;
    for (let i = 0; i < copies; i++) {
      if (delay === 0) {
        this.enqueue(msg);
        continue;
      }
      faults.delayedInFlight++;
      setTimeout(() => {
        faults.delayedInFlight--;
        if (this.state !== 'closed') this.enqueue(msg);
        else this.metrics.delayedDiscarded++;
      }, delay);
    }
  }

  private enqueue(msg: OutMessage): void {
    this.queue.push(msg);
    this.queuedBytes += msg.payload.length;
    if (this.state !== 'ready') return;
    if (this.queuedBytes >= FLUSH_EAGER_BYTES || this.host.flushEachMessage) {
      this.flush();
    } else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushBound);
    }
  }

  /** Encodes every queued message into frames and writes them with one socket.write. */
  private flush(): void {
    this.flushScheduled = false;
    if (this.state !== 'ready' || this.queue.length === 0) return;
    const queue = this.queue;
    this.queue = [];
    this.queuedBytes = 0;
    const ts = this.host.clock.now();
    const out = this.out;
    const maxBody = this.host.maxFrameBytes;
    out.reset();
    let frameAt = beginFrame(out);
    let frames = 1;
    let messages = 0;
    for (const msg of queue) {
      const call = msg.call;
      if (call !== null && call.settled && !call.sent) continue; // abandoned before it left: never sent
      if (out.length - frameAt - FRAME_HEADER_BYTES + msg.payload.length + ENVELOPE_MAX_OVERHEAD > maxBody && messages > 0) {
        endFrame(out, frameAt);
        frameAt = beginFrame(out);
        frames++;
      }
      encodeEnvelope(out, msg.kind, msg.method, msg.requestId, ts, msg.payload);
      if (call !== null) call.sent = true;
      messages++;
    }
    if (messages === 0) return;
    endFrame(out, frameAt);
    // Double buffering: the written buffer goes to the socket as it is; the
    // writer continues in the spare, and the written one becomes the spare
    // again once the socket is done with it.
    const next = this.spare ?? Buffer.allocUnsafe(OUT_BUFFER_BYTES);
    this.spare = null;
    const bytes = out.swap(next);
    const m = this.metrics;
    m.framesSent += frames;
    m.messagesSent += messages;
    m.bytesSent += bytes.length;
    this.socket.write(bytes, (err) => {
      if (err === undefined || err === null) this.recycle(bytes);
    });
  }

  private recycle(written: Buffer): void {
    const whole = written.buffer;
    if (this.spare !== null || written.byteOffset !== 0 || whole.byteLength > MAX_SPARE_BYTES || whole.byteLength < OUT_BUFFER_BYTES) return;
    this.spare = Buffer.from(whole, 0, whole.byteLength);
  }

  private writeRaw(frame: Buffer): void {
    this.metrics.framesSent++;
    this.metrics.bytesSent += frame.length;
    this.socket.write(frame);
  }

  // ------------------------------------------------------- calls and timers

  private settle(call: PendingCall): boolean {
    if (call.settled) return false;
    call.settled = true;
    this.pending.delete(call.requestId);
    if (call.onAbort !== undefined) call.signal?.removeEventListener('abort', call.onAbort);
    return true;
  }

  private abandon(call: PendingCall, code: 'rpc.timeout' | 'rpc.canceled'): void {
    if (!this.settle(call)) return;
    this.metrics.callsAbandoned++;
    call.reject(abandonedCallError(code, this.describePeer(), call.method, call.sent));
  }

  private armDeadlineTimer(at: number): void {
    if (this.deadlineTimer !== null) clearTimeout(this.deadlineTimer);
    this.deadlineTimerAt = at;
    this.deadlineTimer = setTimeout(this.expireBound, Math.max(0, at - performance.now()));
  }

  /** One timer per connection, armed for the earliest deadline; a fire scans the pending calls. */
  private expireCalls(): void {
    this.deadlineTimer = null;
    this.deadlineTimerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const call of this.pending.values()) {
      if (call.deadline <= now) this.abandon(call, 'rpc.timeout');
      else if (call.deadline < next) next = call.deadline;
    }
    if (next !== Infinity && this.state !== 'closed') this.armDeadlineTimer(next);
  }

  // -------------------------------------------------------------- receiving

  private onFrame(body: Buffer): void {
    if (this.state === 'handshaking') {
      this.onHandshake(body);
      // Counted after the handshake named the peer, so both ends agree on its bytes.
      this.metrics.framesReceived++;
      this.metrics.bytesReceived += body.length + FRAME_HEADER_BYTES;
      return;
    }
    const m = this.metrics;
    m.framesReceived++;
    m.bytesReceived += body.length + FRAME_HEADER_BYTES;
    const r = new BufReader(body);
    let lastTs: Timestamp | undefined;
    let offsetErr: ClockOffsetError | null = null;
    while (r.remaining > 0 && this.state === 'ready') {
      const env = decodeEnvelope(r, lastTs);
      m.messagesReceived++;
      if (env.ts !== lastTs) {
        lastTs = env.ts;
        offsetErr = this.updateClock(env.ts);
      }
      this.dispatch(env, offsetErr);
    }
  }

  private updateClock(ts: Timestamp): ClockOffsetError | null {
    try {
      this.host.clock.update(ts);
      return null;
    } catch (e) {
      if (!(e instanceof ClockOffsetError)) throw e;
      this.metrics.clockOffsetErrors++;
      // A skewed busy peer trips this on every message: log at most once a second per connection.
      const now = performance.now();
      if (now - this.offsetLoggedAt >= 1000) {
        this.offsetLoggedAt = now;
        this.host.log.warn(
          { peer: this.describePeer(), err: e.message, rejectedSoFar: this.metrics.clockOffsetErrors },
          'rpc: message rejected: clock offset beyond the maximum',
        );
      }
      this.host.onClockOffset(this.peerId, e);
      return e;
    }
  }

  private dispatch(env: Envelope, offsetErr: ClockOffsetError | null): void {
    switch (env.kind) {
      case MessageKind.Request:
        if (offsetErr !== null) this.respondError(env, offsetErr);
        else this.serve(env);
        return;
      case MessageKind.OneWay:
        if (offsetErr === null) this.serveOneWay(env);
        return;
      case MessageKind.Response:
      case MessageKind.Error: {
        const call = this.pending.get(env.requestId);
        if (call === undefined || !this.settle(call)) {
          this.metrics.unmatchedResponses++;
          return;
        }
        if (offsetErr !== null) {
          // The request reached the peer and may have taken effect: refusing
          // its answer leaves the outcome unknown.
          call.reject(
            new RpcError('hlc.clock_offset', `rpc: response from ${this.describePeer()} rejected (outcome unknown): ${offsetErr.message}`, {
              ambiguous: true,
              cause: offsetErr,
            }),
          );
        } else if (env.kind === MessageKind.Response) call.resolve(env.payload);
        else {
          let err: CairnError;
          try {
            err = decodeErrorPayload(new BufReader(env.payload));
          } catch (e) {
            call.reject(connectionLostError(this.describePeer(), call.method, 'malformed error response'));
            throw e;
          }
          call.reject(err);
        }
        return;
      }
    }
  }

  private serve(env: Envelope): void {
    const handler = this.host.handler(env.method);
    if (handler === undefined) {
      this.respondError(env, unknownMethodError(this.host.nodeId, env.method));
      return;
    }
    let result: ReturnType<RpcHandler>;
    try {
      result = handler(env.payload, { peerId: this.peerId, method: env.method, ts: env.ts });
    } catch (e) {
      this.respondError(env, e);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (payload) => this.respond(env, payload ?? EMPTY),
        (e: unknown) => this.respondError(env, e),
      );
    } else {
      this.respond(env, result ?? EMPTY);
    }
  }

  private serveOneWay(env: Envelope): void {
    const handler = this.host.handler(env.method);
    if (handler === undefined) {
      this.host.log.debug({ peer: this.describePeer(), method: env.method }, 'rpc: one-way message for an unknown method dropped');
      return;
    }
    const onError = (e: unknown): void => {
      this.host.log.debug({ peer: this.describePeer(), method: env.method, err: String(e) }, 'rpc: one-way handler failed');
      crashIfBug(e);
    };
    try {
      const result = handler(env.payload, { peerId: this.peerId, method: env.method, ts: env.ts });
      if (result instanceof Promise) result.catch(onError);
    } catch (e) {
      if (e instanceof RpcCodecError) this.onBadInput(e);
      else onError(e);
    }
  }

  private respond(req: Envelope, payload: Uint8Array): void {
    if (this.state === 'closed') return;
    if (payload.length + ENVELOPE_MAX_OVERHEAD + FRAME_HEADER_BYTES > this.host.maxFrameBytes) {
      this.respondError(
        req,
        new RpcError('rpc.message_too_large', `rpc: response of ${payload.length} bytes for method ${req.method} exceeds the frame limit`),
      );
      return;
    }
    this.sendWithFaults({ kind: MessageKind.Response, method: req.method, requestId: req.requestId, payload, call: null });
  }

  private respondError(req: Envelope, e: unknown): void {
    if (this.state === 'closed') return;
    let err: CairnError;
    if (isCairnError(e)) {
      err = e;
    } else {
      this.host.log.error({ peer: this.describePeer(), method: req.method, err: String(e) }, 'rpc: handler failed');
      err = new RpcError('rpc.internal', `rpc: handler for method ${req.method} on n${this.host.nodeId} failed: ${String(e)}`);
      crashIfBug(e);
    }
    this.sendWithFaults({
      kind: MessageKind.Error,
      method: req.method,
      requestId: req.requestId,
      payload: encodeErrorPayload(err),
      call: null,
    });
  }

  // -------------------------------------------------------------- handshake

  private onHandshake(body: Buffer): void {
    const host = this.host;
    let h: Handshake;
    try {
      h = decodeHandshake(new BufReader(body));
    } catch (e) {
      if (!(e instanceof RpcError && e.code === 'rpc.version_mismatch')) throw e;
      if (this.role.kind === 'acceptor') this.writeRaw(encodeFrame(encodeHandshake({ type: 'reject', code: e.code, message: e.message })));
      this.refuse(e);
      return;
    }
    if (this.role.kind === 'acceptor') {
      if (h.type !== 'hello') throw new RpcError('rpc.codec', `rpc: expected a hello, got a handshake ${h.type}`);
      let refusal: RpcError | null = null;
      if (clusterIdConflict(host.clusterId, h.clusterId)) {
        refusal = new RpcError(
          'rpc.cluster_id_mismatch',
          `rpc: n${h.fromNodeId} belongs to cluster ${h.clusterId}, n${host.nodeId} to cluster ${host.clusterId}`,
        );
      } else if (h.toNodeId !== 0 && host.nodeId !== 0 && h.toNodeId !== host.nodeId) {
        refusal = new RpcError('rpc.node_id_mismatch', `rpc: n${h.fromNodeId} dialed n${h.toNodeId} but reached n${host.nodeId}`);
      }
      if (refusal === null) refusal = this.updateClock(h.ts);
      if (refusal !== null) {
        this.writeRaw(encodeFrame(encodeHandshake({ type: 'reject', code: refusal.code, message: refusal.message })));
        this.refuse(refusal);
        return;
      }
      this.peerId = h.fromNodeId;
      this.remoteClusterId = h.clusterId;
      this.metrics = host.metrics.peer(this.peerId);
      this.writeRaw(encodeFrame(encodeHandshake({ type: 'ack', clusterId: host.clusterId, nodeId: host.nodeId, ts: host.clock.now() })));
    } else {
      if (h.type === 'reject') {
        this.refuse(new RpcError(h.code, `rpc: ${this.describePeer()} refused the connection: ${h.message}`));
        return;
      }
      if (h.type !== 'ack') throw new RpcError('rpc.codec', `rpc: expected an ack, got a handshake ${h.type}`);
      let refusal: CairnError | null = null;
      if (clusterIdConflict(host.clusterId, h.clusterId)) {
        refusal = new RpcError('rpc.cluster_id_mismatch', `rpc: n${h.nodeId} belongs to cluster ${h.clusterId}, this node to ${host.clusterId}`);
      } else if (this.role.expectNodeId !== 0 && h.nodeId !== this.role.expectNodeId) {
        refusal = new RpcError('rpc.node_id_mismatch', `rpc: dialed n${this.role.expectNodeId} but reached n${h.nodeId}`);
      }
      if (refusal === null) refusal = this.updateClock(h.ts);
      if (refusal !== null) {
        this.refuse(refusal);
        return;
      }
      this.peerId = h.nodeId;
      this.remoteClusterId = h.clusterId;
    }
    this.established();
  }

  private established(): void {
    if (this.handshakeTimer !== null) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
    this.state = 'ready';
    this.decoder.setMaxFrameBytes(this.host.maxFrameBytes);
    this.metrics = this.host.metrics.peer(this.peerId);
    this.metrics.connectionsEstablished++;
    this.onEstablished?.();
    if (this.queue.length > 0 && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushBound);
    }
  }

  private refuse(reason: CairnError): void {
    this.metrics.errors++;
    this.host.log.warn({ peer: this.describePeer(), code: reason.code, err: reason.message }, 'rpc: handshake refused');
    // Let the reject frame (if any) leave before the socket goes.
    this.socket.end();
    this.close(reason);
  }

  private onBadInput(e: unknown): void {
    this.metrics.errors++;
    this.metrics.malformedFrames++;
    const msg = e instanceof Error ? e.message : String(e);
    this.host.log.warn({ peer: this.describePeer(), err: msg }, 'rpc: malformed input, closing connection');
    const reason = isCairnError(e) ? e : new RpcError('rpc.codec', `rpc: ${msg}`);
    this.close(reason);
  }

  // ------------------------------------------------------------------ close

  /** Closes the connection; pending calls fail (ambiguous if their request left). Idempotent. */
  close(reason: CairnError): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.closeReason = reason;
    if (this.handshakeTimer !== null) clearTimeout(this.handshakeTimer);
    if (this.deadlineTimer !== null) clearTimeout(this.deadlineTimer);
    this.handshakeTimer = null;
    this.deadlineTimer = null;
    if (!this.socket.writableEnded) this.socket.destroy();
    else this.socket.destroySoon();
    const peer = this.describePeer();
    const unsent = PASS_THROUGH_CODES.has(reason.code) ? reason : unavailableError(peer, reason.message, reason);
    for (const call of [...this.pending.values()]) {
      if (!this.settle(call)) continue;
      call.reject(call.sent ? connectionLostError(peer, call.method, reason.message) : unsent);
    }
    assert(this.pending.size === 0, 'rpc: pending calls left after close');
    for (const msg of this.queue) if (msg.kind === MessageKind.OneWay) this.metrics.oneWayDropped++;
    this.queue = [];
    this.queuedBytes = 0;
    this.onClose?.(reason);
  }
}
