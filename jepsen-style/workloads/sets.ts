/**
 * sets: unique inserts into one table; reads return the whole set.
 *
 * Schema: `sets (id INT PRIMARY KEY, val INT)`, ids from a sequence of the generator.
 *   add e  → `INSERT INTO sets VALUES (e, e)` as one implicitly committed statement;
 *   read   → `SELECT val FROM sets`, value on ok: every element.
 * Reads are rare while the test runs (1 in 20) and there is one final read. Checker:
 * sets (acked adds never lost, failed adds never present, no duplicates).
 */
import { setsChecker } from '../checkers/index.js';
import type { Prng } from '../../src/util/index.js';
import { runStatement, runTxn } from './workload.js';
import type { OpGenerator, OpRequest, SqlConn, Workload } from './workload.js';

class SetsGenerator implements OpGenerator {
  private nextElem = 0;
  constructor(private readonly prng: Prng) {}
  next(): OpRequest {
    if (this.nextElem > 0 && this.prng.intn(20) === 0) return { f: 'read', value: null };
    return { f: 'add', value: this.nextElem++ };
  }
}

export const setsWorkload: Workload = {
  name: 'sets',
  tables: ['sets'],
  async setup(conn: SqlConn): Promise<void> {
    await conn.query('CREATE TABLE IF NOT EXISTS sets (id INT PRIMARY KEY, val INT NOT NULL)');
  },
  generator: (prng) => new SetsGenerator(prng),
  execute(conn, op, opts) {
    if (op.f === 'read') {
      return runTxn(conn, opts, op, true, async () => (await conn.query('SELECT val FROM sets')).rows.map((r) => Number(r['val'])));
    }
    return runStatement(conn, op, false, async () => {
      await conn.query('INSERT INTO sets (id, val) VALUES ($1, $1)', [op.value]);
      return op.value;
    });
  },
  finalOps: () => [{ f: 'read', value: null }],
  checkers: () => [setsChecker],
};
