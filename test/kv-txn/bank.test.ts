/**
 * Bank: concurrent transfers between 10 accounts on 3 ranges of a 3-node
 * in-process cluster (real Raft over TCP), with one node stopped and
 * restarted mid-run — the in-process, KV-level twin of the multi-process
 * bank test over SQL (test/kv-txn-multiproc/bank.test.ts, real processes,
 * SIGKILL). Every read of all accounts sees the same total; the final
 * balances equal the initial ones plus the committed transfers.
 */
import { describe, it, expect } from 'vitest';
import { CairnError } from '../../src/util/errors.js';
import { Prng } from '../../src/util/prng.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch } from './support.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';

const start = autoCloseClusters();
const N = 10;
const INITIAL = 1000;
const enc = (n: number): Buffer => Buffer.from(String(n));
const dec = (b: Buffer | null | undefined): number => (b == null ? 0 : Number(b.toString()));

describe('bank', () => {
  it('transfers keep the total through a node stop/restart; final balances match the committed transfers', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(3), tkey(6)] });
    const { c, dbs } = env;
    await (dbs[0] as TxnDB).runTxn(async (t) => {
      await t.run(batch((b) => Array.from({ length: N }, (_, i) => b.put(tkey(i), enc(INITIAL)))));
    });
    const expected = Array.from({ length: N }, () => INITIAL);
    let ambiguous = 0;
    let transfers = 0;
    let reads = 0;
    let stop = false;
    const readAll = async (db: TxnDB): Promise<number[]> => {
      return db.runTxn(async (t) => {
        const r = await t.run(batch((b) => b.scan(tkey(0), tkey(N))));
        const rows = (r[0] as unknown as { rows: { key: Buffer; value: Buffer }[] }).rows;
        return rows.map((kv) => dec(kv.value));
      });
    };
    const worker = async (w: number): Promise<void> => {
      const rng = new Prng(77 + w);
      while (!stop) {
        // Clients of the stopped node's TxnDB would fail: use the nodes that run.
        const db = dbs[[0, 1][w % 2] as number] as TxnDB;
        const from = rng.intn(N);
        const to = (from + 1 + rng.intn(N - 1)) % N;
        const amount = 1 + rng.intn(20);
        try {
          const moved = await db.runTxn(async (t) => {
            const r = await t.run(batch((b) => {
              b.get(tkey(from));
              b.get(tkey(to));
            }));
            const a = dec((r[0] as { value: Buffer | null }).value);
            const bb = dec((r[1] as { value: Buffer | null }).value);
            if (a < amount) return 0;
            await t.commitInBatch(batch((b) => {
              b.put(tkey(from), enc(a - amount));
              b.put(tkey(to), enc(bb + amount));
            }));
            return amount;
          });
          expected[from] = (expected[from] as number) - moved;
          expected[to] = (expected[to] as number) + moved;
          transfers++;
        } catch (e) {
          if (e instanceof CairnError && e.ambiguous) ambiguous++;
          else if (!(e instanceof CairnError && e.retryable)) throw e;
        }
      }
    };
    const reader = async (): Promise<void> => {
      while (!stop) {
        try {
          const bal = await readAll(dbs[1] as TxnDB);
          expect(bal.reduce((a, x) => a + x, 0)).toBe(N * INITIAL);
          reads++;
        } catch (e) {
          if (!(e instanceof CairnError && (e.retryable || e.ambiguous))) throw e;
        }
      }
    };
    const t0 = Date.now();
    const running = [...Array.from({ length: 6 }, (_, w) => worker(w)), reader()];
    // Each phase lasts until its condition holds (bounded), not a fixed time: under a load average
    // above 30 a fixed 2 s with n3 down sometimes saw no transfer at all — the leases n3 held had
    // not expired yet — while on a quiet machine the conditions hold well within the old windows.
    const transfersAtLeast = (n: number, what: string): Promise<void> => c.waitFor(() => transfers >= n, 30_000, what);
    let duringStop = 0;
    let downMs = 0;
    try {
      await transfersAtLeast(5, 'transfers before the stop');
      const before = transfers;
      await c.stopNode(2);
      const tStop = Date.now();
      await transfersAtLeast(before + 3, 'transfers while n3 is down');
      duringStop = transfers - before;
      downMs = Date.now() - tStop;
      await c.restartNode(2);
      await transfersAtLeast(transfers + 5, 'transfers after n3 restarted');
      await c.waitFor(() => reads > 0, 30_000, 'a consistent full read');
    } finally {
      stop = true;
      await Promise.all(running);
    }
    const final = await readAll(dbs[0] as TxnDB);
    console.log(`bank: ${transfers} transfers (${duringStop} while n3 was down for ${downMs} ms), ${reads} consistent full reads, ${ambiguous} ambiguous, ${Date.now() - t0} ms`);
    expect(final.reduce((a, x) => a + x, 0)).toBe(N * INITIAL);
    if (ambiguous === 0) expect(final).toEqual(expected);
    expect(transfers).toBeGreaterThan(10);
    expect(duringStop).toBeGreaterThan(0);
    expect(reads).toBeGreaterThan(0);
  }, 150_000);
});
