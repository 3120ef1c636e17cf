// Behaviour tests of the Raft state machine beyond the paper's core
// (etcd/raft raft_test.go's scenarios): dueling candidates, check-quorum
// corner cases, pre-vote with split votes, leader transfer, configuration
// changes while leading, snapshots, proposals in partial clusters.
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/util/prng.js';
import { Network } from '../../raft/rafttest/network.js';
import { Raft } from '../../raft/raft.js';
import { MemoryStorage } from '../../raft/storage.js';
import { confChangesFromString, encodeConfChange } from '../../raft/conf-change-codec.js';
import { ProgressStateType } from '../../raft/tracker/progress.js';
import {
  ConfChangeTransition,
  EMPTY_CONF_STATE,
  EntryType,
  MessageType,
  NONE,
  NO_LIMIT,
  StateType,
  newMessage,
  type ConfChangeV2,
  type Entry,
  type Message,
} from '../../raft/types.js';

function cc(s: string, transition = ConfChangeTransition.Auto): ConfChangeV2 {
  return { transition, changes: confChangesFromString(s), context: new Uint8Array(0) };
}

function applied(net: Network, id: number): string[] {
  return net.node(id).applied.map((e) => Buffer.from(e.data).toString());
}

function newRaft(id: number, voters: number[], ents: Entry[] = []): [Raft, MemoryStorage] {
  const s = new MemoryStorage();
  s.setConfState({ ...EMPTY_CONF_STATE, voters });
  s.append(ents);
  return [new Raft({ id, electionTick: 10, heartbeatTick: 1, storage: s, maxSizePerMsg: NO_LIMIT, prng: new Prng(id) }), s];
}

function readMessages(r: Raft): Message[] {
  const m = r.msgs;
  r.msgs = [];
  return m;
}

describe('elections (Raft §5.2)', () => {
  it('a single voter elects itself and commits alone', () => {
    const net = new Network([1]);
    net.campaign(1);
    expect(net.raft(1).state).toBe(StateType.Leader);
    net.propose(1, 'x');
    expect(applied(net, 1)).toEqual(['x']);
  });

  it('dueling candidates: the one that cannot win falls back, a later election succeeds', () => {
    const net = new Network([1, 2, 3]);
    net.cut(1, 3);
    net.campaign(1);
    net.campaign(3);
    // 1 won with 2's vote; 3 got a rejection from 2 and no answer from 1.
    expect(net.raft(1).state).toBe(StateType.Leader);
    expect(net.raft(3).state).toBe(StateType.Candidate);
    net.heal();
    // 3's log is behind: its next campaign (higher term) deposes 1 but 3 cannot win.
    net.campaign(3);
    expect(net.raft(3).state).toBe(StateType.Follower);
    expect(net.raft(1).state).toBe(StateType.Follower);
    expect(net.raft(1).term).toBe(net.raft(3).term);
    net.campaign(1);
    expect(net.leader()).toBe(1);
  });

  it('a candidate concedes to a leader that wins the term, and receives its log', () => {
    const net = new Network([1, 2, 3]);
    net.isolate(1);
    net.campaign(1);
    net.campaign(3);
    net.heal();
    net.tickAll(1); // 3's heartbeat reaches 1
    net.propose(3, 'force follower');
    expect(net.raft(1).state).toBe(StateType.Follower);
    expect(net.raft(1).term).toBe(1);
    expect(applied(net, 1)).toEqual(['force follower']);
  });

  it('a node ignores messages of older terms', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.campaign(2);
    net.campaign(1); // term 3, leader 1
    const last = net.raft(1).raftLog.lastIndex();
    // An append from the term-2 leader is ignored.
    net.send(newMessage({ type: MessageType.MsgApp, from: 2, to: 1, term: 2, index: last, logTerm: 3, entries: [{ term: 2, index: last + 1, type: EntryType.Normal, data: Buffer.from('stale') }] }));
    expect(net.raft(1).raftLog.lastIndex()).toBe(last);
    net.propose(1, 'somedata');
    expect(applied(net, 2)).toEqual(['somedata']);
  });

  it('a new leader overwrites a deposed leader\'s uncommitted entries (Raft §5.3)', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.isolate(1);
    net.propose(1, 'stale'); // appended by 1 alone, never committed
    net.campaign(2);
    net.propose(2, 'new');
    net.heal();
    net.tickAll(1); // 2's heartbeat deposes 1 and repairs its log
    const logs = [1, 2, 3].map((id) => net.raft(id).raftLog.allEntries().map((e) => `${e.term}/${e.index}`));
    expect(logs[0]).toEqual(logs[1]);
    expect(logs[2]).toEqual(logs[1]);
    expect(applied(net, 1)).toEqual(['new']);
  });
});

describe('check-quorum and stickiness (Raft thesis §6.2, §9.6)', () => {
  it('a leader superseded only after its followers stop hearing from it', () => {
    const net = new Network([1, 2, 3], { checkQuorum: true });
    net.campaign(1);
    net.isolate(1);
    // 3 cannot be elected while 2 still considers 1 alive (leader lease).
    net.campaign(3);
    expect(net.raft(3).state).toBe(StateType.Candidate);
    // Once 2 stopped hearing from 1 for an election timeout, 3 wins.
    for (let i = 0; i < 10; i++) net.tick(2);
    net.campaign(3);
    expect(net.raft(3).state).toBe(StateType.Leader);
  });

  it('a candidate stuck at a higher term is freed: the leader learns of the term and steps down', () => {
    const net = new Network([1, 2, 3], { checkQuorum: true });
    net.campaign(1);
    net.isolate(1);
    net.campaign(3);
    net.campaign(3);
    expect(net.raft(3).state).toBe(StateType.Candidate);
    expect(net.raft(3).term).toBe(net.raft(2).term + 2);
    net.heal();
    // 1's heartbeat to 3 draws a response with 3's higher term.
    net.tickAll(1);
    expect(net.raft(1).state).toBe(StateType.Follower);
    expect(net.raft(1).term).toBe(net.raft(3).term);
    for (let i = 0; i < 25 && net.leader() === 0; i++) net.tickAll(1);
    expect(net.leader()).not.toBe(0);
  });

  it('a learner never campaigns even when the leader is gone', () => {
    const net = new Network([1, 2]);
    net.campaign(1);
    net.node(1).rawNode.proposeConfChange(cc('l2'));
    net.deliverAll();
    expect(net.raft(2).isLearner).toBe(true);
    net.isolate(1);
    for (let i = 0; i < 50; i++) net.tick(2);
    expect(net.raft(2).state).toBe(StateType.Follower);
  });
});

describe('pre-vote (Raft thesis §9.6)', () => {
  it('a node with a smaller term can still complete an election', () => {
    const net = new Network([1, 2, 3], { preVote: true });
    net.campaign(1);
    // 2 is cut from 1; 3 cut from 1 and 2's messages are ignored by 3 (only 2 and 3 talk).
    net.cut(1, 3);
    net.cut(2, 3);
    net.campaign(3); // pre-vote fails
    expect(net.raft(3).state).toBe(StateType.PreCandidate);
    net.campaign(3);
    net.heal();
    net.cut(1, 2);
    // 2 campaigns: 3's pre-vote grants; 2 becomes leader.
    net.campaign(2);
    expect(net.raft(2).state).toBe(StateType.Leader);
    expect(net.raft(2).term).toBe(net.raft(1).term + 1);
  });

  it('split pre-votes resolve when one candidate times out first', () => {
    const net = new Network([1, 2, 3], { preVote: true });
    net.campaign(1);
    net.isolate(1);
    // 2 and 3 both start pre-votes; they grant each other's (no leader in
    // sight), both advance to candidate of the same term and split.
    net.node(2).rawNode.campaign();
    net.node(3).rawNode.campaign();
    net.deliverAll();
    for (let i = 0; i < 40 && net.leader() === 0; i++) net.tickAll(1);
    const l = net.leader();
    expect([2, 3]).toContain(l);
  });
});

/** A group led by 1 that started a transfer to 3, which it cannot reach. */
function transferToUnreachable3(): Network {
  const net = new Network([1, 2, 3]);
  net.campaign(1);
  net.isolate(3);
  net.node(1).rawNode.transferLeader(3);
  net.deliverAll();
  return net;
}

describe('leader transfer (Raft thesis §3.10)', () => {
  it('to an up-to-date follower: immediate', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.node(1).rawNode.transferLeader(2);
    net.deliverAll();
    expect(net.leader()).toBe(2);
    expect(net.raft(1).state).toBe(StateType.Follower);
  });

  it('to a slow follower: after catching it up', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    net.propose(1, 'a');
    net.propose(1, 'b');
    net.heal();
    net.node(1).rawNode.transferLeader(3);
    net.deliverAll();
    expect(net.leader()).toBe(3);
    expect(applied(net, 3)).toEqual(['a', 'b']);
  });

  it('a follower forwards the request to its leader', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.node(2).rawNode.transferLeader(2);
    net.deliverAll();
    expect(net.leader()).toBe(2);
  });

  it('to itself or to a non-member is ignored', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.node(1).rawNode.transferLeader(1);
    net.deliverAll();
    expect(net.raft(1).leadTransferee).toBe(NONE);
    net.send(newMessage({ type: MessageType.MsgTransferLeader, from: 9, to: 1 }));
    expect(net.raft(1).leadTransferee).toBe(NONE);
    expect(net.leader()).toBe(1);
  });

  it('is abandoned after an election timeout if the target does not answer', () => {
    const net = transferToUnreachable3();
    expect(net.raft(1).leadTransferee).toBe(3);
    for (let i = 0; i < 10; i++) net.tick(1);
    expect(net.raft(1).leadTransferee).toBe(NONE);
    net.propose(1, 'after');
    expect(applied(net, 2)).toEqual(['after']);
  });

  it('a second request for another target replaces the first', () => {
    const net = transferToUnreachable3();
    net.node(1).rawNode.transferLeader(2);
    net.deliverAll();
    expect(net.leader()).toBe(2);
  });

  it('to a pre-candidate target: it campaigns for the transfer (the drain of a stopping leaseholder)', () => {
    // The target's election timeout ran out while it could not hear the leader (a restarted replica of a
    // quiesced range): a pre-candidate at the leader's term, whose pre-votes the others refuse while they
    // hear from their leader (checkQuorum stickiness). MsgTimeoutNow of that term must still start its election;
    // ignored, the transfer is abandoned an election timeout later with the old leader still leading.
    const net = new Network([1, 2, 3], { preVote: true, checkQuorum: true });
    net.campaign(1);
    net.isolate(3);
    for (let i = 0; i < 20 && net.raft(3).state !== StateType.PreCandidate; i++) net.tick(3);
    expect(net.raft(3).state).toBe(StateType.PreCandidate);
    const term = net.raft(1).term;
    expect(net.raft(3).term).toBe(term);
    net.heal();
    net.node(1).rawNode.transferLeader(3);
    net.deliverAll();
    expect(net.leader()).toBe(3);
    expect(net.raft(3).term).toBe(term + 1);
    expect(net.raft(1).state).toBe(StateType.Follower);
    net.propose(3, 'after');
    expect(applied(net, 1)).toEqual(['after']);
  });

  it('is abandoned when the target is removed', () => {
    const net = transferToUnreachable3();
    net.raft(1).applyConfChange(cc('r3'));
    expect(net.raft(1).leadTransferee).toBe(NONE);
  });
});

describe('configuration changes while leading (Raft §6)', () => {
  it('a new leader accepts no conf change until the entries it inherited are applied', () => {
    // The inherited entry might be a conf change: pendingConfIndex covers it.
    const [r] = newRaft(1, [1, 2], [{ term: 1, index: 1, type: EntryType.Normal, data: new Uint8Array(0) }]);
    r.becomeCandidate();
    r.becomeLeader();
    expect(r.pendingConfIndex).toBe(1);
    readMessages(r);
    r.step(newMessage({ type: MessageType.MsgProp, from: 1, entries: [{ term: 0, index: 0, type: EntryType.ConfChange, data: encodeConfChange(cc('v3')) }] }));
    // Replaced by an empty normal entry.
    const last = r.raftLog.allEntries().at(-1) as Entry;
    expect(last.type).toBe(EntryType.Normal);
    expect(last.data.length).toBe(0);
    // With an empty log there is nothing to wait for.
    const [r2] = newRaft(1, [1, 2]);
    r2.becomeCandidate();
    r2.becomeLeader();
    expect(r2.pendingConfIndex).toBe(0);
  });

  it('removing a node lets entries it blocked commit (quorum shrinks)', () => {
    const net = new Network([1, 2]);
    net.campaign(1);
    net.isolate(2);
    net.propose(1, 'blocked');
    expect(applied(net, 1)).toEqual([]);
    net.raft(1).applyConfChange(cc('r2'));
    net.deliverAll();
    expect(applied(net, 1)).toEqual(['blocked']);
  });

  it('adding a node makes it a member with fresh progress; removing forgets it', () => {
    const [r] = newRaft(1, [1]);
    r.applyConfChange(cc('v2'));
    expect(r.trk.voterNodes()).toEqual([1, 2]);
    r.applyConfChange(cc('l3'));
    expect(r.trk.learnerNodes()).toEqual([3]);
    r.applyConfChange(cc('r2'));
    expect(r.trk.voterNodes()).toEqual([1]);
    expect(r.trk.progress.has(2)).toBe(false);
  });

  it('a replica not in the configuration is not promotable', () => {
    const [r] = newRaft(1, [2, 3]);
    expect(r.promotable()).toBe(false);
    r.step(newMessage({ type: MessageType.MsgHup, from: 1 }));
    expect(r.state).toBe(StateType.Follower);
  });

  it('a member cannot campaign while a committed conf change is unapplied', () => {
    const ents: Entry[] = [{ term: 1, index: 1, type: EntryType.ConfChange, data: encodeConfChange(cc('v3')) }];
    const [r, s] = newRaft(1, [1, 2], ents);
    void s;
    r.raftLog.commitTo(1);
    r.step(newMessage({ type: MessageType.MsgHup, from: 1 }));
    expect(r.state).toBe(StateType.Follower);
  });
});

describe('snapshots (Raft §7)', () => {
  function snapshotOf(index: number, term: number, voters: number[]) {
    return { data: Buffer.from('state'), metadata: { index, term, confState: { ...EMPTY_CONF_STATE, voters } } };
  }

  it('a follower restores a snapshot: log, commit and configuration', () => {
    const [r] = newRaft(1, [1, 2]);
    expect(r.restore(snapshotOf(11, 11, [1, 2, 3]))).toBe(true);
    expect(r.raftLog.lastIndex()).toBe(11);
    expect(r.raftLog.term(11)).toBe(11);
    expect(r.raftLog.committed).toBe(11);
    expect(r.trk.voterNodes()).toEqual([1, 2, 3]);
    // The same snapshot again is stale.
    expect(r.restore(snapshotOf(11, 11, [1, 2, 3]))).toBe(false);
  });

  it('a snapshot the log already contains only moves the commit index', () => {
    const ents: Entry[] = [1, 2, 3].map((i) => ({ term: 1, index: i, type: EntryType.Normal, data: new Uint8Array(0) }));
    const [r] = newRaft(1, [1, 2], ents);
    r.raftLog.commitTo(1);
    expect(r.restore(snapshotOf(2, 1, [1, 2]))).toBe(false);
    expect(r.raftLog.committed).toBe(2);
    expect(r.raftLog.lastIndex()).toBe(3);
  });

  it('a snapshot that does not include the replica is refused', () => {
    const [r] = newRaft(1, [1, 2]);
    expect(r.restore(snapshotOf(5, 1, [2, 3]))).toBe(false);
    expect(r.raftLog.lastIndex()).toBe(0);
  });

  it('a slow follower is restored from a snapshot and then replicates', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    for (let i = 0; i < 20; i++) net.propose(1, `e${i}`);
    net.compact(1);
    net.heal();
    net.tickAll(1);
    net.propose(1, 'after');
    expect(applied(net, 3).at(-1)).toBe('after');
    expect(applied(net, 3)).toHaveLength(21);
    expect(net.raft(1).trk.progress.get(3)?.state).toBe(ProgressStateType.Replicate);
  });

  it('the leader does not send a snapshot to an inactive follower', () => {
    const net = new Network([1, 2, 3], { checkQuorum: true });
    net.campaign(1);
    net.isolate(3);
    for (let i = 0; i < 5; i++) net.propose(1, `e${i}`);
    net.compact(1);
    // A check-quorum round marks 3 inactive.
    for (let i = 0; i < 10; i++) net.tick(1);
    net.deliverAll();
    const lead = net.raft(1);
    const pr = lead.trk.progress.get(3);
    expect(pr?.recentActive).toBe(false);
    lead.sendAppend(3);
    expect(lead.msgs.filter((m) => m.type === MessageType.MsgSnap)).toEqual([]);
  });
});

// Config.skipHeartbeatsAfterAppends: Cairn's departure from etcd/raft (raft.ts header).
describe('heartbeats skipped after appends', () => {
  function beatsAfterTick(skip: boolean): number[] {
    const net = new Network([1, 2, 3], { skipHeartbeatsAfterAppends: skip });
    net.campaign(1);
    net.propose(1, 'x'); // appends to 2 and 3 since the last heartbeat round
    const r = net.raft(1);
    const beats: number[] = [];
    for (let i = 0; i < 2; i++) {
      net.tick(1);
      beats.push(r.msgs.filter((m) => m.type === MessageType.MsgHeartbeat).length);
      net.deliverAll();
    }
    return beats;
  }

  it('a round leaves out the followers sent an append since the previous one; the next round beats again', () => {
    expect(beatsAfterTick(false)).toEqual([2, 2]);
    expect(beatsAfterTick(true)).toEqual([0, 2]);
  });

  it('a follower whose last appends were lost still catches up: the next heartbeat response probes it', () => {
    for (const skip of [false, true]) {
      const net = new Network([1, 2, 3], { skipHeartbeatsAfterAppends: skip });
      net.campaign(1);
      net.propose(1, 'x');
      net.cut(1, 3);
      net.propose(1, 'y'); // committed by 1 and 2; its MsgApp and the commit to 3 are lost
      net.heal();
      expect(applied(net, 3)).toEqual(['x']);
      net.tickAll(1);
      // Without the option the heartbeat response probes at once; with it, that round skipped 3 (it was sent an append).
      expect(applied(net, 3)).toEqual(skip ? ['x'] : ['x', 'y']);
      net.tickAll(1);
      expect(applied(net, 3)).toEqual(['x', 'y']);
    }
  });
});

describe('transport feedback', () => {
  function leaderSendingSnapshotTo3(): Network {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    for (let i = 0; i < 3; i++) net.propose(1, `e${i}`);
    net.compact(1);
    net.heal();
    net.ignore(MessageType.MsgSnap); // the snapshot is lost (and reported failed)
    net.tickAll(1);
    return net;
  }

  it('a failed snapshot sends the follower back to probing, paused until the next heartbeat response', () => {
    const net = leaderSendingSnapshotTo3();
    const pr = net.raft(1).trk.progress.get(3);
    expect(pr?.state).toBe(ProgressStateType.Probe);
    expect(pr?.pendingSnapshot).toBe(0);
    net.heal();
    net.tickAll(1); // heartbeat response → probe → snapshot again, delivered this time
    net.propose(1, 'after');
    expect(applied(net, 3).at(-1)).toBe('after');
  });

  it('an unreachable follower in replicate state falls back to probing', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.propose(1, 'x');
    const pr = net.raft(1).trk.progress.get(2);
    expect(pr?.state).toBe(ProgressStateType.Replicate);
    net.node(1).rawNode.reportUnreachable(2);
    expect(pr?.state).toBe(ProgressStateType.Probe);
    net.node(1).rawNode.reportUnreachable(9); // unknown peers are ignored
  });
});

describe('proposals in partial clusters (Raft §5.3)', () => {
  it('commit with a majority, not without', () => {
    const cases: [voters: number, down: number[], commits: boolean][] = [
      [3, [], true],
      [3, [3], true],
      [3, [2, 3], false],
      [5, [4, 5], true],
      [5, [3, 4, 5], false],
    ];
    for (const [n, down, commits] of cases) {
      const net = new Network(Array.from({ length: n }, (_, i) => i + 1));
      net.campaign(1);
      for (const d of down) net.isolate(d);
      net.propose(1, 'somedata');
      expect(applied(net, 1).length === 1, `${n} voters, down ${down}`).toBe(commits);
    }
  });
});
