/**
 * Configuration changes by joint consensus (Raft §6; etcd/raft confchange).
 *
 * A Changer takes the current tracker configuration and progress map plus
 * the leader's last index, and returns a *new* configuration and progress
 * map (the inputs are never mutated), or throws InvalidConfChangeError:
 *
 *   simple(ccs)          at most one voter added/removed; no joint state;
 *   enterJoint(auto,ccs) outgoing := incoming, then apply ccs to incoming;
 *   leaveJoint()         drop outgoing; learnersNext become learners;
 *                        members only in outgoing lose their progress.
 *
 * A voter demoted to learner while it is still in the outgoing config is
 * staged in learnersNext (it may not be a learner and a voter at once).
 *
 * `restore(cs)` rebuilds a configuration from a persisted ConfState by
 * replaying it as a series of changes from an empty config.
 */
import { CairnError } from '../../src/util/errors.js';
import { MajorityConfig } from '../quorum/majority.js';
import { JointConfig } from '../quorum/joint.js';
import { Inflights } from '../tracker/inflights.js';
import { Progress } from '../tracker/progress.js';
import type { ProgressMap, TrackerConfig } from '../tracker/tracker.js';
import { ConfChangeType, type ConfChangeSingle, type ConfState } from '../types.js';

export class InvalidConfChangeError extends CairnError {
  override name = 'InvalidConfChangeError';
  constructor(message: string) {
    super('raft.invalid_conf_change', `raft: ${message}`);
  }
}

/** A mutable working copy of a configuration. */
interface Working {
  incoming: Set<number>;
  outgoing: Set<number>;
  learners: Set<number>;
  learnersNext: Set<number>;
  autoLeave: boolean;
  prs: ProgressMap;
}

export interface ChangeResult {
  readonly config: TrackerConfig;
  readonly progress: ProgressMap;
}

export class Changer {
  constructor(
    private readonly config: TrackerConfig,
    private readonly progress: ProgressMap,
    private readonly lastIndex: number,
    private readonly maxInflight: number,
    private readonly maxInflightBytes: number,
  ) {}

  enterJoint(autoLeave: boolean, ccs: readonly ConfChangeSingle[]): ChangeResult {
    const w = this.checkAndCopy();
    if (w.outgoing.size > 0) throw new InvalidConfChangeError('config is already joint');
    if (w.incoming.size === 0) throw new InvalidConfChangeError("can't make a zero-voter config joint");
    w.outgoing = new Set(w.incoming);
    this.apply(w, ccs);
    w.autoLeave = autoLeave;
    return this.checkAndReturn(w);
  }

  leaveJoint(): ChangeResult {
    const w = this.checkAndCopy();
    if (w.outgoing.size === 0) throw new InvalidConfChangeError("can't leave a non-joint config");
    for (const id of w.learnersNext) {
      w.learners.add(id);
      const pr = w.prs.get(id);
      if (pr !== undefined) pr.isLearner = true;
    }
    w.learnersNext.clear();
    for (const id of w.outgoing) {
      if (!w.incoming.has(id) && !w.learners.has(id)) w.prs.delete(id);
    }
    w.outgoing.clear();
    w.autoLeave = false;
    return this.checkAndReturn(w);
  }

  simple(ccs: readonly ConfChangeSingle[]): ChangeResult {
    const w = this.checkAndCopy();
    if (w.outgoing.size > 0) throw new InvalidConfChangeError("can't apply simple config change in joint config");
    const before = new Set(w.incoming);
    this.apply(w, ccs);
    let diff = 0;
    for (const id of before) if (!w.incoming.has(id)) diff++;
    for (const id of w.incoming) if (!before.has(id)) diff++;
    if (diff > 1) throw new InvalidConfChangeError('more than one voter changed without entering joint config');
    return this.checkAndReturn(w);
  }

  private apply(w: Working, ccs: readonly ConfChangeSingle[]): void {
    for (const cc of ccs) {
      if (cc.nodeId === 0) continue; // etcd: a zero id is a no-op
      switch (cc.type) {
        case ConfChangeType.AddNode:
          this.makeVoter(w, cc.nodeId);
          break;
        case ConfChangeType.AddLearnerNode:
          this.makeLearner(w, cc.nodeId);
          break;
        case ConfChangeType.RemoveNode:
          this.remove(w, cc.nodeId);
          break;
        case ConfChangeType.UpdateNode:
          break;
      }
    }
    if (w.incoming.size === 0) throw new InvalidConfChangeError('removed all voters');
  }

  private makeVoter(w: Working, id: number): void {
    const pr = w.prs.get(id);
    if (pr === undefined) {
      this.initProgress(w, id, false);
      return;
    }
    pr.isLearner = false;
    w.learners.delete(id);
    w.learnersNext.delete(id);
    w.incoming.add(id);
  }

  private makeLearner(w: Working, id: number): void {
    const pr = w.prs.get(id);
    if (pr === undefined) {
      this.initProgress(w, id, true);
      return;
    }
    if (pr.isLearner) return;
    // Remove it as a voter first (keeping its progress), then re-add as a learner.
    this.remove(w, id);
    w.prs.set(id, pr);
    // A voter of the outgoing config becomes a learner only when the joint
    // config is left (it cannot be both at once).
    if (w.outgoing.has(id)) {
      w.learnersNext.add(id);
    } else {
      pr.isLearner = true;
      w.learners.add(id);
    }
  }

  private remove(w: Working, id: number): void {
    if (!w.prs.has(id)) return;
    w.incoming.delete(id);
    w.learners.delete(id);
    w.learnersNext.delete(id);
    // Still a voter of the outgoing config: keep its progress.
    if (!w.outgoing.has(id)) w.prs.delete(id);
  }

  private initProgress(w: Working, id: number, isLearner: boolean): void {
    if (isLearner) w.learners.add(id);
    else w.incoming.add(id);
    // The first probe goes to the leader's last index: as an optimistic guess
    // it costs one rejection at most (etcd does the same).
    const pr = new Progress(Math.max(this.lastIndex, 1), new Inflights(this.maxInflight, this.maxInflightBytes), isLearner, 0);
    // Treat a new member as active so that check-quorum does not step the
    // leader down before it had a chance to hear from it.
    pr.recentActive = true;
    w.prs.set(id, pr);
  }

  private checkAndCopy(): Working {
    const c = this.config;
    const prs: ProgressMap = new Map();
    for (const [id, pr] of this.progress) prs.set(id, pr.clone());
    const w: Working = {
      incoming: new Set(c.voters.incoming.ids),
      outgoing: new Set(c.voters.outgoing.ids),
      learners: new Set(c.learners),
      learnersNext: new Set(c.learnersNext),
      autoLeave: c.autoLeave,
      prs,
    };
    checkInvariants(w);
    return w;
  }

  private checkAndReturn(w: Working): ChangeResult {
    checkInvariants(w);
    return {
      config: {
        voters: new JointConfig(new MajorityConfig(w.incoming), new MajorityConfig(w.outgoing)),
        autoLeave: w.autoLeave,
        learners: w.learners,
        learnersNext: w.learnersNext,
      },
      progress: w.prs,
    };
  }
}

function checkInvariants(w: Working): void {
  for (const set of [w.incoming, w.outgoing, w.learners, w.learnersNext]) {
    for (const id of set) if (!w.prs.has(id)) throw new InvalidConfChangeError(`no progress for ${id}`);
  }
  for (const id of w.learnersNext) {
    if (!w.outgoing.has(id)) throw new InvalidConfChangeError(`${id} is in LearnersNext, but not Voters[1]`);
    if (w.prs.get(id)?.isLearner) throw new InvalidConfChangeError(`${id} is in LearnersNext, but is already marked as learner`);
  }
  for (const id of w.learners) {
    if (w.outgoing.has(id)) throw new InvalidConfChangeError(`${id} is in Learners and Voters[1]`);
    if (w.incoming.has(id)) throw new InvalidConfChangeError(`${id} is in Learners and Voters[0]`);
    if (!w.prs.get(id)?.isLearner) throw new InvalidConfChangeError(`${id} is in Learners, but is not marked as learner`);
  }
  if (w.outgoing.size === 0) {
    if (w.learnersNext.size > 0) throw new InvalidConfChangeError('cfg.LearnersNext must be empty when not joint');
    if (w.autoLeave) throw new InvalidConfChangeError('AutoLeave must be false when not joint');
  }
}

/**
 * Rebuilds the configuration described by `cs` from an empty one: first the
 * outgoing voters (as if they were incoming), then a joint transition that
 * removes them all and adds the incoming voters, learners and learnersNext.
 */
export function restore(
  cs: ConfState,
  lastIndex: number,
  maxInflight: number,
  maxInflightBytes: number,
  base: ChangeResult,
): ChangeResult {
  let cur = base;
  const changer = (): Changer => new Changer(cur.config, cur.progress, lastIndex, maxInflight, maxInflightBytes);
  const outgoing: ConfChangeSingle[] = cs.votersOutgoing.map((id) => ({ type: ConfChangeType.AddNode, nodeId: id }));
  const incoming: ConfChangeSingle[] = [
    ...cs.votersOutgoing.map((id) => ({ type: ConfChangeType.RemoveNode, nodeId: id })),
    ...cs.voters.map((id) => ({ type: ConfChangeType.AddNode, nodeId: id })),
    ...cs.learners.map((id) => ({ type: ConfChangeType.AddLearnerNode, nodeId: id })),
    ...cs.learnersNext.map((id) => ({ type: ConfChangeType.AddLearnerNode, nodeId: id })),
  ];
  if (outgoing.length === 0) {
    for (const cc of incoming) cur = changer().simple([cc]);
  } else {
    for (const cc of outgoing) cur = changer().simple([cc]);
    cur = changer().enterJoint(cs.autoLeave, incoming);
  }
  return cur;
}
