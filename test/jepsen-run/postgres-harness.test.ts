// The whole jepsen-style pipeline — client processes, history, checkers, reports — run
// against a real PostgreSQL (known serializable), issue 9: every workload valid with
// nemesis none; a deliberately broken client (READ COMMITTED) must be caught.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runJepsen } from '../../jepsen-style/runner.js';
import { WORKLOADS } from '../../jepsen-style/workloads/index.js';
import { parseHistoryJsonl, pairHistory } from '../../jepsen-style/history/history.js';
import { missingFiles, readResults, tempStore } from './support.js';

const store = tempStore();
afterAll(() => rmSync(store, { recursive: true, force: true }));

const base = { nemesis: 'none', nodes: 1, concurrency: 4, target: 'postgres', storeRoot: store } as const;

describe('jepsen runner against PostgreSQL, nemesis none', () => {
  for (const workload of Object.keys(WORKLOADS).filter((w) => WORKLOADS[w]!.transport !== 'admin-kv')) {
    it(`${workload}: valid, with every run file written`, async () => {
      const r = await runJepsen({ ...base, workload, timeSec: 2, seed: 11 });
      expect(r.valid, r.summary).toBe(true);
      expect(missingFiles(r.dir)).toEqual([]);
      expect(r.counts.ok).toBeGreaterThan(10);
      expect(r.summary).toMatch(new RegExp(`^${workload} none seed=11 2s \\| \\d+ ops \\(\\d+ ok, \\d+ fail, \\d+ info\\) \\| 0 faults \\| .*: valid, 0 anomalies`));
      // history.jsonl is the recorded history: well formed, time-ordered, every op paired.
      const h = parseHistoryJsonl(readFileSync(join(r.dir, 'history.jsonl'), 'utf8'));
      expect(h.length).toBe(r.history.length);
      for (let i = 1; i < h.length; i++) expect(h[i]!.time).toBeGreaterThanOrEqual(h[i - 1]!.time);
      expect(pairHistory(h).length).toBe(r.counts.ops);
      const results = readResults(r.dir);
      expect(results['valid']).toBe(true);
      expect(readFileSync(join(r.dir, 'seed'), 'utf8').trim()).toBe('11');
      const html = readFileSync(join(r.dir, 'timeline.html'), 'utf8');
      expect(html).toContain('<svg');
      expect(html).toContain('id="latency"');
    }, 60_000);
  }
});

describe('a broken client is caught (the pipeline can fail)', () => {
  it('append at READ COMMITTED: elle-append reports anomalies and the verdict is false', async () => {
    const r = await runJepsen({ ...base, workload: 'append', timeSec: 3, seed: 2, concurrency: 6, isolation: 'read committed' });
    expect(r.valid, r.summary).toBe(false);
    const elle = r.checks.results['elle-append']!;
    expect(elle.valid).toBe(false);
    expect(elle.anomalyTypes.length).toBeGreaterThan(0);
    expect(r.summary).toMatch(/elle-append: INVALID, [1-9]\d* anomal/);
    expect(readResults(r.dir)['notes']).toContain('clients run at READ COMMITTED (deliberately broken)');
  }, 60_000);

  it('bank at READ COMMITTED: reads see totals that do not add up', async () => {
    const r = await runJepsen({ ...base, workload: 'bank', timeSec: 3, seed: 3, concurrency: 6, isolation: 'read committed' });
    expect(r.valid, r.summary).toBe(false);
    expect(r.checks.results['bank']!.anomalyTypes).toContain('wrong-total');
  }, 60_000);
});

describe('a nemesis schedule against PostgreSQL', () => {
  it('register under kill: fault windows in history, nemesis.log and results, each with evidence; still valid', async () => {
    const r = await runJepsen({ ...base, workload: 'register', nemesis: 'kill', timeSec: 10, seed: 4, faultIntervalMs: 2000, faultDurationMs: 1500 });
    expect(r.valid, r.summary).toBe(true);
    expect(r.faults.length).toBeGreaterThanOrEqual(1); // a PostgreSQL restart takes seconds
    for (const f of r.faults) {
      expect(f.description).toMatch(/^kill n1 \(/);
      expect(f.evidence.some((e) => /^SIGKILL n1 pid \d+: gone$/.test(e))).toBe(true);
      expect(f.evidence.some((e) => /^restarted n1 as pid \d+$/.test(e))).toBe(true);
      expect(f.bit).toBe(true);
      expect(f.endNs).toBeGreaterThan(f.startNs);
    }
    const nemesisOps = r.history.filter((o) => o.process === 'nemesis');
    expect(nemesisOps.map((o) => o.f)).toEqual(r.faults.flatMap(() => ['start', 'stop']));
    const log = readFileSync(join(r.dir, 'nemesis.log'), 'utf8');
    expect(log.match(/ start kill n1/g)).toHaveLength(r.faults.length);
    expect(log).toContain('healed everything');
    expect(readResults(r.dir)['faultsThatBit']).toBe(r.faults.length);
    // Operations during the outage failed or became indeterminate; none was lost track of.
    expect(r.counts.fail + r.counts.info).toBeGreaterThan(0);
    expect(readFileSync(join(r.dir, 'timeline.html'), 'utf8')).toContain('opacity="0.08"><title>kill n1');
  }, 90_000);
});
