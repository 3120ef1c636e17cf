/**
 * The randomized fault simulation's driver (issue 3): one seed → one
 * schedule of steps over a SimCluster of 3 or 5 nodes, the safety checker
 * after every step, then a liveness phase. Fully deterministic: the same
 * options give the same trace, step for step, so a failing seed printed by a
 * test replays exactly with `runSimulation({ seed, nodes, steps })`.
 *
 * The seed also picks the run's knobs (election/heartbeat ticks, pre-vote,
 * check-quorum, message size, in-flight window and bytes, committed bytes
 * per Ready, uncommitted budget, drop/duplicate/delay rates, how often the
 * state machine is synced, the nemesis's odds), so code never depends on one
 * value.
 *
 * Steps (CALM_WEIGHTS, plus STORM_WEIGHTS in storm phases; calm and storm
 * phases alternate so the group makes progress between faults): deliver one
 * random due message (the receiver then handles its Ready, or not yet),
 * deliver everything due, tick one node or all (advancing simulated time),
 * handle one node's Ready, propose at a random node or at the leader,
 * compact a log, change the membership; in storms also crash a node (or the
 * leader, or one in the middle of handling its Ready: after the write,
 * before the sends), restart one, crash-and-restart one, isolate the leader,
 * partition arbitrary subsets, heal, and leader churn (partial replication
 * then leader failure, a few times running: the Figure 8 family). In storms
 * a nemesis also strikes leaders in their fragile moments: just elected,
 * just appended, just advanced the commit index.
 *
 * Liveness: after the schedule, heal the network, restart every crashed
 * member, tick until one leader is recognised by all live members of its
 * configuration, with its log committed and applied, for two election
 * timeouts running (bounded by 10 × electionTick × nodes ticks), then
 * propose K entries to it and require them applied on every member within
 * 20 × electionTick ticks.
 */
import { Prng } from '../../src/util/prng.js';
import { StateType, type Message } from '../types.js';
import { SimCluster, type SimNode } from './sim-cluster.js';
import { SimViolationError } from './sim-checker.js';
import { faultHooks, type PlantedFault } from './sim-faults.js';
import type { RawNode } from '../raw-node.js';

export interface SimOptions {
  readonly seed: number;
  /** Initial voters: 3 or 5. */
  readonly nodes: number;
  /** Schedule length (steps before the liveness phase). */
  readonly steps: number;
  readonly fault?: PlantedFault;
  /** Keep every trace line (for replay tests and failure reports). */
  readonly recordTrace?: boolean;
  /** Skip the liveness phase (used when hunting planted safety bugs). */
  readonly skipLiveness?: boolean;
  /** Chooses which of each Ready's messages are sent (SimHooks.readyMessages). */
  readonly readyMessages?: (msgs: readonly Message[]) => readonly Message[];
  /** Config.skipHeartbeatsAfterAppends on every node (not drawn from the seed: existing seeds replay unchanged). */
  readonly skipHeartbeatsAfterAppends?: boolean;
}

/** What a schedule exercised (summed by the tests to show the faults really happen). */
export interface SimStats {
  steps: number;
  delivered: number;
  crashes: number;
  confChanges: number;
  compactions: number;
  leaders: number;
  committed: number;
  snapshots: number;
  confChangesApplied: number;
}

export interface SimResult {
  /** null when every invariant held and the liveness phase succeeded. */
  readonly failure: string | null;
  /** The step at which it failed (-1 = liveness phase or none). */
  readonly failedAt: number;
  /** Every trace line (recordTrace), else null: replay the seed with recordTrace to get it. */
  readonly trace: readonly string[] | null;
  /** The last notable events (knobs, partitions, nemesis strikes, liveness), always kept. */
  readonly tail: readonly string[];
  readonly stats: SimStats;
  /** A digest of the final state (for replay comparisons). */
  readonly digest: string;
}

type StepKind =
  | 'deliver'
  | 'deliverAll'
  | 'tickOne'
  | 'tickAll'
  | 'ready'
  | 'crashMidReady'
  | 'propose'
  | 'proposeAtLeader'
  | 'bounce'
  | 'crash'
  | 'crashLeader'
  | 'restart'
  | 'isolateLeader'
  | 'churn'
  | 'partition'
  | 'heal'
  | 'compact'
  | 'confChange';

/** Steps that keep the group working, and their weights. */
const CALM_WEIGHTS: readonly [StepKind, number][] = [
  ['deliver', 30],
  ['deliverAll', 6],
  ['tickOne', 4],
  ['tickAll', 12],
  ['ready', 6],
  ['propose', 5],
  ['proposeAtLeader', 4],
  ['restart', 2],
  ['heal', 1],
  ['compact', 2],
  ['confChange', 1],
];

/** Faults, added to the calm steps during a storm phase. */
const STORM_WEIGHTS: readonly [StepKind, number][] = [
  ['crashMidReady', 4],
  ['bounce', 2],
  ['crash', 1],
  ['crashLeader', 2],
  ['restart', 2],
  ['isolateLeader', 5],
  ['churn', 5],
  ['partition', 1],
  ['heal', 3],
  ['confChange', 1],
];

class StepPicker {
  private readonly table: StepKind[] = [];
  constructor(weights: readonly (readonly [StepKind, number][])[]) {
    for (const ws of weights) for (const [k, w] of ws) for (let i = 0; i < w; i++) this.table.push(k);
  }
  pick(p: Prng): StepKind {
    return p.pick(this.table);
  }
}

const CALM = new StepPicker([CALM_WEIGHTS]);
const STORM = new StepPicker([CALM_WEIGHTS, STORM_WEIGHTS]);

/** Proposals made in the liveness phase. */
const LIVENESS_PROPOSALS = 3;

/** Runs one schedule; never throws for a Raft failure (it is reported in the result). */
export function runSimulation(o: SimOptions): SimResult {
  const p = new Prng(o.seed);
  // Election timeouts short enough for many elections per schedule, long
  // enough that heartbeats delayed by a healed network (≤ 1 tick) keep a
  // leader in place: electionTick ≥ 4, and heartbeatTick 2 only from 6.
  const electionTick = p.between(4, 8);
  const raftOpts = {
    electionTick,
    heartbeatTick: electionTick >= 6 ? p.between(1, 2) : 1,
    preVote: p.bool(),
    checkQuorum: p.bool(),
    maxSizePerMsg: p.pick([0, 0, 16, 1 << 20]),
    maxInflightMsgs: p.pick([1, 2, 4, 256]),
    maxInflightBytes: p.pick([0, 0, 32]),
    maxCommittedSizePerReady: p.pick([Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 1, 16]),
    maxUncommittedEntriesSize: p.pick([0, 0, 64]),
    skipHeartbeatsAfterAppends: o.skipHeartbeatsAfterAppends ?? false,
  };
  const faults = { dropRate: p.pick([0, 0.02, 0.1, 0.25]), dupRate: p.pick([0, 0.02, 0.1]), maxDelay: p.pick([0, 0, 1, 3]) };
  const syncApplyRate = p.pick([0.1, 0.5, 1]);
  // Targeted faults: how likely a new leader, or a leader that just advanced
  // its commit index, is cut off or crashed at once (Figure-8 histories need
  // leaders to fail in exactly those windows).
  const nemesis = { onNewLeader: p.pick([0, 0.1, 0.3, 0.6]), onAppend: p.pick([0, 0.05, 0.2]), onCommit: p.pick([0, 0.05, 0.2, 0.5]) };
  const readyAfterDeliver = p.pick([0.5, 0.8, 1]);
  const maxNodes = o.nodes + 3;
  const ids = Array.from({ length: o.nodes }, (_, i) => i + 1);
  const c = new SimCluster(ids, p, raftOpts, faults, syncApplyRate, o.readyMessages === undefined ? faultHooks(o.fault ?? 'none') : { ...faultHooks(o.fault ?? 'none'), readyMessages: o.readyMessages }, o.recordTrace ?? false);
  const tail: string[] = [];
  const stats: SimStats = { steps: 0, delivered: 0, crashes: 0, confChanges: 0, compactions: 0, leaders: 0, committed: 0, snapshots: 0, confChangesApplied: 0 };
  const note = (line: string): void => {
    c.log(line);
    tail.push(line);
    if (tail.length > 60) tail.shift();
  };
  note(`knobs ${JSON.stringify({ ...raftOpts, ...faults, syncApplyRate, readyAfterDeliver, nemesis })}`);
  const watch = new LeaderWatch();
  let proposals = 0;
  let step = 0;
  try {
    // Calm and storm phases alternate, so the group makes progress between faults.
    let storm = false;
    let phaseEnd = 0;
    for (; step < o.steps; step++) {
      if (step >= phaseEnd) {
        storm = !storm && p.bool(0.6);
        phaseEnd = step + p.between(10, 120);
      }
      const kind = (storm ? STORM : CALM).pick(p);
      runStep(c, p, kind, {
        readyAfterDeliver,
        maxNodes,
        propose: () => `p${proposals++}`,
        stats,
        note: (s) => note(`${step} ${s}`),
      });
      c.check();
      if (storm) watch.strike(c, p, nemesis, stats, (s) => note(`${step} ${s}`));
    }
    stats.steps = step;
    step = -1;
    if (o.skipLiveness !== true) checkLiveness(c, electionTick, o.nodes, (s) => note(`live ${s}`));
  } catch (e) {
    const msg = e instanceof SimViolationError ? e.message : `raft sim: unexpected ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`;
    return finish(c, stats, msg, step, tail);
  }
  return finish(c, stats, null, -1, tail);
}

function finish(c: SimCluster, stats: SimStats, failure: string | null, failedAt: number, tail: string[]): SimResult {
  stats.leaders = c.checker.leaders.size;
  stats.committed = c.checker.committedCount;
  stats.snapshots = c.snapshotsInstalled;
  stats.confChangesApplied = c.confChangesApplied;
  const parts: string[] = [];
  for (const n of c.nodes.values()) {
    const r = n.rawNode?.raft;
    parts.push(`${n.id}:${r === undefined ? 'down' : `${r.term}/${r.raftLog.lastIndex()}/${r.raftLog.committed}`}:${n.sm.length}`);
  }
  return { failure, failedAt, trace: c.trace, tail, stats, digest: parts.join(',') };
}

interface StepContext {
  readonly readyAfterDeliver: number;
  readonly maxNodes: number;
  propose(): string;
  readonly stats: SimStats;
  note(s: string): void;
}

function pickLive(c: SimCluster, p: Prng): SimNode | null {
  const l = c.live();
  return l.length === 0 ? null : p.pick(l);
}

function runStep(c: SimCluster, p: Prng, kind: StepKind, x: StepContext): void {
  switch (kind) {
    case 'deliver': {
      const m = c.net.takeRandom();
      if (m === null) return;
      x.stats.delivered++;
      c.deliver(m, p.float() < x.readyAfterDeliver);
      return;
    }
    case 'deliverAll':
      for (const m of c.net.takeAllDue()) {
        x.stats.delivered++;
        c.deliver(m, true);
      }
      return;
    case 'tickOne': {
      const n = pickLive(c, p);
      if (n === null) return;
      c.tick(n.id);
      if (p.bool(0.7)) c.handleReady(n.id);
      return;
    }
    case 'tickAll':
      c.net.now++;
      for (const n of c.live()) {
        c.tick(n.id);
        if (p.bool(0.7)) c.handleReady(n.id);
      }
      return;
    case 'ready': {
      const n = pickLive(c, p);
      if (n !== null) c.handleReady(n.id);
      return;
    }
    case 'crashMidReady':
      crashMidReady(c, p, x.stats);
      return;
    case 'propose':
    case 'proposeAtLeader': {
      const n = kind === 'propose' ? pickLive(c, p) : c.leader();
      if (n === null) return;
      c.propose(n.id, Buffer.from(x.propose()));
      if (p.bool(0.7)) c.handleReady(n.id);
      return;
    }
    case 'bounce': {
      const n = pickLive(c, p);
      if (n === null) return;
      x.stats.crashes++;
      c.crash(n.id);
      c.restart(n.id);
      return;
    }
    case 'crash':
    case 'crashLeader': {
      const n = kind === 'crash' ? pickLive(c, p) : c.leader();
      if (n === null) return;
      x.stats.crashes++;
      c.crash(n.id);
      return;
    }
    case 'restart': {
      const d = c.down();
      if (d.length > 0) c.restart(p.pick(d).id);
      return;
    }
    case 'isolateLeader': {
      const l = c.leader();
      if (l === null) return;
      // Alone, or with one other node (a minority of five).
      const g = 100 + p.intn(1000);
      const a = new Map([[l.id, g]]);
      if (c.nodes.size > 4 && p.bool()) a.set(p.pick([...c.nodes.keys()]), g);
      c.net.partition(a);
      x.note(`partition ${c.net.describePartition([...c.nodes.keys()])}`);
      return;
    }
    case 'churn':
      churn(c, p, x);
      return;
    case 'partition': {
      const groups = p.between(1, 3);
      const a = new Map<number, number>();
      for (const id of c.nodes.keys()) a.set(id, p.intn(groups));
      c.net.partition(a);
      x.note(`partition ${c.net.describePartition([...c.nodes.keys()])}`);
      return;
    }
    case 'heal':
      c.net.healPartitions();
      x.note('heal partitions');
      return;
    case 'compact': {
      const n = pickLive(c, p);
      if (n === null) return;
      x.stats.compactions++;
      c.compact(n.id);
      return;
    }
    case 'confChange':
      if (c.proposeConfChange(x.maxNodes) !== '') x.stats.confChanges++;
      return;
  }
}

/** Watches leaders between steps and strikes them in their most fragile moments. */
class LeaderWatch {
  private readonly term = new Map<number, number>();
  private readonly commit = new Map<number, number>();
  private readonly last = new Map<number, number>();

  strike(c: SimCluster, p: Prng, odds: { onNewLeader: number; onAppend: number; onCommit: number }, stats: SimStats, note: (s: string) => void): void {
    for (const n of c.live()) {
      const r = (n.rawNode as RawNode).raft;
      if (r.state !== StateType.Leader) continue;
      const isNew = this.term.get(n.id) !== r.term;
      const committed = !isNew && (this.commit.get(n.id) ?? 0) < r.raftLog.committed;
      const appended = !isNew && (this.last.get(n.id) ?? 0) < r.raftLog.lastIndex();
      this.term.set(n.id, r.term);
      this.commit.set(n.id, r.raftLog.committed);
      this.last.set(n.id, r.raftLog.lastIndex());
      const odd = isNew ? odds.onNewLeader : committed ? odds.onCommit : appended ? odds.onAppend : 0;
      if (odd === 0 || !p.bool(odd)) continue;
      // A crashed leader's messages in flight still arrive; an isolated one's do not.
      if (p.bool(isNew ? 0.5 : 0.2)) {
        stats.crashes++;
        note(`nemesis: crash ${isNew ? 'new leader' : 'leader after commit/append'} ${n.id}`);
        c.crash(n.id);
      } else {
        c.net.partition(new Map([[n.id, 100 + p.intn(1000)]]));
        note(`nemesis: isolate ${isNew ? 'new leader' : 'leader after commit/append'} ${n.id}`);
      }
    }
  }
}

/** Crashes a node with an unhandled Ready in the middle of handling it (between its write and its sends). */
function crashMidReady(c: SimCluster, p: Prng, stats: SimStats): void {
  const pending = c.live().filter((n) => (n.rawNode as RawNode).hasReady());
  if (pending.length === 0) return;
  stats.crashes++;
  c.handleReady(p.pick(pending).id, { crashAfterPersist: true });
}

/**
 * Leader churn, the family of Figure 8 (Raft §5.4.2): a few times in a row,
 * the leader appends, replicates to a random subset (and hears back from a
 * random subset), then is cut off or crashed, and the others elect a new one.
 * Logs diverge at the same indexes in different terms, and leaders that must
 * not commit by counting replicas get the chance to.
 */
function churn(c: SimCluster, p: Prng, x: StepContext): void {
  const rounds = p.between(2, 5);
  for (let k = 0; k < rounds; k++) {
    // Earlier leaders come back (the old leader's return is what Figure 8 needs).
    if (k > 0 && p.bool(0.7)) {
      c.net.healPartitions();
      for (const d of c.down()) c.restart(d.id);
    }
    const l = c.leader();
    if (l === null) return;
    for (let j = p.between(0, 2); j > 0; j--) c.propose(l.id, Buffer.from(x.propose()));
    c.handleReady(l.id);
    // Partial replication, for one to three round trips: each message from
    // the leader arrives or is lost (and is handled by its receiver or not
    // yet), then each answer.
    for (let trip = p.between(1, 3); trip > 0; trip--) {
      for (const m of c.net.take((m) => m.from === l.id)) {
        if (p.bool(0.7)) c.deliver(m, p.bool(0.7));
        else c.drop(m);
      }
      c.check();
      if (p.bool(0.3)) crashMidReady(c, p, x.stats);
      for (const m of c.net.take((m) => m.to === l.id)) {
        if (p.bool(0.7)) c.deliver(m, true);
        else c.drop(m);
      }
      c.check();
      if (l.rawNode === null) break;
    }
    if (p.bool(0.3)) {
      x.stats.crashes++;
      c.crash(l.id);
    } else c.net.partition(new Map([[l.id, 100 + p.intn(1000)]]));
    x.note(`churn: leader ${l.id} of term ${(l.rawNode?.raft.term ?? 0)} cut off`);
    // The others elect a new leader (bounded).
    const lead = c.leader();
    for (let t = 0; t < 4 * c.raftOpts.electionTick && c.leader() === lead; t++) {
      c.net.now++;
      for (const n of c.live()) {
        c.tick(n.id);
        c.handleReady(n.id);
      }
      for (const m of c.net.takeAllDue()) c.deliver(m, true);
      c.check();
    }
  }
  c.net.healPartitions();
}

/** One tick of a healthy cluster: every live node ticks, then everything due is delivered until quiet. */
function healthyTick(c: SimCluster): void {
  c.net.now++;
  for (const n of c.live()) {
    c.tick(n.id);
    c.handleReady(n.id);
  }
  for (let round = 0; round < 50 && c.net.deliverableCount() > 0; round++) {
    for (const m of c.net.takeAllDue()) c.deliver(m, true);
  }
  c.check();
}

/**
 * The leader every live member of its configuration follows, with its whole
 * log committed and applied and no joint configuration pending (so no
 * membership change in flight can still remove it), or null.
 */
function stableLeader(c: SimCluster): SimNode | null {
  const l = c.leader();
  if (l === null) return null;
  const r = (l.rawNode as RawNode).raft;
  for (const id of r.trk.ids()) {
    const m = c.nodes.get(id)?.rawNode?.raft;
    if (m === undefined) continue;
    if (m.term !== r.term || m.lead !== l.id) return null;
  }
  const log = r.raftLog;
  const settled = log.committed === log.lastIndex() && log.applied === log.committed && !r.trk.config.voters.joint;
  return settled && r.trk.isVoter(l.id) ? l : null;
}

function checkLiveness(c: SimCluster, electionTick: number, nodes: number, note: (s: string) => void): void {
  c.net.heal();
  c.net.faults.maxDelay = Math.min(c.net.faults.maxDelay, 1);
  for (const n of c.down()) c.restart(n.id);
  note('healed; every member restarted');
  const bound = 10 * electionTick * nodes;
  // A leader counts once it has stayed settled for two election timeouts: a
  // follower whose timer was about to fire when the network healed may still
  // (legitimately, without pre-vote) start one more election.
  const settle = 2 * electionTick;
  let lead: SimNode | null = null;
  let term = 0;
  let since = 0;
  for (let t = 0; t < bound && since < settle; t++) {
    healthyTick(c);
    const l = stableLeader(c);
    const lt = l === null ? 0 : (l.rawNode as RawNode).raft.term;
    if (l !== null && l === lead && lt === term) since++;
    else [lead, term, since] = [l, lt, 0];
  }
  if (lead === null || since < settle) throw new SimViolationError(`raft sim: liveness: no stable leader within ${bound} ticks of healing; ${describeNodes(c)}`);
  const want: string[] = [];
  for (let k = 0; k < LIVENESS_PROPOSALS; k++) {
    const d = `final${k}`;
    want.push(d);
    c.propose(lead.id, Buffer.from(d));
  }
  note(`leader ${lead.id} of term ${term}; proposed ${want.join(' ')}`);
  const commitBound = 20 * electionTick;
  for (let t = 0; t < commitBound; t++) {
    healthyTick(c);
    if (allApplied(c, want)) return;
  }
  const l2 = c.leader();
  throw new SimViolationError(
    `raft sim: liveness: proposals to leader ${lead.id} (term ${term}) not applied by every member within ${commitBound} ticks (leader now ${l2?.id ?? 'none'}); ${describeNodes(c)}`,
  );
}

function allApplied(c: SimCluster, want: readonly string[]): boolean {
  const l = c.leader();
  if (l === null) return false;
  for (const id of (l.rawNode as RawNode).raft.trk.ids()) {
    const n = c.nodes.get(id);
    if (n === undefined || n.rawNode === null) return false;
    const seen = new Set<string>();
    for (let k = Math.max(0, n.sm.length - 64); k < n.sm.length; k++) seen.add(Buffer.from((n.sm[k] as { data: Uint8Array }).data).toString('latin1'));
    for (const w of want) if (!seen.has(w)) return false;
  }
  return true;
}

/** Every live node's state, for failure reports. */
function describeNodes(c: SimCluster): string {
  const out: string[] = [];
  for (const n of c.live()) {
    const st = (n.rawNode as RawNode).status();
    out.push(
      `${n.id}: ${st.softState.raftState === StateType.Leader ? 'leader' : `lead=${st.softState.lead}`} term=${st.hardState.term} vote=${st.hardState.vote} commit=${st.hardState.commit} applied=${st.applied} last=${st.lastIndex} ${st.config}`,
    );
  }
  return out.join('; ');
}
