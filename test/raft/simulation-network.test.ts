// The fault simulation's network: delays, drops, duplicates, reordering and
// partitions behave as documented in raft/rafttest/sim-network.ts.
import { describe, expect, it } from 'vitest';
import { Prng } from '../../src/util/prng.js';
import { SimNetwork, copyMessage } from '../../raft/rafttest/sim-network.js';
import { EntryType, MessageType, newMessage, type Message } from '../../raft/types.js';

function msg(from: number, to: number, index = 0): Message {
  return newMessage({ type: MessageType.MsgApp, from, to, index, entries: [{ term: 1, index: index + 1, type: EntryType.Normal, data: Buffer.from('x') }] });
}

function drain(net: SimNetwork): Message[] {
  const out: Message[] = [];
  for (let m = net.takeRandom(); m !== null; m = net.takeRandom()) out.push(m);
  return out;
}

describe('SimNetwork', () => {
  it('copies messages and their entries as a receiver would decode them, sharing data bytes', () => {
    const m = msg(1, 2);
    const c = copyMessage(m);
    expect(c).toEqual(m);
    expect(c).not.toBe(m);
    expect(c.entries[0]).not.toBe(m.entries[0]);
    expect(c.entries[0]?.data).toBe(m.entries[0]?.data);
  });

  it('holds a delayed message until its tick and delivers all of them eventually, in any order', () => {
    const net = new SimNetwork(new Prng(1), { dropRate: 0, dupRate: 0, maxDelay: 3 });
    for (let i = 0; i < 50; i++) net.send(msg(1, 2, i));
    const seen: number[] = [];
    for (let t = 0; t <= 3; t++, net.now++) for (const m of drain(net)) seen.push(m.index);
    expect(net.size).toBe(0);
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(seen).not.toEqual([...seen].sort((a, b) => a - b)); // reordered
  });

  it('drops and duplicates at the configured rates (seeded)', () => {
    const net = new SimNetwork(new Prng(2), { dropRate: 0.2, dupRate: 0.1, maxDelay: 0 });
    for (let i = 0; i < 2000; i++) net.send(msg(1, 2, i));
    const got = drain(net);
    const distinct = new Set(got.map((m) => m.index)).size;
    expect(distinct).toBeGreaterThan(1500);
    expect(distinct).toBeLessThan(1700);
    expect(got.length - distinct).toBeGreaterThan(100); // duplicates
  });

  it('partitions arbitrary subsets until healed', () => {
    const net = new SimNetwork(new Prng(3), { dropRate: 0, dupRate: 0, maxDelay: 0 });
    net.partition(new Map([[1, 1], [2, 1], [3, 2]]));
    expect(net.connected(1, 2)).toBe(true);
    expect(net.connected(1, 3)).toBe(false);
    expect(net.connected(4, 5)).toBe(true);
    expect(net.describePartition([1, 2, 3, 4])).toBe('4 | 1 2 | 3');
    net.healPartitions();
    expect(net.connected(1, 3)).toBe(true);
  });

  it('is deterministic from its seed', () => {
    const run = (): number[] => {
      const net = new SimNetwork(new Prng(9), { dropRate: 0.1, dupRate: 0.1, maxDelay: 2 });
      for (let i = 0; i < 100; i++) net.send(msg(1, 2, i));
      net.now += 2;
      return drain(net).map((m) => m.index);
    };
    expect(run()).toEqual(run());
  });
});
