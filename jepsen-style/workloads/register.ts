/**
 * register: per-key linearizable registers (Jepsen's "independent" cas-register test).
 *
 * Schema: `register (k INT PRIMARY KEY, v INT)`. Operations carry `key`:
 *   read        → value on ok: the value, or null when the row does not exist;
 *   write v     → UPDATE, or INSERT when the row does not exist (one transaction);
 *   cas [a, b]  → `UPDATE … SET v = b WHERE k = $k AND v = a`: ok when one row changed,
 *                 fail when none (the register did not hold a — nothing written).
 * Values are small (0–4) so reads and CASes collide. A pool of `ACTIVE_KEYS` keys is
 * active; each receives `OPS_PER_KEY` operations and is then replaced by a fresh key.
 *
 * Checker: Wing–Gong linearizability (cas-register model), split by key.
 */
import { casRegister, linearizableChecker } from '../checkers/index.js';
import type { Prng } from '../../src/util/index.js';
import { OpAbort, runTxn } from './workload.js';
import type { OpGenerator, OpRequest, SqlConn, Workload } from './workload.js';

const ACTIVE_KEYS = 4;
const OPS_PER_KEY = 200;
const VALUES = 5;

export class RegisterGenerator implements OpGenerator {
  private readonly active: number[] = [];
  private readonly count = new Map<number, number>();
  private nextKey = 0;

  constructor(
    private readonly prng: Prng,
    private readonly cas = true,
    /** Workers that only read (default none). */
    private readonly readOnly: (worker: number) => boolean = () => false,
  ) {
    for (let i = 0; i < ACTIVE_KEYS; i++) this.active.push(this.fresh());
  }

  private fresh(): number {
    const k = this.nextKey++;
    this.count.set(k, 0);
    return k;
  }

  next(_process: number, worker: number): OpRequest {
    const slot = this.prng.intn(this.active.length);
    const key = this.active[slot]!;
    const c = this.count.get(key)! + 1;
    this.count.set(key, c);
    if (c >= OPS_PER_KEY) this.active[slot] = this.fresh();
    const r = this.prng.intn(this.cas ? 3 : 2);
    if (r === 0 || this.readOnly(worker)) return { f: 'read', value: null, key };
    if (r === 1) return { f: 'write', value: this.prng.intn(VALUES), key };
    return { f: 'cas', value: [this.prng.intn(VALUES), this.prng.intn(VALUES)], key };
  }
}

export const registerWorkload: Workload = {
  name: 'register',
  tables: ['register'],
  async setup(conn: SqlConn): Promise<void> {
    await conn.query('CREATE TABLE IF NOT EXISTS register (k INT PRIMARY KEY, v INT)');
  },
  generator: (prng) => new RegisterGenerator(prng),
  execute(conn, op, opts) {
    const k = op.key as number;
    switch (op.f) {
      case 'read':
        return runTxn(conn, opts, op, true, async () => {
          const r = await conn.query('SELECT v FROM register WHERE k = $1', [k]);
          return r.rows.length === 0 ? null : Number(r.rows[0]!['v']);
        });
      case 'write':
        return runTxn(conn, opts, op, false, async () => {
          const u = await conn.query('UPDATE register SET v = $2 WHERE k = $1', [k, op.value]);
          if (u.rowCount === 0) await conn.query('INSERT INTO register (k, v) VALUES ($1, $2)', [k, op.value]);
          return op.value;
        });
      default: {
        const [from, to] = op.value as [number, number];
        return runTxn(conn, opts, op, false, async () => {
          const u = await conn.query('UPDATE register SET v = $3 WHERE k = $1 AND v = $2', [k, from, to]);
          if (u.rowCount === 0) throw new OpAbort(`cas: register ${k} did not hold ${from}`);
          return op.value;
        });
      }
    }
  },
  finalOps: () => [],
  checkers: () => [linearizableChecker(casRegister, { deadlineMs: 120_000 })],
};
