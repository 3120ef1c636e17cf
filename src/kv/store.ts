/**
 * Store: one engine, many replicas, and the one Raft processing loop that
 * drives them all (CockroachDB's kvserver.Store + its Raft scheduler,
 * DESIGN.md §3 "group commit").
 *
 * The Ready loop — one round handles every replica with a Ready:
 *
 *   1. ready() on each dirty replica, after handing Raft the commands
 *      evaluated since the last round as one proposal (Replica's proposal
 *      buffer: one MsgApp per follower for all of them);
 *   2. ONE engine batch with every replica's snapshot (if any), new log
 *      entries and hard state, written with ONE sync if any replica needs it
 *      (so thousands of proposals share one fsync);
 *   3. messages coalesced per destination store: ONE one-way RPC per peer
 *      per round carrying all ranges' Raft messages (heartbeats of many
 *      ranges between two nodes ride together); MsgSnap is diverted to the
 *      snapshot sender (streamed in chunks over the Raft connection class).
 *      Appends leave before the round's sync and the rest after it, so a
 *      round sends at most two batches per peer however many ranges it
 *      covers; the quiescing heartbeats replicas send from tick() are
 *      batched the same way, one batch per peer per tick.
 *      Messages a later one of the same Ready makes redundant (an empty
 *      commit-only MsgApp followed by the next append; an acknowledgement
 *      followed by a higher one) are left out (redundant-raft-messages.ts).
 *      The receiver decodes a whole batch before stepping any of it (a malformed one
 *      steps nothing and closes the connection, src/rpc/connection.ts) and
 *      steps it in order in one turn; the stepped replicas then share the
 *      next round. A batch lost on the way is a set of lost messages: Raft
 *      retransmits (test/kv/raft-transport.test.ts);
 *   4. ONE apply batch with every replica's committed commands + applied
 *      state (unsynced: the log is durable), then proposers answer clients.
 *      Committed entries that were already durable here before the round
 *      are staged before step 2's write and written in their own unsynced
 *      batch issued just before it (they are final: their clients are
 *      answered at staging, and that batch — whose write releases their
 *      latches — goes ahead of the fsync in LevelDB's writer queue instead
 *      of waiting for it; level-engine.ts "Synced writes");
 *   5. advance() each replica; a replica whose leader changed re-proposes
 *      its pending commands.
 *
 * Commits during the sync (the fast apply pass): while step 2's synced
 * write is in flight, followers' acks keep arriving and advance leaders'
 * commit indexes. Those commits do not wait for the round to end: a pass
 * takes each such replica's committed entries that are durable HERE
 * (RawNode.takeCommittedEntries capped at the storage's durable last index —
 * the leader counts its own entries at append time, so only its durable
 * copy makes the commit stand on a quorum of durable copies), applies them
 * in one unsynced batch and answers their clients. A write then waits for
 * the followers' sync and the leader's, in parallel, not for one more
 * round. Passes run one at a time, only in rounds that may apply early
 * (step 1b's conditions), never for a replica with entries of this round
 * still to apply (step 3), and the next round starts after the pass's
 * write, so every replica applies in log order.
 *
 * Appends during the sync (sendAppendsDuringSync): a command evaluated
 * while a round's synced write is in flight does not wait for the next
 * round to reach the followers. Each dirty leader flushes its proposal
 * buffer into Raft right then and sends the MsgApps that carry the new
 * entries (RawNode.takeAppends), so the followers persist them in parallel
 * with the rest of the leader's sync, and the leader's own append of them
 * goes into the next round as before. A write then waits for about one and
 * a half fsyncs instead of two. Not for a replica of the round whose MsgApps
 * step 1c held back (they must not be overtaken), nor for one whose term or
 * vote is not durable yet. Since followers may now acknowledge entries the
 * leader has not persisted, every MsgApp sent ahead of the leader's own
 * sync announces no commit above the leader's durable last index
 * (raft splitAppendForDurability): a commit that stands on the leader's
 * non-durable copy reaches followers only after its sync (the commit-only
 * remainder rides in the post-sync batch), and the leader applies only
 * entries it holds durably (fast apply, step 3).
 *
 * Deferred commit-only appends (deferCommitOnlyAppends): the empty MsgApps a
 * leader's Ready holds (Raft broadcasts one to every follower whenever its
 * commit index advances) leave with the round's post-sync batch, not before
 * the sync, and are left out when an append with entries sent to the same
 * replica in the same round — before the sync or during it — or following
 * it in the post-sync batch already carries their commit
 * (redundant-raft-messages.ts isEmptyAppendSuperseded). With the load spread
 * over several ranges each round carries few commands per range, and these
 * broadcasts and their acknowledgements were about half the Raft messages
 * per write. A follower may learn a commit one leader sync later; the
 * leader's clients are not waiting for that (they are answered when the
 * leader applies).
 *
 * Inputs come from outside: tick() (the server's timer every
 * settings.tickIntervalMs, or a test's manual stepping — no timers here),
 * Raft message batches and snapshot chunks from src/rpc, batches from
 * clients. The loop is scheduled through the injected `schedule` (default
 * setImmediate) whenever a replica becomes dirty.
 *
 * Log truncation queue: every truncationIntervalTicks each leaseholder-leader
 * whose log exceeds raftLogMaxEntries or raftLogMaxBytes proposes TruncateLog up to what every
 * recently active follower has (or to its applied index beyond
 * raftLogHardMaxEntries — laggards then get a snapshot).
 *
 * RPC surface (registered by Store.start on the transport; one store per node):
 *   KvMethod.Batch         BatchRequest → BatchResult (errors as values, api-codec.ts)
 *   KvMethod.RaftMessages  one-way RaftMessageBatch
 *   KvMethod.RaftSnapshot  SnapshotChunk → ack
 *
 * New replicas: a Raft message for a range this store has no replica of
 * creates an uninitialized replica (no data, no configuration; it learns
 * where its peers live from the messages' envelopes), which the leader
 * catches up with a snapshot; applying the snapshot initializes it with the
 * descriptor the snapshot carries — unless that descriptor's span overlaps
 * another initialized replica here (acceptSnapshot refuses it, retryable, as
 * CockroachDB's canApplySnapshot does): a store that missed a split still
 * holds the parent over the right-hand keys, and a right-hand replica
 * initialized beside it would lose its rows when the parent later catches up
 * by a snapshot of its narrower self (which clears the parent's old span).
 * The sender retries; once the parent has narrowed (by applying the split or
 * by its own snapshot), the right-hand snapshot is taken. No such placeholder is created (and the
 * range's messages are dropped; the leader retransmits) while a split is
 * installing the range's replica here (beginInstall → installReplica) or a
 * removed replica's state is being cleared (beginClear → endClear): a
 * placeholder loaded from that state would acknowledge entries the real
 * replica lacks, or outlive the clear. A placeholder that hears nothing for
 * 20 election timeouts is dropped (its hard state stays on disk). Conf changes are applied to Raft by the
 * Replica; the descriptor change that goes with them is the replication
 * engineer's command (Replica.setDescriptor on apply).
 *
 * Ownership: the Store owns its replicas and the loop; the caller owns the
 * engine (Store.stop does not close it) and the transport.
 */
import { assert } from '../util/assert.js';
import { CairnError } from '../util/errors.js';
import type { Clock, Timestamp } from '../util/hlc.js';
import { silentLogger, type Logger } from '../util/log.js';
import type { Prng } from '../util/prng.js';
import type { Engine, Snapshot as EngineSnapshot, WriteBatch } from '../../storage/engine.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { LOCAL_RANGE_PREFIX, addressOf, decodeRangeLocalKey, isLocal, rangeAppliedStateKey } from '../../storage/keys.js';
import { decodeMvccKey, isMvccMetaKey } from '../../storage/mvcc-key.js';
import { compareBytes, hasPrefix } from '../../storage/encoding/bytes.js';
import { decodeHead } from '../../storage/mvcc-value.js';
import { mvccGet } from '../../storage/mvcc.js';
import { MAX_TIMESTAMP } from '../util/hlc.js';
import { ConnectionClass, type RpcTransport } from '../rpc/transport.js';
import { MessageType, isEmptySnap, type Entry, type Message, type Ready, type Snapshot } from '../../raft/types.js';
import { KvMethod, RangeKeyMismatchError, RangeNotFoundError, StoreStoppedError, type RangeDescriptor, type BatchRequest, type BatchResponse, type KeyValue, type Lease, type StoreIdent } from './api.js';
import {
  decodeAppliedState,
  decodeBatchRequest,
  decodeRangeDescriptor,
  decodeRaftMessageBatch,
  decodeSnapshotChunk,
  encodeBatchResult,
  encodeRaftMessageBatch,
  encodeSnapshotChunk,
  type RaftMessageBatch,
  type RaftMessageRequest,
} from './api-codec.js';
import { loadRangeDescriptors, readStoreIdent } from './bootstrap.js';
import { Replica, confStateOf, type ApplyEffects, type StoreContext } from './replica.js';
import { replicatedEngineSpans } from './replica-consistency.js';
import { DEFAULT_KV_SETTINGS, type KvSettings } from './settings.js';
import { finishRangeTrigger, stageRangeTrigger } from './split-trigger.js';
import { clearReplicaData } from './replica-change.js';
import { readRangeTombstone } from './range-tombstone.js';
import { withObservedTimestamp } from './uncertainty.js';
import { isEmptyAppendSuperseded, isSupersededInReady } from './redundant-raft-messages.js';
import { splitAppendForDurability } from '../../raft/raw-node.js';

export interface StoreOptions {
  readonly engine: Engine;
  readonly clock: Clock;
  readonly transport: RpcTransport;
  readonly prng: Prng;
  readonly settings?: KvSettings;
  readonly logger?: Logger;
  /** Called when a replica's lease changes (the concurrency layer bumps its timestamp cache low-water mark to lease.start). */
  readonly onLeaseApplied?: (rangeId: number, lease: Lease, prev: Lease | null) => void;
  /** Whether this node's clock is within bounds (RpcContext.isClockHealthy); always healthy if absent. */
  readonly isClockHealthy?: () => boolean;
  /** How the Ready loop is scheduled; default setImmediate. */
  readonly schedule?: (fn: () => void) => void;
}

export interface StoreMetrics {
  proposals: number;
  reproposals: number;
  /** Proposal-buffer flushes Raft dropped (no leader, leadership transfer): their commands stay pending, re-proposed. */
  proposalBatchesDropped: number;
  appliedCommands: number;
  rejectedCommands: number;
  readyRounds: number;
  /** Synced engine writes of the Ready loop. */
  syncs: number;
  raftMessagesSent: number;
  /** One-way RPCs carrying Raft messages (≤ one per peer per round). */
  raftBatchesSent: number;
  /** Raft messages left out of a batch because a later one of the same Ready has their whole effect (redundant-raft-messages.ts). */
  raftMessagesElided: number;
  snapshotsSent: number;
  /** RPCs that carried snapshot data (a snapshot streams in several). */
  snapshotChunksSent: number;
  snapshotsApplied: number;
  /** Snapshots refused because their span overlaps another initialized replica here (acceptSnapshot). */
  snapshotsRefused: number;
  /** Fast apply passes: commits applied while a round's sync was in flight. */
  fastApplies: number;
  /** MsgApps a leader sent while a round's sync was in flight (Store header, "Appends during the sync"). */
  appendsDuringSync: number;
}

interface PendingSnapshot {
  readonly key: string;
  readonly kvs: KeyValue[];
}

/** Election timeouts an uninitialized placeholder may stay silent before the store drops it. */
const PLACEHOLDER_IDLE_ELECTIONS = 20;

/** A transactional batch with this node's clock reading on arrival among its observed timestamps (uncertainty.ts). */
function withObservedAt(ba: BatchRequest, nodeId: number, now: Timestamp): BatchRequest {
  const observed = withObservedTimestamp(ba.header.observedTimestamps, nodeId, now);
  return observed === ba.header.observedTimestamps ? ba : { header: { ...ba.header, observedTimestamps: observed }, requests: ba.requests };
}

/** The answer to such a batch, carrying that reading back to the coordinator. */
function answeredAt(res: BatchResponse, nodeId: number, now: Timestamp): BatchResponse {
  return { now: res.now, timestamp: res.timestamp, responses: res.responses, observedTimestamps: [{ nodeId, timestamp: now }] };
}

function newApplyEffects(): ApplyEffects {
  return { done: [], truncation: null, checksums: [], leases: [], triggers: [] };
}

function snapshotKey(data: Uint8Array): string {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('hex');
}

const RANGE_LOCAL_ENGINE_PREFIX = encodeMvccKey(LOCAL_RANGE_PREFIX).subarray(0, LOCAL_RANGE_PREFIX.length);

/** The user key of a range descriptor when `engineKey` is the head (meta) key of one, else null. */
function descriptorUserKey(engineKey: Buffer): Buffer | null {
  if (!hasPrefix(engineKey, RANGE_LOCAL_ENGINE_PREFIX) || !isMvccMetaKey(engineKey)) return null;
  const userKey = decodeMvccKey(engineKey).key;
  return decodeRangeLocalKey(userKey).suffix === 'rdsc' ? userKey : null;
}

/** The range descriptor a snapshot's data carries (the committed value at its descriptor key), or null. */
function snapshotDescriptor(kvs: readonly KeyValue[]): RangeDescriptor | null {
  for (const kv of kvs) {
    const key = Buffer.from(kv.key);
    if (descriptorUserKey(key) === null) continue;
    const committed = decodeHead(key, Buffer.from(kv.value)).committed;
    return committed?.value ? decodeRangeDescriptor(committed.value) : null;
  }
  return null;
}

/** A snapshot refused because its range's span overlaps another initialized replica on the store (Store.acceptSnapshot). */
export class SnapshotOverlapError extends CairnError {
  override name = 'SnapshotOverlapError';
  constructor(rangeId: number, overlappingRangeId: number, storeId: number) {
    super('kv.snapshot_overlap', `kv: snapshot of r${rangeId} refused on s${storeId}: its span overlaps r${overlappingRangeId} here, which has not caught up yet`, { retryable: true });
  }
}

/** Whether the empty MsgApp msgs[i] is made redundant by an append of `sent` or a later message of `msgs` (Store.route). */
function deferredAppendSuperseded(msgs: readonly Message[], i: number, sent: readonly Message[]): boolean {
  const m = msgs[i] as Message;
  if (m.type !== MessageType.MsgApp || m.entries.length > 0) return false;
  for (const n of sent) if (isEmptyAppendSuperseded(m, n)) return true;
  for (let j = i + 1; j < msgs.length; j++) if (isEmptyAppendSuperseded(m, msgs[j] as Message)) return true;
  return false;
}

export class Store implements StoreContext {
  readonly ident: StoreIdent;
  readonly engine: Engine;
  readonly clock: Clock;
  readonly settings: KvSettings;
  readonly prng: Prng;
  readonly log: Logger;
  readonly metrics: StoreMetrics = {
    proposals: 0,
    reproposals: 0,
    proposalBatchesDropped: 0,
    appliedCommands: 0,
    rejectedCommands: 0,
    readyRounds: 0,
    syncs: 0,
    raftMessagesSent: 0,
    raftBatchesSent: 0,
    raftMessagesElided: 0,
    snapshotsSent: 0,
    snapshotChunksSent: 0,
    snapshotsApplied: 0,
    snapshotsRefused: 0,
    fastApplies: 0,
    appendsDuringSync: 0,
  };
  private readonly replicas = new Map<number, Replica>();
  private readonly transport: RpcTransport;
  private readonly dirty = new Set<Replica>();
  private scheduled = false;
  private loop: Promise<void> | null = null;
  private stopped = false;
  private ticks = 0;
  /** While tick() runs: the Raft messages replicas send from it, grouped per destination node, flushed once at its end. */
  private tickSends: Map<number, RaftMessageRequest[]> | null = null;
  private snapSeq = 0;
  /** Received snapshot data by range, until its Ready applies it. */
  private readonly incomingSnapshots = new Map<number, PendingSnapshot>();
  private readonly chunks = new Map<string, KeyValue[]>();
  private readonly creating = new Set<number>();
  /**
   * Ranges whose replica a split trigger is creating here: staged in an
   * apply batch, installed once durable (installReplica). Meanwhile no
   * uninitialized placeholder may exist or be created for them, and their
   * Raft messages are dropped (the leader retransmits).
   */
  private readonly installing = new Set<number>();
  /**
   * Ranges whose removed replica's data is being cleared here
   * (beginClear/endClear, replica-change.ts clearReplicaData): no placeholder
   * may be created from the Raft state being deleted (it would outlive the
   * clear — an uninitialized replica nothing ever removes, which stalled a
   * decommission — and could persist a hard state over the deletes).
   */
  private readonly clearing = new Set<number>();
  /** Ticks since an uninitialized placeholder last heard from its range (rangeId → ticks). */
  private readonly placeholderIdle = new Map<number, number>();
  private readonly schedule: (fn: () => void) => void;
  /**
   * While a round's synced write is in flight and fast apply passes may run:
   * the replicas that may not take part (entries of the round still to apply).
   */
  private syncing: Set<Replica> | null = null;
  /**
   * While a round's synced write is in flight and leaders may send appends
   * (sendAppendsDuringSync): the round's replicas whose MsgApps wait for
   * the sync (step 1c passed them over) — a later append must not overtake them.
   */
  private appendsHeld: Set<Replica> | null = null;
  /** The current round's early applies, finished before any fast pass finishes its own (log order). */
  private earlyDone: Promise<void> | null = null;
  private fastApply: Promise<void> | null = null;
  private fastScheduled = false;
  /**
   * From a round's first send until its post-sync batch (deferCommitOnlyAppends):
   * the appends with entries each leader sent in the round, which make its
   * deferred commit-only appends redundant (see the header).
   */
  private roundAppends: Map<Replica, Message[]> | null = null;

  private constructor(opts: StoreOptions, ident: StoreIdent) {
    this.ident = ident;
    this.engine = opts.engine;
    this.clock = opts.clock;
    this.settings = opts.settings ?? DEFAULT_KV_SETTINGS;
    this.prng = opts.prng;
    this.log = opts.logger ?? silentLogger();
    this.transport = opts.transport;
    this.onLeaseApplied = opts.onLeaseApplied;
    this.isClockHealthy = opts.isClockHealthy;
    this.schedule = opts.schedule ?? ((fn) => void setImmediate(fn));
  }

  private readonly onLeaseApplied: StoreOptions['onLeaseApplied'];
  private readonly isClockHealthy: StoreOptions['isClockHealthy'];

  /** Opens the store on a bootstrapped engine: loads its replicas and registers its RPC methods. */
  static async start(opts: StoreOptions): Promise<Store> {
    const ident = readStoreIdent(opts.engine);
    if (ident === null) throw new CairnError('kv.store_not_bootstrapped', 'kv: the engine holds no store ident (bootstrap or join first)');
    const store = new Store(opts, ident);
    for (const desc of await loadRangeDescriptors(opts.engine)) {
      if (!desc.replicas.some((r) => r.storeId === ident.storeId)) continue;
      store.replicas.set(desc.rangeId, await Replica.load(store, desc));
    }
    store.registerRpc();
    for (const r of store.replicas.values()) store.enqueueReady(r);
    return store;
  }

  private registerRpc(): void {
    const t = this.transport;
    const failed = (e: unknown): Uint8Array => {
      if (e instanceof CairnError) return encodeBatchResult({ ok: false, error: e instanceof RangeKeyMismatchError ? this.withKeyHolder(e) : e });
      throw e;
    };
    t.register(KvMethod.Batch, (payload) => {
      // A batch of point reads the leaseholder serves at once is answered synchronously (no promise per layer).
      let ba: BatchRequest;
      try {
        ba = decodeBatchRequest(payload);
        const fast = this.sendReadsFast(ba);
        if (fast !== null) return encodeBatchResult({ ok: true, response: fast });
      } catch (e) {
        return failed(e);
      }
      return this.send(ba, true).then((response) => encodeBatchResult({ ok: true, response }), failed);
    });
    t.register(KvMethod.RaftMessages, (payload) => {
      this.handleRaftMessages(decodeRaftMessageBatch(payload));
    });
    t.register(KvMethod.RaftSnapshot, (payload) => {
      this.handleSnapshotChunk(decodeSnapshotChunk(payload));
    });
  }

  // ---- StoreContext ------------------------------------------------------------------

  enqueueReady(r: Replica): void {
    this.dirty.add(r);
    if (this.syncing !== null && !this.fastScheduled && (this.fastApply === null || this.appendsHeld !== null)) {
      this.fastScheduled = true;
      this.schedule(() => {
        this.fastScheduled = false;
        this.sendAppendsDuringSync();
        this.startFastApply();
      });
    }
    if (this.scheduled || this.loop !== null || this.stopped) return;
    this.scheduled = true;
    this.schedule(() => {
      this.scheduled = false;
      this.startLoop();
    });
  }

  clockHealthy(): boolean {
    return this.isClockHealthy?.() ?? true;
  }

  leaseApplied(r: Replica, lease: Lease, prev: Lease | null): void {
    this.onLeaseApplied?.(r.rangeId, lease, prev);
  }

  nextCmdId(): number {
    const id = this.prng.nextUint32() * 2 ** 21 + (this.prng.nextUint32() >>> 11);
    return id === 0 ? 1 : id;
  }

  stageTrigger(r: Replica, batch: WriteBatch, trigger: Buffer, repr: Buffer): void {
    stageRangeTrigger(this, r, batch, trigger, repr);
  }

  finishTrigger(r: Replica, trigger: Buffer): void {
    finishRangeTrigger(this, r, trigger);
  }

  sendRaftMessages(r: Replica, msgs: readonly Message[], quiesce: boolean): void {
    if (this.tickSends !== null) {
      this.route(r, msgs, quiesce, this.tickSends);
      return;
    }
    const byNode = new Map<number, RaftMessageRequest[]>();
    this.route(r, msgs, quiesce, byNode);
    this.flush(byNode);
  }

  // ---- public API ---------------------------------------------------------------------

  get storeId(): number {
    return this.ident.storeId;
  }

  get nodeId(): number {
    return this.ident.nodeId;
  }

  replica(rangeId: number): Replica | undefined {
    return this.replicas.get(rangeId);
  }

  allReplicas(): Replica[] {
    return [...this.replicas.values()];
  }

  /**
   * Starts serving a replica whose state is already in the engine (its
   * descriptor, applied state and Raft state — written atomically by e.g. a
   * split trigger). Replaces an uninitialized replica of the same range.
   */
  async installReplica(desc: RangeDescriptor): Promise<Replica> {
    const old = this.replicas.get(desc.rangeId);
    assert(old === undefined || !old.initialized, `kv: r${desc.rangeId} is already on s${this.ident.storeId}`);
    this.installing.add(desc.rangeId);
    if (old !== undefined) this.removeReplica(desc.rangeId);
    try {
      const r = await Replica.load(this, desc);
      // Nothing can have taken the slot meanwhile: placeholders are refused
      // while the range is installing (createUninitialized).
      assert(!this.replicas.has(desc.rangeId), `kv: r${desc.rangeId} appeared on s${this.ident.storeId} while its replica was installed`);
      this.replicas.set(desc.rangeId, r);
      this.enqueueReady(r);
      return r;
    } finally {
      this.installing.delete(desc.rangeId);
    }
  }

  /**
   * A split trigger is about to write the initial Raft state of `rangeId`'s
   * replica here (its apply batch): an uninitialized placeholder of the range
   * is stopped and dropped now, and none may be created until
   * installReplica has loaded the replica from that state. A placeholder
   * created from the engine in between would load the split's log (truncated
   * at 10), accept the leader's entries and acknowledge them, and the
   * replica installed from the engine a moment earlier would then lack
   * them: the leader's next heartbeat (commit = its match, 11) crashed raft
   * with `tocommit(11) out of range [lastIndex(10)]`.
   */
  beginInstall(rangeId: number): void {
    const old = this.replicas.get(rangeId);
    assert(old === undefined || !old.initialized, `kv: r${rangeId} is already initialized on s${this.ident.storeId}`);
    this.installing.add(rangeId);
    if (old !== undefined) this.removeReplica(rangeId);
  }

  /**
   * Stops a replica and forgets it (pending commands answer ambiguous). Its
   * data stays in the engine: clearing it (and writing the range tombstone)
   * is the replica-GC queue's job.
   */
  removeReplica(rangeId: number): void {
    const r = this.replicas.get(rangeId);
    if (r === undefined) return;
    r.stop();
    this.replicas.delete(rangeId);
    this.dirty.delete(r);
    this.placeholderIdle.delete(rangeId);
  }

  /**
   * Serves a batch addressed to one of this store's ranges. `fastTried`:
   * sendReadsFast(ba) answered null just before (its work is not repeated).
   */
  send(ba: BatchRequest, fastTried = false): Promise<BatchResponse> {
    if (this.stopped) return Promise.reject(new StoreStoppedError(this.ident.storeId));
    const r = this.replicas.get(ba.header.rangeId);
    if (r === undefined || (ba.header.replicaId !== undefined && ba.header.replicaId !== 0 && ba.header.replicaId !== r.replicaId)) {
      return Promise.reject(new RangeNotFoundError(ba.header.rangeId, this.ident.storeId));
    }
    if (ba.header.txn === undefined) return r.send(ba, fastTried);
    // Observed timestamp (uncertainty.ts): this node's reading on arrival, before evaluation, narrows this batch's
    // uncertainty limit here and goes back to the coordinator.
    const nodeId = this.ident.nodeId;
    const now = this.clock.now();
    return r.send(withObservedAt(ba, nodeId, now), fastTried).then((res) => answeredAt(res, nodeId, now));
  }

  /**
   * A RangeKeyMismatch answered by one of this store's replicas, plus the
   * descriptor of this store's replica whose range holds the request's key
   * (CockroachDB's Store.Send does the same). Meta2 is written by a split's
   * driver AFTER the split applied (split.ts step 3), so a router may be sent
   * by a stale record [a, c) to the left half [a, b) for a key of [b, c): the
   * left half's own descriptor alone leaves the router only that stale
   * record to look up again, until the driver's meta2 write lands (seconds at
   * load; never, if the driver died). The right half was created on these
   * same stores by the same command, so naming it here routes the retry.
   * The addressed replica's descriptor stays first (dist-sender.ts reads it
   * to tell a lagging replica). Error path only: a scan of the replicas.
   */
  private withKeyHolder(e: RangeKeyMismatchError): RangeKeyMismatchError {
    const addr = isLocal(e.key) ? addressOf(e.key) : e.key;
    for (const r of this.replicas.values()) {
      if (!r.initialized || r.stopped) continue;
      const d = r.desc;
      if (compareBytes(d.startKey, addr) > 0 || compareBytes(addr, d.endKey) >= 0) continue;
      if (e.descriptors.some((x) => x.rangeId === d.rangeId && x.generation >= d.generation)) return e;
      return new RangeKeyMismatchError(e.key, e.endKey, [...e.descriptors, d]);
    }
    return e;
  }

  /**
   * The synchronous head of send(): a batch of point reads the range's
   * leaseholder here answers at once (Replica.sendReadsFast), else null and
   * nothing served — the caller goes on with send(ba, true).
   */
  sendReadsFast(ba: BatchRequest): BatchResponse | null {
    if (this.stopped) return null;
    const r = this.replicas.get(ba.header.rangeId);
    if (r === undefined || (ba.header.replicaId !== undefined && ba.header.replicaId !== 0 && ba.header.replicaId !== r.replicaId)) return null;
    if (ba.header.txn === undefined) return r.sendReadsFast(ba);
    const nodeId = this.ident.nodeId;
    const now = this.clock.now();
    const res = r.sendReadsFast(withObservedAt(ba, nodeId, now));
    return res === null ? null : answeredAt(res, nodeId, now);
  }

  /** Admin: moves the lease of rangeId (held here) to the replica targetReplicaId. */
  transferLease(rangeId: number, targetReplicaId: number): Promise<void> {
    const r = this.replicas.get(rangeId);
    if (r === undefined) return Promise.reject(new RangeNotFoundError(rangeId, this.ident.storeId));
    return r.transferLease(targetReplicaId);
  }

  /** The checksum this store's replica computed for ComputeChecksum `checksumId` (waits until applied). */
  checksum(rangeId: number, checksumId: number): Promise<string> {
    const r = this.replicas.get(rangeId);
    if (r === undefined) return Promise.reject(new RangeNotFoundError(rangeId, this.ident.storeId));
    return r.checksum(checksumId);
  }

  /**
   * A removed replica's data is about to be cleared (clearReplicaData): until
   * endClear, no placeholder of the range is created and its messages are
   * dropped; an uninitialized placeholder already there is dropped now (it
   * was created from the state being deleted).
   */
  beginClear(rangeId: number): void {
    this.clearing.add(rangeId);
    if (this.replicas.get(rangeId)?.initialized === false) this.removeReplica(rangeId);
  }

  endClear(rangeId: number): void {
    this.clearing.delete(rangeId);
  }

  /**
   * Drops uninitialized placeholders that have heard nothing from their
   * range for PLACEHOLDER_IDLE_ELECTIONS election timeouts (a learner whose
   * addition was abandoned, a stale message that got past the tombstone
   * check): nothing else ever removes them, and they count as replicas. Their
   * Raft hard state stays on disk, so one re-created later keeps its vote.
   */
  private dropIdlePlaceholders(): void {
    const limit = this.settings.electionTicks * PLACEHOLDER_IDLE_ELECTIONS;
    for (const r of this.replicas.values()) {
      if (r.initialized) {
        this.placeholderIdle.delete(r.rangeId);
        continue;
      }
      const idle = (this.placeholderIdle.get(r.rangeId) ?? 0) + 1;
      this.placeholderIdle.set(r.rangeId, idle);
      if (idle > limit && !this.creating.has(r.rangeId) && !this.incomingSnapshots.has(r.rangeId)) {
        this.placeholderIdle.delete(r.rangeId);
        this.removeReplica(r.rangeId);
      }
    }
  }

  /**
   * One logical clock tick for every replica (Raft timeouts, leases, re-proposals, queues).
   * Messages replicas send during it (the quiescing heartbeats of every range
   * that goes idle on this tick) leave as one batch per destination store.
   */
  tick(): void {
    if (this.stopped) return;
    this.ticks++;
    const byNode = (this.tickSends = new Map());
    try {
      for (const r of this.replicas.values()) r.tick();
    } finally {
      this.tickSends = null;
    }
    this.flush(byNode);
    this.dropIdlePlaceholders();
    if (this.ticks % this.settings.truncationIntervalTicks === 0) this.runTruncationQueue();
  }

  /** Stops serving: pending commands answer ambiguous; waits for the loop's current round. Does not close the engine. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const r of this.replicas.values()) r.stop();
    while (this.loop !== null || this.fastApply !== null) await (this.loop ?? this.fastApply);
  }

  // ---- incoming Raft traffic -----------------------------------------------------------

  handleRaftMessages(b: RaftMessageBatch): void {
    if (this.stopped) return;
    for (const m of b.messages) {
      if (this.installing.has(m.rangeId) || this.clearing.has(m.rangeId)) continue;
      const r = this.replicas.get(m.rangeId);
      if (r === undefined) {
        if (!this.isStaleForRemoved(m)) void this.createUninitialized(b, m);
        continue;
      }
      // Addressed to an older replica of ours (removed and re-added since): stale.
      if (m.toReplicaId < r.replicaId) continue;
      if (m.toReplicaId > r.replicaId) {
        // Replica ids are never reused: ours was removed from the range (it
        // may never have learned it) and the range came back with a new id
        // (replica-change.ts). Drop the stale one and its data first.
        if (this.creating.has(m.rangeId)) continue;
        this.creating.add(m.rangeId);
        this.removeReplica(m.rangeId);
        void clearReplicaData(this, r.desc, r.initialized, r.replicaId + 1)
          .finally(() => this.creating.delete(m.rangeId))
          .then(() => this.createUninitialized(b, m));
        continue;
      }
      r.notePeer(m.fromReplicaId, b.fromNodeId, b.fromStoreId);
      if (!r.initialized) this.placeholderIdle.set(m.rangeId, 0);
      r.stepMessage(m.message, m.quiesce);
    }
  }

  /**
   * A message for a range we have no replica of that must not create one:
   * its replica id is below the range tombstone (our replica was removed or
   * merged away: range-tombstone.ts), or it is a heartbeat with a commit
   * index — a leader never tells a replica it has no match for (an empty one)
   * to commit anything, so such a heartbeat is for a replica that existed
   * here, and an empty log could not take the commit.
   */
  private isStaleForRemoved(m: RaftMessageRequest): boolean {
    if (m.message.type === MessageType.MsgHeartbeat && m.message.commit > 0) return true;
    return m.toReplicaId < readRangeTombstone(this.engine, m.rangeId);
  }

  /**
   * A message for a range we have no replica of: a replica being added.
   * Create it empty (it waits for a snapshot) and step the message.
   */
  private async createUninitialized(b: RaftMessageBatch, m: RaftMessageRequest): Promise<void> {
    if (this.creating.has(m.rangeId) || m.message.type === MessageType.MsgHeartbeatResp) return;
    if (this.isStaleForRemoved(m)) return;
    this.creating.add(m.rangeId);
    try {
      const r = await Replica.uninitialized(this, m.rangeId, m.toReplicaId);
      if (this.stopped || this.replicas.has(m.rangeId) || this.installing.has(m.rangeId) || this.clearing.has(m.rangeId) || this.isStaleForRemoved(m)) return;
      this.replicas.set(m.rangeId, r);
      r.notePeer(m.fromReplicaId, b.fromNodeId, b.fromStoreId);
      r.stepMessage(m.message, m.quiesce);
    } finally {
      this.creating.delete(m.rangeId);
    }
  }

  handleSnapshotChunk(c: ReturnType<typeof decodeSnapshotChunk>): void {
    if (this.stopped) throw new StoreStoppedError(this.ident.storeId);
    const key = `${c.fromNodeId}/${c.snapId}`;
    let kvs = this.chunks.get(key);
    if (kvs === undefined) {
      kvs = [];
      this.chunks.set(key, kvs);
    }
    for (const kv of c.kvs) kvs.push(kv);
    if (c.final === null) return;
    this.chunks.delete(key);
    const m = c.final.messages[0];
    assert(m !== undefined && m.message.snapshot !== null, 'kv: final snapshot chunk without MsgSnap');
    const r = this.replicas.get(m.rangeId);
    if (r === undefined) throw new RangeNotFoundError(m.rangeId, this.ident.storeId);
    if (!r.initialized) this.acceptSnapshot(r.rangeId, kvs);
    r.notePeer(m.fromReplicaId, c.fromNodeId, c.final.fromStoreId);
    this.incomingSnapshots.set(m.rangeId, { key: snapshotKey(m.message.snapshot.data), kvs });
    r.stepMessage(m.message, false);
  }

  /**
   * Refuses (SnapshotOverlapError, retryable: the sender tries again later) a
   * snapshot that would initialize range `rangeId` here over keys another
   * initialized replica on this store still covers — see the header, "New
   * replicas".
   */
  private acceptSnapshot(rangeId: number, kvs: readonly KeyValue[]): void {
    const desc = snapshotDescriptor(kvs);
    assert(desc !== null, `kv: r${rangeId} snapshot carries no range descriptor`);
    for (const other of this.replicas.values()) {
      if (other.rangeId === rangeId || !other.initialized) continue;
      const o = other.desc;
      if (compareBytes(o.startKey, desc.endKey) >= 0 || compareBytes(desc.startKey, o.endKey) >= 0) continue;
      this.metrics.snapshotsRefused++;
      throw new SnapshotOverlapError(rangeId, other.rangeId, this.ident.storeId);
    }
  }

  // ---- the Ready loop ----------------------------------------------------------------------

  private startLoop(): void {
    if (this.loop !== null || this.stopped) return;
    this.loop = this.runLoop()
      .catch((e: unknown) => {
        this.log.error({ err: (e as Error).message }, 'kv: Ready loop failed');
        throw e;
      })
      .finally(() => {
        this.loop = null;
        if (this.dirty.size > 0 && !this.stopped) this.enqueueReady(this.dirty.values().next().value as Replica);
      });
  }

  private async runLoop(): Promise<void> {
    while (this.dirty.size > 0 && !this.stopped) {
      // A fast apply pass still writing: its entries precede whatever the next Ready hands out.
      if (this.fastApply !== null) await this.fastApply;
      const rounds: { r: Replica; rd: Ready }[] = [];
      for (const r of this.dirty) {
        if (r.stopped) continue;
        r.flushProposals();
        if (r.raw.hasReady()) rounds.push({ r, rd: r.raw.ready() });
      }
      this.dirty.clear();
      if (rounds.length === 0) return;
      await this.processRound(rounds);
    }
  }

  private async processRound(rounds: { r: Replica; rd: Ready }[]): Promise<void> {
    this.metrics.readyRounds++;
    // 1. Persist: one batch, one sync.
    const wb = this.engine.newBatch();
    let sync = false;
    const descKeys = new Map<Replica, Buffer>();
    for (const { r, rd } of rounds) {
      if (rd.snapshot !== null && !isEmptySnap(rd.snapshot)) descKeys.set(r, await this.stageSnapshot(wb, r, rd.snapshot));
      r.storage.stageAppend(wb, rd.entries);
      if (rd.hardState !== null) r.storage.stageHardState(wb, rd.hardState);
      sync ||= rd.mustSync;
    }
    // 1b. Meanwhile, apply the committed entries that were already durable
    // here before this round (committed entries are final, so those need not
    // wait for this round's fsync): their clients are answered one fsync
    // sooner. Entries appended by this very Ready (a single-replica range
    // commits on append) and everything after a snapshot wait for step 3.
    //
    // Not in a round that installs a snapshot or persists an uninitialized
    // replica's Raft state: a split trigger staged early would judge the
    // right-hand replica by its state before this round (an uninitialized
    // one about to be initialized by the snapshot), and its batch would race
    // this round's write of the same range's keys (two engine writes in
    // flight have no order): a snapshot's frozen lease overwritten by the
    // split's copy crashed a later merge ("merges r225 into r223 before its
    // replica froze"); a placeholder's hard state could erase the split's
    // commit index.
    const earlyOk = this.settings.applyDurableEarly && descKeys.size === 0 && rounds.every(({ r }) => r.initialized);
    let early = this.engine.newBatch();
    const earlyApplies: { r: Replica; fx: ApplyEffects }[] = [];
    const late: { r: Replica; entries: Entry[] }[] = [];
    for (const { r, rd } of rounds) {
      const ents = rd.committedEntries;
      if (ents.length === 0) continue;
      const durable = earlyOk ? r.storage.lastIndex() : 0;
      let n = 0;
      while (n < ents.length && (ents[n] as Entry).index <= durable) n++;
      if (n > 0) {
        const fx = newApplyEffects();
        early = await this.stageApplyAt(early, r, n === ents.length ? ents : ents.slice(0, n), fx);
        earlyApplies.push({ r, fx });
      }
      if (n < ents.length) late.push({ r, entries: n === 0 ? ents : ents.slice(n) });
    }
    // 1c. A leader's appends leave before its own fsync (Raft thesis §10.2.1;
    // etcd/raft: messages may be sent while the same Ready's entries are being
    // persisted; CockroachDB sends MsgApps first): followers persist in
    // parallel with the leader, so a write waits for one fsync instead of two
    // in series. Only MsgApp, and only from a Ready that installs no snapshot
    // and changes no term or vote (those must be durable before anything is
    // said). The leader counts its own entries at append time, but a commit
    // the followers' acks produce leaves only in a later round, which starts
    // after this round's sync — nothing is acknowledged on a non-durable copy.
    //
    // Every MsgApp sent before the leader's own copy is durable announces no
    // commit above its durable last index (splitAppendForDurability; the
    // commit-only remainder goes after the sync): with appends sent during
    // the sync, followers may acknowledge entries this very round persists,
    // and a commit standing on the leader's non-durable copy must not reach
    // a follower that would apply it.
    let rest: Map<Replica, Message[]> | undefined;
    let held: Set<Replica> | null = null;
    if (this.settings.sendAppendsBeforeSync) {
      const early = new Map<number, RaftMessageRequest[]>();
      const defer = this.settings.deferCommitOnlyAppends;
      if (defer) this.roundAppends = new Map();
      held = new Set();
      for (const { r, rd } of rounds) {
        if (!rd.messages.some((m) => m.type === MessageType.MsgApp)) continue;
        const hs = rd.hardState;
        if (descKeys.has(r) || (rd.snapshot !== null && !isEmptySnap(rd.snapshot)) || (hs !== null && (hs.term !== r.storage.hardState.term || hs.vote !== r.storage.hardState.vote))) {
          held.add(r);
          continue;
        }
        const durable = r.storage.lastIndex();
        const now: Message[] = [];
        const after: Message[] = [];
        for (const m of rd.messages) {
          if (m.type !== MessageType.MsgApp || (defer && m.entries.length === 0 && m.snapshot === null)) {
            after.push(m);
            continue;
          }
          const s = splitAppendForDurability(m, durable);
          if (s.now !== null) now.push(s.now);
          if (s.later !== null) after.push(s.later);
        }
        this.route(r, now, false, early);
        if (defer) this.noteRoundAppends(r, now);
        (rest ??= new Map()).set(r, after);
      }
      this.flush(early);
    }
    // The early applies are their own unsynced write, issued before the round's synced one: it enters LevelDB's
    // writer queue first and completes (releasing their commands' latches in finishApply) without waiting for this
    // round's fsync — a write queued behind a synced one waits for its fsync (level-engine.ts "Synced writes";
    // before session 6 they rode in the synced write, completing after the fsync). Their commands' clients
    // were answered when they were staged (Replica: acknowledgement at commit); the applied entries were
    // durable before this round, and nothing of this round's Raft state shares a key with them (appends lie
    // above the commit index, truncations below it), so the two writes need no order.
    const earlyWritten = !early.isEmpty() ? this.engine.write(early, { sync: false }) : null;
    const persisted = wb.isEmpty() ? null : this.engine.write(wb, { sync });
    const earlyDone = (async () => {
      if (earlyWritten !== null) await earlyWritten;
      else if (earlyApplies.length > 0 && persisted !== null) await persisted;
      for (const { r, fx } of earlyApplies) r.finishApply(fx, () => this.engine.snapshot());
    })();
    if (persisted !== null && earlyOk && sync) {
      this.syncing = new Set(late.map((l) => l.r));
      this.earlyDone = earlyDone;
      if (held !== null && this.settings.sendAppendsDuringSync) this.appendsHeld = held;
      if (this.dirty.size > 0) {
        this.sendAppendsDuringSync();
        this.startFastApply();
      }
    }
    try {
      await earlyDone;
      if (persisted !== null) {
        await persisted;
        if (sync) this.metrics.syncs++;
      }
    } finally {
      this.syncing = null;
      this.appendsHeld = null;
      this.earlyDone = null;
    }
    for (const { r, rd } of rounds) {
      const descKey = descKeys.get(r);
      if (rd.snapshot !== null && descKey !== undefined) {
        const desc = (await mvccGet(this.engine, descKey, MAX_TIMESTAMP, { inconsistent: true })).value?.value;
        assert(desc != null, `kv: r${r.rangeId} snapshot's descriptor vanished`);
        r.reloadAfterSnapshot(rd.snapshot.metadata.index, rd.snapshot.metadata.term, decodeRangeDescriptor(desc));
        this.metrics.snapshotsApplied++;
      }
      r.storage.commitAppend(rd.entries);
      if (rd.hardState !== null) r.storage.commitHardState(rd.hardState);
    }
    // 2. Send, coalesced per destination node.
    const byNode = new Map<number, RaftMessageRequest[]>();
    const sent = this.roundAppends;
    this.roundAppends = null;
    for (const { r, rd } of rounds) this.route(r, rest?.get(r) ?? rd.messages, false, byNode, sent === null ? null : (sent.get(r) ?? []));
    this.flush(byNode);
    // 3. Apply the rest: one batch for every replica's remaining committed commands.
    let ab = this.engine.newBatch();
    const applies: { r: Replica; fx: ApplyEffects }[] = [];
    for (const { r, entries } of late) {
      const fx = newApplyEffects();
      ab = await this.stageApplyAt(ab, r, entries, fx);
      applies.push({ r, fx });
    }
    if (!ab.isEmpty()) await this.engine.write(ab, { sync: false });
    for (const { r, fx } of applies) r.finishApply(fx, () => this.engine.snapshot());
    // 4. Advance.
    for (const { r, rd } of rounds) {
      r.raw.advance(rd);
      if (rd.softState !== null && !r.stopped) r.onLeaderChange();
      if (r.raw.hasReady()) this.dirty.add(r);
    }
  }

  /**
   * Appends during the sync (see the header): each dirty leader proposes the
   * commands buffered since the round began and sends the MsgApps that carry
   * them (RawNode.takeAppends) now, not after the round's sync. Synchronous.
   */
  private sendAppendsDuringSync(): void {
    const held = this.appendsHeld;
    if (held === null || this.stopped) return;
    let byNode: Map<number, RaftMessageRequest[]> | null = null;
    for (const r of this.dirty) {
      if (r.stopped || !r.initialized || held.has(r) || !r.isLeader()) continue;
      r.flushProposals();
      const hs = r.storage.hardState;
      const msgs = r.raw.takeAppends({ lastIndex: r.storage.lastIndex(), term: hs.term, vote: hs.vote });
      if (msgs.length === 0) continue;
      this.metrics.appendsDuringSync += msgs.length;
      this.route(r, msgs, false, (byNode ??= new Map()));
      this.noteRoundAppends(r, msgs);
    }
    if (byNode !== null) this.flush(byNode);
  }

  /**
   * The fast apply pass (see the header): applies the commits that arrived
   * during the current round's sync, for the replicas allowed to.
   */
  private startFastApply(): void {
    const barred = this.syncing;
    const before = this.earlyDone;
    if (barred === null || this.fastApply !== null || this.stopped) return;
    const takers: Replica[] = [];
    for (const r of this.dirty) {
      if (!r.stopped && r.initialized && !barred.has(r) && r.raw.hasCommittedEntriesUpTo(r.storage.lastIndex())) takers.push(r);
    }
    if (takers.length === 0) return;
    this.fastApply = this.runFastApply(takers, before)
      .catch((e: unknown) => {
        this.log.error({ err: (e as Error).message }, 'kv: fast apply failed');
        throw e;
      })
      .finally(() => {
        this.fastApply = null;
        // Commits that arrived during this pass, while the sync is still in flight.
        if (this.syncing !== null) this.startFastApply();
      });
  }

  private async runFastApply(takers: readonly Replica[], before: Promise<void> | null): Promise<void> {
    this.metrics.fastApplies++;
    let b = this.engine.newBatch();
    const applies: { r: Replica; fx: ApplyEffects; ents: Entry[] }[] = [];
    for (const r of takers) {
      const ents = r.raw.takeCommittedEntries(r.storage.lastIndex());
      if (ents.length === 0) continue;
      const fx = newApplyEffects();
      b = await this.stageApplyAt(b, r, ents, fx);
      applies.push({ r, fx, ents });
    }
    if (!b.isEmpty()) await this.engine.write(b, { sync: false });
    if (before !== null) await before;
    for (const { r, fx, ents } of applies) {
      r.finishApply(fx, () => this.engine.snapshot());
      r.raw.appliedEntries(ents);
    }
  }

  /**
   * Stages `entries` of `r` into `b`. A ComputeChecksum command followed by
   * more entries cuts the batch: what is staged so far is written and the
   * engine snapshotted right there, so every replica hashes the state at the
   * command's own apply position (never a later entry of the same round).
   * Returns the batch to continue staging into.
   */
  private async stageApplyAt(b: WriteBatch, r: Replica, entries: readonly Entry[], fx: ApplyEffects): Promise<WriteBatch> {
    let rest = entries;
    for (;;) {
      const n = r.stageApply(b, rest, fx);
      if (n >= rest.length) return b;
      await this.engine.write(b, { sync: false });
      (fx.checksums[fx.checksums.length - 1] as { snap: EngineSnapshot | null }).snap = this.engine.snapshot();
      b = this.engine.newBatch();
      rest = rest.slice(n);
    }
  }

  /** Records the appends with entries `r` sent in the current round (deferCommitOnlyAppends; no-op outside a round). */
  private noteRoundAppends(r: Replica, msgs: readonly Message[]): void {
    const round = this.roundAppends;
    if (round === null) return;
    for (const m of msgs) {
      if (m.type !== MessageType.MsgApp || m.entries.length === 0) continue;
      let list = round.get(r);
      if (list === undefined) {
        list = [];
        round.set(r, list);
      }
      list.push(m);
    }
  }

  /**
   * Groups messages by destination node; MsgSnap goes to the snapshot sender.
   * `sent` (a post-sync batch with deferred commit-only appends): the appends
   * `r` sent earlier in the round — an empty MsgApp one of them or a later
   * message of `msgs` makes redundant is left out (see the header).
   */
  private route(r: Replica, msgs: readonly Message[], quiesce: boolean, byNode: Map<number, RaftMessageRequest[]>, sent: readonly Message[] | null = null): void {
    for (let i = 0; i < msgs.length; i++) {
      const m = msgs[i] as Message;
      if (this.settings.elideRedundantRaftMessages && (isSupersededInReady(msgs, i) || (sent !== null && deferredAppendSuperseded(msgs, i, sent)))) {
        this.metrics.raftMessagesElided++;
        continue;
      }
      const to = r.replicaDescriptor(m.to);
      if (to === undefined) continue;
      if (m.type === MessageType.MsgSnap) {
        void this.sendSnapshot(r, m, to.nodeId, to.storeId);
        continue;
      }
      let list = byNode.get(to.nodeId);
      if (list === undefined) {
        list = [];
        byNode.set(to.nodeId, list);
      }
      list.push({ rangeId: r.rangeId, fromReplicaId: r.replicaId, toReplicaId: m.to, quiesce, message: m });
    }
  }

  private flush(byNode: Map<number, RaftMessageRequest[]>): void {
    for (const [nodeId, messages] of byNode) {
      const toStoreId = this.storeOfNode(messages[0] as RaftMessageRequest, nodeId);
      const payload = encodeRaftMessageBatch({ fromNodeId: this.ident.nodeId, fromStoreId: this.ident.storeId, toStoreId, messages });
      this.metrics.raftBatchesSent++;
      this.metrics.raftMessagesSent += messages.length;
      if (!this.transport.send(nodeId, KvMethod.RaftMessages, payload, ConnectionClass.Raft)) {
        for (const m of messages) this.replicas.get(m.rangeId)?.raw.reportUnreachable(m.toReplicaId);
      }
    }
  }

  private storeOfNode(m: RaftMessageRequest, _nodeId: number): number {
    return this.replicas.get(m.rangeId)?.replicaDescriptor(m.toReplicaId)?.storeId ?? 0;
  }

  // ---- snapshots ---------------------------------------------------------------------------

  /**
   * Streams a consistent engine snapshot of the range to the recipient in
   * chunks; the MsgSnap rides on the last chunk with its metadata re-stamped
   * from the snapshot's own applied state, so data and index agree.
   */
  private async sendSnapshot(r: Replica, m: Message, nodeId: number, storeId: number): Promise<void> {
    const snap = this.engine.snapshot(); // synchronous: consistent with the applied state right now
    const snapId = ++this.snapSeq;
    let ok = false;
    try {
      const asRaw = snap.getSync(encodeMvccKey(rangeAppliedStateKey(r.rangeId)));
      assert(asRaw !== undefined, `kv: r${r.rangeId} has no applied state to snapshot`);
      const as = decodeAppliedState(asRaw);
      const data = Buffer.alloc(12);
      data.writeUInt32BE(this.ident.nodeId, 0);
      data.writeUInt32BE(Math.floor(snapId / 2 ** 32), 4);
      data.writeUInt32BE(snapId >>> 0, 8);
      const snapshot: Snapshot = { data, metadata: { index: as.raftAppliedIndex, term: as.raftAppliedTerm, confState: confStateOf(r.desc) } };
      const msg: Message = { ...m, snapshot };
      const opts = { connectionClass: ConnectionClass.Raft, timeoutMs: 60_000 };
      let kvs: KeyValue[] = [];
      let bytes = 0;
      const sendChunk = async (final: RaftMessageBatch | null): Promise<void> => {
        await this.transport.call(nodeId, KvMethod.RaftSnapshot, encodeSnapshotChunk({ rangeId: r.rangeId, snapId, fromNodeId: this.ident.nodeId, toStoreId: storeId, kvs, final }), opts);
        this.metrics.snapshotChunksSent++;
        kvs = [];
        bytes = 0;
      };
      for (const span of replicatedEngineSpans(r.desc)) {
        const it = snap.iterator(span);
        try {
          for (;;) {
            const rows = await it.nextBatch(1024);
            if (rows.length === 0) break;
            for (const kv of rows) {
              kvs.push(kv);
              bytes += kv.key.length + kv.value.length;
              if (bytes >= this.settings.snapshotChunkBytes) await sendChunk(null);
            }
          }
        } finally {
          await it.close();
        }
      }
      const final: RaftMessageBatch = {
        fromNodeId: this.ident.nodeId,
        fromStoreId: this.ident.storeId,
        toStoreId: storeId,
        messages: [{ rangeId: r.rangeId, fromReplicaId: r.replicaId, toReplicaId: m.to, quiesce: false, message: msg }],
      };
      await sendChunk(final);
      this.metrics.snapshotsSent++;
      ok = true;
    } catch (e) {
      this.log.debug({ rangeId: r.rangeId, to: m.to, err: (e as Error).message }, 'kv: snapshot send failed');
    } finally {
      await snap.close();
      if (!r.stopped) {
        r.raw.reportSnapshot(m.to, ok);
        this.enqueueReady(r);
      }
    }
  }

  /**
   * Replaces the range's replicated data and Raft log with a received
   * snapshot (in the round's batch); returns the user key of the range
   * descriptor the snapshot carries.
   */
  private async stageSnapshot(wb: WriteBatch, r: Replica, snap: Snapshot): Promise<Buffer> {
    const pending = this.incomingSnapshots.get(r.rangeId);
    assert(pending !== undefined && pending.key === snapshotKey(snap.data), `kv: r${r.rangeId} Ready carries a snapshot whose data never arrived`);
    this.incomingSnapshots.delete(r.rangeId);
    for (const span of r.initialized ? replicatedEngineSpans(r.desc) : []) {
      const it = this.engine.iterator(span);
      try {
        for (;;) {
          const rows = await it.nextBatch(1024);
          if (rows.length === 0) break;
          for (const { key } of rows) wb.delete(key);
        }
      } finally {
        await it.close();
      }
    }
    let descKey: Buffer | null = null;
    for (const kv of pending.kvs) {
      const key = Buffer.from(kv.key);
      wb.put(key, Buffer.from(kv.value));
      descKey ??= descriptorUserKey(key);
    }
    assert(descKey !== null, `kv: r${r.rangeId} snapshot carries no range descriptor`);
    r.storage.stageSnapshot(wb, snap.metadata.index, snap.metadata.term);
    return descKey;
  }

  // ---- log truncation queue -------------------------------------------------------------------

  private runTruncationQueue(): void {
    const s = this.settings;
    for (const r of this.replicas.values()) {
      if (r.stopped || !r.isLeader() || !r.ownsValidLease()) continue;
      if (r.storage.entryCount <= s.raftLogMaxEntries && r.storage.logBytes <= s.raftLogMaxBytes) continue;
      const st = r.raw.status();
      const applied = r.applied.raftAppliedIndex;
      let index = applied;
      for (const [id, pr] of st.progress ?? []) {
        if (id !== r.replicaId && pr.recentActive) index = Math.min(index, pr.match);
      }
      if (r.storage.lastIndex() - index > s.raftLogHardMaxEntries) index = applied;
      if (index <= r.storage.truncated.index) continue;
      r.send({ header: { rangeId: r.rangeId, timestamp: { wall: 0, logical: 0 } }, requests: [{ kind: 'truncateLog', index }] }).catch(() => undefined);
    }
  }
}
