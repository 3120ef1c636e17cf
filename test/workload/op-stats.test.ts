// OpStats: "inst" figures from the interval histogram, "cum" from everything
// since measurement began; the printed layout follows cockroach workload's.
import { describe, expect, it } from 'vitest';
import { formatInterval, formatTotals, INTERVAL_HEADER, OpStats, TOTALS_HEADER } from '../../src/workload/ycsb/op-stats.js';

describe('OpStats', () => {
  it('separates the interval from the cumulative figures', () => {
    const st = new OpStats();
    for (let i = 1; i <= 100; i++) st.record(i * 100); // 0.1 … 10 ms
    st.recordError();
    const p1 = st.tick(1, 1);
    expect(p1).toMatchObject({ elapsedSec: 1, ops: 100, errors: 1, opsPerSecInst: 100, opsPerSecCum: 100 });
    expect(p1.p50Ms).toBeCloseTo(5, 1);
    expect(p1.p99Ms).toBeCloseTo(9.9, 1);
    expect(p1.pMaxMs).toBeCloseTo(10, 1);

    for (let i = 0; i < 300; i++) st.record(50_000); // 50 ms
    const p2 = st.tick(2, 1);
    expect(p2).toMatchObject({ elapsedSec: 2, ops: 300, errors: 0, opsPerSecInst: 300, opsPerSecCum: 200 });
    expect(p2.p50Ms).toBeCloseTo(50, 0);

    const t = st.totals(2);
    expect(t).toMatchObject({ count: 400, errors: 1, retries: 0, notFound: 0, opsPerSec: 200 });
    expect(t.p50Ms).toBeCloseTo(50, 0);
    expect(t.p50Ms).toBeLessThanOrEqual(t.p99Ms);
    expect(t.p99Ms).toBeLessThanOrEqual(t.maxMs);
    expect(t.histogram).toMatch(/^HISTF/);

    st.reset();
    expect(st.totals(1)).toMatchObject({ count: 0, errors: 0, maxMs: 0 });
  });

  it('prints aligned columns under the headers', () => {
    const line = formatInterval(
      { elapsedSec: 3, ops: 1234, errors: 2, opsPerSecInst: 1234.5, opsPerSecCum: 1100.25, p50Ms: 1.2, p95Ms: 3.4, p99Ms: 5.6, pMaxMs: 12.3 },
      'read',
    );
    expect(INTERVAL_HEADER).toBe('_elapsed___errors__ops/sec(inst)___ops/sec(cum)__p50(ms)__p95(ms)__p99(ms)_pMax(ms)');
    expect(line).toBe('    3.0s        2         1234.5         1100.3      1.2      3.4      5.6     12.3 read');
    expect(line.indexOf(' read')).toBe(INTERVAL_HEADER.length);
    const st = new OpStats();
    st.record(2000);
    st.tick(1, 1);
    const totals = formatTotals(1, st.totals(1), 'update');
    expect(totals).toBe('    1.0s        0              1            1.0      2.0      2.0      2.0      2.0      2.0  update');
    expect(totals.indexOf('  update')).toBe(TOTALS_HEADER.indexOf('__total'));
  });
});
