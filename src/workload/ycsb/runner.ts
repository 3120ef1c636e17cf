/**
 * The YCSB run phase: `runYcsb(options, { output })`.
 *
 *   C client loops ──(round-robin over URLs, one pg.Client each)──▶ server
 *        │  each loop: [pace] → choose op → run it (retry 40001) → record µs
 *        ▼
 *   OpStats per op type ◀── reporter, every second: one line per op type,
 *                            series point per op type; totals at the end
 *
 * Shared by all loops of one run (single-threaded, no locks): the Prng and
 * the generators drawn from it, the AcknowledgedCounter (inserts extend the
 * key space; reads only target acknowledged records), the rate limiter and
 * the op budget. Determinism: the Prng is seeded by `seed`; which loop draws
 * which value depends on server timing, so two runs with one seed draw the
 * same values but not in the same interleaving.
 *
 * Phases: `rampMs` staggers the loops' starts over the ramp; everything
 * measured during the ramp is discarded, and `durationMs` and `maxOps` count
 * from its end. The run stops at the first of: duration elapsed, op budget
 * spent, the abort signal, or — without `tolerateErrors` — the first error
 * other than a 40001 retry, in which case runYcsb rejects with YcsbRunError
 * (carrying the partial result) after writing the JSON file.
 *
 * Errors: SQLSTATE 40001 re-runs the operation (a read-modify-write in a
 * transaction re-runs the whole transaction) up to `maxRetries` times, each
 * counted as a retry, not an error. Any other failure counts one error for
 * the op type and one under its SQLSTATE; a client whose connection broke
 * reconnects before its next operation (a failed reconnect counts as an error
 * of the mix's first op type, under its SQLSTATE or connection:<code>, and is
 * retried after 100 ms).
 */
import { writeFileSync } from 'node:fs';
import { assert } from '../../util/assert.js';
import { formatDuration } from '../duration.js';
import { Prng } from '../../util/prng.js';
import { AcknowledgedCounter } from './counter-generator.js';
import { FieldGenerator } from './field-generator.js';
import { keyName } from './fnv64.js';
import {
  formatInterval,
  formatTotals,
  INTERVAL_HEADER,
  OpStats,
  TOTALS_HEADER,
  type OpTotals,
  type SeriesPoint,
} from './op-stats.js';
import {
  breaksConnection,
  Connection,
  errorMessage,
  isServerError,
  openConnections,
  SERIALIZATION_FAILURE,
  sleep,
  sqlStateOf,
  type Output,
} from './sql-connection.js';
import { UniformGenerator } from './uniform-generator.js';
import {
  KeyChooser,
  OperationChooser,
  WORKLOADS,
  WorkloadError,
  type OpType,
  type RequestDistribution,
  type WorkloadName,
} from './workload-spec.js';
import { execute, INSERT, READ, SCAN, TABLE, UPDATES, type QueryMethod } from './ycsb-sql.js';

export interface YcsbRunOptions {
  /** PostgreSQL-protocol URLs; client i connects to urls[i % urls.length]. */
  readonly urls: readonly string[];
  readonly workload: WorkloadName;
  /** Overrides the workload's distribution. */
  readonly requestDistribution?: RequestDistribution;
  /** Client loops (connections); default 8. */
  readonly concurrency?: number;
  /** Measured duration; default 60 s unless maxOps is given. */
  readonly durationMs?: number;
  /** Stop after this many measured operations. */
  readonly maxOps?: number;
  /** Total operations per second across all clients; 0 or absent: unlimited. */
  readonly maxRate?: number;
  readonly rampMs?: number;
  readonly method?: QueryMethod;
  readonly minScanLength?: number;
  readonly maxScanLength?: number;
  /** Run read-modify-write as BEGIN; SELECT; UPDATE; COMMIT. */
  readonly readModifyWriteInTxn?: boolean;
  /** Write the result object here as JSON. */
  readonly jsonFile?: string;
  readonly tolerateErrors?: boolean;
  readonly seed?: number;
  /** Records present (indexes 0..n-1); default: SELECT count(*) FROM usertable. */
  readonly recordCount?: number;
  /** Retries of one operation on SQLSTATE 40001 before it counts as an error; default 100. */
  readonly maxRetries?: number;
  /** Reporter period; default 1000 ms. */
  readonly reportIntervalMs?: number;
  readonly signal?: AbortSignal;
}

export interface YcsbRunIo {
  /** Where the per-second lines and totals go; nothing is printed when absent. */
  readonly output?: Output;
}

export interface YcsbRunResult {
  readonly config: {
    readonly workload: WorkloadName;
    readonly requestDistribution: RequestDistribution;
    readonly concurrency: number;
    readonly durationMs: number | null;
    readonly maxOps: number | null;
    readonly maxRate: number | null;
    readonly rampMs: number;
    readonly method: QueryMethod;
    readonly minScanLength: number;
    readonly maxScanLength: number;
    readonly readModifyWriteInTxn: boolean;
    readonly tolerateErrors: boolean;
    readonly seed: number;
    readonly recordCount: number;
    readonly urls: readonly string[];
  };
  readonly startedAt: string;
  /** Seconds measured (after the ramp). */
  readonly elapsedSec: number;
  /** Totals per operation type of the workload's mix. */
  readonly ops: Partial<Record<OpType, OpTotals>>;
  /** All operation types together. */
  readonly total: { readonly count: number; readonly errors: number; readonly retries: number; readonly opsPerSec: number };
  /** Per-second series per operation type. */
  readonly series: Partial<Record<OpType, SeriesPoint[]>>;
  /** Errors by SQLSTATE (or "connection:<code>" for client-side failures). */
  readonly errorsBySqlState: Record<string, number>;
  /** Connections re-opened after they broke. */
  readonly reconnects: number;
  /** Insertion indexes [recordCount, insertedUpTo) were inserted (and acknowledged). */
  readonly insertedUpTo: number;
  /** The error that stopped the run, when not tolerating errors. */
  readonly firstError: { readonly op: OpType; readonly sqlState: string; readonly message: string } | null;
}

export class YcsbRunError extends WorkloadError {
  override name = 'YcsbRunError';
  constructor(
    message: string,
    readonly result: YcsbRunResult,
    cause: unknown,
  ) {
    super('operation_failed', message, cause);
  }
}

/** Paces operations to a total rate: each claims the next slot, 1/rate apart. */
class RateLimiter {
  private nextSlot = 0;
  constructor(private readonly intervalMs: number) {}
  /** Milliseconds to wait before the caller's operation. */
  claim(now: number): number {
    const slot = Math.max(now, this.nextSlot);
    this.nextSlot = slot + this.intervalMs;
    return slot - now;
  }
}

const now = (): number => performance.now();

/** The URL with any password replaced by "***", for results that are written out. */
export function redactPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*):[^/?#]*@/i, '$1:***@');
}

export async function runYcsb(options: YcsbRunOptions, io: YcsbRunIo = {}): Promise<YcsbRunResult> {
  const spec = WORKLOADS[options.workload];
  assert(spec !== undefined, `workload: unknown workload ${options.workload}`);
  const urls = options.urls;
  if (urls.length === 0) throw new WorkloadError('bad_flag', 'at least one URL is needed');
  const concurrency = options.concurrency ?? 8;
  const distribution = options.requestDistribution ?? spec.distribution;
  const method = options.method ?? 'prepare';
  const minScan = options.minScanLength ?? 1;
  const maxScan = options.maxScanLength ?? 100;
  if (!(concurrency >= 1)) throw new WorkloadError('bad_flag', `concurrency must be at least 1, got ${concurrency}`);
  if (!(minScan >= 1 && maxScan >= minScan)) throw new WorkloadError('bad_flag', `bad scan lengths [${minScan}, ${maxScan}]`);
  const durationMs = options.durationMs ?? (options.maxOps === undefined ? 60_000 : undefined);
  const rampMs = options.rampMs ?? 0;
  const seed = options.seed ?? Date.now() % 2 ** 31;
  const maxRetries = options.maxRetries ?? 100;
  const reportMs = options.reportIntervalMs ?? 1000;
  const out = io.output;
  const print = (line: string): void => out?.write(line + '\n');

  // Connections first: a bad URL fails before anything is measured.
  const conns = await openConnections(urls, concurrency);

  let recordCount = options.recordCount;
  try {
    if (recordCount === undefined) {
      const res = await conns[0]!.client.query(`SELECT count(*) AS n FROM ${TABLE}`);
      recordCount = Number(res.rows[0].n);
    }
  } catch (e) {
    await Promise.all(conns.map((c) => c.close()));
    throw new WorkloadError('no_data', `cannot count ${TABLE} (run "workload init ycsb" first): ${errorMessage(e)}`, e);
  }
  if (recordCount < 2) {
    await Promise.all(conns.map((c) => c.close()));
    throw new WorkloadError('no_data', `${TABLE} holds ${recordCount} records; run "workload init ycsb" first`);
  }

  print(
    `ycsb ${spec.name}: ${recordCount} records, ${concurrency} clients over ${urls.length} URL(s), ` +
      `${distribution}, method ${method}, seed ${seed}`,
  );
  const rng = new Prng(seed);
  const acked = new AcknowledgedCounter(recordCount);
  const opChooser = new OperationChooser(rng, spec);
  const keys = new KeyChooser(rng, distribution, acked);
  const fields = new FieldGenerator(rng);
  const scanLengths = new UniformGenerator(rng);
  const opTypes = opChooser.opTypes;
  const stats = new Map<OpType, OpStats>(opTypes.map((op) => [op, new OpStats()]));
  const series = new Map<OpType, SeriesPoint[]>(opTypes.map((op) => [op, []]));
  const errorsBySqlState: Record<string, number> = {};
  const limiter = options.maxRate !== undefined && options.maxRate > 0 ? new RateLimiter(1000 / options.maxRate) : undefined;

  const startedAt = new Date().toISOString();
  const runStart = now();
  let measureStart = runStart;
  let measuring = false;
  let measuredOps = 0;
  let stopping = false;
  let reconnects = 0;
  let firstError: YcsbRunResult['firstError'] = null;
  let firstCause: unknown;
  let stopTime = 0;
  const stop = (): void => {
    if (!stopping) {
      stopping = true;
      stopTime = now();
    }
  };
  const onAbort = (): void => stop();
  options.signal?.addEventListener('abort', onAbort);
  if (options.signal?.aborted) stop();

  // ---- the operations ----
  const readKey = (): string => keyName(keys.next());

  async function retrying(st: OpStats, fn: () => Promise<void>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await fn();
        return;
      } catch (e) {
        if (sqlStateOf(e) !== SERIALIZATION_FAILURE || attempt >= maxRetries) throw e;
        st.recordRetry();
      }
    }
  }

  async function runOp(conn: Connection, op: OpType, st: OpStats): Promise<void> {
    const c = conn.client;
    switch (op) {
      case 'read': {
        const key = readKey();
        return retrying(st, async () => {
          if ((await execute(c, method, READ, [key])) === 0) st.notFound++;
        });
      }
      case 'update': {
        const key = readKey();
        const stmt = UPDATES[fields.fieldIndex()]!;
        const value = fields.value();
        return retrying(st, async () => void (await execute(c, method, stmt, [key, value])));
      }
      case 'scan': {
        const key = readKey();
        const n = scanLengths.between(minScan, maxScan);
        return retrying(st, async () => {
          if ((await execute(c, method, SCAN, [key, n])) === 0) st.notFound++;
        });
      }
      case 'insert': {
        const index = acked.next();
        try {
          const values = [keyName(index), ...fields.values()];
          await retrying(st, async () => void (await execute(c, method, INSERT, values)));
        } finally {
          // As YCSB: acknowledged even when it failed, so the key space never stalls.
          acked.acknowledge(index);
        }
        return;
      }
      case 'readModifyWrite': {
        const key = readKey();
        const stmt = UPDATES[fields.fieldIndex()]!;
        const value = fields.value();
        if (!options.readModifyWriteInTxn) {
          return retrying(st, async () => {
            if ((await execute(c, method, READ, [key])) === 0) st.notFound++;
            await execute(c, method, stmt, [key, value]);
          });
        }
        return retrying(st, async () => {
          await c.query('BEGIN');
          try {
            const found = await execute(c, method, READ, [key]);
            await execute(c, method, stmt, [key, value]);
            await c.query('COMMIT');
            if (found === 0) st.notFound++;
          } catch (e) {
            if (isServerError(e)) await c.query('ROLLBACK').catch(() => undefined);
            throw e;
          }
        });
      }
    }
  }

  function onError(op: OpType, st: OpStats, e: unknown): void {
    const state = sqlStateOf(e);
    if (stopping && !isServerError(e)) return; // connections closing at shutdown
    st.recordError();
    errorsBySqlState[state] = (errorsBySqlState[state] ?? 0) + 1;
    if (!options.tolerateErrors && firstError === null) {
      firstError = { op, sqlState: state, message: errorMessage(e) };
      firstCause = e;
      print(`error: ${op} failed: SQLSTATE ${state}: ${errorMessage(e)}`);
      stop();
    }
  }

  async function clientLoop(i: number): Promise<void> {
    if (rampMs > 0) await sleep((rampMs * i) / concurrency);
    let conn = conns[i]!;
    while (!stopping) {
      if (conn.broken) {
        await conn.close();
        try {
          conn = conns[i] = await Connection.open(conn.url);
          reconnects++;
        } catch (e) {
          onError(opTypes[0]!, stats.get(opTypes[0]!)!, e);
          await sleep(100);
          continue;
        }
      }
      if (limiter !== undefined) {
        const wait = limiter.claim(now());
        if (wait > 0) await sleep(wait);
        if (stopping) break;
      }
      if (measuring && options.maxOps !== undefined) {
        if (measuredOps >= options.maxOps) {
          stop();
          break;
        }
      }
      const countsTowardBudget = measuring;
      if (countsTowardBudget) measuredOps++;
      const op = opChooser.next();
      const st = stats.get(op)!;
      const t0 = now();
      try {
        await runOp(conn, op, st);
        if (measuring === countsTowardBudget) st.record((now() - t0) * 1000);
      } catch (e) {
        if (breaksConnection(e)) conn.broken = true;
        onError(op, st, e);
      }
    }
  }

  // ---- reporting ----
  let ticks = 0;
  let lastTick = runStart;
  const tick = (final: boolean): void => {
    const t = final ? stopTime : now();
    const elapsedSec = (t - measureStart) / 1000;
    const intervalSec = (t - lastTick) / 1000;
    lastTick = t;
    if (final && intervalSec <= 0.001) {
      for (const st of stats.values()) st.tick(elapsedSec, 0); // fold any stragglers
      return;
    }
    if (ticks % 20 === 0) print(INTERVAL_HEADER);
    ticks++;
    for (const op of opTypes) {
      const point = stats.get(op)!.tick(elapsedSec, intervalSec);
      series.get(op)!.push(point);
      print(formatInterval(point, op));
    }
  };
  // Measurement begins after the ramp: stats are reset, the reporter and the
  // duration start from there (nothing is printed during the ramp but a notice).
  let reporter: ReturnType<typeof setInterval> | undefined;
  let durationTimer: ReturnType<typeof setTimeout> | undefined;
  const beginMeasuring = (): void => {
    if (stopping) return;
    measuring = true;
    measureStart = now();
    lastTick = measureStart;
    for (const st of stats.values()) st.reset();
    reporter = setInterval(() => tick(false), reportMs);
    if (durationMs !== undefined) durationTimer = setTimeout(stop, durationMs);
  };
  let rampTimer: ReturnType<typeof setTimeout> | undefined;
  if (rampMs > 0) {
    print(`ramping up ${concurrency} clients over ${formatDuration(rampMs)}`);
    rampTimer = setTimeout(beginMeasuring, rampMs);
  } else {
    beginMeasuring();
  }

  try {
    await Promise.all(conns.map((_, i) => clientLoop(i)));
  } finally {
    if (reporter !== undefined) clearInterval(reporter);
    if (durationTimer !== undefined) clearTimeout(durationTimer);
    if (rampTimer !== undefined) clearTimeout(rampTimer);
    options.signal?.removeEventListener('abort', onAbort);
    stop();
    await Promise.all(conns.map((c) => c.close()));
  }
  if (measuring) tick(true);

  const elapsedSec = measuring ? Math.max(0, (stopTime - measureStart) / 1000) : 0;
  const ops: Partial<Record<OpType, OpTotals>> = {};
  const seriesOut: Partial<Record<OpType, SeriesPoint[]>> = {};
  let count = 0;
  let errors = 0;
  let retries = 0;
  print('');
  print(TOTALS_HEADER);
  for (const op of opTypes) {
    const totals = stats.get(op)!.totals(elapsedSec);
    ops[op] = totals;
    seriesOut[op] = series.get(op)!;
    count += totals.count;
    errors += totals.errors;
    retries += totals.retries;
    print(formatTotals(elapsedSec, totals, op));
  }
  if (retries > 0) print(`retries (SQLSTATE 40001): ${retries}`);
  const missing = opTypes.filter((op) => (ops[op]?.notFound ?? 0) > 0);
  if (missing.length > 0) print(`not found: ${missing.map((op) => `${op}=${ops[op]!.notFound}`).join(' ')}`);
  const states = Object.keys(errorsBySqlState);
  if (states.length > 0) print(`errors by SQLSTATE: ${states.map((s) => `${s}=${errorsBySqlState[s]}`).join(' ')}`);
  if (reconnects > 0) print(`reconnects: ${reconnects}`);

  const result: YcsbRunResult = {
    config: {
      workload: spec.name,
      requestDistribution: distribution,
      concurrency,
      durationMs: durationMs ?? null,
      maxOps: options.maxOps ?? null,
      maxRate: options.maxRate ?? null,
      rampMs,
      method,
      minScanLength: minScan,
      maxScanLength: maxScan,
      readModifyWriteInTxn: options.readModifyWriteInTxn ?? false,
      tolerateErrors: options.tolerateErrors ?? false,
      seed,
      recordCount,
      urls: urls.map(redactPassword),
    },
    startedAt,
    elapsedSec,
    ops,
    total: { count, errors, retries, opsPerSec: elapsedSec > 0 ? count / elapsedSec : 0 },
    series: seriesOut,
    errorsBySqlState,
    reconnects,
    insertedUpTo: acked.lastValue() + 1,
    firstError,
  };
  if (options.jsonFile !== undefined) writeFileSync(options.jsonFile, JSON.stringify(result, null, 2) + '\n');
  if (firstError !== null) {
    const fe = firstError as NonNullable<YcsbRunResult['firstError']>;
    throw new YcsbRunError(`${fe.op} failed: SQLSTATE ${fe.sqlState}: ${fe.message}`, result, firstCause);
  }
  return result;
}
