/**
 * Joint quorums (Raft §6, joint consensus): a decision needs a majority of
 * the incoming config AND a majority of the outgoing config. Outside a joint
 * configuration the outgoing half is empty, and the empty majority config
 * agrees with everything (see majority.ts), so the same code serves both.
 */
import { MajorityConfig, VoteResult, type AckedIndexer } from './majority.js';

export class JointConfig {
  constructor(
    readonly incoming: MajorityConfig = new MajorityConfig(),
    readonly outgoing: MajorityConfig = new MajorityConfig(),
  ) {}

  /** Whether we are in a joint configuration (outgoing non-empty). */
  get joint(): boolean {
    return this.outgoing.size > 0;
  }

  /** Every voter id of either half, ascending and without duplicates. */
  ids(): number[] {
    const s = new Set<number>(this.incoming.ids);
    for (const id of this.outgoing.ids) s.add(id);
    return [...s].sort((a, b) => a - b);
  }

  has(id: number): boolean {
    return this.incoming.has(id) || this.outgoing.has(id);
  }

  toString(): string {
    return this.outgoing.size > 0 ? `${this.incoming.toString()}&&${this.outgoing.toString()}` : this.incoming.toString();
  }

  /** The largest index committed by both halves. */
  committedIndex(l: AckedIndexer): number {
    const a = this.incoming.committedIndex(l);
    const b = this.outgoing.committedIndex(l);
    return a < b ? a : b;
  }

  /** Won if both halves won, Lost if either lost, Pending otherwise. */
  voteResult(votes: ReadonlyMap<number, boolean>): VoteResult {
    const r1 = this.incoming.voteResult(votes);
    const r2 = this.outgoing.voteResult(votes);
    if (r1 === r2) return r1;
    if (r1 === VoteResult.VoteLost || r2 === VoteResult.VoteLost) return VoteResult.VoteLost;
    return VoteResult.VotePending;
  }
}
