/**
 * Raft: the consensus state machine (Ongaro & Ousterhout, "In Search of an
 * Understandable Consensus Algorithm", and Ongaro's thesis), structured like
 * etcd/raft's raft.go. Pure: no I/O, no timers, no clock; the only randomness
 * is the injected Prng (election timeouts). Drive it through RawNode.
 *
 *                 times out,            receives votes
 *   ┌──────────┐  starts election  ┌──────────────┐  from quorum  ┌────────┐
 *   │ Follower │ ────────────────► │(Pre)Candidate│ ────────────► │ Leader │
 *   └──────────┘ ◄──────────────── └──────────────┘               └────────┘
 *        ▲      discovers leader / higher term                        │
 *        └──────────────────────────── discovers higher term ─────────┘
 *
 * Features: pre-vote (thesis §9.6), check-quorum and leader stickiness
 * (§6.2, §9.6), per-follower Progress with probe/replicate/snapshot and an
 * inflight window, fast log backtracking (etcd's findConflictByTerm), the
 * §5.4.2 commit rule, snapshots, joint consensus with learners (§6, thesis
 * §4.3), leader transfer (thesis §3.10), ReadIndex (thesis §6.4), proposal
 * forwarding, and size limits on MsgApp and on applied entries per Ready.
 *
 * Persistence model (classic etcd): everything in `msgs` is sent only after
 * the Ready that carries it has been persisted, so a vote or an append
 * acknowledgement is never sent before the state it reports is durable. The
 * leader counts its own log as acked as soon as it appends (its append is
 * persisted in the same Ready, before anything is applied).
 *
 * Departure from etcd/raft (opt-in, Config.skipHeartbeatsAfterAppends): the
 * periodic heartbeat skips a replicating follower that was sent a MsgApp since
 * the previous heartbeat round — the append did the heartbeat's work (election
 * timer, commit, liveness for check-quorum). With many ranges each writing a
 * little, heartbeats and the empty appends their responses trigger were most
 * of the Raft messages per write. ReadIndex heartbeats are never skipped.
 *
 * Logging: state transitions at info, protocol chatter at debug (only built
 * when debug is enabled). Log lines begin with the replica id.
 */
import { assert } from '../src/util/assert.js';
import type { Prng } from '../src/util/prng.js';
import { Changer, restore as restoreConfState, type ChangeResult } from './confchange/confchange.js';
import { decodeConfChange, encodeConfChange, confChangesToString } from './conf-change-codec.js';
import { describeConfState } from './describe.js';
import { RaftLog } from './log.js';
import { VoteResult } from './quorum/majority.js';
import { ReadOnly } from './read-only.js';
import { Inflights } from './tracker/inflights.js';
import { ProgressStateType, type Progress } from './tracker/progress.js';
import { ProgressTracker, describeTrackerConfig, emptyTrackerConfig } from './tracker/tracker.js';
import {
  CompactedError,
  EntryType,
  MESSAGE_TYPE_NAMES,
  MessageType,
  NONE,
  NO_LIMIT,
  ProposalDroppedError,
  ReadOnlyOption,
  STATE_TYPE_NAMES,
  SnapshotTemporarilyUnavailableError,
  StateType,
  UnavailableError,
  enterJoint,
  isEmptyHardState,
  leaveJoint,
  newMessage,
  voteRespMsgType,
  type ConfChangeV2,
  type ConfState,
  type Config,
  type Entry,
  type HardState,
  type Message,
  type RaftLogger,
  type ReadState,
  type Snapshot,
  type SoftState,
} from './types.js';

export enum CampaignType {
  /** A pre-vote round (thesis §9.6): nobody changes term until it is won. */
  PreElection = 0,
  /** A normal election. */
  Election = 1,
  /** An election forced by leader transfer: bypasses leader stickiness. */
  Transfer = 2,
}

/** The context marking a vote request as a leader transfer. */
const CAMPAIGN_TRANSFER_CTX = Buffer.from('CampaignTransfer');

function isTransferCtx(ctx: Uint8Array | null): boolean {
  return ctx !== null && Buffer.from(ctx.buffer, ctx.byteOffset, ctx.byteLength).equals(CAMPAIGN_TRANSFER_CTX);
}

const SILENT: RaftLogger = { debug() {}, info() {}, warn() {}, error() {} };
const EMPTY_DATA = new Uint8Array(0);

/** Shared empty entry list of messages without entries (frozen: a push throws). */
const NO_ENTRIES = Object.freeze([]) as unknown as Entry[];

/** The hot-path message constructor (one allocation; from and term are stamped by send()). */
function replicationMsg(
  type: MessageType,
  to: number,
  index: number,
  logTerm: number,
  entries: Entry[],
  commit: number,
  context: Uint8Array | null,
): Message {
  return { type, to, from: 0, term: 0, logTerm, index, entries, commit, snapshot: null, reject: false, rejectHint: 0, context };
}

/** The size an entry counts for in uncommitted-size and inflight-byte limits. */
function payloadsSize(ents: readonly Entry[]): number {
  let s = 0;
  for (let k = 0; k < ents.length; k++) s += (ents[k] as Entry).data.length;
  return s;
}

export class Raft {
  readonly id: number;
  term = 0;
  vote = NONE;
  readStates: ReadState[] = [];
  readonly raftLog: RaftLog;
  readonly maxMsgSize: number;
  readonly maxUncommittedSize: number;
  trk: ProgressTracker;
  state: StateType = StateType.Follower;
  /** This replica is a learner in the current config. */
  isLearner = false;
  /** Messages to send once the Ready carrying them is persisted. */
  msgs: Message[] = [];
  lead = NONE;
  /** The transfer target while a leader transfer is in progress. */
  leadTransferee = NONE;
  /**
   * Only one conf change may be pending (in the log, unapplied) at a time:
   * the index of the latest one, or the leader's last index at election.
   */
  pendingConfIndex = 0;
  /** Bytes of entry data appended by this leader and not yet committed. */
  uncommittedSize = 0;
  readOnly: ReadOnly;
  /** Ticks since the last election timeout reset (or, on a leader, the last check-quorum). */
  electionElapsed = 0;
  heartbeatElapsed = 0;
  readonly checkQuorum: boolean;
  readonly preVote: boolean;
  readonly heartbeatTimeout: number;
  readonly electionTimeout: number;
  /** In [electionTimeout, 2*electionTimeout), drawn from the Prng on every reset. */
  randomizedElectionTimeout = 0;
  readonly disableProposalForwarding: boolean;
  readonly stepDownOnRemoval: boolean;
  /** Config.skipHeartbeatsAfterAppends. */
  readonly skipHeartbeatsAfterAppends: boolean;
  /** ReadIndex requests received before this leader committed an entry of its term. */
  pendingReadIndexMessages: Message[] = [];
  readonly logger: RaftLogger;
  private readonly prng: Prng;
  private readonly readOnlyOption: ReadOnlyOption;

  constructor(c: Config) {
    validateConfig(c);
    this.id = c.id;
    this.prng = c.prng;
    this.logger = c.logger ?? SILENT;
    this.maxMsgSize = c.maxSizePerMsg ?? 0;
    this.raftLog = new RaftLog(c.storage, c.maxCommittedSizePerReady ?? NO_LIMIT);
    this.maxUncommittedSize = c.maxUncommittedEntriesSize ?? 0;
    this.trk = new ProgressTracker(c.maxInflightMsgs ?? 256, c.maxInflightBytes ?? 0);
    this.checkQuorum = c.checkQuorum ?? false;
    this.preVote = c.preVote ?? false;
    this.readOnlyOption = c.readOnlyOption ?? ReadOnlyOption.Safe;
    this.readOnly = new ReadOnly(this.readOnlyOption);
    this.heartbeatTimeout = c.heartbeatTick;
    this.electionTimeout = c.electionTick;
    this.disableProposalForwarding = c.disableProposalForwarding ?? false;
    this.stepDownOnRemoval = c.stepDownOnRemoval ?? false;
    this.skipHeartbeatsAfterAppends = c.skipHeartbeatsAfterAppends ?? false;

    const { hardState, confState } = c.storage.initialState();
    const res = restoreConfState(confState, this.raftLog.lastIndex(), this.trk.maxInflight, this.trk.maxInflightBytes, {
      config: emptyTrackerConfig(),
      progress: new Map(),
    });
    assertConfStatesEquivalent(confState, this.switchToConfig(res));
    if (!isEmptyHardState(hardState)) this.loadState(hardState);
    if ((c.applied ?? 0) > 0) this.raftLog.appliedTo(c.applied as number);
    this.becomeFollower(this.term, NONE);
    this.logger.info(
      `${this.id} newRaft [peers: [${this.trk.voterNodes().join(',')}], term: ${this.term}, commit: ${this.raftLog.committed}, applied: ${this.raftLog.applied}, lastindex: ${this.raftLog.lastIndex()}, lastterm: ${this.raftLog.lastTerm()}]`,
    );
  }

  /** Whether debug lines should be built (asked each time: the level may change). Only on rare paths. */
  private get debugOn(): boolean {
    return this.logger.isLevelEnabled?.('debug') ?? false;
  }

  hasLeader(): boolean {
    return this.lead !== NONE;
  }

  softState(): SoftState {
    return { lead: this.lead, raftState: this.state };
  }

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.raftLog.committed };
  }

  // -------------------------------------------------------------------------
  // Sending

  /** Queues a message; stamps `from` and (for non-vote messages) the term. */
  private send(m: Message): void {
    if (m.from === NONE) m.from = this.id;
    const t = m.type;
    if (t === MessageType.MsgVote || t === MessageType.MsgVoteResp || t === MessageType.MsgPreVote || t === MessageType.MsgPreVoteResp) {
      // Vote messages carry the term being campaigned for (or the candidate's).
      if (!(m.term !== 0)) assert(false, `raft: term should be set when sending ${MESSAGE_TYPE_NAMES[t]}`);
    } else {
      if (!(m.term === 0)) assert(false, `raft: term should not be set when sending ${MESSAGE_TYPE_NAMES[t]} (was ${m.term})`);
      // Proposals and read requests are forwarded as local messages (term 0).
      if (t !== MessageType.MsgProp && t !== MessageType.MsgReadIndex) m.term = this.term;
    }
    this.msgs.push(m);
  }

  /** Sends a MsgApp (even an empty one) or a snapshot to `to`. */
  sendAppend(to: number): void {
    this.maybeSendAppend(to, true);
  }

  /**
   * Sends a MsgApp with the entries from the follower's next index (or a
   * snapshot when they are compacted away). Returns whether a message was
   * sent; with sendIfEmpty=false nothing is sent when there are no entries.
   */
  maybeSendAppend(to: number, sendIfEmpty: boolean): boolean {
    const pr = this.trk.progress.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    let logTerm: number;
    let ents: Entry[];
    try {
      logTerm = this.raftLog.term(prevIndex);
      // A throttled replicating follower (window full, unpaused by a
      // heartbeat response) gets an empty MsgApp: if everything in flight
      // was lost, its ack or rejection clears the window instead of stalling.
      ents =
        pr.state === ProgressStateType.Replicate && pr.inflights.full() ? [] : this.raftLog.entries(pr.next, this.maxMsgSize);
    } catch (e) {
      if (e instanceof CompactedError || e instanceof UnavailableError) return this.maybeSendSnapshot(to, pr);
      throw e;
    }
    if (ents.length === 0 && !sendIfEmpty) return false;
    this.send(
      replicationMsg(MessageType.MsgApp, to, prevIndex, logTerm, ents, this.raftLog.committed, null),
    );
    pr.sentEntries(ents.length, payloadsSize(ents));
    return true;
  }

  private maybeSendSnapshot(to: number, pr: Progress): boolean {
    if (!pr.recentActive) {
      if (this.debugOn) this.logger.debug(`${this.id} ignore sending snapshot to ${to} since it is not recently active`);
      return false;
    }
    let snap: Snapshot;
    try {
      snap = this.raftLog.snapshot();
    } catch (e) {
      if (e instanceof SnapshotTemporarilyUnavailableError) {
        if (this.debugOn) this.logger.debug(`${this.id} failed to send snapshot to ${to} because snapshot is temporarily unavailable`);
        return false;
      }
      throw e;
    }
    assert(snap.metadata.index !== 0, 'raft: need non-empty snapshot');
    const { index: sindex, term: sterm } = snap.metadata;
    if (this.debugOn) {
      this.logger.debug(
        `${this.id} [firstindex: ${this.raftLog.firstIndex()}, commit: ${this.raftLog.committed}] sent snapshot[index: ${sindex}, term: ${sterm}] to ${to} [${pr.toString()}]`,
      );
    }
    pr.becomeSnapshot(sindex);
    this.send(newMessage({ type: MessageType.MsgSnap, to, snapshot: snap }));
    return true;
  }

  private sendHeartbeat(to: number, ctx: Uint8Array | null): void {
    const pr = this.trk.progress.get(to) as Progress;
    // A follower may not have the leader's whole log: never tell it to
    // commit past what it matches.
    const commit = Math.min(pr.match, this.raftLog.committed);
    this.send(replicationMsg(MessageType.MsgHeartbeat, to, 0, 0, NO_ENTRIES, commit, ctx));
  }

  bcastAppend(): void {
    const ids = this.trk.ids();
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k] as number;
      if (id !== this.id) this.sendAppend(id);
    }
  }

  bcastHeartbeat(): void {
    this.bcastHeartbeatWithCtx(this.readOnly.lastPendingRequestCtx());
  }

  private bcastHeartbeatWithCtx(ctx: Uint8Array | null): void {
    const ids = this.trk.ids();
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k] as number;
      if (id === this.id) continue;
      const pr = this.trk.progress.get(id) as Progress;
      const appended = pr.appendSentSinceBeat;
      pr.appendSentSinceBeat = false;
      // Config.skipHeartbeatsAfterAppends: the append since the last round served as this one.
      if (appended && ctx === null && this.skipHeartbeatsAfterAppends && pr.state === ProgressStateType.Replicate && !pr.isPaused()) continue;
      this.sendHeartbeat(id, ctx);
    }
  }

  // -------------------------------------------------------------------------
  // Commit and apply

  /** Advances the commit index to the quorum index, if it is of this term. */
  maybeCommit(): boolean {
    return this.raftLog.maybeCommit(this.trk.committed(), this.term);
  }

  /** The caller applied entries up to `index` (RawNode.advance). */
  appliedTo(index: number): void {
    this.raftLog.appliedTo(index);
    if (this.trk.config.autoLeave && index >= this.pendingConfIndex && this.state === StateType.Leader) {
      // The joint config is committed and applied: propose to leave it. An
      // empty ConfChangeV2 with transition Auto is the "leave joint" request.
      const data = encodeConfChange({ transition: 0, changes: [], context: EMPTY_DATA });
      try {
        this.step(newMessage({ type: MessageType.MsgProp, from: this.id, entries: [{ term: 0, index: 0, type: EntryType.ConfChange, data }] }));
        this.logger.info(`${this.id} initiating automatic transition out of joint configuration ${describeTrackerConfig(this.trk.config)}`);
      } catch (e) {
        if (!(e instanceof ProposalDroppedError)) throw e;
        this.logger.debug(`${this.id} not initiating automatic transition out of joint configuration ${describeTrackerConfig(this.trk.config)}: ${e.message}`);
      }
    }
  }

  /** Committed entries were handed out: they no longer count as uncommitted. */
  reduceUncommittedSize(size: number): void {
    if (size > this.uncommittedSize) this.uncommittedSize = 0;
    else this.uncommittedSize -= size;
  }

  private increaseUncommittedSize(ents: readonly Entry[]): boolean {
    const s = payloadsSize(ents);
    // An empty entry (leader's no-op) or the first entry is always allowed, so
    // a large proposal cannot wedge the group.
    if (this.uncommittedSize > 0 && s > 0 && this.maxUncommittedSize > 0 && this.uncommittedSize + s > this.maxUncommittedSize) {
      return false;
    }
    this.uncommittedSize += s;
    return true;
  }

  /**
   * Appends entries as the leader, assigning term and index. False when over
   * the uncommitted budget. NB: the entries are stamped in place (they come
   * fresh from a proposal message, which the library owns once stepped).
   */
  appendEntry(es: readonly Entry[]): boolean {
    if (!this.increaseUncommittedSize(es)) {
      if (this.debugOn) this.logger.debug(`${this.id} appending new entries to log would exceed uncommitted entry size limit; dropping proposal`);
      return false;
    }
    let li = this.raftLog.lastIndex();
    for (let k = 0; k < es.length; k++) {
      const e = es[k] as { term: number; index: number };
      e.term = this.term;
      e.index = ++li;
    }
    li = this.raftLog.append(es);
    // The leader's own append counts towards the quorum (it is persisted in
    // the same Ready, before anything it commits is applied).
    (this.trk.progress.get(this.id) as Progress).maybeUpdate(li);
    this.maybeCommit();
    return true;
  }

  // -------------------------------------------------------------------------
  // Ticks

  tick(): void {
    if (this.state === StateType.Leader) this.tickHeartbeat();
    else this.tickElection();
  }

  /** Followers and candidates: campaign when the randomized election timeout passes. */
  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.pastElectionTimeout()) {
      this.electionElapsed = 0;
      this.step(newMessage({ type: MessageType.MsgHup, from: this.id }));
    }
  }

  /** Leaders: heartbeats every heartbeatTimeout, check-quorum every electionTimeout. */
  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.electionTimeout) {
      this.electionElapsed = 0;
      if (this.checkQuorum) this.step(newMessage({ type: MessageType.MsgCheckQuorum, from: this.id }));
      // A leader transfer that did not finish within an election timeout is abandoned.
      if (this.state === StateType.Leader && this.leadTransferee !== NONE) this.abortLeaderTransfer();
    }
    if (this.state !== StateType.Leader) return;
    if (this.heartbeatElapsed >= this.heartbeatTimeout) {
      this.heartbeatElapsed = 0;
      this.step(newMessage({ type: MessageType.MsgBeat, from: this.id }));
    }
  }

  pastElectionTimeout(): boolean {
    return this.electionElapsed >= this.randomizedElectionTimeout;
  }

  private resetRandomizedElectionTimeout(): void {
    this.randomizedElectionTimeout = this.electionTimeout + this.prng.intn(this.electionTimeout);
  }

  // -------------------------------------------------------------------------
  // Role transitions

  becomeFollower(term: number, lead: number): void {
    this.reset(term);
    this.lead = lead;
    this.state = StateType.Follower;
    this.logger.info(`${this.id} became follower at term ${this.term}`);
  }

  becomeCandidate(): void {
    assert(this.state !== StateType.Leader, 'raft: invalid transition [leader -> candidate]');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.state = StateType.Candidate;
    this.logger.info(`${this.id} became candidate at term ${this.term}`);
  }

  becomePreCandidate(): void {
    assert(this.state !== StateType.Leader, 'raft: invalid transition [leader -> pre-candidate]');
    // Pre-candidates change neither term nor vote (thesis §9.6).
    this.trk.resetVotes();
    this.lead = NONE;
    this.state = StateType.PreCandidate;
    this.logger.info(`${this.id} became pre-candidate at term ${this.term}`);
  }

  becomeLeader(): void {
    assert(this.state !== StateType.Follower, 'raft: invalid transition [follower -> leader]');
    this.reset(this.term);
    this.lead = this.id;
    this.state = StateType.Leader;
    const self = this.trk.progress.get(this.id) as Progress;
    // The leader's own progress is always replicating and active.
    self.becomeReplicate();
    self.recentActive = true;
    // Conservatively assume the unapplied tail may hold a conf change: no new
    // conf change is accepted until it is applied.
    this.pendingConfIndex = this.raftLog.lastIndex();
    // An empty entry of the new term: committing it commits everything before
    // it (Raft §5.4.2) and establishes the commit index for ReadIndex.
    const ok = this.appendEntry([{ term: 0, index: 0, type: EntryType.Normal, data: EMPTY_DATA }]);
    assert(ok, 'raft: empty entry was dropped');
    this.logger.info(`${this.id} became leader at term ${this.term}`);
  }

  private reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.resetRandomizedElectionTimeout();
    this.abortLeaderTransfer();
    this.trk.resetVotes();
    const last = this.raftLog.lastIndex();
    for (const [id, pr] of this.trk.progress) {
      pr.match = id === this.id ? last : 0;
      pr.next = last + 1;
      pr.state = ProgressStateType.Probe;
      pr.pendingSnapshot = 0;
      pr.recentActive = false;
      pr.msgAppFlowPaused = false;
      pr.inflights = new Inflights(this.trk.maxInflight, this.trk.maxInflightBytes);
    }
    this.pendingConfIndex = 0;
    this.uncommittedSize = 0;
    this.readOnly = new ReadOnly(this.readOnlyOption);
  }

  /** Whether this replica may become leader (a voter, not waiting on a snapshot). */
  promotable(): boolean {
    const pr = this.trk.progress.get(this.id);
    return pr !== undefined && !pr.isLearner && !this.raftLog.hasNextOrInProgressSnapshot();
  }

  // -------------------------------------------------------------------------
  // Elections

  private hup(t: CampaignType): void {
    if (this.state === StateType.Leader) {
      if (this.debugOn) this.logger.debug(`${this.id} ignoring MsgHup because already leader`);
      return;
    }
    if (!this.promotable()) {
      this.logger.warn(`${this.id} is unpromotable and can not campaign`);
      return;
    }
    if (this.hasUnappliedConfChanges()) {
      this.logger.warn(`${this.id} cannot campaign at term ${this.term} since there are still pending configuration changes to apply`);
      return;
    }
    this.logger.info(`${this.id} is starting a new election at term ${this.term}`);
    this.campaign(t);
  }

  private hasUnappliedConfChanges(): boolean {
    if (this.raftLog.applied >= this.raftLog.committed) return false;
    // Scan committed-but-unapplied entries in pages, bounded by the message size.
    let lo = this.raftLog.applied + 1;
    const hi = this.raftLog.committed + 1;
    const pageSize = this.maxMsgSize === 0 ? NO_LIMIT : this.maxMsgSize;
    while (lo < hi) {
      let ents: Entry[];
      try {
        ents = this.raftLog.slice(lo, hi, pageSize);
      } catch (e) {
        assert(false, `raft: error scanning unapplied entries [${lo}, ${hi}): ${(e as Error).message}`);
      }
      for (const e of ents) if (e.type === EntryType.ConfChange) return true;
      lo += ents.length;
    }
    return false;
  }

  /** Starts a (pre-)election: votes for itself and asks every other voter. */
  campaign(t: CampaignType): void {
    if (!this.promotable()) {
      this.logger.warn(`${this.id} is unpromotable; campaign() should have been called`);
    }
    let term: number;
    let voteMsg: MessageType;
    if (t === CampaignType.PreElection) {
      this.becomePreCandidate();
      voteMsg = MessageType.MsgPreVote;
      // Pre-votes are requested for the next term without incrementing ours.
      term = this.term + 1;
    } else {
      this.becomeCandidate();
      voteMsg = MessageType.MsgVote;
      term = this.term;
    }
    const [, , res] = this.poll(this.id, voteRespMsgType(voteMsg), true);
    if (res === VoteResult.VoteWon) {
      // A single-voter group wins at once.
      if (t === CampaignType.PreElection) this.campaign(CampaignType.Election);
      else this.becomeLeader();
      return;
    }
    const ids = this.trk.voterNodes();
    const lastIndex = this.raftLog.lastIndex();
    const lastTerm = this.raftLog.lastTerm();
    for (const id of ids) {
      if (id === this.id) continue;
      this.logger.info(
        `${this.id} [logterm: ${lastTerm}, index: ${lastIndex}] sent ${MESSAGE_TYPE_NAMES[voteMsg]} request to ${id} at term ${this.term}`,
      );
      this.send(
        newMessage({
          type: voteMsg,
          to: id,
          term,
          index: lastIndex,
          logTerm: lastTerm,
          context: t === CampaignType.Transfer ? CAMPAIGN_TRANSFER_CTX : null,
        }),
      );
    }
  }

  private poll(id: number, t: MessageType, v: boolean): [number, number, VoteResult] {
    if (v) this.logger.info(`${this.id} received ${MESSAGE_TYPE_NAMES[t]} from ${id} at term ${this.term}`);
    else this.logger.info(`${this.id} received ${MESSAGE_TYPE_NAMES[t]} rejection from ${id} at term ${this.term}`);
    this.trk.recordVote(id, v);
    return this.trk.tallyVotes();
  }

  // -------------------------------------------------------------------------
  // Step

  /**
   * The entry point for every message, local or remote. Throws
   * ProposalDroppedError for a local proposal (or read) that cannot be
   * accepted; everything else that cannot be handled is dropped (and logged).
   */
  step(m: Message): void {
    // Handle the message term, which may cause a step down (Raft §5.1).
    if (m.term === 0) {
      // Local message.
    } else if (m.term > this.term) {
      if (m.type === MessageType.MsgVote || m.type === MessageType.MsgPreVote) {
        const force = isTransferCtx(m.context);
        // Leader stickiness (thesis §4.2.3): while we hear from a leader within
        // the election timeout, ignore disruptive candidates.
        const inLease = this.checkQuorum && this.lead !== NONE && this.electionElapsed < this.electionTimeout;
        if (!force && inLease) {
          this.logger.info(
            `${this.id} [logterm: ${this.raftLog.lastTerm()}, index: ${this.raftLog.lastIndex()}, vote: ${this.vote}] ignored ${MESSAGE_TYPE_NAMES[m.type]} from ${m.from} [logterm: ${m.logTerm}, index: ${m.index}] at term ${this.term}: lease is not expired (remaining ticks: ${this.electionTimeout - this.electionElapsed})`,
          );
          return;
        }
      }
      if (m.type === MessageType.MsgPreVote) {
        // Never change our term in response to a pre-vote.
      } else if (m.type === MessageType.MsgPreVoteResp && !m.reject) {
        // The term of a granted pre-vote is the one we campaign for; we adopt
        // it when we win the pre-vote quorum.
      } else {
        this.logger.info(
          `${this.id} [term: ${this.term}] received a ${MESSAGE_TYPE_NAMES[m.type]} message with higher term from ${m.from} [term: ${m.term}]`,
        );
        if (m.type === MessageType.MsgApp || m.type === MessageType.MsgHeartbeat || m.type === MessageType.MsgSnap) {
          this.becomeFollower(m.term, m.from);
        } else {
          this.becomeFollower(m.term, NONE);
        }
      }
    } else if (m.term < this.term) {
      if ((this.checkQuorum || this.preVote) && (m.type === MessageType.MsgHeartbeat || m.type === MessageType.MsgApp)) {
        // A stale leader (e.g. after a partition) would otherwise never learn
        // of the new term: with check-quorum or pre-vote, the node that
        // advanced its term cannot disrupt it with votes, so tell it here.
        this.send(newMessage({ type: MessageType.MsgAppResp, to: m.from }));
      } else if (m.type === MessageType.MsgPreVote) {
        // Reject, so that a pre-candidate with a stale term learns of ours.
        this.logger.info(
          `${this.id} [logterm: ${this.raftLog.lastTerm()}, index: ${this.raftLog.lastIndex()}, vote: ${this.vote}] rejected ${MESSAGE_TYPE_NAMES[m.type]} from ${m.from} [logterm: ${m.logTerm}, index: ${m.index}] at term ${this.term}`,
        );
        this.send(newMessage({ type: MessageType.MsgPreVoteResp, to: m.from, term: this.term, reject: true }));
      } else {
        this.logger.info(
          `${this.id} [term: ${this.term}] ignored a ${MESSAGE_TYPE_NAMES[m.type]} message with lower term from ${m.from} [term: ${m.term}]`,
        );
      }
      return;
    }

    switch (m.type) {
      case MessageType.MsgHup:
        this.hup(this.preVote ? CampaignType.PreElection : CampaignType.Election);
        return;
      case MessageType.MsgVote:
      case MessageType.MsgPreVote: {
        // We can vote if this is a repeat of a vote we cast, or we have not
        // voted and know no leader in this term, or it is a pre-vote for a
        // future term.
        const canVote =
          this.vote === m.from ||
          (this.vote === NONE && this.lead === NONE) ||
          (m.type === MessageType.MsgPreVote && m.term > this.term);
        // Raft §5.4.1: only a candidate whose log is at least as up to date.
        if (canVote && this.raftLog.isUpToDate(m.index, m.logTerm)) {
          this.logger.info(
            `${this.id} [logterm: ${this.raftLog.lastTerm()}, index: ${this.raftLog.lastIndex()}, vote: ${this.vote}] cast ${MESSAGE_TYPE_NAMES[m.type]} for ${m.from} [logterm: ${m.logTerm}, index: ${m.index}] at term ${this.term}`,
          );
          // The response carries the message's term: for a pre-vote that is
          // the future term, which the pre-candidate recognizes.
          this.send(newMessage({ type: voteRespMsgType(m.type), to: m.from, term: m.term }));
          if (m.type === MessageType.MsgVote) {
            this.electionElapsed = 0;
            this.vote = m.from;
          }
        } else {
          this.logger.info(
            `${this.id} [logterm: ${this.raftLog.lastTerm()}, index: ${this.raftLog.lastIndex()}, vote: ${this.vote}] rejected ${MESSAGE_TYPE_NAMES[m.type]} from ${m.from} [logterm: ${m.logTerm}, index: ${m.index}] at term ${this.term}`,
          );
          this.send(newMessage({ type: voteRespMsgType(m.type), to: m.from, term: this.term, reject: true }));
        }
        return;
      }
      default:
        switch (this.state) {
          case StateType.Leader:
            this.stepLeader(m);
            return;
          case StateType.Candidate:
          case StateType.PreCandidate:
            this.stepCandidate(m);
            return;
          case StateType.Follower:
            this.stepFollower(m);
            return;
        }
    }
  }

  private stepLeader(m: Message): void {
    switch (m.type) {
      case MessageType.MsgBeat:
        this.bcastHeartbeat();
        return;
      case MessageType.MsgCheckQuorum:
        if (!this.trk.quorumActive()) {
          this.logger.warn(`${this.id} stepped down to follower since quorum is not active`);
          this.becomeFollower(this.term, NONE);
        }
        // Mark everyone but ourselves inactive for the next round.
        for (const [id, pr] of this.trk.progress) if (id !== this.id) pr.recentActive = false;
        return;
      case MessageType.MsgProp:
        this.leaderPropose(m);
        return;
      case MessageType.MsgReadIndex:
        // A single voter needs no heartbeat round.
        if (this.trk.isSingleton()) {
          const resp = this.responseToReadIndexReq(m, this.raftLog.committed);
          if (resp !== null) this.send(resp);
          return;
        }
        // Thesis §6.4: the leader must have committed an entry of its term
        // before its commit index is known to be current.
        if (!this.committedEntryInCurrentTerm()) {
          this.pendingReadIndexMessages.push(m);
          return;
        }
        this.sendMsgReadIndexResponse(m);
        return;
      default:
        break;
    }

    // Everything else is from a peer.
    const pr = this.trk.progress.get(m.from);
    if (pr === undefined) {
      if (this.debugOn) this.logger.debug(`${this.id} no progress available for ${m.from}`);
      return;
    }
    switch (m.type) {
      case MessageType.MsgAppResp:
        this.handleAppendResponse(m, pr);
        return;
      case MessageType.MsgHeartbeatResp:
        this.handleHeartbeatResponse(m, pr);
        return;
      case MessageType.MsgSnapStatus:
        if (pr.state !== ProgressStateType.Snapshot) return;
        if (!m.reject) {
          pr.becomeProbe();
          if (this.debugOn) this.logger.debug(`${this.id} snapshot succeeded, resumed sending replication messages to ${m.from} [${pr.toString()}]`);
        } else {
          // Snapshot failed: clear the pending snapshot so that probing
          // starts over from match+1.
          pr.pendingSnapshot = 0;
          pr.becomeProbe();
          if (this.debugOn) this.logger.debug(`${this.id} snapshot failed, resumed sending replication messages to ${m.from} [${pr.toString()}]`);
        }
        // Wait for a heartbeat response before probing (the snapshot may
        // still be in transit or being applied).
        pr.msgAppFlowPaused = true;
        return;
      case MessageType.MsgUnreachable:
        // Optimistic replication into the void is wasted: fall back to probing.
        if (pr.state === ProgressStateType.Replicate) pr.becomeProbe();
        if (this.debugOn) this.logger.debug(`${this.id} failed to send message to ${m.from} because it is unreachable [${pr.toString()}]`);
        return;
      case MessageType.MsgTransferLeader:
        this.handleTransferLeader(m, pr);
        return;
      default:
        return;
    }
  }

  private leaderPropose(m: Message): void {
    assert(m.entries.length > 0, `raft: ${this.id} stepped empty MsgProp`);
    if (!this.trk.progress.has(this.id)) {
      // We were removed from the configuration while leader.
      throw new ProposalDroppedError('proposal dropped: leader is not in the configuration');
    }
    if (this.leadTransferee !== NONE) {
      if (this.debugOn) this.logger.debug(`${this.id} [term ${this.term}] transfer leadership to ${this.leadTransferee} is in progress; dropping proposal`);
      throw new ProposalDroppedError('proposal dropped: leader transfer in progress');
    }
    let entries = m.entries;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i] as Entry;
      if (e.type !== EntryType.ConfChange) continue;
      const cc = decodeConfChange(e.data);
      const alreadyPending = this.pendingConfIndex > this.raftLog.applied;
      const alreadyJoint = this.trk.config.voters.joint;
      const wantsLeaveJoint = cc.changes.length === 0;
      let failed = '';
      if (alreadyPending) failed = `possible unapplied conf change at index ${this.pendingConfIndex} (applied to ${this.raftLog.applied})`;
      else if (alreadyJoint && !wantsLeaveJoint) failed = 'must transition out of joint config first';
      else if (!alreadyJoint && wantsLeaveJoint) failed = 'not in joint state; refusing empty conf change';
      if (failed !== '') {
        // Replace it by an empty normal entry: the proposer learns of the
        // refusal when the entry commits without effect (as etcd does).
        this.logger.info(`${this.id} ignoring conf change ${confChangesToString(cc.changes)} at config ${describeTrackerConfig(this.trk.config)}: ${failed}`);
        if (entries === m.entries) entries = entries.slice();
        entries[i] = { term: 0, index: 0, type: EntryType.Normal, data: EMPTY_DATA };
      } else {
        this.pendingConfIndex = this.raftLog.lastIndex() + i + 1;
      }
    }
    if (!this.appendEntry(entries)) throw new ProposalDroppedError('proposal dropped: uncommitted log size limit reached');
    this.bcastAppend();
  }

  private handleAppendResponse(m: Message, pr: Progress): void {
    pr.recentActive = true;
    if (m.reject) {
      // Fast backtracking: the follower's hint (rejectHint, logTerm) is the
      // last entry where its log may match; skip to the last index in our
      // log with a term ≤ logTerm, so that a whole term of divergent entries
      // costs one round trip instead of one per entry.
      if (this.debugOn) this.logger.debug(`${this.id} received MsgAppResp(rejected, hint: (index ${m.rejectHint}, term ${m.logTerm})) from ${m.from} for index ${m.index}`);
      let nextProbeIdx = m.rejectHint;
      if (m.logTerm > 0) nextProbeIdx = this.raftLog.findConflictByTerm(m.rejectHint, m.logTerm)[0];
      if (pr.maybeDecrTo(m.index, nextProbeIdx)) {
        if (this.debugOn) this.logger.debug(`${this.id} decreased progress of ${m.from} to [${pr.toString()}]`);
        if (pr.state === ProgressStateType.Replicate) pr.becomeProbe();
        this.sendAppend(m.from);
      }
      return;
    }
    const oldPaused = pr.isPaused();
    if (!pr.maybeUpdate(m.index) && !(pr.match === m.index && pr.state === ProgressStateType.Probe)) return;
    switch (pr.state) {
      case ProgressStateType.Probe:
        pr.becomeReplicate();
        break;
      case ProgressStateType.Snapshot:
        // The follower caught up past the snapshot (or we can reach it from
        // the log again): resume replication.
        if (pr.match + 1 >= this.raftLog.firstIndex()) {
          if (this.debugOn) this.logger.debug(`${this.id} recovered from needing snapshot, resumed sending replication messages to ${m.from} [${pr.toString()}]`);
          pr.becomeProbe();
          pr.becomeReplicate();
        }
        break;
      case ProgressStateType.Replicate:
        pr.inflights.freeLE(m.index);
        break;
    }
    if (this.maybeCommit()) {
      this.releasePendingReadIndexMessages();
      this.bcastAppend();
    } else if (oldPaused) {
      // The follower was paused and may now accept more.
      this.sendAppend(m.from);
    }
    // Fill the window: send whatever else is ready for this follower.
    while (this.maybeSendAppend(m.from, false)) {
      /* keep sending */
    }
    if (m.from === this.leadTransferee && pr.match === this.raftLog.lastIndex()) {
      this.logger.info(`${this.id} sent MsgTimeoutNow to ${m.from} after received MsgAppResp`);
      this.sendTimeoutNow(m.from);
    }
  }

  private handleHeartbeatResponse(m: Message, pr: Progress): void {
    pr.recentActive = true;
    pr.msgAppFlowPaused = false;
    // The follower is behind: a heartbeat response is the cue to probe again.
    if (pr.match < this.raftLog.lastIndex()) this.sendAppend(m.from);
    if (this.readOnly.option !== ReadOnlyOption.Safe || m.context === null || m.context.length === 0) return;
    const acks = this.readOnly.recvAck(m.from, m.context);
    if (acks === null || this.trk.config.voters.voteResult(acks) !== VoteResult.VoteWon) return;
    for (const rs of this.readOnly.advance(m.context)) {
      const resp = this.responseToReadIndexReq(rs.req, rs.index);
      if (resp !== null) this.send(resp);
    }
  }

  private handleTransferLeader(m: Message, pr: Progress): void {
    if (pr.isLearner) {
      this.logger.info(`${this.id} [term ${this.term}] ignored transferring leadership to learner ${m.from}`);
      return;
    }
    const transferee = m.from;
    if (this.leadTransferee !== NONE) {
      if (this.leadTransferee === transferee) {
        this.logger.info(`${this.id} [term ${this.term}] transfer leadership to ${transferee} is in progress, ignores request to same node ${transferee}`);
        return;
      }
      this.logger.info(`${this.id} [term ${this.term}] abort previous transferring leadership to ${this.leadTransferee}`);
      this.abortLeaderTransfer();
    }
    if (transferee === this.id) {
      this.logger.info(`${this.id} is already leader. Ignored transferring leadership to self`);
      return;
    }
    this.logger.info(`${this.id} [term ${this.term}] starts to transfer leadership to ${transferee}`);
    // The transfer must finish within an election timeout (tickHeartbeat aborts it).
    this.electionElapsed = 0;
    this.leadTransferee = transferee;
    if (pr.match === this.raftLog.lastIndex()) {
      this.sendTimeoutNow(transferee);
      this.logger.info(`${this.id} sends MsgTimeoutNow to ${transferee} immediately as ${transferee} already has up-to-date log`);
    } else {
      // Catch it up first; MsgTimeoutNow goes out when it acks our last index.
      this.sendAppend(transferee);
    }
  }

  private stepCandidate(m: Message): void {
    // Only votes of our own kind count (a pre-candidate ignores MsgVoteResp).
    const myVoteRespType = this.state === StateType.PreCandidate ? MessageType.MsgPreVoteResp : MessageType.MsgVoteResp;
    switch (m.type) {
      case MessageType.MsgProp:
        this.logger.info(`${this.id} no leader at term ${this.term}; dropping proposal`);
        throw new ProposalDroppedError('proposal dropped: no leader');
      case MessageType.MsgApp:
      case MessageType.MsgHeartbeat:
      case MessageType.MsgSnap:
        // A leader of our term exists (m.term === this.term here): follow it.
        this.becomeFollower(m.term, m.from);
        this.handleLeaderMessage(m);
        return;
      case MessageType.MsgTimeoutNow:
        // NB: a pre-candidate is still at the term of the leader that sent
        // this (only that leader sends MsgTimeoutNow at its term): the
        // transfer is as valid as for a follower, so campaign for it. A
        // follower whose election timeout ran out just before (a restarted
        // replica of a quiesced range that has not heard its leader yet) is
        // a pre-candidate whose pre-votes the others refuse for leader
        // stickiness; ignoring the message left the transfer to be abandoned
        // an election timeout later with the old leader still leading — the
        // drain of a stopping leaseholder then stopped its node as leader.
        // (etcd ignores it in both candidate states; a candidate's term is
        // above the sender's, so the term check drops it before this.)
        if (this.state === StateType.PreCandidate) {
          this.logger.info(`${this.id} [term ${this.term}] received MsgTimeoutNow from ${m.from} as pre-candidate and starts an election to get leadership.`);
          this.hup(CampaignType.Transfer);
          return;
        }
        if (this.debugOn) this.logger.debug(`${this.id} [term ${this.term} state ${STATE_TYPE_NAMES[this.state]}] ignored MsgTimeoutNow from ${m.from}`);
        return;
      case MessageType.MsgReadIndex:
        this.dropLocalRead(m, 'no leader');
        return;
      default:
        break;
    }
    if (m.type !== myVoteRespType) return;
    const [gr, rj, res] = this.poll(m.from, m.type, !m.reject);
    this.logger.info(`${this.id} has received ${gr} ${MESSAGE_TYPE_NAMES[m.type]} votes and ${rj} vote rejections`);
    if (res === VoteResult.VoteWon) {
      if (this.state === StateType.PreCandidate) {
        this.campaign(CampaignType.Election);
      } else {
        this.becomeLeader();
        this.bcastAppend();
      }
    } else if (res === VoteResult.VoteLost) {
      // A rejected pre-vote (or vote) response with a higher term was
      // handled in step(): the term is ours here.
      this.becomeFollower(this.term, NONE);
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case MessageType.MsgProp:
        if (this.lead === NONE) {
          this.logger.info(`${this.id} no leader at term ${this.term}; dropping proposal`);
          throw new ProposalDroppedError('proposal dropped: no leader');
        }
        if (this.disableProposalForwarding) {
          this.logger.info(`${this.id} not forwarding to leader ${this.lead} at term ${this.term}; dropping proposal`);
          throw new ProposalDroppedError('proposal dropped: forwarding disabled');
        }
        m.to = this.lead;
        this.send(m);
        return;
      case MessageType.MsgApp:
      case MessageType.MsgHeartbeat:
      case MessageType.MsgSnap:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleLeaderMessage(m);
        return;
      case MessageType.MsgTransferLeader:
        if (this.lead === NONE) {
          this.logger.info(`${this.id} no leader at term ${this.term}; dropping leader transfer msg`);
          return;
        }
        m.to = this.lead;
        this.send(m);
        return;
      case MessageType.MsgTimeoutNow:
        this.logger.info(`${this.id} [term ${this.term}] received MsgTimeoutNow from ${m.from} and starts an election to get leadership.`);
        // Leader transfer: campaign at once, bypassing pre-vote and leader
        // stickiness (the old leader asked for it).
        this.hup(CampaignType.Transfer);
        return;
      case MessageType.MsgReadIndex:
        if (this.lead === NONE) {
          this.dropLocalRead(m, 'no leader');
          return;
        }
        m.to = this.lead;
        this.send(m);
        return;
      case MessageType.MsgReadIndexResp:
        if (m.entries.length !== 1) {
          this.logger.error(`${this.id} invalid format of MsgReadIndexResp from ${m.from}, entries count: ${m.entries.length}`);
          return;
        }
        this.readStates.push({ index: m.index, requestCtx: (m.entries[0] as Entry).data });
        return;
      default:
        return;
    }
  }

  /** A read that cannot be served now: a typed error for a local request, silence for a forwarded one. */
  private dropLocalRead(m: Message, why: string): void {
    this.logger.info(`${this.id} ${why} at term ${this.term}; dropping index reading msg`);
    if (m.from === NONE || m.from === this.id) throw new ProposalDroppedError(`read index dropped: ${why}`);
  }

  // -------------------------------------------------------------------------
  // Follower handlers

  private handleLeaderMessage(m: Message): void {
    if (m.type === MessageType.MsgApp) this.handleAppendEntries(m);
    else if (m.type === MessageType.MsgHeartbeat) this.handleHeartbeat(m);
    else this.handleSnapshot(m);
  }

  private handleAppendEntries(m: Message): void {
    if (m.index < this.raftLog.committed) {
      // Everything up to our commit index is known to match: say so.
      this.send(replicationMsg(MessageType.MsgAppResp, m.from, this.raftLog.committed, 0, NO_ENTRIES, 0, null));
      return;
    }
    const lastNew = this.raftLog.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew >= 0) {
      this.send(replicationMsg(MessageType.MsgAppResp, m.from, lastNew, 0, NO_ENTRIES, 0, null));
      return;
    }
    if (this.debugOn) {
      this.logger.debug(
        `${this.id} [logterm: ${this.raftLog.zeroTermOnOutOfBounds(m.index)}, index: ${m.index}] rejected MsgApp [logterm: ${m.logTerm}, index: ${m.index}] from ${m.from}`,
      );
    }
    // Our log does not contain (m.index, m.logTerm). Hint the leader at the
    // largest index ≤ m.index whose term is ≤ m.logTerm: every entry between
    // it and m.index is known not to match.
    const hintIndex0 = Math.min(m.index, this.raftLog.lastIndex());
    const [hintIndex, hintTerm] = this.raftLog.findConflictByTerm(hintIndex0, m.logTerm);
    this.send(
      newMessage({ type: MessageType.MsgAppResp, to: m.from, index: m.index, reject: true, rejectHint: hintIndex, logTerm: hintTerm }),
    );
  }

  private handleHeartbeat(m: Message): void {
    this.raftLog.commitTo(m.commit);
    this.send(replicationMsg(MessageType.MsgHeartbeatResp, m.from, 0, 0, NO_ENTRIES, 0, m.context));
  }

  private handleSnapshot(m: Message): void {
    const s = m.snapshot;
    assert(s !== null, 'raft: MsgSnap without a snapshot');
    const { index: sindex, term: sterm } = s.metadata;
    if (this.restore(s)) {
      this.logger.info(`${this.id} [commit: ${this.raftLog.committed}] restored snapshot [index: ${sindex}, term: ${sterm}]`);
      this.send(newMessage({ type: MessageType.MsgAppResp, to: m.from, index: this.raftLog.lastIndex() }));
    } else {
      this.logger.info(`${this.id} [commit: ${this.raftLog.committed}] ignored snapshot [index: ${sindex}, term: ${sterm}]`);
      this.send(newMessage({ type: MessageType.MsgAppResp, to: m.from, index: this.raftLog.committed }));
    }
  }

  /**
   * Installs a snapshot: replaces the log and the configuration. Returns
   * false when the snapshot is stale, or the log already contains its last
   * entry (then only the commit index moves).
   */
  restore(s: Snapshot): boolean {
    if (s.metadata.index <= this.raftLog.committed) return false;
    if (this.state !== StateType.Follower) {
      // Defense in depth: only a follower installs snapshots. Bumping the term
      // makes the sender step down when it hears from us.
      this.logger.warn(`${this.id} attempted to restore snapshot as leader; should never happen`);
      this.becomeFollower(this.term + 1, NONE);
      return false;
    }
    const cs = s.metadata.confState;
    const found = cs.voters.includes(this.id) || cs.learners.includes(this.id) || cs.votersOutgoing.includes(this.id);
    if (!found) {
      this.logger.warn(`${this.id} attempted to restore snapshot but it is not in the ConfState ${describeConfState(cs)}; should never happen`);
      return false;
    }
    if (this.raftLog.matchTerm(s.metadata.index, s.metadata.term)) {
      // Our log has the snapshot's last entry: fast-forward the commit index.
      this.logger.info(
        `${this.id} [commit: ${this.raftLog.committed}, lastindex: ${this.raftLog.lastIndex()}, lastterm: ${this.raftLog.lastTerm()}] fast-forwarded commit to snapshot [index: ${s.metadata.index}, term: ${s.metadata.term}]`,
      );
      this.raftLog.commitTo(s.metadata.index);
      return false;
    }
    this.raftLog.restore(s);
    this.trk = new ProgressTracker(this.trk.maxInflight, this.trk.maxInflightBytes);
    const res = restoreConfState(cs, this.raftLog.lastIndex(), this.trk.maxInflight, this.trk.maxInflightBytes, {
      config: emptyTrackerConfig(),
      progress: new Map(),
    });
    assertConfStatesEquivalent(cs, this.switchToConfig(res));
    const pr = this.trk.progress.get(this.id) as Progress;
    pr.maybeUpdate(pr.next - 1);
    return true;
  }

  // -------------------------------------------------------------------------
  // Configuration changes

  /** Applies a committed conf change; returns the new ConfState (to persist with the applied state). */
  applyConfChange(cc: ConfChangeV2): ConfState {
    const changer = new Changer(this.trk.config, this.trk.progress, this.raftLog.lastIndex(), this.trk.maxInflight, this.trk.maxInflightBytes);
    let res: ChangeResult;
    if (leaveJoint(cc)) {
      res = changer.leaveJoint();
    } else {
      const [autoLeave, ok] = enterJoint(cc);
      res = ok ? changer.enterJoint(autoLeave, cc.changes) : changer.simple(cc.changes);
    }
    return this.switchToConfig(res);
  }

  /**
   * Installs a configuration (from a conf change or a snapshot) and reacts:
   * a leader that was removed or demoted steps down (with stepDownOnRemoval)
   * or keeps leading without counting itself; the commit index may move
   * because the quorum changed.
   */
  switchToConfig(res: ChangeResult): ConfState {
    this.trk.setConfig(res.config, res.progress);
    this.logger.info(`${this.id} switched to configuration ${describeTrackerConfig(this.trk.config)}`);
    const cs = this.trk.confState();
    const pr = this.trk.progress.get(this.id);
    this.isLearner = pr !== undefined && pr.isLearner;
    if ((pr === undefined || this.isLearner) && this.state === StateType.Leader) {
      // This leader was removed or demoted. It keeps replicating until it is
      // told to stop (etcd's behaviour), unless stepDownOnRemoval is set.
      if (this.stepDownOnRemoval) this.becomeFollower(this.term, NONE);
      return cs;
    }
    if (this.state !== StateType.Leader || cs.voters.length === 0) return cs;
    if (this.maybeCommit()) {
      // The new quorum committed more: tell everyone.
      this.bcastAppend();
    } else {
      // New members should hear from us without waiting for a heartbeat.
      for (const id of this.trk.ids()) {
        if (id !== this.id) this.maybeSendAppend(id, false);
      }
    }
    // A transfer to a removed node cannot finish.
    if (this.leadTransferee !== NONE && !this.trk.config.voters.has(this.leadTransferee)) this.abortLeaderTransfer();
    return cs;
  }

  // -------------------------------------------------------------------------
  // Leader transfer and reads

  sendTimeoutNow(to: number): void {
    this.send(newMessage({ type: MessageType.MsgTimeoutNow, to }));
  }

  abortLeaderTransfer(): void {
    this.leadTransferee = NONE;
  }

  committedEntryInCurrentTerm(): boolean {
    return this.raftLog.zeroTermOnOutOfBounds(this.raftLog.committed) === this.term;
  }

  /** A ReadState for a local request, or the MsgReadIndexResp for a remote one. */
  private responseToReadIndexReq(req: Message, readIndex: number): Message | null {
    if (req.from === NONE || req.from === this.id) {
      this.readStates.push({ index: readIndex, requestCtx: (req.entries[0] as Entry).data });
      return null;
    }
    return newMessage({ type: MessageType.MsgReadIndexResp, to: req.from, index: readIndex, entries: req.entries });
  }

  private sendMsgReadIndexResponse(m: Message): void {
    if (this.readOnly.option === ReadOnlyOption.Safe) {
      // Thesis §6.4: record the commit index, confirm leadership with a
      // heartbeat round, then release.
      const ctx = (m.entries[0] as Entry).data;
      this.readOnly.addRequest(this.raftLog.committed, m);
      // The leader acks its own request.
      this.readOnly.recvAck(this.id, ctx);
      this.bcastHeartbeatWithCtx(ctx);
    } else {
      const resp = this.responseToReadIndexReq(m, this.raftLog.committed);
      if (resp !== null) this.send(resp);
    }
  }

  private releasePendingReadIndexMessages(): void {
    if (this.pendingReadIndexMessages.length === 0) return;
    if (!this.committedEntryInCurrentTerm()) return;
    const msgs = this.pendingReadIndexMessages;
    this.pendingReadIndexMessages = [];
    for (const m of msgs) this.sendMsgReadIndexResponse(m);
  }

  private loadState(hs: HardState): void {
    assert(
      hs.commit >= this.raftLog.committed && hs.commit <= this.raftLog.lastIndex(),
      `raft: ${this.id} state.commit ${hs.commit} is out of range [${this.raftLog.committed}, ${this.raftLog.lastIndex()}]`,
    );
    this.raftLog.committed = hs.commit;
    this.term = hs.term;
    this.vote = hs.vote;
  }
}

function validateConfig(c: Config): void {
  assert(c.id !== NONE, 'raft: cannot use none as id');
  assert(c.heartbeatTick > 0, 'raft: heartbeat tick must be greater than 0');
  assert(c.electionTick > c.heartbeatTick, 'raft: election tick must be greater than heartbeat tick');
  assert((c.maxInflightMsgs ?? 256) > 0, 'raft: max inflight messages must be greater than 0');
  assert(
    (c.readOnlyOption ?? ReadOnlyOption.Safe) !== ReadOnlyOption.LeaseBased || c.checkQuorum === true,
    'raft: checkQuorum must be enabled when ReadOnlyOption is LeaseBased',
  );
}

function assertConfStatesEquivalent(a: ConfState, b: ConfState): void {
  const norm = (cs: ConfState): string => describeConfState(cs);
  assert(norm(a) === norm(b), `raft: ConfStates not equivalent after sorting:\n${norm(a)}\n${norm(b)}`);
}
