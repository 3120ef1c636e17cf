/**
 * ProgressTracker: the active configuration (voters as a JointConfig,
 * learners), the Progress of every member, and the votes of the current
 * election (etcd/raft tracker.ProgressTracker).
 *
 * Invariants (checked by confchange):
 *   - learners ∩ voters = ∅; learnersNext ⊆ outgoing voters;
 *   - every voter and learner has a Progress, and nothing else does.
 *
 * `ids()` is cached in ascending order so that the leader visits followers in
 * a deterministic order (transcripts and the simulation depend on it).
 */
import type { ConfState } from '../types.js';
import { JointConfig } from '../quorum/joint.js';
import { VoteResult, type AckedIndexer } from '../quorum/majority.js';
import type { Progress } from './progress.js';

export interface TrackerConfig {
  readonly voters: JointConfig;
  /** Leave the joint config automatically once it is committed. */
  readonly autoLeave: boolean;
  readonly learners: ReadonlySet<number>;
  /** Outgoing voters that become learners when leaving the joint config. */
  readonly learnersNext: ReadonlySet<number>;
}

export function emptyTrackerConfig(): TrackerConfig {
  return { voters: new JointConfig(), autoLeave: false, learners: new Set(), learnersNext: new Set() };
}

export function describeTrackerConfig(c: TrackerConfig): string {
  let s = `voters=${c.voters.toString()}`;
  if (c.learners.size > 0) s += ` learners=(${[...c.learners].sort((a, b) => a - b).join(' ')})`;
  if (c.learnersNext.size > 0) s += ` learners_next=(${[...c.learnersNext].sort((a, b) => a - b).join(' ')})`;
  if (c.autoLeave) s += ' autoleave';
  return s;
}

export type ProgressMap = Map<number, Progress>;

export class ProgressTracker implements AckedIndexer {
  config: TrackerConfig = emptyTrackerConfig();
  progress: ProgressMap = new Map();
  votes = new Map<number, boolean>();
  private sortedIds: number[] = [];

  constructor(
    readonly maxInflight: number,
    readonly maxInflightBytes: number,
  ) {}

  /** Installs a new configuration and progress map (from confchange). */
  setConfig(config: TrackerConfig, progress: ProgressMap): void {
    this.config = config;
    this.progress = progress;
    this.sortedIds = [...progress.keys()].sort((a, b) => a - b);
  }

  ackedIndex(id: number): number | undefined {
    return this.progress.get(id)?.match;
  }

  confState(): ConfState {
    const sorted = (it: Iterable<number>): number[] => [...it].sort((a, b) => a - b);
    return {
      voters: [...this.config.voters.incoming.ids],
      votersOutgoing: [...this.config.voters.outgoing.ids],
      learners: sorted(this.config.learners),
      learnersNext: sorted(this.config.learnersNext),
      autoLeave: this.config.autoLeave,
    };
  }

  /** Exactly one voter and not joint. */
  isSingleton(): boolean {
    return this.config.voters.incoming.size === 1 && this.config.voters.outgoing.size === 0;
  }

  /** The largest log index known to be committed by the active config. */
  committed(): number {
    return this.config.voters.committedIndex(this);
  }

  /** Every member id (voters and learners), ascending. Do not mutate. */
  ids(): readonly number[] {
    return this.sortedIds;
  }

  isVoter(id: number): boolean {
    return this.config.voters.has(id);
  }

  /** Whether a quorum of voters was recently active (check-quorum). */
  quorumActive(): boolean {
    const votes = new Map<number, boolean>();
    for (const [id, pr] of this.progress) {
      if (pr.isLearner) continue;
      votes.set(id, pr.recentActive);
    }
    return this.config.voters.voteResult(votes) === VoteResult.VoteWon;
  }

  voterNodes(): number[] {
    return this.config.voters.ids();
  }

  learnerNodes(): number[] {
    return [...this.config.learners].sort((a, b) => a - b);
  }

  resetVotes(): void {
    this.votes.clear();
  }

  /** Records a vote; the first vote from a voter counts. */
  recordVote(id: number, granted: boolean): void {
    if (!this.votes.has(id)) this.votes.set(id, granted);
  }

  /** [granted, rejected, result] over the voters. */
  tallyVotes(): [granted: number, rejected: number, result: VoteResult] {
    let granted = 0;
    let rejected = 0;
    for (const [id, pr] of this.progress) {
      if (pr.isLearner) continue;
      const v = this.votes.get(id);
      if (v === undefined) continue;
      if (v) granted++;
      else rejected++;
    }
    return [granted, rejected, this.config.voters.voteResult(this.votes)];
  }
}
