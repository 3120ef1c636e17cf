/**
 * Replica: one store's copy of one range — its descriptor, its Raft group
 * (RawNode over ReplicaRaftStorage), its applied state and lease, and the
 * request path (CockroachDB's kvserver.Replica, proposer-evaluated KV).
 *
 *   send(ba) ─► ensureLease ─► sequence: latches + lock table (a request blocked by
 *               another transaction's lock waits in the key's queue, latches
 *               released — concurrency-manager.ts)
 *            ─► evaluate ──reads──► answer from the engine
 *                                             │ writes: into a WriteBatch (+ stats delta,
 *                                             ▼         + replicated side effects)
 *                                     RaftCommand {cmdId, leaseSeq, maxLeaseIndex, repr, …}
 *                                             │ proposal buffer ─► Store Ready loop ─► Raft
 *                                             ▼
 *   every replica: stageApply(entry) — checks the command is still valid and
 *   applies repr + applied state in the store's apply batch; the proposer
 *   answers the waiting request in finishApply (locks acquired/released in
 *   the lock table, then latches released).
 *
 * Apply rules (deterministic on every replica; CockroachDB's):
 *   - a lease request/transfer applies iff the lease in force equals its
 *     prevLease;
 *   - any other command applies iff it was proposed under the lease in force
 *     (same sequence) and the lease-applied index (LAI) is below its max
 *     lease index (MLI); applying sets LAI = MLI. A re-proposed copy carries
 *     the same MLI, so at most one copy of a command ever applies.
 *   - applying a command and advancing the applied index are one engine
 *     batch (the Store writes all replicas' applies of a round together).
 *   - a lease is installed as it is staged (the apply rules of later entries
 *     need it), but a lease this replica did not hold before serves nothing
 *     until its batch is written (leaseApplying): a replica that lagged
 *     applies the previous holder's last writes in that same batch, and
 *     nothing on this node latches them — a read in between returned the
 *     values they overwrote (kvnemesis's stale read;
 *     test/kv-txn/lease-apply-engine).
 *
 * Outcomes for the client (DESIGN.md §6: unknown outcome → ambiguous):
 *   applied → its responses; a copy rejected by MLI while the command is
 *   still ours to retry → re-proposed with a new MLI (old copies can never
 *   apply); the proposal timed out, or the replica/store stopped →
 *   AmbiguousResultError; the lease it was evaluated under is gone before
 *   any copy reached Raft (it can never apply, and is in no log), or this
 *   replica APPLIED the entry that moved the lease (or a copy's rejection by
 *   the lease check) with the command still pending — in log order, so no
 *   copy came before it and none after can pass the lease check →
 *   NotLeaseHolderError (the DistSender retries at the new holder: a replica
 *   change or split whose lease moved mid-flight is not reported ambiguous;
 *   test/kv/faults, test/kv-ranges/rebalance); a snapshot
 *   whose lease applied index reached the command's MLI → AmbiguousResultError
 *   (applied inside the snapshot, or never: a re-proposal under a new MLI
 *   could apply it twice; test/kv-txn/snapshot-pending-command).
 *
 *   A timed-out request is answered ambiguous, but its command stays pending
 *   (re-proposed like any other) and the request keeps its latches until the
 *   command finishes: it applies (the lock table and the timestamp cache then
 *   learn it as any applied write's), or it is rejected for good (the lease
 *   changed, the MLI re-proposal path's own rules), or the replica stops
 *   (CockroachDB keeps a cancelled proposal's latches the same way). Releasing
 *   them at the timeout let a read on the leaseholder miss the command — no
 *   latch, no intent in the engine yet — and record its timestamp, and the
 *   command then applied below it (test/kv-txn/proposal-timeout-latches). A
 *   command that cannot reach a quorum thus holds its latches until it can
 *   (or its lease moves); lease requests, which answer nobody else, are still
 *   abandoned at the timeout.
 *
 * Proposal buffer (CockroachDB's propBuf): a command is not handed to Raft
 * at evaluation but queued; the Store's Ready round hands the queue to Raft
 * as ONE proposal (flushProposals), in max-lease-index order. If Raft drops
 * it (no leader, a leadership transfer, the uncommitted-size limit), nothing
 * of it entered any log and every command of it stays pending — an
 * async-consensus write among them was answered already, so failing it
 * would lose an acknowledged write (f99abb9) — and is proposed again at
 * the next leader change, or the next tick that knows a leader.
 *
 * Re-proposal: a pending command is proposed again (same bytes, same MLI)
 * when the Raft leader changes and every `reproposalTicks` ticks until it
 * applies; after `proposalTimeoutTicks` its client is answered ambiguous
 * (see "Outcomes": the command stays pending). So a pending command always
 * has a proposal in flight or queued, until it finishes.
 *
 * Async consensus (write pipelining, api.ts "Async consensus"): a
 * transactional batch of point intent writes (and QueryIntents) flagged
 * asyncConsensus is answered as soon as its command is handed to Raft; the
 * rest of its request — the lock table learning its intents, the timestamp
 * cache, releasing its latches — runs when it applies (or fails), so
 * conflicting requests keep serializing behind it. A command that never
 * applies was never acknowledged as durable: the coordinator's QueryIntent
 * finds its intents missing.
 *
 * Acknowledgement at commit (CockroachDB's early acknowledgement of
 * committed entries): any other write without replicated side effects is
 * answered as soon as its entry is staged for application and passes the
 * apply checks (lease, MLI) — the entry is committed and durable on a
 * quorum, the checks are deterministic, so every replica will apply it —
 * not after the apply batch is written (with LevelDB that write queues
 * behind the Store's next fsync). Its latches, like async consensus's, are
 * held until it applies, when the lock table and timestamp cache learn it:
 * nothing can read the range's engine under it before the write is there.
 *
 * Testing knobs (replicaTestingKnobs, CockroachDB's TestingProposalFilter /
 * TestingApplyFilter): a proposal filter that holds a command back from Raft
 * or loses it, and an apply hook. Unset in production.
 *
 * Quiescence: a leader with nothing in flight whose followers are all caught
 * up (RawNode.status().quiescable) sends each follower a quiescing heartbeat
 * and stops ticking; followers stop on receiving it. Any proposal, request
 * or non-quiescing message wakes the replica.
 *
 * Ownership: the Store creates, ticks and feeds replicas; only the Store's
 * Ready loop calls stageApply/finishApply. Reads never go through Raft.
 */
import { assert } from '../util/assert.js';
import { AmbiguousResultError, CairnError } from '../util/errors.js';
import { MAX_TIMESTAMP, ZERO_TIMESTAMP, compareTimestamps, tsLess, tsLessEq, tsMax, type Clock, type Timestamp } from '../util/hlc.js';
import type { Logger } from '../util/log.js';
import type { Prng } from '../util/prng.js';
import { forEachBatchReprOp, type Engine, type Snapshot as EngineSnapshot, type WriteBatch } from '../../storage/engine.js';
import { addressOf, isLocal, rangeAppliedStateKey, rangeGCThresholdKey, rangeLeaseKey, KEY_MAX, KEY_MIN, LOCAL_RANGE_ID_PREFIX, LOCAL_STORE_PREFIX } from '../../storage/keys.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { WriteIntentError, mvccGetSync } from '../../storage/mvcc.js';
import { addStats, emptyStats } from '../../storage/mvcc-stats.js';
import { hasPrefix, compareBytes } from '../../storage/encoding/bytes.js';
import { RawNode } from '../../raft/raw-node.js';
import { decodeConfChange } from '../../raft/conf-change-codec.js';
import { EntryType, MessageType, NONE, ProposalDroppedError, StateType, newMessage, type ConfState, type Entry, type Message } from '../../raft/types.js';
import {
  BatchTimestampBeforeGCError,
  ClockUnhealthyError,
  NotLeaseHolderError,
  RangeKeyMismatchError,
  RangeNotFoundError,
  isWriteRequest,
  leaseEqual,
  replicaOf,
  replicaOnStore,
  type BatchHeader,
  type BatchRequest,
  type BatchResponse,
  type GetRequest,
  type Lease,
  type RangeAppliedState,
  type RangeDescriptor,
  type ReplicaDescriptor,
  type Request,
  type RequestLeaseRequest,
  type Response,
  type StoreIdent,
  type TransferLeaseRequest,
  type TruncatedState,
} from './api.js';
import { decodeAppliedState, decodeLease, decodeRaftCommand, decodeTimestamp, encodeAppliedState, encodeRaftCommand, type RaftCommand } from './api-codec.js';
import { lookupCommand, type DeclaredSpan, type EvalContext, type EvalHeader, type SideEffectsBuilder } from './batcheval/index.js';
import { readOptions } from './batcheval/command-util.js';
import { ReplicaConcurrency } from './concurrency-manager.js';
import { LatchWaitCancelledError } from './concurrency/latch-manager.js';
import { nextLease, ownsValidLease, leaseState, shouldRenew, transferredLease } from './replica-lease.js';
import { ReplicaRaftStorage } from './raft-storage.js';
import { computeRangeChecksum } from './replica-consistency.js';
import { canary } from './canary.js';
import { UncertaintyGuard, localUncertaintyLimit, observedTimestampOf } from './uncertainty.js';
import type { KvSettings } from './settings.js';
import { evaluateWriteBatch } from './one-phase-commit.js';

/** What a replica needs from its store. */
export interface StoreContext {
  readonly clock: Clock;
  readonly engine: Engine;
  readonly ident: StoreIdent;
  readonly settings: KvSettings;
  readonly prng: Prng;
  readonly log: Logger;
  /** The replica has Raft work (a proposal, a step, a tick): run the Ready loop soon. */
  enqueueReady(r: Replica): void;
  /** Sends messages outside a Ready (quiescing heartbeats). */
  sendRaftMessages(r: Replica, msgs: readonly Message[], quiesce: boolean): void;
  /** A new lease applied on this replica (the timestamp-cache hook). */
  leaseApplied(r: Replica, lease: Lease, prev: Lease | null): void;
  /** A store-unique, cluster-wide random command id. */
  nextCmdId(): number;
  /**
   * A descriptor-changing trigger (split-trigger.ts) is applying on r: stage
   * its per-store effects into the apply batch (same batch as the command).
   */
  stageTrigger(r: Replica, batch: WriteBatch, trigger: Buffer, repr: Buffer): void;
  /** The apply batch holding the trigger is durable: create/remove replicas. */
  finishTrigger(r: Replica, trigger: Buffer): void;
  readonly metrics: { proposals: number; reproposals: number; proposalBatchesDropped: number; appliedCommands: number; rejectedCommands: number };
  /** False while this node's clock is out of bounds against its peers: replicas then neither serve nor take leases (DESIGN.md §6). */
  clockHealthy(): boolean;
}

interface Proposal {
  readonly cmdId: number;
  cmd: RaftCommand;
  data: Buffer;
  ticks: number;
  age: number;
  readonly responses: Response[];
  readonly timestamp: Timestamp;
  readonly resolve: (r: BatchResponse) => void;
  readonly reject: (e: Error) => void;
  /** Acknowledgement at commit (see the header): called when the command is staged for application and passes. */
  committed?: (r: BatchResponse) => void;
  /** Queued in the proposal buffer. */
  buffered?: boolean;
  /** Some copy was handed to Raft (may be in a log); until then a drop or a lease change leaves it in none. */
  proposed?: boolean;
  /** Raft dropped the last batch holding it: proposed again at the next tick that knows a leader. */
  dropped?: boolean;
  /**
   * Answers the client ambiguous at the proposal timeout while the command
   * stays pending (its request's latches are held until it finishes; see the
   * header's "Outcomes"); null once called. Unset for commands whose caller
   * cannot outlive its answer (lease requests): those are abandoned at the timeout.
   */
  timedOut?: ((e: AmbiguousResultError) => void) | null;
}

/** Deferred effects of one round's applies, run once the apply batch is durable. */
export interface ApplyEffects {
  readonly done: { p: Proposal; error: Error | null }[];
  truncation: TruncatedState | null;
  /**
   * ComputeChecksum commands applied, each with the engine snapshot taken
   * right after its own entry was written (null: take it once the round's
   * batch is durable — the command was the replica's last entry of it).
   */
  readonly checksums: { id: number; snap: EngineSnapshot | null }[];
  readonly leases: { lease: Lease; prev: Lease | null }[];
  /** Descriptor-changing triggers applied this round (split-trigger.ts). */
  readonly triggers: Buffer[];
}

/** The Raft configuration a descriptor stands for; joint while it has incoming/outgoing voters (types 2/3, replica-change.ts). */
export function confStateOf(desc: RangeDescriptor): ConfState {
  const joint = desc.replicas.some((r) => r.type === 2 || r.type === 3);
  return {
    voters: desc.replicas.filter((r) => r.type === 0 || r.type === 2).map((r) => r.replicaId),
    learners: desc.replicas.filter((r) => r.type === 1).map((r) => r.replicaId),
    votersOutgoing: joint ? desc.replicas.filter((r) => r.type === 0 || r.type === 3).map((r) => r.replicaId) : [],
    learnersNext: [],
    autoLeave: false,
  };
}

const UNSUPPORTED_FROM_CLIENT = new Set(['requestLease', 'transferLease']);

/**
 * How long a lease transfer waits for the requests in flight under the
 * outgoing lease before it goes without a read summary (flushForTransfer).
 */
const TRANSFER_FLUSH_MS = 1_000;

/** A command whose application changes nothing but the engine and the stats (no lease, truncation, checksum, trigger). */
function noSideEffects(se: SideEffectsBuilder): boolean {
  return se.newLease === undefined && se.truncatedState === undefined && se.checksumId === undefined && se.trigger === undefined && se.gcThreshold === undefined;
}

/**
 * The requests whose timestamp the GC threshold bounds (CockroachDB's
 * checkTSAboveGCThreshold): clients' MVCC reads and writes and refreshes.
 * Not intent resolution, records, leases, admin or GC commands: resolving an
 * old transaction's intents must go on after its history was collected.
 */
const GC_CHECKED_KINDS: ReadonlySet<string> = new Set(['get', 'scan', 'reverseScan', 'put', 'cput', 'delete', 'deleteRange', 'refresh', 'refreshRange']);

/** The oldest timestamp a batch reads or writes at, for the GC threshold check (null: none of its requests is bounded). */
function earliestActiveTimestamp(ts: Timestamp, reqs: readonly Request[]): Timestamp | null {
  let out: Timestamp | null = null;
  for (const q of reqs) {
    if (!GC_CHECKED_KINDS.has(q.kind)) continue;
    // A refresh checks (refreshFrom, ts]: a tombstone collected in there would let it pass wrongly.
    const at = q.kind === 'refresh' || q.kind === 'refreshRange' ? q.refreshFrom : ts;
    if (out === null || tsLess(at, out)) out = at;
  }
  return out;
}

/** The requests a batch served with async consensus may hold (api.ts BatchHeader.asyncConsensus). */
const ASYNC_CONSENSUS_KINDS: ReadonlySet<string> = new Set(['put', 'cput', 'delete', 'queryIntent']);

/** Whether a batch may be answered before its command applies (else the flag is ignored). */
export function canUseAsyncConsensus(ba: BatchRequest, reqs: readonly Request[]): boolean {
  if (ba.header.asyncConsensus !== true || ba.header.txn === undefined) return false;
  let writes = 0;
  for (const q of reqs) {
    if (!ASYNC_CONSENSUS_KINDS.has(q.kind)) return false;
    if (q.kind !== 'queryIntent') writes++;
  }
  return writes > 0;
}

/**
 * Write pipelining at commit: an EndTxn's in-flight write whose QueryIntent
 * (errorIfMissing, same transaction and epoch) travels in the same batch is
 * proven in the record's own Raft command — the query waits for the write's
 * latches, so it reads the applied write, and its failure fails the EndTxn
 * with it — so the write leaves the list. A commit whose earlier writes were
 * all on this range thereby commits at once (no STAGING record). Decided by
 * batch membership, as rewriteBatch decides for the batch's own writes.
 */
export function dropProvenInFlightWrites(reqs: readonly Request[], txn: BatchHeader['txn']): readonly Request[] {
  let end = -1;
  for (let i = 0; i < reqs.length; i++) if ((reqs[i] as Request).kind === 'endTxn') end = i;
  if (end < 0 || txn === undefined) return reqs;
  const q = reqs[end] as Extract<Request, { kind: 'endTxn' }>;
  if (q.inFlightWrites.length === 0) return reqs;
  const proven = new Set<string>();
  for (const r of reqs) if (r.kind === 'queryIntent' && r.errorIfMissing && r.epoch === txn.epoch && r.txnId.equals(txn.id)) proven.add(`${r.seq}:${r.key.toString('latin1')}`);
  if (proven.size === 0) return reqs;
  const rest = q.inFlightWrites.filter((w) => !proven.has(`${w.seq}:${w.key.toString('latin1')}`));
  if (rest.length === q.inFlightWrites.length) return reqs;
  const out = [...reqs];
  out[end] = { ...q, inFlightWrites: rest };
  return out;
}

/** Orders a batch's commands by max lease index in place, leaving lease requests (no MLI) where they are. */
function sortByMaxLeaseIndex(batch: Proposal[]): void {
  const slots: number[] = [];
  const cmds: Proposal[] = [];
  for (let k = 0; k < batch.length; k++) {
    const p = batch[k] as Proposal;
    if (p.cmd.isLeaseRequest) continue;
    slots.push(k);
    cmds.push(p);
  }
  cmds.sort((a, b) => a.cmd.maxLeaseIndex - b.cmd.maxLeaseIndex);
  for (let k = 0; k < slots.length; k++) batch[slots[k] as number] = cmds[k] as Proposal;
}

/**
 * Test-only hooks; never set in production. proposalFilter runs before a
 * client command (never a lease request) is handed to Raft, on its first
 * proposal and every re-proposal: 'hold' keeps it pending without proposing
 * it (the next re-proposal asks again), 'drop' loses it — never proposed, it
 * answers ambiguous on the next tick (an async-consensus client was answered
 * already). onApply runs as a command applies on a replica.
 */
export interface ReplicaTestingKnobs {
  proposalFilter?: ((r: Replica, cmd: RaftCommand) => 'hold' | 'drop' | undefined) | undefined;
  onApply?: ((r: Replica, cmd: RaftCommand) => void) | undefined;
}
export const replicaTestingKnobs: ReplicaTestingKnobs = {};

/**
 * While campaignUntilLeader, an early campaign (pre-vote) that won nothing — lost to a
 * peer not listening yet, or rejected — is repeated every this many ticks (a pre-vote
 * moves no term, so repeating it disrupts nobody).
 */
const EARLY_CAMPAIGN_TICKS = 3;
/** Election timeouts a leaseholder that is not the Raft leader asks for leadership (once each) before it hands the lease to the leader. */
const LEADERSHIP_ASKS = 3;

export class Replica {
  readonly rangeId: number;
  desc: RangeDescriptor;
  readonly replica: ReplicaDescriptor;
  /**
   * False for a replica created by a Raft message for a range this store had
   * no descriptor of (a replica being added): it holds no data, serves
   * nothing and waits for a snapshot, which initializes it.
   */
  initialized: boolean;
  /** Where the replicas not (yet) in the descriptor live, learned from their messages. */
  private readonly peers = new Map<number, ReplicaDescriptor>();
  readonly raw: RawNode;
  readonly storage: ReplicaRaftStorage;
  applied: RangeAppliedState;
  lease: Lease | null;
  /** Latches, lock table, timestamp cache and txn hooks of the request path (concurrency-manager.ts). */
  readonly concurrency: ReplicaConcurrency;
  /** The floor under the local uncertainty limit over skewed values this replica may hold (uncertainty.ts). */
  private readonly uncertaintyGuard: UncertaintyGuard;
  private readonly proposals = new Map<number, Proposal>();
  /** Commands waiting for the next flushProposals (in evaluation order). */
  private propBuf: Proposal[] = [];
  private nextMaxLeaseIndex: number;
  quiescent = false;
  private leaseRequest: Promise<void> | null = null;
  /** This replica's last lease request, proposal to apply, µs of its clock (the commit allowance: replica-lease.ts). */
  private lastLeaseRoundMicros = 0;
  private transferring: Lease | null = null;
  /**
   * Set from the moment stageApply installs a lease this replica did not hold
   * (a transfer to it, an acquisition after another holder) until the batch
   * that installed it is written (finishApply): that batch may carry the
   * previous holder's commands, staged before the lease but not yet in the
   * engine, and nothing on this node latches them. Requests wait for it
   * (ensureLease, evaluateSequenced); the fast path declines.
   */
  private leaseApplying: { lease: Lease; promise: Promise<void>; resolve: () => void; waiters: number } | null = null;
  private ticksHoldingWithoutLeadership = 0;
  /** Drain callers waiting for this replica to stop being the Raft leader (transferLeadership). */
  private leadershipWaiters: Array<() => void> = [];
  /** The replica those callers hand leadership to; asked again each tick while this one leads without a transfer under way. */
  private leadershipTarget = 0;
  /**
   * Set when the replica is loaded (a restart) holding the range's last
   * lease: until a leader is known, a follower without one campaigns at once
   * (pre-vote first) instead of after a randomized election timeout. After a
   * full-cluster restart every replica starts leaderless; the last holder
   * has the longest log in the common case, and as leader it re-takes an
   * unexpired lease of its own at once (an extension, nextLease) where any
   * other leader must wait out the expiration — CockroachDB campaigns the
   * leaseholder's replica on wake for the same reasons. Only one replica per
   * range campaigns early (the holder), so early campaigns do not split
   * votes; once a leader is seen, normal Raft timing rules. Safety is
   * untouched: this only starts elections earlier, and the lease rules
   * (replica-lease.ts) decide who serves.
   */
  private campaignUntilLeader = false;
  private ticksSinceCampaign = 0;
  private readonly checksums = new Map<number, { promise: Promise<string>; resolve: (s: string) => void; reject: (e: Error) => void }>();
  stopped = false;
  /**
   * The range's GC threshold (replicated: rangeGCThresholdKey; batcheval/cmd-gc.ts):
   * versions at or below it may be gone, so reads and writes there are refused.
   * Loaded with the replica, reloaded from a snapshot, raised as GC and merge
   * commands apply.
   */
  gcThreshold: Timestamp = ZERO_TIMESTAMP;

  private constructor(
    private readonly ctx: StoreContext,
    desc: RangeDescriptor,
    storage: ReplicaRaftStorage,
    applied: RangeAppliedState,
    lease: Lease | null,
    initialized = true,
  ) {
    this.initialized = initialized;
    this.concurrency = new ReplicaConcurrency(ctx.clock, { pushDelayMs: ctx.settings.lockPushDelayMs });
    this.uncertaintyGuard = new UncertaintyGuard(ctx.clock);
    this.rangeId = desc.rangeId;
    this.desc = desc;
    const me = replicaOnStore(desc, ctx.ident.storeId);
    assert(me !== undefined, `kv: s${ctx.ident.storeId} holds no replica of r${desc.rangeId}`);
    this.replica = me;
    this.storage = storage;
    this.applied = applied;
    this.lease = lease;
    this.nextMaxLeaseIndex = applied.leaseAppliedIndex;
    const s = ctx.settings;
    this.raw = new RawNode({
      id: me.replicaId,
      electionTick: s.electionTicks,
      heartbeatTick: s.heartbeatTicks,
      storage,
      applied: applied.raftAppliedIndex,
      maxSizePerMsg: s.maxRaftMsgBytes,
      maxInflightMsgs: 256,
      maxCommittedSizePerReady: s.maxCommittedBytesPerReady,
      checkQuorum: true,
      preVote: true,
      skipHeartbeatsAfterAppends: s.skipHeartbeatsAfterAppends,
      prng: ctx.prng,
    });
  }

  /** Loads the replica of `desc` on this store from the engine. */
  static async load(ctx: StoreContext, desc: RangeDescriptor): Promise<Replica> {
    const e = ctx.engine;
    const asRaw = e.getSync(encodeMvccKey(rangeAppliedStateKey(desc.rangeId)));
    assert(asRaw !== undefined, `kv: r${desc.rangeId} has a descriptor but no applied state`);
    const applied = decodeAppliedState(asRaw);
    const leaseRaw = e.getSync(encodeMvccKey(rangeLeaseKey(desc.rangeId)));
    const lease = leaseRaw === undefined ? null : decodeLease(leaseRaw);
    const storage = await ReplicaRaftStorage.load(e, desc.rangeId, confStateOf(desc));
    // The applied state can be ahead of the persisted commit index: the
    // Store's early and fast apply passes write it (unsynced) for entries
    // whose commit was learned after this round's HardState was staged, and
    // a kill can land before the next round persists the new commit. Those
    // entries were committed on a quorum before they applied and are durable
    // here (the passes apply nothing beyond the durable last index), so the
    // commit index is raised to match — Raft refuses applied > committed.
    const hs = storage.hardState;
    if (hs.commit < applied.raftAppliedIndex) {
      assert(applied.raftAppliedIndex <= storage.lastIndex(), `kv: r${desc.rangeId} applied ${applied.raftAppliedIndex} beyond its last log index ${storage.lastIndex()}`);
      storage.hardState = { ...hs, commit: applied.raftAppliedIndex };
    }
    storage.appliedIndex = applied.raftAppliedIndex;
    storage.appliedTerm = applied.raftAppliedTerm;
    const r = new Replica(ctx, desc, storage, { ...applied, stats: { ...applied.stats } }, lease);
    r.gcThreshold = Replica.loadGCThreshold(e, desc.rangeId);
    r.campaignUntilLeader = lease !== null && lease.replica.replicaId === r.replicaId;
    return r;
  }

  private static loadGCThreshold(e: Engine, rangeId: number): Timestamp {
    const raw = e.getSync(encodeMvccKey(rangeGCThresholdKey(rangeId)));
    return raw === undefined ? ZERO_TIMESTAMP : decodeTimestamp(raw);
  }

  /**
   * Refuses a batch that reads or writes at or below the GC threshold
   * (BatchTimestampBeforeGCError). Called after latching (a GC holding
   * latches on the batch's keys has applied or not started: see cmd-gc.ts)
   * with the batch's resolved timestamp.
   */
  private checkGCThreshold(ts: Timestamp, reqs: readonly Request[]): void {
    const t = this.gcThreshold;
    if (t.wall === 0 && t.logical === 0) return;
    const at = earliestActiveTimestamp(ts, reqs);
    if (at !== null && tsLessEq(at, t)) throw new BatchTimestampBeforeGCError(this.rangeId, at, t);
  }

  /**
   * A replica this store learns about from a Raft message before it has the
   * range's data: an empty log, no configuration; its Raft state (if it ever
   * voted or acknowledged) is loaded from the engine.
   */
  static async uninitialized(ctx: StoreContext, rangeId: number, replicaId: number): Promise<Replica> {
    const me: ReplicaDescriptor = { nodeId: ctx.ident.nodeId, storeId: ctx.ident.storeId, replicaId, type: 1 };
    const desc: RangeDescriptor = { rangeId, startKey: Buffer.alloc(0), endKey: Buffer.alloc(0), replicas: [me], nextReplicaId: 0, generation: 0 };
    const storage = await ReplicaRaftStorage.load(ctx.engine, rangeId, { voters: [], learners: [], votersOutgoing: [], learnersNext: [], autoLeave: false });
    return new Replica(ctx, desc, storage, { raftAppliedIndex: 0, raftAppliedTerm: 0, leaseAppliedIndex: 0, stats: emptyStats() }, null, false);
  }

  get replicaId(): number {
    return this.replica.replicaId;
  }

  /** The store of a replica of this range: from the descriptor, else from its messages. */
  replicaDescriptor(replicaId: number): ReplicaDescriptor | undefined {
    return replicaOf(this.desc, replicaId) ?? this.peers.get(replicaId);
  }

  /** Records where a peer replica lives (from the envelope of its Raft messages). */
  notePeer(replicaId: number, nodeId: number, storeId: number): void {
    if (replicaOf(this.desc, replicaId) !== undefined || this.peers.has(replicaId)) return;
    this.peers.set(replicaId, { nodeId, storeId, replicaId, type: 0 });
  }

  /**
   * Installs a new descriptor (the replication and split commands call this
   * when they apply a descriptor change on this replica).
   */
  setDescriptor(desc: RangeDescriptor): void {
    assert(desc.rangeId === this.rangeId, `kv: r${this.rangeId} given the descriptor of r${desc.rangeId}`);
    // A merge widens the range over reads the right-hand range served; a split or merge moves locks between ranges.
    const widened = compareBytes(desc.endKey, this.desc.endKey) > 0;
    if (widened || !desc.startKey.equals(this.desc.startKey) || !desc.endKey.equals(this.desc.endKey)) this.concurrency.onDescriptorChanged(widened);
    if (widened) this.uncertaintyGuard.forgetHistory();
    this.desc = desc;
  }

  isLeader(): boolean {
    return this.raw.raft.state === StateType.Leader;
  }

  /** The replica descriptor of the Raft leader, if known and in the descriptor. */
  leaderHint(): ReplicaDescriptor | null {
    const lead = this.raw.raft.lead;
    return lead === 0 ? null : (replicaOf(this.desc, lead) ?? null);
  }

  ownsValidLease(now: Timestamp = this.ctx.clock.now()): boolean {
    return this.transferring === null && ownsValidLease(this.lease, this.replicaId, now, this.ctx.clock.maxOffsetMicros);
  }

  get pendingProposals(): number {
    return this.proposals.size;
  }

  /** Requests waiting for the batch that installed this replica's new lease to be written (tests). */
  get leaseApplyWaiters(): number {
    return this.leaseApplying?.waiters ?? 0;
  }

  /** Waits until no lease this replica newly holds is still waiting for its apply batch (see leaseApplying). */
  private async leaseApplied(): Promise<void> {
    for (let la = this.leaseApplying; la !== null; la = this.leaseApplying) {
      la.waiters++;
      try {
        await la.promise;
      } finally {
        la.waiters--;
      }
    }
  }

  // ---- request path -------------------------------------------------------------

  /**
   * The synchronous head of send(): a batch of point reads this leaseholder
   * answers at once (serveReadsFast), or null when it needs the full path —
   * then the caller calls send(ba, true), which starts after this. Lets the
   * RPC handler answer a read without a promise per layer.
   */
  sendReadsFast(ba: BatchRequest): BatchResponse | null {
    if (this.stopped || !this.initialized) return null;
    this.wake();
    const fast = this.serveReadsFast(ba);
    if (fast !== null) this.extendLeaseIfDue(fast.now);
    return fast;
  }

  /** Serves a batch addressed to this range (see the header); `fastTried`: sendReadsFast(ba) answered null just before. */
  async send(ba: BatchRequest, fastTried = false): Promise<BatchResponse> {
    if (this.stopped || !this.initialized) throw new RangeNotFoundError(this.rangeId, this.ctx.ident.storeId);
    if (!fastTried) {
      const fast = this.sendReadsFast(ba);
      if (fast !== null) return fast;
    }
    const reqs = dropProvenInFlightWrites(this.concurrency.rewriteBatch(ba.requests), ba.header.txn);
    for (const q of reqs) {
      if (UNSUPPORTED_FROM_CLIENT.has(q.kind)) throw new CairnError('kv.unsupported_request', `kv: ${q.kind} is proposed by replicas, not sent by clients (use Store.transferLease)`);
      this.checkKeys(q);
    }
    if (reqs.length === 1 && reqs[0]?.kind === 'leaseInfo') {
      const now = this.ctx.clock.now();
      return { now, timestamp: now, responses: [{ kind: 'leaseInfo', lease: this.lease }] };
    }
    const isWrite = reqs.some(isWriteRequest);
    if (isWrite) this.uncertaintyGuard.noteWriteBatch(ba.header, reqs);
    // Canary expired-lease-reads: a replica that held the lease keeps serving reads without checking it is still valid.
    const staleReads = canary.expiredLeaseReads && !isWrite && this.lease?.replica.replicaId === this.replicaId;
    if (!staleReads) await this.ensureLease();
    const limit = canary.skipUncertaintyRestart ? undefined : this.uncertaintyLimitOf(ba.header);
    const h0: EvalHeader = { rangeId: this.rangeId, timestamp: ba.header.timestamp, ...(ba.header.txn === undefined ? {} : { txn: ba.header.txn }), ...(limit === undefined ? {} : { uncertaintyLimit: limit }) };
    await this.concurrency.checkRequestTimestamp(ba.header.timestamp, h0.txn !== undefined);
    const sg = await this.concurrency.sequence(h0, reqs, (q, out) => lookupCommand(q.kind).declareKeys(h0, q, this.desc, out));
    // Async consensus, acknowledgement at commit: the request finishes (latches released) when its command applies, after the answer.
    let applying: Promise<unknown> | null = null;
    const async = isWrite ? (p: Promise<unknown>) => void (applying = p) : undefined;
    const asyncConsensus = async !== undefined && canUseAsyncConsensus(ba, reqs);
    try {
      for (;;) {
        try {
          return await this.evaluateSequenced(ba, h0, reqs, sg.spans, isWrite, staleReads, async, asyncConsensus);
        } catch (e) {
          // An intent the lock table did not know: wait for it in its queue (latches released), then evaluate again.
          if (!(e instanceof WriteIntentError) || !(await this.concurrency.handleWriteIntentError(sg, e.intents))) throw e;
        }
      }
    } finally {
      if (applying === null) this.concurrency.finishReq(sg);
      else (applying as Promise<unknown>).finally(() => this.concurrency.finishReq(sg)).catch(() => undefined);
    }
  }

  /**
   * The point-read fast path: a batch of plain (non-locking) gets of user
   * keys, served in one synchronous step — so no request can start, latch,
   * lock or finish between the checks and the reads — when this replica
   * holds a valid lease, the keys are in the range, no write latch (held or
   * queued) and no lock-table entry covers any of them (sequence() would
   * neither wait nor leave anything behind), the timestamp needs no wait for
   * the clock, and every read is answered from the indexed MVCC history
   * without meeting an intent or an uncertain value. The reads enter the
   * timestamp cache as on the slow path. Returns null, having recorded
   * nothing, when any condition fails: send() then serves the batch in full.
   * Saves the guards, latches and promise chain of sequencing
   * (concurrency-manager.ts) for the common read.
   *
   * A transaction's locking get (FOR UPDATE; an implicit UPDATE's read of its
   * row) takes it too when its key's newest version is a committed one at or
   * below the read timestamp (lockingPointRead): it then reads exactly what
   * cmd-get would, and leaves the same unreplicated lock, acquired in the same
   * synchronous step (nothing held or queued at the key, checked above). An
   * intent, or a newer version (cmd-get's WriteTooOld, bumped by
   * evaluateReads), sends it down the sequenced path.
   */
  private serveReadsFast(ba: BatchRequest): BatchResponse | null {
    if (canary.expiredLeaseReads || canary.skipUncertaintyRestart || canary.skipTimestampCache || this.leaseApplying !== null) return null;
    const reqs = ba.requests;
    const c = this.concurrency;
    const d = this.desc;
    const txn = ba.header.txn;
    for (const q of reqs) {
      if (q.kind !== 'get' || (q.lock === 'exclusive' && txn === undefined) || isLocal(q.key)) return null;
      if (compareBytes(q.key, d.startKey) < 0 || compareBytes(q.key, d.endKey) >= 0 || !c.pointReadUnblocked(q.key)) return null;
    }
    if (reqs.length === 0 || !this.ctx.clockHealthy()) return null;
    const now = this.ctx.clock.now();
    if (!this.ownsValidLease(now)) return null;
    const hts = ba.header.timestamp;
    if (!c.timestampServableNow(hts, now)) return null;
    const ts = hts.wall === 0 && hts.logical === 0 ? now : hts;
    if (tsLessEq(ts, this.gcThreshold)) return null;
    const limit = this.uncertaintyLimitOf(ba.header);
    const opts = readOptions({ rangeId: this.rangeId, timestamp: ts, ...(txn === undefined ? {} : { txn }), ...(limit === undefined ? {} : { uncertaintyLimit: limit }) });
    const responses: Response[] = [];
    try {
      for (const q of reqs as readonly GetRequest[]) {
        const v = q.lock === 'exclusive' ? lockingPointRead(this.ctx.engine, q.key, ts) : mvccGetSync(this.ctx.engine, q.key, ts, opts).value;
        if (v === undefined) return null;
        responses.push({ kind: 'get', value: v?.value ?? null, ts: v?.ts ?? ZERO_TIMESTAMP });
      }
    } catch {
      // An intent, an uncertain value, a history below the index: the slow path meets it again and handles it.
      return null;
    }
    const own = txn === undefined ? undefined : txn.id.toString('hex');
    for (const q of reqs as readonly GetRequest[]) {
      c.recordPointRead(q.key, ts, own);
      // A locking get leaves its unreplicated lock, as onApplied does after a sequenced one (no lock was at the key).
      if (q.lock === 'exclusive' && txn !== undefined) c.acquireFastLock(txn, q.key);
    }
    return { now: this.ctx.clock.now(), timestamp: ts, responses };
  }

  /** The uncertainty limit reads apply here: the global one narrowed by this node's observed timestamp (uncertainty.ts). */
  private uncertaintyLimitOf(h: BatchHeader): Timestamp | undefined {
    const global = h.uncertaintyLimit;
    if (global === undefined || h.observedTimestamps === undefined) return global;
    return localUncertaintyLimit(global, observedTimestampOf(h.observedTimestamps, this.ctx.ident.nodeId), this.lease?.start, this.uncertaintyGuard.floor);
  }

  /** One evaluation of a sequenced batch (holding its latches, unblocked by the lock table). */
  private async evaluateSequenced(
    ba: BatchRequest,
    h0: EvalHeader,
    reqs: readonly Request[],
    spans: readonly DeclaredSpan[],
    isWrite: boolean,
    staleReads: boolean,
    async?: (applying: Promise<unknown>) => void,
    asyncConsensus = false,
  ): Promise<BatchResponse> {
    if (this.leaseApplying !== null && !staleReads) await this.leaseApplied();
    if (this.stopped) throw new RangeNotFoundError(this.rangeId, this.ctx.ident.storeId);
    const now = this.ctx.clock.now();
    if (!staleReads && !this.ownsValidLease(now)) throw this.notLeaseHolder('lease lost while waiting for latches');
    // A split may have shrunk the range while we waited.
    for (const q of reqs) this.checkKeys(q);
    const ts = compareTimestamps(ba.header.timestamp, ZERO_TIMESTAMP) === 0 ? now : ba.header.timestamp;
    this.checkGCThreshold(ts, reqs);
    const h = canary.skipTimestampCache ? { ...h0, timestamp: ts } : this.concurrency.prepare({ ...h0, timestamp: ts }, reqs, isWrite);
    if (isWrite) this.uncertaintyGuard.noteWriteAt(h.timestamp, now);
    if (!isWrite) {
      const ec = this.evalContext(emptyStats(), {});
      const r = await this.concurrency.evaluateReads(h, reqs, async (hh) => {
        const responses: Response[] = [];
        for (const q of reqs) responses.push(await lookupCommand(q.kind).evaluate(ec, this.ctx.engine as never, hh, q));
        return responses;
      });
      this.concurrency.finish(r.h, reqs, spans, r.responses);
      this.concurrency.onApplied(r.h, reqs, r.responses);
      return { now: this.ctx.clock.now(), timestamp: r.h.timestamp, responses: r.responses };
    }
    const lease = this.lease as Lease;
    const applied = (res: BatchResponse): void => {
      this.concurrency.finish(h, reqs, spans, res.responses as Response[]);
      this.concurrency.onApplied(h, reqs, res.responses);
    };
    // Answered once proposed (async consensus) or once committed: the lock table and the timestamp cache learn
    // the batch when it applies (under its latches).
    let deferred = false;
    const early =
      async === undefined
        ? undefined
        : (p: Promise<BatchResponse>): void => {
            deferred = true;
            async(p.then(applied));
          };
    const res = await this.concurrency.retryNonTxnWriteTooOld(h, (hh) =>
      this.evaluateAndPropose(hh, reqs, lease.sequence, undefined, asyncConsensus ? early : undefined, asyncConsensus ? undefined : early),
    );
    if (!deferred) applied(res);
    return res;
  }

  private checkKeys(q: Request): void {
    const k = (q as { key?: Buffer }).key;
    if (k === undefined) return;
    if (hasPrefix(k, LOCAL_RANGE_ID_PREFIX) || hasPrefix(k, LOCAL_STORE_PREFIX)) return;
    const addr = isLocal(k) ? addressOf(k) : k;
    const end = (q as { endKey?: Buffer }).endKey;
    const endAddr = end === undefined ? null : isLocal(end) ? addressOf(end) : end;
    const d = this.desc;
    const inside = compareBytes(addr, d.startKey) >= 0 && compareBytes(addr, d.endKey) < 0 && (endAddr === null || compareBytes(endAddr, d.endKey) <= 0);
    // The first range also holds the local keys addressed below its start.
    if (!inside && !(isLocal(k) && d.startKey.length === 0)) throw new RangeKeyMismatchError(k, end ?? null, [this.desc]);
  }

  private evalContext(stats: ReturnType<typeof emptyStats>, sideEffects: SideEffectsBuilder): EvalContext {
    return { rangeId: this.rangeId, desc: this.desc, lease: this.lease, stats, sideEffects, raftTerm: (i) => this.storage.term(i), gcThreshold: this.gcThreshold };
  }

  /**
   * Evaluates a write batch into a Raft command, proposes it, and waits for
   * it to apply. With `async` (async consensus): answers as soon as the
   * command is pending in Raft and hands `async` the promise of its apply.
   */
  private async evaluateAndPropose(
    h: EvalHeader,
    reqs: readonly Request[],
    leaseSeq: number,
    prevLease: Lease | null | undefined,
    async?: (applying: Promise<BatchResponse>) => void,
    onCommit?: (applying: Promise<BatchResponse>) => void,
  ): Promise<BatchResponse> {
    const se: SideEffectsBuilder = {};
    const { batch, stats, responses } = await evaluateWriteBatch(
      { newBatch: () => this.ctx.engine.newBatch(), evalContext: (st) => this.evalContext(st, se), withoutIntents: this.ctx.settings.onePhaseCommitWithoutIntents },
      h,
      reqs,
      pointWriteKeys(reqs),
    );
    const isLeaseRequest = prevLease !== undefined;
    const cmd: RaftCommand = {
      cmdId: this.ctx.nextCmdId(),
      leaseSeq,
      maxLeaseIndex: isLeaseRequest ? 0 : this.assignMaxLeaseIndex(),
      isLeaseRequest,
      prevLease: prevLease ?? null,
      repr: batch.repr(),
      stats,
      sideEffects: se,
    };
    let p: Proposal | undefined;
    const applying = new Promise<BatchResponse>((resolve, reject) => {
      const data = encodeRaftCommand(cmd);
      p = { cmdId: cmd.cmdId, cmd, data, ticks: 0, age: 0, responses, timestamp: h.timestamp, resolve, reject };
      if (isLeaseRequest || replicaTestingKnobs.proposalFilter?.(this, cmd) === undefined) this.buffer(p);
      this.proposals.set(cmd.cmdId, p);
      this.ctx.metrics.proposals++;
      this.ctx.enqueueReady(this);
      // Canary ack-before-quorum: answer the write now, before Raft commits and applies it.
      if (canary.ackBeforeQuorum && !isLeaseRequest) resolve({ now: this.ctx.clock.now(), timestamp: h.timestamp, responses });
    });
    if (!this.proposals.has(cmd.cmdId)) return applying;
    const proposal = p as Proposal;
    if (async !== undefined) {
      proposal.timedOut = () => undefined; // answered already; the request finishes when the command does
      async(applying);
      return { now: this.ctx.clock.now(), timestamp: h.timestamp, responses };
    }
    if (onCommit === undefined || isLeaseRequest) return applying;
    // The caller finishes the request (lock table, timestamp cache, latches) when the command applies or fails for
    // good; the client's answer may come before: at commit (no side effects), or ambiguous at the proposal timeout.
    const answer = new Promise<BatchResponse>((resolve, reject) => {
      if (noSideEffects(se)) proposal.committed = resolve;
      proposal.timedOut = reject;
      applying.then(resolve, reject);
    });
    onCommit(applying);
    return answer;
  }

  private assignMaxLeaseIndex(): number {
    this.nextMaxLeaseIndex = Math.max(this.nextMaxLeaseIndex, this.applied.leaseAppliedIndex) + 1;
    return this.nextMaxLeaseIndex;
  }

  private repropose(p: Proposal): void {
    if (p.cmd.isLeaseRequest || replicaTestingKnobs.proposalFilter?.(this, p.cmd) === undefined) {
      this.buffer(p);
      this.ctx.metrics.reproposals++;
    }
    p.ticks = 0;
    this.ctx.enqueueReady(this);
  }

  /** Queues p for the next flushProposals; a proposal already queued is not queued twice (it goes with its latest bytes). */
  private buffer(p: Proposal): void {
    if (p.buffered === true) return;
    p.buffered = true;
    this.propBuf.push(p);
  }

  /**
   * The proposal buffer (CockroachDB's propBuf): the commands evaluated since
   * the last Ready round go to Raft as ONE proposal of many entries — one
   * append, one MsgApp per follower and one MsgAppResp back for the lot,
   * instead of one each per command. The Store calls this for every dirty
   * replica right before asking it for a Ready, so a command waits for no
   * more than the round it would have joined anyway.
   *
   * Order: by max lease index (lease requests keep their place), which is
   * evaluation order for first proposals; re-proposals queued after newer
   * commands go before them, so no copy is refused by the MLI check for
   * arriving after a later command.
   *
   * A command whose lease is no longer in force can never apply (lease
   * sequences only grow): it is answered here — NotLeaseHolderError when no
   * copy ever reached Raft, ambiguous otherwise. If Raft drops the batch,
   * nothing of it entered any log, and every command of it stays pending
   * (see the header): re-proposed at the next leader change or the next
   * tick that knows a leader, answered ambiguous at the proposal timeout.
   */
  flushProposals(): void {
    const buf = this.propBuf;
    if (buf.length === 0) return;
    this.propBuf = [];
    if (this.stopped) return;
    const batch: Proposal[] = [];
    let ordered = true;
    let lastMli = 0;
    for (const p of buf) {
      p.buffered = false;
      // Answered or abandoned while queued (applied, lease change, stop, timeout): nothing to propose.
      if (this.proposals.get(p.cmdId) !== p) continue;
      const cmd = p.cmd;
      if (!cmd.isLeaseRequest) {
        if (this.lease === null || this.lease.sequence !== cmd.leaseSeq) {
          this.proposals.delete(p.cmdId);
          p.reject(
            p.proposed === true
              ? new AmbiguousResultError(`r${this.rangeId}: the lease changed with the command in flight`)
              : this.notLeaseHolder('the lease changed before the command reached Raft'),
          );
          continue;
        }
        if (cmd.maxLeaseIndex < lastMli) ordered = false;
        lastMli = cmd.maxLeaseIndex;
      }
      batch.push(p);
    }
    if (batch.length === 0) return;
    if (!ordered) sortByMaxLeaseIndex(batch);
    const datas = new Array<Buffer>(batch.length);
    for (let k = 0; k < batch.length; k++) datas[k] = (batch[k] as Proposal).data;
    let dropped = false;
    try {
      this.raw.proposeBatch(datas);
    } catch (e) {
      if (!(e instanceof ProposalDroppedError)) throw e;
      dropped = true;
      this.ctx.metrics.proposalBatchesDropped++;
    }
    for (const p of batch) {
      p.dropped = dropped;
      if (!dropped) p.proposed = true;
    }
  }

  // ---- leases ---------------------------------------------------------------------

  private notLeaseHolder(why = ''): NotLeaseHolderError {
    const hint = this.transferring?.replica ?? this.leaderHint();
    return new NotLeaseHolderError(this.rangeId, this.transferring ?? this.lease, hint, why);
  }

  /** Returns when this replica holds a valid lease; throws NotLeaseHolderError with a hint otherwise. */
  private async ensureLease(): Promise<void> {
    if (this.leaseApplying !== null) await this.leaseApplied();
    if (!this.ctx.clockHealthy()) throw new ClockUnhealthyError(this.ctx.ident.nodeId);
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = this.ctx.clock.now();
      if (this.ownsValidLease(now)) {
        this.extendLeaseIfDue(now);
        return;
      }
      if (this.transferring !== null) throw this.notLeaseHolder('lease transfer in progress');
      const st = leaseState(this.lease, now, this.ctx.clock.maxOffsetMicros);
      if (this.lease !== null && this.lease.replica.replicaId !== this.replicaId && st !== 'expired') throw this.notLeaseHolder();
      if (!this.isLeader()) throw this.notLeaseHolder('not the Raft leader');
      await this.acquireLease();
    }
    throw this.notLeaseHolder('could not acquire the lease');
  }

  /**
   * A request served under a lease in its renewal window extends it in the
   * background (CockroachDB extends expiration-based leases on the request
   * path). maintainLease renews only on non-quiescent ticks, and a range that
   * quiesces between bursts of requests let an active lease lapse: every
   * request arriving after it waited for a re-acquisition round. Only the
   * leader extends (as maintainLease: a holder that is not the leader hands
   * the lease over instead).
   */
  private extendLeaseIfDue(now: Timestamp): void {
    const lease = this.lease;
    if (lease === null || this.leaseRequest !== null || this.transferring !== null || !shouldRenew(lease, now, this.ctx.settings.leaseDurationMicros, this.leaseAllowanceMicros()) || !this.isLeader()) return;
    this.acquireLease().catch(() => undefined);
  }

  /**
   * The commit allowance (replica-lease.ts): this replica's last lease round,
   * proposal to apply on its clock, at most one lease duration; 0 when the
   * setting is off.
   */
  private leaseAllowanceMicros(): number {
    if (!this.ctx.settings.leaseCommitAllowance) return 0;
    return Math.min(this.lastLeaseRoundMicros, this.ctx.settings.leaseDurationMicros);
  }

  /** Requests (or extends) the lease for this replica; one request at a time. */
  acquireLease(): Promise<void> {
    if (this.leaseRequest !== null) return this.leaseRequest;
    const run = async (): Promise<void> => {
      const prev = this.lease;
      const now = this.ctx.clock.now();
      const next = nextLease(prev, this.replica, now, this.ctx.settings.leaseDurationMicros + this.leaseAllowanceMicros());
      if (next === null) throw this.notLeaseHolder();
      await this.proposeLease({ kind: 'requestLease', lease: next, prevLease: prev });
      this.lastLeaseRoundMicros = Math.max(0, this.ctx.clock.now().wall - now.wall);
    };
    const p = run().finally(() => {
      this.leaseRequest = null;
    });
    this.leaseRequest = p;
    return p;
  }

  /** Hands the lease to the replica `targetReplicaId` (must hold a valid lease). */
  async transferLease(targetReplicaId: number): Promise<void> {
    const target = replicaOf(this.desc, targetReplicaId);
    if (target === undefined) throw new CairnError('kv.invalid_lease_target', `kv: r${this.rangeId} has no replica ${targetReplicaId}`);
    if (targetReplicaId === this.replicaId) return this.ensureLease();
    if (this.leaseRequest !== null) await this.leaseRequest.catch(() => undefined);
    let now = this.ctx.clock.now();
    // Our own lease in its last max offset (stasis) or just expired — its renewal late under load (2 s test
    // leases renew in their last second): as drain does, the leader extends (or re-takes) it first, instead of
    // refusing the transfer for a lease it holds (s9: /_admin/relocate answered not_lease_holder naming the
    // holder itself, attempt after attempt).
    if (this.transferring === null && this.lease?.replica.replicaId === this.replicaId && this.isLeader() && !this.ownsValidLease(now)) {
      await this.acquireLease();
      now = this.ctx.clock.now();
    }
    if (!this.ownsValidLease(now)) throw this.notLeaseHolder();
    const prev = this.lease as Lease;
    const next = transferredLease(prev, target, now, this.ctx.settings.leaseDurationMicros + this.leaseAllowanceMicros());
    this.transferring = next;
    try {
      const priorReadSummary = await this.flushForTransfer();
      await this.proposeLease({ kind: 'transferLease', lease: next, prevLease: prev, ...(priorReadSummary === undefined ? {} : { priorReadSummary }) });
    } finally {
      this.transferring = null;
    }
  }

  /**
   * The read summary a transfer hands over (CockroachDB's prior read summary,
   * one timestamp): `transferring` already turns every new request away (the
   * fast path and evaluateSequenced check the lease), so once a latch over
   * the whole keyspace is granted, every request served under the outgoing
   * lease has finished and recorded its reads, and none can follow. Released
   * at once: whatever latches after it is refused. The wait is bounded
   * (TRANSFER_FLUSH_MS): a command stuck in flight (it may be waiting for
   * this very lease to move, to be refused) must not hold the transfer up —
   * then no summary goes, and the new holder starts at the horizon, as for
   * an expired lease (ReplicaConcurrency.onLeaseApplied).
   */
  private async flushForTransfer(): Promise<Timestamp | undefined> {
    const guard = await this.concurrency
      .acquireLatches([{ key: KEY_MIN, endKey: KEY_MAX, write: true }], AbortSignal.timeout(TRANSFER_FLUSH_MS))
      .catch((e: unknown) => {
        if (e instanceof LatchWaitCancelledError) return null;
        throw e;
      });
    if (guard === null) return undefined;
    try {
      return this.concurrency.readSummary();
    } finally {
      guard.release();
    }
  }

  private async proposeLease(q: RequestLeaseRequest | TransferLeaseRequest): Promise<void> {
    const h: EvalHeader = { rangeId: this.rangeId, timestamp: q.lease.start };
    const spans: DeclaredSpan[] = [];
    lookupCommand(q.kind).declareKeys(h, q, this.desc, spans);
    const guard = await this.concurrency.acquireLatches(spans);
    try {
      if (!leaseEqual(this.lease, q.prevLease)) throw this.notLeaseHolder('the lease changed');
      await this.evaluateAndPropose(h, [q], q.prevLease?.sequence ?? 0, q.prevLease);
    } finally {
      guard.release();
    }
    if (!leaseEqual(this.lease, q.lease)) throw this.notLeaseHolder('lease request lost');
  }

  /** Keeps the lease on the Raft leader and renews it while the range is active. */
  private maintainLease(): void {
    const now = this.ctx.clock.now();
    const dur = this.ctx.settings.leaseDurationMicros;
    const lease = this.lease;
    const mine = lease !== null && lease.replica.replicaId === this.replicaId;
    const ignore = (): void => undefined;
    if (!this.ctx.clockHealthy()) return;
    if (this.isLeader()) {
      this.campaignUntilLeader = false;
      if (this.leaseRequest !== null || this.transferring !== null) return;
      const st = leaseState(lease, now, this.ctx.clock.maxOffsetMicros);
      if ((!mine && (st === 'expired' || st === 'none')) || (mine && (st !== 'valid' || shouldRenew(lease, now, dur, this.leaseAllowanceMicros())))) {
        this.acquireLease().catch(ignore);
      }
      return;
    }
    // A holder that is not the leader asks for leadership (so that an admin
    // lease transfer sticks) at once and again every election timeout (the
    // leader abandons a transfer after one); if that has not worked within
    // three, it hands the lease to the leader. One timeout was too short on a
    // loaded machine: the transfer's message hops took more ticks than that,
    // the lease went back, and lease and leadership stayed on the old node
    // (test/kv/faults 'transfers the lease…' timed out so at load ~42).
    const leader = this.leaderHint();
    if (leader !== null) this.campaignUntilLeader = false;
    else if (this.campaignUntilLeader && mine && (this.raw.raft.state === StateType.Follower || this.raw.raft.state === StateType.PreCandidate) && this.ticksSinceCampaign++ % EARLY_CAMPAIGN_TICKS === 0) {
      this.ctx.log.debug({ rangeId: this.rangeId, leaseSequence: lease.sequence }, 'kv: holder of the last lease campaigns (no leader known)');
      this.raw.campaign();
    }
    if (!mine || leader === null || leader.type !== 0 || !this.ownsValidLease(now)) {
      this.ticksHoldingWithoutLeadership = 0;
      return;
    }
    const ticks = ++this.ticksHoldingWithoutLeadership;
    const election = this.ctx.settings.electionTicks;
    if (ticks > LEADERSHIP_ASKS * election) this.transferLease(leader.replicaId).catch(ignore);
    else if ((ticks - 1) % election === 0) this.raw.transferLeader(this.replicaId);
  }

  // ---- ticks, messages, quiescence ---------------------------------------------------

  tick(): void {
    if (this.stopped) return;
    if (this.quiescent) {
      this.raw.tickQuiesced();
      return;
    }
    this.raw.tick();
    // A drain's handoff that Raft abandoned (the target not caught up within an election timeout on a loaded
    // machine), or this replica leading again after the target's campaign failed: ask again.
    if (this.leadershipWaiters.length > 0 && this.isLeader() && this.raw.raft.leadTransferee === NONE) this.raw.transferLeader(this.leadershipTarget);
    const s = this.ctx.settings;
    for (const p of this.proposals.values()) {
      p.ticks++;
      p.age++;
      if (!p.cmd.isLeaseRequest && replicaTestingKnobs.proposalFilter?.(this, p.cmd) === 'drop') {
        this.proposals.delete(p.cmdId);
        p.reject(new AmbiguousResultError(`r${this.rangeId}: command dropped by a testing knob`));
        continue;
      }
      if (p.age >= s.proposalTimeoutTicks && p.timedOut !== null) {
        const e = new AmbiguousResultError(`r${this.rangeId}: command not applied after ${p.age} ticks`);
        if (p.timedOut === undefined) {
          this.proposals.delete(p.cmdId);
          p.reject(e);
          continue;
        }
        // Answered ambiguous, but still pending (see the header's "Outcomes"): its latches stay held until it finishes.
        p.timedOut(e);
        p.timedOut = null;
      }
      if (p.ticks >= s.reproposalTicks || (p.dropped === true && this.raw.raft.lead !== 0)) this.repropose(p);
    }
    if (this.initialized) {
      this.maintainLease();
      this.maybeQuiesce();
    }
    this.ctx.enqueueReady(this);
  }

  /** Steps a message from a peer; `quiesce` marks the leader's quiescing heartbeat. */
  stepMessage(m: Message, quiesce: boolean): void {
    if (this.stopped) return;
    if (quiesce) {
      this.quiescent = true;
    } else if (this.quiescent && m.type !== MessageType.MsgHeartbeatResp) {
      this.quiescent = false;
    }
    try {
      this.raw.step(m);
    } catch (e) {
      // A proposal forwarded here that this replica cannot take (no leader, a leadership transfer): its
      // proposer keeps it pending and proposes it again — it must not abort the rest of the message batch.
      if (!(e instanceof ProposalDroppedError) && (!(e instanceof CairnError) || !e.code.startsWith('raft.step'))) throw e;
    }
    this.ctx.enqueueReady(this);
  }

  /** Leaves quiescence (a request or proposal arrived). */
  wake(): void {
    if (!this.quiescent) return;
    this.quiescent = false;
    this.ctx.enqueueReady(this);
  }

  private maybeQuiesce(): void {
    if (!this.isLeader() || this.proposals.size > 0 || this.leaseRequest !== null || this.transferring !== null || this.leadershipWaiters.length > 0 || this.concurrency.activeRequests > 0) return;
    if (this.raw.hasReady()) return;
    const st = this.raw.status();
    if (!st.quiescable) return;
    const hs = st.hardState;
    const msgs: Message[] = [];
    for (const [id, pr] of st.progress ?? []) {
      if (id === this.replicaId) continue;
      // etcd's rule: never tell a follower to commit past its match (quiescable implies equal; kept explicit).
      msgs.push(newMessage({ type: MessageType.MsgHeartbeat, to: id, from: this.replicaId, term: hs.term, commit: Math.min(pr.match, hs.commit) }));
    }
    this.quiescent = true;
    this.ctx.sendRaftMessages(this, msgs, true);
  }

  /** The Raft leader changed: re-propose everything pending (the old leader may have lost it). */
  onLeaderChange(): void {
    for (const p of this.proposals.values()) this.repropose(p);
    if (!this.isLeader() && this.raw.raft.lead !== 0) this.settleLeadershipWaiters();
  }

  /**
   * Drain: asks Raft to hand this replica's leadership to the voter
   * `targetReplicaId` (etcd's leader transfer: catch it up, then MsgTimeoutNow)
   * and resolves once another replica leads — it has won the election and
   * appended to us — or at once if this replica does not lead. Without it a stopped leader leaves its followers an election
   * timeout of silence before the range can commit again, lease or not.
   * Never rejects; the caller bounds the wait. While it waits, a transfer
   * Raft abandons (an election timeout without the target caught up) is
   * asked for again on every tick this replica leads without one, and the
   * range does not quiesce; the promise stays pending until the replica
   * stops if leadership never moves.
   */
  transferLeadership(targetReplicaId: number): Promise<void> {
    if (!this.isLeader() || this.stopped) return Promise.resolve();
    this.leadershipTarget = targetReplicaId;
    this.wake();
    this.raw.transferLeader(targetReplicaId);
    this.ctx.enqueueReady(this);
    return new Promise((resolve) => this.leadershipWaiters.push(resolve));
  }

  private settleLeadershipWaiters(): void {
    const waiters = this.leadershipWaiters;
    this.leadershipWaiters = [];
    for (const w of waiters) w();
  }

  // ---- apply --------------------------------------------------------------------------

  /**
   * Stages the application of committed entries into the store's apply
   * batch: command writes and the applied state, in order. Updates the
   * in-memory applied state and lease as it goes (later entries of the same
   * round see them); durable effects are finished by finishApply.
   *
   * Returns how many entries it staged: it stops right after a
   * ComputeChecksum command that is not the last entry, so the caller can
   * make the batch durable and snapshot the engine exactly at that command's
   * apply position (fx.checksums[last].snap) before staging the rest.
   */
  stageApply(batch: WriteBatch, entries: readonly Entry[], fx: ApplyEffects): number {
    if (entries.length === 0) return 0;
    const applied = { ...this.applied, stats: { ...this.applied.stats } };
    this.applied = applied;
    let n = 0;
    while (n < entries.length) {
      const e = entries[n++] as Entry;
      const checksums = fx.checksums.length;
      if (e.type === EntryType.ConfChange) {
        this.storage.confState = this.raw.applyConfChange(decodeConfChange(e.data));
      } else if (e.data.length > 0) {
        this.applyCommand(batch, decodeRaftCommand(e.data), fx);
      }
      applied.raftAppliedIndex = e.index;
      applied.raftAppliedTerm = e.term;
      if (fx.checksums.length > checksums) break;
    }
    batch.put(encodeMvccKey(rangeAppliedStateKey(this.rangeId)), encodeAppliedState(applied));
    return n;
  }

  private applyCommand(batch: WriteBatch, cmd: RaftCommand, fx: ApplyEffects): void {
    const applied = this.applied as { -readonly [K in keyof RangeAppliedState]: RangeAppliedState[K] };
    let verdict: 'ok' | 'lease' | 'mli';
    if (cmd.isLeaseRequest) verdict = leaseEqual(cmd.prevLease, this.lease) ? 'ok' : 'lease';
    else if (this.lease === null || cmd.leaseSeq !== this.lease.sequence) verdict = 'lease';
    else if (applied.leaseAppliedIndex >= cmd.maxLeaseIndex) verdict = 'mli';
    else verdict = 'ok';
    const p = this.proposals.get(cmd.cmdId);
    if (verdict !== 'ok') {
      this.ctx.metrics.rejectedCommands++;
      if (p === undefined || p.cmd.maxLeaseIndex !== cmd.maxLeaseIndex) return;
      if (verdict === 'mli' && this.lease !== null && this.lease.sequence === p.cmd.leaseSeq && this.lease.replica.replicaId === this.replicaId) {
        // Every copy with the old MLI is dead now: re-propose under a new one.
        p.cmd = { ...p.cmd, maxLeaseIndex: this.assignMaxLeaseIndex() };
        p.data = encodeRaftCommand(p.cmd);
        this.repropose(p);
        return;
      }
      this.proposals.delete(cmd.cmdId);
      // Rejected by the lease check: no copy applied before this one (p is still pending) and none can after it (every
      // copy carries this lease sequence; sequences only grow): it never applies — not leaseholder, not ambiguous.
      fx.done.push({ p, error: this.notLeaseHolder(cmd.isLeaseRequest ? 'lease request rejected' : 'the lease changed with the command in flight') });
      return;
    }
    this.ctx.metrics.appliedCommands++;
    replicaTestingKnobs.onApply?.(this, cmd);
    forEachBatchReprOp(cmd.repr, (key, value) => (value === null ? batch.delete(key) : batch.put(key, value)));
    addStats(applied.stats, cmd.stats);
    if (!cmd.isLeaseRequest) applied.leaseAppliedIndex = cmd.maxLeaseIndex;
    const se = cmd.sideEffects;
    if (se.newLease !== undefined) this.installLease(se.newLease, fx, se.priorReadSummary);
    if (se.truncatedState !== undefined && se.truncatedState.index > (fx.truncation?.index ?? this.storage.truncated.index)) {
      this.storage.stageTruncation(batch, se.truncatedState);
      fx.truncation = se.truncatedState;
    }
    if (se.checksumId !== undefined) fx.checksums.push({ id: se.checksumId, snap: null });
    // Adopted as it is staged (as leases are): a request latching after this sees it; the GC's own latches cover the rest.
    if (se.gcThreshold !== undefined) this.gcThreshold = tsMax(this.gcThreshold, se.gcThreshold);
    if (se.trigger !== undefined) {
      this.ctx.stageTrigger(this, batch, se.trigger, cmd.repr);
      fx.triggers.push(se.trigger);
    }
    if (p !== undefined) {
      this.proposals.delete(cmd.cmdId);
      fx.done.push({ p, error: null });
      // Acknowledgement at commit: committed, durable on a quorum and past the apply checks (see the header).
      p.committed?.({ now: this.ctx.clock.now(), timestamp: p.timestamp, responses: p.responses });
    }
  }

  private installLease(lease: Lease, fx: ApplyEffects, priorReadSummary: Timestamp | undefined): void {
    const prev = this.lease;
    this.lease = lease;
    if (lease.replica.replicaId === this.replicaId) {
      // remainingMs: what is left of it on arrival; below the max offset it arrived already unusable (stasis).
      const remainingMs = Math.round((lease.expiration.wall - this.ctx.clock.now().wall) / 1000);
      this.ctx.log.debug({ rangeId: this.rangeId, sequence: lease.sequence, extension: prev?.sequence === lease.sequence, remainingMs }, 'kv: lease applied on its holder');
    }
    // The timestamp cache moves with the lease, now: Replica.send sees this.lease from here on, while
    // finishApply runs only after the apply batch is written (an await away).
    this.concurrency.onLeaseApplied(lease, prev, lease.replica.replicaId === this.replicaId ? priorReadSummary : undefined);
    // A lease newly ours serves nothing until this batch is written: the previous holder's commands staged before
    // it are not in the engine yet (leaseApplying). Batches are written in order: the newest lease's batch covers older ones.
    if (lease.replica.replicaId === this.replicaId && prev?.replica.replicaId !== this.replicaId) {
      if (this.leaseApplying !== null) this.leaseApplying.lease = lease;
      else {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        this.leaseApplying = { lease, promise, resolve, waiters: 0 };
      }
    }
    if (lease.replica.replicaId === this.replicaId && prev?.replica.replicaId !== this.replicaId) this.uncertaintyGuard.forgetHistory();
    fx.leases.push({ lease, prev });
    if (prev !== null && prev.sequence !== lease.sequence && prev.replica.replicaId === this.replicaId && lease.replica.replicaId !== this.replicaId) {
      // We lost the lease: commands proposed under it cannot apply any more. This replica is applying its log in
      // order, and the new lease is the entry it applies now: every command before it in the log has applied (or
      // been rejected) here already, so one still pending has no copy before the lease entry, and every copy after it
      // fails the lease check. It never applies: not the leaseholder (retryable at the new holder), not ambiguous —
      // DESIGN.md §6's "unknown outcome" is a replica that has not applied its log this far (a snapshot: there the
      // commands its lease applied index covers are answered ambiguous, reloadAfterSnapshot).
      for (const p of this.proposals.values()) {
        if (p.cmd.isLeaseRequest) continue;
        this.proposals.delete(p.cmdId);
        const to = `r${this.rangeId}/${lease.replica.replicaId}`;
        fx.done.push({ p, error: this.notLeaseHolder(`lease transferred to ${to} ${p.proposed === true ? 'with the command in flight' : 'before the command reached Raft'}`) });
      }
    }
    if (lease.replica.replicaId === this.replicaId) this.nextMaxLeaseIndex = Math.max(this.nextMaxLeaseIndex, this.applied.leaseAppliedIndex);
  }

  /** Runs once the apply batch of stageApply is durable. */
  finishApply(fx: ApplyEffects, engineSnapshot: () => EngineSnapshot): void {
    this.storage.appliedIndex = this.applied.raftAppliedIndex;
    this.storage.appliedTerm = this.applied.raftAppliedTerm;
    if (fx.truncation !== null) this.storage.commitTruncation(fx.truncation);
    for (const { lease, prev } of fx.leases) this.ctx.leaseApplied(this, lease, prev);
    if (this.leaseApplying !== null && fx.leases.some((l) => l.lease === this.leaseApplying?.lease)) this.leaseAppliedDone();
    for (const t of fx.triggers) this.ctx.finishTrigger(this, t);
    for (const { id, snap: at } of fx.checksums) {
      const snap = at ?? engineSnapshot();
      const slot = this.checksumSlot(id);
      computeRangeChecksum(snap, this.desc)
        .then(slot.resolve, slot.reject)
        .finally(() => void snap.close());
    }
    for (const { p, error } of fx.done) {
      if (error === null) p.resolve({ now: this.ctx.clock.now(), timestamp: p.timestamp, responses: p.responses });
      else p.reject(error);
    }
  }

  private checksumSlot(id: number): { promise: Promise<string>; resolve: (s: string) => void; reject: (e: Error) => void } {
    let slot = this.checksums.get(id);
    if (slot === undefined) {
      let resolve!: (s: string) => void;
      let reject!: (e: Error) => void;
      const promise = new Promise<string>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      promise.catch(() => undefined); // a stopped replica rejects checksums nobody asked for
      slot = { promise, resolve, reject };
      this.checksums.set(id, slot);
    }
    return slot;
  }

  /** The checksum this replica computed for ComputeChecksum `id` (waits until it has applied it). */
  checksum(id: number): Promise<string> {
    return this.checksumSlot(id).promise;
  }

  /** After a snapshot was applied: reload the replicated state it replaced (and the descriptor it carried). */
  reloadAfterSnapshot(index: number, term: number, desc: RangeDescriptor): void {
    const e = this.ctx.engine;
    assert(replicaOf(desc, this.replicaId)?.storeId === this.ctx.ident.storeId, `kv: r${this.rangeId} snapshot's descriptor does not hold replica ${this.replicaId} on s${this.ctx.ident.storeId}`);
    this.desc = desc;
    this.initialized = true;
    this.concurrency.clearLocks();
    this.uncertaintyGuard.forgetHistory();
    const asRaw = e.getSync(encodeMvccKey(rangeAppliedStateKey(this.rangeId)));
    assert(asRaw !== undefined, `kv: r${this.rangeId} snapshot without applied state`);
    this.applied = decodeAppliedState(asRaw);
    assert(this.applied.raftAppliedIndex === index, `kv: r${this.rangeId} snapshot at ${index} carries applied index ${this.applied.raftAppliedIndex}`);
    // The snapshot's state is written: whatever a staged lease waited for is superseded by it.
    this.leaseAppliedDone();
    // A pending command whose max lease index the snapshot's state has reached was applied inside it or can never
    // apply; nobody can tell which. Re-proposed, the MLI check would refuse it and, the lease still ours, propose it
    // again under a new index — applying it a second time. Answer it ambiguous (CockroachDB: "unable to determine
    // whether command was applied via snapshot").
    for (const [id, p] of this.proposals) {
      if (p.cmd.isLeaseRequest || p.cmd.maxLeaseIndex > this.applied.leaseAppliedIndex) continue;
      this.proposals.delete(id);
      p.reject(new AmbiguousResultError(`r${this.rangeId}: a snapshot at index ${index} may have applied the command`));
    }
    const leaseRaw = e.getSync(encodeMvccKey(rangeLeaseKey(this.rangeId)));
    const prev = this.lease;
    this.lease = leaseRaw === undefined ? null : decodeLease(leaseRaw);
    // The snapshot's state carries the threshold its data was collected at (it never moves back: GC applied in order).
    this.gcThreshold = Replica.loadGCThreshold(e, this.rangeId);
    this.storage.commitSnapshot(index, term, confStateOf(this.desc));
    // A ComputeChecksum awaited here may be inside the snapshot: this replica
    // will never apply it. Fail every pending one clearly (the caller retries
    // with a new id) rather than hang; settled ones are unaffected.
    const skipped = new CairnError('kv.checksum_superseded', `kv: r${this.rangeId}: a snapshot at index ${index} replaced the log; the checksum was not computed here`, { retryable: true });
    for (const slot of this.checksums.values()) slot.reject(skipped);
    if (this.lease !== null && !leaseEqual(prev, this.lease)) {
      this.concurrency.onLeaseApplied(this.lease, prev);
      this.ctx.leaseApplied(this, this.lease, prev);
    }
  }

  /** The batch that installed leaseApplying's lease is written (or superseded by a snapshot, or the replica stopped). */
  private leaseAppliedDone(): void {
    const la = this.leaseApplying;
    this.leaseApplying = null;
    la?.resolve();
  }

  /** Stops the replica: every pending command answers ambiguous. */
  stop(): void {
    this.stopped = true;
    this.settleLeadershipWaiters();
    this.leaseAppliedDone();
    this.concurrency.clearLocks();
    for (const p of this.proposals.values()) p.reject(new AmbiguousResultError(`r${this.rangeId}: replica stopped with the command in flight`));
    this.proposals.clear();
    for (const slot of this.checksums.values()) slot.reject(new RangeNotFoundError(this.rangeId, this.ctx.ident.storeId));
  }
}

/**
 * The fast path's locking point read (Replica.serveReadsFast): the value a
 * locking get at `ts` answers (null: none, or a tombstone) when the key's
 * newest version is committed at or below `ts` — then reading at `ts` finds
 * exactly that version and no uncertain value can exist above it — and
 * undefined when cmd-get would meet an intent (anyone's, own included: the
 * sequenced path handles savepoints and epochs) or a newer committed version.
 * Exported for its property test against cmd-get's semantics
 * (test/kv-readpath/locking-point-read.test.ts).
 */
export function lockingPointRead(engine: StoreContext['engine'], key: Buffer, ts: Timestamp): { value: Buffer | null; ts: Timestamp } | null | undefined {
  const newest = mvccGetSync(engine, key, MAX_TIMESTAMP, LOCKING_NEWEST);
  if (newest.intent !== null) return undefined;
  const v = newest.value;
  if (v === null) return null;
  if (tsLess(ts, v.ts)) return undefined;
  return v.value === null ? null : v;
}

const LOCKING_NEWEST = { inconsistent: true, tombstones: true } as const;

/**
 * Point writes in one batch at or above which their MVCC heads are read
 * ahead by one getMany (storage/mvcc.ts mvccPrefetch; LevelEngine splits it
 * over the libuv pool) instead of one getSync each on the JS thread during
 * evaluation. Below it the pool round trip costs more than it saves.
 */
export const PREFETCH_MIN_POINT_WRITES = 16;

/** The keys of a batch's point writes when there are enough to prefetch, else null. */
function pointWriteKeys(reqs: readonly Request[]): Buffer[] | null {
  if (reqs.length < PREFETCH_MIN_POINT_WRITES) return null;
  const keys: Buffer[] = [];
  for (const q of reqs) {
    if (q.kind === 'put' || q.kind === 'cput' || q.kind === 'delete' || q.kind === 'resolveIntent') keys.push(q.key);
  }
  return keys.length >= PREFETCH_MIN_POINT_WRITES ? keys : null;
}
