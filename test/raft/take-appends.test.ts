// RawNode.takeAppends and splitAppendForDurability (raft/raw-node.ts): a
// leader's MsgApps sent while its Ready is being persisted never announce a
// commit above its durable log (Raft §5.3: committed = stored on a majority;
// the leader counts its own entries at append time, before they are durable).
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/util/prng.js';
import { RawNode, splitAppendForDurability } from '../../raft/raw-node.js';
import { MemoryStorage } from '../../raft/storage.js';
import { EMPTY_CONF_STATE, MessageType, NO_LIMIT, StateType, newMessage, type Message, type Ready } from '../../raft/types.js';

function persist(rn: RawNode, s: MemoryStorage, rd: Ready): void {
  if (rd.snapshot !== null) s.applySnapshot(rd.snapshot);
  s.append(rd.entries);
  if (rd.hardState !== null) s.setHardState(rd.hardState);
  rn.advance(rd);
}

const entry = (index: number, term = 1) => ({ index, term, type: 0, data: Buffer.from(`e${index}`) }) as unknown as Message['entries'][number];

/** Node 1 leader of {1,2,3} at term 1, both followers replicating at index 1, everything persisted. */
function leader(): [RawNode, MemoryStorage] {
  const s = new MemoryStorage();
  s.setConfState({ ...EMPTY_CONF_STATE, voters: [1, 2, 3] });
  const rn = new RawNode({ id: 1, electionTick: 10, heartbeatTick: 1, storage: s, maxSizePerMsg: NO_LIMIT, prng: new Prng(1) });
  rn.campaign();
  persist(rn, s, rn.ready());
  rn.step(newMessage({ type: MessageType.MsgVoteResp, from: 2, to: 1, term: 1 }));
  expect(rn.raft.state).toBe(StateType.Leader);
  persist(rn, s, rn.ready());
  for (const id of [2, 3]) rn.step(newMessage({ type: MessageType.MsgAppResp, from: id, to: 1, term: 1, index: 1 }));
  persist(rn, s, rn.ready());
  expect(rn.raft.raftLog.committed).toBe(1);
  return [rn, s];
}

describe('splitAppendForDurability', () => {
  const app = (fields: Partial<Message>) => newMessage({ type: MessageType.MsgApp, from: 1, to: 2, term: 3, ...fields });

  it('a commit within the durable log: the message itself, nothing later', () => {
    const m = app({ index: 4, logTerm: 3, entries: [entry(5, 3)], commit: 4 });
    expect(splitAppendForDurability(m, 4)).toEqual({ now: m, later: null });
    expect(splitAppendForDurability(m, 4).now).toBe(m);
  });

  it('commit-only above the durable log: nothing now, all of it later', () => {
    const m = app({ index: 6, logTerm: 3, commit: 6 });
    expect(splitAppendForDurability(m, 5)).toEqual({ now: null, later: m });
  });

  it('entries with a commit above the durable log: the entries now at the durable commit, a commit-only append at their last entry later', () => {
    const m = app({ index: 4, logTerm: 2, entries: [entry(5, 3), entry(6, 3)], commit: 6 });
    const copy = { ...m, entries: m.entries.slice() };
    const { now, later } = splitAppendForDurability(m, 4);
    expect(now).toEqual({ ...m, commit: 4 });
    expect(later).toEqual({ ...m, index: 6, logTerm: 3, entries: [], commit: 6 });
    expect(m).toEqual(copy); // not mutated
  });

  it('rejects anything but MsgApp', () => {
    expect(() => splitAppendForDurability(newMessage({ type: MessageType.MsgHeartbeat, commit: 9 }), 1)).toThrow(/not MsgApp/);
  });
});

describe('RawNode.takeAppends', () => {
  it("takes the MsgApps carrying entries while a Ready is outstanding, capped at the durable log; the commit goes out with the next Ready", () => {
    const [rn, s] = leader();
    rn.propose(Buffer.from('a'));
    const rd2 = rn.ready(); // a@2 being persisted
    expect(rd2.entries.map((e) => e.index)).toEqual([2]);
    // Follower 2 acknowledges a: the leader counts its own non-durable copy, so a is committed.
    rn.step(newMessage({ type: MessageType.MsgAppResp, from: 2, to: 1, term: 1, index: 2 }));
    expect(rn.raft.raftLog.committed).toBe(2);
    rn.propose(Buffer.from('b'));
    const pending = rn.raft.msgs.slice();
    expect(pending.some((m) => m.type === MessageType.MsgApp && m.entries.length > 0 && m.commit === 2)).toBe(true);

    const taken = rn.takeAppends({ lastIndex: s.lastIndex(), term: 1, vote: 1 });
    expect(taken.length).toBeGreaterThan(0);
    for (const m of taken) {
      expect(m.type).toBe(MessageType.MsgApp);
      expect(m.entries.map((e) => e.index)).toEqual([3]);
      expect(m.commit).toBeLessThanOrEqual(1);
    }
    // What stays: no append with entries; for each taken one, a commit-only append at b's index with commit 2.
    const rest = rn.raft.msgs;
    expect(rest.some((m) => m.type === MessageType.MsgApp && m.entries.length > 0)).toBe(false);
    for (const m of taken) expect(rest).toContainEqual({ ...m, index: 3, logTerm: 1, entries: [], commit: 2 });
    // The other pending messages keep their order.
    const others = pending.filter((m) => !(m.type === MessageType.MsgApp && m.entries.length > 0));
    expect(rest.slice(0, others.length)).toEqual(others);

    persist(rn, s, rd2);
    const rd3 = rn.ready();
    expect(rd3.entries.map((e) => e.index)).toEqual([3]);
    expect(rd3.messages).toEqual(rest);
    persist(rn, s, rd3);
  });

  it('nothing for a term or vote that is not durable, nor for a follower', () => {
    const [rn, s] = leader();
    rn.propose(Buffer.from('a'));
    expect(rn.takeAppends({ lastIndex: s.lastIndex(), term: 0, vote: 0 })).toEqual([]);
    expect(rn.takeAppends({ lastIndex: s.lastIndex(), term: 1, vote: 2 })).toEqual([]);
    expect(rn.raft.msgs.some((m) => m.type === MessageType.MsgApp && m.entries.length > 0)).toBe(true);

    const fs = new MemoryStorage();
    fs.setConfState({ ...EMPTY_CONF_STATE, voters: [1, 2, 3] });
    const follower = new RawNode({ id: 2, electionTick: 10, heartbeatTick: 1, storage: fs, maxSizePerMsg: NO_LIMIT, prng: new Prng(2) });
    follower.step(newMessage({ type: MessageType.MsgHeartbeat, from: 1, to: 2, term: 1 }));
    expect(follower.takeAppends({ lastIndex: 0, term: 1, vote: 0 })).toEqual([]);
  });
});
