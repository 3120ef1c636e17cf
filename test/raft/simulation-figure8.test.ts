// Raft §5.4.2, Figure 8, driven step by step through the fault simulation's
// cluster: a leader must not commit an entry of an earlier term by counting
// replicas. With the planted 'commit-by-counting' bug the checker must report
// the lost committed entry; with the real library the same history is safe.
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/util/prng.js';
import { SimCluster } from '../../raft/rafttest/sim-cluster.js';
import { SimViolationError } from '../../raft/rafttest/sim-checker.js';
import { faultHooks, type PlantedFault } from '../../raft/rafttest/sim-faults.js';
import { MessageType, StateType, type Message } from '../../raft/types.js';

function figure8(fault: PlantedFault): SimCluster {
  const c = new SimCluster(
    [1, 2, 3],
    new Prng(8),
    { electionTick: 10, heartbeatTick: 1, preVote: false, checkQuorum: false, maxSizePerMsg: 0, maxInflightMsgs: 256 },
    { dropRate: 0, dupRate: 0, maxDelay: 0 },
    1,
    faultHooks(fault),
    true,
  );
  const raft = (id: number) => c.node(id).rawNode!.raft;
  /** Delivers messages `pass` accepts until none is left; drops the others. */
  const run = (pass: (m: Message) => boolean, stop: () => boolean = () => false) => {
    for (let i = 0; i < 1000 && !stop(); i++) {
      const ms = c.net.take(() => true);
      if (ms.length === 0) return;
      for (const m of ms) {
        if (pass(m)) c.deliver(m, true);
        else c.drop(m);
        c.check();
        if (stop()) return;
      }
    }
  };
  const between = (a: number, b: number) => (m: Message) => (m.from === a && m.to === b) || (m.from === b && m.to === a);
  /** Crashes and restarts `id` (a deposed leader), then campaigns until it leads, passing only `pass`. */
  const elect = (id: number, pass: (m: Message) => boolean) => {
    c.crash(id);
    c.restart(id);
    for (let k = 0; k < 4 && raft(id).state !== StateType.Leader; k++) {
      c.node(id).rawNode!.campaign();
      c.handleReady(id);
      c.check();
      run((m) => pass(m) && m.type !== MessageType.MsgApp, () => raft(id).state === StateType.Leader);
    }
    expect(raft(id).state).toBe(StateType.Leader);
  };
  // (a) 1 leads; everyone has index 2.
  elect(1, () => true);
  run(() => true);
  // 1 appends X at 3 and replicates it to nobody.
  c.propose(1, Buffer.from('X'));
  c.handleReady(1);
  run(() => false);
  // (b) 1 crashes; 2 leads with 3's vote and appends its empty entry at 3, replicated to nobody.
  elect(2, between(2, 3));
  run(() => false);
  // (c) 2 crashes; 1 leads with 3's vote and brings X to 3, but not its own entry at 4.
  // (A probe that 3 must reject may pass; an append of index 4 it would accept may not.)
  elect(1, between(1, 3));
  const wouldAppend4 = (m: Message) => m.type === MessageType.MsgApp && m.entries.some((e) => e.index >= 4) && m.index <= raft(3).raftLog.lastIndex();
  run((m) => between(1, 3)(m) && !wouldAppend4(m));
  expect(raft(3).raftLog.term(3)).toBe(raft(1).raftLog.term(3));
  expect(raft(3).raftLog.lastIndex()).toBe(3);
  // (d) 1 crashes; 2 leads with 3's vote (its last term is higher) and overwrites index 3 on 3.
  elect(2, between(2, 3));
  run(between(2, 3));
  return c;
}

describe('Raft §5.4.2 Figure 8 in the simulation', () => {
  it('the library never commits X by counting replicas; 2 may overwrite it', () => {
    const c = figure8('none');
    const r3 = c.node(3).rawNode!.raft;
    expect(r3.raftLog.term(3)).toBe(c.node(2).rawNode!.raft.raftLog.term(3));
    expect(Buffer.from(r3.raftLog.slice(3, 4, 1 << 20)[0]!.data).toString()).not.toBe('X');
  });

  it('the checker catches a leader that commits by counting replicas', () => {
    expect(() => figure8('commit-by-counting')).toThrow(SimViolationError);
  });
});
