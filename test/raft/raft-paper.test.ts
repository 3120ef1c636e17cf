// Table tests of the Raft state machine, each citing the section of the
// Raft paper (Ongaro & Ousterhout, USENIX ATC 2014) it checks — the
// structure of etcd/raft's raft_paper_test.go, written for this library.
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/util/prng.js';
import { Raft } from '../../raft/raft.js';
import { MemoryStorage } from '../../raft/storage.js';
import {
  EMPTY_CONF_STATE,
  EntryType,
  MessageType,
  NONE,
  NO_LIMIT,
  ProposalDroppedError,
  StateType,
  newMessage,
  type Config,
  type Entry,
  type Message,
} from '../../raft/types.js';

const data = (s: string): Uint8Array => Buffer.from(s);

function ent(term: number, index: number, d = ''): Entry {
  return { term, index, type: EntryType.Normal, data: data(d) };
}

function newStorage(voters: number[], ents: Entry[] = []): MemoryStorage {
  const s = new MemoryStorage();
  s.setConfState({ ...EMPTY_CONF_STATE, voters });
  s.append(ents);
  return s;
}

function newTestRaft(id: number, election: number, heartbeat: number, storage: MemoryStorage, extra: Partial<Config> = {}): Raft {
  return new Raft({ id, electionTick: election, heartbeatTick: heartbeat, storage, maxSizePerMsg: NO_LIMIT, prng: new Prng(id), ...extra });
}

function readMessages(r: Raft): Message[] {
  const m = r.msgs;
  r.msgs = [];
  return m;
}

/** Field subset for comparing messages. */
function brief(m: Message): Record<string, unknown> {
  return {
    type: m.type,
    from: m.from,
    to: m.to,
    term: m.term,
    logTerm: m.logTerm,
    index: m.index,
    commit: m.commit,
    reject: m.reject,
    rejectHint: m.rejectHint,
    entries: m.entries.map((e) => `${e.term}/${e.index}:${Buffer.from(e.data).toString()}`),
  };
}

function msg(fields: Partial<Message> & { type: MessageType }): Message {
  return newMessage(fields);
}

function propose(r: Raft, d: string): void {
  r.step(msg({ type: MessageType.MsgProp, from: r.id, entries: [ent(0, 0, d)] }));
}

/** A follower's successful reply to a MsgApp. */
function acceptAndReply(m: Message): Message {
  expect(m.type).toBe(MessageType.MsgApp);
  return msg({ type: MessageType.MsgAppResp, from: m.to, to: m.from, term: m.term, index: m.index + m.entries.length });
}

/** Commits the new leader's empty entry by acking it from every follower, then clears state. */
function commitNoopEntry(r: Raft, s: MemoryStorage): void {
  expect(r.state).toBe(StateType.Leader);
  r.bcastAppend();
  for (const m of readMessages(r)) r.step(acceptAndReply(m));
  readMessages(r);
  s.append(r.raftLog.nextUnstableEnts());
  r.raftLog.acceptUnstable();
  r.raftLog.appliedTo(r.raftLog.committed);
  r.raftLog.stableTo(r.raftLog.lastIndex(), r.raftLog.lastTerm());
}

function entStrings(ents: readonly Entry[]): string[] {
  return ents.map((e) => `${e.term}/${e.index}:${Buffer.from(e.data).toString()}`);
}

/** Routes messages among the given rafts until quiet; messages to others are dropped. */
function route(rafts: Map<number, Raft>): void {
  for (let round = 0; round < 1000; round++) {
    const msgs: Message[] = [];
    for (const r of rafts.values()) msgs.push(...readMessages(r));
    if (msgs.length === 0) return;
    for (const m of msgs) {
      const to = rafts.get(m.to);
      if (to === undefined) continue;
      try {
        to.step(m);
      } catch (e) {
        if (!(e instanceof ProposalDroppedError)) throw e;
      }
    }
  }
  throw new Error('route: no quiescence');
}

describe('Raft §5.1: terms', () => {
  it('every role steps down to follower on a message with a higher term', () => {
    for (const role of [StateType.Follower, StateType.Candidate, StateType.Leader]) {
      const r = newTestRaft(1, 10, 1, newStorage([1, 2, 3]));
      if (role === StateType.Follower) r.becomeFollower(1, 2);
      else if (role === StateType.Candidate) r.becomeCandidate();
      else {
        r.becomeCandidate();
        r.becomeLeader();
      }
      r.step(msg({ type: MessageType.MsgApp, from: 2, to: 1, term: 2 }));
      expect(r.term).toBe(2);
      expect(r.state).toBe(StateType.Follower);
    }
  });

  it('a message with a stale term is ignored', () => {
    const r = newTestRaft(1, 10, 1, newStorage([1, 2, 3]));
    r.becomeFollower(2, NONE);
    r.step(msg({ type: MessageType.MsgApp, from: 2, to: 1, term: 1, entries: [ent(1, 1, 'x')] }));
    expect(readMessages(r)).toEqual([]);
    expect(r.term).toBe(2);
    expect(r.raftLog.lastIndex()).toBe(0);
  });
});

describe('Raft §5.2: leader election', () => {
  it('starts as a follower', () => {
    expect(newTestRaft(1, 10, 1, newStorage([1, 2, 3])).state).toBe(StateType.Follower);
  });

  it('a leader sends heartbeats every heartbeat timeout', () => {
    const r = newTestRaft(1, 10, 1, newStorage([1, 2, 3]));
    r.becomeCandidate();
    r.becomeLeader();
    readMessages(r);
    r.tick();
    expect(readMessages(r).map(brief)).toEqual([
      brief(msg({ type: MessageType.MsgHeartbeat, from: 1, to: 2, term: 1 })),
      brief(msg({ type: MessageType.MsgHeartbeat, from: 1, to: 3, term: 1 })),
    ]);
  });

  it('followers and candidates start an election after the election timeout', () => {
    for (const role of [StateType.Follower, StateType.Candidate]) {
      const r = newTestRaft(1, 10, 1, newStorage([1, 2, 3]));
      if (role === StateType.Follower) r.becomeFollower(1, 2);
      else r.becomeCandidate();
      // The randomized timeout is in [10, 20): 19 ticks fire it exactly once.
      for (let i = 0; i < 2 * 10 - 1; i++) r.tick();
      expect(r.term).toBe(2);
      expect(r.state).toBe(StateType.Candidate);
      expect(r.vote).toBe(1);
      expect(readMessages(r).map(brief)).toEqual([
        brief(msg({ type: MessageType.MsgVote, from: 1, to: 2, term: 2 })),
        brief(msg({ type: MessageType.MsgVote, from: 1, to: 3, term: 2 })),
      ]);
    }
  });

  it('a candidate wins with a majority, loses with a majority of rejections, else waits', () => {
    const T = true;
    const F = false;
    const cases: [number, Record<number, boolean>, StateType][] = [
      [1, {}, StateType.Leader],
      [3, { 2: T, 3: T }, StateType.Leader],
      [3, { 2: T }, StateType.Leader],
      [5, { 2: T, 3: T, 4: T, 5: T }, StateType.Leader],
      [5, { 2: T, 3: T, 4: T }, StateType.Leader],
      [5, { 2: T, 3: T }, StateType.Leader],
      [3, { 2: F, 3: F }, StateType.Follower],
      [5, { 2: F, 3: F, 4: F, 5: F }, StateType.Follower],
      [5, { 2: T, 3: F, 4: F, 5: F }, StateType.Follower],
      [3, {}, StateType.Candidate],
      [5, { 2: T }, StateType.Candidate],
      [5, { 2: F, 3: F }, StateType.Candidate],
      [5, {}, StateType.Candidate],
    ];
    for (const [size, votes, want] of cases) {
      const r = newTestRaft(1, 10, 1, newStorage(Array.from({ length: size }, (_, i) => i + 1)));
      r.step(msg({ type: MessageType.MsgHup, from: 1, to: 1 }));
      for (const [id, v] of Object.entries(votes)) {
        r.step(msg({ type: MessageType.MsgVoteResp, from: Number(id), to: 1, term: r.term, reject: !v }));
      }
      expect(r.state, `size ${size} votes ${JSON.stringify(votes)}`).toBe(want);
      expect(r.term).toBe(1);
    }
  });

  it('a follower votes for at most one candidate per term, first come first served', () => {
    const cases: [vote: number, nvote: number, wreject: boolean][] = [
      [NONE, 2, false],
      [NONE, 3, false],
      [2, 2, false],
      [3, 3, false],
      [2, 3, true],
      [3, 2, true],
    ];
    for (const [vote, nvote, wreject] of cases) {
      const r = newTestRaft(1, 10, 1, newStorage([1, 2, 3]));
      r.term = 1;
      r.vote = vote;
      r.step(msg({ type: MessageType.MsgVote, from: nvote, to: 1, term: 1 }));
      expect(readMessages(r).map(brief)).toEqual([brief(msg({ type: MessageType.MsgVoteResp, from: 1, to: nvote, term: 1, reject: wreject }))]);
    }
  });

  it('a candidate that hears from a leader of its term (or newer) becomes follower', () => {
    for (const term of [1, 2]) {
      const r = newTestRaft(1, 10, 1, newStorage([1, 2, 3]));
      r.step(msg({ type: MessageType.MsgHup, from: 1, to: 1 }));
      expect(r.state).toBe(StateType.Candidate);
      r.step(msg({ type: MessageType.MsgApp, from: 2, to: 1, term }));
      expect(r.state).toBe(StateType.Follower);
      expect(r.term).toBe(term);
      expect(r.lead).toBe(2);
    }
  });

  it('election timeouts are randomized in [et, 2et)', () => {
    const r = newTestRaft(1, 10, 1, newStorage([1, 2, 3]));
    const seen = new Set<number>();
    for (let round = 0; round < 200; round++) {
      r.becomeFollower(r.term + 1, NONE);
      let ticks = 0;
      while (r.state === StateType.Follower) {
        r.tick();
        ticks++;
      }
      expect(ticks).toBeGreaterThanOrEqual(10);
      expect(ticks).toBeLessThan(20);
      seen.add(ticks);
    }
    expect(seen.size).toBeGreaterThan(5);
  });

  it('randomized timeouts rarely collide (so split votes are rare)', () => {
    let conflicts = 0;
    const rounds = 300;
    for (let round = 0; round < rounds; round++) {
      const rs = [1, 2, 3, 4, 5].map((id) => newTestRaft(id, 10, 1, newStorage([1, 2, 3, 4, 5]), { prng: new Prng(round * 10 + id) }));
      let fired = 0;
      for (let t = 0; t < 20 && fired === 0; t++) {
        for (const r of rs) {
          r.tick();
          if (r.state === StateType.Candidate) fired++;
        }
      }
      if (fired > 1) conflicts++;
    }
    expect(conflicts / rounds).toBeLessThan(0.3);
  });
});

describe('Raft §5.3: log replication', () => {
  function newLeader(voters: number[]): [Raft, MemoryStorage] {
    const s = newStorage(voters);
    const r = newTestRaft(1, 10, 1, s);
    r.becomeCandidate();
    r.becomeLeader();
    commitNoopEntry(r, s);
    return [r, s];
  }

  it('a leader appends a proposal and sends it to every follower', () => {
    const [r] = newLeader([1, 2, 3]);
    const li = r.raftLog.lastIndex();
    propose(r, 'some data');
    expect(r.raftLog.lastIndex()).toBe(li + 1);
    expect(r.raftLog.committed).toBe(li);
    const want = (to: number): Record<string, unknown> =>
      brief(msg({ type: MessageType.MsgApp, from: 1, to, term: 1, logTerm: 1, index: li, commit: li, entries: [ent(1, li + 1, 'some data')] }));
    expect(readMessages(r).map(brief)).toEqual([want(2), want(3)]);
    expect(entStrings(r.raftLog.nextUnstableEnts())).toEqual([`1/${li + 1}:some data`]);
  });

  it('a leader commits an entry once a majority stored it, and tells the followers', () => {
    const [r] = newLeader([1, 2, 3]);
    const li = r.raftLog.lastIndex();
    propose(r, 'some data');
    for (const m of readMessages(r)) r.step(acceptAndReply(m));
    expect(r.raftLog.committed).toBe(li + 1);
    expect(entStrings(r.raftLog.nextCommittedEnts())).toEqual([`1/${li + 1}:some data`]);
    const msgs = readMessages(r).sort((a, b) => a.to - b.to);
    expect(msgs.map((m) => [m.to, m.type, m.commit])).toEqual([
      [2, MessageType.MsgApp, li + 1],
      [3, MessageType.MsgApp, li + 1],
    ]);
  });

  it('the commit needs acks from a majority, counting the leader', () => {
    const cases: [size: number, acceptors: number[], wack: boolean][] = [
      [1, [], true],
      [3, [], false],
      [3, [2], true],
      [3, [2, 3], true],
      [5, [], false],
      [5, [2], false],
      [5, [2, 3], true],
      [5, [2, 3, 4], true],
      [5, [2, 3, 4, 5], true],
    ];
    for (const [size, acceptors, wack] of cases) {
      const [r] = newLeader(Array.from({ length: size }, (_, i) => i + 1));
      const li = r.raftLog.lastIndex();
      propose(r, 'some data');
      for (const m of readMessages(r)) if (acceptors.includes(m.to)) r.step(acceptAndReply(m));
      expect(r.raftLog.committed > li, `size ${size} acceptors ${acceptors}`).toBe(wack);
    }
  });

  it("committing a leader's entry commits all preceding entries, including earlier terms' (§5.4.2)", () => {
    const cases: Entry[][] = [[], [ent(2, 1)], [ent(1, 1), ent(2, 2)], [ent(1, 1)]];
    for (const tt of cases) {
      const s = newStorage([1, 2, 3], tt);
      s.setHardState({ term: 2, vote: 0, commit: 0 });
      const r = newTestRaft(1, 10, 1, s);
      r.becomeCandidate();
      r.becomeLeader();
      propose(r, 'some data');
      for (const m of readMessages(r)) r.step(acceptAndReply(m));
      const li = tt.length;
      expect(entStrings(r.raftLog.nextCommittedEnts())).toEqual([...entStrings(tt), `3/${li + 1}:`, `3/${li + 2}:some data`]);
    }
  });

  it('a follower commits what the leader says is committed', () => {
    const cases: [Entry[], number][] = [
      [[ent(1, 1, 'some data')], 1],
      [[ent(1, 1, 'some data'), ent(1, 2, 'some data2')], 2],
      [[ent(1, 1, 'some data2'), ent(1, 2, 'some data')], 2],
      [[ent(1, 1, 'some data'), ent(1, 2, 'some data2')], 1],
    ];
    for (const [ents, commit] of cases) {
      const r = newTestRaft(1, 10, 1, newStorage([1, 2, 3]));
      r.becomeFollower(1, 2);
      r.step(msg({ type: MessageType.MsgApp, from: 2, to: 1, term: 1, entries: ents, commit }));
      expect(r.raftLog.committed).toBe(commit);
      expect(entStrings(r.raftLog.nextCommittedEnts())).toEqual(entStrings(ents.slice(0, commit)));
    }
  });

  it('a follower rejects a MsgApp whose preceding entry it lacks, with a backtracking hint (§5.3 consistency check)', () => {
    const ents = [ent(1, 1), ent(2, 2)];
    const cases: [logTerm: number, index: number, windex: number, wreject: boolean, hint: number, hintTerm: number][] = [
      [0, 0, 1, false, 0, 0], // matches committed entries
      [1, 1, 1, false, 0, 0],
      [2, 2, 2, false, 0, 0], // matches uncommitted entries
      [1, 2, 2, true, 1, 1], // conflicting entry
      [3, 3, 3, true, 2, 2], // missing entry
    ];
    for (const [logTerm, index, windex, wreject, hint, hintTerm] of cases) {
      const s = newStorage([1, 2, 3], ents);
      s.setHardState({ term: 0, vote: 0, commit: 1 });
      const r = newTestRaft(1, 10, 1, s);
      r.becomeFollower(2, 2);
      r.step(msg({ type: MessageType.MsgApp, from: 2, to: 1, term: 2, logTerm, index }));
      expect(readMessages(r).map(brief)).toEqual([
        brief(msg({ type: MessageType.MsgAppResp, from: 1, to: 2, term: 2, index: windex, reject: wreject, rejectHint: hint, logTerm: hintTerm })),
      ]);
    }
  });

  it('a follower deletes a conflicting suffix and appends the new entries (§5.3)', () => {
    const cases: [index: number, logTerm: number, ents: Entry[], wents: Entry[], wunstable: Entry[]][] = [
      [2, 2, [ent(3, 3)], [ent(1, 1), ent(2, 2), ent(3, 3)], [ent(3, 3)]],
      [1, 1, [ent(3, 2), ent(4, 3)], [ent(1, 1), ent(3, 2), ent(4, 3)], [ent(3, 2), ent(4, 3)]],
      [0, 0, [ent(1, 1)], [ent(1, 1), ent(2, 2)], []],
      [0, 0, [ent(3, 1)], [ent(3, 1)], [ent(3, 1)]],
    ];
    for (const [index, logTerm, ents, wents, wunstable] of cases) {
      const r = newTestRaft(1, 10, 1, newStorage([1, 2, 3], [ent(1, 1), ent(2, 2)]));
      r.becomeFollower(2, 2);
      r.step(msg({ type: MessageType.MsgApp, from: 2, to: 1, term: 2, logTerm, index, entries: ents }));
      expect(entStrings(r.raftLog.allEntries())).toEqual(entStrings(wents));
      expect(entStrings(r.raftLog.nextUnstableEnts())).toEqual(entStrings(wunstable));
    }
  });

  it("a new leader brings every follower's log in line with its own (Figure 7)", () => {
    const lead = [ent(1, 1), ent(1, 2), ent(1, 3), ent(4, 4), ent(4, 5), ent(5, 6), ent(5, 7), ent(6, 8), ent(6, 9), ent(6, 10)];
    const term = 8;
    const followers: Entry[][] = [
      // (a)–(f) of Figure 7
      [ent(1, 1), ent(1, 2), ent(1, 3), ent(4, 4), ent(4, 5), ent(5, 6), ent(5, 7), ent(6, 8), ent(6, 9)],
      [ent(1, 1), ent(1, 2), ent(1, 3), ent(4, 4)],
      [ent(1, 1), ent(1, 2), ent(1, 3), ent(4, 4), ent(4, 5), ent(5, 6), ent(5, 7), ent(6, 8), ent(6, 9), ent(6, 10), ent(6, 11)],
      [ent(1, 1), ent(1, 2), ent(1, 3), ent(4, 4), ent(4, 5), ent(5, 6), ent(5, 7), ent(6, 8), ent(6, 9), ent(6, 10), ent(7, 11), ent(7, 12)],
      [ent(1, 1), ent(1, 2), ent(1, 3), ent(4, 4), ent(4, 5), ent(4, 6), ent(4, 7)],
      [ent(1, 1), ent(1, 2), ent(1, 3), ent(2, 4), ent(2, 5), ent(2, 6), ent(3, 7), ent(3, 8), ent(3, 9), ent(3, 10), ent(3, 11)],
    ];
    for (const fents of followers) {
      const ls = newStorage([1, 2, 3], lead);
      ls.setHardState({ term, vote: 0, commit: lead.length });
      const leader = newTestRaft(1, 10, 1, ls);
      const fs = newStorage([1, 2, 3], fents);
      fs.setHardState({ term: term - 1, vote: 0, commit: 0 });
      const follower = newTestRaft(2, 10, 1, fs);
      // The leader needs a majority: 3 grants its vote out of band; the
      // follower may refuse (its log may be longer).
      leader.step(msg({ type: MessageType.MsgHup, from: 1, to: 1 }));
      const net = new Map([
        [1, leader],
        [2, follower],
      ]);
      route(net);
      leader.step(msg({ type: MessageType.MsgVoteResp, from: 3, to: 1, term: term + 1 }));
      route(net);
      expect(leader.state).toBe(StateType.Leader);
      propose(leader, '');
      route(net);
      expect(entStrings(follower.raftLog.allEntries())).toEqual(entStrings(leader.raftLog.allEntries()));
    }
  });
});

describe('Raft §5.4.1: election restriction', () => {
  it('a voter grants its vote only to a candidate whose log is at least as up to date', () => {
    const cases: [ents: Entry[], logTerm: number, index: number, wreject: boolean][] = [
      // same last term
      [[ent(1, 1)], 1, 1, false],
      [[ent(1, 1)], 1, 2, false],
      [[ent(1, 1), ent(1, 2)], 1, 1, true],
      // candidate has a higher last term
      [[ent(1, 1)], 2, 1, false],
      [[ent(1, 1)], 2, 2, false],
      [[ent(1, 1), ent(1, 2)], 2, 1, false],
      // voter has a higher last term
      [[ent(2, 1)], 1, 1, true],
      [[ent(2, 1)], 1, 2, true],
      [[ent(2, 1), ent(1, 2)], 1, 1, true],
    ];
    for (const [ents, logTerm, index, wreject] of cases) {
      const r = newTestRaft(1, 10, 1, newStorage([1, 2], ents));
      r.step(msg({ type: MessageType.MsgVote, from: 2, to: 1, term: 3, logTerm, index }));
      const msgs = readMessages(r);
      expect(msgs).toHaveLength(1);
      expect(msgs[0]?.type).toBe(MessageType.MsgVoteResp);
      expect(msgs[0]?.reject, `${JSON.stringify([logTerm, index])}`).toBe(wreject);
    }
  });
});

describe('Raft §5.4.2: committing entries from previous terms', () => {
  it('a leader commits by counting replicas only entries of its own term', () => {
    const cases: [index: number, wcommit: number][] = [
      // do not commit log entries of previous terms
      [1, 0],
      [2, 0],
      // commit the leader's own entry, and with it the earlier ones
      [3, 3],
    ];
    for (const [index, wcommit] of cases) {
      const s = newStorage([1, 2], [ent(1, 1), ent(2, 2)]);
      s.setHardState({ term: 2, vote: 0, commit: 0 });
      const r = newTestRaft(1, 10, 1, s);
      r.becomeCandidate(); // term 3
      r.becomeLeader(); // appends 3/3
      readMessages(r);
      r.step(msg({ type: MessageType.MsgAppResp, from: 2, to: 1, term: r.term, index }));
      expect(r.raftLog.committed, `ack ${index}`).toBe(wcommit);
    }
  });
});

describe('Raft §5.5 / §7: followers and log compaction', () => {
  it('a leader sends a snapshot to a follower whose next entry was compacted away', () => {
    const s = newStorage([1, 2], [ent(1, 1), ent(1, 2), ent(1, 3)]);
    s.setHardState({ term: 1, vote: 0, commit: 3 });
    s.createSnapshot(3, { ...EMPTY_CONF_STATE, voters: [1, 2] }, data('state'));
    s.compact(3);
    const r = newTestRaft(1, 10, 1, s, { applied: 3 });
    r.becomeCandidate();
    r.becomeLeader();
    readMessages(r);
    // 2 answers the probe at index 3 with a rejection hinting index 0.
    r.step(msg({ type: MessageType.MsgAppResp, from: 2, to: 1, term: r.term, index: 3, reject: true, rejectHint: 0 }));
    const msgs = readMessages(r);
    expect(msgs.map((m) => m.type)).toEqual([MessageType.MsgSnap]);
    expect(msgs[0]?.snapshot?.metadata.index).toBe(3);
    expect(r.trk.progress.get(2)?.state).toBe(2 /* Snapshot */);
  });
});
