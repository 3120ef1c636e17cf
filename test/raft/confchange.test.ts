// Membership changes by joint consensus (Raft §6; etcd/raft confchange):
// transitions, validation, restore from a ConfState, and the entry codec.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Changer, InvalidConfChangeError, restore, type ChangeResult } from '../../raft/confchange/confchange.js';
import { confChangesFromString, confChangesToString, decodeConfChange, encodeConfChange } from '../../raft/conf-change-codec.js';
import { describeConfState } from '../../raft/describe.js';
import { ProgressTracker, emptyTrackerConfig } from '../../raft/tracker/tracker.js';
import { CorruptionError } from '../../src/util/errors.js';
import { ConfChangeTransition, ConfChangeType, type ConfChangeSingle, type ConfState } from '../../raft/types.js';

const EMPTY: ChangeResult = { config: emptyTrackerConfig(), progress: new Map() };

function confState(r: ChangeResult): ConfState {
  const t = new ProgressTracker(10, 0);
  t.setConfig(r.config, r.progress);
  return t.confState();
}

function changer(r: ChangeResult): Changer {
  return new Changer(r.config, r.progress, 10, 10, 0);
}

function simple(r: ChangeResult, s: string): ChangeResult {
  let cur = r;
  for (const cc of confChangesFromString(s)) cur = changer(cur).simple([cc]);
  return cur;
}

describe('confchange', () => {
  it('simple changes add and remove one voter at a time', () => {
    let r = simple(EMPTY, 'v1 v2 v3 l4');
    expect(describeConfState(confState(r))).toBe('Voters:[1 2 3] VotersOutgoing:[] Learners:[4] LearnersNext:[] AutoLeave:false');
    r = simple(r, 'v4'); // promote
    r = simple(r, 'r1');
    expect(confState(r).voters).toEqual([2, 3, 4]);
    expect(confState(r).learners).toEqual([]);
    expect(() => changer(r).simple(confChangesFromString('v5 v6'))).toThrow(InvalidConfChangeError);
    expect(() => changer(simple(EMPTY, 'v1')).simple(confChangesFromString('r1'))).toThrow(/removed all voters/);
  });

  it('joint consensus: enter with several changes, then leave', () => {
    const r0 = simple(EMPTY, 'v1 v2 v3');
    const j = changer(r0).enterJoint(true, confChangesFromString('v4 r1 l2'));
    const cs = confState(j);
    expect(cs.voters).toEqual([3, 4]);
    expect(cs.votersOutgoing).toEqual([1, 2, 3]);
    // 2 is demoted while still an outgoing voter: staged in LearnersNext.
    expect(cs.learnersNext).toEqual([2]);
    expect(cs.autoLeave).toBe(true);
    expect(() => changer(j).enterJoint(false, [])).toThrow(/already joint/);
    expect(() => changer(j).simple(confChangesFromString('v5'))).toThrow(/in joint config/);
    const left = confState(changer(j).leaveJoint());
    expect(describeConfState(left)).toBe('Voters:[3 4] VotersOutgoing:[] Learners:[2] LearnersNext:[] AutoLeave:false');
    expect(() => changer(r0).leaveJoint()).toThrow(/non-joint/);
  });

  it('the inputs of a change are never mutated', () => {
    const r0 = simple(EMPTY, 'v1 v2');
    const before = describeConfState(confState(r0));
    const match = r0.progress.get(1)?.match;
    const j = changer(r0).enterJoint(false, confChangesFromString('r1 v3'));
    (j.progress.get(2) as { match: number }).match = 99;
    expect(describeConfState(confState(r0))).toBe(before);
    expect(r0.progress.get(2)?.match).toBe(match);
  });

  it('restore(confState) rebuilds the same configuration (random change sequences)', () => {
    const op = fc.record({
      kind: fc.constantFrom('simple', 'joint', 'leave'),
      changes: fc.array(
        fc.record({ type: fc.constantFrom(ConfChangeType.AddNode, ConfChangeType.AddLearnerNode, ConfChangeType.RemoveNode), nodeId: fc.integer({ min: 1, max: 6 }) }),
        { maxLength: 3 },
      ),
      auto: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 12 }), (ops) => {
        let cur = simple(EMPTY, 'v1');
        for (const o of ops) {
          try {
            if (o.kind === 'simple') cur = changer(cur).simple(o.changes as ConfChangeSingle[]);
            else if (o.kind === 'joint') cur = changer(cur).enterJoint(o.auto, o.changes as ConfChangeSingle[]);
            else cur = changer(cur).leaveJoint();
          } catch (e) {
            if (!(e instanceof InvalidConfChangeError)) throw e;
          }
          const cs = confState(cur);
          const again = confState(restore(cs, 10, 10, 0, EMPTY));
          expect(describeConfState(again)).toBe(describeConfState(cs));
          expect(cs.voters.length).toBeGreaterThan(0);
          for (const l of cs.learners) expect([...cs.voters, ...cs.votersOutgoing]).not.toContain(l);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('conf change codec', () => {
  it('round-trips', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(ConfChangeTransition.Auto, ConfChangeTransition.JointImplicit, ConfChangeTransition.JointExplicit),
        fc.array(fc.record({ type: fc.constantFrom(0, 1, 2, 3), nodeId: fc.integer({ min: 0, max: 0xffffffff }) }), { maxLength: 8 }),
        fc.uint8Array({ maxLength: 16 }),
        (transition, changes, context) => {
          const cc = { transition, changes: changes as ConfChangeSingle[], context };
          const back = decodeConfChange(encodeConfChange(cc));
          expect(back.transition).toBe(transition);
          expect(back.changes).toEqual(changes);
          expect(Buffer.from(back.context).equals(Buffer.from(context))).toBe(true);
        },
      ),
    );
  });

  it('rejects truncated or malformed data', () => {
    const good = encodeConfChange({ transition: 0, changes: confChangesFromString('v1 v2'), context: new Uint8Array(0) });
    expect(() => decodeConfChange(good.subarray(0, 5))).toThrow(CorruptionError);
    expect(() => decodeConfChange(new Uint8Array([9, 0, 0]))).toThrow(CorruptionError);
    expect(confChangesToString(decodeConfChange(good).changes)).toBe('v1 v2');
  });
});
