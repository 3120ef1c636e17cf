// The randomized fault simulation (issue 3): thousands of schedules of
// message loss, duplication, delay and reordering, partitions of arbitrary
// subsets, crashes that lose unpersisted state, restarts, compaction and
// membership changes, with Raft's safety properties checked after every step
// (Raft §5.2 Election Safety, §5.3 Leader Append-Only and Log Matching, §5.4
// Leader Completeness and State Machine Safety) and liveness after healing.
// It complements safety.test.ts (whole-group delivery rounds, the library's
// own quick guard) with single-message steps, so Figure-8 histories (§5.4.2)
// are reached, and with planted bugs that it must catch.
//
// Replay a failure: SIM_SEED=<seed> SIM_NODES=<n> SIM_STEPS=<steps> npx vitest run test/raft/simulation.test.ts
// Scale: SIM_RUNS=<schedules per size> (default 1500).
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { runSimulation, type SimOptions, type SimResult } from '../../raft/rafttest/sim-schedule.js';
import { PLANTED_FAULTS } from '../../raft/rafttest/sim-faults.js';

const RUNS = Number(process.env['SIM_RUNS'] ?? 1500);

/** The failure, how to replay it, and the end of its full trace (a replay: runs are deterministic). */
function explain(o: SimOptions, r: SimResult): string {
  const trace = r.trace ?? runSimulation({ ...o, recordTrace: true }).trace ?? [];
  return [
    r.failure ?? '',
    `replay: SIM_SEED=${o.seed} SIM_NODES=${o.nodes} SIM_STEPS=${o.steps} npx vitest run test/raft/simulation.test.ts`,
    `   or: runSimulation(${JSON.stringify({ ...o, recordTrace: true })})`,
    `failed at step ${r.failedAt}; last trace lines:`,
    ...trace.slice(-80).map((l) => `  ${l}`),
  ].join('\n');
}

function assertRun(o: SimOptions): SimResult {
  const r = runSimulation(o);
  if (r.failure !== null) throw new Error(explain(o, r));
  return r;
}

describe('raft fault simulation', () => {
  const replaySeed = process.env['SIM_SEED'];
  if (replaySeed !== undefined) {
    it(`replays seed ${replaySeed}`, () => {
      const o = { seed: Number(replaySeed), nodes: Number(process.env['SIM_NODES'] ?? 3), steps: Number(process.env['SIM_STEPS'] ?? 1000), recordTrace: true };
      const r = runSimulation(o);
      if (r.failure !== null) console.log((r.trace ?? []).join('\n'));
      expect(r.failure, explain(o, r)).toBeNull();
    });
  }

  for (const nodes of [3, 5]) {
    it(`${nodes} nodes: safety after every step, liveness after healing`, () => {
      const totals = { steps: 0, delivered: 0, crashes: 0, confChanges: 0, confChangesApplied: 0, compactions: 0, snapshots: 0, leaders: 0, committed: 0 };
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 0x7fffffff }), fc.integer({ min: 100, max: 1000 }), (seed, steps) => {
          const r = assertRun({ seed, nodes, steps });
          for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r.stats[k];
        }),
        // A seed is a whole schedule: shrinking it means nothing, replaying it is exact.
        { numRuns: RUNS, endOnFailure: true },
      );
      console.log(`${nodes} nodes, ${RUNS} schedules:`, totals);
      // The schedules really exercise the faults they are meant to.
      expect(totals.crashes).toBeGreaterThan(RUNS);
      expect(totals.confChangesApplied).toBeGreaterThan(RUNS / 2);
      expect(totals.snapshots).toBeGreaterThan(RUNS / 10);
      expect(totals.leaders).toBeGreaterThan(RUNS);
      expect(totals.committed).toBeGreaterThan(RUNS * 3);
    }, 600_000);
  }

  // Config.skipHeartbeatsAfterAppends (Cairn's setting): the same properties with heartbeats left out after appends.
  it('3 and 5 nodes with skipHeartbeatsAfterAppends: safety after every step, liveness after healing', () => {
    let committed = 0;
    for (let seed = 1; seed <= 100; seed++) committed += assertRun({ seed, nodes: seed % 2 === 0 ? 3 : 5, steps: 400, skipHeartbeatsAfterAppends: true }).stats.committed;
    expect(committed).toBeGreaterThan(100 * 3);
  }, 600_000);

  it('replays a fixed seed to the identical trace', () => {
    const o = { seed: 20261130, nodes: 5, steps: 300, recordTrace: true };
    const a = assertRun(o);
    const b = assertRun(o);
    expect(a.trace?.length).toBeGreaterThan(100);
    expect(b.trace).toEqual(a.trace);
    expect(b.digest).toBe(a.digest);
    expect(runSimulation({ ...o, seed: o.seed + 1 }).trace).not.toEqual(a.trace);
  });
});

// Each planted bug must be caught within a budget of schedules (seeds 1, 2,
// …, alternating 5 and 3 nodes; deterministic, so the count is stable).
describe('raft fault simulation catches planted bugs', () => {
  for (const fault of PLANTED_FAULTS) {
    it(fault, () => {
      let caught: SimResult | null = null;
      let runs = 0;
      for (let seed = 1; seed <= 3000 && caught === null; seed++) {
        runs++;
        const r = runSimulation({ seed, nodes: seed % 2 === 0 ? 3 : 5, steps: 1000, fault, skipLiveness: true });
        if (r.failure !== null) caught = r;
      }
      // An invariant of the checker, or the library's own assertion that its log was lost.
      expect(caught?.failure ?? 'not caught', `schedules run: ${runs}`).toMatch(
        /^raft sim: (election safety|leader completeness|state machine safety|log matching|leader append-only|unexpected AssertionError: raft: )/,
      );
      console.log(`planted ${fault}: caught after ${runs} schedules: ${caught?.failure}`);
    }, 600_000);
  }
});
