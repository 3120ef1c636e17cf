/**
 * append: Elle's list-append workload, the core of the suite.
 *
 * Schema: `append0 … append{T-1}` (T = 3), each `(k INT PRIMARY KEY, v TEXT)`; key k lives
 * in table `append{k mod T}`, so one transaction touches several tables (ranges). A list
 * is stored as comma-separated text: "3,7,12".
 *
 * Generator: a pool of `HOT_KEYS` active keys; each transaction has 1–4 micro-ops, each a
 * read `['r', k, null]` or an append `['append', k, v]` of the key's next unique value
 * (1, 2, 3, … per key). A key that reached `MAX_APPENDS` appends is retired and replaced
 * by a fresh key, so lists stay short and version orders stay decidable.
 *
 * Execution: one transaction; a read is `SELECT v`, an append is an UPDATE that
 * concatenates, or an INSERT when the row does not exist yet. Final reads: one read-only
 * transaction listing every key ever used.
 *
 * Checker: elle-append (serializable; strict-serializable reported alongside).
 */
import { elleAppendChecker } from '../checkers/index.js';
import type { MicroOp } from '../checkers/index.js';
import type { Prng } from '../../src/util/index.js';
import { runTxn, tableOf } from './workload.js';
import type { OpGenerator, OpRequest, SqlConn, Workload, WorkloadOptions } from './workload.js';

const TABLES = 3;
const HOT_KEYS = 6;
const MAX_APPENDS = 256;

export class AppendGenerator implements OpGenerator {
  private readonly active: number[] = [];
  private readonly appends = new Map<number, number>();
  private nextKey = 0;
  readonly used: number[] = [];

  constructor(private readonly prng: Prng) {
    for (let i = 0; i < HOT_KEYS; i++) this.active.push(this.fresh());
  }

  private fresh(): number {
    const k = this.nextKey++;
    this.used.push(k);
    this.appends.set(k, 0);
    return k;
  }

  next(): OpRequest {
    const n = 1 + this.prng.intn(4);
    const mops: MicroOp[] = [];
    for (let i = 0; i < n; i++) {
      const slot = this.prng.intn(this.active.length);
      const k = this.active[slot]!;
      if (this.prng.bool()) {
        mops.push(['r', k, null]);
        continue;
      }
      const v = this.appends.get(k)! + 1;
      this.appends.set(k, v);
      mops.push(['append', k, v]);
      if (v >= MAX_APPENDS) this.active[slot] = this.fresh();
    }
    return { f: 'txn', value: mops };
  }
}

function parseList(v: unknown): number[] | null {
  if (v === null || v === undefined) return null;
  const s = String(v);
  return s === '' ? [] : s.split(',').map(Number);
}

async function executeMops(conn: SqlConn, mops: readonly MicroOp[]): Promise<MicroOp[]> {
  const out: MicroOp[] = [];
  for (const m of mops) {
    const k = m[1] as number;
    const t = tableOf('append', k, TABLES);
    if (m[0] === 'r') {
      const r = await conn.query(`SELECT v FROM ${t} WHERE k = $1`, [k]);
      out.push(['r', k, r.rows.length === 0 ? null : parseList(r.rows[0]!['v'])]);
      continue;
    }
    const v = String(m[2]);
    const u = await conn.query(`UPDATE ${t} SET v = v || ',' || $2 WHERE k = $1`, [k, v]);
    if (u.rowCount === 0) await conn.query(`INSERT INTO ${t} (k, v) VALUES ($1, $2)`, [k, v]);
    out.push(m);
  }
  return out;
}

export const appendWorkload: Workload = {
  name: 'append',
  tables: ['append0', 'append1', 'append2'],
  async setup(conn: SqlConn): Promise<void> {
    for (let i = 0; i < TABLES; i++) await conn.query(`CREATE TABLE IF NOT EXISTS append${i} (k INT PRIMARY KEY, v TEXT)`);
  },
  generator: (prng) => new AppendGenerator(prng),
  execute(conn, op, opts: WorkloadOptions) {
    const mops = op.value as readonly MicroOp[];
    const readOnly = mops.every((m) => m[0] === 'r');
    return runTxn(conn, opts, op, readOnly, () => executeMops(conn, mops));
  },
  finalOps(gen) {
    const used = (gen as AppendGenerator).used;
    return [{ f: 'txn', value: used.map((k): MicroOp => ['r', k, null]) }];
  },
  checkers: () => [elleAppendChecker({ consistencyModel: 'serializable' })],
};
