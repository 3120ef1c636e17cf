/**
 * An in-process N-node test cluster over real TCP on 127.0.0.1: each node has
 * its own Clock (system or manual physical time), a Store on a memory or
 * LevelDB engine, and an RpcContext (ephemeral port; peers found through a
 * shared address table, so a restarted node may come back on another port).
 *
 * Ticks come from a driver: `startTicker()` calls every running store's
 * tick() on a real interval (integration tests), or tests call `tick()` /
 * `tickUntil()` by hand. Nothing else in the cluster uses timers.
 *
 *   const c = await TestCluster.start({ nodes: 3 });
 *   c.startTicker();
 *   const kv = c.client(0);                 // routes through node 1's RPC
 *   await kv.put(key, value);
 *   await c.stopNode(2);                    // closes store + RPC, keeps the engine's data
 *   await c.restartNode(2);                 // same engine (memory) or directory (level)
 *   c.node(0).rpc.faults.setFaults(2, { partition: true });   // fault hooks
 *   await c.close();
 *
 *   const start = autoCloseClusters();      // per test file: closes clusters after each test
 *   const n4 = await c.addNode();           // an empty node (ident only): gets replicas by snapshot
 *   c.node(i).clockUnhealthy = true;        // the node stops serving (kv.clock_unhealthy)
 *   await c.recountStats(i)                 // MVCC stats of node i's r1 recounted from its engine
 *
 * Nodes are 1-based ids; helpers take 0-based indexes (node(i) has id i+1).
 * Every node bootstraps r1 with the same replica set (all initial nodes) and
 * the same timestamp, so initial replicas are identical.
 */
import { afterEach } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Clock, ManualPhysical, systemPhysicalMicros } from '../../src/util/hlc.js';
import { Prng } from '../../src/util/prng.js';
import { RpcContext, type PeerAddress } from '../../src/rpc/rpc-context.js';
import type { Engine } from '../../storage/engine.js';
import { addStats, computeStats, type MvccStats } from '../../storage/mvcc-stats.js';
import { KEY_MAX, KEY_MIN, LOCAL_MAX, rangeLocalSpan } from '../../storage/keys.js';
import { MemoryEngine } from '../../storage/memory-engine.js';
import { LevelEngine } from '../../storage/level-engine.js';
import { Store } from '../../src/kv/store.js';
import { bootstrapCluster, writeStoreIdent } from '../../src/kv/bootstrap.js';
import { KvClient, LeaseholderRouter, RpcNodeDialer } from '../../src/kv/kv-client.js';
import { kvTestSettings, type KvSettings } from '../../src/kv/settings.js';
import type { Lease, ReplicaDescriptor } from '../../src/kv/api.js';
import type { Replica } from '../../src/kv/replica.js';

export const T0 = 1_700_000_000_000_000;

export interface TestClusterOptions {
  readonly nodes: number;
  readonly engine?: 'memory' | 'level';
  /** Physical time: the system clock (default), or a ManualPhysical per node that tests advance. */
  readonly clock?: 'system' | 'manual';
  readonly settings?: Partial<KvSettings>;
  readonly seed?: number;
  readonly maxOffsetMicros?: number;
  /** Called on every lease change of every store (the timestamp-cache hook). */
  readonly onLeaseApplied?: (nodeId: number, rangeId: number, lease: Lease, prev: Lease | null) => void;
  /** A node's calls to itself: in process (default) or, false, over a loopback socket like a peer's (RpcContextOptions.localCalls). */
  readonly localCalls?: boolean;
}

export interface TestNode {
  readonly nodeId: number;
  readonly clock: Clock;
  readonly physical: ManualPhysical | null;
  engine: Engine;
  store: Store | null;
  rpc: RpcContext | null;
  dir: string | null;
  /** Forces the node's clock to count as out of bounds (else the RPC context's offset measurements decide). */
  clockUnhealthy?: boolean;
}

export class TestCluster {
  readonly settings: KvSettings;
  private readonly nodes: TestNode[] = [];
  private readonly addrs = new Map<number, PeerAddress>();
  private ticker: ReturnType<typeof setInterval> | null = null;
  private readonly baseDir: string | null;

  private constructor(private readonly opts: TestClusterOptions) {
    this.settings = kvTestSettings(opts.settings);
    this.baseDir = opts.engine === 'level' ? mkdtempSync(join(tmpdir(), 'cairn-cluster-')) : null;
  }

  static async start(opts: TestClusterOptions): Promise<TestCluster> {
    const c = new TestCluster(opts);
    const replicas: ReplicaDescriptor[] = [];
    for (let i = 1; i <= opts.nodes; i++) replicas.push({ nodeId: i, storeId: i, replicaId: i, type: 0 });
    for (let i = 1; i <= opts.nodes; i++) {
      const physical = opts.clock === 'manual' ? new ManualPhysical(T0) : null;
      const clock = new Clock(physical?.read ?? systemPhysicalMicros, opts.maxOffsetMicros ?? 100_000);
      const dir = c.baseDir === null ? null : join(c.baseDir, `n${i}`);
      const engine = dir === null ? new MemoryEngine() : await LevelEngine.open(dir);
      await bootstrapCluster(engine, { clusterId: 'test-cluster', ident: { clusterId: 'test-cluster', nodeId: i, storeId: i }, replicas, now: { wall: T0, logical: 0 } });
      c.nodes.push({ nodeId: i, clock, physical, engine, store: null, rpc: null, dir });
    }
    for (let i = 0; i < opts.nodes; i++) await c.startNode(i);
    return c;
  }

  /**
   * Adds an empty node (store ident only, no replicas) and starts it; it gets
   * replicas when a range adds it (a Raft message creates an uninitialized
   * replica, a snapshot fills it). Returns its index.
   */
  async addNode(): Promise<number> {
    const nodeId = this.nodes.length + 1;
    const physical = this.opts.clock === 'manual' ? new ManualPhysical(this.nodes[0]?.physical?.micros ?? T0) : null;
    const clock = new Clock(physical?.read ?? systemPhysicalMicros, this.opts.maxOffsetMicros ?? 100_000);
    const dir = this.baseDir === null ? null : join(this.baseDir, `n${nodeId}`);
    const engine = dir === null ? new MemoryEngine() : await LevelEngine.open(dir);
    await writeStoreIdent(engine, { clusterId: 'test-cluster', nodeId, storeId: nodeId });
    this.nodes.push({ nodeId, clock, physical, engine, store: null, rpc: null, dir });
    await this.startNode(this.nodes.length - 1);
    return this.nodes.length - 1;
  }

  node(i: number): TestNode {
    const n = this.nodes[i];
    if (n === undefined) throw new Error(`test-cluster: no node ${i}`);
    return n;
  }

  get size(): number {
    return this.nodes.length;
  }

  store(i: number): Store {
    const s = this.node(i).store;
    if (s === null) throw new Error(`test-cluster: node ${i} is stopped`);
    return s;
  }

  isRunning(i: number): boolean {
    return this.node(i).store !== null;
  }

  private async startNode(i: number): Promise<void> {
    const n = this.node(i);
    const seed = (this.opts.seed ?? 1) * 1000 + n.nodeId * 17 + (n.rpc === null ? 0 : 1);
    const rpc = new RpcContext({
      nodeId: n.nodeId,
      clusterId: 'test-cluster',
      clock: n.clock,
      prng: new Prng(seed),
      backoff: { initialMs: 10, maxMs: 100 },
      resolve: (id) => this.addrs.get(id),
      ...(this.opts.localCalls === undefined ? {} : { localCalls: this.opts.localCalls }),
    });
    const onLease = this.opts.onLeaseApplied;
    n.store = await Store.start({
      engine: n.engine,
      clock: n.clock,
      transport: rpc,
      prng: new Prng(seed + 1),
      settings: this.settings,
      isClockHealthy: () => n.clockUnhealthy !== true && rpc.isClockHealthy(),
      ...(onLease === undefined ? {} : { onLeaseApplied: (rangeId: number, lease: Lease, prev: Lease | null) => onLease(n.nodeId, rangeId, lease, prev) }),
    });
    const addr = await rpc.listen('127.0.0.1', 0);
    this.addrs.set(n.nodeId, addr);
    for (const other of this.nodes) other.rpc?.setPeerAddress(n.nodeId, addr);
    n.rpc = rpc;
  }

  /** Stops node i: store (pending commands answer ambiguous) and RPC; keeps the engine's data. */
  async stopNode(i: number): Promise<void> {
    const n = this.node(i);
    const store = n.store;
    const rpc = n.rpc;
    n.store = null;
    this.addrs.delete(n.nodeId);
    await store?.stop();
    await rpc?.close();
    n.rpc = null;
    if (n.dir !== null) {
      await n.engine.close();
    }
  }

  /** Restarts a stopped node on its engine (memory) or directory (level). */
  async restartNode(i: number): Promise<void> {
    const n = this.node(i);
    if (n.store !== null) throw new Error(`test-cluster: node ${i} is running`);
    if (n.dir !== null) n.engine = await LevelEngine.open(n.dir);
    await this.startNode(i);
  }

  /** One tick on every running store. */
  tick(): void {
    for (const n of this.nodes) n.store?.tick();
  }

  /** Ticks every running store every settings.tickIntervalMs (manual clocks advance by the same). */
  startTicker(): void {
    if (this.ticker !== null) return;
    const ms = this.settings.tickIntervalMs;
    this.ticker = setInterval(() => {
      for (const n of this.nodes) n.physical?.advance(ms * 1000);
      this.tick();
    }, ms);
  }

  stopTicker(): void {
    if (this.ticker !== null) clearInterval(this.ticker);
    this.ticker = null;
  }

  /**
   * A client whose requests enter the cluster through node i's RPC context
   * (routing to any node); `timeoutMs` bounds each RPC (a timed-out call is
   * ambiguous).
   */
  client(i = 0, timeoutMs = 10_000): KvClient {
    const rpc = this.node(i).rpc;
    if (rpc === null) throw new Error(`test-cluster: node ${i} is stopped`);
    const router = new LeaseholderRouter(new RpcNodeDialer(rpc, timeoutMs), { nodes: () => this.nodes.filter((n) => n.store !== null).map((n) => n.nodeId) });
    return new KvClient(router);
  }

  /** Running replicas of a range, by node index. */
  replicas(rangeId: number): { i: number; r: Replica }[] {
    const out: { i: number; r: Replica }[] = [];
    this.nodes.forEach((n, i) => {
      const r = n.store?.replica(rangeId);
      if (r !== undefined) out.push({ i, r });
    });
    return out;
  }

  /** The index of the node whose replica holds a valid lease on rangeId, or -1. */
  leaseholder(rangeId = 1): number {
    for (const { i, r } of this.replicas(rangeId)) if (r.ownsValidLease(this.node(i).clock.now())) return i;
    return -1;
  }

  /** The index of the node whose replica is the Raft leader of rangeId, or -1. */
  leader(rangeId = 1): number {
    for (const { i, r } of this.replicas(rangeId)) if (r.isLeader()) return i;
    return -1;
  }

  /**
   * MVCC stats of node i's copy of r1 recounted from its engine (range-local
   * keys + user data), to compare with the incrementally maintained
   * replica.applied.stats.
   */
  async recountStats(i: number): Promise<MvccStats> {
    const engine = this.node(i).engine;
    const local = rangeLocalSpan(KEY_MIN, KEY_MAX);
    const s = await computeStats(engine, LOCAL_MAX, KEY_MAX);
    addStats(s, await computeStats(engine, local.key, local.endKey));
    return s;
  }

  /** Waits (bounded) for cond(), polling every 5 ms. */
  async waitFor(cond: () => boolean, timeoutMs = 10_000, what = 'condition'): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!cond()) {
      if (performance.now() > deadline) throw new Error(`test-cluster: timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  async close(): Promise<void> {
    this.stopTicker();
    for (let i = 0; i < this.nodes.length; i++) {
      if (this.isRunning(i)) await this.stopNode(i);
      else if (this.node(i).dir === null) continue;
    }
    for (const n of this.nodes) if (n.dir === null) await n.engine.close();
    if (this.baseDir !== null) rmSync(this.baseDir, { recursive: true, force: true });
  }
}

/**
 * For a test file: returns a `start` that starts clusters and closes every
 * one of them after each test (registers a vitest afterEach).
 */
export function autoCloseClusters(): (opts: TestClusterOptions) => Promise<TestCluster> {
  const open: TestCluster[] = [];
  afterEach(async () => {
    for (const c of open.splice(0)) await c.close();
  });
  return async (opts) => {
    const c = await TestCluster.start(opts);
    open.push(c);
    return c;
  };
}
