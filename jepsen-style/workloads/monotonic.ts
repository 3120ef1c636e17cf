/**
 * monotonic: each transaction reads the maximum and inserts max + 1 with its commit
 * timestamp (Jepsen's CockroachDB "monotonic" test).
 *
 * Schema: `monotonic (val INT PRIMARY KEY, sts TEXT)`.
 *   inc  → one transaction: `SELECT max(val)`, INSERT max + 1, then (Cairn) fix and
 *          store the commit timestamp in the row; value on ok `{ value, ts }`.
 *   read → the final read: every row `{ value, ts }`.
 * Order of the inc's statements: cluster_logical_timestamp() fixes the commit
 * timestamp, after which any push fails the transaction (40001). Read before the
 * INSERT (as this workload did until session 6), it made every other client's
 * whole-table read that landed between this transaction's start and its INSERT fatal
 * to it (the read enters the timestamp cache above it; the INSERT is pushed), and each
 * failed client started a new read at once: commits fell to a few per 20 s when
 * statement latency grew (monotonic × partition+kill+clock, RESULTS.md). Read after
 * the INSERT — `UPDATE … SET sts = cluster_logical_timestamp() … RETURNING`, one
 * statement — an INSERT pushed by mere reads is refreshed and lands above them, and
 * only a concurrent committed insert (a real conflict) fails it; the row still carries
 * the timestamp the transaction commits at or fails.
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
      await conn.query('INSERT INTO monotonic (val, sts) VALUES ($1, NULL)', [value]);
      let sts: unknown = null;
      if (opts.tsMode === 'cluster_logical_timestamp') {
        sts = (await conn.query('UPDATE monotonic SET sts = cluster_logical_timestamp()::TEXT WHERE val = $1 RETURNING sts', [value])).rows[0]!['sts'];
      }
      return rowOf(value, sts, opts);
    });
  },
  finalOps: () => [{ f: 'read', value: null }],
  checkers: () => [monotonicChecker],
};
