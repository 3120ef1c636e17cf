// Pre-splitting usertable on a 3-node cluster of real processes (issue 8):
// the loader's SQL ALTER TABLE … SPLIT AT + SCATTER, a load whose batches each
// stay in one range (loadPlan) with every row readable afterwards, then
// bench/support/scatter.ts balancing the table's lease counts over the nodes
// through their HTTP admin hooks (and splitTable's HTTP splits). Needs dist/
// (npm test builds first).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startCairn, type CairnCluster } from '../../bench/support/cluster.js';
import { scatterTable, splitAndScatter } from '../../bench/support/scatter.js';
import { initYcsb, keyName, splitKeys } from '../../src/workload/index.js';

describe('pre-split and scatter (bench/support/scatter.ts)', () => {
  let c: CairnCluster;
  beforeAll(async () => {
    c = await startCairn(3);
  }, 150_000);
  afterAll(async () => {
    await c?.stop();
  });

  it('splits usertable into 6 ranges, balances their leases, and loads 1,200 rows range by range', async () => {
    const RECORDS = 1200;
    const lines: string[] = [];
    const load = await initYcsb({ urls: c.urls, drop: true, insertCount: RECORDS, concurrency: 3, batchSize: 50, splits: 6 }, { output: { write: (s) => void lines.push(s) } });
    expect(lines.filter((l) => l.startsWith('notice'))).toEqual([]);
    expect(load.rows).toBe(RECORDS);
    expect(load.splitKeys).toEqual(splitKeys(RECORDS, 6));

    const after = await scatterTable(c, 'usertable', { stableRounds: 2, intervalMs: 500, timeoutMs: 60_000 });
    expect(after.ranges).toBe(6);
    expect(after.balanced).toBe(true);
    for (const n of Object.values(after.leasesByNode)) expect(n).toBe(2);

    const client = new pg.Client({ connectionString: c.urls[1] });
    await client.connect();
    try {
      const r = await client.query<{ n: string }>('SELECT count(*) AS n FROM usertable');
      expect(Number(r.rows[0]?.n)).toBe(RECORDS);
      const one = await client.query('SELECT ycsb_key FROM usertable WHERE ycsb_key = $1', [keyName(RECORDS - 1)]);
      expect(one.rows).toEqual([{ ycsb_key: keyName(RECORDS - 1) }]);
    } finally {
      await client.end();
    }
  }, 240_000);

  it('splits through the HTTP admin hook too (splitAndScatter), one more range per key', async () => {
    const r = await splitAndScatter(c, 'usertable', [keyName(7), keyName(8)].sort(), 60_000);
    expect(r.ranges).toBeGreaterThanOrEqual(7);
    expect(r.balanced).toBe(true);
  }, 120_000);
});
