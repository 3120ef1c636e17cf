/**
 * g2: anti-dependency cycles (Jepsen's CockroachDB "g2" test).
 *
 * Schema: `g2a`, `g2b` (id INT PRIMARY KEY, k INT, v INT). For each key two operations
 * are generated back to back (so two clients run them concurrently): each, in one
 * transaction, reads "any row with this k in g2a or g2b?" and, seeing none, inserts its
 * row — the first into g2a, the second into g2b. Seeing a row aborts (fail, nothing
 * written). Serializability allows at most one commit per key. Checker: g2.
 */
import { g2Checker } from '../checkers/index.js';
import type { Prng } from '../../src/util/index.js';
import { OpAbort, runTxn } from './workload.js';
import type { OpGenerator, OpRequest, SqlConn, Workload } from './workload.js';

class G2Generator implements OpGenerator {
  private n = 0;
  constructor(_prng: Prng) {}
  next(): OpRequest {
    const id = this.n++;
    return { f: 'insert', value: [id >> 1, id] };
  }
}

export const g2Workload: Workload = {
  name: 'g2',
  tables: ['g2a', 'g2b'],
  async setup(conn: SqlConn): Promise<void> {
    for (const t of ['g2a', 'g2b']) await conn.query(`CREATE TABLE IF NOT EXISTS ${t} (id INT PRIMARY KEY, k INT, v INT)`);
  },
  generator: (prng) => new G2Generator(prng),
  execute(conn, op, opts) {
    const [k, id] = op.value as [number, number];
    return runTxn(conn, opts, op, false, async () => {
      const a = await conn.query('SELECT id FROM g2a WHERE k = $1', [k]);
      const b = await conn.query('SELECT id FROM g2b WHERE k = $1', [k]);
      if (a.rows.length + b.rows.length > 0) throw new OpAbort(`g2: key ${k} already has a row`);
      await conn.query(`INSERT INTO ${id % 2 === 0 ? 'g2a' : 'g2b'} (id, k, v) VALUES ($1, $2, $3)`, [id, k, id]);
      return op.value;
    });
  },
  finalOps: () => [],
  checkers: () => [g2Checker],
};
