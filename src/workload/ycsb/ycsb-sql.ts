/**
 * The SQL the YCSB tool sends, and the three ways of sending it:
 *
 *   prepare    named prepared statements (Parse once per connection, then
 *              Bind/Execute) — the default;
 *   noprepare  the extended protocol with the unnamed statement (Parse on
 *              every execution);
 *   simple     the simple query protocol, parameters inlined as SQL literals
 *              (strings quoted with '' doubling: standard_conforming_strings).
 *
 * Every statement is a fixed text with $n placeholders; `simple` splits the
 * text at its placeholders once and splices literals in per execution.
 *
 * Schema: usertable(ycsb_key VARCHAR(255) PRIMARY KEY, field0 … field9 TEXT).
 */
import type { Client } from 'pg';
import { FIELD_COUNT } from './field-generator.js';
import { WorkloadError } from './workload-spec.js';

export type QueryMethod = 'prepare' | 'noprepare' | 'simple';

export function parseMethod(s: string): QueryMethod {
  if (s === 'prepare' || s === 'noprepare' || s === 'simple') return s;
  throw new WorkloadError('bad_flag', `unknown method "${s}" (prepare, noprepare or simple)`);
}

export const TABLE = 'usertable';
export const FIELD_NAMES: readonly string[] = Array.from({ length: FIELD_COUNT }, (_, i) => `field${i}`);

export const CREATE_TABLE_SQL =
  `CREATE TABLE ${TABLE} (ycsb_key VARCHAR(255) PRIMARY KEY NOT NULL, ` +
  FIELD_NAMES.map((f) => `${f} TEXT NOT NULL`).join(', ') +
  ')';
export const DROP_TABLE_SQL = `DROP TABLE IF EXISTS ${TABLE}`;

/**
 * INSERT of `rows` rows with parameters $1… (11 per row); `idempotent` adds
 * ON CONFLICT (ycsb_key) DO NOTHING (the loader's retry of a batch whose
 * outcome was ambiguous: its rows may already be there, identical).
 */
export function insertSql(rows: number, idempotent = false): string {
  const cols = 1 + FIELD_COUNT;
  const tuples: string[] = [];
  for (let r = 0; r < rows; r++) {
    const ps: string[] = [];
    for (let c = 1; c <= cols; c++) ps.push(`$${r * cols + c}`);
    tuples.push(`(${ps.join(', ')})`);
  }
  return `INSERT INTO ${TABLE} (ycsb_key, ${FIELD_NAMES.join(', ')}) VALUES ${tuples.join(', ')}${idempotent ? ' ON CONFLICT (ycsb_key) DO NOTHING' : ''}`;
}

/** A statement: its name (for `prepare`), text, and the text split at its placeholders. */
export class Statement {
  private readonly parts: string[];
  private readonly slots: number[];

  constructor(
    readonly name: string,
    readonly text: string,
  ) {
    this.parts = [];
    this.slots = [];
    const re = /\$(\d+)/g;
    let last = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      this.parts.push(text.slice(last, m.index));
      this.slots.push(Number(m[1]) - 1);
      last = m.index + m[0].length;
    }
    this.parts.push(text.slice(last));
  }

  /** The text with the values inlined as literals (for the simple protocol). */
  inline(values: readonly (string | number)[]): string {
    let out = this.parts[0] as string;
    for (let i = 0; i < this.slots.length; i++) {
      const v = values[this.slots[i] as number];
      out += typeof v === 'number' ? String(v) : `'${(v as string).replace(/'/g, "''")}'`;
      out += this.parts[i + 1] as string;
    }
    return out;
  }
}

export const READ = new Statement('ycsb-read', `SELECT * FROM ${TABLE} WHERE ycsb_key = $1`);
export const SCAN = new Statement('ycsb-scan', `SELECT * FROM ${TABLE} WHERE ycsb_key >= $1 ORDER BY ycsb_key LIMIT $2`);
export const INSERT = new Statement('ycsb-insert', insertSql(1));
export const UPDATES: readonly Statement[] = FIELD_NAMES.map(
  (f, i) => new Statement(`ycsb-update-${i}`, `UPDATE ${TABLE} SET ${f} = $2 WHERE ycsb_key = $1`),
);

/** Runs `stmt` with `values` by `method`; resolves to the number of rows returned or affected. */
export async function execute(client: Client, method: QueryMethod, stmt: Statement, values: (string | number)[]): Promise<number> {
  let res;
  switch (method) {
    case 'prepare':
      res = await client.query({ name: stmt.name, text: stmt.text, values, rowMode: 'array' });
      break;
    case 'noprepare':
      res = await client.query({ text: stmt.text, values, rowMode: 'array' });
      break;
    case 'simple':
      res = await client.query({ text: stmt.inline(values), rowMode: 'array' });
      break;
  }
  return res.command === 'SELECT' ? res.rows.length : (res.rowCount ?? 0);
}
