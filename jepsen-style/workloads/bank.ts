/**
 * bank: money moves between accounts spread across two tables, never created or destroyed.
 *
 * Schema: `bank_a`, `bank_b` (id INT PRIMARY KEY, balance INT); account i lives in
 * `bank_a` when i is even, `bank_b` when odd; `ACCOUNTS` accounts start with `INITIAL`.
 *   transfer {from, to, amount} → one transaction: read both balances; if `from` cannot
 *            pay, abort (fail, nothing written); else write both.
 *   read                       → one transaction reading both tables; value on ok:
 *                                `{ [id]: balance }`.
 * Final reads: two reads after healing. Checker: bank (every read sums to the total; no
 * negative balances; final reads agree, and match initial + ok transfers when no
 * transfer is indeterminate).
 */
import { bankChecker } from '../checkers/index.js';
import type { Prng } from '../../src/util/index.js';
import { OpAbort, runTxn } from './workload.js';
import type { OpGenerator, OpRequest, SqlConn, Workload } from './workload.js';

const ACCOUNTS = 8;
const INITIAL = 10;

function table(id: number): string {
  return id % 2 === 0 ? 'bank_a' : 'bank_b';
}

class BankGenerator implements OpGenerator {
  constructor(private readonly prng: Prng) {}
  next(): OpRequest {
    if (this.prng.intn(4) === 0) return { f: 'read', value: null };
    const from = this.prng.intn(ACCOUNTS);
    const to = (from + 1 + this.prng.intn(ACCOUNTS - 1)) % ACCOUNTS;
    return { f: 'transfer', value: { from, to, amount: 1 + this.prng.intn(5) } };
  }
}

async function readAll(conn: SqlConn): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of ['bank_a', 'bank_b']) {
    const r = await conn.query(`SELECT id, balance FROM ${t}`);
    for (const row of r.rows) out[String(row['id'])] = Number(row['balance']);
  }
  return out;
}

async function balanceOf(conn: SqlConn, id: number): Promise<number> {
  const r = await conn.query(`SELECT balance FROM ${table(id)} WHERE id = $1`, [id]);
  if (r.rows.length === 0) throw new OpAbort(`bank: account ${id} missing`);
  return Number(r.rows[0]!['balance']);
}

export const bankWorkload: Workload = {
  name: 'bank',
  tables: ['bank_a', 'bank_b'],
  async setup(conn: SqlConn): Promise<void> {
    for (const t of ['bank_a', 'bank_b']) await conn.query(`CREATE TABLE IF NOT EXISTS ${t} (id INT PRIMARY KEY, balance INT NOT NULL)`);
    for (let i = 0; i < ACCOUNTS; i++) await conn.query(`INSERT INTO ${table(i)} (id, balance) VALUES ($1, $2)`, [i, INITIAL]);
  },
  generator: (prng) => new BankGenerator(prng),
  execute(conn, op, opts) {
    if (op.f === 'read') return runTxn(conn, opts, op, true, () => readAll(conn));
    const { from, to, amount } = op.value as { from: number; to: number; amount: number };
    return runTxn(conn, opts, op, false, async () => {
      const a = await balanceOf(conn, from);
      const b = await balanceOf(conn, to);
      if (a < amount) throw new OpAbort(`bank: account ${from} holds ${a} < ${amount}`);
      await conn.query(`UPDATE ${table(from)} SET balance = $2 WHERE id = $1`, [from, a - amount]);
      await conn.query(`UPDATE ${table(to)} SET balance = $2 WHERE id = $1`, [to, b + amount]);
      return op.value;
    });
  },
  // Marked 'final' for the checker: run after healing, when every transfer's outcome is settled.
  finalOps: () => [
    { f: 'read', value: 'final' },
    { f: 'read', value: 'final' },
  ],
  checkers() {
    const initial: Record<string, number> = {};
    const accounts: number[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      initial[String(i)] = INITIAL;
      accounts.push(i);
    }
    return [bankChecker({ total: ACCOUNTS * INITIAL, accounts, initial })];
  },
};
