/**
 * The YCSB load phase: `initYcsb(options, { output })`.
 *
 *   [--drop] DROP TABLE usertable → CREATE TABLE usertable
 *   [--splits N] ALTER TABLE usertable SPLIT AT VALUES (…) and
 *                ALTER TABLE usertable SCATTER (Cairn only; as `cockroach
 *                workload init` does), or instead the caller's `splitter`
 *   C loaders, each: claim the next batch of insertion indexes from a shared
 *   CounterGenerator → one multi-row INSERT with parameters → repeat
 *   a progress display: a redrawn bar on a terminal, periodic lines otherwise
 *
 * Records are indexes 0..insertCount-1; record i has key keyName(i) ("user" +
 * FNV-64 of i) and ten fields of 100 random printable characters drawn from
 * its own Prng, seeded by (seed, i), so the loaded data depends only on the
 * seed — not on the batching, the concurrency or the servers' timing — and
 * two targets loaded with the same seed hold identical tables. Loaders'
 * connections are spread round-robin over the URLs.
 *
 * Batches (loadPlan): without splits, consecutive indexes. With split points,
 * each batch holds only records of one future range (indexes bucketed by
 * key, each bucket cut into batches, the buckets' batches interleaved so the
 * loaders work on every range at once): a batch is then a single-range
 * transaction, which Cairn commits in one Raft round (1PC) without intents to
 * resolve afterwards — as CockroachDB's IMPORT sorts its input by range
 * rather than writing scattered keys in distributed transactions.
 *
 * Split points (only against Cairn, detected by `SELECT version()` containing
 * "Cairn"; other servers get a notice and no splits): the keys of the records
 * to be loaded, sorted, at every insertCount/N-th position — so the ranges
 * hold about equal numbers of rows.
 *
 * The result records the load's throughput: rows/s per second (series) and
 * the rate over the first and the last 10 % of the rows, whose ratio shows
 * whether loading slows as the table grows.
 */
import { FieldGenerator, FIELD_COUNT } from './field-generator.js';
import { CounterGenerator } from './counter-generator.js';
import { keyName } from './fnv64.js';
import { Prng } from '../../util/prng.js';
import { AMBIGUOUS_RESULT, Connection, errorMessage, openConnections, SERIALIZATION_FAILURE, sqlStateOf, type Output } from './sql-connection.js';
import { WorkloadError } from './workload-spec.js';
import { CREATE_TABLE_SQL, DROP_TABLE_SQL, insertSql, TABLE } from './ycsb-sql.js';

export interface YcsbInitOptions {
  readonly urls: readonly string[];
  readonly drop?: boolean;
  /** Rows to load; default 10,000. */
  readonly insertCount?: number;
  /** Ranges to split the table into (Cairn only); default 0. */
  readonly splits?: number;
  /** Concurrent loaders; default 4. */
  readonly concurrency?: number;
  /** Rows per INSERT; default 100. */
  readonly batchSize?: number;
  readonly seed?: number;
  /** Period of the plain progress lines when the output is not a terminal; default 5 s. */
  readonly progressIntervalMs?: number;
  /**
   * Splits the new, empty table at these keys (sorted ycsb_key values) and
   * spreads the ranges' leases, instead of `ALTER TABLE … SPLIT AT` and
   * `SCATTER` (e.g. through a node's admin hooks, bench/support/scatter.ts);
   * called only against Cairn, after CREATE TABLE and before any row is loaded.
   */
  readonly splitter?: (keys: readonly string[]) => Promise<void>;
}

export interface LoadPoint {
  readonly elapsedSec: number;
  readonly rows: number;
  readonly rowsPerSec: number;
}

export interface YcsbInitResult {
  readonly rows: number;
  readonly elapsedSec: number;
  readonly rowsPerSec: number;
  /** One point per second of loading. */
  readonly series: LoadPoint[];
  /** Rows/s while loading the first 10 % of the rows, and the last 10 %. */
  readonly firstTenthRowsPerSec: number;
  readonly lastTenthRowsPerSec: number;
  /** lastTenth / firstTenth: 1 means no slowdown as the table grows. */
  readonly lastToFirstRatio: number;
  /** Batches re-sent after a 40001 or an ambiguous 40003. */
  readonly retries: number;
  /** Split points issued, or null when the server is not Cairn. */
  readonly splitKeys: string[] | null;
  readonly server: string;
}

/** The keys at which to split a table of `insertCount` records into `splits` ranges. */
export function splitKeys(insertCount: number, splits: number): string[] {
  if (splits <= 1 || insertCount < splits) return [];
  const keys: string[] = new Array<string>(insertCount);
  for (let i = 0; i < insertCount; i++) keys[i] = keyName(i);
  keys.sort();
  const out: string[] = [];
  for (let s = 1; s < splits; s++) out.push(keys[Math.floor((s * insertCount) / splits)] as string);
  return out;
}

/** The seed of record `index`'s Prng: a 32-bit mix of the run's seed and the record index. */
function recordSeed(seed: number, index: number): number {
  return (Math.imul(seed ^ 0x5bd1e995, 0x9e3779b1) + Math.imul(index, 0x85ebca6b)) >>> 0;
}

/**
 * The load's batches: lists of record indexes, each at most `batchSize` long,
 * together holding every index in [0, total) once. Without split keys,
 * consecutive runs of indexes; with them (sorted), each batch's keys fall
 * between two neighbouring split keys, and the batches of the buckets are
 * interleaved (bucket 0's first, bucket 1's first, …, bucket 0's second, …).
 */
export function loadPlan(total: number, batchSize: number, splitKeys: readonly string[] = []): number[][] {
  const out: number[][] = [];
  if (splitKeys.length === 0) {
    for (let first = 0; first < total; first += batchSize) {
      const b: number[] = [];
      for (let i = first; i < Math.min(total, first + batchSize); i++) b.push(i);
      out.push(b);
    }
    return out;
  }
  const buckets: number[][] = Array.from({ length: splitKeys.length + 1 }, () => []);
  for (let i = 0; i < total; i++) {
    const k = keyName(i);
    // The number of split keys ≤ k: the bucket (range) the key falls in.
    let lo = 0;
    let hi = splitKeys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((splitKeys[mid] as string) <= k) lo = mid + 1;
      else hi = mid;
    }
    (buckets[lo] as number[]).push(i);
  }
  for (let c = 0; ; c++) {
    let any = false;
    for (const b of buckets) {
      if (c * batchSize >= b.length) continue;
      any = true;
      out.push(b.slice(c * batchSize, (c + 1) * batchSize));
    }
    if (!any) return out;
  }
}

/** Attempts per batch on 40001 / 40003 before the load fails. */
const MAX_BATCH_ATTEMPTS = 10;
const BAR_WIDTH = 30;
/** ANSI "erase to end of line": a shorter redraw leaves no stale characters. */
const CLEAR_TO_EOL = '\x1b[K';

function progressLine(rows: number, total: number, elapsedSec: number, tty: boolean): string {
  const rate = elapsedSec > 0 ? rows / elapsedSec : 0;
  const eta = rate > 0 ? (total - rows) / rate : 0;
  const pct = total > 0 ? rows / total : 1;
  const text = `${rows.toLocaleString('en-US')}/${total.toLocaleString('en-US')} rows  ${Math.round(rate).toLocaleString('en-US')} rows/s  ETA ${Math.ceil(eta)}s`;
  if (!tty) return `${elapsedSec.toFixed(1)}s ${(pct * 100).toFixed(1)}% ${text}`;
  const filled = Math.round(pct * BAR_WIDTH);
  return `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${(pct * 100).toFixed(1).padStart(5)}% ${text}`;
}

/** Rows/s over the rows in [fromRows, toRows], from (time, cumulative rows) samples taken per batch. */
function rateBetween(marks: readonly [number, number][], fromRows: number, toRows: number): number {
  const timeAt = (rows: number): number => {
    // The first batch completion that reached `rows` (linear between marks).
    let prev: [number, number] = [0, 0];
    for (const m of marks) {
      if (m[1] >= rows) {
        const span = m[1] - prev[1];
        return span > 0 ? prev[0] + ((m[0] - prev[0]) * (rows - prev[1])) / span : m[0];
      }
      prev = m;
    }
    return prev[0];
  };
  const dt = timeAt(toRows) - timeAt(fromRows);
  return dt > 0 ? ((toRows - fromRows) * 1000) / dt : 0;
}

export async function initYcsb(options: YcsbInitOptions, io: { readonly output?: Output } = {}): Promise<YcsbInitResult> {
  const urls = options.urls;
  if (urls.length === 0) throw new WorkloadError('bad_flag', 'at least one URL is needed');
  const total = options.insertCount ?? 10_000;
  const concurrency = Math.max(1, options.concurrency ?? 4);
  const batchSize = Math.max(1, Math.min(options.batchSize ?? 100, Math.floor(65535 / (1 + FIELD_COUNT))));
  const splits = options.splits ?? 0;
  const out = io.output;
  const tty = out?.isTTY === true;
  const print = (line: string): void => out?.write(line + '\n');

  const [admin] = (await openConnections(urls, 1)) as [Connection];
  let server: string;
  let splitAt: string[] | null = null;
  try {
    server = String((await admin.client.query('SELECT version() AS v')).rows[0].v);
    if (options.drop) await admin.client.query(DROP_TABLE_SQL);
    try {
      await admin.client.query(CREATE_TABLE_SQL);
    } catch (e) {
      if ((e as { code?: string }).code === '42P07') {
        throw new WorkloadError('table_exists', `${TABLE} already exists; pass --drop to replace it`, e);
      }
      throw e;
    }
    if (splits > 1) {
      if (server.includes('Cairn')) {
        splitAt = splitKeys(total, splits);
        if (splitAt.length > 0) {
          if (options.splitter !== undefined) await options.splitter(splitAt);
          else {
            const values = splitAt.map((k) => `('${k}')`).join(', ');
            await admin.client.query(`ALTER TABLE ${TABLE} SPLIT AT VALUES ${values}`);
            // Spread the new ranges' leases over the nodes (cockroach workload's
            // SCATTER); a server that cannot move leases only gets a notice.
            try {
              await admin.client.query(`ALTER TABLE ${TABLE} SCATTER`);
            } catch (e) {
              print(`notice: SCATTER failed: ${errorMessage(e)}`);
            }
          }
          print(`split ${TABLE} into ${splitAt.length + 1} ranges`);
        }
      } else {
        print(`notice: --splits ignored: the server is not Cairn (${server.split(' ').slice(0, 2).join(' ')})`);
      }
    }
  } finally {
    await admin.close();
  }

  const conns = await openConnections(urls, concurrency);

  const seed = options.seed ?? 1;
  const plan = loadPlan(total, batchSize, splitAt ?? []);
  const batches = new CounterGenerator(0);
  const fullSql = insertSql(batchSize);
  const start = performance.now();
  let loaded = 0;
  let retries = 0;
  const marks: [number, number][] = [];
  const series: LoadPoint[] = [];
  let lastSecondRows = 0;
  let lastSecond = start;
  let lastPlain = start;
  const plainEvery = options.progressIntervalMs ?? 5000;

  const sample = (): void => {
    const t = performance.now();
    const elapsedSec = (t - start) / 1000;
    series.push({
      elapsedSec: Math.round(elapsedSec * 1000) / 1000,
      rows: loaded,
      rowsPerSec: ((loaded - lastSecondRows) * 1000) / Math.max(1, t - lastSecond),
    });
    lastSecondRows = loaded;
    lastSecond = t;
    if (tty) out?.write(`\r${progressLine(loaded, total, elapsedSec, true)}${CLEAR_TO_EOL}`);
    else if (t - lastPlain >= plainEvery) {
      lastPlain = t;
      print(progressLine(loaded, total, elapsedSec, false));
    }
  };
  const ticker = setInterval(sample, 1000);

  async function loader(conn: Connection): Promise<void> {
    for (;;) {
      const batch = plan[batches.next()];
      if (batch === undefined) return;
      const n = batch.length;
      const values: string[] = new Array<string>(n * (1 + FIELD_COUNT));
      let v = 0;
      for (const i of batch) {
        const fields = new FieldGenerator(new Prng(recordSeed(seed, i)));
        values[v++] = keyName(i);
        for (let f = 0; f < FIELD_COUNT; f++) values[v++] = fields.value();
      }
      // 40001 retries the batch; after an ambiguous 40003 (it may have
      // committed) the retry skips rows already there (ON CONFLICT DO NOTHING:
      // their values are the same, being seeded by record).
      for (let attempt = 1, ambiguous = false; ; attempt++) {
        try {
          await conn.client.query({ text: ambiguous ? insertSql(n, true) : n === batchSize ? fullSql : insertSql(n), values });
          break;
        } catch (e) {
          const state = sqlStateOf(e);
          if ((state !== SERIALIZATION_FAILURE && state !== AMBIGUOUS_RESULT) || attempt >= MAX_BATCH_ATTEMPTS) throw e;
          ambiguous ||= state === AMBIGUOUS_RESULT;
          retries++;
        }
      }
      loaded += n;
      marks.push([performance.now() - start, loaded]);
    }
  }

  try {
    await Promise.all(conns.map((c) => loader(c)));
  } catch (e) {
    throw new WorkloadError('load_failed', `loading failed after ${loaded} rows: ${errorMessage(e)}`, e);
  } finally {
    clearInterval(ticker);
    await Promise.all(conns.map((c) => c.close()));
  }
  const elapsedMs = performance.now() - start;
  const elapsedSec = elapsedMs / 1000;
  if (tty) out?.write(`\r${progressLine(loaded, total, elapsedSec, true)}${CLEAR_TO_EOL}\n`);
  const tenth = Math.max(1, Math.floor(total / 10));
  const firstTenth = rateBetween(marks, 0, tenth);
  const lastTenth = rateBetween(marks, total - tenth, total);
  const result: YcsbInitResult = {
    rows: loaded,
    elapsedSec,
    rowsPerSec: elapsedSec > 0 ? loaded / elapsedSec : 0,
    series,
    firstTenthRowsPerSec: firstTenth,
    lastTenthRowsPerSec: lastTenth,
    lastToFirstRatio: firstTenth > 0 ? lastTenth / firstTenth : 0,
    retries,
    splitKeys: splitAt,
    server,
  };
  print(
    `loaded ${loaded.toLocaleString('en-US')} rows in ${elapsedSec.toFixed(1)}s (${Math.round(result.rowsPerSec).toLocaleString('en-US')} rows/s; ` +
      `last 10 % / first 10 %: ${result.lastToFirstRatio.toFixed(2)})`,
  );
  return result;
}
