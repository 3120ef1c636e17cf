// A light randomized check of Raft's safety properties (Raft §5.2 election
// safety, §5.3 log matching, §5.4.3 state machine safety) under message
// loss, reordering, partitions and crash-restarts. The fuller simulation
// lives with the second engineer's fault simulator; this one guards the
// library's own invariants on every change.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Changer, InvalidConfChangeError } from '../../raft/confchange/confchange.js';
import { confChangesFromString } from '../../raft/conf-change-codec.js';
import { Network } from '../../raft/rafttest/network.js';
import { ConfChangeTransition, StateType, type Entry } from '../../raft/types.js';

function sameEntry(a: Entry, b: Entry): boolean {
  return a.index === b.index && a.term === b.term && Buffer.from(a.data).equals(Buffer.from(b.data));
}

function checkSafety(net: Network, leaders: Map<number, number>): void {
  // Election safety: at most one leader per term.
  for (const n of net.nodes.values()) {
    const r = n.rawNode.raft;
    if (r.state !== StateType.Leader) continue;
    const prev = leaders.get(r.term);
    if (prev !== undefined) expect(prev, `two leaders in term ${r.term}`).toBe(n.id);
    leaders.set(r.term, n.id);
  }
  // State machine safety: applied sequences are prefixes of one another.
  const nodes = [...net.nodes.values()];
  for (let i = 0; i < nodes.length; i++) {
    for (let j = i + 1; j < nodes.length; j++) {
      const a = (nodes[i] as (typeof nodes)[number]).applied;
      const b = (nodes[j] as (typeof nodes)[number]).applied;
      const n = Math.min(a.length, b.length);
      for (let k = 0; k < n; k++) expect(sameEntry(a[k] as Entry, b[k] as Entry), `applied[${k}] differs`).toBe(true);
    }
  }
  // Log matching on the committed prefix.
  for (const x of nodes) {
    for (const y of nodes) {
      const rx = x.rawNode.raft.raftLog;
      const ry = y.rawNode.raft.raftLog;
      const hi = Math.min(rx.committed, ry.committed);
      const lo = Math.max(rx.firstIndex(), ry.firstIndex());
      for (let i = lo; i <= hi; i++) expect(rx.term(i), `term of committed ${i}`).toBe(ry.term(i));
    }
  }
}

const action = fc.oneof(
  fc.record({ kind: fc.constant('tick' as const), n: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ kind: fc.constant('propose' as const), id: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ kind: fc.constant('isolate' as const), id: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ kind: fc.constant('heal' as const) }),
  fc.record({ kind: fc.constant('restart' as const), id: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ kind: fc.constant('drop' as const), rate: fc.constantFrom(0, 0.1, 0.3) }),
  fc.record({ kind: fc.constant('compact' as const), id: fc.integer({ min: 1, max: 5 }) }),
  fc.record({
    kind: fc.constant('conf' as const),
    changes: fc.constantFrom('r1', 'r2', 'r3', 'l2', 'l4', 'v1', 'v2', 'v3', 'v4', 'v5', 'v4 r1', 'v5 r2 l3', 'v1 v2 v3'),
  }),
);

/**
 * Proposes a membership change on the current leader if it is valid for the
 * leader's configuration (which is the one it will apply to: the leader
 * accepts one conf change at a time, only once all earlier ones are applied).
 */
function proposeConfChange(net: Network, changes: string): void {
  const lead = net.leader();
  if (lead === 0) return;
  const r = net.raft(lead);
  const ccs = confChangesFromString(changes);
  try {
    const c = new Changer(r.trk.config, r.trk.progress, r.raftLog.lastIndex(), 4, 0);
    if (r.trk.config.voters.joint) c.leaveJoint();
    else if (ccs.length > 1) c.enterJoint(true, ccs);
    else c.simple(ccs);
  } catch (e) {
    if (e instanceof InvalidConfChangeError) return;
    throw e;
  }
  const cc = r.trk.config.voters.joint
    ? { transition: ConfChangeTransition.Auto, changes: [], context: new Uint8Array(0) }
    : { transition: ConfChangeTransition.Auto, changes: ccs, context: new Uint8Array(0) };
  try {
    net.node(lead).rawNode.proposeConfChange(cc);
  } catch (e) {
    if (!(e instanceof Error && 'code' in e)) throw e;
  }
  net.deliverAll();
}

describe('randomized safety', () => {
  for (const [size, preVote] of [
    [3, false],
    [5, true],
  ] as const) {
    it(`${size} nodes, preVote=${preVote}: election safety, log matching, state machine safety`, () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 1 << 30 }), fc.array(action, { minLength: 20, maxLength: 120 }), (seed, actions) => {
          const ids = Array.from({ length: size }, (_, i) => i + 1);
          const net = new Network(ids, { seed, preVote, checkQuorum: preVote, stepDownOnRemoval: true, electionTick: 5, maxInflightMsgs: 4, maxSizePerMsg: 64 });
          net.reorder = true;
          const leaders = new Map<number, number>();
          let proposals = 0;
          const id = (x: number): number => ((x - 1) % size) + 1;
          for (const a of actions) {
            switch (a.kind) {
              case 'tick':
                for (let i = 0; i < a.n; i++) net.tickAll(1);
                break;
              case 'propose':
                try {
                  net.node(id(a.id)).rawNode.propose(Buffer.from(`p${proposals++}`));
                } catch (e) {
                  if (!(e instanceof Error && 'code' in e)) throw e;
                }
                net.deliverAll();
                break;
              case 'isolate':
                net.isolate(id(a.id));
                break;
              case 'heal':
                net.heal();
                break;
              case 'restart':
                net.restart(id(a.id));
                break;
              case 'drop':
                net.dropRate = a.rate;
                break;
              case 'compact':
                net.compact(id(a.id));
                break;
              case 'conf':
                if (size === 5) proposeConfChange(net, a.changes);
                break;
            }
            checkSafety(net, leaders);
          }
          // Liveness once the network is healthy: a current leader emerges
          // and a proposal commits everywhere (a proposal to a leader that is
          // deposed before committing it may be lost: propose again).
          net.heal();
          let done = false;
          for (let attempt = 0; attempt < 10 && !done; attempt++) {
            for (let i = 0; i < 200 && net.leader() === 0; i++) net.tickAll(1);
            const lead = net.leader();
            expect(lead).not.toBe(0);
            try {
              net.propose(lead, 'final');
            } catch (e) {
              if (!(e instanceof Error && 'code' in e)) throw e;
            }
            for (let i = 0; i < 20; i++) net.tickAll(1);
            // Every member of the leader's configuration applies it.
            const members = net.raft(net.leader() || lead).trk.ids();
            done = members.every((m) => net.node(m).applied.some((e) => Buffer.from(e.data).toString() === 'final'));
          }
          checkSafety(net, leaders);
          expect(done, 'a proposal commits on every node once the network heals').toBe(true);
        }),
        { numRuns: Number(process.env['RAFT_SAFETY_RUNS'] ?? 40) },
      );
    });
  }
});
