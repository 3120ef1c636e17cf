// CairnTarget and the Cairn-specific nemesis paths against a real 3-node cluster: the
// canary flag reaches the node processes' environment (issue 9, "Canaries"), range
// status is read from /_status/ranges, and the kill nemesis in leaseholder mode kills
// the node that holds the lease of the hottest range, by its own pid. A node process that
// dies without the harness asking (here: SIGKILL from outside) is recorded as a crash;
// the nemesis's own kills are not.
import { readFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Prng } from '../../src/util/index.js';
import { CairnTarget } from '../../jepsen-style/control/cairn-target.js';
import { clusterRanges } from '../../jepsen-style/control/admin.js';
import { isAlive } from '../../jepsen-style/control/target.js';
import { KillNemesis } from '../../jepsen-style/nemesis/kill.js';
import { MergeNemesis, SplitNemesis } from '../../jepsen-style/nemesis/split.js';
import { tempStore } from './support.js';

const dir = tempStore();
let target: CairnTarget;

beforeAll(async () => {
  target = await CairnTarget.start({ dir, nodes: 3, env: { CAIRN_CANARY: 'skip-timestamp-cache' } });
}, 120_000);

afterAll(async () => {
  await target?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('CairnTarget', () => {
  it('runs each node as its own process on its own loopback address, with the canary in its environment', () => {
    const subnet = /^127\.0\.(\d+)\.11$/.exec(target.nodes[0]!.host)?.[1];
    expect(Number(subnet)).toBeGreaterThanOrEqual(100); // a free subnet reserved for this run
    expect(target.nodes.map((n) => n.host)).toEqual([11, 12, 13].map((h) => `127.0.${subnet}.${h}`));
    for (let i = 0; i < 3; i++) {
      const pid = target.pid(i)!;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      expect(cmdline).toContain('start');
      expect(cmdline).toContain(`--listen-addr=127.0.${subnet}.${11 + i}:26357`);
      expect(readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')).toContain('CAIRN_CANARY=skip-timestamp-cache');
    }
  });

  it('reads leaseholders from /_status/ranges and kills the hot range\'s leaseholder by its pid', async () => {
    const ranges = await clusterRanges(target.nodes);
    expect(ranges).toBeDefined();
    expect(ranges!.length).toBeGreaterThan(0);
    const hot = [...ranges!].filter((r) => r.leaseholder !== undefined).sort((a, b) => b.rangeId - a.rangeId)[0]!;
    const victim = hot.leaseholder! - 1;
    const pid = target.pid(victim)!;
    const k = new KillNemesis(['leaseholder']);
    const ctx = { target, prng: new Prng(1), log: () => undefined };
    const s = await k.start(ctx);
    expect(s.nodes).toEqual([victim + 1]);
    expect(s.description).toMatch(/\(leaseholder\)$/);
    expect(isAlive(pid)).toBe(false);
    await k.stop(ctx);
    expect(target.pid(victim)).not.toBe(pid);
    await target.waitReady(60_000);
    expect(target.crashes()).toEqual([]); // the nemesis's kill is not a crash
  }, 90_000);

  it('split then merge on a table under test: a range appears, then the merge removes it again', async () => {
    const c = new pg.Client({ connectionString: target.nodes[0]!.sqlUrl });
    await c.connect();
    await c.query('CREATE TABLE nm (k INT PRIMARY KEY)');
    await c.end();
    const ctx = { target, prng: new Prng(7), log: () => undefined };
    const before = (await clusterRanges(target.nodes))!.length;
    const split = new SplitNemesis(['nm']);
    const s = await split.start(ctx);
    expect(s.evidence).toEqual(['SPLIT AT: ok']);
    expect((await split.stop(ctx)).join(' ')).toMatch(/r\d+/);
    await rangesBecome(before + 1);
    const merge = new MergeNemesis();
    const m = await merge.start(ctx);
    expect(m.evidence[0]).toMatch(/^merge: ok, r\d+ now covers both$/);
    await merge.stop(ctx);
    await rangesBecome(before);
  }, 90_000);

  it('records a node that exits on its own as a crash, with its exit status', async () => {
    const pid = target.pid(2)!;
    const before = Date.now();
    process.kill(pid, 'SIGKILL'); // not through target.kill: as if the node had died by itself
    await waitUntil(() => target.pid(2) === undefined);
    const c = target.crashes();
    expect(c).toHaveLength(1);
    expect(c[0]).toMatchObject({ node: 3, pid, exit: 'SIGKILL' });
    expect(c[0]!.atMs).toBeGreaterThanOrEqual(before);
    // Recovery does not wait for a node that crashed and stays down (the others are ready).
    await target.waitReady(60_000);
    expect(target.pid(2)).toBeUndefined();
    await target.restart(2);
    await target.waitReady(60_000);
  }, 90_000);
});

/** Polls /_status/ranges until the cluster reports `n` ranges (bounded). */
async function rangesBecome(n: number, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const got = (await clusterRanges(target.nodes))?.length;
    if (got === n) return;
    if (Date.now() > end) throw new Error(`${got} ranges, expected ${n}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function waitUntil(cond: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
