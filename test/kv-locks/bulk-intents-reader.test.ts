/**
 * A reader behind a finished bulk writer's intents (issue 7: a count(*)
 * after a 100,000-row COPY whose coordinator did not resolve everything).
 *
 * The leaseholder's waiter hands a blocker to its client after a few push
 * delays (concurrency-manager.ts). It used to name only the one key it
 * waited at: the client pushed, resolved that single intent and resent, and
 * the scan queued at the next intent — ≥ 300 ms and a push per intent, about
 * half an hour for 1,500 intents on a loaded machine. Now it names every
 * intent of that blocker in the request's way (LockTable.intentsHeldBy): one
 * push, one batched resolution.
 *
 * The writer's coordinator stands for one that died right after its commit
 * was acknowledged: its sender swallows the asynchronous resolution batches,
 * so the intents outside the record's range stay for readers to resolve.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { batch, startTxnCluster, tkey } from '../kv-txn/support.js';
import { TxnDB } from '../../src/kv/client/txn-db.js';
import { Prng } from '../../src/util/prng.js';
import type { Sender } from '../../src/kv/kv-client.js';
import type { BatchRequest, BatchResponse } from '../../src/kv/api.js';

const start = autoCloseClusters();

const N = 6000;
/** N keys inside the range [tkey(10), tkey(20)), apart from the writer's anchor tkey(1) in the first range. */
const bulkKey = (i: number): Buffer => Buffer.concat([tkey(15), Buffer.from(String(i).padStart(5, '0'))]);

/** A sender that never delivers intent resolution (its coordinator is gone); everything else passes. */
function withoutResolution(s: Sender): Sender {
  return {
    send(ba: BatchRequest): Promise<BatchResponse> {
      if (ba.requests.length > 0 && ba.requests.every((q) => q.kind === 'resolveIntent' || q.kind === 'resolveIntentRange')) return new Promise<never>(() => undefined);
      return s.send(ba);
    },
  };
}

describe('a reader behind a committed bulk writer’s unresolved intents', () => {
  it('resolves them with a handful of pushes, not one per intent', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(10), tkey(20)] });
    const writerDb = new TxnDB({ sender: withoutResolution(env.ds[0]!), clock: env.c.node(0).clock, nodeId: 1, prng: new Prng(7) });
    const w = writerDb.newTxn();
    await w.run(batch((b) => b.put(tkey(1), Buffer.from('anchor'))));
    for (let i = 0; i < N; i += 400) {
      await w.run(
        batch((b) => {
          for (let j = i; j < Math.min(N, i + 400); j++) b.put(bulkKey(j), Buffer.from(`v${j}`));
        }),
      );
    }
    await w.commit();

    const reader = env.dbs[1]!;
    const pushesBefore = reader.pusher.metrics.pushes;
    const t0 = Date.now();
    const r = reader.newTxn();
    const [res] = await r.run(batch((b) => b.scan(tkey(10), tkey(20))));
    await r.commit();
    const rows = (res as { rows: readonly { value: Buffer }[] }).rows;
    const pushes = reader.pusher.metrics.pushes - pushesBefore;
    console.log(`scan of ${rows.length} rows behind ${N} committed intents: ${pushes} pushes, ${Date.now() - t0} ms`);
    expect(rows.length).toBe(N);
    expect(rows[N - 1]!.value.toString()).toBe(`v${N - 1}`);
    // One push per blocker hand-off: before, one per intent (≥ N).
    expect(pushes).toBeLessThan(10);
  }, 120_000);
});
