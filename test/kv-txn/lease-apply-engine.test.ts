/**
 * Issue 5 (session 5): a replica must not serve under a lease it has just
 * applied until the apply batch that installed it is written — the same batch
 * may hold commands of the previous holder, applied just before the lease.
 *
 * Replica.stageApply installs an applied lease at once (the apply rules of
 * later entries need it), but the commands staged before it in the same
 * batch reach the engine only when the Store writes the batch (an await
 * away; with LevelDB a real I/O wait). A replica that lagged behind the log
 * (it missed the previous holder's write X and the lease transfer, and
 * catches up on both in one round) held a valid lease over an engine without
 * X: a read there returned the value X overwrote — a committed write below
 * the read's timestamp, its writer never pushed (the previous holder's
 * timestamp cache had no such read): kvnemesis's stale-read shape.
 *
 * Made deterministic: the target's Raft messages of the range are dropped
 * while X and the transfer commit on the other two replicas, then let through
 * (the leader catches the target up with both in one append), and the
 * target's engine write of the batch that installs its lease is held while a
 * read of X's key is sent to it.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { ZERO_TIMESTAMP } from '../../src/util/hlc.js';
import type { WriteBatch, WriteOptions } from '../../storage/engine.js';
import { Store } from '../../src/kv/store.js';
import type { GetResponse } from '../../src/kv/api.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, leaseMoveOf } from './support.js';

const start = autoCloseClusters();
const origHandle = Store.prototype.handleRaftMessages;
afterEach(() => {
  Store.prototype.handleRaftMessages = origHandle;
});

describe('a lease applied together with the previous holder’s writes (issue 5)', () => {
  it('is not served before the batch holding those writes is in the engine', async () => {
    const env = await startTxnCluster(start, { nodes: 3 });
    const { c } = env;
    const ds = env.ds[0] as NonNullable<(typeof env.ds)[0]>;
    const k = tkey(1);
    const { d, lh, target, t } = leaseMoveOf(c, k);
    const put = (v: string) => ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: k, value: Buffer.from(v) }] });
    await put('old');
    const tr = () => c.store(t).replica(d.rangeId);
    const holder = c.store(lh).replica(d.rangeId);
    await c.waitFor(() => (tr()?.applied.raftAppliedIndex ?? 0) >= (holder?.applied.raftAppliedIndex ?? 1), 20_000, 'the target applied the old value');

    // The target hears nothing of the range while X commits and the lease moves to it.
    let drop = true;
    Store.prototype.handleRaftMessages = function (this: Store, b) {
      if (this.nodeId === target.nodeId && drop) b = { ...b, messages: b.messages.filter((m) => m.rangeId !== d.rangeId) };
      origHandle.call(this, b);
    };
    await put('x');
    await c.store(lh).transferLease(d.rangeId, target.replicaId);
    expect(tr()?.lease?.replica.replicaId).not.toBe(target.replicaId);

    // Hold the target's engine write of the batch that installs its lease; let the messages through.
    const eng = c.node(t).engine;
    const write = eng.write.bind(eng);
    let release: (() => void) | null = null;
    const released = new Promise<void>((r) => (release = r));
    let held: WriteBatch | null = null;
    eng.write = async (b: WriteBatch, o?: WriteOptions): Promise<void> => {
      if (held === null && tr()?.lease?.replica.replicaId === target.replicaId) {
        held = b;
        await released;
      }
      return write(b, o);
    };
    drop = false;
    await c.waitFor(() => held !== null, 20_000, 'the target staged its new lease');
    // X was applied in the held batch (the target caught up on X and the transfer at once).
    const xInBatch = (held as unknown as WriteBatch).ops().some((op) => op.value !== null && op.value.includes(Buffer.from('x')) && op.key.subarray(0, k.length).equals(k));
    expect(xInBatch, 'the target applied X in the same batch as its lease').toBe(true);

    // A read sent to the target now: it must wait for (or be refused until) the batch, never answer 'old'.
    let answer: string | null | undefined;
    let refused: unknown = null;
    const read = c
      .store(t)
      .send({ header: { rangeId: d.rangeId, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'get', key: k }] })
      .then(
        (res) => void (answer = (res.responses[0] as GetResponse).value?.toString() ?? null),
        (e: unknown) => void (refused = e),
      );
    await c.waitFor(() => answer !== undefined || refused !== null || (tr()?.leaseApplyWaiters ?? 0) > 0, 20_000, 'the read answered or waiting for the lease');
    const before = answer;
    (release as unknown as () => void)();
    await read;
    eng.write = write;
    expect(before, 'a read served before the lease batch was written').toBeUndefined();
    expect(refused).toBeNull();
    expect(answer).toBe('x');
  }, 60_000);
});
