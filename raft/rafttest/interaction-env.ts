/**
 * The interaction environment: a scriptable set of RawNodes over an explicit
 * message queue, driven by datadriven transcripts (raft/testdata/*.txt;
 * etcd/raft's rafttest/interaction_env). Nothing happens unless a script
 * verb asks for it, so every transcript is a complete, deterministic record
 * of an interaction: which node handled which Ready, which messages were
 * delivered, dropped or cut off by a partition.
 *
 * Each node runs an "appender" state machine: its state is the concatenation
 * of applied entry data, and every applied entry records a snapshot in the
 * node's history. The node's storage serves the newest of these snapshots,
 * so a leader can catch up a follower whose entries it compacted away.
 *
 * Verbs (one example each; ids are replica ids, messages print as
 * `from->to Type Term:t Log:logTerm/index …`):
 *
 *   log-level info                      none|debug|info|warn|error
 *   add-nodes 3 voters=(1,2,3) index=2 content=x prevote=true checkquorum=true
 *             [learners=(4)] [max-committed-size-per-ready=n] [max-size-per-msg=n]
 *             [max-inflight=n] [read-only=lease-based] [step-down-on-removal=true]
 *   campaign 1
 *   propose 1 foo
 *   propose-conf-change 1 [transition=auto|implicit|explicit]
 *   v2 l3 r4                            (input: v=voter l=learner r=remove u=update)
 *   process-ready 1 2                   (all nodes when no ids)
 *   deliver-msgs 2 [type=MsgApp] [drop=(3)]
 *   drop 3                              (discard queued messages to 3)
 *   partition (1) (2 3)                 (messages across groups are dropped at delivery)
 *   heal                                (queued messages across the partition are lost)
 *   stabilize [1 2]                     (process-ready + deliver-msgs until quiet)
 *   tick 1 [n=5] | tick-heartbeat 1 | tick-election 1
 *   status 1 | raft-log 1 | raft-state
 *   compact 1 5                         (discard entries ≤ 5 from 1's storage)
 *   transfer-leadership from=1 to=3
 *   read-index 1 ctx
 *   send-snapshot 1 3                   (queue 1's current snapshot for 3)
 *   report-unreachable 1 2
 *   restart 1                           (crash and recover from storage; volatile state is lost)
 *
 * This harness imports only the raft library and src/util (DESIGN.md §2);
 * the test passes it the datadriven runner's test cases.
 */
import { isCairnError as isCairnErrorLike } from '../../src/util/errors.js';
import { Prng } from '../../src/util/prng.js';
import { confChangesFromString, decodeConfChange } from '../conf-change-codec.js';
import { describeEntry, describeMessage, describeReady } from '../describe.js';
import { RawNode } from '../raw-node.js';
import { MemoryStorage } from '../storage.js';
import {
  ConfChangeTransition,
  EMPTY_CONF_STATE,
  EntryType,
  MESSAGE_TYPE_NAMES,
  MessageType,
  NO_LIMIT,
  ReadOnlyOption,
  STATE_TYPE_NAMES,
  StateType,
  newMessage,
  type ConfState,
  type Config,
  type Message,
  type RaftLogger,
  type Snapshot,
} from '../types.js';

/** The part of the datadriven runner's TestCase this harness uses. */
export interface InteractionCase {
  readonly pos: string;
  readonly cmd: string;
  readonly cmdArgs: readonly { readonly key: string; readonly vals: readonly string[] }[];
  readonly input: string;
}

const LEVELS: Record<string, number> = { debug: 0, info: 1, warn: 2, error: 3, none: 4 };
const LEVEL_NAMES = ['DEBUG', 'INFO', 'WARN', 'ERROR'];

/** MemoryStorage whose snapshot() returns the node's newest applied snapshot. */
class SnapOverrideStorage extends MemoryStorage {
  override: (() => Snapshot) | null = null;
  override snapshot(): Snapshot {
    return this.override !== null ? this.override() : super.snapshot();
  }

  /** The snapshot recorded in storage (not the override). */
  stored(): Snapshot {
    return super.snapshot();
  }
}

interface EnvNode {
  readonly id: number;
  readonly rawNode: RawNode;
  readonly storage: SnapOverrideStorage;
  readonly config: Config;
  /** Applied snapshots of the appender state machine, oldest first. */
  readonly history: Snapshot[];
}

export class InteractionEnv {
  readonly nodes: EnvNode[] = [];
  messages: Message[] = [];
  private out: string[] = [];
  private level = LEVELS['info'] as number;
  /** Partition groups: node id → group number; empty when healed. */
  private groups = new Map<number, number>();

  private readonly logger: RaftLogger = {
    debug: (m) => this.log(0, m),
    info: (m) => this.log(1, m),
    warn: (m) => this.log(2, m),
    error: (m) => this.log(3, m),
    isLevelEnabled: (l) => (LEVELS[l] ?? 4) >= this.level,
  };

  private log(level: number, msg: string): void {
    if (level >= this.level) this.out.push(`${LEVEL_NAMES[level]} ${msg}`);
  }

  /** Runs one directive and returns its output. */
  handle(tc: InteractionCase): string {
    this.out = [];
    try {
      this.dispatch(tc);
    } catch (e) {
      if (isCairnErrorLike(e)) this.out.push(`raft error: ${(e as Error).message}`);
      else throw e;
    }
    // Empty output reads as 'ok' (as in etcd's transcripts).
    return this.out.length === 0 ? 'ok' : this.out.join('\n');
  }

  private dispatch(tc: InteractionCase): void {
    const pos = positional(tc);
    switch (tc.cmd) {
      case 'log-level':
        this.level = LEVELS[pos[0] ?? 'info'] ?? fail(tc, `unknown level ${pos[0]}`);
        return;
      case 'add-nodes':
        return this.addNodes(tc, Number(pos[0]));
      case 'campaign':
        return this.node(tc, pos[0]).rawNode.campaign();
      case 'propose':
        return this.node(tc, pos[0]).rawNode.propose(Buffer.from(pos[1] ?? '', 'latin1'));
      case 'propose-conf-change':
        return this.proposeConfChange(tc, pos);
      case 'process-ready':
        for (const id of this.ids(pos)) this.processReady(id);
        return;
      case 'deliver-msgs':
        return this.deliverMsgsCmd(tc, pos);
      case 'drop':
        for (const id of pos.map(Number)) this.dropTo(id, 'dropped');
        return;
      case 'partition':
        return this.partition(tc);
      case 'heal':
        return this.heal();
      case 'stabilize':
        return this.stabilize(this.ids(pos));
      case 'tick': {
        const n = Number(argVal(tc, 'n') ?? '1');
        for (let i = 0; i < n; i++) this.node(tc, pos[0]).rawNode.tick();
        return;
      }
      case 'tick-heartbeat': {
        const node = this.node(tc, pos[0]);
        for (let i = 0; i < node.config.heartbeatTick; i++) node.rawNode.tick();
        return;
      }
      case 'tick-election':
        return this.tickElection(this.node(tc, pos[0]));
      case 'status':
        return this.status(this.node(tc, pos[0]));
      case 'raft-log':
        return this.raftLog(this.node(tc, pos[0]));
      case 'raft-state':
        return this.raftState();
      case 'compact': {
        const node = this.node(tc, pos[0]);
        node.storage.compact(Number(pos[1]));
        return this.raftLog(node);
      }
      case 'transfer-leadership':
        return this.node(tc, argVal(tc, 'from')).rawNode.transferLeader(Number(argVal(tc, 'to')));
      case 'read-index':
        return this.node(tc, pos[0]).rawNode.readIndex(Buffer.from(pos[1] ?? '', 'latin1'));
      case 'send-snapshot':
        return this.sendSnapshot(this.node(tc, pos[0]), Number(pos[1]));
      case 'restart':
        return this.restart(this.node(tc, pos[0]));
      case 'report-unreachable':
        return this.node(tc, pos[0]).rawNode.reportUnreachable(Number(pos[1]));
      default:
        fail(tc, `unknown command ${tc.cmd}`);
    }
  }

  private node(tc: InteractionCase, id: string | undefined): EnvNode {
    const n = this.nodes[Number(id) - 1];
    if (n === undefined) fail(tc, `no node ${id}`);
    return n;
  }

  private ids(pos: readonly string[]): number[] {
    return pos.length > 0 ? pos.map(Number) : this.nodes.map((n) => n.id);
  }

  private addNodes(tc: InteractionCase, n: number): void {
    const voters = argVals(tc, 'voters').map(Number);
    const learners = argVals(tc, 'learners').map(Number);
    const index = Number(argVal(tc, 'index') ?? '0');
    const content = argVal(tc, 'content') ?? '';
    const bool = (k: string): boolean => argVal(tc, k) === 'true';
    const num = (k: string, d: number): number => {
      const v = argVal(tc, k);
      return v === undefined ? d : Number(v);
    };
    for (let k = 0; k < n; k++) {
      const id = this.nodes.length + 1;
      const storage = new SnapOverrideStorage();
      const history: Snapshot[] = [];
      const cs: ConfState = { ...EMPTY_CONF_STATE, voters, learners };
      if (voters.length > 0 || learners.length > 0) {
        const snap: Snapshot = { data: Buffer.from(content, 'latin1'), metadata: { index, term: 1, confState: cs } };
        storage.applySnapshot(snap);
        history.push(snap);
      } else {
        history.push({ data: new Uint8Array(0), metadata: { index: 0, term: 0, confState: EMPTY_CONF_STATE } });
      }
      storage.override = () => history[history.length - 1] as Snapshot;
      const config: Config = {
        id,
        electionTick: 3,
        heartbeatTick: 1,
        storage,
        applied: index,
        maxSizePerMsg: num('max-size-per-msg', NO_LIMIT),
        maxCommittedSizePerReady: num('max-committed-size-per-ready', NO_LIMIT),
        maxInflightMsgs: num('max-inflight', 256),
        checkQuorum: bool('checkquorum'),
        preVote: bool('prevote'),
        readOnlyOption: argVal(tc, 'read-only') === 'lease-based' ? ReadOnlyOption.LeaseBased : ReadOnlyOption.Safe,
        stepDownOnRemoval: bool('step-down-on-removal'),
        prng: new Prng(id),
        logger: this.logger,
      };
      this.nodes.push({ id, rawNode: new RawNode(config), storage, config, history });
    }
  }

  private proposeConfChange(tc: InteractionCase, pos: readonly string[]): void {
    const t = argVal(tc, 'transition') ?? 'auto';
    const transition =
      t === 'auto' ? ConfChangeTransition.Auto : t === 'implicit' ? ConfChangeTransition.JointImplicit : t === 'explicit' ? ConfChangeTransition.JointExplicit : fail(tc, `bad transition ${t}`);
    this.node(tc, pos[0]).rawNode.proposeConfChange({ transition, changes: confChangesFromString(tc.input), context: new Uint8Array(0) });
  }

  /** Handles one Ready of node `id` following the RawNode contract, printing it. */
  processReady(id: number): void {
    const node = this.nodes[id - 1] as EnvNode;
    const rn = node.rawNode;
    this.out.push(`> ${id} handling Ready`);
    if (!rn.hasReady()) {
      this.out.push('  <empty Ready>');
      return;
    }
    const rd = rn.ready();
    this.out.push(indent(describeReady(rd)));
    // 1. persist
    if (rd.snapshot !== null) node.storage.applySnapshot(rd.snapshot);
    node.storage.append(rd.entries);
    if (rd.hardState !== null) node.storage.setHardState(rd.hardState);
    // 2. send
    for (const m of rd.messages) this.messages.push(m);
    // 3. apply
    if (rd.snapshot !== null) node.history.push(rd.snapshot);
    for (const e of rd.committedEntries) {
      let cs: ConfState | null = null;
      if (e.type === EntryType.ConfChange) cs = rn.applyConfChange(decodeConfChange(e.data));
      const last = node.history[node.history.length - 1] as Snapshot;
      node.history.push({
        data: Buffer.concat([last.data, e.data]),
        metadata: { index: e.index, term: e.term, confState: cs ?? last.metadata.confState },
      });
    }
    // 4. advance
    rn.advance(rd);
  }

  private deliverMsgsCmd(tc: InteractionCase, pos: readonly string[]): void {
    const drop = argVals(tc, 'drop').map(Number);
    for (const id of drop) this.dropTo(id, 'dropped');
    const typ = argVal(tc, 'type');
    let t: MessageType | undefined;
    if (typ !== undefined) {
      const idx = MESSAGE_TYPE_NAMES.indexOf(typ);
      if (idx < 0) fail(tc, `unknown message type ${typ}`);
      t = idx as MessageType;
    }
    const targets = pos.length > 0 ? pos.map(Number) : drop.length > 0 ? [] : this.nodes.map((n) => n.id);
    for (const id of targets) this.deliverMsgs(id, t);
  }

  /** Delivers every queued message to `id` (of type `t`, if given); returns how many. */
  deliverMsgs(id: number, t?: MessageType): number {
    const mine: Message[] = [];
    const rest: Message[] = [];
    for (const m of this.messages) {
      if (m.to === id && (t === undefined || m.type === t)) mine.push(m);
      else rest.push(m);
    }
    if (mine.length === 0) return 0;
    this.messages = rest;
    this.out.push(`> ${id} receiving messages`);
    const node = this.nodes[id - 1] as EnvNode;
    for (const m of mine) {
      if (this.partitioned(m.from, m.to)) {
        this.out.push(`  dropped (partition): ${describeMessage(m)}`);
        continue;
      }
      this.out.push(indent(describeMessage(m)));
      try {
        node.rawNode.step(m);
      } catch (e) {
        if (!isCairnErrorLike(e)) throw e;
        this.out.push(`  raft error: ${(e as Error).message}`);
      }
    }
    return mine.length;
  }

  private dropTo(id: number, why: string): void {
    const rest: Message[] = [];
    for (const m of this.messages) {
      if (m.to === id) this.out.push(`${why}: ${describeMessage(m)}`);
      else rest.push(m);
    }
    this.messages = rest;
  }

  private partitioned(a: number, b: number): boolean {
    if (this.groups.size === 0) return false;
    return this.groups.get(a) !== this.groups.get(b);
  }

  private partition(tc: InteractionCase): void {
    this.groups.clear();
    let g = 0;
    for (const a of tc.cmdArgs) {
      const k = a.key.trim();
      if (!k.startsWith('(') || !k.endsWith(')')) fail(tc, `partition groups look like (1 2): ${k}`);
      for (const id of k.slice(1, -1).split(/[\s,]+/).filter((s) => s !== '')) this.groups.set(Number(id), g);
      g++;
    }
    // Nodes not named form a group of their own each.
    for (const n of this.nodes) if (!this.groups.has(n.id)) this.groups.set(n.id, g++);
  }

  /** Ends the partition; messages still queued across it were lost in it. */
  private heal(): void {
    const rest: Message[] = [];
    for (const m of this.messages) {
      if (this.partitioned(m.from, m.to)) this.out.push(`dropped (partition): ${describeMessage(m)}`);
      else rest.push(m);
    }
    this.messages = rest;
    this.groups.clear();
  }

  /** Runs process-ready and deliver-msgs until nothing changes. */
  stabilize(ids: readonly number[]): void {
    for (;;) {
      let done = true;
      for (const id of ids) {
        if ((this.nodes[id - 1] as EnvNode).rawNode.hasReady()) {
          this.processReady(id);
          done = false;
        }
      }
      for (const id of ids) {
        if (this.deliverMsgs(id) > 0) done = false;
      }
      if (done) return;
    }
  }

  /** Ticks until the node's election timeout fires (a leader ticks one election timeout). */
  private tickElection(node: EnvNode): void {
    const r = node.rawNode.raft;
    const n = r.state === StateType.Leader ? r.electionTimeout - r.electionElapsed : Math.max(1, r.randomizedElectionTimeout - r.electionElapsed);
    for (let i = 0; i < n; i++) node.rawNode.tick();
  }

  private status(node: EnvNode): void {
    const st = node.rawNode.status();
    if (st.progress === null) {
      this.out.push(`${node.id}: ${STATE_TYPE_NAMES[st.softState.raftState]} (no progress: not leader)`);
      return;
    }
    for (const [id, pr] of st.progress) {
      let s = `${id}: ${pr.state} match=${pr.match} next=${pr.next}`;
      if (pr.isLearner) s += ' learner';
      if (pr.paused) s += ' paused';
      if (pr.pendingSnapshot > 0) s += ` pendingSnap=${pr.pendingSnapshot}`;
      if (pr.inflight > 0) s += ` inflight=${pr.inflight}`;
      this.out.push(s);
    }
  }

  private raftLog(node: EnvNode): void {
    const s = node.storage;
    const fi = s.firstIndex();
    const li = s.lastIndex();
    if (li < fi) {
      this.out.push(`log is empty: first index=${fi}, last index=${li}`);
      return;
    }
    for (const e of s.entries(fi, li + 1, NO_LIMIT)) this.out.push(describeEntry(e));
  }

  private raftState(): void {
    for (const n of this.nodes) {
      const r = n.rawNode.raft;
      const role = r.isLearner ? 'Learner' : r.trk.isVoter(r.id) ? 'Voter' : 'Non-Voter';
      this.out.push(`${n.id}: ${STATE_TYPE_NAMES[r.state]} (${role}) Term:${r.term} Lead:${r.lead} Commit:${r.raftLog.committed}`);
    }
  }

  /**
   * Crash and restart: a new RawNode over the node's storage (what was
   * persisted) and its applied state-machine history. Queued messages stay
   * in the network.
   */
  private restart(node: EnvNode): void {
    const last = node.history[node.history.length - 1] as Snapshot;
    const applied = last.metadata.index;
    // The state machine and its configuration are durable at `applied`:
    // record them as the storage's snapshot, so that initialState() returns
    // the ConfState as of `applied`.
    if (applied > node.storage.stored().metadata.index) node.storage.createSnapshot(applied, last.metadata.confState, last.data);
    const config: Config = { ...node.config, applied };
    this.nodes[node.id - 1] = { ...node, config, rawNode: new RawNode(config) };
  }

  private sendSnapshot(from: EnvNode, to: number): void {
    const snap = from.storage.snapshot();
    const m = newMessage({ type: MessageType.MsgSnap, from: from.id, to, term: from.rawNode.raft.term, snapshot: snap });
    this.messages.push(m);
    this.out.push(describeMessage(m));
  }
}

function positional(tc: InteractionCase): string[] {
  return tc.cmdArgs.filter((a) => a.vals.length === 0 && !a.key.startsWith('(')).map((a) => a.key);
}

function argVal(tc: InteractionCase, key: string): string | undefined {
  return tc.cmdArgs.find((a) => a.key === key)?.vals[0];
}

function argVals(tc: InteractionCase, key: string): readonly string[] {
  return tc.cmdArgs.find((a) => a.key === key)?.vals ?? [];
}

function fail(tc: InteractionCase, msg: string): never {
  throw new Error(`${tc.pos}: ${tc.cmd}: ${msg}`);
}

function indent(s: string): string {
  return s
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
}
