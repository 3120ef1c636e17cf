/**
 * The metrics registry (src/server/metrics.ts): Prometheus text exposition
 * format 0.0.4 — HELP/TYPE lines, label escaping, cumulative histogram
 * buckets with _sum/_count — checked by parsing what render() writes, and a
 * property: every cumulative bucket equals the number of observations ≤ its
 * bound (a simple reference count).
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { MetricRegistry, parsePrometheusText } from '../../src/server/metrics.js';

describe('MetricRegistry', () => {
  it('renders counters, gauges, function metrics and labels in the text format', () => {
    const m = new MetricRegistry();
    const c = m.counter('cairn_test_total', 'a counter');
    const g = m.gauge('cairn_gauge', 'a gauge', { node: 'n"1\\' });
    let fv = 7;
    m.counterFunc('cairn_func_total', 'read at scrape', () => fv);
    c.inc();
    c.inc(2);
    g.set(-1.5);
    fv = 9;
    const text = m.render();
    expect(text).toContain('# HELP cairn_test_total a counter\n# TYPE cairn_test_total counter\ncairn_test_total 3\n');
    const { samples, types } = parsePrometheusText(text);
    expect(types.get('cairn_gauge')).toBe('gauge');
    expect(samples.find((s) => s.name === 'cairn_gauge')).toEqual({ name: 'cairn_gauge', labels: { node: 'n"1\\' }, value: -1.5 });
    expect(samples.find((s) => s.name === 'cairn_func_total')?.value).toBe(9);
    expect(() => c.inc(-1)).toThrow();
    expect(() => m.counter('cairn_test_total', 'again')).toThrow(/registered twice/);
    expect(() => m.gauge('bad name', 'x')).toThrow(/invalid metric name/);
  });

  it('histogram buckets are cumulative and match a reference count (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 20, noNaN: true }), { maxLength: 200 }), (values) => {
        const m = new MetricRegistry();
        const h = m.histogram('cairn_lat_seconds', 'latency');
        for (const v of values) h.observe(v);
        const { samples } = parsePrometheusText(m.render());
        const buckets = samples.filter((s) => s.name === 'cairn_lat_seconds_bucket');
        for (const b of buckets) {
          const le = b.labels['le'] === '+Inf' ? Infinity : Number(b.labels['le']);
          expect(b.value).toBe(values.filter((v) => v <= le).length);
        }
        expect(buckets.at(-1)?.labels['le']).toBe('+Inf');
        expect(samples.find((s) => s.name === 'cairn_lat_seconds_count')?.value).toBe(values.length);
        const sum = samples.find((s) => s.name === 'cairn_lat_seconds_sum')?.value ?? NaN;
        expect(sum).toBeCloseTo(values.reduce((a, b) => a + b, 0), 6);
      }),
      { numRuns: 100 },
    );
  });

  it('the parser rejects malformed lines', () => {
    expect(() => parsePrometheusText('cairn_x{a="1" 2\n')).toThrow(/line 1/);
    expect(() => parsePrometheusText('cairn_x abc\n')).toThrow(/malformed value/);
    expect(parsePrometheusText('# HELP x y\n# TYPE x counter\nx 1\n').samples).toEqual([{ name: 'x', labels: {}, value: 1 }]);
  });
});
