/**
 * The Raft transport between stores (issue 4 "Ranges": coalesced Raft traffic
 * between node pairs; "Bad input": a malformed or truncated RPC frame closes
 * that connection, the node keeps serving). Store.processRound hands every
 * message of a round to one RaftMessageBatch per destination store, sent as
 * one one-way RPC (src/kv/store.ts, header step 3); the connection writes a
 * turn's messages in one frame (src/rpc/connection.ts).
 *
 *   - a burst of writes to three ranges led by one node: its batches to a peer carry
 *     messages of several ranges, never more than two per Ready round per peer
 *     (the appends sent before the round's sync, the rest after it), and it
 *     writes no more frames to the peer than it sends batches — counted, not timed;
 *   - ranges that go quiet on the same tick send their quiescing heartbeats
 *     to a peer in one batch (Store.tick collects them);
 *   - a batch lost on the way is lost messages: the ranges commit with the
 *     other peer, and the lagging one is brought up to date once batches
 *     flow again (Raft retransmits; no batch-level retry);
 *   - within a batch each range's messages keep their Raft order;
 *   - the codec keeps a batch's message order exactly (fast-check);
 *   - a truncated or corrupted batch closes the connection it came on (logged,
 *     counted as malformed), steps nothing, and the cluster keeps serving:
 *     the peers reconnect and a write replicates to every node.
 *
 * The batches are observed by wrapping that node's transport send (the real
 * RpcContext still sends every one of them).
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { KvMethod } from '../../src/kv/api.js';
import { decodeRaftMessageBatch, encodeRaftMessageBatch, type RaftMessageBatch, type RaftMessageRequest } from '../../src/kv/api-codec.js';
import { ConnectionClass } from '../../src/rpc/transport.js';
import type { RpcContext } from '../../src/rpc/rpc-context.js';
import { MessageType, type Message } from '../../raft/types.js';
import { distSender, getNow, key, putAt } from '../kv-ranges/support.js';

const start = autoCloseClusters();

interface SentBatch {
  readonly to: number;
  readonly batch: RaftMessageBatch;
}

/** Records every RaftMessages batch `rpc` sends (decoded), and still sends it. */
function tapRaftBatches(rpc: RpcContext): SentBatch[] {
  const sent: SentBatch[] = [];
  const send = rpc.send.bind(rpc);
  rpc.send = (nodeId, method, payload, cls) => {
    if (method === KvMethod.RaftMessages) sent.push({ to: nodeId, batch: decodeRaftMessageBatch(Buffer.from(payload)) });
    return send(nodeId, method, payload, cls);
  };
  return sent;
}

function rpcOf(c: TestCluster, i: number): RpcContext {
  const rpc = c.node(i).rpc;
  if (rpc === null) throw new Error(`n${i + 1} is stopped`);
  return rpc;
}

/**
 * Three ranges over the test span — r1 | [key(100), key(200)) | [key(200), …) —
 * all led, and leased, by one node; returns their ids and that node's index.
 */
async function threeRangesOnOneNode(c: TestCluster): Promise<{ ids: number[]; home: number }> {
  const ds = distSender(c, 0);
  await putAt(ds, key(0), Buffer.from('x'));
  const a = await adminSplit(ds, key(100));
  const b = await adminSplit(ds, key(200));
  if (a === null || b === null) throw new Error('a split found its key already a boundary');
  const ids = [1, a.right.rangeId, b.right.rangeId];
  const starts = [key(0), key(100), key(200)];
  await c.waitFor(() => c.leaseholder(1) >= 0, 10_000, 'a lease on r1');
  const home = c.leaseholder(1);
  for (let j = 1; j < 3; j++) {
    const id = ids[j] as number;
    await getNow(ds, starts[j] as Buffer); // takes the lease if nobody holds it
    await c.waitFor(() => c.leaseholder(id) >= 0, 10_000, `a lease on r${id}`);
    const lh = c.leaseholder(id);
    if (lh !== home) await c.store(lh).transferLease(id, home + 1);
  }
  // The leadership follows the lease (Replica.maintainLease).
  await c.waitFor(() => ids.every((id) => c.leader(id) === home && c.leaseholder(id) === home), 20_000, `n${home + 1} leads and holds all three ranges`);
  return { ids, home };
}

describe('Raft transport: messages coalesced per destination store', () => {
  it("a round's messages of several ranges for one peer leave in one batch, at most two batches per round per peer, no more frames than batches", async () => {
    // Leases long enough to outlast the bursts below, which run without ticks.
    const c = await start({ nodes: 3, settings: { leaseDurationMicros: 60_000_000 } });
    c.startTicker();
    const { ids, home } = await threeRangesOnOneNode(c);
    const peer = (home + 1) % 3;
    const ds = distSender(c, home);
    // Warm the DistSender's range cache and leaseholder guesses: from here on every call it makes is local.
    for (const base of [10, 110, 210]) await putAt(ds, key(base), Buffer.from('warm'));
    const sent = tapRaftBatches(rpcOf(c, home));
    const homeStore = c.store(home).metrics;
    const toPeer = rpcOf(c, home).metrics.peer(peer + 1);
    const rounds0 = homeStore.readyRounds;
    const frames0 = toPeer.framesSent;
    // The ticker is stopped so the only traffic home → peer is what the writes cause (the client enters at home: local calls).
    c.stopTicker();
    for (let burst = 0; burst < 20; burst++) {
      await Promise.all(
        [10, 110, 210].flatMap((base) => Array.from({ length: 4 }, (_, j) => putAt(ds, key(base + burst * 4 + j), Buffer.alloc(256, burst)))),
      );
    }
    const rounds = homeStore.readyRounds - rounds0;
    const frames = toPeer.framesSent - frames0;
    const sentToPeer = sent.filter((s) => s.to === peer + 1);
    const messages = sentToPeer.reduce((n, s) => n + s.batch.messages.length, 0);
    const ranges = (s: SentBatch): Set<number> => new Set(s.batch.messages.map((m) => m.rangeId));
    const mixed = sentToPeer.filter((s) => ranges(s).size >= 2);
    // Every range's traffic went to n2, and some of it rode together with another range's.
    for (const id of ids) expect(sentToPeer.some((s) => ranges(s).has(id)), `r${id} sent nothing to the peer`).toBe(true);
    expect(mixed.length, 'no batch to the peer carried messages of two ranges').toBeGreaterThan(0);
    expect(messages).toBeGreaterThan(sentToPeer.length);
    // Per round and peer: the appends (before the round's sync) and the rest (after it) — never one batch per range.
    expect(sentToPeer.length).toBeLessThanOrEqual(2 * rounds);
    // A batch is one envelope; the connection writes a turn's envelopes in one frame.
    expect(frames).toBeLessThanOrEqual(sentToPeer.length);
    for (const s of sentToPeer) expect(s.batch.toStoreId).toBe(peer + 1);
  }, 60_000);

  it('within a batch, each range keeps its messages in Raft order', async () => {
    const c = await start({ nodes: 3 });
    c.startTicker();
    const { home } = await threeRangesOnOneNode(c);
    const ds = distSender(c, home);
    const sent = tapRaftBatches(rpcOf(c, home));
    for (let burst = 0; burst < 10; burst++) {
      await Promise.all([20, 120, 220].flatMap((base) => Array.from({ length: 4 }, (_, j) => putAt(ds, key(base + burst * 4 + j), Buffer.from(`v${burst}`)))));
    }
    let appends = 0;
    for (const { to, batch } of sent) {
      const last = new Map<number, Message>();
      for (const m of batch.messages) {
        const prev = last.get(m.rangeId);
        if (prev !== undefined && prev.type === MessageType.MsgApp && m.message.type === MessageType.MsgApp && prev.to === m.message.to) {
          // Raft §5.3: successive appends to one follower continue where the previous one ended.
          expect(m.message.index, `r${m.rangeId} → n${to}`).toBe(prev.index + prev.entries.length);
        }
        if (m.message.type === MessageType.MsgApp) appends++;
        last.set(m.rangeId, m.message);
      }
    }
    expect(appends).toBeGreaterThan(0);
  }, 60_000);

  it('ranges going quiet on one tick send their quiescing heartbeats to a peer in one batch', async () => {
    const c = await start({ nodes: 3, settings: { leaseDurationMicros: 60_000_000 } });
    c.startTicker();
    const { ids, home } = await threeRangesOnOneNode(c);
    const ds = distSender(c, home);
    const sent = tapRaftBatches(rpcOf(c, home));
    c.stopTicker();
    await Promise.all([30, 130, 230].map((k) => putAt(ds, key(k), Buffer.from('wake'))));
    const replicas = ids.map((id) => c.store(home).replica(id));
    const quiescing: SentBatch[][] = [];
    const deadline = performance.now() + 20_000;
    while (!replicas.every((r) => r?.quiescent === true)) {
      if (performance.now() > deadline) throw new Error('the three ranges did not quiesce');
      const before = sent.length;
      c.tick(); // every store's tick, synchronously: what it sends is in `sent` when it returns
      quiescing.push(sent.slice(before).filter((s) => s.batch.messages.some((m) => m.quiesce)));
      await new Promise<void>((r) => setImmediate(r)); // the Ready loop and the peers' answers run between ticks
    }
    const perPeer = (batches: SentBatch[]): Map<number, number> => {
      const n = new Map<number, number>();
      for (const s of batches) n.set(s.to, (n.get(s.to) ?? 0) + 1);
      return n;
    };
    // One batch per peer per tick, whatever number of ranges quiesced on it.
    for (const batches of quiescing) for (const n of perPeer(batches).values()) expect(n).toBe(1);
    const quieted = new Set(quiescing.flat().flatMap((s) => s.batch.messages.filter((m) => m.quiesce).map((m) => m.rangeId)));
    expect([...quieted].sort()).toEqual([...ids].sort());
    const busiest = Math.max(...quiescing.flat().map((s) => new Set(s.batch.messages.map((m) => m.rangeId)).size));
    expect(busiest, 'no tick quiesced two ranges together').toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('a lost batch is lost messages: the ranges commit without that peer, and Raft brings it up to date once batches flow again', async () => {
    const c = await start({ nodes: 3, settings: { leaseDurationMicros: 60_000_000 } });
    c.startTicker();
    const { ids, home } = await threeRangesOnOneNode(c);
    const peer = (home + 1) % 3;
    const ds = distSender(c, home);
    // Warm the DistSender: from here on its calls are local, so the fault below hits only Raft traffic.
    for (const base of [40, 140, 240]) await putAt(ds, key(base), Buffer.from('warm'));
    const faults = rpcOf(c, home).faults;
    const sent = tapRaftBatches(rpcOf(c, home));
    // Every batch home sends the peer is lost on the way (the send itself succeeds: the network drops it).
    faults.setFaults(peer + 1, { dropProbability: 1 });
    const dropped0 = faults.totals().dropped;
    await Promise.all([40, 140, 240].flatMap((base) => Array.from({ length: 5 }, (_, j) => putAt(ds, key(base + j), Buffer.from(`lost-${base + j}`)))));
    const lost = sent.filter((s) => s.to === peer + 1);
    expect(lost.length, 'home sent the peer nothing to lose').toBeGreaterThan(0);
    expect(faults.totals().dropped - dropped0).toBeGreaterThanOrEqual(lost.length);
    const lagging = ids.map((id) => (c.store(peer).replica(id)?.raw.raft.raftLog.committed ?? 0) < (c.store(home).replica(id)?.raw.raft.raftLog.committed ?? 0));
    expect(lagging.some((x) => x), 'the peer kept up although every batch to it was lost').toBe(true);
    faults.clearFaults(peer + 1);
    for (const id of ids) {
      const target = c.store(home).replica(id)?.raw.raft.raftLog.committed ?? 0;
      await c.waitFor(() => (c.store(peer).replica(id)?.raw.raft.raftLog.applied ?? 0) >= target, 20_000, `the peer's r${id} applies up to ${target}`);
    }
    for (const base of [40, 140, 240]) {
      for (let j = 0; j < 5; j++) expect((await c.client(peer).get(key(base + j)))?.toString()).toBe(`lost-${base + j}`);
    }
  }, 60_000);

  it('the batch codec keeps every message, in order (fast-check)', () => {
    const entry = fc.record({ term: fc.nat(50), index: fc.nat(1e6), type: fc.constantFrom(0, 1), data: fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)) });
    const message = fc.record({
      type: fc.constantFrom(MessageType.MsgApp, MessageType.MsgAppResp, MessageType.MsgHeartbeat, MessageType.MsgHeartbeatResp, MessageType.MsgVote),
      to: fc.integer({ min: 1, max: 7 }),
      from: fc.integer({ min: 1, max: 7 }),
      term: fc.nat(100),
      logTerm: fc.nat(100),
      index: fc.nat(1e6),
      entries: fc.array(entry, { maxLength: 3 }),
      commit: fc.nat(1e6),
      reject: fc.boolean(),
      rejectHint: fc.nat(1e6),
    });
    const request = fc.record({ rangeId: fc.integer({ min: 1, max: 6 }), fromReplicaId: fc.integer({ min: 1, max: 7 }), toReplicaId: fc.integer({ min: 1, max: 7 }), quiesce: fc.boolean(), message });
    fc.assert(
      fc.property(fc.array(request, { maxLength: 30 }), (reqs) => {
        const messages: RaftMessageRequest[] = reqs.map((q) => ({ ...q, message: { ...q.message, snapshot: null, context: null } as Message }));
        const batch: RaftMessageBatch = { fromNodeId: 1, fromStoreId: 1, toStoreId: 2, messages };
        const back = decodeRaftMessageBatch(encodeRaftMessageBatch(batch));
        expect(back.messages.map((m) => [m.rangeId, m.message.type, m.message.index, m.message.entries.length])).toEqual(
          messages.map((m) => [m.rangeId, m.message.type, m.message.index, m.message.entries.length]),
        );
        expect(back).toEqual(batch);
      }),
      { seed: 20261130, numRuns: 200 },
    );
  });
});

describe('Raft transport: bad input (issue 4)', () => {
  for (const damage of ['truncated', 'corrupted'] as const) {
    it(`a ${damage} batch closes the connection it came on, steps nothing, and the cluster keeps serving`, async () => {
      const c = await start({ nodes: 3 });
      c.startTicker();
      const ds = distSender(c, 0);
      await putAt(ds, key(1), Buffer.from('before'));
      await c.waitFor(() => c.leader(1) >= 0, 10_000, 'r1 has a leader');
      const leader = c.leader(1);
      const from = (leader + 1) % 3; // a follower of r1 sends the bad batch to the leader
      const r = c.store(leader).replica(1);
      if (r === undefined) throw new Error('no r1 on the leader');
      // A well-formed batch first: an append a long way ahead of the leader's log, which stepping would reject visibly.
      const good = encodeRaftMessageBatch({
        fromNodeId: from + 1,
        fromStoreId: from + 1,
        toStoreId: leader + 1,
        messages: [
          {
            rangeId: 1,
            fromReplicaId: from + 1,
            toReplicaId: leader + 1,
            quiesce: false,
            message: { type: MessageType.MsgHeartbeatResp, to: leader + 1, from: from + 1, term: 1_000_000, logTerm: 0, index: 0, entries: [], commit: 0, snapshot: null, reject: false, rejectHint: 0, context: null },
          },
        ],
      });
      const bad = damage === 'truncated' ? good.subarray(0, good.length - 3) : Buffer.concat([good, Buffer.from([0xff])]);
      expect(() => decodeRaftMessageBatch(bad)).toThrow(/rpc|truncated|trailing/);
      const termBefore = r.raw.raft.term;
      const peerMetrics = rpcOf(c, leader).metrics.peer(from + 1);
      const malformed0 = peerMetrics.malformedFrames;
      expect(rpcOf(c, from).send(leader + 1, KvMethod.RaftMessages, bad, ConnectionClass.Raft)).toBe(true);
      await c.waitFor(() => peerMetrics.malformedFrames > malformed0, 10_000, 'the leader counts the malformed batch');
      // Nothing of it was stepped: a term of 1,000,000 would have made the leader step down.
      expect(r.raw.raft.term).toBe(termBefore);
      // The cluster keeps serving: the connection is redialed, a write reaches every replica.
      const seq = Buffer.from(`after-${damage}`);
      await putAt(ds, key(2), seq);
      for (let i = 0; i < 3; i++) {
        const ri = c.store(i).replica(1);
        await c.waitFor(() => ri !== undefined && ri.raw.raft.raftLog.committed >= r.raw.raft.raftLog.committed, 10_000, `n${i + 1} catches up`);
      }
      expect((await c.client(from).get(key(2)))?.toString()).toBe(seq.toString());
    }, 60_000);
  }
});
