/**
 * `node dist/bench/write-alloc.js`: bytes allocated and CPU time per SQL
 * write statement, by layer, on a 3-node in-process cluster (memory engines,
 * the real TxnDB/DistSender/Raft/MVCC path, SQL on node 1 over pgwire, the pg
 * clients in the same process). Bytes allocated per statement come from V8's
 * sampling heap profiler (objects collected by GC included) and barely move
 * with the machine's load, unlike throughput or even CPU time: the figure to
 * compare before/after a change on a shared machine. Prints figures, asserts
 * none.
 *
 *   node dist/bench/write-alloc.js [--statements update,insert-10col,load-batch]
 *        [--ops 2000] [--runs 3] [--conns 8] [--top 0]
 *
 *   update        UPDATE w_rows SET v = $2 WHERE id = $1   (named, 2,000 rows)
 *   insert-10col  10-column INSERT of a fresh key           (named)
 *   load-batch    the YCSB loader's statement: an UNNAMED 100-row INSERT into
 *                 usertable with 1,100 parameters (figures per row)
 *   ycsb-read     YCSB's read, SELECT * FROM usertable WHERE ycsb_key = $1 (named,
 *                 2,000 rows of 10 × 100-byte fields; the range's lease on node 1,
 *                 so the KV read is a node's call to itself)
 *   ycsb-update   YCSB's update, UPDATE usertable SET field3 = $2 WHERE ycsb_key = $1
 *                 (named, a 100-byte value, the same 2,000 rows): beside `update`,
 *                 what a 1 KB row adds to a write
 *
 * Per run: KiB allocated per statement (per row for load-batch) in total and
 * for the layers that allocate most (directory of the allocating function;
 * allocations by Node internals or libraries count for the nearest caller of
 * ours), and CPU µs per statement of the whole process (servers and clients:
 * compare runs, not with bench:sql). --top N also lists the N allocation sites
 * with most bytes (function <- caller). Medians over --runs in the last line.
 */
import { Session } from 'node:inspector/promises';
import { Command } from 'commander';
import pg from 'pg';
import { TestCluster } from '../test/support/test-cluster.js';
import { startTxnCluster } from '../test/kv-txn/support.js';
import { startSqlServer } from '../test/support/sql-server.js';
import { insertSql, CREATE_TABLE_SQL } from '../src/workload/ycsb/ycsb-sql.js';
import { FIELD_COUNT, FieldGenerator } from '../src/workload/ycsb/field-generator.js';
import { Prng } from '../src/util/prng.js';

interface Opts {
  statements: string;
  ops: number;
  runs: number;
  conns: number;
  top: number;
}

interface SampleNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly selfSize: number;
  readonly children: readonly SampleNode[];
}

interface Figures {
  readonly kibPerUnit: number;
  readonly cpuUsPerUnit: number;
  readonly layers: Map<string, number>;
  readonly sites: Map<string, number>;
}

const FIELD = 'x'.repeat(100);
const LOAD_ROWS = 100;
/** Rows loaded for ycsb-read. */
const READ_ROWS = 2000;

/** "sql/exec" for .../dist/sql/exec/mutation.js; undefined for code not ours. */
function layerOf(url: string): string | undefined {
  const i = url.indexOf('/dist/');
  if (i < 0 || url.includes('/node_modules/')) return undefined;
  const rel = url.slice(i + 6);
  const j = rel.lastIndexOf('/');
  return j < 0 ? rel : rel.slice(0, j);
}

function siteOf(n: SampleNode): string {
  const f = n.callFrame;
  const u = f.url.replace(/.*\/(dist|node_modules)\//, '');
  return `${f.functionName || '(anon)'} ${u}:${f.lineNumber + 1}`;
}

function summarize(head: SampleNode, units: number): { total: number; layers: Map<string, number>; sites: Map<string, number> } {
  const layers = new Map<string, number>();
  const sites = new Map<string, number>();
  let total = 0;
  const walk = (n: SampleNode, ours: string | undefined, caller: string): void => {
    const layer = layerOf(n.callFrame.url) ?? ours;
    const site = siteOf(n);
    if (n.selfSize > 0) {
      total += n.selfSize;
      const k = layer ?? 'other';
      layers.set(k, (layers.get(k) ?? 0) + n.selfSize / units);
      const s = `${site} <- ${caller}`;
      sites.set(s, (sites.get(s) ?? 0) + n.selfSize / units);
    }
    for (const c of n.children) walk(c, layer, site);
  };
  walk(head, undefined, '');
  return { total, layers, sites };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

async function main(o: Opts): Promise<void> {
  const { c: cluster, dbs } = await startTxnCluster((opts) => TestCluster.start(opts));
  const srv = await startSqlServer({ insecure: true, db: dbs[0] });
  const clients: pg.Client[] = [];
  const inspector = new Session();
  try {
    for (let i = 0; i < o.conns; i++) {
      const c = new pg.Client(srv.url);
      await c.connect();
      clients.push(c);
    }
    const admin = clients[0] as pg.Client;
    await admin.query('CREATE TABLE w_rows (id INT8 PRIMARY KEY, k INT8 NOT NULL, v TEXT)');
    await admin.query('CREATE TABLE w_ins (id INT8 PRIMARY KEY, c1 INT8, c2 INT8, c3 TEXT, c4 TEXT, c5 TEXT, c6 TEXT, c7 TEXT, c8 TEXT, c9 FLOAT8)');
    await admin.query(CREATE_TABLE_SQL);
    for (let i = 0; i < 2000; i += 500) await admin.query(`INSERT INTO w_rows VALUES ${Array.from({ length: 500 }, (_, j) => `(${i + j}, ${i + j}, 'v')`).join(', ')}`);
    inspector.connect();
    await inspector.post('HeapProfiler.enable');

    let fresh = 0;
    let record = 0;
    const rnd = new Prng(7);
    const loadSql = insertSql(LOAD_ROWS);
    const loadValues = (): string[] => {
      const values: string[] = [];
      for (let r = 0; r < LOAD_ROWS; r++) {
        const f = new FieldGenerator(new Prng(record));
        values.push(`user${String(record++).padStart(12, '0')}`);
        for (let j = 0; j < FIELD_COUNT; j++) values.push(f.value());
      }
      return values;
    };
    const kinds: Record<string, { readonly perStatement: number; readonly run: (c: pg.Client, i: number) => Promise<unknown> }> = {
      update: { perStatement: 1, run: (c, i) => c.query({ name: 'w-upd', text: 'UPDATE w_rows SET v = $2 WHERE id = $1', values: [rnd.intn(2000), `u${i}`] }) },
      'insert-10col': {
        perStatement: 1,
        run: (c) => c.query({ name: 'w-ins', text: 'INSERT INTO w_ins (id, c1, c2, c3, c4, c5, c6, c7, c8, c9) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)', values: [fresh++, 1, 2, FIELD, FIELD, FIELD, 'a', 'b', 'c', 1.5] }),
      },
      'load-batch': { perStatement: LOAD_ROWS, run: (c) => c.query({ text: loadSql, values: loadValues() }) },
      'ycsb-read': {
        perStatement: 1,
        run: (c) => c.query({ name: 'y-read', text: 'SELECT * FROM usertable WHERE ycsb_key = $1', values: [`user${String(rnd.intn(READ_ROWS)).padStart(12, '0')}`], rowMode: 'array' }),
      },
      'ycsb-update': {
        perStatement: 1,
        run: (c, i) => c.query({ name: 'y-upd', text: 'UPDATE usertable SET field3 = $2 WHERE ycsb_key = $1', values: [`user${String(rnd.intn(READ_ROWS)).padStart(12, '0')}`, `${i}`.padEnd(100, 'y')] }),
      },
    };
    if (o.statements.split(',').some((s) => s.startsWith('ycsb-'))) {
      // The rows ycsb-read reads (user000000000000 …): the loader's statement, before anything is measured.
      while (record < READ_ROWS) await admin.query({ text: loadSql, values: loadValues() });
    }

    for (const name of o.statements.split(',')) {
      const kind = kinds[name];
      if (kind === undefined) throw new Error(`unknown statement ${name} (update, insert-10col, load-batch, ycsb-read, ycsb-update)`);
      const ops = name === 'load-batch' ? Math.max(1, Math.floor(o.ops / 20)) : o.ops;
      const loop = async (n: number): Promise<void> => {
        let next = 0;
        await Promise.all(
          clients.map(async (c) => {
            while (next < n) await kind.run(c, next++);
          }),
        );
      };
      await loop(Math.max(o.conns, Math.floor(ops / 4))); // warm-up: plans, caches, JIT
      const runs: Figures[] = [];
      for (let r = 0; r < o.runs; r++) {
        await inspector.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
        const cpu0 = process.cpuUsage();
        await loop(ops);
        const cpu = process.cpuUsage(cpu0);
        const { profile } = await inspector.post('HeapProfiler.stopSampling');
        const units = ops * kind.perStatement;
        const s = summarize(profile.head as unknown as SampleNode, units);
        const f: Figures = { kibPerUnit: s.total / units / 1024, cpuUsPerUnit: (cpu.user + cpu.system) / units, layers: s.layers, sites: s.sites };
        runs.push(f);
        const layers = [...f.layers].sort((a, b) => b[1] - a[1]).slice(0, 8);
        console.log(`${name.padEnd(12)} run ${r + 1}: ${f.kibPerUnit.toFixed(1)} KiB and ${f.cpuUsPerUnit.toFixed(0)} µs CPU per ${kind.perStatement > 1 ? 'row' : 'statement'} | ${layers.map(([k, v]) => `${k} ${(v / 1024).toFixed(1)}`).join(', ')}`);
        if (o.top > 0) for (const [k, v] of [...f.sites].sort((a, b) => b[1] - a[1]).slice(0, o.top)) console.log(`    ${v.toFixed(0).padStart(7)} B  ${k}`);
      }
      console.log(`${name.padEnd(12)} median of ${o.runs}: ${median(runs.map((f) => f.kibPerUnit)).toFixed(1)} KiB, ${median(runs.map((f) => f.cpuUsPerUnit)).toFixed(0)} µs CPU per ${kind.perStatement > 1 ? 'row' : 'statement'}`);
    }
  } finally {
    inspector.disconnect();
    for (const c of clients) await c.end().catch(() => undefined);
    await srv.stop();
    await cluster.close();
  }
}

const cmd = new Command()
  .option('--statements <list>', 'update, insert-10col, load-batch, ycsb-read, ycsb-update', 'update,insert-10col,load-batch')
  .option('--ops <n>', 'statements per run (load-batch: a twentieth of it)', (v) => Number(v), 2000)
  .option('--runs <n>', 'measured runs per statement', (v) => Number(v), 3)
  .option('--conns <n>', 'pg clients', (v) => Number(v), 8)
  .option('--top <n>', 'also list the N allocation sites with most bytes', (v) => Number(v), 0);
cmd.parse();
await main(cmd.opts<Opts>());
process.exit(0);
