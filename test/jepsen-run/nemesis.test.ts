// Nemeses against real processes: kill signals the real pid (not a wrapper) and restarts,
// pause stops and continues it (issue 9, "Nemeses"); partition shapes as properties.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { Prng } from '../../src/util/index.js';
import { KillNemesis } from '../../jepsen-style/nemesis/kill.js';
import { PauseLeaseholderNemesis, PauseNemesis } from '../../jepsen-style/nemesis/pause.js';
import { ComposedNemesis, minority } from '../../jepsen-style/nemesis/nemesis.js';
import type { NemesisContext } from '../../jepsen-style/nemesis/nemesis.js';
import { partitionCuts } from '../../jepsen-style/nemesis/partition.js';
import { nemesisFor } from '../../jepsen-style/nemesis/index.js';
import { nemesisOptions } from '../../jepsen-style/runner.js';
import { PostgresTarget } from '../../jepsen-style/control/postgres-target.js';
import { isAlive, sqlAnswers, waitFor } from '../../jepsen-style/control/target.js';
import type { ClusterTarget, TargetNode } from '../../jepsen-style/control/target.js';
import { tempStore } from './support.js';

/** A "cluster" of plain node processes that sleep: the smallest real target. */
class ProcessTarget implements ClusterTarget {
  readonly kind = 'postgres';
  readonly nodes: TargetNode[];
  readonly procs: ChildProcess[] = [];
  readonly exitSignals: (NodeJS.Signals | null)[][] = [];
  constructor(n: number) {
    this.nodes = Array.from({ length: n }, (_, i) => ({ id: i + 1, host: '127.0.0.1', sqlUrl: '', httpUrl: undefined, logPath: '' }));
    for (let i = 0; i < n; i++) {
      this.exitSignals.push([]);
      this.spawn(i);
    }
  }
  private spawn(i: number): void {
    const p = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e9)'], { stdio: 'ignore' });
    p.once('exit', (_c, sig) => this.exitSignals[i]!.push(sig));
    this.procs[i] = p;
  }
  pid(i: number): number | undefined {
    const p = this.procs[i]!;
    return p.exitCode === null && p.signalCode === null ? p.pid : undefined;
  }
  async kill(i: number): Promise<void> {
    const p = this.procs[i]!;
    if (this.pid(i) === undefined) return;
    const exited = new Promise((r) => p.once('exit', r));
    process.kill(p.pid!, 'SIGKILL');
    await exited;
  }
  async restart(i: number): Promise<void> {
    if (this.pid(i) === undefined) this.spawn(i);
  }
  async pause(i: number, paused: boolean): Promise<void> {
    const pid = this.pid(i);
    if (pid !== undefined) process.kill(pid, paused ? 'SIGSTOP' : 'SIGCONT');
  }
  async waitHealthy(): Promise<void> {}
  async stop(): Promise<void> {
    for (let i = 0; i < this.procs.length; i++) await this.kill(i);
  }
}

function ctxFor(target: ClusterTarget, seed = 1): NemesisContext & { lines: string[] } {
  const lines: string[] = [];
  return { target, prng: new Prng(seed), log: (l) => lines.push(l), lines };
}

function procState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat[stat.lastIndexOf(')') + 2]!;
}

describe('kill nemesis', () => {
  it('SIGKILLs the real pid of every chosen node and restarts it with a new pid', async () => {
    const t = new ProcessTarget(3);
    try {
      const ctx = ctxFor(t);
      const k = new KillNemesis(['all']);
      const pids = [0, 1, 2].map((i) => t.pid(i)!);
      const s = await k.start(ctx);
      expect(s.nodes).toEqual([1, 2, 3]);
      for (let i = 0; i < 3; i++) {
        expect(isAlive(pids[i]!)).toBe(false);
        expect(t.exitSignals[i]).toEqual(['SIGKILL']); // the process itself died of SIGKILL
        expect(s.evidence[i]).toBe(`SIGKILL n${i + 1} pid ${pids[i]}: gone`);
      }
      const healed = await k.stop(ctx);
      expect(healed).toHaveLength(3);
      for (let i = 0; i < 3; i++) {
        const pid = t.pid(i)!;
        expect(pid).not.toBe(pids[i]);
        expect(isAlive(pid)).toBe(true);
        expect(healed[i]).toBe(`restarted n${i + 1} as pid ${pid}`);
      }
    } finally {
      await t.stop();
    }
  });

  it('kills a minority (leaseholder mode falls back to one node without a status endpoint)', async () => {
    const t = new ProcessTarget(5);
    try {
      const ctx = ctxFor(t, 7);
      const s = await new KillNemesis(['minority']).start(ctx);
      expect(s.nodes).toHaveLength(minority(5));
      expect([0, 1, 2, 3, 4].filter((i) => t.pid(i) === undefined).map((i) => i + 1)).toEqual(s.nodes);
      const l = new KillNemesis(['leaseholder']);
      const s2 = await l.start(ctx);
      expect(s2.description).toMatch(/\(one\)$/);
      await l.healAll(ctx);
      expect([0, 1, 2, 3, 4].every((i) => t.pid(i) !== undefined)).toBe(true);
    } finally {
      await t.stop();
    }
  });

  it('against PostgreSQL: the postmaster and its backends die, the restart on the same data answers SQL', async () => {
    const store = tempStore();
    const pg = await PostgresTarget.start(store);
    try {
      const ctx = ctxFor(pg);
      const before = pg.pid(0)!;
      const s = await new KillNemesis(['one']).start(ctx);
      expect(s.evidence).toEqual([`SIGKILL n1 pid ${before}: gone`]);
      expect(await sqlAnswers(pg.nodes[0]!.sqlUrl, 1000)).toBe(false);
      await pg.restart(0);
      expect(pg.pid(0)).not.toBe(before);
      expect(await sqlAnswers(pg.nodes[0]!.sqlUrl, 5000)).toBe(true);
    } finally {
      await pg.stop();
      rmSync(store, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('pause nemesis', () => {
  it('stops the process (state T) and continues it on heal; durations alternate around the lease', async () => {
    const t = new ProcessTarget(3);
    try {
      const ctx = ctxFor(t, 3);
      const p = new PauseNemesis(1000);
      const s = await p.start(ctx);
      expect(s.durationMs).toBe(300);
      for (const id of s.nodes) {
        const pid = t.pid(id - 1)!;
        await waitFor('stopped state', 5000, () => procState(pid) === 'T');
      }
      expect(s.evidence.every((e) => /state T$/.test(e))).toBe(true);
      await p.stop(ctx);
      for (const id of s.nodes) {
        const pid = t.pid(id - 1)!;
        await waitFor('running state', 5000, () => procState(pid) !== 'T');
      }
      const s2 = await p.start(ctx);
      expect(s2.durationMs).toBe(1500);
      await p.healAll(ctx);
    } finally {
      await t.stop();
    }
  });

  it('pause-leaseholder stops one node for 1.5× the lease (a random one without a status endpoint) and continues it', async () => {
    const t = new ProcessTarget(3);
    try {
      const ctx = ctxFor(t, 5);
      const p = new PauseLeaseholderNemesis(2000);
      const s = await p.start(ctx);
      expect(s.durationMs).toBe(3000);
      expect(s.nodes).toHaveLength(1);
      expect(s.evidence[0]).toMatch(/leaseholder unknown: n\d picked at random/);
      const pid = t.pid(s.nodes[0]! - 1)!;
      await waitFor('stopped state', 5000, () => procState(pid) === 'T');
      const healed = await p.stop(ctx);
      expect(healed[0]).toMatch(/^SIGCONT n\d pid \d+/);
      await waitFor('running state', 5000, () => procState(pid) !== 'T');
      await p.healAll(ctx);
    } finally {
      await t.stop();
    }
  });
});

describe('partition shapes', () => {
  const connected = (n: number, cuts: [number, number][]) => {
    const cut = new Set(cuts.map(([a, b]) => `${a}-${b}`));
    return (a: number, b: number) => a === b || !cut.has(`${a}-${b}`);
  };

  it('every cut is symmetric and names real nodes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 9 }), fc.integer(), fc.constantFrom('isolate', 'halves', 'ring', 'bridge') as fc.Arbitrary<'isolate'>, (n, seed, shape) => {
        const cuts = partitionCuts(shape, n, new Prng(seed));
        const set = new Set(cuts.map(([a, b]) => `${a}-${b}`));
        for (const [a, b] of cuts) {
          expect(a).not.toBe(b);
          expect(a >= 0 && a < n && b >= 0 && b < n).toBe(true);
          expect(set.has(`${b}-${a}`)).toBe(true);
        }
        expect(cuts.length).toBeGreaterThan(0);
      }),
    );
  });

  it('isolate cuts one node from all; halves leave a majority side', () => {
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 9 }), fc.integer(), (n, seed) => {
        const iso = partitionCuts('isolate', n, new Prng(seed));
        expect(iso).toHaveLength(2 * (n - 1));
        const halves = partitionCuts('halves', n, new Prng(seed));
        const ok = connected(n, halves);
        const sizes = new Set<number>();
        for (let a = 0; a < n; a++) sizes.add([...Array(n).keys()].filter((b) => ok(a, b)).length);
        expect([...sizes].sort()).toEqual([minority(n), n - minority(n)].sort());
      }),
    );
  });

  it('majority ring (n ≥ 5): every node reaches a majority, no two the same one', () => {
    fc.assert(
      fc.property(fc.integer({ min: 5, max: 9 }), fc.integer(), (n, seed) => {
        const ok = connected(n, partitionCuts('ring', n, new Prng(seed)));
        const views = [...Array(n).keys()].map((a) => [...Array(n).keys()].filter((b) => ok(a, b)));
        for (const v of views) expect(v.length).toBeGreaterThan(n / 2);
        for (const v of views) expect(v.length).toBeLessThan(n);
        expect(new Set(views.map((v) => v.join(','))).size).toBe(n);
      }),
    );
  });

  it('bridge: one node reaches everyone, the two sides do not reach each other', () => {
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 9 }), fc.integer(), (n, seed) => {
        const ok = connected(n, partitionCuts('bridge', n, new Prng(seed)));
        const reach = [...Array(n).keys()].map((a) => [...Array(n).keys()].filter((b) => ok(a, b)).length);
        expect(reach.filter((r) => r === n)).toHaveLength(1);
        expect(reach.filter((r) => r < n)).toHaveLength(n - 1);
      }),
    );
  });
});

describe('nemesis names', () => {
  it('none is no nemesis; lists compose', () => {
    expect(nemesisFor('none', [])).toBeUndefined();
    expect(nemesisFor('kill', [])?.name).toBe('kill');
    const c = nemesisFor('partition,kill', ['t']);
    expect(c).toBeInstanceOf(ComposedNemesis);
    expect(c?.name).toBe('partition+kill');
    expect(() => nemesisFor('flood', [])).toThrow(/unknown nemesis flood/);
    expect(nemesisFor('pause-leaseholder,partition-leaseholder,clock-lag', [])?.name).toBe('pause-leaseholder+partition+clock-lag');
  });

  it('the nodes\' --lease-duration and --max-offset size the nemeses', () => {
    expect(nemesisOptions(undefined)).toEqual({});
    expect(nemesisOptions(['--log-level=debug', '--lease-duration=3s', '--max-offset=750ms'])).toEqual({ leaseMs: 3000, maxOffsetMs: 750 });
    expect(nemesisOptions(['--lease-duration=1.5s'])).toEqual({ leaseMs: 1500 });
  });
});

afterAll(() => undefined);
