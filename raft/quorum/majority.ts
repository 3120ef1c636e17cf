/**
 * Majority quorums: the commit index and the vote result of one majority
 * configuration (a set of voter ids). The joint configuration (joint.ts)
 * combines two of these.
 *
 * Invariants:
 *   - committedIndex of the empty config is +∞ (NO_LIMIT), so that a joint
 *     config with an empty outgoing half behaves like its incoming half;
 *   - voteResult of the empty config is Won, for the same reason;
 *   - a voter with no acked index counts as index 0.
 *
 * The fast path sorts the acked indexes of the voters in a scratch array held
 * by the config (no allocation per call) with an insertion sort, which beats
 * Array.prototype.sort for the 3–7 voters of a range. `reference.ts` holds the
 * obvious version that property tests compare against.
 */
import { NO_LIMIT } from '../types.js';

/** Looks up the highest log index known to be durable on a voter. */
export interface AckedIndexer {
  ackedIndex(id: number): number | undefined;
}

export enum VoteResult {
  /** Not yet decided: more votes may still flip the outcome. */
  VotePending = 1,
  VoteLost = 2,
  VoteWon = 3,
}

export const VOTE_RESULT_NAMES: Record<VoteResult, string> = {
  [VoteResult.VotePending]: 'VotePending',
  [VoteResult.VoteLost]: 'VoteLost',
  [VoteResult.VoteWon]: 'VoteWon',
};

/** An immutable set of voter ids. */
export class MajorityConfig {
  /** Voter ids, ascending. */
  readonly ids: readonly number[];
  private readonly scratch: number[];

  constructor(ids: Iterable<number> = []) {
    this.ids = [...new Set(ids)].sort((a, b) => a - b);
    this.scratch = new Array<number>(this.ids.length).fill(0);
  }

  get size(): number {
    return this.ids.length;
  }

  has(id: number): boolean {
    return this.ids.includes(id);
  }

  toString(): string {
    return `(${this.ids.join(' ')})`;
  }

  /**
   * The largest index that a majority of the voters has acked: the quorum
   * commit index (Raft §5.3). +∞ for an empty config.
   */
  committedIndex(l: AckedIndexer): number {
    const n = this.ids.length;
    if (n === 0) return NO_LIMIT;
    const srt = this.scratch;
    // Insertion sort, ascending.
    for (let i = 0; i < n; i++) {
      const v = l.ackedIndex(this.ids[i] as number) ?? 0;
      let j = i;
      while (j > 0 && (srt[j - 1] as number) > v) {
        srt[j] = srt[j - 1] as number;
        j--;
      }
      srt[j] = v;
    }
    // With n voters a quorum is q = n/2+1; the q-th largest value is acked by q voters.
    return srt[n - ((n >> 1) + 1)] as number;
  }

  /** The outcome of an election given the votes so far (true = granted). */
  voteResult(votes: ReadonlyMap<number, boolean>): VoteResult {
    const n = this.ids.length;
    if (n === 0) return VoteResult.VoteWon;
    let yes = 0;
    let missing = 0;
    for (let i = 0; i < n; i++) {
      const v = votes.get(this.ids[i] as number);
      if (v === undefined) missing++;
      else if (v) yes++;
    }
    const q = (n >> 1) + 1;
    if (yes >= q) return VoteResult.VoteWon;
    if (yes + missing >= q) return VoteResult.VotePending;
    return VoteResult.VoteLost;
  }
}
