/**
 * A small metrics registry rendered in the Prometheus text exposition format
 * (version 0.0.4) for `/_status/vars`.
 *
 *   Counter    monotonically increasing; inc(n)
 *   Gauge      set(v) / inc / dec
 *   Histogram  cumulative buckets (upper bounds, seconds) + _sum + _count;
 *              observe(v) is a short linear walk over ≤ 20 bounds, no allocation
 *   FuncMetric a counter or gauge read from a callback at scrape time: how the
 *              KV and RPC layers' plain-number counters (StoreMetrics,
 *              RpcMetrics) are exported without those layers knowing about
 *              this registry
 *
 * Output for one metric:
 *
 *     # HELP cairn_kv_requests_total KV batches served
 *     # TYPE cairn_kv_requests_total counter
 *     cairn_kv_requests_total 42
 *     cairn_kv_request_latency_seconds_bucket{le="0.001"} 3
 *     …
 *     cairn_kv_request_latency_seconds_bucket{le="+Inf"} 42
 *
 * Labels: a metric may carry fixed labels; a labelled family is registered
 * once per label set (same name, same help/type), rendered under one HELP/TYPE.
 *
 * Ownership: src/server. Scrapes read the values; nothing here does I/O.
 */
import { assert } from '../util/assert.js';

export type Labels = Readonly<Record<string, string>>;
type MetricType = 'counter' | 'gauge' | 'histogram';

interface Sample {
  readonly labels: Labels;
  render(name: string, out: string[]): void;
}

/** Latency buckets in seconds: 100 µs … 10 s. */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

function formatLabels(labels: Labels, extra?: [string, string]): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  if (extra !== undefined) parts.push(`${extra[0]}="${extra[1]}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

export class Counter implements Sample {
  private v = 0;
  constructor(readonly labels: Labels) {}
  inc(n = 1): void {
    assert(n >= 0, 'metrics: a counter only goes up');
    this.v += n;
  }
  get value(): number {
    return this.v;
  }
  render(name: string, out: string[]): void {
    out.push(`${name}${formatLabels(this.labels)} ${formatValue(this.v)}`);
  }
}

export class Gauge implements Sample {
  private v = 0;
  constructor(readonly labels: Labels) {}
  set(v: number): void {
    this.v = v;
  }
  inc(n = 1): void {
    this.v += n;
  }
  dec(n = 1): void {
    this.v -= n;
  }
  get value(): number {
    return this.v;
  }
  render(name: string, out: string[]): void {
    out.push(`${name}${formatLabels(this.labels)} ${formatValue(this.v)}`);
  }
}

class FuncSample implements Sample {
  constructor(
    readonly labels: Labels,
    private readonly read: () => number,
  ) {}
  render(name: string, out: string[]): void {
    out.push(`${name}${formatLabels(this.labels)} ${formatValue(this.read())}`);
  }
}

export class Histogram implements Sample {
  private readonly counts: Float64Array;
  private sum = 0;
  private n = 0;
  constructor(
    readonly labels: Labels,
    readonly bounds: readonly number[],
  ) {
    for (let i = 1; i < bounds.length; i++) assert((bounds[i] as number) > (bounds[i - 1] as number), 'metrics: histogram bounds must increase');
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > (b[i] as number)) i++;
    this.counts[i]!++;
    this.sum += v;
    this.n++;
  }
  /** Observes the seconds elapsed since `startMs` (a performance.now() reading). */
  observeSince(startMs: number): void {
    this.observe((performance.now() - startMs) / 1000);
  }
  get count(): number {
    return this.n;
  }
  render(name: string, out: string[]): void {
    let cum = 0;
    for (let i = 0; i < this.bounds.length; i++) {
      cum += this.counts[i] as number;
      out.push(`${name}_bucket${formatLabels(this.labels, ['le', formatValue(this.bounds[i] as number)])} ${cum}`);
    }
    cum += this.counts[this.bounds.length] as number;
    out.push(`${name}_bucket${formatLabels(this.labels, ['le', '+Inf'])} ${cum}`);
    out.push(`${name}_sum${formatLabels(this.labels)} ${formatValue(this.sum)}`);
    out.push(`${name}_count${formatLabels(this.labels)} ${this.n}`);
  }
}

interface Family {
  readonly help: string;
  readonly type: MetricType;
  readonly samples: Sample[];
}

const NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

export class MetricRegistry {
  private readonly families = new Map<string, Family>();

  private add<S extends Sample>(name: string, help: string, type: MetricType, sample: S): S {
    assert(NAME_RE.test(name), `metrics: invalid metric name ${name}`);
    for (const k of Object.keys(sample.labels)) assert(NAME_RE.test(k) && k !== 'le', `metrics: invalid label name ${k}`);
    let f = this.families.get(name);
    if (f === undefined) {
      f = { help, type, samples: [] };
      this.families.set(name, f);
    }
    assert(f.type === type, `metrics: ${name} registered as ${f.type} and ${type}`);
    const key = formatLabels(sample.labels);
    assert(!f.samples.some((s) => formatLabels(s.labels) === key), `metrics: ${name}${key} registered twice`);
    f.samples.push(sample);
    return sample;
  }

  counter(name: string, help: string, labels: Labels = {}): Counter {
    return this.add(name, help, 'counter', new Counter(labels));
  }

  gauge(name: string, help: string, labels: Labels = {}): Gauge {
    return this.add(name, help, 'gauge', new Gauge(labels));
  }

  histogram(name: string, help: string, bounds: readonly number[] = LATENCY_BUCKETS_SECONDS, labels: Labels = {}): Histogram {
    return this.add(name, help, 'histogram', new Histogram(labels, bounds));
  }

  /** A counter whose value is read from `read` at scrape time (a layer's plain counter). */
  counterFunc(name: string, help: string, read: () => number, labels: Labels = {}): void {
    this.add(name, help, 'counter', new FuncSample(labels, read));
  }

  /** A gauge whose value is read from `read` at scrape time. */
  gaugeFunc(name: string, help: string, read: () => number, labels: Labels = {}): void {
    this.add(name, help, 'gauge', new FuncSample(labels, read));
  }

  /** The Prometheus text exposition of every metric, families in registration order. */
  render(): string {
    const out: string[] = [];
    for (const [name, f] of this.families) {
      out.push(`# HELP ${name} ${f.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`);
      out.push(`# TYPE ${name} ${f.type}`);
      for (const s of f.samples) s.render(name, out);
    }
    out.push('');
    return out.join('\n');
  }
}

/** One parsed sample of the text format (for tests and `cairn node status`). */
export interface ParsedSample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/**
 * Parses the Prometheus text format (the subset render() writes, plus blank
 * lines and comments); throws ServerError-free plain Errors on malformed
 * lines, naming the line.
 */
export function parsePrometheusText(text: string): { samples: ParsedSample[]; types: Map<string, string> } {
  const samples: ParsedSample[] = [];
  const types = new Map<string, string>();
  const lineRe = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$/;
  const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
  for (const [i, line] of text.split('\n').entries()) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const t = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
      if (t !== null) types.set(t[1] as string, t[2] as string);
      else if (!line.startsWith('# HELP ') && !line.startsWith('# ')) throw new Error(`metrics: line ${i + 1} is a malformed comment: ${line}`);
      continue;
    }
    const m = lineRe.exec(line);
    if (m === null) throw new Error(`metrics: line ${i + 1} is not a sample: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[3] ?? '';
    labelRe.lastIndex = 0;
    while (labelRe.lastIndex < body.length) {
      const l = labelRe.exec(body);
      if (l === null) throw new Error(`metrics: line ${i + 1} has malformed labels: ${line}`);
      labels[l[1] as string] = (l[2] as string).replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    const raw = m[4] as string;
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    if (Number.isNaN(value) && raw !== 'NaN') throw new Error(`metrics: line ${i + 1} has a malformed value: ${line}`);
    samples.push({ name: m[1] as string, labels, value });
  }
  return { samples, types };
}
