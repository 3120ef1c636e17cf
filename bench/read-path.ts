/**
 * `node dist/bench/read-path.js`: CPU per YCSB read (SELECT * FROM usertable
 * WHERE ycsb_key = $1, a named prepared statement, 10 × 100-byte fields) on
 * the server side only: a 3-node in-process cluster (memory engines, real
 * TxnDB/DistSender/RPC sockets between the nodes, Raft, MVCC) and the SQL
 * layer of one gateway node, driven through PgConn with the exact frontend
 * bytes node-postgres sends per execution (Bind, Describe portal, Execute,
 * Sync) — no client library and no client socket, so the figure is the
 * gateway's pgwire + session + executor + KV client work, plus the
 * leaseholder's when it is another node (its RPC round trip over loopback
 * TCP). Prints figures, asserts none.
 *
 *   node dist/bench/read-path.js [--gateway 2] [--conns 16] [--ops 20000] [--runs 3] [--rows 2000]
 *        [--cpu-prof FILE] [--statement read|update|sql-update]
 *
 * --statement measures a write the same way: `update` is YCSB's UPDATE of
 * one field of a 1 KB row, `sql-update` bench:sql's UPDATE bench_rows SET
 * v = $2 WHERE id = $1 (small rows, two secondary indexes not touched):
 * the server-side CPU of a whole UPDATE (read, 1PC write, Raft on all three
 * replicas; memory engines, so no LevelDB or fsync).
 *
 * --gateway 1: the range's lease is on node 1 (startTxnCluster acquires it
 * there), so node 1 reads locally; 2 or 3: every read goes to a remote
 * leaseholder (as 2/3 of YCSB's reads do). Per run: CPU µs per read of the
 * whole process (process.cpuUsage) and reads/s; medians in the last line.
 * Compare builds by running this alternately from each build's dist/.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Command } from 'commander';
import pg from 'pg';
import { TestCluster } from '../test/support/test-cluster.js';
import { startTxnCluster } from '../test/kv-txn/support.js';
import { startSqlServer } from '../test/support/sql-server.js';
import { CancelRegistry } from '../sql/pgwire/cancel-registry.js';
import { PgConn } from '../sql/pgwire/conn.js';
import { insertSql, CREATE_TABLE_SQL } from '../src/workload/ycsb/ycsb-sql.js';
import { FIELD_COUNT, FieldGenerator } from '../src/workload/ycsb/field-generator.js';
import { Prng } from '../src/util/prng.js';

interface Opts {
  gateway: number;
  conns: number;
  ops: number;
  runs: number;
  rows: number;
  cpuProf?: string;
  statement: string;
}

/** The measured statement: YCSB's read, or (--statement update) a single-row UPDATE by primary key with a short value. */
const STATEMENTS: Record<string, { readonly sql: string; readonly params: (key: string, i: number) => string[] }> = {
  read: { sql: 'SELECT * FROM usertable WHERE ycsb_key = $1', params: (key) => [key] },
  update: { sql: 'UPDATE usertable SET field3 = $2 WHERE ycsb_key = $1', params: (key, i) => [key, `u${i}`] },
  /** bench:sql's update: bench_rows (id, k, g, v) with its two secondary indexes, `v` set to a short text. */
  'sql-update': { sql: 'UPDATE bench_rows SET v = $2 WHERE id = $1', params: (key, i) => [key.slice(4).replace(/^0+(?=.)/, ''), `u${i}`] },
};
let SQL = '';
const STMT = 'y-stmt';

/** One frontend message: type byte, int32 length, body. */
function msg(type: string, body: Buffer): Buffer {
  const h = Buffer.alloc(5);
  h.write(type, 0, 'latin1');
  h.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([h, body]);
}

const cstr = (s: string): Buffer => Buffer.from(`${s}\0`, 'utf8');
const i16 = (n: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
};
const i32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

function startup(): Buffer {
  const body = Buffer.concat([i32(196608), cstr('user'), cstr('root'), cstr('database'), cstr('defaultdb'), Buffer.from([0])]);
  return Buffer.concat([i32(body.length + 4), body]);
}

/** What node-postgres sends for an execution of an already parsed named statement (rowMode array, text results). */
function execution(params: readonly string[], parse: boolean): Buffer {
  const vs = params.map((p) => Buffer.from(p, 'utf8'));
  const bind = msg('B', Buffer.concat([cstr(''), cstr(STMT), i16(0), i16(vs.length), ...vs.flatMap((v) => [i32(v.length), v]), i16(0)]));
  const parts = [bind, msg('D', Buffer.concat([Buffer.from('P'), cstr('')])), msg('E', Buffer.concat([cstr(''), i32(0)])), msg('S', Buffer.alloc(0))];
  if (parse) parts.unshift(msg('P', Buffer.concat([cstr(STMT), cstr(SQL), i16(0)])));
  return Buffer.concat(parts);
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

async function main(o: Opts): Promise<void> {
  const st = STATEMENTS[o.statement];
  if (st === undefined) throw new Error(`--statement: one of ${Object.keys(STATEMENTS).join(', ')}`);
  SQL = st.sql;
  const { c: cluster, dbs } = await startTxnCluster((opts) => TestCluster.start(opts));
  const db = dbs[o.gateway - 1];
  if (db === undefined) throw new Error(`--gateway must be 1..${dbs.length}`);
  const srv = await startSqlServer({ insecure: true, db });
  const conns: PgConn[] = [];
  let outBytes = 0;
  let errors = 0;
  try {
    const admin = new pg.Client(srv.url);
    await admin.connect();
    await admin.query(CREATE_TABLE_SQL);
    await admin.query('CREATE TABLE bench_rows (id INT8 PRIMARY KEY, k INT8 NOT NULL, g INT8 NOT NULL, v TEXT)');
    await admin.query('CREATE UNIQUE INDEX bench_rows_k ON bench_rows (k)');
    await admin.query('CREATE INDEX bench_rows_g ON bench_rows (g)');
    const loadSql = insertSql(100);
    for (let record = 0; record < o.rows && o.statement === 'sql-update'; record += 500) {
      const vals = Array.from({ length: Math.min(500, o.rows - record) }, (_, j) => `(${record + j}, ${(record + j) * 7}, ${Math.floor((record + j) / 10)}, 'v${record + j}')`);
      await admin.query(`INSERT INTO bench_rows (id, k, g, v) VALUES ${vals.join(', ')}`);
    }
    for (let record = 0; record < o.rows && o.statement !== 'sql-update'; ) {
      const values: string[] = [];
      for (let r = 0; r < 100; r++, record++) {
        const f = new FieldGenerator(new Prng(record));
        values.push(`user${String(record).padStart(12, '0')}`);
        for (let j = 0; j < FIELD_COUNT; j++) values.push(f.value());
      }
      await admin.query({ text: loadSql, values });
    }
    await admin.end();
    // Every range's lease on node 1 (a lease taken elsewhere during the load is moved back), so that --gateway
    // says which reads are local. The cluster has no split queue: the table shares its range with the rest.
    for (const r of cluster.store(0).allReplicas()) {
      const id = r.rangeId;
      for (let tries = 0; cluster.leaseholder(id) !== 0; tries++) {
        const lh = cluster.leaseholder(id);
        if (tries > 50) throw new Error(`r${id}: lease stays on node index ${lh}`);
        if (lh > 0) await cluster.store(lh).transferLease(id, 1).catch(() => undefined);
        await new Promise((res) => setTimeout(res, 100));
      }
    }
    console.log(`leases of ${cluster.store(0).allReplicas().length} ranges on n1`);

    const cancelRegistry = new CancelRegistry();
    for (let i = 0; i < o.conns; i++) {
      const conn = new PgConn(
        {
          write: (data) => {
            outBytes += data.length;
            // An ErrorResponse anywhere in the output ('E' at a message start is enough for a bench).
            if (data.includes(0x45) && data.includes(Buffer.from('SERROR'))) errors++;
          },
          bufferedBytes: () => 0,
          waitForDrain: () => Promise.resolve(),
          close: () => undefined,
        },
        { factory: srv.sql.factory, cancelRegistry, random: (n) => Buffer.alloc(n, 7) },
      );
      conn.feed(startup());
      await conn.whenIdle();
      conns.push(conn);
    }
    const rnd = new Prng(11);
    const key = (): string => `user${String(rnd.intn(o.rows)).padStart(12, '0')}`; // sql-update takes the number back out
    // Pre-encoded executions: the bench's own encoding stays out of the measured CPU.
    const pool = Array.from({ length: 4096 }, (_, i) => execution(st.params(key(), i), false));
    for (const conn of conns) {
      conn.feed(execution(st.params(key(), 0), true));
      await conn.whenIdle();
    }
    const loop = async (n: number): Promise<void> => {
      let next = 0;
      await Promise.all(
        conns.map(async (conn) => {
          while (next < n) {
            conn.feed(pool[next++ & 4095] as Buffer);
            await conn.whenIdle();
          }
        }),
      );
    };
    await loop(Math.max(o.conns, o.ops / 2)); // warm-up: plans, caches, JIT
    const us: number[] = [];
    const inspector = o.cpuProf === undefined ? undefined : new Session();
    if (inspector !== undefined) {
      inspector.connect();
      await inspector.post('Profiler.enable');
      await inspector.post('Profiler.start');
    }
    for (let r = 0; r < o.runs; r++) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await loop(o.ops);
      const cpu = process.cpuUsage(cpu0);
      const sec = (performance.now() - t0) / 1000;
      us.push((cpu.user + cpu.system) / o.ops);
      console.log(`run ${r + 1}: ${(us[r] as number).toFixed(1)} µs CPU per statement (user ${(cpu.user / o.ops).toFixed(1)}, sys ${(cpu.system / o.ops).toFixed(1)}), ${Math.round(o.ops / sec)} statements/s`);
    }
    if (inspector !== undefined) {
      const { profile } = await inspector.post('Profiler.stop');
      writeFileSync(o.cpuProf as string, JSON.stringify(profile));
      inspector.disconnect();
    }
    console.log(`gateway n${o.gateway}: median ${median(us).toFixed(1)} µs CPU per statement over ${o.runs} runs; ${errors} errors; ${(outBytes / (o.ops * (o.runs + 0.5))).toFixed(0)} bytes out per statement`);
  } finally {
    for (const conn of conns) conn.close();
    await srv.stop();
    await cluster.close();
  }
}

const cmd = new Command()
  .option('--gateway <n>', 'node whose SQL layer serves the reads (1: the leaseholder, 2/3: remote reads)', (v) => Number(v), 2)
  .option('--conns <n>', 'connections', (v) => Number(v), 16)
  .option('--ops <n>', 'reads per run', (v) => Number(v), 20_000)
  .option('--runs <n>', 'measured runs', (v) => Number(v), 3)
  .option('--rows <n>', 'rows loaded (multiple of 100)', (v) => Number(v), 2000)
  .option('--cpu-prof <file>', 'V8 CPU profile of the measured runs')
  .option('--statement <name>', 'read (YCSB read), update (UPDATE usertable SET field3 = $2 WHERE ycsb_key = $1) or sql-update (bench:sql\'s UPDATE bench_rows SET v = $2 WHERE id = $1)', 'read');
cmd.parse();
await main(cmd.opts<Opts>());
process.exit(0);
