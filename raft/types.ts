/**
 * The Raft library's data types: entries, messages, hard/soft state,
 * configuration state and changes, snapshots, the Ready batch, the Storage
 * interface, the Config, and the library's typed errors.
 *
 * Purpose. These are the only shapes that cross the library's boundary. The
 * cluster layer (src/kv) persists entries, hard state and snapshots, and
 * encodes messages with its own binary codec — so everything here is plain
 * data: numbers, arrays and Uint8Arrays, no classes, no closures.
 *
 * Model (etcd/raft, DESIGN.md §3 "Raft"): the library is a deterministic state
 * machine. Input: tick(), step(msg), propose(data). Output: a Ready, which the
 * caller persists (hard state + entries + snapshot, synced when mustSync),
 * then sends its messages, then applies its committed entries, then calls
 * advance(). See raw-node.ts for the contract.
 *
 * Conventions.
 *   - Replica ids are positive integers (0 = none). Terms and indexes are
 *     non-negative integers below 2^53.
 *   - Every Message has every field (monomorphic objects; unused fields are
 *     0 / [] / null). Use `newMessage()` to build one.
 *   - Entry data is owned by whoever created it; the library never mutates an
 *     entry or its data and never copies data bytes.
 *   - A conf change travels in an entry of type EntryConfChange whose data is
 *     the encoding produced by `encodeConfChange` (conf-change-codec.ts).
 *
 * Ownership. Arrays in a Ready belong to the caller once ready() returns; the
 * library does not touch them again (it may still hold the same Entry objects,
 * which are immutable).
 */
import { CairnError } from '../src/util/errors.js';
import type { Prng } from '../src/util/prng.js';

/** No replica / no leader / no vote. */
export const NONE = 0;

// ---------------------------------------------------------------------------
// Entries

export enum EntryType {
  Normal = 0,
  /** data = encodeConfChange(ConfChangeV2). */
  ConfChange = 1,
}

export interface Entry {
  readonly term: number;
  readonly index: number;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

// ---------------------------------------------------------------------------
// Messages

export enum MessageType {
  MsgHup = 0,
  MsgBeat = 1,
  MsgProp = 2,
  MsgApp = 3,
  MsgAppResp = 4,
  MsgVote = 5,
  MsgVoteResp = 6,
  MsgSnap = 7,
  MsgHeartbeat = 8,
  MsgHeartbeatResp = 9,
  MsgUnreachable = 10,
  MsgSnapStatus = 11,
  MsgCheckQuorum = 12,
  MsgTransferLeader = 13,
  MsgTimeoutNow = 14,
  MsgReadIndex = 15,
  MsgReadIndexResp = 16,
  MsgPreVote = 17,
  MsgPreVoteResp = 18,
}

export const MESSAGE_TYPE_NAMES: readonly string[] = [
  'MsgHup',
  'MsgBeat',
  'MsgProp',
  'MsgApp',
  'MsgAppResp',
  'MsgVote',
  'MsgVoteResp',
  'MsgSnap',
  'MsgHeartbeat',
  'MsgHeartbeatResp',
  'MsgUnreachable',
  'MsgSnapStatus',
  'MsgCheckQuorum',
  'MsgTransferLeader',
  'MsgTimeoutNow',
  'MsgReadIndex',
  'MsgReadIndexResp',
  'MsgPreVote',
  'MsgPreVoteResp',
];

/**
 * One Raft message. Field meaning depends on the type, as in etcd/raft:
 *   MsgApp:      logTerm/index = the entry preceding `entries`; commit = leader's commit.
 *   MsgAppResp:  index = last index appended (or the rejected index when reject);
 *                rejectHint/logTerm = fast-backtracking hint (follower's best guess).
 *   MsgVote/Pre: logTerm/index = candidate's last entry; context = campaign type.
 *   MsgHeartbeat: commit = min(leader commit, follower match); context = ReadIndex ctx.
 *   MsgSnap:     snapshot.
 *   MsgReadIndex(Resp): entries[0].data = request context; index = read index.
 */
export interface Message {
  type: MessageType;
  to: number;
  from: number;
  term: number;
  logTerm: number;
  index: number;
  entries: Entry[];
  commit: number;
  snapshot: Snapshot | null;
  reject: boolean;
  rejectHint: number;
  context: Uint8Array | null;
}

/** A message with every field at its zero value, overridden by `fields`. */
export function newMessage(fields: Partial<Message> & { type: MessageType }): Message {
  return {
    type: fields.type,
    to: fields.to ?? 0,
    from: fields.from ?? 0,
    term: fields.term ?? 0,
    logTerm: fields.logTerm ?? 0,
    index: fields.index ?? 0,
    entries: fields.entries ?? [],
    commit: fields.commit ?? 0,
    snapshot: fields.snapshot ?? null,
    reject: fields.reject ?? false,
    rejectHint: fields.rejectHint ?? 0,
    context: fields.context ?? null,
  };
}

/** Messages generated and consumed locally, never sent over the network. */
export function isLocalMsg(t: MessageType): boolean {
  return (
    t === MessageType.MsgHup ||
    t === MessageType.MsgBeat ||
    t === MessageType.MsgUnreachable ||
    t === MessageType.MsgSnapStatus ||
    t === MessageType.MsgCheckQuorum
  );
}

/** Responses to other messages (their sender is not necessarily in the group). */
export function isResponseMsg(t: MessageType): boolean {
  return (
    t === MessageType.MsgAppResp ||
    t === MessageType.MsgVoteResp ||
    t === MessageType.MsgHeartbeatResp ||
    t === MessageType.MsgUnreachable ||
    t === MessageType.MsgReadIndexResp ||
    t === MessageType.MsgPreVoteResp
  );
}

/** The response type for a vote request type. */
export function voteRespMsgType(t: MessageType): MessageType {
  if (t === MessageType.MsgVote) return MessageType.MsgVoteResp;
  if (t === MessageType.MsgPreVote) return MessageType.MsgPreVoteResp;
  throw new CairnError('raft.bad_message', `raft: not a vote message: ${MESSAGE_TYPE_NAMES[t] ?? t}`);
}

// ---------------------------------------------------------------------------
// State

/** Must be persisted before messages of the same Ready are sent. */
export interface HardState {
  readonly term: number;
  readonly vote: number;
  readonly commit: number;
}

export const EMPTY_HARD_STATE: HardState = { term: 0, vote: 0, commit: 0 };

export function isEmptyHardState(hs: HardState): boolean {
  return hs.term === 0 && hs.vote === 0 && hs.commit === 0;
}

export function hardStateEqual(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

export enum StateType {
  Follower = 0,
  Candidate = 1,
  Leader = 2,
  PreCandidate = 3,
}

export const STATE_TYPE_NAMES: readonly string[] = ['StateFollower', 'StateCandidate', 'StateLeader', 'StatePreCandidate'];

/** Volatile state, for information only (never persisted). */
export interface SoftState {
  readonly lead: number;
  readonly raftState: StateType;
}

/** A linearizable read: the state machine may serve `requestCtx` once applied ≥ index. */
export interface ReadState {
  readonly index: number;
  readonly requestCtx: Uint8Array;
}

export enum ReadOnlyOption {
  /** Confirm leadership with a heartbeat round (ReadIndex, Raft thesis §6.4). */
  Safe = 0,
  /** Trust the leader lease (needs bounded clock drift and checkQuorum). */
  LeaseBased = 1,
}

// ---------------------------------------------------------------------------
// Membership

/** The membership configuration, as persisted with snapshots and recovered at start. */
export interface ConfState {
  readonly voters: readonly number[];
  readonly learners: readonly number[];
  /** The outgoing voters while in a joint configuration; empty otherwise. */
  readonly votersOutgoing: readonly number[];
  /** Voters of the outgoing config that become learners when the joint config is left. */
  readonly learnersNext: readonly number[];
  /** Leave the joint configuration automatically once it is committed. */
  readonly autoLeave: boolean;
}

export const EMPTY_CONF_STATE: ConfState = { voters: [], learners: [], votersOutgoing: [], learnersNext: [], autoLeave: false };

export enum ConfChangeType {
  AddNode = 0,
  RemoveNode = 1,
  UpdateNode = 2,
  AddLearnerNode = 3,
}

export const CONF_CHANGE_TYPE_NAMES: readonly string[] = ['AddNode', 'RemoveNode', 'UpdateNode', 'AddLearnerNode'];

export interface ConfChangeSingle {
  readonly type: ConfChangeType;
  readonly nodeId: number;
}

export enum ConfChangeTransition {
  /** One simple change: applied directly; several: joint consensus, left automatically. */
  Auto = 0,
  /** Joint consensus, left automatically once committed. */
  JointImplicit = 1,
  /** Joint consensus, left only by an explicit empty conf change. */
  JointExplicit = 2,
}

/**
 * A configuration change. An empty `changes` list with transition Auto is the
 * request to leave a joint configuration.
 */
export interface ConfChangeV2 {
  readonly transition: ConfChangeTransition;
  readonly changes: readonly ConfChangeSingle[];
  readonly context: Uint8Array;
}

/** True when `cc` is the request to leave the current joint configuration. */
export function leaveJoint(cc: ConfChangeV2): boolean {
  return cc.changes.length === 0 && cc.transition === ConfChangeTransition.Auto;
}

/**
 * Whether `cc` enters a joint configuration, and if so whether it leaves it
 * automatically: [autoLeave, useJoint].
 */
export function enterJoint(cc: ConfChangeV2): [autoLeave: boolean, ok: boolean] {
  if (cc.transition !== ConfChangeTransition.Auto || cc.changes.length > 1) {
    switch (cc.transition) {
      case ConfChangeTransition.Auto:
      case ConfChangeTransition.JointImplicit:
        return [true, true];
      case ConfChangeTransition.JointExplicit:
        return [false, true];
    }
  }
  return [false, false];
}

// ---------------------------------------------------------------------------
// Snapshots

export interface SnapshotMetadata {
  readonly confState: ConfState;
  readonly index: number;
  readonly term: number;
}

export interface Snapshot {
  readonly data: Uint8Array;
  readonly metadata: SnapshotMetadata;
}

export const EMPTY_SNAPSHOT: Snapshot = { data: new Uint8Array(0), metadata: { confState: EMPTY_CONF_STATE, index: 0, term: 0 } };

export function isEmptySnap(s: Snapshot | null): boolean {
  return s === null || s.metadata.index === 0;
}

// ---------------------------------------------------------------------------
// Ready

/**
 * What the caller must do next, in this order (see raw-node.ts):
 *   1. persist `snapshot` (if any), `entries` and `hardState` — one write,
 *      synced when `mustSync`;
 *   2. send `messages`;
 *   3. apply `snapshot` then `committedEntries` to the state machine
 *      (a ConfChange entry is applied with RawNode.applyConfChange);
 *   4. call RawNode.advance(rd).
 */
export interface Ready {
  /** Changed volatile state, or null when unchanged. Not persisted. */
  readonly softState: SoftState | null;
  /** Changed hard state to persist, or null when unchanged. */
  readonly hardState: HardState | null;
  /** Linearizable reads that became servable (serve once applied ≥ index). */
  readonly readStates: ReadState[];
  /** Entries to append to stable storage (may overwrite a suffix). */
  readonly entries: Entry[];
  /** A snapshot to persist and apply, or null. */
  readonly snapshot: Snapshot | null;
  /** Committed entries to apply, bounded by maxCommittedSizePerReady. */
  readonly committedEntries: Entry[];
  /** Messages to send once steps 1 is durable. */
  readonly messages: Message[];
  /** Whether the write of step 1 must be synced to disk. */
  readonly mustSync: boolean;
}

// ---------------------------------------------------------------------------
// Storage

/** The recovered durable state. */
export interface InitialState {
  readonly hardState: HardState;
  readonly confState: ConfState;
}

/**
 * Read access to the durable log. Implementations: MemoryStorage (storage.ts)
 * and the store-backed one in src/kv. All methods are synchronous; the
 * cluster layer keeps the recent log tail in memory (DESIGN.md §3 "Storage").
 *
 * Index space: entries (firstIndex()-1, lastIndex()] are available; the term
 * of firstIndex()-1 is also available (it is the snapshot's term). Indexes
 * below that throw CompactedError; indexes above lastIndex() throw
 * UnavailableError.
 */
export interface Storage {
  initialState(): InitialState;
  /**
   * Entries [lo, hi), truncated to at most `maxSize` bytes of data — but always
   * at least one entry when lo < hi. The returned array may be shared; the
   * caller must not mutate it.
   */
  entries(lo: number, hi: number, maxSize: number): Entry[];
  /** Term of entry i, for i in [firstIndex()-1, lastIndex()]. */
  term(i: number): number;
  lastIndex(): number;
  /** The index of the first entry still available (snapshot index + 1). */
  firstIndex(): number;
  /**
   * The most recent snapshot. May throw SnapshotTemporarilyUnavailableError
   * while one is being prepared; the leader then retries later.
   */
  snapshot(): Snapshot;
}

// ---------------------------------------------------------------------------
// Config

export interface Config {
  /** This replica's id; must not be 0. */
  readonly id: number;
  /** Ticks without hearing from a leader before campaigning (randomized to [e, 2e)). */
  readonly electionTick: number;
  /** Ticks between leader heartbeats; must be < electionTick. */
  readonly heartbeatTick: number;
  readonly storage: Storage;
  /** Last applied index at restart (entries ≤ applied are never returned again). */
  readonly applied?: number;
  /**
   * Max bytes of entry data per MsgApp (always at least one entry). Default 0,
   * which (as in etcd) means one entry per message: set it (CockroachDB uses
   * 32 KiB) for throughput.
   */
  readonly maxSizePerMsg?: number;
  /** Max bytes of committed entries per Ready (always at least one entry); default unlimited. */
  readonly maxCommittedSizePerReady?: number;
  /** Max bytes of uncommitted entries the leader accepts; 0 = unlimited. */
  readonly maxUncommittedEntriesSize?: number;
  /** Max MsgApp in flight per follower in replicate state; must be > 0 (default 256). */
  readonly maxInflightMsgs?: number;
  /** Max bytes of entries in flight per follower; 0 = unlimited. */
  readonly maxInflightBytes?: number;
  /** The leader steps down when it has not heard from a quorum for an election timeout. */
  readonly checkQuorum?: boolean;
  /** Run a pre-vote round before incrementing the term (Raft thesis §9.6). */
  readonly preVote?: boolean;
  readonly readOnlyOption?: ReadOnlyOption;
  /** Drop proposals on followers instead of forwarding them to the leader. */
  readonly disableProposalForwarding?: boolean;
  /** A leader that removes itself steps down when the change is applied. */
  readonly stepDownOnRemoval?: boolean;
  /**
   * The periodic heartbeat (MsgBeat) leaves out a follower in Replicate state,
   * not paused, that the leader sent a MsgApp since the previous heartbeat:
   * that append already reset the follower's election timer and carried the
   * commit index, and its response marks the follower active for
   * check-quorum. Under a steady write load this drops the heartbeat, its
   * response and the empty MsgApp the response triggers while entries are in
   * flight (handleHeartbeatResponse) — four messages per follower per
   * heartbeat interval per range. Heartbeats carrying a ReadIndex context, to
   * probing, paused or idle followers are sent as before. Default false
   * (etcd/raft sends every heartbeat); Cairn turns it on (KvSettings).
   */
  readonly skipHeartbeatsAfterAppends?: boolean;
  /** The only source of randomness (election timeouts). */
  readonly prng: Prng;
  /** Where the library logs (a pino Logger fits); silent when absent. */
  readonly logger?: RaftLogger;
}

/**
 * The logging surface the library needs. A pino Logger satisfies it; the
 * interaction harness supplies one that writes into the transcript. Debug
 * lines are only built when isLevelEnabled('debug') says so.
 */
export interface RaftLogger {
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  isLevelEnabled?(level: string): boolean;
}

export const NO_LIMIT = Number.MAX_SAFE_INTEGER;

// ---------------------------------------------------------------------------
// Errors

/** A proposal was not accepted (no leader, leader transfer, config change in progress, …). Nothing happened. */
export class ProposalDroppedError extends CairnError {
  override name = 'ProposalDroppedError';
  constructor(reason = 'proposal dropped') {
    super('raft.proposal_dropped', `raft: ${reason}`, { retryable: true });
  }
}

/** The requested index is below the storage's first index. */
export class CompactedError extends CairnError {
  override name = 'CompactedError';
  constructor() {
    super('raft.compacted', 'raft: requested index is unavailable due to compaction');
  }
}

/** The requested index is above the storage's last index. */
export class UnavailableError extends CairnError {
  override name = 'UnavailableError';
  constructor() {
    super('raft.unavailable', 'raft: requested entry at index is unavailable');
  }
}

/** A snapshot older than the storage's current one. */
export class SnapshotOutOfDateError extends CairnError {
  override name = 'SnapshotOutOfDateError';
  constructor() {
    super('raft.snapshot_out_of_date', 'raft: requested index is older than the existing snapshot');
  }
}

/** The storage is preparing a snapshot; try again later. */
export class SnapshotTemporarilyUnavailableError extends CairnError {
  override name = 'SnapshotTemporarilyUnavailableError';
  constructor() {
    super('raft.snapshot_temporarily_unavailable', 'raft: snapshot is temporarily unavailable', { retryable: true });
  }
}

/** RawNode.step was given a local message type. */
export class StepLocalMsgError extends CairnError {
  override name = 'StepLocalMsgError';
  constructor() {
    super('raft.step_local_msg', 'raft: cannot step raft local message');
  }
}

/** RawNode.step was given a response from a peer that is not in the configuration. */
export class StepPeerNotFoundError extends CairnError {
  override name = 'StepPeerNotFoundError';
  constructor() {
    super('raft.step_peer_not_found', 'raft: cannot step as peer not found');
  }
}

// ---------------------------------------------------------------------------
// Helpers over entries

/** The bytes an entry counts for in size limits (its data). */
export function entrySize(e: Entry): number {
  return e.data.length;
}

/**
 * The longest prefix of `ents` whose total size is ≤ maxSize, but at least one
 * entry. Returns `ents` itself when nothing is cut (no copy).
 */
export function limitSize(ents: Entry[], maxSize: number): Entry[] {
  if (ents.length === 0 || maxSize >= NO_LIMIT) return ents;
  let size = (ents[0] as Entry).data.length;
  let n = 1;
  for (; n < ents.length; n++) {
    size += (ents[n] as Entry).data.length;
    if (size > maxSize) break;
  }
  return n === ents.length ? ents : ents.slice(0, n);
}
