/**
 * Parallel commit is one consensus round: on a 3-node cluster a
 * transaction writing to two ranges commits (STAGING record + both writes in
 * parallel, acknowledged on the implicit commit) within 1.3× of the latency
 * of a transaction writing twice to one range (1PC). Medians over many
 * sequential transactions; both printed.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch } from './support.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';

const start = autoCloseClusters();

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

describe('parallel commit', () => {
  it('a 2-range commit costs one consensus round, like a 1-range (1PC) commit', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(500)] });
    const db = env.dbs[0] as TxnDB;
    const one: number[] = [];
    const two: number[] = [];
    const run = async (i: number, keys: [number, number]): Promise<number> => {
      const t = db.newTxn();
      const t0 = performance.now();
      await t.commitInBatch(batch((b) => {
        b.put(tkey(keys[0]), Buffer.from(`v${i}`));
        b.put(tkey(keys[1]), Buffer.from(`v${i}`));
      }));
      const dt = performance.now() - t0;
      await db.resolver.drain();
      await new Promise((r) => setTimeout(r, 5));
      return dt;
    };
    for (let i = 0; i < 10; i++) await run(i, [i, 600 + i]); // warm-up
    for (let i = 0; i < 150; i++) {
      // Interleaved, so that machine noise hits both alike.
      one.push(await run(i, [10 + i, 100 + i]));
      two.push(await run(i, [200 + i, 700 + i]));
    }
    const m1 = median(one);
    const m2 = median(two);
    const par = db.metrics.parallelCommits;
    console.log(JSON.stringify(db.metrics));
    console.log(`commit latency (median of 150): 1 range (1PC) ${m1.toFixed(2)} ms, 2 ranges (parallel commit) ${m2.toFixed(2)} ms, ratio ${(m2 / m1).toFixed(2)}; parallel commits ${par}, 1PC ${db.metrics.onePhaseCommits}`);
    expect(par).toBeGreaterThanOrEqual(150);
    expect(m2 / m1).toBeLessThanOrEqual(1.3);
  }, 60_000);
});
