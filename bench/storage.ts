/**
 * Storage micro-benchmark (`npm run bench:storage [-- --keys N]`): MVCC over
 * LevelEngine beside raw LevelDB, at N keys (default 1,000,000) of 1 KB
 * values. Prints ops/s for
 *   - put, synced batches of 100 (group commit), evaluated one batch after
 *     another: of fresh keys (MVCC writes one head per put) and overwrites of
 *     loaded keys (MVCC also moves the displaced version into the history:
 *     two ~1 KB LevelDB entries per put);
 *   - the floor under overwrites: raw LevelDB writing two 1 KB entries per
 *     put against one — no MVCC work, so no head-with-value layout can do
 *     better than this ratio;
 *   - overwrites with the next batch evaluated while the previous one syncs,
 *     and again with its heads prefetched by one getMany during the sync;
 *   - point get: raw getSync vs mvccGetSync (one getSync through the head),
 *   - scan of 100 rows: raw iterator nextv(100) vs mvccScan(maxKeys 100),
 * with the MVCC/raw ratio. Each pair runs in alternating slices so load from
 * other processes hits both alike. The target: MVCC within 2× of raw (ratio
 * ≥ 0.5). It prints figures and never fails on them.
 *
 * Flags: --keys N, --seconds S (per measurement, default 3), --runs R (repeat
 * everything on fresh stores, then print medians), --dir D (default a
 * temporary directory, removed at the end; reused by every run).
 *
 * Measured 2026-11-30 05:43–05:48 UTC, 1,000,000 keys, --seconds 2 --runs 3,
 * 2 cores shared with seven other engineers' test runs (load average 16–18:
 * single runs swing by ±0.2 in ratio; these are medians), ops/s:
 *   load, unsynced batches of 1000      raw  66,913   mvcc 57,335   0.58
 *   point get, one version per key      raw  40,431   mvcc 30,893   0.63
 *   scan rows/s, one version per key    raw  69,414   mvcc 31,772   0.46
 *   put fresh keys, synced 100          raw  44,337   mvcc 19,431   0.60
 *   put overwrites, synced 100          raw  17,074   mvcc  3,762   0.25
 *   floor: raw 2 entries vs 1 per put   raw  23,450   raw2 15,030   0.64
 *   overwrites, pipelined               raw  20,362   mvcc  4,561   0.22
 *   overwrites, pipelined + prefetch    raw  35,938   mvcc 12,967   0.29
 *   point get, after the puts           raw  36,012   mvcc 34,505   0.69
 *   scan rows/s, after the puts         raw  87,065   mvcc 40,310   0.53
 * Before the write-path work (same bench, same hour, 3 runs each alternated
 * with the new code): fresh 0.46, overwrites 0.19, pipelined 0.25, prefetch
 * 0.26, floor 0.59. In one process alternating raw / old MVCC / new MVCC
 * slices (300k keys, 3 × 6 s) the old and new code ran at the same rate
 * (overwrites 0.26/0.17/0.33 vs 0.28/0.14/0.34 of raw): the CPU removed from
 * evaluation (≈ 30% of its JS time: assert messages built per uvarint, a
 * second copy of each head) is not what bounds a synced batch here.
 *
 * Why overwrites miss 0.5: an overwrite writes two ~1 KB entries (the new
 * head with its value, the displaced version) where raw writes one, and the
 * floor row shows LevelDB alone at ~0.6 for that; on top come a getSync of
 * a 1 KB head per put (0.7–2.3 ms per batch of 100 here), evaluation (~1.5–3
 * ms: three xxhash32 of 1 KB, buffers, the batch index) and classic-level's
 * per-op copy of 200 entries in batch_do (1.2–4 ms on the JS thread). Only a
 * layout writing one value-sized entry per overwrite can reach the target —
 * e.g. values above a size threshold stored once at their version key with a
 * small head (reads become two getSyncs), or displaced versions appended to a
 * time-ordered history keyspace — a format change for the storage owner.
 */
import { Level } from 'level';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelEngine } from '../storage/level-engine.js';
import { DEFAULT_INLINE_VALUE_LIMIT, mvccGetSync, mvccPrefetch, mvccPut, mvccScan, setInlineValueLimit } from '../storage/mvcc.js';
import type { Timestamp } from '../src/util/hlc.js';
import { Prng } from '../src/util/prng.js';

interface RawDb {
  open(): Promise<void>;
  close(): Promise<void>;
  getSync(key: Buffer): Buffer | undefined;
  batch(ops: { type: 'put'; key: Buffer; value: Buffer }[], opts?: { sync?: boolean }): Promise<void>;
  iterator(opts: { gte?: Buffer; highWaterMarkBytes?: number }): { nextv(n: number): Promise<[Buffer, Buffer][]>; close(): Promise<void> };
}

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`bench: --${name} needs a positive number`);
  return v;
}

const KEYS = arg('keys', 1_000_000);
/** Values longer than this go out of line (`--inline-limit N`, or `inf`: all inline). */
const INLINE_LIMIT = process.argv.includes('--inline-limit') && process.argv[process.argv.indexOf('--inline-limit') + 1] === 'inf' ? Infinity : arg('inline-limit', DEFAULT_INLINE_VALUE_LIMIT);
setInlineValueLimit(INLINE_LIMIT);
const RUNS = arg('runs', 1);
/** Fresh keys are drawn from this many keys above the loaded ones. */
const FRESH_SPACE = 1 << 30;
/** Makes a raw key that sorts right after its head, like an MVCC version key. */
const VERSION_SUFFIX = Buffer.alloc(12, 0xfe);
const SECONDS = arg('seconds', 3);
const VALUE = Buffer.alloc(1024, 0x61);
const BATCH = 100;
const LOAD_BATCH = 1000;

function userKey(i: number): Buffer {
  return Buffer.from(`user${String(i).padStart(10, '0')}`);
}

type Step = () => void | Promise<void>;

/**
 * Measures two steps (each doing `per` ops) in alternating slices until
 * SECONDS elapse for each, so that load from other processes on a shared
 * machine hits both alike; returns [ops/s of a, ops/s of b].
 */
async function compare(per: number, a: Step, b: Step): Promise<[number, number]> {
  const slices = 8;
  const sliceMs = (SECONDS * 1000) / slices;
  const ops = [0, 0];
  const ms = [0, 0];
  for (let s = 0; s < slices * 2; s++) {
    const which = s % 2;
    const step = which === 0 ? a : b;
    const start = performance.now();
    const deadline = start + sliceMs;
    while (performance.now() < deadline) {
      for (let i = 0; i < 10; i++) {
        const r = step();
        if (r !== undefined) await r;
        ops[which] = (ops[which] as number) + per;
      }
    }
    ms[which] = (ms[which] as number) + performance.now() - start;
  }
  return [((ops[0] as number) * 1000) / (ms[0] as number), ((ops[1] as number) * 1000) / (ms[1] as number)];
}

/** Figures of every run: name → [raw, mvcc] per run. */
const results = new Map<string, [number, number][]>();

function record(name: string, raw: number, mvcc: number): void {
  console.log(row(name, raw, mvcc));
  let r = results.get(name);
  if (r === undefined) results.set(name, (r = []));
  r.push([raw, mvcc]);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

function row(name: string, raw: number, mvcc: number): string {
  const f = (n: number): string => Math.round(n).toLocaleString('en-US').padStart(12);
  return `${name.padEnd(52)} raw ${f(raw)}/s   mvcc ${f(mvcc)}/s   ratio ${(mvcc / raw).toFixed(2)}${mvcc / raw >= 0.5 ? '' : '   (below the 0.5 target)'}`;
}

async function main(): Promise<void> {
  const dirFlag = process.argv.indexOf('--dir');
  const base = dirFlag >= 0 ? (process.argv[dirFlag + 1] as string) : mkdtempSync(join(tmpdir(), 'cairn-bench-storage-'));
  const rawDir = join(base, 'raw');
  const mvccDir = join(base, 'mvcc');
  const raw = new Level<Buffer, Buffer>(rawDir, { keyEncoding: 'buffer', valueEncoding: 'buffer', cacheSize: 64 << 20, writeBufferSize: 16 << 20 } as never) as unknown as RawDb;
  await raw.open();
  const engine = await LevelEngine.open(mvccDir);
  const rng = new Prng(42);
  let wall = 1_700_000_000_000_000;
  const nextTs = (): Timestamp => ({ wall: ++wall, logical: 0 });
  console.log(`bench/storage: ${KEYS.toLocaleString('en-US')} keys × 1 KB, ${SECONDS} s per measurement, inline value limit ${INLINE_LIMIT}, in ${base}`);

  try {
    let t0 = performance.now();
    for (let i = 0; i < KEYS; i += LOAD_BATCH) {
      const ops: { type: 'put'; key: Buffer; value: Buffer }[] = [];
      for (let j = i; j < Math.min(KEYS, i + LOAD_BATCH); j++) ops.push({ type: 'put', key: userKey(j), value: VALUE });
      await raw.batch(ops);
    }
    const rawLoad = KEYS / ((performance.now() - t0) / 1000);
    t0 = performance.now();
    for (let i = 0; i < KEYS; i += LOAD_BATCH) {
      const b = engine.newBatch();
      const ts = nextTs();
      for (let j = i; j < Math.min(KEYS, i + LOAD_BATCH); j++) mvccPut(b, userKey(j), ts, VALUE);
      await engine.write(b);
    }
    const mvccLoad = KEYS / ((performance.now() - t0) / 1000);
    record('load (unsynced, 1000/batch)', rawLoad, mvccLoad);

    const randomKey = (): Buffer => userKey(rng.intn(KEYS));
    /** One synced raw batch of BATCH puts of 1 KB at keys drawn by `key`. */
    const rawSyncedBatch = (key: () => Buffer): Promise<void> => {
      const ops: { type: 'put'; key: Buffer; value: Buffer }[] = new Array(BATCH);
      for (let i = 0; i < BATCH; i++) ops[i] = { type: 'put', key: key(), value: VALUE };
      return raw.batch(ops, { sync: true });
    };
    const endKey = userKey(KEYS + 1);
    const readTs = (): Timestamp => ({ wall: wall + 1, logical: 0 });

    /** Point gets and scans; `when` says how much history the keys have. */
    const reads = async (when: string): Promise<void> => {
      const ts = readTs();
      const [rawGet, mvccGetRate] = await compare(
        100,
        () => {
          for (let i = 0; i < 100; i++) if (raw.getSync(randomKey()) === undefined) throw new Error('bench: missing key');
        },
        () => {
          for (let i = 0; i < 100; i++) if (mvccGetSync(engine, randomKey(), ts).value === null) throw new Error('bench: missing key');
        },
      );
      record(`point get (getSync), ${when}`, rawGet, mvccGetRate);
      const [rawScan, mvccScanRate] = await compare(
        1,
        async () => {
          const it = raw.iterator({ gte: userKey(rng.intn(KEYS - 200)), highWaterMarkBytes: 4 << 20 });
          const rows = await it.nextv(100);
          if (rows.length !== 100) throw new Error(`bench: raw scan read ${rows.length} rows`);
          await it.close();
        },
        async () => {
          const r = await mvccScan(engine, userKey(rng.intn(KEYS - 200)), endKey, ts, { maxKeys: 100 });
          if (r.kvs.length !== 100) throw new Error(`bench: MVCC scan read ${r.kvs.length} rows`);
        },
      );
      record(`scan of 100 rows/s, ${when}`, rawScan * 100, mvccScanRate * 100);
    };

    await reads('one version per key');

    // Puts of keys never written before (MVCC: one head per put, no history
    // to move), drawn at random from a range disjoint from the loaded keys.
    let freshCounter = 0;
    const freshKey = (): Buffer => userKey(KEYS + 1 + ((++freshCounter * 2654435761) % FRESH_SPACE));
    /** Synced batches of BATCH puts at keys drawn by `key`: raw beside MVCC. */
    const putRow = async (name: string, key: () => Buffer): Promise<void> => {
      const [rawRate, mvccRate] = await compare(
        BATCH,
        () => rawSyncedBatch(key),
        () => {
          const b = engine.newBatch();
          for (let i = 0; i < BATCH; i++) mvccPut(b, key(), nextTs(), VALUE);
          return engine.write(b, { sync: true });
        },
      );
      record(name, rawRate, mvccRate);
    };
    await putRow('put fresh keys (synced batches of 100)', freshKey);
    await putRow('put overwrites (synced batches of 100)', randomKey);

    // The floor under MVCC overwrites: raw LevelDB writing what an MVCC
    // overwrite writes — two ~1 KB entries per put (the new head and the
    // displaced version) — against one. No MVCC work at all; its ratio
    // bounds what any head-with-value layout can reach.
    const [rawOne, rawTwo] = await compare(
      BATCH,
      () => {
        return rawSyncedBatch(randomKey);
      },
      () => {
        const ops: { type: 'put'; key: Buffer; value: Buffer }[] = new Array(BATCH * 2);
        for (let i = 0; i < BATCH; i++) {
          const k = randomKey();
          ops[2 * i] = { type: 'put', key: k, value: VALUE };
          ops[2 * i + 1] = { type: 'put', key: Buffer.concat([k, VERSION_SUFFIX]), value: VALUE };
        }
        return raw.batch(ops, { sync: true });
      },
    );
    record('floor: raw, 2 entries per put (as MVCC overwrite)', rawOne, rawTwo);

    // Group commit as a store runs it: the next batch is evaluated while the
    // previous one is being synced. Consecutive batches draw keys from
    // disjoint halves of the keyspace, as latches would keep a key's commands
    // apart; each step runs 10 batches and drains.
    const half = Math.floor(KEYS / 2);
    const keysOf = (n: number): Buffer[] => {
      const off = (n % 2) * half;
      const ks = new Array<Buffer>(BATCH);
      for (let i = 0; i < BATCH; i++) ks[i] = userKey(off + rng.intn(half));
      return ks;
    };
    const rawTen = async (): Promise<void> => {
      for (let n = 0; n < 10; n++) await rawSyncedBatch(randomKey);
    };
    /**
     * Ten MVCC batches, each evaluated while the previous one syncs. With
     * `prefetch`, a batch's heads are read by one getMany (libuv pool, off
     * the JS thread) started as the previous batch's write is submitted, so
     * the reads overlap the sync instead of preceding the evaluation.
     */
    const pipelined = (prefetch: boolean) => async (): Promise<void> => {
      let inflight: Promise<void> | null = null;
      let keys = keysOf(0);
      let b = engine.newBatch();
      let fetched = prefetch ? mvccPrefetch(b, keys) : null;
      for (let n = 0; n < 10; n++) {
        if (fetched !== null) await fetched;
        for (let i = 0; i < BATCH; i++) mvccPut(b, keys[i] as Buffer, nextTs(), VALUE);
        if (inflight !== null) await inflight;
        inflight = engine.write(b, { sync: true });
        if (n < 9) {
          keys = keysOf(n + 1);
          b = engine.newBatch();
          fetched = prefetch ? mvccPrefetch(b, keys) : null;
        }
      }
      await inflight;
    };
    const [rawPut2, mvccPipelined] = await compare(BATCH * 10, rawTen, pipelined(false));
    record('put overwrites, next batch evaluated during the sync', rawPut2, mvccPipelined);
    const [rawPut3, mvccPrefetched] = await compare(BATCH * 10, rawTen, pipelined(true));
    record('… and the next heads prefetched by getMany', rawPut3, mvccPrefetched);

    await reads('after the puts');
  } finally {
    await engine.close();
    await raw.close();
    if (dirFlag < 0) rmSync(base, { recursive: true, force: true });
  }
}

for (let run = 1; run <= RUNS; run++) {
  if (RUNS > 1) console.log(`-- run ${run} of ${RUNS}`);
  await main();
}
if (RUNS > 1) {
  console.log(`-- medians of ${RUNS} runs (ratio: median of the per-run ratios)`);
  for (const [name, rs] of results) {
    const ratio = median(rs.map(([r, m]) => m / r));
    const f = (n: number): string => Math.round(n).toLocaleString('en-US').padStart(12);
    console.log(`${name.padEnd(52)} raw ${f(median(rs.map((x) => x[0])))}/s   mvcc ${f(median(rs.map((x) => x[1])))}/s   ratio ${ratio.toFixed(2)}`);
  }
}
