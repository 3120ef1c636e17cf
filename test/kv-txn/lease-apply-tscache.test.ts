/**
 * Issue 5, bug 2: a new leaseholder must not serve a request with the
 * timestamp cache it had before the lease (DESIGN.md §6, "Timestamp cache
 * after a lease transfer").
 *
 * Replica.stageApply installs an applied lease at once (later entries of the
 * round, and Replica.send, see it), but the cache's low-water mark was
 * raised only in finishApply — after the store's apply batch is written,
 * an await away. On an engine whose writes take time (LevelDB), a request
 * arriving in between is served on the new lease with the old cache: a write
 * lands below a read the previous holder served, and that read's transaction
 * commits having missed it.
 *
 * The window is made wide and deterministic here by holding the new holder's
 * engine writes (all of them, like a slow disk) from the moment its replica
 * shows the new lease until a write has been evaluated there.
 */
import { describe, it, expect } from 'vitest';
import { formatTimestamp, tsLess } from '../../src/util/hlc.js';
import type { WriteBatch, WriteOptions } from '../../storage/engine.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, leaseMoveOf } from './support.js';

const start = autoCloseClusters();

async function until(what: string, cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('timestamp cache of a new leaseholder (issue 5)', () => {
  it('a write served right after the lease applies lands above the reads the previous holder served', async () => {
    const env = await startTxnCluster(start, { nodes: 3 });
    const { c } = env;
    const db = env.dbs[0] as NonNullable<(typeof env.dbs)[0]>;
    const k = tkey(1);
    const { d, lh, target, t } = leaseMoveOf(c, k);

    // Y starts first (its timestamp is below X's read); X reads k on the current leaseholder.
    const y = db.newTxn();
    const x = db.newTxn();
    await x.run(batch((q) => q.get(k)));
    const readTs = x.readTimestamp();
    expect(tsLess(y.provisionalCommitTimestamp(), readTs)).toBe(true);

    // Hold the target's engine writes from the moment its replica holds the new lease.
    const eng = c.node(t).engine;
    const write = eng.write.bind(eng);
    let gate: (() => void) | null = null;
    const held = new Promise<void>((r) => (gate = r));
    let holding = false;
    eng.write = async (b: WriteBatch, o?: WriteOptions): Promise<void> => {
      const r = c.store(t).replica(d.rangeId);
      if (gate !== null && r?.lease?.replica.replicaId === target.replicaId) {
        holding = true;
        await held;
      }
      return write(b, o);
    };
    const transfer = c.store(lh).transferLease(d.rangeId, target.replicaId);
    await until('the new lease staged on the target', () => holding);

    // Y writes k now: routed to the target, which holds the lease but has not finished applying it.
    const commit = y.commitInBatch(batch((q) => q.put(k, Buffer.from('y'))));
    await until('Y evaluated on the target', () => (c.store(t).replica(d.rangeId)?.pendingProposals ?? 0) > 0, 5_000).catch(() => undefined);
    const open = gate as (() => void) | null;
    gate = null;
    open?.();
    await transfer;
    await commit;
    eng.write = write;
    const yTs = y.provisionalCommitTimestamp();
    console.log(`X read k at ${formatTimestamp(readTs)} on n${lh + 1}; Y wrote k on the new holder n${t + 1} at ${formatTimestamp(yTs)}`);
    expect(tsLess(readTs, yTs), `Y's write at ${formatTimestamp(yTs)} landed at or below X's read at ${formatTimestamp(readTs)}`).toBe(true);
    await x.commit();
  }, 60_000);
});
