/**
 * Leaving redundant Raft messages out of a Ready's batch
 * (src/kv/redundant-raft-messages.ts): the rules on hand-made Readies; the
 * fault simulation (test/raft/simulation: loss, duplication, reordering,
 * partitions, crashes, membership changes — Raft §5.2–§5.4 checked after every
 * step, liveness after healing) with every node's Ready filtered by the rule,
 * on fixed seeds. Leaving a message out is message loss, which Raft's safety
 * never depends on, so what the simulation adds is that the groups still make
 * progress with the rule on every Ready (it fires rarely there — ~0.3 % of the
 * messages, a Ready being handled after each delivery — against ~25 % of a
 * loaded store's). Then a 3-node cluster under a burst of writes, with and
 * without the rule: nothing is left out without it, and every replica
 * applies every write either way (how many it elides depends on timing: printed, not asserted).
 */
import { describe, it, expect } from 'vitest';
import { isEmptyAppendSuperseded, isSupersededInReady } from '../../src/kv/redundant-raft-messages.js';
import { EMPTY_SNAPSHOT, MessageType, type Message } from '../../raft/types.js';
import { runSimulation } from '../../raft/rafttest/sim-schedule.js';
import { Prng } from '../../src/util/prng.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { distSender, key, putAt } from '../kv-ranges/support.js';

const start = autoCloseClusters();

function msg(type: MessageType, o: Partial<Message> = {}): Message {
  return { type, to: 2, from: 1, term: 5, logTerm: 5, index: 10, entries: [], commit: 9, snapshot: null, reject: false, rejectHint: 0, context: null, ...o };
}
const ent = (index: number): Message['entries'][number] => ({ term: 5, index, type: 0, data: Buffer.from('x') });

function kept(msgs: readonly Message[]): Message[] {
  return msgs.filter((_, i) => !isSupersededInReady(msgs, i));
}

describe('redundant Raft messages: the rules', () => {
  it('an empty commit-only MsgApp followed by the next append to the same replica is left out', () => {
    const empty = msg(MessageType.MsgApp, { commit: 9 });
    const next = msg(MessageType.MsgApp, { commit: 10, entries: [ent(11)] });
    expect(kept([empty, next])).toEqual([next]);
    // Same commit is enough; other replicas' appends keep theirs.
    expect(kept([empty, { ...next, commit: 9 }])).toEqual([{ ...next, commit: 9 }]);
    const other = { ...next, to: 3 };
    expect(kept([empty, other])).toEqual([empty, other]);
  });

  it('kept when the later append checks another log position, another term, or a lower commit', () => {
    const empty = msg(MessageType.MsgApp, { commit: 9 });
    for (const later of [
      msg(MessageType.MsgApp, { index: 11, entries: [ent(12)] }),
      msg(MessageType.MsgApp, { logTerm: 4, entries: [ent(11)] }),
      msg(MessageType.MsgApp, { term: 6, entries: [ent(11)] }),
      msg(MessageType.MsgApp, { commit: 8, entries: [ent(11)] }),
    ]) {
      expect(kept([empty, later])).toEqual([empty, later]);
    }
    // An append with entries is never left out, nor one that comes last.
    const full = msg(MessageType.MsgApp, { entries: [ent(11)] });
    expect(kept([full, msg(MessageType.MsgApp, { entries: [ent(11)] })])).toHaveLength(2);
    expect(kept([msg(MessageType.MsgApp)])).toHaveLength(1);
  });

  it('an acknowledgement followed by a higher one to the same leader is left out; rejections never are', () => {
    const ack = (index: number, o: Partial<Message> = {}): Message => msg(MessageType.MsgAppResp, { to: 1, from: 2, index, ...o });
    expect(kept([ack(10), ack(12)])).toEqual([ack(12)]);
    expect(kept([ack(10), ack(10)])).toEqual([ack(10)]);
    expect(kept([ack(12), ack(10)])).toEqual([ack(12), ack(10)]);
    expect(kept([ack(10), ack(12, { reject: true })])).toEqual([ack(10), ack(12, { reject: true })]);
    expect(kept([ack(10, { reject: true }), ack(12)])).toEqual([ack(10, { reject: true }), ack(12)]);
    expect(kept([ack(10), ack(12, { term: 6 })])).toEqual([ack(10), ack(12, { term: 6 })]);
    expect(kept([ack(10), ack(12, { to: 3 })])).toEqual([ack(10), ack(12, { to: 3 })]);
  });

  it('everything else keeps its place', () => {
    const hb = msg(MessageType.MsgHeartbeat);
    const vote = msg(MessageType.MsgVote);
    const empty = msg(MessageType.MsgApp);
    const next = msg(MessageType.MsgApp, { entries: [ent(11)] });
    expect(kept([hb, empty, vote, next, hb])).toEqual([hb, vote, next, hb]);
  });
});

/** The deferred rule on one list (Store.route's post-sync batch without appends sent earlier): an empty MsgApp a later one supersedes is left out. */
function keptDeferred(msgs: readonly Message[]): Message[] {
  return msgs.filter((m, i) => !msgs.some((n, j) => j > i && isEmptyAppendSuperseded(m, n)));
}

describe('deferred commit-only appends: the rule', () => {
  it('an empty MsgApp is redundant given an append to the same replica at or past its position with a commit at least as high', () => {
    const empty = msg(MessageType.MsgApp, { index: 10, commit: 9 });
    // Sent before it during the round (appends during the sync) or after it: the same position, a later one.
    for (const n of [
      msg(MessageType.MsgApp, { index: 10, commit: 9, entries: [ent(11)] }),
      msg(MessageType.MsgApp, { index: 12, logTerm: 5, commit: 11, entries: [ent(13)] }),
      // A commit-only remainder past it (splitAppendForDurability's `later`).
      msg(MessageType.MsgApp, { index: 13, commit: 13 }),
    ]) {
      expect(isEmptyAppendSuperseded(empty, n)).toBe(true);
    }
    for (const n of [
      msg(MessageType.MsgApp, { index: 9, commit: 9, entries: [ent(10)] }), // an earlier position
      msg(MessageType.MsgApp, { index: 12, commit: 8, entries: [ent(13)] }), // a lower commit (capped at the leader's durable log)
      msg(MessageType.MsgApp, { index: 12, term: 6, commit: 11, entries: [ent(13)] }), // another term
      msg(MessageType.MsgApp, { index: 12, to: 3, commit: 11, entries: [ent(13)] }), // another replica
      msg(MessageType.MsgHeartbeat, { commit: 11 }),
      msg(MessageType.MsgApp, { index: 12, commit: 11, snapshot: { ...EMPTY_SNAPSHOT, metadata: { ...EMPTY_SNAPSHOT.metadata, index: 12, term: 5 } } }),
    ]) {
      expect(isEmptyAppendSuperseded(empty, n)).toBe(false);
    }
    // Only empty appends are ever left out.
    expect(isEmptyAppendSuperseded(msg(MessageType.MsgApp, { entries: [ent(11)] }), msg(MessageType.MsgApp, { index: 12, commit: 11, entries: [ent(13)] }))).toBe(false);
    expect(isEmptyAppendSuperseded(msg(MessageType.MsgAppResp), msg(MessageType.MsgApp, { index: 12, commit: 11, entries: [ent(13)] }))).toBe(false);
  });
});

describe('redundant Raft messages: Raft under the fault simulation with the rule', () => {
  for (const nodes of [3, 5]) {
    it(`${nodes} nodes: safety after every step and liveness after healing, with each Ready filtered`, () => {
      const p = new Prng(20261130 + nodes);
      let left = 0;
      let seen = 0;
      const readyMessages = (msgs: readonly Message[]): readonly Message[] => {
        seen += msgs.length;
        const out = kept(msgs);
        left += msgs.length - out.length;
        return out;
      };
      const runs = nodes === 3 ? 150 : 60;
      for (let i = 0; i < runs; i++) {
        const o = { seed: 1 + (p.nextUint32() & 0x7ffffffe), nodes, steps: 300 + (p.nextUint32() % 500), readyMessages };
        const r = runSimulation(o);
        expect(r.failure, `replay: runSimulation(${JSON.stringify({ ...o, readyMessages: 'kept' })}) — ${r.failure}`).toBeNull();
      }
      // The rule really fired in these schedules.
      expect(left).toBeGreaterThan(0);
      expect(seen).toBeGreaterThan(left);
    }, 300_000);
  }
});

describe('deferred commit-only appends: Raft under the fault simulation with the rule', () => {
  it('3 nodes: safety after every step and liveness after healing, with each Ready filtered by both rules', () => {
    const p = new Prng(20261201);
    let left = 0;
    const readyMessages = (msgs: readonly Message[]): readonly Message[] => {
      const out = keptDeferred(kept(msgs));
      left += msgs.length - out.length;
      return out;
    };
    for (let i = 0; i < 50; i++) {
      const o = { seed: 1 + (p.nextUint32() & 0x7ffffffe), nodes: 3, steps: 300 + (p.nextUint32() % 500), readyMessages };
      const r = runSimulation(o);
      expect(r.failure, `replay: runSimulation(${JSON.stringify({ ...o, readyMessages: 'keptDeferred(kept)' })}) — ${r.failure}`).toBeNull();
    }
    expect(left).toBeGreaterThan(0);
  }, 300_000);
});

describe('redundant Raft messages: the store', () => {
  it('with the rule on or off a burst of writes is applied by every replica; with it off nothing is elided', async () => {
    // Whether a round holds a message that a later one of the same round supersedes depends on timing (on a loaded
    // machine most do; on a quiet one the clean-clone CI of e704440 saw none in 600 writes), so how many the rule
    // elides is printed, not asserted: the rule itself is shown on hand-made Readies above and in the simulation.
    const perWrite: Record<string, number> = {};
    const elidedPerWrite: Record<string, number> = {};
    for (const elide of [false, true]) {
      const c = await start({ nodes: 3, settings: { elideRedundantRaftMessages: elide } });
      c.startTicker();
      const ds = distSender(c, 0);
      await putAt(ds, key(0), Buffer.from('warm'));
      const sent0 = [0, 1, 2].reduce((n, i) => n + c.store(i).metrics.raftMessagesSent, 0);
      const elided0 = [0, 1, 2].reduce((n, i) => n + c.store(i).metrics.raftMessagesElided, 0);
      const N = 600;
      let next = 1;
      await Promise.all(Array.from({ length: 32 }, async () => {
        for (let k = next++; k <= N; k = next++) await putAt(ds, key(k), Buffer.from(`v${k}`));
      }));
      const sent = [0, 1, 2].reduce((n, i) => n + c.store(i).metrics.raftMessagesSent, 0) - sent0;
      const elided = [0, 1, 2].reduce((n, i) => n + c.store(i).metrics.raftMessagesElided, 0) - elided0;
      perWrite[String(elide)] = sent / N;
      elidedPerWrite[String(elide)] = elided / N;
      if (!elide) expect(elided).toBe(0);
      // Every replica applies every write.
      const lh = c.leaseholder(1);
      const applied = c.store(lh).replica(1)?.raw.raft.raftLog.applied ?? 0;
      for (let i = 0; i < 3; i++) await c.waitFor(() => (c.store(i).replica(1)?.raw.raft.raftLog.applied ?? 0) >= applied, 10_000, `n${i + 1} applies`);
      for (let k = 1; k <= N; k += 37) expect((await c.client((k % 3)).get(key(k)))?.toString()).toBe(`v${k}`);
    }
    console.log('Raft messages sent per write (all stores):', perWrite, 'elided per write:', elidedPerWrite);
  }, 120_000);
});
