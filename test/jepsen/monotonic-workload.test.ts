/**
 * The monotonic workload's transaction against the real KV (in-process 3-node cluster,
 * real TxnCoordSender, SQL over pgwire), with another client's statements slipped in
 * just before its INSERT — the interleaving that collapsed monotonic ×
 * partition+kill+clock (RESULTS.md, session 6):
 *
 *   - another client's whole-table read in between: with the commit timestamp fixed
 *     before the INSERT (the workload's old order) the INSERT is pushed above that read
 *     and the transaction fails (40001) — every concurrent reader was fatal; the
 *     workload (fixing it after the INSERT) commits, the row carrying the timestamp it
 *     reported;
 *   - another client's committed increment in between (a real conflict): the workload's
 *     transaction fails with 40001 and nothing of it is stored.
 */
import { describe, it, expect } from 'vitest';
import pg from 'pg';
import { autoCloseClusters } from '../support/test-cluster.js';
import { withSqlPair } from './sql-pair.js';
import { monotonicWorkload } from '../../jepsen-style/workloads/monotonic.js';
import type { OpResult, SqlConn, WorkloadOptions } from '../../jepsen-style/workloads/workload.js';

const start = autoCloseClusters();
const opts: WorkloadOptions = { isolation: 'serializable', target: 'cairn', tsMode: 'cluster_logical_timestamp' };

/** `c` as the workload's SqlConn, running `before()` once just before the first INSERT is sent. */
function interleaved(c: pg.Client, before: () => Promise<void>): SqlConn {
  let done = false;
  return {
    async query(text, params) {
      if (!done && text.startsWith('INSERT')) {
        done = true;
        await before();
      }
      return c.query(text, params as unknown[]);
    },
  };
}

describe('monotonic workload (real KV)', () => {
  it('a read by another client between its read and its INSERT does not fail it; the old statement order did', () =>
    withSqlPair(start, async (a, b) => {
      await monotonicWorkload.setup(a, opts);
      // The old order: commit timestamp fixed, then another client reads the table, then the INSERT — pushed: 40001.
      await a.query('BEGIN');
      await a.query('SELECT max(val) AS m FROM monotonic');
      const ts = String((await a.query('SELECT cluster_logical_timestamp()::TEXT AS ts')).rows[0].ts);
      await b.query('SELECT max(val) FROM monotonic');
      const old = await a.query('INSERT INTO monotonic (val, sts) VALUES (0, $1)', [ts]).then(
        () => 'ok',
        (e: { code?: string }) => e.code,
      );
      await a.query('ROLLBACK');
      expect(old).toBe('40001');

      // The workload: the same interleaving commits.
      const r = (await monotonicWorkload.execute(interleaved(a, async () => void (await b.query('SELECT max(val) FROM monotonic'))), { f: 'inc', value: null }, opts)) as OpResult;
      expect(r.type, r.error).toBe('ok');
      const row = r.value as { value: number; ts: string };
      expect(row.value).toBe(0);
      expect((await b.query('SELECT val, sts FROM monotonic')).rows).toEqual([{ val: 0, sts: row.ts }]);
    }), 60_000);

  it('an increment committed by another client in between fails it (40001) and stores nothing of it', () =>
    withSqlPair(start, async (a, b) => {
      await monotonicWorkload.setup(a, opts);
      let bRow: { value: number; ts: string } | undefined;
      const r = (await monotonicWorkload.execute(
        interleaved(a, async () => {
          const rb = (await monotonicWorkload.execute(b, { f: 'inc', value: null }, opts)) as OpResult;
          expect(rb.type, rb.error).toBe('ok');
          bRow = rb.value as { value: number; ts: string };
        }),
        { f: 'inc', value: null },
        opts,
      )) as OpResult;
      expect(r.type).toBe('fail');
      expect(r.error).toMatch(/^40001/);
      expect((await b.query('SELECT val, sts FROM monotonic')).rows).toEqual([{ val: 0, sts: bRow?.ts }]);
      // And the next increment goes on from there.
      const next = (await monotonicWorkload.execute(a, { f: 'inc', value: null }, opts)) as OpResult;
      expect(next.type, next.error).toBe('ok');
      expect((next.value as { value: number }).value).toBe(1);
    }), 60_000);
});
