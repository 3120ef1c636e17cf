// The CI runs of issue 9 against a real 3-node Cairn cluster (node processes on
// 127.0.<a free subnet>.11–13 started through the CLI): register under kill + partition, and under
// clock skew below the max offset — all must be valid, and every fault must show that it
// bit. These register runs go through the admin KV endpoint (kv-register: single-key
// reads and writes, checked for linearizability) and so test the KV layer below SQL; the
// SQL workloads (append, register over SQL, bank, a canary) are in cairn-sql-ci.test.ts.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot, runJepsen } from '../../jepsen-style/runner.js';
import { expectExercised, missingFiles, readResults } from './support.js';

// Runs go under jepsen-style/store/ci/ (git-ignored); a run that is not valid is kept
// there for the post-mortem, valid ones are removed.
const store = join(repoRoot(), 'jepsen-style', 'store', 'ci');
const keep: string[] = [];
const done: string[] = [];
afterAll(() => {
  for (const d of done) if (!keep.includes(d)) rmSync(d, { recursive: true, force: true });
});
const run = async (o: Parameters<typeof runJepsen>[0]) => {
  const r = await runJepsen(o);
  done.push(r.dir);
  if (r.valid !== true) keep.push(r.dir);
  return r;
};

const base = { workload: 'kv-register', nodes: 3, concurrency: 6, target: 'cairn', storeRoot: store, faultIntervalMs: 3000, faultDurationMs: 4000, recoveryTimeoutMs: 20_000 } as const;

describe('jepsen-style CI runs on a 3-node Cairn cluster', () => {
  it('the Cairn CLI is built (npm test builds first)', () => {
    expect(existsSync(join(repoRoot(), 'dist', 'src', 'cli', 'main.js'))).toBe(true);
  });

  it('register, 30 s of kill + partition: linearizable, faults bit', async () => {
    const r = await run({ ...base, nemesis: 'kill,partition', timeSec: 30, seed: 9 });
    expect(r.valid, `${r.summary} (kept in ${r.dir})`).toBe(true);
    // How many 3 s-apart faults fit in 30 s depends on how long each kill's restart takes (the next fault waits for
    // the heal): at load ~30 only 2 did ('expected 2 to be greater than or equal to 3', valid history, 165 ok). Two
    // faults still show the nemesis repeating (as cairn-sql-ci.test.ts asks), each one biting.
    expect(r.faults.length, r.summary).toBeGreaterThanOrEqual(2);
    expect(r.faults.every((f) => f.bit), JSON.stringify(r.faults, null, 1)).toBe(true);
    // Not '> 100 oks' (290 at load ~20, 165 at ~30: a count that scales with the machine's load) but what a valid
    // verdict needs: the workload ran, reads and writes both succeeded, some of them after the first fault began.
    expectExercised(r, ['read', 'write']);
    expect(missingFiles(r.dir).filter((f) => f !== 'node1.log')).toEqual([]);
    expect(existsSync(join(r.dir, 'node3.log'))).toBe(true);
    expect(readResults(r.dir)['faultsThatBit']).toBe(r.faults.length);
  }, 150_000);

  it('register, 20 s of clock skew at 0.4× and 0.8× the max offset: linearizable', async () => {
    const r = await run({ ...base, nemesis: 'clock-safe', timeSec: 20, seed: 5 });
    expect(r.valid, `${r.summary} (kept in ${r.dir})`).toBe(true);
    expect(r.faults.length).toBeGreaterThanOrEqual(2);
    expect(r.faults.every((f) => f.evidence.some((e) => /clock offset set to -?\d+ ms/.test(e)))).toBe(true);
  }, 120_000);
});
