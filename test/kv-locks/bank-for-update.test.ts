/**
 * Bank with SELECT FOR UPDATE (issue 5: lock table, deadlock detection):
 * concurrent transfers between 6 accounts on 3 ranges of a 3-node
 * in-process cluster, each transfer locking both accounts with locking gets
 * in opposite orders — so transfers queue in the leaseholders' lock tables
 * and form waits-for cycles across ranges, which the pushers must break.
 * Every scan of all accounts sees the same total; the final balances equal
 * the committed transfers; every transfer finishes (liveness).
 */
import { describe, it, expect } from 'vitest';
import { Prng } from '../../src/util/prng.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch } from '../kv-txn/support.js';
import { heldLocks, until } from './support.js';

const start = autoCloseClusters();
const N = 6;
const INITIAL = 100;
const enc = (n: number): Buffer => Buffer.from(String(n));
const dec = (b: Buffer | null | undefined): number => (b == null ? 0 : Number(b.toString()));
const value = (r: unknown): Buffer | null => (r as { value: Buffer | null }).value;

describe('bank with FOR UPDATE', () => {
  it('locking transfers in opposite orders keep the total, finish, and break their deadlocks', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(2), tkey(4)] });
    const dbs = env.dbs as TxnDB[];
    await (dbs[0] as TxnDB).runTxn((t) => t.commitInBatch(batch((b) => Array.from({ length: N }, (_, i) => b.put(tkey(i), enc(INITIAL))))));
    const expected = Array.from({ length: N }, () => INITIAL);
    let stop = false;
    let checks = 0;
    const checker = async (): Promise<void> => {
      while (!stop) {
        const total = await (dbs[2] as TxnDB).runTxn(async (t) => {
          const r = await t.run(batch((b) => b.scan(tkey(0), tkey(N))));
          return (r[0] as unknown as { rows: { value: Buffer }[] }).rows.reduce((a, kv) => a + dec(kv.value), 0);
        });
        expect(total).toBe(N * INITIAL);
        checks++;
      }
    };
    const worker = async (w: number): Promise<void> => {
      const rng = new Prng(500 + w);
      for (let i = 0; i < 6; i++) {
        const from = rng.intn(N);
        const to = (from + 1 + rng.intn(N - 1)) % N;
        const amount = 1 + rng.intn(10);
        const moved = await (dbs[w % 3] as TxnDB).runTxn(async (t) => {
          // One locking get per batch, source first: two transfers between the same accounts in opposite
          // directions deadlock.
          const a = dec(value((await t.run(batch((b) => b.get(tkey(from), 'exclusive'))))[0]));
          const c = dec(value((await t.run(batch((b) => b.get(tkey(to), 'exclusive'))))[0]));
          if (a < amount) return 0;
          await t.commitInBatch(
            batch((b) => {
              b.put(tkey(from), enc(a - amount));
              b.put(tkey(to), enc(c + amount));
            }),
          );
          return amount;
        });
        expected[from] = (expected[from] as number) - moved;
        expected[to] = (expected[to] as number) + moved;
      }
    };
    const check = checker();
    await Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)));
    stop = true;
    await check;
    expect(checks).toBeGreaterThan(0);
    const final = await (dbs[0] as TxnDB).runTxn(async (t) => {
      const r = await t.run(batch((b) => b.scan(tkey(0), tkey(N))));
      return (r[0] as unknown as { rows: { value: Buffer }[] }).rows.map((kv) => dec(kv.value));
    });
    expect(final).toEqual(expected);
    // No lock outlives its transaction (the last commits' resolution is asynchronous).
    await until('every lock to be released', () => heldLocks(env.c) === 0);
  }, 120_000);
});
