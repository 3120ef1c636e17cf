// Fast quorum computations checked against the simple reference versions
// (STYLE.md: "a fast version and a simple version", compared with fast-check).
// Raft §5.3 (commit index = largest index on a majority) and §6 (joint
// consensus needs both majorities).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MajorityConfig, VoteResult, type AckedIndexer } from '../../raft/quorum/majority.js';
import { JointConfig } from '../../raft/quorum/joint.js';
import {
  referenceCommittedIndex,
  referenceJointCommittedIndex,
  referenceJointVoteResult,
  referenceVoteResult,
} from '../../raft/quorum/reference.js';
import { NO_LIMIT } from '../../raft/types.js';

const ids = fc.uniqueArray(fc.integer({ min: 1, max: 9 }), { maxLength: 7 });
const acked = fc.dictionary(fc.integer({ min: 1, max: 9 }).map(String), fc.integer({ min: 0, max: 20 }));
const votes = fc.dictionary(fc.integer({ min: 1, max: 9 }).map(String), fc.boolean());

function indexer(d: Record<string, number>): [AckedIndexer, Map<number, number>] {
  const m = new Map(Object.entries(d).map(([k, v]) => [Number(k), v] as [number, number]));
  return [{ ackedIndex: (id) => m.get(id) }, m];
}

function voteMap(d: Record<string, boolean>): Map<number, boolean> {
  return new Map(Object.entries(d).map(([k, v]) => [Number(k), v] as [number, boolean]));
}

describe('majority quorum', () => {
  it('committedIndex matches the reference', () => {
    fc.assert(
      fc.property(ids, acked, (voters, a) => {
        const [l, m] = indexer(a);
        expect(new MajorityConfig(voters).committedIndex(l)).toBe(referenceCommittedIndex(voters, m));
      }),
      { numRuns: 2000 },
    );
  });

  it('voteResult matches the reference', () => {
    fc.assert(
      fc.property(ids, votes, (voters, v) => {
        const vm = voteMap(v);
        expect(new MajorityConfig(voters).voteResult(vm)).toBe(referenceVoteResult(voters, vm));
      }),
      { numRuns: 2000 },
    );
  });

  it('examples', () => {
    const [l] = indexer({ 1: 5, 2: 3, 3: 9 });
    expect(new MajorityConfig([1, 2, 3]).committedIndex(l)).toBe(5);
    expect(new MajorityConfig([1, 2, 3, 4]).committedIndex(l)).toBe(3); // 4 has acked nothing
    expect(new MajorityConfig([]).committedIndex(l)).toBe(NO_LIMIT);
    expect(new MajorityConfig([1, 2, 3]).voteResult(new Map([[1, true]]))).toBe(VoteResult.VotePending);
    expect(new MajorityConfig([1, 2, 3]).voteResult(new Map([[1, true], [2, false], [3, false]]))).toBe(VoteResult.VoteLost);
  });
});

describe('joint quorum', () => {
  it('committedIndex matches the reference', () => {
    fc.assert(
      fc.property(ids, ids, acked, (inc, out, a) => {
        const [l, m] = indexer(a);
        const j = new JointConfig(new MajorityConfig(inc), new MajorityConfig(out));
        expect(j.committedIndex(l)).toBe(referenceJointCommittedIndex(inc, out, m));
      }),
      { numRuns: 2000 },
    );
  });

  it('voteResult matches the reference', () => {
    fc.assert(
      fc.property(ids, ids, votes, (inc, out, v) => {
        const vm = voteMap(v);
        const j = new JointConfig(new MajorityConfig(inc), new MajorityConfig(out));
        expect(j.voteResult(vm)).toBe(referenceJointVoteResult(inc, out, vm));
      }),
      { numRuns: 2000 },
    );
  });

  it('a non-joint config behaves like its incoming half', () => {
    fc.assert(
      fc.property(ids, acked, (inc, a) => {
        const [l] = indexer(a);
        expect(new JointConfig(new MajorityConfig(inc)).committedIndex(l)).toBe(new MajorityConfig(inc).committedIndex(l));
      }),
    );
  });
});
