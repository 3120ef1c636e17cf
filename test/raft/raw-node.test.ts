// RawNode: the Ready contract, typed errors, size limits, flow control,
// restart, check-quorum, stickiness, ReadIndex and quiescence.
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/util/prng.js';
import { isCairnError } from '../../src/util/errors.js';
import { RawNode } from '../../raft/raw-node.js';
import { MemoryStorage } from '../../raft/storage.js';
import { Network } from '../../raft/rafttest/network.js';
import { ProgressStateType } from '../../raft/tracker/progress.js';
import {
  EMPTY_CONF_STATE,
  MessageType,
  NO_LIMIT,
  ProposalDroppedError,
  ReadOnlyOption,
  StateType,
  StepLocalMsgError,
  StepPeerNotFoundError,
  newMessage,
  type Config,
  type Ready,
} from '../../raft/types.js';

function newNode(id: number, voters: number[], extra: Partial<Config> = {}): [RawNode, MemoryStorage] {
  const s = new MemoryStorage();
  s.setConfState({ ...EMPTY_CONF_STATE, voters });
  return [new RawNode({ id, electionTick: 10, heartbeatTick: 1, storage: s, maxSizePerMsg: NO_LIMIT, prng: new Prng(id), ...extra }), s];
}

/** Persists and advances a Ready the way an owner must. */
function persist(rn: RawNode, s: MemoryStorage, rd: Ready): void {
  if (rd.snapshot !== null) s.applySnapshot(rd.snapshot);
  s.append(rd.entries);
  if (rd.hardState !== null) s.setHardState(rd.hardState);
  rn.advance(rd);
}

function expectDropped(f: () => void): void {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ProposalDroppedError);
    expect(isCairnError(e) && e.code).toBe('raft.proposal_dropped');
    expect(isCairnError(e) && e.retryable).toBe(true);
    return;
  }
  throw new Error('expected ProposalDroppedError');
}

describe('RawNode Ready contract', () => {
  it('a vote is in the same Ready as the hard state that records it, with mustSync', () => {
    const [rn] = newNode(2, [1, 2, 3]);
    rn.step(newMessage({ type: MessageType.MsgVote, from: 1, to: 2, term: 1 }));
    const rd = rn.ready();
    expect(rd.hardState).toEqual({ term: 1, vote: 1, commit: 0 });
    expect(rd.mustSync).toBe(true);
    expect(rd.messages.map((m) => m.type)).toEqual([MessageType.MsgVoteResp]);
  });

  it('a commit-only change does not need a sync', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    const f = net.node(2).rawNode;
    const commit = f.raft.raftLog.committed;
    const lead = net.raft(1);
    lead.step(newMessage({ type: MessageType.MsgProp, from: 1, entries: [{ term: 0, index: 0, type: 0, data: Buffer.from('x') }] }));
    // Deliver the append, then a heartbeat carrying the new commit.
    net.deliverAll();
    expect(f.raft.raftLog.committed).toBe(commit + 1);
    f.raft.step(newMessage({ type: MessageType.MsgHeartbeat, from: 1, to: 2, term: lead.term, commit: commit + 1 }));
    const rd = f.ready();
    expect(rd.hardState).toBeNull();
    expect(rd.mustSync).toBe(false);
    f.advance(rd);
  });

  it('ready() twice without advance() is a bug', () => {
    const [rn] = newNode(1, [1]);
    rn.campaign();
    rn.ready();
    expect(() => rn.ready()).toThrow(/before advance/);
  });

  it('input between ready() and advance() goes to the next Ready without repeating entries', () => {
    const [rn, s] = newNode(1, [1]);
    rn.campaign();
    persist(rn, s, rn.ready());
    rn.propose(Buffer.from('a'));
    const rd1 = rn.ready();
    rn.propose(Buffer.from('b')); // while rd1 is being persisted
    persist(rn, s, rd1);
    expect(rd1.entries.map((e) => Buffer.from(e.data).toString())).toEqual(['a']);
    const rd2 = rn.ready();
    expect(rd2.entries.map((e) => Buffer.from(e.data).toString())).toEqual(['b']);
    expect(rd2.committedEntries.map((e) => Buffer.from(e.data).toString())).toEqual(['b']);
    persist(rn, s, rd2);
    expect(rn.hasReady()).toBe(false);
    expect(s.lastIndex()).toBe(3);
  });

  it('committed entries per Ready respect maxCommittedSizePerReady (at least one entry)', () => {
    const [rn, s] = newNode(1, [1], { maxCommittedSizePerReady: 250 });
    rn.campaign();
    persist(rn, s, rn.ready());
    rn.proposeBatch(Array.from({ length: 10 }, () => Buffer.alloc(100)));
    const sizes: number[] = [];
    while (rn.hasReady()) {
      const rd = rn.ready();
      sizes.push(rd.committedEntries.length);
      persist(rn, s, rd);
    }
    expect(sizes).toEqual([2, 2, 2, 2, 2]);
  });
});

describe('RawNode errors', () => {
  it('a proposal without a leader is dropped with a typed error', () => {
    const [rn] = newNode(1, [1, 2, 3]);
    expectDropped(() => rn.propose(Buffer.from('x')));
    expectDropped(() => rn.readIndex(Buffer.from('r')));
  });

  it('a candidate drops proposals; a leader in transfer drops proposals', () => {
    const [rn] = newNode(1, [1, 2, 3]);
    rn.campaign();
    expect(rn.raft.state).toBe(StateType.Candidate);
    expectDropped(() => rn.propose(Buffer.from('x')));
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.isolate(3);
    net.node(1).rawNode.transferLeader(3);
    expectDropped(() => net.node(1).rawNode.propose(Buffer.from('x')));
  });

  it('a follower forwards proposals to the leader, unless forwarding is disabled', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.propose(2, 'via-2');
    expect(net.node(3).applied.map((e) => Buffer.from(e.data).toString())).toEqual(['via-2']);
    const [rn] = newNode(2, [1, 2, 3], { disableProposalForwarding: true });
    rn.step(newMessage({ type: MessageType.MsgHeartbeat, from: 1, to: 2, term: 1 }));
    expect(rn.raft.lead).toBe(1);
    expectDropped(() => rn.propose(Buffer.from('x')));
  });

  it('the uncommitted size budget drops proposals (the first one always fits)', () => {
    const [rn, s] = newNode(1, [1, 2], { maxUncommittedEntriesSize: 300 });
    rn.campaign();
    persist(rn, s, rn.ready());
    rn.step(newMessage({ type: MessageType.MsgVoteResp, from: 2, to: 1, term: 1 }));
    expect(rn.raft.state).toBe(StateType.Leader);
    rn.propose(Buffer.alloc(200));
    rn.propose(Buffer.alloc(100));
    expectDropped(() => rn.propose(Buffer.alloc(100)));
  });

  it('step rejects local messages and responses from unknown peers', () => {
    const [rn] = newNode(1, [1, 2, 3]);
    expect(() => rn.step(newMessage({ type: MessageType.MsgHup }))).toThrow(StepLocalMsgError);
    expect(() => rn.step(newMessage({ type: MessageType.MsgAppResp, from: 7, to: 1, term: 1 }))).toThrow(StepPeerNotFoundError);
  });
});

describe('replication flow control', () => {
  it('MsgApp carries at most maxSizePerMsg bytes (at least one entry)', () => {
    const net = new Network([1, 2], { maxSizePerMsg: 250 });
    net.recordTrace = true;
    net.campaign(1);
    net.node(1).rawNode.proposeBatch(Array.from({ length: 10 }, () => Buffer.alloc(100)));
    net.deliverAll();
    const apps = net.trace.filter((m) => m.type === MessageType.MsgApp && m.entries.length > 0);
    for (const m of apps) expect(m.entries.reduce((a, e) => a + e.data.length, 0)).toBeLessThanOrEqual(250);
    expect(net.node(2).applied).toHaveLength(10);
  });

  it('at most maxInflightMsgs appends are in flight to a replicating follower', () => {
    const net = new Network([1, 2, 3], { maxInflightMsgs: 2 });
    net.campaign(1);
    net.ignore(MessageType.MsgAppResp);
    net.recordTrace = true;
    for (let i = 0; i < 5; i++) net.propose(1, `p${i}`);
    const to2 = net.trace.filter((m) => m.type === MessageType.MsgApp && m.to === 2);
    expect(to2).toHaveLength(2);
    const pr = net.raft(1).trk.progress.get(2);
    expect(pr?.state).toBe(ProgressStateType.Replicate);
    expect(pr?.isPaused()).toBe(true);
    net.heal();
    net.tickAll(1); // heartbeat responses unpause; the rest flows
    net.deliverAll();
    expect(net.node(2).applied).toHaveLength(5);
  });

  it('fast backtracking skips a divergent term in one round trip', () => {
    // 2 has 50 entries of a term that never committed; the leader has none of them.
    const net = new Network([1, 2, 3]);
    net.campaign(2);
    net.isolate(2);
    for (let i = 0; i < 50; i++) net.node(2).rawNode.propose(Buffer.from(`stale${i}`));
    net.deliverAll();
    net.heal();
    net.isolate(2);
    net.tickAll(40); // 1 or 3 times out and wins
    const leader = net.leader();
    expect([1, 3]).toContain(leader);
    net.heal();
    net.recordTrace = true;
    net.tick(leader, 1);
    net.deliverAll();
    const rejects = net.trace.filter((m) => m.type === MessageType.MsgAppResp && m.from === 2 && m.reject);
    expect(rejects.length).toBeLessThanOrEqual(2);
    expect(net.raft(2).raftLog.lastIndex()).toBe(net.raft(leader).raftLog.lastIndex());
  });
});

describe('restart', () => {
  it('a restarted node recovers term, vote, commit and log from storage', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.propose(1, 'a');
    net.propose(1, 'b');
    const before = net.raft(2);
    const [term, vote, commit, last] = [before.term, before.vote, before.raftLog.committed, before.raftLog.lastIndex()];
    net.restart(2);
    const after = net.raft(2);
    expect([after.term, after.vote, after.raftLog.committed, after.raftLog.lastIndex()]).toEqual([term, vote, commit, last]);
    net.propose(1, 'c');
    expect(net.node(2).applied.map((e) => Buffer.from(e.data).toString())).toEqual(['a', 'b', 'c']);
  });
});

describe('check-quorum and leader stickiness (Raft thesis §6.2, §9.6)', () => {
  it('a leader that cannot hear a quorum steps down', () => {
    const net = new Network([1, 2, 3], { checkQuorum: true, preVote: true });
    net.campaign(1);
    net.isolate(1);
    for (let i = 0; i < 2 * 10 + 1; i++) net.tick(1);
    expect(net.raft(1).state).toBe(StateType.Follower);
  });

  it('followers in contact with a leader ignore a disruptive candidate', () => {
    const net = new Network([1, 2, 3], { checkQuorum: true });
    net.campaign(1);
    const term = net.raft(1).term;
    net.campaign(3); // no pre-vote: 3 bumps its term, but nobody votes for it
    expect(net.raft(1).state).toBe(StateType.Leader);
    expect(net.raft(2).term).toBe(term);
    expect(net.raft(3).state).not.toBe(StateType.Leader);
  });

  it('with pre-vote a partitioned node does not raise its term', () => {
    const net = new Network([1, 2, 3], { preVote: true, checkQuorum: true });
    net.campaign(1);
    const term = net.raft(1).term;
    net.isolate(3);
    for (let i = 0; i < 100; i++) {
      net.tick(3);
      net.deliverAll();
    }
    expect(net.raft(3).term).toBe(term);
    net.heal();
    net.tickAll(2);
    expect(net.leader()).toBe(1);
    expect(net.raft(1).term).toBe(term);
  });
});

describe('ReadIndex (Raft §8: read-only operations; thesis §6.4)', () => {
  it('a new leader defers reads until it committed an entry of its term', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.ignore(MessageType.MsgAppResp);
    net.campaign(2); // 2 wins, but its empty entry is not committed yet
    expect(net.leader()).toBe(2);
    net.node(2).rawNode.readIndex(Buffer.from('r1'));
    net.deliverAll();
    expect(net.node(2).readStates).toEqual([]);
    net.heal();
    net.tickAll(1);
    net.deliverAll();
    expect(net.node(2).readStates.map((r) => [r.index, Buffer.from(r.requestCtx).toString()])).toEqual([[net.raft(2).raftLog.committed, 'r1']]);
  });

  it('lease-based reads answer without a heartbeat round', () => {
    const net = new Network([1, 2, 3], { readOnlyOption: ReadOnlyOption.LeaseBased, checkQuorum: true });
    net.campaign(1);
    net.isolate(1);
    net.node(1).rawNode.readIndex(Buffer.from('r'));
    net.deliverAll();
    expect(net.node(1).readStates.map((r) => r.index)).toEqual([net.raft(1).raftLog.committed]);
  });

  it('a leader that cannot reach a quorum does not answer a safe read', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.isolate(1);
    net.node(1).rawNode.readIndex(Buffer.from('r'));
    net.tickAll(3);
    expect(net.node(1).readStates).toEqual([]);
  });
});

describe('quiescence', () => {
  it('status().quiescable once every member has everything and nothing is pending', () => {
    const net = new Network([1, 2, 3]);
    net.campaign(1);
    net.propose(1, 'x');
    expect(net.node(1).rawNode.status().quiescable).toBe(true);
    net.isolate(3);
    net.propose(1, 'y');
    expect(net.node(1).rawNode.status().quiescable).toBe(false);
    expect(net.node(2).rawNode.status().quiescable).toBe(false); // not the leader
    net.heal();
    net.tickAll(1);
    expect(net.node(1).rawNode.status().quiescable).toBe(true);
  });
});
