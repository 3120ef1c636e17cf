/**
 * Latency and outcome statistics per operation type.
 *
 * Each OpStats holds two HDR histograms of latencies in microseconds
 * (hdr-histogram-js, 3 significant digits, up to 10 minutes): `interval`
 * collects the operations since the last tick, `cumulative` everything since
 * measurement began. tick() folds the interval into the cumulative histogram
 * and returns one point of the per-second series ("inst" figures come from
 * the interval histogram, "cum" from the cumulative one).
 *
 * Ownership: one OpStats per operation type per run, written only by the
 * run's client loops and read by its reporter (single-threaded).
 */
import * as hdr from 'hdr-histogram-js';
import type { Histogram } from 'hdr-histogram-js';

const HIGHEST_MICROS = 600_000_000;

export function newLatencyHistogram(): Histogram {
  return hdr.build({
    bitBucketSize: 32,
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_MICROS,
    numberOfSignificantValueDigits: 3,
    autoResize: true,
    useWebAssembly: false,
  });
}

/** One second (one tick) of one operation type. */
export interface SeriesPoint {
  /** Seconds since measurement began, at the end of this interval. */
  readonly elapsedSec: number;
  readonly ops: number;
  readonly errors: number;
  readonly opsPerSecInst: number;
  readonly opsPerSecCum: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
  readonly pMaxMs: number;
}

/** The totals of one operation type over the measured period. */
export interface OpTotals {
  readonly count: number;
  readonly errors: number;
  /** SQLSTATE 40001 retries (not counted as errors). */
  readonly retries: number;
  /** Reads, scans and read-modify-writes whose key had no row (YCSB's NOT_FOUND); not errors. */
  readonly notFound: number;
  readonly opsPerSec: number;
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
  /**
   * The whole latency histogram (µs) in HdrHistogram's compressed base64 form
   * ("HISTF…"), readable by any HdrHistogram implementation
   * (decodeFromCompressedBase64), so runs can be merged or re-analysed.
   */
  readonly histogram: string;
}

function ms(micros: number): number {
  return Math.round(micros) / 1000;
}

/**
 * The percentile in ms. HDR reports the top of the value's bucket, which can
 * exceed the recorded maximum; clamp so that p50 ≤ p99 ≤ max always holds.
 */
function pct(h: Histogram, p: number): number {
  return ms(Math.min(h.getValueAtPercentile(p), h.maxValue));
}

export class OpStats {
  readonly interval: Histogram = newLatencyHistogram();
  readonly cumulative: Histogram = newLatencyHistogram();
  private intervalErrors = 0;
  errors = 0;
  retries = 0;
  notFound = 0;

  /** Records one successful operation's latency. */
  record(micros: number): void {
    this.interval.recordValue(micros < 1 ? 1 : Math.round(micros));
  }

  recordError(): void {
    this.intervalErrors++;
    this.errors++;
  }

  recordRetry(): void {
    this.retries++;
  }

  /** Ends an interval of `intervalSec` seconds; `elapsedSec` is since measurement began. */
  tick(elapsedSec: number, intervalSec: number): SeriesPoint {
    const iv = this.interval;
    this.cumulative.add(iv);
    const point: SeriesPoint = {
      elapsedSec: Math.round(elapsedSec * 1000) / 1000,
      ops: iv.totalCount,
      errors: this.intervalErrors,
      opsPerSecInst: intervalSec > 0 ? iv.totalCount / intervalSec : 0,
      opsPerSecCum: elapsedSec > 0 ? this.cumulative.totalCount / elapsedSec : 0,
      p50Ms: pct(iv, 50),
      p95Ms: pct(iv, 95),
      p99Ms: pct(iv, 99),
      pMaxMs: ms(iv.maxValue),
    };
    iv.reset();
    this.intervalErrors = 0;
    return point;
  }

  /** Forgets everything (the end of the ramp). */
  reset(): void {
    this.interval.reset();
    this.cumulative.reset();
    this.intervalErrors = 0;
    this.errors = 0;
    this.retries = 0;
    this.notFound = 0;
  }

  totals(elapsedSec: number): OpTotals {
    const h = this.cumulative;
    return {
      count: h.totalCount,
      errors: this.errors,
      retries: this.retries,
      notFound: this.notFound,
      opsPerSec: elapsedSec > 0 ? h.totalCount / elapsedSec : 0,
      meanMs: ms(h.totalCount > 0 ? h.mean : 0),
      p50Ms: pct(h, 50),
      p95Ms: pct(h, 95),
      p99Ms: pct(h, 99),
      p999Ms: pct(h, 99.9),
      maxMs: ms(h.maxValue),
      histogram: hdr.encodeIntoCompressedBase64(h),
    };
  }
}

// ---- formatting (cockroach workload's layout) ----

export const INTERVAL_HEADER = '_elapsed___errors__ops/sec(inst)___ops/sec(cum)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)';
export const TOTALS_HEADER = '_elapsed___errors_____ops(total)___ops/sec(cum)__avg(ms)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)__total';

function num(n: number, width: number, digits: number): string {
  return n.toFixed(digits).padStart(width);
}

export function formatInterval(p: SeriesPoint, op: string): string {
  return (
    `${num(p.elapsedSec, 7, 1)}s${num(p.errors, 9, 0)}${num(p.opsPerSecInst, 15, 1)}${num(p.opsPerSecCum, 15, 1)}` +
    `${num(p.p50Ms, 9, 1)}${num(p.p95Ms, 9, 1)}${num(p.p99Ms, 9, 1)}${num(p.pMaxMs, 9, 1)} ${op}`
  );
}

export function formatTotals(elapsedSec: number, t: OpTotals, op: string): string {
  return (
    `${num(elapsedSec, 7, 1)}s${num(t.errors, 9, 0)}${num(t.count, 15, 0)}${num(t.opsPerSec, 15, 1)}` +
    `${num(t.meanMs, 9, 1)}${num(t.p50Ms, 9, 1)}${num(t.p95Ms, 9, 1)}${num(t.p99Ms, 9, 1)}${num(t.maxMs, 9, 1)}  ${op}`
  );
}
