/**
 * Issue 4 (session 2) bug 1: `raft: tocommit(11) out of range [lastIndex(10)]`
 * asserted in handleHeartbeat on a follower's replica just created by a split.
 *
 * The race, made deterministic here: a follower applies a split (its apply
 * batch writes the right range's Raft state, truncated at 10/5) and starts
 * installing the right-hand replica from the engine (Store.installReplica,
 * asynchronous). Before that replica is in the store's map, the right range's
 * leader sends it an append (index 10, term 5, entry 11…). The store used to
 * create an uninitialized placeholder for the unknown range, loaded from the
 * very state the split had just written — so it accepted entry 11 and
 * acknowledged it — and then the installed replica (loaded a moment earlier,
 * without entry 11) replaced it. The leader's heartbeat then carried
 * commit = min(match 11, committed) = 11 to a replica whose log ends at 10.
 *
 * Fix (store.ts beginInstall / installReplica, split-trigger.ts): from the
 * split's stage until the replica is installed no placeholder of the range
 * exists, and its messages are dropped (the leader retransmits).
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { adminSplit } from '../../src/kv/split.js';
import { Replica } from '../../src/kv/replica.js';
import { Store } from '../../src/kv/store.js';
import { MessageType, newMessage } from '../../raft/types.js';
import { RAFT_INITIAL_LOG_INDEX, RAFT_INITIAL_LOG_TERM } from '../../src/kv/bootstrap.js';
import type { RangeDescriptor } from '../../src/kv/api.js';
import { client, distSender, key, val } from './support.js';

const start = autoCloseClusters();

describe('split: installing the right-hand replica on a follower', () => {
  it('an append that arrives while the replica is being installed is never acknowledged by a placeholder; the leader’s heartbeat never overruns the log', async () => {
    const c = await start({ nodes: 3, settings: { raftLogMaxEntries: 1_000_000 } });
    c.startTicker();
    const kv = client(c, 0);
    await kv.batch(Array.from({ length: 20 }, (_, i) => ({ kind: 'put' as const, key: key(i), value: val(i) })));
    // Node 3 misses the split and the right range's first writes.
    await c.stopNode(2);
    const ds = distSender(c, 0);
    const right = (await adminSplit(ds, key(10)))?.right as RangeDescriptor;
    expect(right).toBeDefined();
    for (let i = 10; i < 15; i++) await kv.put(key(i), val(i + 100));
    const lead = c.leader(right.rangeId);
    expect(lead).toBeGreaterThanOrEqual(0);
    const leader = c.store(lead).replica(right.rangeId) as Replica;
    const n3 = right.replicas.find((x) => x.nodeId === 3);
    expect(n3).toBeDefined();
    const n3ReplicaId = n3?.replicaId as number;

    // Hold node 3's installation of the right-hand replica after it has read
    // the engine (the window of the race).
    const origLoad = Replica.load.bind(Replica);
    let gateOpen!: () => void;
    const gate = new Promise<void>((r) => (gateOpen = r));
    let held = false;
    Replica.load = async (ctx, desc) => {
      const r = await origLoad(ctx, desc);
      if (desc.rangeId === right.rangeId && ctx.ident.nodeId === 3) {
        held = true;
        await gate;
      }
      return r;
    };
    // Until then, node 3 hears nothing of the right range (else a snapshot
    // could initialize it before the split applies there).
    const origHandle = Store.prototype.handleRaftMessages;
    Store.prototype.handleRaftMessages = function (this: Store, b) {
      if (this.nodeId === 3 && !held) b = { ...b, messages: b.messages.filter((m) => m.rangeId !== right.rangeId) };
      origHandle.call(this, b);
    };
    try {
      await c.restartNode(2);
      await c.waitFor(() => held, 20_000, 'node 3 to apply the split and install the right-hand replica');
      const s3 = c.store(2);
      // The leader's append from the split's initial state: entries 11… of its log.
      const st = leader.raw.status();
      const entries = leader.storage.entries(RAFT_INITIAL_LOG_INDEX + 1, leader.storage.lastIndex() + 1, Number.MAX_SAFE_INTEGER);
      expect(entries.length).toBeGreaterThan(0);
      const app = newMessage({
        type: MessageType.MsgApp,
        to: n3ReplicaId,
        from: leader.replicaId,
        term: st.hardState.term,
        index: RAFT_INITIAL_LOG_INDEX,
        logTerm: RAFT_INITIAL_LOG_TERM,
        entries,
        commit: st.hardState.commit,
      });
      s3.handleRaftMessages({ fromNodeId: lead + 1, fromStoreId: lead + 1, toStoreId: s3.storeId, messages: [{ rangeId: right.rangeId, fromReplicaId: leader.replicaId, toReplicaId: n3ReplicaId, quiesce: false, message: app }] });
      // Bounded look for the wrong outcome: a placeholder that took the entries.
      const placeholder = await c
        .waitFor(() => s3.replica(right.rangeId) !== undefined, 1_000, 'a placeholder')
        .then(() => true)
        .catch(() => false);
      expect(placeholder, 'no placeholder replica while the split installs the right-hand replica').toBe(false);
    } finally {
      gateOpen();
      Replica.load = origLoad;
      Store.prototype.handleRaftMessages = origHandle;
    }
    const s3 = c.store(2);
    await c.waitFor(() => s3.replica(right.rangeId)?.initialized === true, 10_000, 'the installed right-hand replica');
    // The leader's heartbeat as raft builds it: commit = min(match, committed).
    // It must never exceed what node 3's replica holds.
    const r3 = s3.replica(right.rangeId) as Replica;
    const pr = leader.raw.status().progress?.get(n3ReplicaId);
    const commit = Math.min(pr?.match ?? 0, leader.raw.status().hardState.commit);
    expect(commit).toBeLessThanOrEqual(r3.storage.lastIndex());
    const hb = newMessage({ type: MessageType.MsgHeartbeat, to: n3ReplicaId, from: leader.replicaId, term: leader.raw.status().hardState.term, commit });
    s3.handleRaftMessages({ fromNodeId: lead + 1, fromStoreId: lead + 1, toStoreId: s3.storeId, messages: [{ rangeId: right.rangeId, fromReplicaId: leader.replicaId, toReplicaId: n3ReplicaId, quiesce: false, message: hb }] });
    // Node 3 catches up normally and serves the writes it missed.
    await c.waitFor(() => r3.applied.raftAppliedIndex >= leader.applied.raftAppliedIndex, 10_000, 'node 3 to catch up');
    const kv3 = client(c, 2);
    for (let i = 10; i < 15; i++) expect((await kv3.get(key(i)))?.equals(val(i + 100))).toBe(true);
  }, 60_000);
});
