/**
 * Query benchmark (prints, never gates): a 2-table join returning 10 rows and
 * a GROUP BY over 10,000 rows, on Cairn (in-process SQL server over MemoryKV)
 * and on a throwaway PostgreSQL 15 in the same run, one connection each,
 * prepared statements, sequential queries.
 *
 *   npm run build && node dist/test/sql-queries/query-bench.js [--seconds 3]
 *
 * The Cairn server runs in this process (its CPU is shared with the client);
 * PostgreSQL runs in its own processes.
 */
import pg from 'pg';
import { startSqlServer } from '../support/sql-server.js';
import { startPostgres } from '../support/postgres.js';

const seconds = Number(process.argv[process.argv.indexOf('--seconds') + 1]) || 3;

interface Case {
  readonly name: string;
  readonly text: string;
  readonly params: () => unknown[];
  readonly rows: number;
}

const CASES: Case[] = [
  { name: 'join 2 tables → 10 rows', text: 'SELECT o.id, c.name, o.total FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id >= $1 AND o.id < $1 + 10', params: () => [Math.floor(Math.random() * 9990)], rows: 10 },
  { name: 'GROUP BY over 10,000 rows', text: 'SELECT customer_id % 100 AS g, count(*), sum(total) FROM orders GROUP BY customer_id % 100', params: () => [], rows: 100 },
];

async function setup(c: pg.Client): Promise<void> {
  await c.query('CREATE TABLE customers (id INT PRIMARY KEY, name TEXT)');
  await c.query('CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, total INT)');
  for (let i = 0; i < 1000; i += 500) {
    await c.query(`INSERT INTO customers VALUES ${Array.from({ length: 500 }, (_, j) => `(${i + j}, 'customer-${i + j}')`).join(', ')}`);
  }
  for (let i = 0; i < 10000; i += 1000) {
    await c.query(`INSERT INTO orders VALUES ${Array.from({ length: 1000 }, (_, j) => `(${i + j}, ${(i + j) % 1000}, ${(i + j) % 97})`).join(', ')}`);
  }
}

async function run(c: pg.Client, k: Case): Promise<number> {
  const name = `q${CASES.indexOf(k)}`;
  const check = await c.query({ name, text: k.text, values: k.params() });
  if (check.rows.length !== k.rows) throw new Error(`${k.name}: ${check.rows.length} rows, expected ${k.rows}`);
  const end = performance.now() + seconds * 1000;
  let n = 0;
  while (performance.now() < end) {
    await c.query({ name, text: k.text, values: k.params() });
    n++;
  }
  return n / seconds;
}

async function main(): Promise<void> {
  const cairn = await startSqlServer();
  const pgs = await startPostgres();
  const cc = new pg.Client(cairn.url);
  const pc = new pg.Client(pgs.url);
  await cc.connect();
  await pc.connect();
  try {
    await setup(cc);
    await setup(pc);
    await pc.query('ANALYZE');
    console.log(`query bench: ${seconds} s per case, 1 connection, prepared (${pgs.version.split(' ').slice(0, 2).join(' ')})`);
    for (const k of CASES) {
      const a = await run(cc, k);
      const b = await run(pc, k);
      console.log(`${k.name.padEnd(28)} cairn ${a.toFixed(0).padStart(7)} ops/s   postgres ${b.toFixed(0).padStart(7)} ops/s   ratio ${(a / b).toFixed(2)}`);
    }
    const plan = await cc.query(`EXPLAIN ${CASES[0]?.text.replaceAll('$1', '0')}`);
    console.log(plan.rows.map((r: Record<string, string>) => Object.values(r)[0]).join('\n'));
  } finally {
    await cc.end();
    await pc.end();
    await cairn.stop();
    await pgs.stop();
  }
}

await main();
