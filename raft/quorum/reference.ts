/**
 * Simple, obviously-correct versions of the quorum computations, used only by
 * property tests to check the fast versions in majority.ts and joint.ts
 * (STYLE.md: "a fast version and a simple version").
 */
import { NO_LIMIT } from '../types.js';
import { VoteResult } from './majority.js';

/**
 * The largest index i such that at least a majority of `voters` acked ≥ i:
 * try every candidate value and count.
 */
export function referenceCommittedIndex(voters: readonly number[], acked: ReadonlyMap<number, number>): number {
  const ids = [...new Set(voters)];
  if (ids.length === 0) return NO_LIMIT;
  const q = Math.floor(ids.length / 2) + 1;
  let best = 0;
  for (const cand of ids.map((id) => acked.get(id) ?? 0)) {
    const n = ids.filter((id) => (acked.get(id) ?? 0) >= cand).length;
    if (n >= q && cand > best) best = cand;
  }
  return best;
}

export function referenceVoteResult(voters: readonly number[], votes: ReadonlyMap<number, boolean>): VoteResult {
  const ids = [...new Set(voters)];
  if (ids.length === 0) return VoteResult.VoteWon;
  const q = Math.floor(ids.length / 2) + 1;
  const yes = ids.filter((id) => votes.get(id) === true).length;
  const no = ids.filter((id) => votes.get(id) === false).length;
  if (yes >= q) return VoteResult.VoteWon;
  if (ids.length - no >= q) return VoteResult.VotePending;
  return VoteResult.VoteLost;
}

export function referenceJointCommittedIndex(
  incoming: readonly number[],
  outgoing: readonly number[],
  acked: ReadonlyMap<number, number>,
): number {
  return Math.min(referenceCommittedIndex(incoming, acked), referenceCommittedIndex(outgoing, acked));
}

export function referenceJointVoteResult(
  incoming: readonly number[],
  outgoing: readonly number[],
  votes: ReadonlyMap<number, boolean>,
): VoteResult {
  const a = referenceVoteResult(incoming, votes);
  const b = referenceVoteResult(outgoing, votes);
  if (a === VoteResult.VoteLost || b === VoteResult.VoteLost) return VoteResult.VoteLost;
  if (a === VoteResult.VoteWon && b === VoteResult.VoteWon) return VoteResult.VoteWon;
  return VoteResult.VotePending;
}
