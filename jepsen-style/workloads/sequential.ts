/**
 * sequential: one writer per key group inserts the group's keys in order; readers read
 * them in reverse (Jepsen's CockroachDB "sequential" test).
 *
 * Schema: `seq0 … seq{T-1}` (T = 4), `(g INT, i INT, PRIMARY KEY (g, i))`; key i of a
 * group lives in table `seq{i mod T}`, so consecutive keys sit on different ranges.
 *   write [g, i]  → insert row (g, i), one implicitly committed statement. Even workers
 *                   are writers: each owns one group at a time and writes i = 0 … N-1,
 *                   each write invoked after the previous completed, then a new group.
 *   read [g, _]   → odd workers: for a recent group, read key N-1 down to 0, each its own
 *                   statement; value on ok `[g, present]`.
 * Checker: sequential (no key seen while an earlier-completed key is missing; no stale
 * reads of completed writes).
 */
import { sequentialChecker } from '../checkers/index.js';
import type { Prng } from '../../src/util/index.js';
import { runStatement } from './workload.js';
import type { OpGenerator, OpRequest, SqlConn, Workload } from './workload.js';

const TABLES = 4;
const KEYS_PER_GROUP = 5;

class SequentialGenerator implements OpGenerator {
  private nextGroup = 0;
  private readonly writer = new Map<number, { g: number; i: number }>();
  private readonly recent: number[] = [];

  constructor(
    private readonly prng: Prng,
    private readonly concurrency: number,
  ) {}

  next(_process: number, worker: number): OpRequest {
    const isWriter = worker % 2 === 0 || this.concurrency === 1;
    if (!isWriter && this.recent.length > 0) {
      const g = this.recent[this.prng.intn(this.recent.length)]!;
      return { f: 'read', value: [g, null] };
    }
    let w = this.writer.get(worker);
    if (w === undefined || w.i >= KEYS_PER_GROUP) {
      w = { g: this.nextGroup++, i: 0 };
      this.writer.set(worker, w);
      this.recent.push(w.g);
      if (this.recent.length > 8) this.recent.shift();
    }
    return { f: 'write', value: [w.g, w.i++] };
  }
}

export const sequentialWorkload: Workload = {
  name: 'sequential',
  tables: ['seq0', 'seq1', 'seq2', 'seq3'],
  async setup(conn: SqlConn): Promise<void> {
    for (let t = 0; t < TABLES; t++) await conn.query(`CREATE TABLE IF NOT EXISTS seq${t} (g INT, i INT, PRIMARY KEY (g, i))`);
  },
  generator: (prng, concurrency) => new SequentialGenerator(prng, concurrency),
  execute(conn, op) {
    const [g, i] = op.value as [number, number | null];
    if (op.f === 'write') {
      return runStatement(conn, op, false, async () => {
        await conn.query(`INSERT INTO seq${i! % TABLES} (g, i) VALUES ($1, $2)`, [g, i]);
        return op.value;
      });
    }
    return runStatement(conn, op, true, async () => {
      const present: boolean[] = [];
      for (let k = KEYS_PER_GROUP - 1; k >= 0; k--) {
        const r = await conn.query(`SELECT i FROM seq${k % TABLES} WHERE g = $1 AND i = $2`, [g, k]);
        present[k] = r.rows.length > 0;
      }
      return [g, present];
    });
  },
  finalOps: () => [],
  checkers: () => [sequentialChecker],
};
