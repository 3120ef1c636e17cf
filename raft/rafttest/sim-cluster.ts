/**
 * The fault simulation's cluster: simulated nodes (RawNode + durable
 * MemoryStorage + an applied-entry state machine) on a SimNetwork, with
 * crashes that lose everything not yet persisted, restarts, log compaction,
 * membership changes, and a SafetyChecker run over every node a step touched.
 *
 * Durability model (what survives a crash):
 *   - Raft state: the storage holds exactly what the handled Readies
 *     persisted (entries, hard state, snapshot), each Ready in one atomic
 *     write. Anything a node did since its last handled Ready — votes
 *     granted, entries appended, a commit index learned — lives only in the
 *     RawNode and is lost with it. `handleReady(id, {crashAfterPersist})`
 *     also crashes between the write and the sends.
 *   - State machine: applying committed entries is in memory; the applied
 *     state is synced (made durable together with its applied index and
 *     configuration) at random Ready boundaries (`syncApplyRate`), and always
 *     when a snapshot is installed. A crash rolls the state machine back to
 *     its last synced point; the node restarts with `applied` = that index
 *     and `Storage.initialState().confState` = the configuration as of it, so
 *     Raft re-delivers the rest (the checker requires the same entries).
 *   - Snapshots: a snapshot's data names a copy of the state machine in
 *     this cluster's registry. Compaction discards the log up to a durable
 *     applied index (snapshotting there first); a snapshot a leader must
 *     send is generated on demand at its applied index, with the current
 *     configuration (a new member ignores a snapshot that omits it).
 *   - Membership (as CockroachDB runs it): ids are never reused — new members
 *     get fresh ids and start empty, catching up by snapshot or log. A
 *     removed member is garbage-collected (stopped for good) once every
 *     remaining member durably knows its removal committed. The leader never
 *     proposes its own removal, and voters are removed only from three or
 *     more (see proposeConfChange for the liveness hazard this avoids).
 *     stepDownOnRemoval is off: a leader removed by leaving a joint
 *     configuration keeps leading (refusing proposals) until collected.
 *   - Hooks (SimHooks) plant deliberately broken variants (sim-faults.ts).
 *
 * Everything is deterministic given the injected Prng.
 */
import { CairnError } from '../../src/util/errors.js';
import { Prng } from '../../src/util/prng.js';
import { decodeConfChange } from '../conf-change-codec.js';
import { RawNode } from '../raw-node.js';
import { MemoryStorage } from '../storage.js';
import {
  ConfChangeTransition,
  ConfChangeType,
  EMPTY_CONF_STATE,
  EntryType,
  MessageType,
  StateType,
  type ConfChangeSingle,
  type ConfState,
  type Config,
  type Entry,
  type InitialState,
  type Message,
  type Ready,
  type Snapshot,
} from '../types.js';
import { SafetyChecker, SimViolationError } from './sim-checker.js';
import { SimNetwork, type SimNetworkFaults } from './sim-network.js';

/**
 * Storage whose recovered configuration is the one of the durable state
 * machine, and whose snapshot is generated on demand at the node's applied
 * index (as a real replica does when it must send one, so it carries the
 * current configuration: a new member ignores a snapshot that omits it).
 */
export class SimStorage extends MemoryStorage {
  durableConfState: ConfState = EMPTY_CONF_STATE;
  refresh: (() => void) | null = null;
  override initialState(): InitialState {
    return { hardState: this.hardState, confState: this.durableConfState };
  }

  override snapshot(): Snapshot {
    this.refresh?.();
    return super.snapshot();
  }

  /** The last snapshot taken, without generating a newer one. */
  stored(): Snapshot {
    return super.snapshot();
  }
}

export interface SimNode {
  readonly id: number;
  readonly storage: SimStorage;
  /** null while crashed (or after garbage collection). */
  rawNode: RawNode | null;
  /** Removed from the configuration and stopped for good. */
  gone: boolean;
  /** The state machine: applied entries, index 2 onwards (index 1 is the bootstrap snapshot). */
  sm: Entry[];
  /** Index up to which `sm` survives a crash. */
  durableApplied: number;
  /** The configuration after each applied conf change, and at the last snapshot (ascending index). */
  confAt: { index: number; cs: ConfState }[];
}

export interface SimRaftOptions {
  readonly electionTick: number;
  readonly heartbeatTick: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  /** 0 = one entry per MsgApp. */
  readonly maxSizePerMsg: number;
  readonly maxInflightMsgs: number;
  /** 0 = unlimited. */
  readonly maxInflightBytes?: number;
  /** Bytes of committed entries per Ready (at least one entry). */
  readonly maxCommittedSizePerReady?: number;
  /** 0 = unlimited; beyond it the leader drops proposals. */
  readonly maxUncommittedEntriesSize?: number;
  readonly skipHeartbeatsAfterAppends?: boolean;
}

/**
 * Test-only hooks through which a deliberately broken Raft is planted
 * (sim-faults.ts), proving the checker can fail.
 */
export interface SimHooks {
  /** Called on every new RawNode (start and restart). */
  onRawNode?(rn: RawNode, cluster: SimCluster): void;
  /** Filters the hard state written to storage (e.g. forgets the vote). */
  persistHardState?(node: SimNode, hs: Ready['hardState']): Ready['hardState'];
  /** Rewrites a message as it is sent. */
  onSend?(m: Message): Message;
  /** Chooses which of a Ready's messages are sent (a transport that leaves redundant ones out; src/kv/redundant-raft-messages.ts). */
  readyMessages?(msgs: readonly Message[]): readonly Message[];
  /** Send a Ready's messages before persisting it (so a crash in between loses what was acknowledged). */
  readonly sendBeforePersist?: boolean;
}

interface PendingGc {
  readonly ids: readonly number[];
  /** Index of the conf change that removed them. */
  readonly index: number;
  /** The members of the configuration without them. */
  readonly members: readonly number[];
}

/** Bootstrap: every initial voter's storage starts from a snapshot at index 1, term 1. */
const BOOT_INDEX = 1;

export class SimCluster {
  readonly nodes = new Map<number, SimNode>();
  readonly net: SimNetwork;
  readonly checker = new SafetyChecker();
  /** Ids ever part of a configuration (for garbage collection). */
  private readonly everMember = new Set<number>();
  /** State machine images named by snapshot data. */
  private readonly images: Entry[][] = [[]];
  private readonly dirty = new Set<number>();
  private readonly pendingGc: PendingGc[] = [];
  /** The last conf change index reflected in everMember. */
  private membershipIndex = 0;
  nextId: number;
  /** Snapshots installed by followers, conf changes applied (first application of each). */
  snapshotsInstalled = 0;
  confChangesApplied = 0;
  /** Every line of the trace, when recording. */
  readonly trace: string[] | null;

  constructor(
    voters: readonly number[],
    readonly prng: Prng,
    readonly raftOpts: SimRaftOptions,
    faults: SimNetworkFaults,
    readonly syncApplyRate: number,
    readonly hooks: SimHooks = {},
    recordTrace = false,
  ) {
    this.net = new SimNetwork(prng, faults);
    this.trace = recordTrace ? [] : null;
    const cs: ConfState = { ...EMPTY_CONF_STATE, voters };
    for (const id of voters) {
      const storage = new SimStorage();
      storage.applySnapshot({ data: imageRef(0), metadata: { index: BOOT_INDEX, term: 1, confState: cs } });
      storage.durableConfState = cs;
      this.everMember.add(id);
      this.nodes.set(id, { id, storage, rawNode: null, gone: false, sm: [], durableApplied: BOOT_INDEX, confAt: [{ index: BOOT_INDEX, cs }] });
      this.start(id);
    }
    this.nextId = Math.max(...voters) + 1;
  }

  log(line: string): void {
    this.trace?.push(line);
  }

  node(id: number): SimNode {
    const n = this.nodes.get(id);
    if (n === undefined) throw new Error(`raft sim: no node ${id}`);
    return n;
  }

  /** Live nodes, in id order. */
  live(): SimNode[] {
    const out: SimNode[] = [];
    for (const n of this.nodes.values()) if (n.rawNode !== null) out.push(n);
    return out;
  }

  /** Crashed nodes that may restart. */
  down(): SimNode[] {
    const out: SimNode[] = [];
    for (const n of this.nodes.values()) if (n.rawNode === null && !n.gone) out.push(n);
    return out;
  }

  private config(n: SimNode): Config {
    const o = this.raftOpts;
    return {
      id: n.id,
      electionTick: o.electionTick,
      heartbeatTick: o.heartbeatTick,
      storage: n.storage,
      applied: n.durableApplied,
      preVote: o.preVote,
      checkQuorum: o.checkQuorum,
      maxSizePerMsg: o.maxSizePerMsg,
      maxInflightMsgs: o.maxInflightMsgs,
      maxInflightBytes: o.maxInflightBytes ?? 0,
      maxCommittedSizePerReady: o.maxCommittedSizePerReady ?? Number.MAX_SAFE_INTEGER,
      maxUncommittedEntriesSize: o.maxUncommittedEntriesSize ?? 0,
      skipHeartbeatsAfterAppends: o.skipHeartbeatsAfterAppends ?? false,
      // A removed leader keeps leading (refusing proposals) until it is
      // garbage-collected, which happens once the others durably know their
      // new configuration. With stepDownOnRemoval it would step down at once,
      // and a leader removed by leaving a joint configuration could strand
      // the rest: they do not know the removal committed, still need its
      // vote, and it refuses them if it appended anything after.
      stepDownOnRemoval: false,
      prng: new Prng(this.prng.nextUint32()),
    };
  }

  private start(id: number): void {
    const n = this.node(id);
    const rn = new RawNode(this.config(n));
    n.rawNode = rn;
    n.storage.refresh = () => this.snapshotAt(n, BOOT_INDEX + n.sm.length);
    this.checker.resetApplied(id, n.durableApplied);
    this.hooks.onRawNode?.(rn, this);
    this.dirty.add(id);
  }

  /** Crash: the RawNode and every unpersisted change go; the state machine rolls back to its synced point. */
  crash(id: number): void {
    const n = this.node(id);
    if (n.rawNode === null) return;
    n.rawNode = null;
    n.sm.length = Math.max(0, n.durableApplied - BOOT_INDEX);
    n.confAt = n.confAt.filter((c) => c.index <= n.durableApplied);
    n.storage.durableConfState = (n.confAt[n.confAt.length - 1] as { cs: ConfState }).cs;
    this.checker.onCrash(id);
    this.log(`crash ${id} (state machine back to ${n.durableApplied})`);
  }

  restart(id: number): void {
    const n = this.node(id);
    if (n.rawNode !== null || n.gone) return;
    this.start(id);
    this.log(`restart ${id}`);
  }

  /** Adds an empty node with a fresh id (it joins when a conf change names it). */
  addEmptyNode(): number {
    const id = this.nextId++;
    this.nodes.set(id, { id, storage: new SimStorage(), rawNode: null, gone: false, sm: [], durableApplied: 0, confAt: [{ index: 0, cs: EMPTY_CONF_STATE }] });
    this.start(id);
    return id;
  }

  // -------------------------------------------------------------------------
  // Ready handling

  /** Handles the node's Readies until it has none (persist, send, apply, advance). */
  handleReady(id: number, opts: { crashAfterPersist?: boolean } = {}): void {
    const n = this.node(id);
    for (let round = 0; round < 16; round++) {
      const rn = n.rawNode;
      if (rn === null || !rn.hasReady()) return;
      this.dirty.add(id);
      const rd = rn.ready();
      const msgs = this.hooks.readyMessages !== undefined ? this.hooks.readyMessages(rd.messages) : rd.messages;
      const early = this.hooks.sendBeforePersist === true;
      if (early) for (const m of msgs) this.send(m);
      if (early && opts.crashAfterPersist === true) {
        this.log(`send ${id} then crash before persisting`);
        this.crash(id);
        return;
      }
      // 1. Persist: one atomic write.
      if (rd.snapshot !== null) this.installSnapshot(n, rn, rd.snapshot);
      n.storage.append(rd.entries);
      const hs = this.hooks.persistHardState !== undefined ? this.hooks.persistHardState(n, rd.hardState) : rd.hardState;
      if (hs !== null) n.storage.setHardState(hs);
      if (opts.crashAfterPersist === true) {
        this.log(`persist ${id} then crash before sending`);
        this.crash(id);
        return;
      }
      // 2. Send.
      if (!early) for (const m of msgs) this.send(m);
      // 3. Apply.
      for (const e of rd.committedEntries) this.apply(n, rn, e);
      if (rd.committedEntries.length > 0 && this.prng.float() < this.syncApplyRate) n.durableApplied = BOOT_INDEX + n.sm.length;
      rn.advance(rd);
    }
  }

  private send(m: Message): void {
    const out = this.hooks.onSend !== undefined ? this.hooks.onSend(m) : m;
    if (out.type === MessageType.MsgSnap) {
      // The transport learns whether a snapshot arrived: report a loss at once.
      const before = this.net.size;
      this.net.send(out);
      if (this.net.size === before) this.reportSnapshot(out.from, out.to, false);
      return;
    }
    this.net.send(out);
  }

  private reportSnapshot(from: number, to: number, ok: boolean): void {
    const rn = this.nodes.get(from)?.rawNode;
    if (rn === null || rn === undefined) return;
    rn.reportSnapshot(to, ok);
    this.dirty.add(from);
  }

  private installSnapshot(n: SimNode, rn: RawNode, snap: Snapshot): void {
    const { index, confState: cs } = snap.metadata;
    n.storage.applySnapshot(snap);
    const image = this.images[Buffer.from(snap.data).readUInt32BE(0)] as Entry[];
    n.sm = image.slice();
    n.durableApplied = index;
    n.confAt = [{ index, cs }];
    n.storage.durableConfState = cs;
    this.checker.resetApplied(n.id, BOOT_INDEX);
    for (const e of n.sm) this.checker.onApply(rn.raft, e);
    if (index !== BOOT_INDEX + n.sm.length) throw new SimViolationError(`raft sim: snapshot at ${index} carries a state machine at ${BOOT_INDEX + n.sm.length}`);
    this.snapshotsInstalled++;
    this.log(`node ${n.id} installs snapshot at ${index}`);
  }

  private apply(n: SimNode, rn: RawNode, e: Entry): void {
    this.checker.onApply(rn.raft, e);
    n.sm.push(e);
    if (e.type !== EntryType.ConfChange) return;
    const cs = rn.applyConfChange(decodeConfChange(e.data));
    n.confAt.push({ index: e.index, cs });
    // Membership bookkeeping follows the log once: the first application of each index.
    if (cs.votersOutgoing.length > 0 || e.index <= this.membershipIndex) return;
    this.membershipIndex = e.index;
    this.confChangesApplied++;
    const removed: number[] = [];
    for (const id of this.everMember) if (!cs.voters.includes(id) && !cs.learners.includes(id)) removed.push(id);
    for (const id of removed) this.everMember.delete(id);
    for (const id of cs.voters) this.everMember.add(id);
    for (const id of cs.learners) this.everMember.add(id);
    if (removed.length > 0) this.pendingGc.push({ ids: removed, index: e.index, members: [...cs.voters, ...cs.learners] });
  }

  /**
   * Garbage-collects removed members once every remaining member has durably
   * learned that their removal committed (as CockroachDB's replica GC
   * consults the committed descriptor). Collecting them earlier could strand
   * the group: a remaining voter that never heard of the commit would still
   * need the removed one's vote.
   */
  private collectGarbage(): void {
    for (let k = 0; k < this.pendingGc.length; k++) {
      const g = this.pendingGc[k] as PendingGc;
      const known = g.members.every((m) => {
        const n = this.nodes.get(m);
        return n === undefined || n.gone || n.storage.hardState.commit >= g.index;
      });
      if (!known) continue;
      this.pendingGc.splice(k--, 1);
      for (const id of g.ids) {
        const n = this.nodes.get(id);
        if (n === undefined || n.gone) continue;
        this.crash(id);
        n.gone = true;
        this.log(`gc ${id}`);
      }
    }
  }

  // -------------------------------------------------------------------------
  // Inputs

  /** Delivers `m` (if its destination is up and reachable), then maybe handles the Ready. */
  deliver(m: Message, handleReady: boolean): void {
    const to = this.nodes.get(m.to);
    const ok = to !== undefined && to.rawNode !== null && this.net.connected(m.from, m.to);
    if (m.type === MessageType.MsgSnap) this.reportSnapshot(m.from, m.to, ok);
    if (!ok) return;
    if (this.trace !== null) this.log(`deliver ${describeMsg(m)}`);
    this.dirty.add(m.to);
    this.guard(() => (to.rawNode as RawNode).step(m));
    if (handleReady) this.handleReady(m.to);
  }

  /** Loses a message taken from the network (the sender of a snapshot learns it failed). */
  drop(m: Message): void {
    if (m.type === MessageType.MsgSnap) this.reportSnapshot(m.from, m.to, false);
  }

  /** Runs `f`, swallowing the library's typed refusals (dropped proposals, unknown peers). */
  guard(f: () => void): void {
    try {
      f();
    } catch (e) {
      if (e instanceof CairnError) return;
      throw e;
    }
  }

  tick(id: number): void {
    const rn = this.node(id).rawNode;
    if (rn === null) return;
    rn.tick();
    this.dirty.add(id);
  }

  propose(id: number, data: Uint8Array): void {
    const rn = this.node(id).rawNode;
    if (rn === null) return;
    if (this.trace !== null) this.log(`propose ${Buffer.from(data).toString('latin1')} at ${id}`);
    this.dirty.add(id);
    this.guard(() => rn.propose(data));
  }

  /** Compacts node `id`'s log to a random durable applied index. */
  compact(id: number): void {
    const n = this.node(id);
    const snapIndex = n.storage.firstIndex() - 1;
    if (n.rawNode === null || n.durableApplied <= snapIndex) return;
    const at = this.prng.between(snapIndex + 1, n.durableApplied);
    this.snapshotAt(n, at);
    n.storage.compact(at);
    this.dirty.add(id);
    this.log(`compact ${id} to ${at}`);
  }

  /** Records a snapshot of node `n`'s state machine at `at` (≤ applied), unless one is already that recent. */
  private snapshotAt(n: SimNode, at: number): void {
    if (at <= n.storage.stored().metadata.index) return;
    let cs = (n.confAt[0] as { cs: ConfState }).cs;
    for (const c of n.confAt) if (c.index <= at) cs = c.cs;
    this.images.push(n.sm.slice(0, at - BOOT_INDEX));
    n.storage.createSnapshot(at, cs, imageRef(this.images.length - 1));
  }

  /** The live leader with the highest term, or null. */
  leader(): SimNode | null {
    let best: SimNode | null = null;
    for (const n of this.nodes.values()) {
      const r = n.rawNode?.raft;
      if (r === undefined || r.state !== StateType.Leader) continue;
      if (best === null || r.term > (best.rawNode as RawNode).raft.term) best = n;
    }
    return best;
  }

  /**
   * Proposes one membership change at the leader, valid for its current
   * configuration (which is the one it will apply to: a leader accepts a
   * conf change only when every earlier one is applied). Returns its
   * description, or '' when there was nothing to do.
   */
  proposeConfChange(maxNodes: number): string {
    const lead = this.leader();
    if (lead === null) return '';
    const rn = lead.rawNode as RawNode;
    const cfg = rn.raft.trk.config;
    if (cfg.voters.joint) return '';
    const voters = [...cfg.voters.incoming.ids];
    const learners = [...cfg.learners];
    const choices: ConfChangeSingle[][] = [];
    const canAdd = this.nodes.size < maxNodes;
    const fresh = this.nextId;
    if (canAdd) {
      choices.push([{ type: ConfChangeType.AddNode, nodeId: fresh }]);
      choices.push([{ type: ConfChangeType.AddLearnerNode, nodeId: fresh }]);
    }
    for (const l of learners) {
      choices.push([{ type: ConfChangeType.AddNode, nodeId: l }]);
      choices.push([{ type: ConfChangeType.RemoveNode, nodeId: l }]);
    }
    // Voters are removed only from three or more. Going from two to one
    // strands the survivor if the removed one led, applied its removal,
    // appended more and failed: the survivor does not know the removal
    // committed, still needs the removed one's vote, and is refused it (a
    // liveness hazard of etcd-style Raft, not a safety one; CockroachDB
    // never removes the leaseholder, which Raft leadership follows).
    if (voters.length > 2) {
      for (const v of voters) {
        // As in CockroachDB (which moves the lease first), the leader never
        // proposes its own removal.
        if (v === lead.id) continue;
        choices.push([{ type: ConfChangeType.RemoveNode, nodeId: v }]);
        // A swap goes through a joint configuration (left automatically).
        if (canAdd) choices.push([{ type: ConfChangeType.AddNode, nodeId: fresh }, { type: ConfChangeType.RemoveNode, nodeId: v }]);
      }
    }
    if (choices.length === 0) return '';
    const changes = this.prng.pick(choices);
    if (changes.some((c) => c.nodeId === fresh)) this.addEmptyNode();
    const desc = changes.map((c) => `${c.type === ConfChangeType.RemoveNode ? 'r' : c.type === ConfChangeType.AddLearnerNode ? 'l' : 'v'}${c.nodeId}`).join(' ');
    this.log(`conf change ${desc} at ${lead.id}`);
    this.dirty.add(lead.id);
    this.guard(() => rn.proposeConfChange({ transition: ConfChangeTransition.Auto, changes, context: new Uint8Array(0) }));
    return desc;
  }

  /** Runs the safety checker over every node touched since the last check. */
  check(): void {
    if (this.pendingGc.length > 0) this.collectGarbage();
    for (const id of this.dirty) {
      const n = this.nodes.get(id);
      if (n !== undefined && n.rawNode !== null) this.checker.checkNode(n.rawNode.raft, n.storage);
    }
    this.dirty.clear();
  }
}

function imageRef(k: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(k, 0);
  return b;
}

const SHORT_TYPE: Record<number, string> = {
  [MessageType.MsgApp]: 'App',
  [MessageType.MsgAppResp]: 'AppResp',
  [MessageType.MsgVote]: 'Vote',
  [MessageType.MsgVoteResp]: 'VoteResp',
  [MessageType.MsgPreVote]: 'PreVote',
  [MessageType.MsgPreVoteResp]: 'PreVoteResp',
  [MessageType.MsgSnap]: 'Snap',
  [MessageType.MsgHeartbeat]: 'Heartbeat',
  [MessageType.MsgHeartbeatResp]: 'HeartbeatResp',
  [MessageType.MsgProp]: 'Prop',
  [MessageType.MsgTimeoutNow]: 'TimeoutNow',
};

/** A one-line description of a message for traces. */
export function describeMsg(m: Message): string {
  let s = `${m.from}->${m.to} ${SHORT_TYPE[m.type] ?? m.type} t${m.term}`;
  if (m.type === MessageType.MsgApp) s += ` prev ${m.index}/t${m.logTerm} n${m.entries.length} c${m.commit}`;
  else if (m.type === MessageType.MsgAppResp) s += ` i${m.index}${m.reject ? ' reject' : ''}`;
  else if (m.type === MessageType.MsgVote || m.type === MessageType.MsgPreVote) s += ` last ${m.index}/t${m.logTerm}`;
  else if (m.type === MessageType.MsgVoteResp || m.type === MessageType.MsgPreVoteResp) s += m.reject ? ' reject' : ' grant';
  else if (m.type === MessageType.MsgSnap) s += ` at ${m.snapshot?.metadata.index ?? 0}`;
  return s;
}
