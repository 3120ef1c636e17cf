/**
 * monotonic: each transaction reads the maximum and inserts max + 1 with its commit
 * timestamp (Jepsen's CockroachDB "monotonic" test).
 *
 * Schema: `monotonic (val INT PRIMARY KEY, sts TEXT)`.
 *   inc  → one transaction: `SELECT max(val)`, then INSERT max + 1 with the commit
 *          timestamp; value on ok `{ value, ts }`.
 *   read → the final read: every row `{ value, ts }`.
 * Timestamps (`tsMode`): with Cairn, `cluster_logical_timestamp()` read inside the
 * transaction (CockroachDB's commit timestamp, "wall.logical" decimal text); where the
 * SQL layer lacks it (and on PostgreSQL, which has no commit timestamp a transaction can
 * read) the value itself stands for the timestamp — then the regression check is vacuous
 * and only duplicates, lost rows and real-time order are checked (results.json says so).
 */
import { monotonicChecker } from '../checkers/index.js';
import type { MonotonicRow } from '../checkers/index.js';
import type { Prng } from '../../src/util/index.js';
import { runTxn } from './workload.js';
import type { OpGenerator, OpRequest, SqlConn, Workload, WorkloadOptions } from './workload.js';

class MonotonicGenerator implements OpGenerator {
  constructor(_prng: Prng) {}
  next(): OpRequest {
    return { f: 'inc', value: null };
  }
}

function rowOf(value: number, sts: unknown, opts: WorkloadOptions): MonotonicRow {
  return { value, ts: opts.tsMode === 'cluster_logical_timestamp' ? String(sts) : value };
}

export const monotonicWorkload: Workload = {
  name: 'monotonic',
  tables: ['monotonic'],
  async setup(conn: SqlConn): Promise<void> {
    await conn.query('CREATE TABLE IF NOT EXISTS monotonic (val INT PRIMARY KEY, sts TEXT)');
  },
  generator: (prng) => new MonotonicGenerator(prng),
  execute(conn, op, opts) {
    if (op.f === 'read') {
      return runTxn(conn, opts, op, true, async () => {
        const r = await conn.query('SELECT val, sts FROM monotonic');
        return r.rows.map((row) => rowOf(Number(row['val']), row['sts'], opts));
      });
    }
    return runTxn(conn, opts, op, false, async () => {
      const m = await conn.query('SELECT max(val) AS m FROM monotonic');
      const raw = m.rows[0]?.['m'];
      const value = raw === null || raw === undefined ? 0 : Number(raw) + 1;
      let sts: unknown = null;
      if (opts.tsMode === 'cluster_logical_timestamp') {
        sts = (await conn.query('SELECT cluster_logical_timestamp()::TEXT AS ts')).rows[0]!['ts'];
      }
      await conn.query('INSERT INTO monotonic (val, sts) VALUES ($1, $2)', [value, sts === null ? null : String(sts)]);
      return rowOf(value, sts, opts);
    });
  },
  finalOps: () => [{ f: 'read', value: null }],
  checkers: () => [monotonicChecker],
};
