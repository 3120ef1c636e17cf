/**
 * The CI must-show of issue 8: the short YCSB bench — 10,000 records, 10 s
 * per workload, A–F, 16 clients, Cairn only, on a 3-node cluster of real
 * processes (replication factor 3) started by the bench itself — completes
 * every workload with zero errors and writes the results file (.json, .md)
 * and the chart (.svg). The figures are never asserted (the machine is
 * shared); they are printed for the log.
 *
 * Needs dist/ (npm test builds first): the nodes are dist/src/cli/main.js.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runYcsbBench } from '../../bench/ycsb.js';
import { WORKLOAD_NAMES } from '../../src/workload/index.js';

describe('bench:ycsb short run (CI)', () => {
  it('runs A–F on a 3-node Cairn cluster with zero errors and writes results and chart', async () => {
    const out = mkdtempSync(join(tmpdir(), 'cairn-ycsb-ci-'));
    try {
      const lines: string[] = [];
      const { results, files } = await runYcsbBench({
        records: 10_000,
        concurrency: [16],
        durationMs: 10_000,
        workloads: [...WORKLOAD_NAMES],
        method: 'prepare',
        splits: 0,
        cairn: true,
        postgres: false,
        out,
        log: (s) => void lines.push(s),
      });
      console.log(lines.join(''));
      expect(results.map((r) => r.target)).toEqual(['cairn']);
      const cairn = results[0]!;
      expect(cairn.load.rows).toBe(10_000);
      expect(cairn.runs.map((r) => r.workload)).toEqual([...WORKLOAD_NAMES]);
      for (const r of cairn.runs) {
        expect({ workload: r.workload, errors: r.errors, bySqlState: r.errorsBySqlState }).toEqual({ workload: r.workload, errors: 0, bySqlState: {} });
        expect(r.run.total.count).toBeGreaterThan(0);
        expect(r.rssMiB).toHaveLength(3);
        // The nodes' KV counters over the run (bench/support/node-metrics.ts): every operation is at least one KV batch.
        expect(r.kvPerOp?.distsender_batches).toBeGreaterThanOrEqual(1);
      }
      expect(files.map((f) => f.slice(f.lastIndexOf('.')))).toEqual(['.json', '.md', '.svg']);
      for (const f of files) expect(existsSync(f)).toBe(true);
      const json = JSON.parse(readFileSync(files[0]!, 'utf8')) as { results: { target: string; runs: unknown[] }[] };
      expect(json.results[0]?.runs).toHaveLength(WORKLOAD_NAMES.length);
      const md = readFileSync(files[1]!, 'utf8');
      for (const w of WORKLOAD_NAMES) expect(md).toContain(`## Workload ${w}, 16 clients`);
      const svg = readFileSync(files[2]!, 'utf8');
      expect(svg.startsWith('<svg')).toBe(true);
      expect(svg.match(/<rect [^>]*><title>cairn /g)?.length).toBe(2 * WORKLOAD_NAMES.length);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 170_000);
});
