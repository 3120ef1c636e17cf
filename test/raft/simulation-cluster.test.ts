// The fault simulation's durability model (raft/rafttest/sim-cluster.ts),
// step by step: a crash loses exactly what no handled Ready persisted; a
// crash between the write and the sends keeps the write; the state machine
// rolls back to its synced point and Raft re-delivers the same entries; a new
// member catches up from a snapshot of a compacted log.
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/util/prng.js';
import { SimCluster } from '../../raft/rafttest/sim-cluster.js';
import { ConfChangeTransition, ConfChangeType, EntryType, StateType, type Entry } from '../../raft/types.js';

function cluster(syncApplyRate: number): SimCluster {
  return new SimCluster(
    [1, 2, 3],
    new Prng(5),
    { electionTick: 10, heartbeatTick: 1, preVote: false, checkQuorum: false, maxSizePerMsg: 1 << 20, maxInflightMsgs: 256 },
    { dropRate: 0, dupRate: 0, maxDelay: 0 },
    syncApplyRate,
  );
}

/** Delivers everything (handling Readies) until the network is empty, checking after each message. */
function settle(c: SimCluster): void {
  for (let i = 0; i < 1000 && c.net.size > 0; i++) {
    for (const m of c.net.takeAllDue()) {
      c.deliver(m, true);
      c.check();
    }
  }
  expect(c.net.size).toBe(0);
}

function elect(c: SimCluster, id: number): void {
  c.node(id).rawNode!.campaign();
  c.handleReady(id);
  settle(c);
  expect(c.node(id).rawNode!.raft.state).toBe(StateType.Leader);
}

/** The proposals a node's state machine applied. */
const data = (n: { sm: Entry[] }): string[] => n.sm.filter((e) => e.type === EntryType.Normal && e.data.length > 0).map((e) => Buffer.from(e.data).toString());

describe('SimCluster durability model', () => {
  it('a crash before the Ready is handled loses the vote and the appended entries', () => {
    const c = cluster(1);
    elect(c, 1);
    const n2 = c.node(2);
    const before = n2.storage.lastIndex();
    // 2 takes a proposal from the leader but crashes before persisting it.
    c.propose(1, Buffer.from('a'));
    c.handleReady(1);
    for (const m of c.net.take((m) => m.to === 2)) c.deliver(m, false);
    expect(n2.rawNode!.raft.raftLog.lastIndex()).toBe(before + 1);
    c.crash(2);
    expect(n2.storage.lastIndex()).toBe(before);
    c.restart(2);
    expect(n2.rawNode!.raft.raftLog.lastIndex()).toBe(before);
    // A vote granted in memory only is forgotten too.
    c.node(3).rawNode!.campaign();
    c.handleReady(3);
    for (const m of c.net.take((m) => m.to === 2)) c.deliver(m, false);
    expect(n2.rawNode!.raft.vote).toBe(3);
    c.crash(2);
    expect(n2.storage.hardState.vote).not.toBe(3);
  });

  it('a crash between the write and the sends keeps the write and loses the messages', () => {
    const c = cluster(1);
    elect(c, 1);
    c.propose(1, Buffer.from('b'));
    c.handleReady(1);
    const n2 = c.node(2);
    for (const m of c.net.take((m) => m.to === 2)) c.deliver(m, false);
    c.handleReady(2, { crashAfterPersist: true });
    expect(n2.rawNode).toBeNull();
    expect(c.net.take((m) => m.from === 2)).toEqual([]); // its acknowledgement never left
    expect(n2.storage.lastIndex()).toBe(c.node(1).rawNode!.raft.raftLog.lastIndex());
  });

  it('the state machine rolls back to its synced point and re-applies the same entries', () => {
    const c = cluster(0); // never synced: a crash loses every applied entry
    elect(c, 1);
    for (const d of ['x', 'y', 'z']) c.propose(1, Buffer.from(d));
    c.handleReady(1);
    settle(c);
    c.tick(1); // a heartbeat carries the commit index to the followers
    c.handleReady(1);
    settle(c);
    const n3 = c.node(3);
    expect(data(n3)).toEqual(['x', 'y', 'z']);
    c.crash(3);
    expect(data(n3)).toEqual([]);
    c.restart(3);
    c.handleReady(3); // Raft re-delivers the committed entries from the durable commit index
    c.check();
    expect(data(n3)).toEqual(['x', 'y', 'z']);
  });

  it('a new member catches up from a snapshot of a compacted log, and the checker follows it', () => {
    const c = cluster(1);
    elect(c, 1);
    for (const d of ['p', 'q']) c.propose(1, Buffer.from(d));
    c.handleReady(1);
    settle(c);
    for (const id of [1, 2, 3]) c.compact(id);
    expect(c.node(1).storage.firstIndex()).toBeGreaterThan(2);
    const id = c.addEmptyNode();
    c.node(1).rawNode!.proposeConfChange({ transition: ConfChangeTransition.Auto, changes: [{ type: ConfChangeType.AddLearnerNode, nodeId: id }], context: new Uint8Array(0) });
    c.handleReady(1);
    settle(c);
    for (let t = 0; t < 5; t++) {
      c.tick(1);
      c.handleReady(1);
      settle(c);
    }
    expect(c.snapshotsInstalled).toBe(1);
    expect(data(c.node(id))).toEqual(['p', 'q']);
    expect(c.node(id).rawNode!.raft.raftLog.committed).toBe(c.node(1).rawNode!.raft.raftLog.committed);
  });
});
