/**
 * `node dist/bench/one-phase-commit.js`: CPU time of evaluating one-phase
 * commit batches on a leaseholder (src/kv/one-phase-commit.ts
 * evaluateWriteBatch — what Replica.evaluateAndPropose calls), without
 * intents (the default) against the intent path (each write an intent that
 * the EndTxn resolves in the same batch), alternating, on a LevelDB engine
 * holding the rows. Only evaluation is timed (process.cpuUsage around each
 * call: CPU time, which the machine's load distorts far less than
 * throughput); each batch is then written to the engine, as applying it
 * would. Prints figures, asserts none.
 *
 *   node dist/bench/one-phase-commit.js [--rows 10000] [--ops 5000] [--runs 5]
 *
 *   update      [put(row), EndTxn]: an implicit UPDATE's commit batch
 *               (existing 100-byte rows, random keys)
 *   load-batch  [100 × cput(fresh key, expected absent), EndTxn]: the YCSB
 *               loader's 100-row INSERT (figures per row)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { LevelEngine } from '../storage/level-engine.js';
import { mvccPut, type MvccStats, type Txn } from '../storage/mvcc.js';
import { ZERO_TIMESTAMP, type Timestamp } from '../src/util/hlc.js';
import { Prng } from '../src/util/prng.js';
import type { RangeDescriptor, Request } from '../src/kv/api.js';
import type { EvalContext, EvalHeader } from '../src/kv/batcheval/index.js';
import { evaluateWriteBatch, onePhaseCommitCounters } from '../src/kv/one-phase-commit.js';

interface Opts {
  rows: number;
  ops: number;
  runs: number;
}

const DESC: RangeDescriptor = { rangeId: 1, startKey: Buffer.from([0x90]), endKey: Buffer.from([0x91]), replicas: [], nextReplicaId: 1, generation: 0 };
const rowKey = (i: number): Buffer => Buffer.from(`\x90r${String(i).padStart(8, '0')}`, 'latin1');
const VALUE = Buffer.alloc(100, 0x61);

function ctx(stats: MvccStats): EvalContext {
  return { rangeId: 1, desc: DESC, lease: null, stats, sideEffects: {}, raftTerm: () => 0, gcThreshold: ZERO_TIMESTAMP };
}

let txnSeq = 0;
function header(ts: Timestamp, anchor: Buffer): EvalHeader {
  const id = Buffer.alloc(16);
  id.writeUInt32BE(++txnSeq, 12);
  const txn: Txn = { id, epoch: 0, writeTimestamp: ts, minTimestamp: ts, sequence: 1, key: anchor, priority: 1 };
  return { rangeId: 1, timestamp: ts, txn };
}

function commitBatch(writes: Request[]): Request[] {
  return [...writes, { kind: 'endTxn', key: (writes[0] as { key: Buffer }).key, commit: true, inFlightWrites: [], lockSpans: writes.map((w) => ({ key: (w as { key: Buffer }).key, endKey: null })) }];
}

/** CPU µs per unit (row) of evaluation over `ops` batches. */
async function run(e: LevelEngine, withoutIntents: boolean, shape: 'update' | 'load-batch', o: Opts, clock: { wall: number }, prng: Prng, fresh: { next: number }): Promise<number> {
  let cpu = 0;
  let units = 0;
  const ops = shape === 'update' ? o.ops : Math.max(1, Math.floor(o.ops / 100));
  for (let i = 0; i < ops; i++) {
    const writes: Request[] =
      shape === 'update'
        ? [{ kind: 'put', key: rowKey(prng.intn(o.rows)), value: VALUE }]
        : Array.from({ length: 100 }, (): Request => ({ kind: 'cput', key: rowKey(fresh.next++), value: VALUE, expected: null, allowIfDoesNotExist: false }));
    const reqs = commitBatch(writes);
    const h = header({ wall: ++clock.wall, logical: 0 }, (writes[0] as { key: Buffer }).key);
    const prefetch = writes.length >= 2 ? writes.map((w) => (w as { key: Buffer }).key) : null;
    const t0 = process.cpuUsage();
    const r = await evaluateWriteBatch({ newBatch: () => e.newBatch(), evalContext: ctx, withoutIntents }, h, reqs, prefetch);
    const d = process.cpuUsage(t0);
    cpu += d.user + d.system;
    units += writes.length;
    await e.write(r.batch);
  }
  return cpu / units;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main(o: Opts): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-1pc-'));
  const e = await LevelEngine.open(dir);
  try {
    const clock = { wall: 1_000_000 };
    for (let i = 0; i < o.rows; i += 1000) {
      const b = e.newBatch();
      for (let j = i; j < Math.min(o.rows, i + 1000); j++) mvccPut(b, rowKey(j), { wall: clock.wall, logical: 0 }, VALUE);
      await e.write(b);
    }
    const prng = new Prng(7);
    const fresh = { next: o.rows };
    process.stdout.write(`one-phase commit evaluation, CPU µs per row (LevelDB, ${o.rows} rows; load ${loadavg().map((x) => x.toFixed(1)).join(' ')})\n`);
    for (const shape of ['update', 'load-batch'] as const) {
      const res: Record<'intents' | 'without', number[]> = { intents: [], without: [] };
      await run(e, true, shape, { ...o, ops: Math.min(o.ops, 500) }, clock, prng, fresh); // warm-up
      for (let r = 0; r < o.runs; r++) {
        res.intents.push(await run(e, false, shape, o, clock, prng, fresh));
        res.without.push(await run(e, true, shape, o, clock, prng, fresh));
      }
      const a = median(res.intents);
      const b = median(res.without);
      process.stdout.write(
        `${shape.padEnd(10)} intent path ${res.intents.map((x) => x.toFixed(1)).join('/')} → without intents ${res.without.map((x) => x.toFixed(1)).join('/')} µs; medians ${a.toFixed(1)} → ${b.toFixed(1)} (${(((b - a) / a) * 100).toFixed(0)} %)\n`,
      );
    }
    process.stdout.write(`counters ${JSON.stringify(onePhaseCommitCounters)}; load ${loadavg().map((x) => x.toFixed(1)).join(' ')}\n`);
  } finally {
    await e.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const cmd = new Command()
  .option('--rows <n>', 'rows loaded', (v) => Number(v), 10_000)
  .option('--ops <n>', 'update batches per run (load-batch: ops / 100 batches of 100 rows)', (v) => Number(v), 5_000)
  .option('--runs <n>', 'alternating runs of each path', (v) => Number(v), 5)
  .parse();
await main(cmd.opts<Opts>());
