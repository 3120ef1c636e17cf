/**
 * Node: the composition root of one Cairn process (DESIGN.md §2). It owns
 * the listeners (RPC, SQL, HTTP), every timer (Raft ticks, liveness
 * heartbeats, directory exchange, clock-offset pings) and the store's
 * engine; the logic layers below it only take calls.
 *
 * Start-up, in order (every failure a ServerError with one clear line):
 *
 *   1. open the LevelDB store in --store (locked by another process →
 *      storage.locked); read the store ident (cluster id, node id, store id)
 *   2. RpcContext on --listen-addr, SQL on --sql-addr, HTTP on --http-addr
 *      (a port in use → server.listen_failed naming the flag)
 *   3a. initialised store: exchange directories with the --join addresses
 *       (a peer of another cluster → server.cluster_mismatch; a live process
 *       answering with our node id → server.duplicate_node_id), then start
 *       the Store with the identity it had: a restarted node rejoins with its
 *       identity and data
 *   3b. empty store + start-single-node: bootstrap r1 on this node alone
 *   3c. empty store: wait. Either `cairn init` reaches some node, which
 *       bootstraps the cluster on itself and the uninitialised nodes at its
 *       --join addresses (each given up to 10 s to answer — a node still
 *       starting is waited for, not left out; up to three: they become
 *       n1…n3, the initial
 *       replicas of r1, all written by bootstrapCluster with one replica set
 *       and one timestamp — the Bootstrap RPC), or a --join address answers
 *       as part of an initialised cluster and this node joins it: node and
 *       store ids are allocated by conditional puts on the id generator keys
 *       through KV (so concurrent joiners never share an id), the ident is
 *       written, and the Store starts (it holds no replicas until the
 *       replication layer adds some).
 *   4. serving: Raft tick timer, liveness heartbeats (liveness.ts), the
 *      directory exchange with every known peer (node-directory.ts), and the
 *      clock-offset monitor.
 *
 * Readiness (`/health?ready=1`): the store runs, this node's liveness
 * heartbeat has succeeded within its TTL (so KV works through the cluster),
 * the SQL listener is bound, and the clock is healthy.
 *
 * Clock offset (DESIGN.md §6): every second the node pings each known peer
 * (RpcContext.ping); when its clock is out of bounds against a majority of
 * the nodes (clock-monitor.ts: 80 % of --max-offset; a message refused with
 * hlc.clock_offset counts as out of bounds) it stops serving: KV
 * batches are refused with `server.clock_offset` (retryable: the client tries
 * another replica), new SQL sessions are refused, and the store is no longer
 * ticked, so its Raft leadership and leases lapse to healthy nodes. It resumes
 * by itself once a majority agrees again. ClockOffsetErrors seen by the RPC
 * layer trigger an immediate re-check. `/health`, `/_status/vars`
 * (cairn_clock_offset_healthy) and the log show it.
 *
 * Shutdown (SIGTERM/SIGINT, handled by the CLI, or stop()): stop accepting
 * SQL, drain (hand this node's leases to live replicas, ≤ 3 s), stop timers
 * and HTTP, stop the Store (pending commands answer ambiguous), close RPC,
 * close the engine.
 *
 * Ownership: Node owns everything it opens and closes it in stop().
 */
import { randomUUID } from 'node:crypto';
import { CairnError } from '../util/errors.js';
import { Clock, MAX_TIMESTAMP, systemPhysicalMicros, type ClockOffsetError, type Timestamp } from '../util/hlc.js';
import { silentLogger, type Logger } from '../util/log.js';
import { Prng } from '../util/prng.js';
import type { Engine, WriteBatch, WriteOptions } from '../../storage/engine.js';
import { LevelEngine } from '../../storage/level-engine.js';
import { ConditionFailedError } from '../../storage/mvcc.js';
import { NODE_ID_GENERATOR_KEY, STORE_ID_GENERATOR_KEY, META2_PREFIX, META2_MAX } from '../../storage/keys.js';
import { STATE_TYPE_NAMES } from '../../raft/types.js';
import { secureContextFromCertsDir } from '../../sql/pgwire/server.js';
import type { KVDB } from '../../sql/kv.js';
import { RpcContext } from '../rpc/rpc-context.js';
import type { RpcHandler, RpcTransport } from '../rpc/transport.js';
import { KvMethod, type RangeDescriptor, type ReplicaDescriptor, type StoreIdent } from '../kv/api.js';
import { decodeRangeDescriptor } from '../kv/api-codec.js';
import { bootstrapCluster, readStoreIdent, writeStoreIdent } from '../kv/bootstrap.js';
import { DistSender } from '../kv/dist-sender.js';
import { KvClient, RpcNodeDialer } from '../kv/kv-client.js';
import { adminSplitWithRetry } from '../kv/split.js';
import { TxnDB } from '../kv/client/txn-db.js';
import type { ReplicaConcurrency } from '../kv/concurrency-manager.js';
import { DEFAULT_RANGE_QUEUE_SETTINGS, type RangeQueueSettings, type ReplicaQueue } from '../kv/queue.js';
import { newSplitQueue } from '../kv/split-queue.js';
import { newMergeQueue } from '../kv/merge-queue.js';
import { adminMergeWithRetry } from '../kv/merge.js';
import { newReplicateQueue } from '../kv/replicate-queue.js';
import { newReplicaGCQueue } from '../kv/replica-change-gc.js';
import { newGcQueue } from '../kv/gc-queue.js';
import { NodeStorePool } from './store-pool.js';
import { DEFAULT_KV_SETTINGS, type KvSettings } from '../kv/settings.js';
import { Store } from '../kv/store.js';
import type { Replica } from '../kv/replica.js';
import { leaseState } from '../kv/replica-lease.js';
import { ServerError, formatHostPort, type HostPort, type NodeConfig } from './config.js';
import { ClockMonitor } from './clock-monitor.js';
import { NodeLiveness, isLive, type LivenessRecord } from './liveness.js';
import { MetricRegistry, type Counter, type Gauge, type Histogram } from './metrics.js';
import {
  NodeDirectory,
  ServerMethod,
  decodeJson,
  encodeJson,
  peerAddress,
  type BootstrapRequest,
  type GossipRequest,
  type GossipResponse,
  type InitResponse,
  type NodeDescriptor,
  type StoreLoad,
} from './node-directory.js';
import { SqlServer, mountSql, nodeLeaseTransferer, unmountedSessionFactory } from './sql-server.js';
import { StatusServer } from './status-server.js';
import { adminRelocate, type RelocateRequest } from './admin-relocate.js';

/** Replicas of r1 created by `cairn init` (the default replication factor). */
export const INITIAL_REPLICAS = 3;
const GOSSIP_INTERVAL_MS = 1_000;
const CLOCK_CHECK_INTERVAL_MS = 1_000;
const JOIN_POLL_MS = 300;
/** How long `cairn init` waits for each --join node that does not answer yet. */
const INIT_WAIT_MS = 10_000;
const CHECKSUM_WAIT_MS = 10_000;
/** How long a clean shutdown spends handing its leases away. */
const DRAIN_TIMEOUT_MS = 3_000;
/**
 * How long a drain waits for its Raft leadership handoffs. While a transfer
 * catches its target up, the leader refuses proposals — the new
 * leaseholder's lease extension among them — so waiting longer costs more
 * than exiting and letting the followers elect: seen at load ~15, a 3 s wait
 * let the transferred 2 s lease lapse. A handoff Raft abandons (an election
 * timeout without the target caught up) is asked for again while the drain
 * waits (Replica.transferLeadership).
 */
const DRAIN_LEADERSHIP_WAIT_MS = 1_000;

export type NodeState = 'waiting-for-init' | 'joining' | 'serving' | 'stopping' | 'stopped';

/** One node's own view, answered by ServerMethod.NodeStatus. */
export interface LocalNodeStatus {
  readonly nodeId: number;
  readonly ranges: number;
  readonly leaseholders: number;
  readonly leaders: number;
  readonly underreplicated: number;
}

/** One row of `cairn node status` / `/_status/nodes`. */
export interface NodeStatusRow {
  readonly id: number;
  readonly address: string;
  readonly sqlAddress: string;
  readonly httpAddress: string;
  /** ISO time the process started, '' if unknown. */
  readonly started: string;
  readonly isLive: boolean;
  readonly epoch: number;
  readonly decommissioning: boolean;
  /** null: the node did not answer. */
  readonly ranges: number | null;
  readonly leaseholders: number | null;
  readonly underreplicated: number | null;
}

/** One range's checksums by node id (null: that replica did not answer in time). */
export interface RangeChecksums {
  readonly rangeId: number;
  readonly checksumId: number;
  readonly checksums: Record<number, string | null>;
}

/** One replica as `/_status/ranges` shows it. */
export interface RangeStatus {
  readonly rangeId: number;
  readonly startKey: string;
  readonly endKey: string;
  readonly replicas: readonly ReplicaDescriptor[];
  readonly replicaId: number;
  readonly raftState: string;
  readonly term: number;
  readonly commit: number;
  readonly applied: number;
  readonly isLeader: boolean;
  readonly isLeaseholder: boolean;
  readonly leaseholderNodeId: number | null;
}

/** One replica's lock table as `/_status/locks` shows it (a debugging view of who waits on whom). */
export interface LockTableStatus {
  readonly rangeId: number;
  readonly isLeaseholder: boolean;
  /** Requests holding or waiting for latches. */
  readonly activeRequests: number;
  readonly locks: number;
  readonly held: number;
  readonly waiters: number;
  /** lockTableState(): every lock, its holder (txn id prefix, epoch, ts) and its queue in order. */
  readonly dump: string;
}

export interface NodeOptions {
  readonly logger?: Logger;
  /** A fatal condition found after start-up (cluster mismatch, duplicate id): the CLI exits. */
  readonly onFatal?: (e: CairnError) => void;
}

function errMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function uint64Value(b: Buffer | null): number {
  if (b === null) return 0;
  if (b.length !== 8) throw new ServerError('server.bad_generator', `server: id generator value has ${b.length} bytes, expected 8`);
  return b.readUInt32BE(0) * 2 ** 32 + b.readUInt32BE(4);
}

function uint64Buffer(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeUInt32BE(Math.floor(n / 2 ** 32), 0);
  b.writeUInt32BE(n >>> 0, 4);
  return b;
}

/** The codes of an error and of its causes, outermost first. */
function causeCodes(e: unknown): string[] {
  const out: string[] = [];
  for (let c: unknown = e; c instanceof Error && out.length < 8; c = c.cause) if (c instanceof CairnError) out.push(c.code);
  return out;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ServerError('server.timeout', `${what} timed out after ${ms} ms`, { retryable: true })), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class Node {
  readonly metrics = new MetricRegistry();
  readonly clock: Clock;
  readonly rpc: RpcContext;
  readonly directory: NodeDirectory;
  readonly instanceId = randomUUID();
  readonly startedAtMicros: number;
  readonly log: Logger;
  state: NodeState = 'joining';
  store: Store | null = null;
  kv: KvClient | null = null;
  private distSender: DistSender | null = null;
  private txnDb: TxnDB | null = null;
  /** Store loads reported by each node (this one's included), for the StorePool. */
  private readonly loads = new Map<number, StoreLoad>();
  private queues: ReplicaQueue[] = [];
  private replicateQueue: ReplicaQueue | null = null;
  /** The cluster view the replicate queue allocates from (store-pool.ts). */
  storePool: NodeStorePool | null = null;
  /** SQL sessions are served (mountSqlLoop succeeded). */
  sqlMounted = false;
  liveness: NodeLiveness | null = null;
  /** Physical clock skew added for tests and the jepsen-style suite (POST /_admin/clock). */
  clockSkewMicros = 0;
  clockHealthy = true;
  rpcAddr: HostPort;
  sqlAddr: HostPort;
  httpAddr: HostPort;

  private readonly engine: Engine;
  private readonly settings: KvSettings;
  private readonly sql: SqlServer;
  private readonly http: StatusServer;
  private readonly timers: ReturnType<typeof setInterval>[] = [];
  private bootstrapping = false;
  private readonly onFatal: (e: CairnError) => void;
  private readonly kvRequests: Counter;
  private readonly kvErrors: Counter;
  private readonly kvLatency: Histogram;
  private readonly syncLatency: Histogram;
  private readonly storageWrites: Counter;
  private readonly clockHealthyGauge: Gauge;
  private readonly clockOffsetErrors: Counter;
  private stopping: Promise<void> | null = null;
  private readonly clockMonitor: ClockMonitor;
  private gossipRunning = false;
  private clockCheckRunning = false;

  private constructor(
    readonly config: NodeConfig,
    engine: Engine,
    opts: NodeOptions,
  ) {
    this.engine = engine;
    this.log = opts.logger ?? silentLogger();
    this.onFatal = opts.onFatal ?? ((e) => this.log.error({ code: e.code }, e.message));
    this.clock = new Clock(() => systemPhysicalMicros() + this.clockSkewMicros, config.maxOffsetMs * 1000);
    this.clockMonitor = new ClockMonitor(config.maxOffsetMs * 1000 * 0.8);
    this.startedAtMicros = systemPhysicalMicros();
    this.settings = { ...DEFAULT_KV_SETTINGS, tickIntervalMs: config.tickIntervalMs, leaseDurationMicros: config.leaseDurationMs * 1000 };
    const ident = readStoreIdent(engine);
    const seed = Math.floor(Math.random() * 2 ** 32);
    this.rpc = new RpcContext({
      nodeId: ident?.nodeId ?? 0,
      clusterId: ident?.clusterId ?? '',
      clock: this.clock,
      prng: new Prng(seed),
      logger: this.log,
      ...(config.localAddress === undefined ? {} : { localAddress: config.localAddress }),
      resolve: (id) => this.directory.address(id),
      onClockOffset: (peer, err) => this.onClockOffsetError(peer, err),
    });
    this.directory = new NodeDirectory(
      () => this.rpc.nodeId,
      (id, addr) => this.rpc.setPeerAddress(id, addr),
    );
    this.rpcAddr = config.listenAddr;
    this.sqlAddr = config.sqlAddr;
    this.httpAddr = config.httpAddr;
    const secure = config.certsDir === undefined || config.insecure ? undefined : secureContextFromCertsDir(config.certsDir);
    this.sql = new SqlServer(unmountedSessionFactory(this), this.log, secure);
    this.http = new StatusServer(this);
    const m = this.metrics;
    this.kvRequests = m.counter('cairn_kv_requests_total', 'KV batches served by this node');
    this.kvErrors = m.counter('cairn_kv_request_errors_total', 'KV batches refused or failed on this node');
    this.kvLatency = m.histogram('cairn_kv_request_latency_seconds', 'Latency of KV batches served by this node');
    this.syncLatency = m.histogram('cairn_storage_sync_latency_seconds', 'Latency of synced LevelDB writes (Raft log group commits)');
    this.storageWrites = m.counter('cairn_storage_writes_total', 'Engine batch writes, synced or not (each one LevelDB write: a libuv pool job and a WAL append)');
    this.clockHealthyGauge = m.gauge('cairn_clock_offset_healthy', '1 while this node is within the max offset of a majority of its peers');
    this.clockHealthyGauge.set(1);
    this.clockOffsetErrors = m.counter('cairn_clock_offset_errors_total', 'Messages refused because a clock was beyond the max offset');
    this.registerMetrics();
    this.measureSyncs();
  }

  /**
   * Counts every engine write (cairn_storage_writes_total) and times the synced ones (the Raft log's group
   * commits) into cairn_storage_sync_latency_seconds. An unsynced write is handed straight through (no
   * promise of this wrapper's own).
   */
  private measureSyncs(): void {
    const engine = this.engine;
    const write = engine.write.bind(engine);
    const timed = async (batch: WriteBatch, opts: WriteOptions): Promise<void> => {
      const start = performance.now();
      try {
        return await write(batch, opts);
      } finally {
        this.syncLatency.observeSince(start);
      }
    };
    engine.write = (batch, opts) => {
      this.storageWrites.inc();
      return opts?.sync === true ? timed(batch, opts) : write(batch, opts);
    };
  }

  /** Opens the store, binds the listeners and joins or bootstraps (see the header). */
  static async start(config: NodeConfig, opts: NodeOptions = {}): Promise<Node> {
    const engine = await LevelEngine.open(config.storeDir, { cacheSize: config.cacheBytes });
    let node: Node;
    try {
      node = new Node(config, engine, opts);
    } catch (e) {
      await engine.close();
      throw e;
    }
    try {
      await node.listen();
      await node.joinOrBootstrap();
    } catch (e) {
      await node.stop();
      throw e;
    }
    return node;
  }

  // ---- start-up ----------------------------------------------------------------------------

  private async listen(): Promise<void> {
    this.rpc.register(ServerMethod.Gossip, (p) => encodeJson(this.answerGossip(decodeJson<GossipRequest>(p, 'gossip'))));
    this.rpc.register(ServerMethod.Bootstrap, async (p) => {
      await this.acceptBootstrap(decodeJson<BootstrapRequest>(p, 'bootstrap'));
    });
    this.rpc.register(ServerMethod.Init, async () => encodeJson(await this.initCluster()));
    this.rpc.register(ServerMethod.NodeStatus, () => encodeJson(this.localStatus()));
    this.rpc.register(ServerMethod.ClusterStatus, async () => encodeJson(await this.clusterStatus()));
    this.rpc.register(ServerMethod.Decommission, async (p) => {
      const q = decodeJson<{ nodeId: number; decommissioning: boolean }>(p, 'decommission');
      await this.setDecommissioning(q.nodeId, q.decommissioning);
    });
    this.rpc.register(ServerMethod.Checksum, async (p) => {
      const q = decodeJson<{ rangeId: number; checksumId: number }>(p, 'checksum');
      return encodeJson({ checksum: await this.requireStore().checksum(q.rangeId, q.checksumId) });
    });
    try {
      const a = await this.rpc.listen(this.config.listenAddr.host, this.config.listenAddr.port);
      this.rpcAddr = { host: this.config.listenAddr.host, port: a.port };
    } catch (e) {
      const why = errMessage(e).includes('EADDRINUSE') ? 'address already in use' : errMessage(e).replace(/^rpc: cannot listen on \S+: /, '');
      throw new ServerError('server.listen_failed', `server: cannot listen on ${formatHostPort(this.config.listenAddr)} (--listen-addr): ${why}`, { cause: e });
    }
    const s = await this.sql.listen(this.config.sqlAddr);
    this.sqlAddr = { host: this.config.sqlAddr.host, port: s.port };
    const h = await this.http.listen(this.config.httpAddr);
    this.httpAddr = { host: this.config.httpAddr.host, port: h.port };
  }

  private selfDescriptor(): NodeDescriptor {
    return {
      nodeId: this.rpc.nodeId,
      clusterId: this.rpc.clusterId,
      instanceId: this.instanceId,
      rpcAddr: formatHostPort(this.rpcAddr),
      sqlAddr: formatHostPort(this.sqlAddr),
      httpAddr: formatHostPort(this.httpAddr),
      startedAtMicros: this.startedAtMicros,
    };
  }

  private get initialized(): boolean {
    return this.rpc.nodeId !== 0;
  }

  private joinAddrs(): HostPort[] {
    const self = formatHostPort(this.rpcAddr);
    return this.config.join.filter((a) => formatHostPort(a) !== self);
  }

  private async joinOrBootstrap(): Promise<void> {
    const ident = readStoreIdent(this.engine);
    if (ident !== null) {
      this.directory.setSelf(this.selfDescriptor());
      await this.checkPeersAtStartup();
      await this.startServing(ident);
      return;
    }
    if (this.config.singleNode) {
      await this.bootstrapLocal({
        clusterId: randomUUID(),
        nodeId: 1,
        replicas: [{ nodeId: 1, storeId: 1, replicaId: 1 }],
        nowWall: this.clock.now().wall,
        nowLogical: 0,
        known: [],
      });
      return;
    }
    this.state = 'waiting-for-init';
    void this.waitForCluster();
  }

  /**
   * An uninitialised node polls its --join addresses until one belongs to an
   * initialised cluster (then joins it) or `cairn init` bootstraps this node.
   */
  private async waitForCluster(): Promise<void> {
    const deadline = this.config.joinTimeoutMs > 0 ? performance.now() + this.config.joinTimeoutMs : Infinity;
    let answered = false;
    let logged = false;
    while (this.state === 'waiting-for-init' && !this.initialized && this.stopping === null) {
      for (const addr of this.joinAddrs()) {
        if (this.initialized) return;
        if (this.bootstrapping) break; // `cairn init` is bootstrapping this node; look again after it
        let res: GossipResponse;
        try {
          res = await this.gossipAddress(addr);
        } catch (e) {
          if (this.isFatalPeerError(e, addr)) return;
          continue;
        }
        answered = true;
        if (res.initialized && !this.bootstrapping && !this.initialized) {
          try {
            await this.joinCluster(res);
          } catch (e) {
            if (this.stopping !== null) return;
            this.log.warn({ err: errMessage(e) }, 'server: join failed; retrying');
            this.state = 'waiting-for-init';
            continue;
          }
          return;
        }
      }
      if (!answered && performance.now() > deadline) {
        const list = this.config.join.map(formatHostPort).join(',');
        this.fatal(new ServerError('server.join_unreachable', `server: no node answered at --join=${list} within ${this.config.joinTimeoutMs} ms; check the addresses`));
        return;
      }
      if (!logged && answered) {
        this.log.info('server: waiting for `cairn init` or for the --join nodes to be initialised');
        logged = true;
      }
      await sleep(JOIN_POLL_MS);
    }
  }

  /** Joins an initialised cluster: allocates ids through KV, writes the ident, starts serving. */
  private async joinCluster(res: GossipResponse): Promise<void> {
    // Claimed like a bootstrap: an Init or Bootstrap arriving meanwhile is refused.
    this.bootstrapping = true;
    try {
      await this.joinClusterClaimed(res);
    } finally {
      this.bootstrapping = false;
    }
  }

  private async joinClusterClaimed(res: GossipResponse): Promise<void> {
    this.state = 'joining';
    const written = readStoreIdent(this.engine); // an earlier attempt got as far as the ident
    if (written !== null) return this.startServing(written);
    this.rpc.setClusterId(res.clusterId);
    this.directory.mergeAll(res.known);
    const kv = this.newKvClient();
    const nodeId = await this.allocateId(kv, NODE_ID_GENERATOR_KEY);
    const storeId = await this.allocateId(kv, STORE_ID_GENERATOR_KEY);
    const ident: StoreIdent = { clusterId: res.clusterId, nodeId, storeId };
    await writeStoreIdent(this.engine, ident);
    this.log.info({ nodeId, storeId, clusterId: res.clusterId }, 'server: joined the cluster');
    await this.startServing(ident);
  }

  /** Increments an id generator with a conditional put (unique under concurrent joins). */
  private async allocateId(kv: KvClient, key: Buffer): Promise<number> {
    for (;;) {
      const old = await kv.get(key);
      const next = uint64Value(old) + 1;
      try {
        await kv.cput(key, uint64Buffer(next), old);
        return next;
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
      }
    }
  }

  /** `cairn init` on this node: bootstraps it and the uninitialised --join nodes (see the header). */
  private async initCluster(): Promise<InitResponse> {
    if (this.initialized) {
      throw new ServerError('server.already_initialized', `server: the cluster has already been initialized (n${this.rpc.nodeId} belongs to cluster ${this.rpc.clusterId})`);
    }
    if (this.bootstrapping) throw new ServerError('server.init_in_progress', 'server: this node is already being initialized');
    this.bootstrapping = true;
    try {
      const members: { addr: string; instanceId: string }[] = [{ addr: formatHostPort(this.rpcAddr), instanceId: this.instanceId }];
      // Every --join node that answers within INIT_WAIT_MS is a candidate (a node
      // still starting, or an address in dial backoff, is retried meanwhile).
      const deadline = performance.now() + INIT_WAIT_MS;
      for (const addr of this.joinAddrs()) {
        if (members.length >= INITIAL_REPLICAS) break;
        let res: GossipResponse | null = null;
        for (;;) {
          try {
            res = await this.gossipAddress(addr);
            break;
          } catch (e) {
            if (!(e instanceof CairnError && e.retryable) || performance.now() > deadline) {
              this.log.warn({ addr: formatHostPort(addr), err: errMessage(e) }, 'server: init: --join node unreachable, left out');
              break;
            }
            await sleep(JOIN_POLL_MS);
          }
        }
        if (res === null) continue;
        if (res.initialized) {
          throw new ServerError('server.already_initialized', `server: the cluster has already been initialized (the node at ${formatHostPort(addr)} is n${res.nodeId} of cluster ${res.clusterId})`);
        }
        if (members.some((m) => m.instanceId === res.instanceId)) continue;
        members.push({ addr: res.rpcAddr, instanceId: res.instanceId });
      }
      const clusterId = randomUUID();
      const now = this.clock.now();
      const replicas = members.map((_, i) => ({ nodeId: i + 1, storeId: i + 1, replicaId: i + 1 }));
      const known: NodeDescriptor[] = members.map((m, i) => ({
        nodeId: i + 1,
        clusterId,
        instanceId: m.instanceId,
        rpcAddr: m.addr,
        sqlAddr: '',
        httpAddr: '',
        startedAtMicros: 0,
      }));
      const base = { clusterId, replicas, nowWall: now.wall, nowLogical: now.logical, known };
      await Promise.all(
        members.slice(1).map((m, i) =>
          this.rpc.callAddress(peerAddress(m.addr), ServerMethod.Bootstrap, encodeJson({ ...base, nodeId: i + 2 }), { timeoutMs: 30_000 }),
        ),
      );
      await this.bootstrapLocal({ ...base, nodeId: 1 }, true);
      this.log.info({ clusterId, nodes: members.length }, 'server: cluster initialized');
      return { clusterId, nodeIds: replicas.map((r) => r.nodeId) };
    } finally {
      this.bootstrapping = false;
    }
  }

  private async acceptBootstrap(q: BootstrapRequest): Promise<void> {
    if (this.initialized) {
      throw new ServerError('server.already_initialized', `server: the node at ${formatHostPort(this.rpcAddr)} already belongs to cluster ${this.rpc.clusterId}`);
    }
    if (this.bootstrapping) throw new ServerError('server.init_in_progress', 'server: this node is already being initialized');
    this.bootstrapping = true;
    try {
      await this.bootstrapLocal(q, true);
    } finally {
      this.bootstrapping = false;
    }
  }

  private async bootstrapLocal(q: BootstrapRequest, alreadyClaimed = false): Promise<void> {
    if (!alreadyClaimed && this.bootstrapping) throw new ServerError('server.init_in_progress', 'server: this node is already being initialized');
    const ident: StoreIdent = { clusterId: q.clusterId, nodeId: q.nodeId, storeId: q.nodeId };
    const replicas: ReplicaDescriptor[] = q.replicas.map((r) => ({ ...r, type: 0 }));
    await bootstrapCluster(this.engine, { clusterId: q.clusterId, ident, replicas, now: { wall: q.nowWall, logical: q.nowLogical } });
    this.rpc.setClusterId(q.clusterId);
    for (const d of q.known) if (d.nodeId !== q.nodeId) this.directory.merge(d);
    await this.startServing(ident);
  }

  private async startServing(ident: StoreIdent): Promise<void> {
    this.rpc.setClusterId(ident.clusterId);
    this.rpc.setNodeId(ident.nodeId);
    this.directory.setSelf(this.selfDescriptor());
    this.store = await Store.start({
      engine: this.engine,
      clock: this.clock,
      transport: this.storeTransport(),
      prng: new Prng(Math.floor(Math.random() * 2 ** 32)),
      settings: this.settings,
      logger: this.log,
      isClockHealthy: () => this.clockHealthy,
    });
    this.kv = this.newKvClient();
    this.liveness = new NodeLiveness(this.kv, this.clock, ident.nodeId, this.config.livenessTtlMs * 1000);
    this.startQueues();
    this.state = 'serving';
    this.timers.push(
      setInterval(() => {
        if (!this.clockHealthy) return;
        this.store?.tick();
        if (this.config.rangeQueues !== false) for (const q of this.queues) if (q !== this.replicateQueue || this.poolComplete()) q.tick();
      }, this.settings.tickIntervalMs),
    );
    void this.gossipRound();
    this.timers.push(setInterval(() => void this.gossipRound(), GOSSIP_INTERVAL_MS));
    this.timers.push(
      setInterval(() => {
        void this.checkClock();
        this.sampleLeaders();
      }, CLOCK_CHECK_INTERVAL_MS),
    );
    void this.livenessLoop();
    void this.mountSqlLoop();
    this.log.info({ nodeId: ident.nodeId, clusterId: ident.clusterId, rpc: formatHostPort(this.rpcAddr), sql: formatHostPort(this.sqlAddr), http: formatHostPort(this.httpAddr) }, 'server: node serving');
  }

  /**
   * The store's replica queues (src/kv/queue.ts), ticked with the store:
   * size-based splits, merges of small cold neighbours, replication
   * (up/down-replicate, replace dead or decommissioning voters, rebalance
   * toward new nodes; from the NodeStorePool), replica GC and MVCC GC (gc-queue.ts).
   */
  private startQueues(): void {
    const ds = this.distSender as DistSender;
    const liveness = this.liveness as NodeLiveness;
    const settings: RangeQueueSettings = {
      ...DEFAULT_RANGE_QUEUE_SETTINGS,
      splitMaxRangeBytes: this.config.rangeMaxBytes ?? DEFAULT_RANGE_QUEUE_SETTINGS.splitMaxRangeBytes,
      deadNodeTimeoutMs: this.config.deadNodeTimeoutMs ?? DEFAULT_RANGE_QUEUE_SETTINGS.deadNodeTimeoutMs,
      gcTtlSeconds: this.config.gcTtlSeconds ?? DEFAULT_RANGE_QUEUE_SETTINGS.gcTtlSeconds,
    };
    this.storePool = new NodeStorePool({ liveness: () => liveness.cached, loads: () => this.loads, nowMicros: () => this.clock.physicalNow() });
    const store = (): Store | null => (this.state === 'serving' ? this.store : null);
    this.replicateQueue = newReplicateQueue(store, ds, this.storePool, settings);
    this.queues = [newSplitQueue(store, ds, settings), newMergeQueue(store, ds, settings, this.config.rangeMergeDelayMs === undefined ? undefined : this.config.rangeMergeDelayMs * 1000), this.replicateQueue, newReplicaGCQueue(store, ds, settings), newGcQueue(store, settings)];
  }

  /**
   * The replicate queue acts only on a complete view: every node this node
   * knows of has a liveness record and has reported its store load. A node
   * missing from the pool would look like no store at all, and the
   * allocator would take its replicas for ones to drop.
   */
  private poolComplete(): boolean {
    const records = this.liveness?.cached;
    if (records === undefined) return false;
    for (const id of this.directory.nodeIds()) if (!records.has(id) || !this.loads.has(id)) return false;
    return this.directory.nodeIds().length > 0;
  }

  /** A KV client routing through the DistSender (range cache, parallel multi-range batches). */
  private newKvClient(): KvClient {
    // A call unanswered for a quarter of the lease duration probes its node; the ping gets
    // twice that to answer, so a node that is only slow (a loaded machine, a GC pause) is
    // not taken for a dead one — abandoning its calls would turn slowness into ambiguous
    // results — while a partitioned leaseholder is still given up well before its lease expires.
    const probeMs = Math.min(2000, Math.max(250, this.settings.leaseDurationMicros / 4000));
    const pingTimeoutMs = 2 * probeMs;
    this.distSender = new DistSender(new RpcNodeDialer(this.rpc), {
      nodes: () => {
        const ids = this.directory.nodeIds();
        return ids.length > 0 ? ids : [this.rpc.nodeId].filter((id) => id > 0);
      },
      maxAttempts: 20,
      now: () => this.clock.now(),
      probe: (id) => (id === this.rpc.nodeId ? Promise.resolve() : this.rpc.ping(id, { timeoutMs: pingTimeoutMs }).then(() => undefined)),
      probeAfterMs: probeMs,
      breakerMs: 2 * probeMs,
    });
    return new KvClient(this.distSender);
  }

  /**
   * The node's transactional KV interface for SQL (sql/kv.ts): the KV
   * layer's TxnDB (TxnCoordSender per transaction) over this node's
   * DistSender. Null until the node serves.
   */
  kvdb(): KVDB | null {
    if (this.txnDb === null && this.distSender !== null && this.rpc.nodeId !== 0) {
      this.txnDb = new TxnDB({ sender: this.distSender, clock: this.clock, nodeId: this.rpc.nodeId, prng: new Prng(Math.floor(Math.random() * 2 ** 32)) });
    }
    return this.txnDb;
  }

  /**
   * Mounts SQL (sql-server.ts mountSql) once the cluster can run its first
   * transactions (the SQL layer bootstraps its system descriptors): retried
   * after 100 ms, doubling up to every second, until it succeeds or the node
   * stops (a cut-off peer costs an attempt one DistSender probe delay, not an
   * RPC timeout). Until then the SQL port refuses sessions with a clear
   * message and the node is not ready.
   */
  private async mountSqlLoop(): Promise<void> {
    for (let attempt = 0; this.state === 'serving' && !this.sqlMounted; attempt++) {
      try {
        this.sql.setFactory(await mountSql(this.kvdb(), this, { insecure: this.config.insecure }));
        this.sqlMounted = true;
        this.log.info('server: SQL mounted');
      } catch (e) {
        this.log.debug({ err: errMessage(e) }, 'server: mounting SQL failed; retrying');
        await sleep(Math.min(1_000, 100 * 2 ** attempt));
      }
    }
  }

  /**
   * Marks node `nodeId` decommissioning (or not) in its liveness record: the
   * replicate queues then move its replicas and leases away (CockroachDB's
   * `node decommission`). The node itself owns its record, so a live target
   * is asked to set its own flag; a target that does not answer gets its
   * record rewritten through KV (it keeps the flag when it comes back:
   * liveness.ts reads it at start).
   */
  async setDecommissioning(nodeId: number, decommissioning: boolean): Promise<void> {
    const l = this.liveness;
    if (l === null) throw new ServerError('server.not_serving', `server: node is not serving yet (${this.state})`, { retryable: true });
    if (nodeId === this.rpc.nodeId) {
      l.decommissioning = decommissioning;
      await l.heartbeat();
      return;
    }
    try {
      await this.rpc.call(nodeId, ServerMethod.Decommission, encodeJson({ nodeId, decommissioning }), { timeoutMs: 5_000 });
    } catch (e) {
      if (!(e instanceof CairnError) || e.code.startsWith('server.')) throw e;
      await l.setFlagOf(nodeId, decommissioning);
    }
  }

  /**
   * Admin: splits the range holding `key` at `key` (null: a range already
   * starts there). A manual split: the boundary is sticky — the merge queue
   * leaves it alone — until `expiration` (default forever; CockroachDB's
   * SPLIT AT … WITH EXPIRATION). Transient routing errors and ambiguous
   * answers are retried (split.ts adminSplitWithRetry), so callers see only
   * real failures.
   */
  async adminSplit(key: Buffer, expiration: Timestamp = MAX_TIMESTAMP): Promise<{ left: RangeDescriptor; right: RangeDescriptor } | null> {
    this.requireKv();
    const res = await adminSplitWithRetry(this.distSender as DistSender, key, { expiration });
    return res === null ? null : { left: res.left, right: res.right };
  }

  /**
   * Admin: merges the range holding `key` with its right neighbour
   * (merge.ts; sticky or not). Null when it is the last range. Transient
   * errors (a concurrent split or merge moved the boundary, a lease moving,
   * the freeze still reaching a replica) are retried with the range
   * re-resolved, bounded.
   */
  async adminMerge(key: Buffer): Promise<RangeDescriptor | null> {
    this.requireKv();
    return adminMergeWithRetry(this.distSender as DistSender, key, { onRetry: (attempt, e) => this.log.info({ key: key.toString('hex'), attempt, code: e.code, err: e.message }, 'kv: admin merge retried') });
  }

  /** Admin: moves one voter of a range (admin-relocate.ts); answers the new descriptor. */
  async adminRelocate(q: RelocateRequest): Promise<RangeDescriptor> {
    const kv = this.requireKv();
    return adminRelocate(
      {
        ds: this.distSender as DistSender,
        descriptors: async () => (await kv.scan(META2_PREFIX, META2_MAX)).map((row) => decodeRangeDescriptor(Buffer.from(row.value))),
        storeOf: (nodeId) => (nodeId === this.rpc.nodeId ? this.store?.storeId : this.storePool?.stores().find((x) => x.nodeId === nodeId)?.storeId),
        transferLease: nodeLeaseTransferer(this),
      },
      q,
    );
  }

  /** The transport the Store sees: RpcContext, with KV batches measured and refused while the clock is unhealthy. */
  private storeTransport(): RpcTransport {
    const rpc = this.rpc;
    return {
      get nodeId() {
        return rpc.nodeId;
      },
      register: (method: number, handler: RpcHandler) => rpc.register(method, method === KvMethod.Batch ? this.wrapBatch(handler) : handler),
      call: (nodeId, method, payload, opts) => rpc.call(nodeId, method, payload, opts),
      send: (nodeId, method, payload, cls) => rpc.send(nodeId, method, payload, cls),
    };
  }

  private wrapBatch(handler: RpcHandler): RpcHandler {
    return async (payload, ctx) => {
      const start = performance.now();
      this.kvRequests.inc();
      if (!this.clockHealthy) {
        this.kvErrors.inc();
        throw this.clockOffsetRefusal();
      }
      try {
        return await handler(payload, ctx);
      } catch (e) {
        this.kvErrors.inc();
        throw e;
      } finally {
        this.kvLatency.observeSince(start);
      }
    };
  }

  private clockOffsetRefusal(): ServerError {
    return new ServerError('server.clock_offset', `server: n${this.rpc.nodeId} is not serving: its clock is beyond the max offset (${this.config.maxOffsetMs} ms) from a majority of its peers`, {
      retryable: true,
      sqlState: '58000',
    });
  }

  /** Not serving yet: joining or waiting for init (SQL refuses with 57P03, sql-server.ts). */
  isStarting(): boolean {
    return this.state === 'joining' || this.state === 'waiting-for-init';
  }

  /** Null while serving; otherwise a one-line reason (SQL refuses sessions with it). */
  notServingReason(): string | null {
    if (this.state !== 'serving') return `server: node is not serving yet (${this.state})`;
    if (!this.clockHealthy) return this.clockOffsetRefusal().message;
    return null;
  }

  get ready(): boolean {
    return this.state === 'serving' && this.clockHealthy && this.liveness?.selfLive === true && this.sqlMounted;
  }

  private requireStore(): Store {
    if (this.store === null) throw new ServerError('server.not_serving', `server: node is not serving yet (${this.state})`, { retryable: true });
    return this.store;
  }

  requireKv(): KvClient {
    const why = this.notServingReason();
    if (why !== null || this.kv === null) throw new ServerError('server.not_serving', why ?? 'server: not serving', { retryable: true });
    return this.kv;
  }

  // ---- peers: directory exchange, cluster id and duplicate checks ----------------------------

  private answerGossip(q: GossipRequest): GossipResponse {
    if (q.from !== null && this.initialized && q.from.clusterId === this.rpc.clusterId) {
      this.directory.merge(q.from);
      if (q.load != null) this.loads.set(q.from.nodeId, q.load);
    }
    if (this.initialized) for (const d of q.known) if (d.clusterId === this.rpc.clusterId) this.directory.merge(d);
    return {
      clusterId: this.rpc.clusterId,
      nodeId: this.rpc.nodeId,
      instanceId: this.instanceId,
      initialized: this.initialized,
      rpcAddr: formatHostPort(this.rpcAddr),
      known: this.initialized ? this.directory.all() : [],
      load: this.storeLoad(),
    };
  }

  /** This node's store load as reported to peers (store-pool.ts). */
  private storeLoad(): StoreLoad | null {
    const s = this.store;
    if (s === null) return null;
    const st = this.localStatus();
    const load = { storeId: s.storeId, replicaCount: st.ranges, leaseCount: st.leaseholders };
    this.loads.set(this.rpc.nodeId, load);
    return load;
  }

  private gossipRequest(): Buffer {
    return encodeJson({ from: this.initialized ? this.selfDescriptor() : null, known: this.initialized ? this.directory.all() : [], load: this.storeLoad() } satisfies GossipRequest);
  }

  private async gossipAddress(addr: HostPort, timeoutMs = 2_000): Promise<GossipResponse> {
    const res = decodeJson<GossipResponse>(await this.rpc.callAddress(addr, ServerMethod.Gossip, this.gossipRequest(), { timeoutMs }), 'gossip');
    this.checkAnswer(res, formatHostPort(addr));
    return res;
  }

  /** A peer's answer that makes this node unable to go on. */
  private checkAnswer(res: GossipResponse, addr: string): void {
    if (!this.initialized) return;
    if (res.clusterId !== '' && res.clusterId !== this.rpc.clusterId) {
      throw new ServerError('server.cluster_mismatch', `server: store ${this.config.storeDir} belongs to cluster ${this.rpc.clusterId}, but the node at ${addr} belongs to cluster ${res.clusterId}`);
    }
    if (res.nodeId === this.rpc.nodeId && res.instanceId !== this.instanceId) {
      throw new ServerError('server.duplicate_node_id', `server: node id ${res.nodeId} is already in use by the node at ${addr} (was store ${this.config.storeDir} copied from it?)`);
    }
  }

  /** True (and fatal() called) if the error shows a misconfiguration rather than a transient failure. */
  private isFatalPeerError(e: unknown, addr: HostPort): boolean {
    if (!(e instanceof CairnError)) return false;
    const where = formatHostPort(addr);
    if (e.code === 'server.cluster_mismatch' || e.code === 'server.duplicate_node_id') {
      this.fatal(e);
      return true;
    }
    const codes = causeCodes(e);
    if (codes.includes('rpc.cluster_id_mismatch')) {
      this.fatal(new ServerError('server.cluster_mismatch', `server: store ${this.config.storeDir} belongs to cluster ${this.rpc.clusterId}, but the node at ${where} belongs to another cluster`));
      return true;
    }
    const garbled = codes.find((c) => c === 'rpc.version_mismatch' || c === 'rpc.unknown_method' || c === 'rpc.frame_too_large' || c === 'rpc.codec');
    if (garbled !== undefined) {
      this.fatal(new ServerError('server.bad_join', `server: --join address ${where} is not the RPC address of a Cairn node (${garbled})`));
      return true;
    }
    return false;
  }

  /**
   * Start-up of an initialised node: exchanges directories with the --join
   * addresses and asks any other address listed for our own node id who is
   * there; throws the first fatal ServerError (another cluster, a duplicate
   * node id). Unreachable peers are no error: they may not be up yet.
   * (Later, the gossip timer reports the same conditions through onFatal.)
   */
  private async checkPeersAtStartup(): Promise<void> {
    let fatal: CairnError | null = null;
    const saved = this.fatalSink;
    this.fatalSink = (e: CairnError): void => {
      fatal ??= e;
    };
    try {
      await Promise.all(
        this.joinAddrs().map(async (addr) => {
          try {
            this.absorb(await this.gossipAddress(addr));
          } catch (e) {
            this.isFatalPeerError(e, addr);
          }
        }),
      );
      // A process answering at another address with our own node id is a duplicate.
      const self = formatHostPort(this.rpcAddr);
      const mine = [...new Set(this.knownClaims.filter((a) => a !== self))];
      await Promise.all(
        mine.map(async (a) => {
          try {
            await this.gossipAddress(peerAddress(a), 1_000);
          } catch (e) {
            this.isFatalPeerError(e, peerAddress(a));
          }
        }),
      );
    } finally {
      this.fatalSink = saved;
    }
    if (fatal !== null) throw fatal;
  }

  /** Addresses other nodes list for our own node id (merge() never stores them in the directory). */
  private knownClaims: string[] = [];

  private absorb(res: GossipResponse): void {
    for (const d of res.known) {
      if (d.nodeId === this.rpc.nodeId && d.instanceId !== this.instanceId && !this.knownClaims.includes(d.rpcAddr)) this.knownClaims.push(d.rpcAddr);
    }
    this.directory.mergeAll(res.known);
  }

  private fatalSink: ((e: CairnError) => void) | null = null;

  private fatal(e: CairnError): void {
    if (this.fatalSink !== null) {
      this.fatalSink(e);
      return;
    }
    this.onFatal(e);
  }

  private async gossipRound(): Promise<void> {
    if (this.gossipRunning || this.state !== 'serving') return;
    this.gossipRunning = true;
    try {
      const self = formatHostPort(this.rpcAddr);
      const peers = this.directory.all().filter((d) => d.nodeId !== this.rpc.nodeId);
      const targets = new Map<string, () => Promise<Buffer>>();
      for (const d of peers) targets.set(d.rpcAddr, () => this.rpc.call(d.nodeId, ServerMethod.Gossip, this.gossipRequest(), { timeoutMs: 2_000, connectionClass: 1 }));
      for (const a of this.joinAddrs()) {
        const key = formatHostPort(a);
        if (key !== self && !targets.has(key)) targets.set(key, () => this.rpc.callAddress(a, ServerMethod.Gossip, this.gossipRequest(), { timeoutMs: 2_000 }));
      }
      await Promise.all(
        [...targets].map(async ([addr, call]) => {
          try {
            const res = decodeJson<GossipResponse>(await call(), 'gossip');
            this.checkAnswer(res, addr);
            this.absorb(res);
            if (res.load != null && res.nodeId > 0) this.loads.set(res.nodeId, res.load);
          } catch (e) {
            this.isFatalPeerError(e, peerAddress(addr));
          }
        }),
      );
    } finally {
      this.gossipRunning = false;
    }
  }

  // ---- liveness ------------------------------------------------------------------------------

  private async livenessLoop(): Promise<void> {
    const interval = Math.max(50, this.config.livenessTtlMs / 3);
    let started = false;
    while (this.state === 'serving') {
      const t0 = performance.now();
      const l = this.liveness;
      if (l === null) return;
      try {
        if (!this.clockHealthy) {
          // A node out of clock bounds does not claim to be live.
        } else if (!started) {
          await l.start();
          started = true;
          this.log.info('server: node live (liveness record written)');
        } else {
          await l.heartbeat();
        }
        await l.refresh();
      } catch (e) {
        this.log.debug({ err: errMessage(e) }, 'server: liveness heartbeat failed');
      }
      await sleep(Math.max(0, interval - (performance.now() - t0)));
    }
  }

  // ---- clock offset ---------------------------------------------------------------------------

  private onClockOffsetError(peer: number, err: ClockOffsetError): void {
    this.clockOffsetErrors.inc();
    // Evidence only about nodes we know: a connection whose peer has no id yet
    // (peer 0) may be one of them, which would then count twice.
    if (peer > 0 && peer !== this.rpc.nodeId) this.clockMonitor.recordOffsetError(peer, performance.now());
    this.log.warn({ peer, err: err.message }, 'server: clock offset error');
    void this.checkClock();
  }

  /** Pings every known peer and updates the verdict (clock-monitor.ts). */
  private async checkClock(): Promise<void> {
    if (this.clockCheckRunning || this.state !== 'serving') return;
    this.clockCheckRunning = true;
    try {
      const peers = this.directory.nodeIds().filter((id) => id !== this.rpc.nodeId);
      await Promise.all(
        peers.map(async (id) => {
          try {
            this.clockMonitor.recordMeasurement(id, await this.rpc.ping(id, { timeoutMs: 1_000 }), performance.now());
          } catch (e) {
            // Any other failure is no evidence: the peer's last evidence ages out (clock-monitor.ts).
            if (causeCodes(e).includes('hlc.clock_offset')) this.clockMonitor.recordOffsetError(id, performance.now());
          }
        }),
      );
      const healthy = this.clockMonitor.healthy(performance.now());
      if (healthy !== this.clockHealthy) {
        if (healthy) this.log.warn('server: clock back within the max offset of a majority of nodes; serving again');
        else this.log.error({ maxOffsetMs: this.config.maxOffsetMs, evidence: Object.fromEntries(this.clockMonitor.evidence(performance.now())) }, 'server: clock beyond the max offset from a majority of nodes; refusing KV and SQL');
      }
      this.clockHealthy = healthy;
      this.clockHealthyGauge.set(healthy ? 1 : 0);
    } finally {
      this.clockCheckRunning = false;
    }
  }

  private livenessOf(nodeId: number, nowMicros: number): boolean | null {
    const r = this.liveness?.cached.get(nodeId);
    return r === undefined ? null : isLive(r, nowMicros);
  }

  // ---- status --------------------------------------------------------------------------------

  localStatus(): LocalNodeStatus {
    const s = this.store;
    if (s === null) return { nodeId: this.rpc.nodeId, ranges: 0, leaseholders: 0, leaders: 0, underreplicated: 0 };
    const now = this.clock.now();
    const nowMicros = this.clock.physicalNow();
    let leaseholders = 0;
    let leaders = 0;
    let under = 0;
    // Uninitialized placeholders (a replica being added, waiting for its
    // snapshot) hold no data: not counted — a decommissioned node holding one
    // holds nothing.
    const replicas = s.allReplicas().filter((r) => r.initialized);
    for (const r of replicas) {
      const lh = r.ownsValidLease(now);
      if (lh) leaseholders++;
      if (r.isLeader()) leaders++;
      if (lh) {
        const voters = r.desc.replicas.filter((x) => x.type === 0);
        const liveVoters = voters.filter((x) => x.nodeId === this.rpc.nodeId || this.livenessOf(x.nodeId, nowMicros) !== false);
        if (liveVoters.length < Math.min(INITIAL_REPLICAS, this.directory.nodeIds().length)) under++;
      }
    }
    return { nodeId: this.rpc.nodeId, ranges: replicas.length, leaseholders, leaders, underreplicated: under };
  }

  rangeStatus(): RangeStatus[] {
    const s = this.store;
    if (s === null) return [];
    const now = this.clock.now();
    return s
      .allReplicas()
      .map((r) => {
        const st = r.raw.basicStatus();
        const lease = r.lease;
        return {
          rangeId: r.rangeId,
          startKey: r.desc.startKey.toString('hex'),
          endKey: r.desc.endKey.toString('hex'),
          replicas: r.desc.replicas,
          replicaId: r.replicaId,
          raftState: STATE_TYPE_NAMES[st.softState.raftState] ?? String(st.softState.raftState),
          term: st.hardState.term,
          commit: st.hardState.commit,
          applied: r.applied.raftAppliedIndex,
          isLeader: r.isLeader(),
          isLeaseholder: r.ownsValidLease(now),
          leaseholderNodeId: lease?.replica.nodeId ?? null,
        };
      })
      .sort((a, b) => a.rangeId - b.rangeId);
  }

  /** This node's replicas' lock tables (only those with a lock or an active request). */
  lockTableStatus(): LockTableStatus[] {
    const s = this.store;
    if (s === null) return [];
    const now = this.clock.now();
    const out: LockTableStatus[] = [];
    for (const r of s.allReplicas()) {
      const c = r.concurrency;
      const m = c.lockTable.metrics();
      if (m.locks === 0 && c.activeRequests === 0) continue;
      out.push({ rangeId: r.rangeId, isLeaseholder: r.ownsValidLease(now), activeRequests: c.activeRequests, locks: m.locks, held: m.held, waiters: m.waiters, dump: c.lockTable.lockTableState() });
    }
    return out.sort((a, b) => a.rangeId - b.rangeId);
  }

  /** Every node's row (this node asks the others for their local counts). */
  async clusterStatus(): Promise<NodeStatusRow[]> {
    const l = this.liveness;
    if (l !== null) await l.refresh().catch(() => undefined);
    const records: ReadonlyMap<number, LivenessRecord> = l?.cached ?? new Map();
    const ids = new Set<number>([...this.directory.nodeIds(), ...records.keys()]);
    const nowMicros = this.clock.physicalNow();
    const rows = await Promise.all(
      [...ids].sort((a, b) => a - b).map(async (id): Promise<NodeStatusRow> => {
        const d = this.directory.get(id);
        const rec = records.get(id);
        let local: LocalNodeStatus | null = null;
        if (id === this.rpc.nodeId) local = this.localStatus();
        else if (d !== undefined && (rec === undefined || isLive(rec, nowMicros))) {
          try {
            local = decodeJson<LocalNodeStatus>(await this.rpc.call(id, ServerMethod.NodeStatus, Buffer.alloc(0), { timeoutMs: 2_000, connectionClass: 1 }), 'status');
          } catch {
            local = null;
          }
        }
        return {
          id,
          address: d?.rpcAddr ?? '',
          sqlAddress: d?.sqlAddr ?? '',
          httpAddress: d?.httpAddr ?? '',
          started: d === undefined || d.startedAtMicros === 0 ? '' : new Date(d.startedAtMicros / 1000).toISOString(),
          isLive: rec === undefined ? false : isLive(rec, nowMicros),
          epoch: rec?.epoch ?? 0,
          decommissioning: rec?.decommissioning ?? false,
          ranges: local?.ranges ?? null,
          leaseholders: local?.leaseholders ?? null,
          underreplicated: local?.underreplicated ?? null,
        };
      }),
    );
    return rows;
  }

  /**
   * Per-range consistency checksums: ComputeChecksum through Raft, then each
   * replica's result. A replica that does not answer within
   * CHECKSUM_WAIT_MS reports null (e.g. it caught up by a snapshot that
   * covered the checksum entry, so it never computed that checksum): the
   * caller asks again with a fresh id.
   */
  async rangeChecksums(): Promise<RangeChecksums[]> {
    const kv = this.requireKv();
    const rows = await kv.scan(META2_PREFIX, META2_MAX);
    const out: RangeChecksums[] = [];
    for (const row of rows) {
      const desc: RangeDescriptor = decodeRangeDescriptor(Buffer.from(row.value));
      const checksumId = 1 + Math.floor(Math.random() * 2 ** 31);
      try {
        await kv.sender.send({ header: { rangeId: desc.rangeId, timestamp: { wall: 0, logical: 0 } }, requests: [{ kind: 'computeChecksum', checksumId }] });
      } catch (e) {
        // A record meta2 still holds for a range no replica has any more (merged away; its merge's
        // driver rewrites meta2 only after the merge, so meta2 can lag): the DistSender asked every
        // replica until its attempts ran out. Its keys belong to the range that absorbed it, which
        // is checksummed under its own record; this one has nothing to compare.
        if (e instanceof CairnError && e.code === 'kv.range_not_found') {
          this.log.info({ rangeId: desc.rangeId }, 'server: checksum skips a meta2 record whose range is gone');
          continue;
        }
        throw e;
      }
      const checksums: Record<number, string | null> = {};
      const payload = encodeJson({ rangeId: desc.rangeId, checksumId });
      await Promise.all(
        desc.replicas.map(async (r) => {
          try {
            checksums[r.nodeId] =
              r.nodeId === this.rpc.nodeId
                ? await withTimeout(this.requireStore().checksum(desc.rangeId, checksumId), CHECKSUM_WAIT_MS, `server: r${desc.rangeId} checksum on n${r.nodeId}`)
                : decodeJson<{ checksum: string }>(await this.rpc.call(r.nodeId, ServerMethod.Checksum, payload, { timeoutMs: CHECKSUM_WAIT_MS }), 'checksum').checksum;
          } catch (e) {
            this.log.debug({ rangeId: desc.rangeId, nodeId: r.nodeId, err: errMessage(e) }, 'server: no checksum from replica');
            checksums[r.nodeId] = null;
          }
        }),
      );
      out.push({ rangeId: desc.rangeId, checksumId, checksums });
    }
    return out;
  }

  private registerMetrics(): void {
    const m = this.metrics;
    const sm = (k: keyof Store['metrics']): number => this.store?.metrics[k] ?? 0;
    m.gaugeFunc('cairn_ranges', 'Replicas held by this node', () => this.store?.allReplicas().length ?? 0);
    for (const queue of ['split', 'merge', 'replicate', 'replicaGC', 'gc']) {
      const qm = (k: 'processed' | 'failures'): number => this.queues.find((q) => q.name === queue)?.metrics[k] ?? 0;
      m.counterFunc('cairn_queue_processed_total', 'Replicas the range queue processed (a split, merge, replica change or GC done)', () => qm('processed'), { queue });
      m.counterFunc('cairn_queue_failures_total', 'Replicas whose processing by the range queue failed', () => qm('failures'), { queue });
    }
    m.gaugeFunc('cairn_leaseholders', 'Ranges whose valid lease this node holds', () => this.localStatus().leaseholders);
    m.gaugeFunc('cairn_raft_leaders', 'Ranges whose Raft leader is on this node', () => this.localStatus().leaders);
    m.gaugeFunc('cairn_ranges_underreplicated', 'Ranges led here with fewer live voters than wanted', () => this.localStatus().underreplicated);
    m.counterFunc('cairn_raft_proposals_total', 'Raft proposals', () => sm('proposals'));
    m.counterFunc('cairn_raft_reproposals_total', 'Raft re-proposals', () => sm('reproposals'));
    m.counterFunc('cairn_raft_proposal_batches_dropped_total', 'Proposal-buffer flushes Raft dropped (their commands stay pending and are re-proposed)', () => sm('proposalBatchesDropped'));
    m.counterFunc('cairn_raft_applied_commands_total', 'Commands applied', () => sm('appliedCommands'));
    m.counterFunc('cairn_raft_rejected_commands_total', 'Commands rejected at apply', () => sm('rejectedCommands'));
    m.counterFunc('cairn_raft_ready_rounds_total', 'Ready rounds of the store loop', () => sm('readyRounds'));
    m.counterFunc('cairn_raft_syncs_total', 'Synced engine writes (group commits)', () => sm('syncs'));
    m.counterFunc('cairn_raft_messages_sent_total', 'Raft messages sent', () => sm('raftMessagesSent'));
    m.counterFunc('cairn_raft_appends_during_sync_total', 'MsgApps a leader sent while its store\'s round was syncing (store.ts "Appends during the sync")', () => sm('appendsDuringSync'));
    m.counterFunc('cairn_raft_message_batches_sent_total', 'Raft message batches sent (one per destination store per send; all ranges\' messages ride in it)', () => sm('raftBatchesSent'));
    m.counterFunc('cairn_raft_snapshots_sent_total', 'Raft snapshots sent', () => sm('snapshotsSent'));
    m.counterFunc('cairn_raft_snapshots_applied_total', 'Raft snapshots applied', () => sm('snapshotsApplied'));
    m.counterFunc('cairn_raft_leader_changes_total', 'Raft leader changes seen by this node\'s replicas (sampled every second and at each scrape)', () => {
      this.sampleLeaders();
      return this.leaderChangeCount;
    });
    const rpcTotal = (k: keyof ReturnType<RpcContext['metrics']['totals']>): (() => number) => () => this.rpc.metrics.totals()[k];
    m.counterFunc('cairn_rpc_bytes_sent_total', 'RPC bytes sent (whole frames)', rpcTotal('bytesSent'));
    m.counterFunc('cairn_rpc_bytes_received_total', 'RPC bytes received (whole frames)', rpcTotal('bytesReceived'));
    m.counterFunc('cairn_rpc_messages_sent_total', 'RPC messages sent', rpcTotal('messagesSent'));
    m.counterFunc('cairn_rpc_frames_sent_total', 'RPC frames sent (each socket write carries one or more)', rpcTotal('framesSent'));
    m.counterFunc('cairn_rpc_messages_received_total', 'RPC messages received', rpcTotal('messagesReceived'));
    m.counterFunc('cairn_rpc_connection_errors_total', 'RPC connections closed for an error', rpcTotal('errors'));
    m.counterFunc('cairn_rpc_malformed_frames_total', 'Malformed RPC frames received', rpcTotal('malformedFrames'));
    m.counterFunc('cairn_rpc_one_way_dropped_total', 'One-way RPC messages dropped', rpcTotal('oneWayDropped'));
    m.counterFunc('cairn_rpc_faults_dropped_total', 'Messages dropped by the fault hook', () => this.rpc.faults.totals().dropped);
    const ds = (k: keyof DistSender['metrics']): (() => number) => () => this.distSender?.metrics[k] ?? 0;
    m.counterFunc('cairn_distsender_batches_total', 'Batches routed by this node\'s DistSender', ds('batches'));
    m.counterFunc('cairn_distsender_multi_range_batches_total', 'Routed batches that spanned several ranges', ds('multiRange'));
    m.counterFunc('cairn_distsender_rpcs_total', 'Batch parts sent to replicas (retries included)', ds('rpcs'));
    m.counterFunc('cairn_distsender_not_lease_holder_total', 'NotLeaseHolder answers the DistSender followed', ds('notLeaseHolder'));
    m.counterFunc('cairn_distsender_retries_total', 'Re-divisions after a failed part', ds('retries'));
    m.counterFunc('cairn_liveness_heartbeats_total', 'Successful liveness heartbeats', () => this.liveness?.heartbeats ?? 0);
    m.counterFunc('cairn_liveness_heartbeat_failures_total', 'Failed liveness heartbeats', () => this.liveness?.heartbeatFailures ?? 0);
    m.gaugeFunc('cairn_liveness_live_nodes', 'Nodes whose liveness record has not expired', () => {
      const now = this.clock.physicalNow();
      let n = 0;
      for (const r of this.liveness?.cached.values() ?? []) if (isLive(r, now)) n++;
      return n;
    });
    m.gaugeFunc('cairn_sql_connections_total', 'SQL connections accepted', () => this.sql.connections);
    m.gaugeFunc('cairn_sql_open_connections', 'SQL connections whose socket is open', () => this.sql.openConnections);
    // The coordinators' and their pusher's counters (TxnDB.metrics, TxnPusher.metrics): what a stalled workload is doing.
    const txnCounters: readonly [string, string, () => number][] = [
      ['commits', 'Transactions committed by coordinators on this node', () => this.txnDb?.metrics.commits ?? 0],
      ['aborts', 'Transactions rolled back or aborted by coordinators on this node', () => this.txnDb?.metrics.aborts ?? 0],
      ['restarts', 'Transaction restarts (new epoch)', () => this.txnDb?.metrics.restarts ?? 0],
      ['refreshes', 'Read-span refreshes', () => this.txnDb?.metrics.refreshes ?? 0],
      ['refresh_failures', 'Read-span refreshes that failed', () => this.txnDb?.metrics.refreshFailures ?? 0],
      ['one_phase_commits', 'Commits in one Raft round (1PC)', () => this.txnDb?.metrics.onePhaseCommits ?? 0],
      ['parallel_commits', 'Commits through a STAGING record (parallel commit)', () => this.txnDb?.metrics.parallelCommits ?? 0],
      ['pushes', "PushTxn requests sent by this node's transactions", () => this.txnDb?.pusher.metrics.pushes ?? 0],
      ['push_waits', 'Unsuccessful pushes followed by a wait', () => this.txnDb?.pusher.metrics.waits ?? 0],
      ['deadlocks_broken', 'Waits-for cycles broken by a force push', () => this.txnDb?.pusher.metrics.deadlocksBroken ?? 0],
      ['recoveries', 'STAGING records recovered by pushers', () => this.txnDb?.pusher.metrics.recoveries ?? 0],
      ['lock_wait_timeouts', 'Pushers that gave up waiting (kv.lock_wait_timeout)', () => this.txnDb?.pusher.metrics.lockWaitTimeouts ?? 0],
    ];
    for (const [name, help, read] of txnCounters) m.counterFunc(`cairn_txn_${name}_total`, help, read);
    // Contention on this node's leaseholders (ReplicaConcurrency.counters, summed over its replicas: a removed replica's counts leave the sum).
    const cc = (k: keyof ReplicaConcurrency['counters']) => (): number => {
      let n = 0;
      for (const r of this.store?.allReplicas() ?? []) n += r.concurrency.counters[k];
      return n;
    };
    m.counterFunc('cairn_kv_lock_waits_total', 'Sequenced batches that waited in a lock-table queue', cc('lockWaits'));
    m.counterFunc('cairn_kv_push_handoffs_total', 'Lock waits handed back to the client to push (WriteIntentError)', cc('pushHandoffs'));
    m.counterFunc('cairn_kv_intent_discoveries_total', 'Intents met in evaluation that the lock table did not know', cc('discoveries'));
    m.counterFunc('cairn_kv_read_bumps_total', 'Locking reads evaluated again above a newer version (server-side refresh)', cc('readBumps'));
    m.counterFunc('cairn_kv_tscache_pushes_total', 'Write batches pushed by the timestamp cache', cc('tscachePushes'));
    m.counterFunc('cairn_kv_tscache_retries_total', 'Pushed write batches refused with RETRY_SERIALIZABLE', cc('tscacheRetries'));
    m.gaugeFunc('cairn_txn_pushers_waiting', "Requests of this node's transactions pushing a conflicting transaction right now", () => this.txnDb?.pusher.metrics.inFlight ?? 0);
    m.gaugeFunc('cairn_node_id', 'This node id (0 while joining)', () => this.rpc.nodeId);
    m.gaugeFunc('cairn_clock_skew_injected_micros', 'Physical clock skew injected through /_admin/clock', () => this.clockSkewMicros);
  }

  private leaderChangeCount = 0;
  private lastLeaders = new Map<number, number>();
  /** Counts replicas whose known Raft leader changed since the last sample. */
  private sampleLeaders(): void {
    for (const r of this.store?.allReplicas() ?? []) {
      const lead = r.raw.basicStatus().softState.lead;
      const prev = this.lastLeaders.get(r.rangeId);
      if (prev !== undefined && prev !== lead && lead !== 0) this.leaderChangeCount++;
      if (lead !== 0) this.lastLeaders.set(r.rangeId, lead);
    }
  }

  // ---- admin hooks ---------------------------------------------------------------------------

  /** Skews this node's physical clock (the jepsen-style clock nemesis). */
  setClockSkew(offsetMs: number): void {
    this.clockSkewMicros = Math.round(offsetMs * 1000);
    void this.checkClock();
  }

  async transferLease(rangeId: number, toNodeId: number): Promise<void> {
    const s = this.requireStore();
    const r = s.replica(rangeId);
    if (r === undefined) throw new ServerError('server.no_replica', `server: n${this.rpc.nodeId} holds no replica of r${rangeId}`);
    const target = r.desc.replicas.find((x) => x.nodeId === toNodeId);
    if (target === undefined) throw new ServerError('server.no_replica', `server: r${rangeId} has no replica on n${toNodeId}`);
    await s.transferLease(rangeId, target.replicaId);
  }

  // ---- shutdown ------------------------------------------------------------------------------

  /** Stops accepting, drains and closes everything; idempotent. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    const wasServing = this.state === 'serving';
    this.state = 'stopping';
    await this.sql.close().catch(() => undefined);
    if (wasServing) await this.drainLeases(DRAIN_TIMEOUT_MS).catch(() => undefined);
    for (const t of this.timers) clearInterval(t);
    await this.http.close().catch(() => undefined);
    await this.store?.stop().catch(() => undefined);
    await this.rpc.close().catch(() => undefined);
    await this.engine.close().catch(() => undefined);
    this.state = 'stopped';
  }

  /**
   * Drain (CockroachDB's node drain, reduced): hands every lease this node
   * holds to a replica on a live node (extending first one that is in its
   * last max offset, which cannot be transferred as it is), then the Raft leadership of every range
   * it leads (to the leaseholder, else a live voter), so that a clean shutdown
   * makes its ranges wait out neither a lease expiration nor an election
   * timeout. Bounded by `timeoutMs` in all; a lease that cannot move in time
   * simply expires, and a leadership that cannot, goes to an election.
   */
  async drainLeases(timeoutMs: number): Promise<number> {
    const s = this.store;
    if (s === null) return 0;
    const started = Date.now();
    const deadline = started + timeoutMs;
    const now = this.clock.now();
    const nowMicros = this.clock.physicalNow();
    const liveVoterElsewhere = (r: Replica): ReplicaDescriptor | undefined =>
      r.desc.replicas.find((x) => x.nodeId !== this.rpc.nodeId && x.type === 0 && this.livenessOf(x.nodeId, nowMicros) === true);
    const moves: Promise<void>[] = [];
    for (const r of s.allReplicas()) {
      const lease = r.lease;
      // Ours and not expired: a lease in its last max offset (stasis — a range quiescent since its last renewal)
      // cannot be transferred as it is, but survivors would have to wait out its expiration: extend it first.
      if (lease === null || lease.replica.nodeId !== this.rpc.nodeId || leaseState(lease, now, this.clock.maxOffsetMicros) === 'expired') continue;
      const target = liveVoterElsewhere(r);
      if (target === undefined) continue;
      const valid = r.ownsValidLease(now) ? Promise.resolve() : r.acquireLease();
      moves.push(valid.then(() => s.transferLease(r.rangeId, target.replicaId)));
    }
    const settled = await withTimeout(Promise.allSettled(moves), timeoutMs, 'server: drain').catch(() => []);
    const moved = settled.filter((x) => x.status === 'fulfilled').length;
    const leasesMs = Date.now() - started;
    const leading = s.allReplicas().filter((r) => r.isLeader());
    const handoffs: Promise<void>[] = [];
    /** Per range led: where its leadership went and when (ms from the drain's start), or why it did not. */
    const perRange: string[] = [];
    for (const r of leading) {
      const holder = r.lease?.replica;
      const target = holder !== undefined && holder.nodeId !== this.rpc.nodeId && holder.type === 0 ? holder : liveVoterElsewhere(r);
      if (target === undefined) {
        perRange.push(`r${r.rangeId}: no live target`);
        continue;
      }
      handoffs.push(r.transferLeadership(target.replicaId).then(() => void perRange.push(`r${r.rangeId}→n${r.leaderHint()?.nodeId ?? '?'} ${Date.now() - started}ms`)));
    }
    await withTimeout(Promise.all(handoffs), Math.max(0, Math.min(DRAIN_LEADERSHIP_WAIT_MS, deadline - Date.now())), 'server: drain leadership').catch(() => undefined);
    const handedOff = leading.filter((r) => !r.isLeader() && r.leaderHint() !== null).length;
    for (const r of leading) if (r.isLeader() || r.leaderHint() === null) perRange.push(`r${r.rangeId}: ${r.isLeader() ? 'still leading' : 'no leader known'}`);
    const leadership = perRange.length > 20 ? [...perRange.slice(0, 20), `… ${perRange.length - 20} more`] : perRange;
    this.log.info({ moved, of: moves.length, leasesMs, leadershipHandedOff: handedOff, led: leading.length, leadership, ms: Date.now() - started }, 'server: drained leases and Raft leadership');
    return moved;
  }
}

