/**
 * RpcContext: one node's RPC endpoint (CockroachDB's rpc.Context). It owns
 * the listener (RpcServer), the pool of outgoing connections, the handler
 * registry, the fault hook and the metrics. The KV layer registers its
 * methods and calls peers by node id; it never sees a socket.
 *
 *        node n1                                    node n2
 *   call(2, m, p) ─► pool[n2] ── TCP (n1 dialed) ──► RpcServer ─► handler m
 *                   responses ◄──── same connection ◄──┘
 *   handler m' ◄─ RpcServer ◄── TCP (n2 dialed) ── pool[n1] ◄─ send(1, m', p)
 *
 * Connections: one outgoing connection per (this node → peer, class), dialed on
 * first use to the peer's advertised address (setPeerAddress, or the resolve
 * option), optionally from a fixed local address (localAddress: a 127.0.0.x
 * alias, so iptables can partition nodes on one machine). Requests and
 * one-ways travel on the connection the sender dialed; responses return on
 * the connection the request came in on. So each unordered pair uses two TCP
 * connections, one per direction of initiative, and never races to
 * deduplicate simultaneous dials. Classes (transport.ts: default, system,
 * raft) are separate connections so that bulk traffic (a snapshot) never
 * queues heartbeats and liveness behind it (CockroachDB's connection classes).
 *
 * Reconnect: a connection that closes after its handshake is redialed on the
 * next use at once. A failed dial or handshake starts exponential backoff
 * (initial × multiplier^attempt, capped, ± jitter drawn from the injected
 * Prng); during backoff calls fail fast with `rpc.unavailable` (retryable: the
 * request was not sent) and one-ways are dropped — the layer above chooses
 * another replica or retries later instead of queueing behind a dead peer.
 *
 * Calls to this node itself never touch a socket: local-call.ts serves them
 * in process with the same contract (encoded payloads, errors through the
 * error codec, deadlines, cancellation).
 *
 * Clock offsets: ping(nodeId) measures the offset to a peer (clock-offset.ts);
 * isClockHealthy() tells the node layer whether to keep serving.
 *
 * Handshake (handshake.ts): cluster id, node id and protocol version are
 * checked on every connection; refusals are typed (`rpc.cluster_id_mismatch`,
 * `rpc.node_id_mismatch`, `rpc.version_mismatch`) and failed calls carry them.
 *
 * Ownership: src/rpc owns node-to-node sockets (DESIGN.md §2). Time for
 * deadlines and backoff is the monotonic performance.now(); randomness (jitter,
 * fault decisions) comes from the injected Prng; the HLC from the injected
 * Clock.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { assert } from '../util/assert.js';
import type { CairnError } from '../util/errors.js';
import type { Clock, ClockOffsetError } from '../util/hlc.js';
import { silentLogger, type Logger } from '../util/log.js';
import type { Prng } from '../util/prng.js';
import { isOffsetHealthy, measureOffset, type OffsetMeasurement, PING_METHOD, pingHandler } from './clock-offset.js';
import { Connection, type ConnectionHost } from './connection.js';
import { type CallOptions, ConnectionClass, CONNECTION_CLASSES, type RpcHandler, type RpcTransport } from './transport.js';
import { RpcError, unavailableError } from './errors.js';
import { FaultHook } from './fault-hook.js';
import { LocalCalls } from './local-call.js';
import { DEFAULT_MAX_FRAME_BYTES } from './frame.js';
import { RpcMetrics } from './metrics.js';

export interface PeerAddress {
  readonly host: string;
  readonly port: number;
}

export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
  readonly multiplier: number;
  /** Fraction of the delay drawn uniformly at random either side, in [0, 1). */
  readonly jitter: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 50, maxMs: 5_000, multiplier: 2, jitter: 0.2 };

export interface RpcContextOptions {
  /** This node's id; 0 while joining (not allocated yet). */
  readonly nodeId: number;
  /** The cluster's id; '' while joining (not known yet). */
  readonly clusterId: string;
  readonly clock: Clock;
  /** Jitter and fault decisions. */
  readonly prng: Prng;
  readonly logger?: Logger;
  /** Local address outgoing connections bind to (e.g. this node's 127.0.0.x). */
  readonly localAddress?: string;
  /** Serve calls to this node itself in process (local-call.ts); default true. false: over a loopback connection like any peer. */
  readonly localCalls?: boolean;
  /** Looks up a peer's advertised address when none was set with setPeerAddress. */
  readonly resolve?: (nodeId: number) => PeerAddress | undefined;
  readonly backoff?: Partial<BackoffOptions>;
  /** Largest frame accepted or sent; default 64 MiB. */
  readonly maxFrameBytes?: number;
  /** Per connection, bytes queued or unwritten above which sends are refused; default 64 MiB. */
  readonly maxQueuedBytes?: number;
  /** Measurement only (bench/rpc.ts): one socket write per message, no coalescing. */
  readonly flushEachMessage?: boolean;
  /** Default 5 s. */
  readonly handshakeTimeoutMs?: number;
  /** Called when a peer's message was rejected for clock offset (the node decides what to do). */
  readonly onClockOffset?: (peerId: number, err: ClockOffsetError) => void;
}

/** One outgoing connection as status() reports it. */
export interface PeerStatus {
  readonly peer: string;
  readonly nodeId: number;
  /** null for a join address dialed without a node id. */
  readonly connectionClass: ConnectionClass | null;
  readonly state: 'handshaking' | 'ready' | 'closed' | 'backoff' | 'idle';
  readonly pendingCalls: number;
  /** Consecutive failed dials (0 once connected). */
  readonly failedAttempts: number;
  readonly backoffRemainingMs: number;
  readonly lastError: string | null;
}

/** The dial side of one peer: its connection and backoff state. */
interface PeerSlot {
  readonly label: string;
  readonly nodeId: number;
  readonly fixedAddress: PeerAddress | undefined;
  conn: Connection | null;
  attempt: number;
  backoffUntil: number;
  lastError: CairnError | null;
  everConnected: boolean;
  closingLocally: boolean;
}

/**
 * The wait before redial number attempt+1 after `attempt` consecutive
 * failures: initial × multiplier^attempt, capped at max, then scaled by a
 * uniform factor in [1 - jitter, 1 + jitter) so that nodes that lost a peer at
 * the same moment do not redial in lockstep.
 */
export function backoffDelay(attempt: number, b: BackoffOptions, prng: Prng): number {
  const base = Math.min(b.maxMs, b.initialMs * b.multiplier ** attempt);
  return base * (1 + b.jitter * (2 * prng.float() - 1));
}

const EMPTY_PAYLOAD = Buffer.alloc(0);
const READ_BUFFER_BYTES = 256 * 1024;

function slotKey(nodeId: number, cls: ConnectionClass): number {
  return nodeId * CONNECTION_CLASSES + cls;
}

function newSlot(label: string, nodeId: number, fixedAddress: PeerAddress | undefined): PeerSlot {
  return { label, nodeId, fixedAddress, conn: null, attempt: 0, backoffUntil: 0, lastError: null, everConnected: false, closingLocally: false };
}

/** Accepts connections and hands each to a Connection in the acceptor role. */
export class RpcServer {
  private server: Server | null = null;
  private readonly conns = new Set<Connection>();

  constructor(private readonly host: ConnectionHost) {}

  /** Binds host:port (port 0 = ephemeral) and resolves with the bound address. */
  listen(host: string, port: number): Promise<PeerAddress> {
    assert(this.server === null, 'rpc: server already listening');
    const server = createServer((socket) => this.accept(socket));
    this.server = server;
    return new Promise((resolve, reject) => {
      const fail = (e: Error): void => {
        this.server = null;
        reject(new RpcError('rpc.listen_failed', `rpc: cannot listen on ${host}:${port}: ${e.message}`, { cause: e }));
      };
      server.once('error', fail);
      server.listen({ host, port }, () => {
        server.off('error', fail);
        server.on('error', (e) => this.host.log.error({ err: e.message }, 'rpc: listener error'));
        const addr = server.address();
        assert(addr !== null && typeof addr === 'object', 'rpc: listener has no address');
        resolve({ host: addr.address, port: addr.port });
      });
    });
  }

  private accept(socket: Socket): void {
    const conn = new Connection(this.host, socket, { kind: 'acceptor' });
    this.conns.add(conn);
    conn.onClose = () => this.conns.delete(conn);
  }

  get connectionCount(): number {
    return this.conns.size;
  }

  /** Stops listening and closes every accepted connection. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const conn of [...this.conns]) conn.close(new RpcError('rpc.closed', 'rpc: server shut down'));
    if (server === null) return;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

export class RpcContext implements ConnectionHost, RpcTransport {
  readonly clock: Clock;
  readonly faults: FaultHook;
  readonly metrics = new RpcMetrics();
  readonly log: Logger;
  readonly maxFrameBytes: number;
  readonly maxQueuedBytes: number;
  readonly flushEachMessage: boolean;
  readonly handshakeTimeoutMs: number;
  private _nodeId: number;
  private _clusterId: string;
  private readonly prng: Prng;
  private readonly backoff: BackoffOptions;
  private readonly handlers = new Map<number, RpcHandler>();
  /** Dial state by (node id, connection class) — see slotKey — and by address for calls to a join address. */
  private readonly peers = new Map<number, PeerSlot>();
  private readonly addressPeers = new Map<string, PeerSlot>();
  private readonly addresses = new Map<number, PeerAddress>();
  private readonly server: RpcServer;
  private readonly offsets = new Map<number, OffsetMeasurement>();
  private closed = false;
  /** Calls to this node itself (served without a socket). */
  readonly local: LocalCalls;

  constructor(private readonly opts: RpcContextOptions) {
    this._nodeId = opts.nodeId;
    this._clusterId = opts.clusterId;
    this.clock = opts.clock;
    this.prng = opts.prng;
    this.faults = new FaultHook(opts.prng);
    this.log = opts.logger ?? silentLogger();
    this.maxFrameBytes = opts.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.maxQueuedBytes = opts.maxQueuedBytes ?? 64 * 1024 * 1024;
    this.flushEachMessage = opts.flushEachMessage ?? false;
    this.handshakeTimeoutMs = opts.handshakeTimeoutMs ?? 5_000;
    this.backoff = { ...DEFAULT_BACKOFF, ...opts.backoff };
    assert(this.backoff.jitter >= 0 && this.backoff.jitter < 1, 'rpc: backoff jitter must be in [0, 1)');
    this.server = new RpcServer(this);
    this.handlers.set(PING_METHOD, pingHandler(this.clock));
    this.local = new LocalCalls(this);
  }

  get nodeId(): number {
    return this._nodeId;
  }

  get clusterId(): string {
    return this._clusterId;
  }

  /** Set once at join, when the node id is allocated; existing connections keep the old identity. */
  setNodeId(nodeId: number): void {
    assert(this._nodeId === 0 || this._nodeId === nodeId, `rpc: node id already set to ${this._nodeId}`);
    this._nodeId = nodeId;
  }

  /** Set once at join or bootstrap. */
  setClusterId(clusterId: string): void {
    assert(this._clusterId === '' || this._clusterId === clusterId, `rpc: cluster id already set to ${this._clusterId}`);
    this._clusterId = clusterId;
  }

  /** Registers the handler of a method id; each id has exactly one handler. */
  register(method: number, handler: RpcHandler): void {
    assert(Number.isInteger(method) && method >= 0 && method < PING_METHOD, `rpc: method id ${method} is not a u16 below the reserved ${PING_METHOD}`);
    assert(!this.handlers.has(method), `rpc: method ${method} registered twice`);
    this.handlers.set(method, handler);
  }

  /**
   * Measures the clock offset to nodeId with one round trip (clock-offset.ts)
   * and records it for clockOffsets() / isClockHealthy().
   */
  async ping(nodeId: number, opts?: CallOptions): Promise<OffsetMeasurement> {
    const t0 = this.clock.physicalNow();
    const res = await this.call(nodeId, PING_METHOD, EMPTY_PAYLOAD, { connectionClass: ConnectionClass.System, ...opts });
    const m = measureOffset(res, t0, this.clock.physicalNow());
    this.offsets.set(nodeId, m);
    return m;
  }

  /** The latest offset measurement per peer. */
  clockOffsets(): ReadonlyMap<number, OffsetMeasurement> {
    return this.offsets;
  }

  /** Forgets a peer's measurement (it left the cluster or is considered dead). */
  forgetClockOffset(nodeId: number): void {
    this.offsets.delete(nodeId);
  }

  /**
   * False when this node's clock is out of bounds against a majority of the
   * measured peers: the node layer must stop serving (DESIGN.md §6).
   * Tolerance: 80 % of the clock's max offset, as CockroachDB uses.
   */
  isClockHealthy(toleranceMicros = this.clock.maxOffsetMicros * 0.8): boolean {
    return isOffsetHealthy(this.offsets.values(), toleranceMicros);
  }

  handler(method: number): RpcHandler | undefined {
    return this.handlers.get(method);
  }

  onClockOffset(peerId: number, err: ClockOffsetError): void {
    this.opts.onClockOffset?.(peerId, err);
  }

  /** Starts serving on host:port (port 0 = ephemeral); resolves with the bound address. */
  listen(host: string, port: number): Promise<PeerAddress> {
    return this.server.listen(host, port);
  }

  /** Accepted (incoming) connections currently open. */
  get incomingConnections(): number {
    return this.server.connectionCount;
  }

  /** The state of every outgoing connection, for the status page and tests. */
  status(): PeerStatus[] {
    const now = performance.now();
    const out: PeerStatus[] = [];
    const add = (slot: PeerSlot, cls: ConnectionClass | null): void => {
      out.push({
        peer: slot.label,
        nodeId: slot.nodeId,
        connectionClass: cls,
        state: slot.conn?.state ?? (now < slot.backoffUntil ? 'backoff' : 'idle'),
        pendingCalls: slot.conn?.pendingCalls ?? 0,
        failedAttempts: slot.attempt,
        backoffRemainingMs: Math.max(0, Math.round(slot.backoffUntil - now)),
        lastError: slot.lastError?.message ?? null,
      });
    };
    for (const [key, slot] of this.peers) add(slot, (key % CONNECTION_CLASSES) as ConnectionClass);
    for (const slot of this.addressPeers.values()) add(slot, null);
    return out.sort((a, b) => a.nodeId - b.nodeId || (a.connectionClass ?? 0) - (b.connectionClass ?? 0));
  }

  /** Records a peer's advertised address (gossip / liveness will call this). */
  setPeerAddress(nodeId: number, addr: PeerAddress): void {
    const old = this.addresses.get(nodeId);
    this.addresses.set(nodeId, addr);
    if (old !== undefined && (old.host !== addr.host || old.port !== addr.port)) {
      // The peer moved: drop the connection to the old address.
      this.disconnect(nodeId);
    }
  }

  /**
   * Calls method on peer nodeId and resolves with its response payload.
   * Rejects with a typed error (errors.ts): rpc.unavailable / rpc.backpressure
   * (retryable, never sent); rpc.timeout / rpc.canceled (ambiguous if the
   * request was sent, retryable if not); rpc.connection_lost (ambiguous); a
   * handshake refusal; or the remote handler's CairnError as it was thrown.
   */
  call(nodeId: number, method: number, payload: Uint8Array, opts?: CallOptions): Promise<Buffer> {
    assert(nodeId > 0, 'rpc: call needs a node id; use callAddress while joining');
    // A call to this node itself is served in process (local-call.ts) — unless
    // a test set network faults toward this node, which only the socket path
    // models, or the method has no handler yet (a node still starting answers
    // its own calls as it answers its peers').
    if (nodeId === this._nodeId && !this.closed && this.opts.localCalls !== false && this.handlers.has(method) && !this.faults.hasFaults(nodeId)) {
      return this.local.call(method, payload, opts);
    }
    const conn = this.connectionTo(this.slotFor(nodeId, opts?.connectionClass ?? ConnectionClass.Default));
    if (!(conn instanceof Connection)) return Promise.reject(conn);
    return conn.call(method, payload, opts);
  }

  /** Calls whoever listens at addr (a join address: the node id is not known). */
  callAddress(addr: PeerAddress, method: number, payload: Uint8Array, opts?: CallOptions): Promise<Buffer> {
    const key = `${addr.host}:${addr.port}`;
    let slot = this.addressPeers.get(key);
    if (slot === undefined) {
      slot = newSlot(key, 0, addr);
      this.addressPeers.set(key, slot);
    }
    const conn = this.connectionTo(slot);
    if (!(conn instanceof Connection)) return Promise.reject(conn);
    return conn.call(method, payload, opts);
  }

  /**
   * Sends a one-way message (Raft); never blocks. False when it was dropped
   * here (peer in backoff, no address, queue full): a lossy network.
   */
  send(nodeId: number, method: number, payload: Uint8Array, cls: ConnectionClass = ConnectionClass.Default): boolean {
    const conn = this.connectionTo(this.slotFor(nodeId, cls));
    if (!(conn instanceof Connection)) {
      this.metrics.peer(nodeId).oneWayDropped++;
      return false;
    }
    return conn.send(method, payload);
  }

  /** True if the outgoing connection of that class to nodeId has completed its handshake. */
  isConnected(nodeId: number, cls: ConnectionClass = ConnectionClass.Default): boolean {
    return this.peers.get(slotKey(nodeId, cls))?.conn?.state === 'ready';
  }

  /** Calls waiting for a response, over all outgoing connections. */
  pendingCalls(): number {
    let n = 0;
    for (const slot of this.peers.values()) n += slot.conn?.pendingCalls ?? 0;
    for (const slot of this.addressPeers.values()) n += slot.conn?.pendingCalls ?? 0;
    return n;
  }

  /** Closes the outgoing connections to nodeId, of every class (redialed on next use). */
  disconnect(nodeId: number): void {
    for (let cls = 0; cls < CONNECTION_CLASSES; cls++) {
      const slot = this.peers.get(slotKey(nodeId, cls as ConnectionClass));
      if (slot?.conn == null) continue;
      slot.closingLocally = true; // our choice, not the peer's failure: no backoff
      slot.conn.close(unavailableError(`n${nodeId}`, 'disconnected locally'));
    }
  }

  /** Stops the listener, closes every connection; later calls fail with rpc.closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const reason = new RpcError('rpc.closed', `rpc: n${this._nodeId} shut down`);
    this.local.close(reason);
    for (const slot of this.peers.values()) slot.conn?.close(reason);
    for (const slot of this.addressPeers.values()) slot.conn?.close(reason);
    await this.server.close();
  }

  private slotFor(nodeId: number, cls: ConnectionClass): PeerSlot {
    const key = slotKey(nodeId, cls);
    let slot = this.peers.get(key);
    if (slot === undefined) {
      assert(nodeId > 0, 'rpc: peer node ids are positive');
      slot = newSlot(`n${nodeId}`, nodeId, undefined);
      this.peers.set(key, slot);
    }
    return slot;
  }

  /** The slot's live connection, dialing if needed; or the error to fail with. */
  private connectionTo(slot: PeerSlot): Connection | CairnError {
    const live = slot.conn;
    if (live !== null) return live;
    if (this.closed) return new RpcError('rpc.closed', `rpc: n${this._nodeId} is shut down`);
    if (performance.now() < slot.backoffUntil) {
      const last = slot.lastError;
      if (last !== null && last.code !== 'rpc.unavailable' && !last.retryable) return last;
      return unavailableError(slot.label, `reconnecting after backoff${last === null ? '' : `; last error: ${last.message}`}`, last);
    }
    const addr = slot.fixedAddress ?? this.addresses.get(slot.nodeId) ?? this.opts.resolve?.(slot.nodeId);
    if (addr === undefined) return unavailableError(slot.label, 'no known address');
    return this.dial(slot, addr);
  }

  private dial(slot: PeerSlot, addr: PeerAddress): Connection {
    const m = this.metrics.peer(slot.nodeId);
    m.dials++;
    if (slot.everConnected) m.reconnects++;
    // The socket reads into one reused buffer (no allocation per read); the
    // frame decoder copies each frame out of it.
    let target: Connection | null = null;
    const readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    const socket = connect({
      host: addr.host,
      port: addr.port,
      localAddress: this.opts.localAddress,
      onread: {
        buffer: readBuffer,
        callback: (n: number) => {
          target?.onData(readBuffer.subarray(0, n));
          return true;
        },
      },
    });
    const conn = new Connection(this, socket, { kind: 'dialer', expectNodeId: slot.nodeId }, true);
    target = conn;
    slot.conn = conn;
    let established = false;
    conn.onEstablished = () => {
      established = true;
      slot.everConnected = true;
      slot.attempt = 0;
      slot.backoffUntil = 0;
      slot.lastError = null;
    };
    conn.onClose = (reason) => {
      if (slot.conn === conn) slot.conn = null;
      slot.lastError = reason;
      const local = slot.closingLocally;
      slot.closingLocally = false;
      // A healthy connection that ended, or one we closed: redial at once on next use.
      if (established || local) return;
      const delay = backoffDelay(slot.attempt, this.backoff, this.prng);
      slot.attempt++;
      slot.backoffUntil = performance.now() + delay;
      this.log.debug({ peer: slot.label, attempt: slot.attempt, delayMs: Math.round(delay), err: reason.message }, 'rpc: dial failed, backing off');
    };
    return conn;
  }
}
