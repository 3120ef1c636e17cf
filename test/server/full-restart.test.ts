/**
 * A full-cluster restart: every node SIGKILLed, then all started again on
 * their stores. SQL must answer again within a few Raft ticks of the
 * processes being up, not after an election timeout or a lease expiration.
 *
 * Mechanism under test (src/kv/replica.ts campaignUntilLeader): a replica
 * loaded holding its range's last lease campaigns at once while no leader is
 * known, so it leads and re-takes its own lease without waiting out a
 * randomized election timeout (10–20 ticks) — and, when the lease expired
 * during the downtime, without another leader having to be elected first.
 *
 * The bound separates the mechanism from machine load: the nodes run with
 * 1 s Raft ticks until the kill and restart with 3 s ticks (election timeout
 * 30 s), in two cases — 30 s leases, so the leases held before the kill are
 * still valid after the restart, and 4 s leases with the cluster down 5 s, so
 * they all expired (restarted with 30 s leases: the stored ones stay expired,
 * and a 4 s lease renewed only every 3 s tick would lapse). Without the early
 * campaign no replica can start an election before 10 ticks (30 s) have passed
 * since its node started, so no range has a Raft leader and no write commits
 * sooner than that — not even the node's liveness record, without which the
 * node is not ready. With it, a node is live one to four ticks after a quorum
 * of nodes serves (the holder campaigns at its first tick, and every 3 ticks
 * while it wins nothing — e.g. while its peers are still starting), plus the
 * machine's processing time. The test asserts each node wrote its liveness
 * record ('server: node live') and mounted SQL less than one election timeout
 * after both the SECOND node served (a quorum: no leader can be elected
 * before, either way) and the node itself served, measured in the nodes' own
 * log timestamps (pino `time`).
 *
 * Why this reference and 3 s ticks (s9): at load ~35 the three processes
 * started up to 5.2 s apart (9.3 s at load ~41) and writes took seconds, so
 * with 1 s ticks, measured from the FIRST node served, the mechanism took
 * 8.2–12.5 s against a 10 s bound (CI failure). The start spread is load, not
 * the mechanism: counted from the quorum (and the node's own start) it drops out. The tick-bound parts
 * scale with the tick on both sides, the processing time does not, so 3 s
 * ticks leave ~15 s for it. What this gives up: on a loaded machine whose
 * first process starts d s before the second, the regression shows only
 * 30 − d s after the quorum (on a quiet machine d ≈ 0.2 s, and it fails). (SQL
 * mounts earlier either way: the mount only reads the system descriptors,
 * served under the still-valid leases without Raft.) Every node then serves a
 * SQL write, a read of the data written before the kill, and every row whose
 * INSERT was acknowledged by any node before the kill (writers on all three
 * nodes run into it).
 */
import { describe, it, expect, afterAll } from 'vitest';
import pg from 'pg';
import { ProcessCluster } from '../support/process-cluster.js';

const TICK_MS = 1000;
/** The tick after the restart, and so the bound (DEFAULT_KV_SETTINGS.electionTicks = 10). */
const RESTART_TICK_MS = 3000;
const ELECTION_TIMEOUT_MS = 10 * RESTART_TICK_MS;

let c: ProcessCluster | undefined;
afterAll(async () => {
  await c?.close();
});

/** Polls node `port` with a fresh connection, a write and a read of t until they succeed; resolves with the time they did. */
async function firstSql(port: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let lastErr = '';
  while (Date.now() < deadline) {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'root', database: 'defaultdb', connectionTimeoutMillis: 5000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('UPSERT INTO t VALUES ($1, $2)', [port, 'w']);
      const r = await client.query('SELECT v FROM t WHERE k = 1');
      expect(r.rows).toEqual([{ v: 'one' }]);
      return Date.now();
    } catch (e) {
      lastErr = (e as Error).message;
    } finally {
      await client.end().catch(() => undefined);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no SQL on port ${port} within ${timeoutMs} ms: ${lastErr}`);
}

/** The log time (ms) of the newest incarnation's line `msg` in node i's log; undefined if absent. */
function logTime(cl: ProcessCluster, i: number, pid: number, msg: string): number | undefined {
  for (const line of cl.logs(i).split('\n')) {
    if (!line.startsWith('{')) continue;
    const l = JSON.parse(line) as { pid: number; time: number; msg: string };
    if (l.pid === pid && l.msg === msg) return l.time;
  }
  return undefined;
}

describe('full-cluster restart', () => {
  // 30 s leases: the leases held before the kill are still valid after the restart (the holder extends its own).
  // 4 s leases, 5 s down: they expired during the downtime (the jepsen kill nemesis's case); the holder, once
  // leader, takes a fresh lease at once instead of a leader being elected after an election timeout first.
  it.each([
    { leases: '30s', downMs: 0 },
    { leases: '4s', downMs: 5000 },
  ])('every node is live and mounts SQL within one election timeout of the restart (the last leaseholders campaign at once), $leases leases, $downMs ms down', async ({ leases, downMs }) => {
    await c?.close();
    c = await ProcessCluster.start({ nodes: 3, extraArgs: [`--raft-tick=${TICK_MS}ms`, `--lease-duration=${leases}`, '--liveness-ttl=4.5s'] });
    const cl = c;
    const a = new pg.Client({ host: '127.0.0.1', port: cl.node(0).spec.sqlPort, user: 'root', database: 'defaultdb' });
    await a.connect();
    await a.query('CREATE TABLE t (k INT PRIMARY KEY, v STRING)');
    await a.query("INSERT INTO t VALUES (1, 'one')");
    await a.end();

    // Writers on every node up to the kill: each acknowledged row must survive it.
    const acked = new Map<number, string>();
    let writing = true;
    const writers = [0, 1, 2].map(async (i) => {
      const w = new pg.Client({ host: '127.0.0.1', port: cl.node(i).spec.sqlPort, user: 'root', database: 'defaultdb' });
      w.on('error', () => undefined);
      await w.connect();
      for (let n = 0; writing; n++) {
        const k = 1000 * (i + 1) + n;
        try {
          await w.query('INSERT INTO t VALUES ($1, $2)', [k, `w${k}`]);
        } catch {
          return; // the kill: this one's outcome is unknown, and it is not counted
        }
        acked.set(k, `w${k}`);
      }
      await w.end().catch(() => undefined);
    });
    const ackedBefore = async (count: number): Promise<void> => {
      const deadline = Date.now() + 30_000;
      while (acked.size < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    };
    await ackedBefore(30);
    await Promise.all([0, 1, 2].map((i) => cl.kill(i)));
    writing = false;
    await Promise.all(writers);
    expect(acked.size).toBeGreaterThanOrEqual(30);
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs)); // wall time for the leases to lapse, not a stand-in for a condition
    for (const i of [0, 1, 2]) cl.node(i).args = [`--raft-tick=${RESTART_TICK_MS}ms`, '--lease-duration=30s'];
    await Promise.all([0, 1, 2].map((i) => cl.restart(i, false)));
    const up = Date.now();
    const sqlAt = await Promise.all([0, 1, 2].map((i) => firstSql(cl.node(i).spec.sqlPort, 60_000)));
    await cl.waitReady(60_000);
    const readyAt = Date.now();

    const pids = [0, 1, 2].map((i) => cl.node(i).child?.pid as number);
    const serving = pids.map((pid, i) => logTime(cl, i, pid, 'server: node serving'));
    const firstServing = Math.min(...serving.map((t) => t ?? Infinity));
    // A quorum (two of the three) serves: no range can elect a leader before, with or without the mechanism;
    // and a node writes its own liveness record (and mounts) only once it serves itself.
    const quorumServing = [...serving].map((t) => t ?? Infinity).sort((x, y) => x - y)[1] as number;
    // The bound counts from the later of the two; the order check from the node's own start (a node whose
    // pre-crash leases are still valid may mount SQL before a quorum serves: the mount only reads under them).
    const logged = (msg: string): number[] => pids.map((pid, i) => logTime(cl, i, pid, msg) ?? NaN);
    const since = (at: number[]): number[] => at.map((t, i) => t - Math.max(quorumServing, serving[i] ?? NaN));
    const liveAt = logged('server: node live (liveness record written)');
    const mountedAt = logged('server: SQL mounted');
    const live = since(liveAt);
    const mounted = since(mountedAt);
    console.log(
      `full restart (${acked.size} acknowledged rows before the kill): node live ${live.join(', ')} ms, SQL mounted ${mounted.join(', ')} ms after a quorum and the node itself served (node serving ${(serving as number[]).map((t) => t - firstServing).join(', ')} ms after the first); ` +
        `first SQL write+read ${sqlAt.map((t) => t - up).join(', ')} ms and all /health?ready=1 ${readyAt - up} ms after the processes were up`,
    );
    // Nothing acknowledged before the kill is lost, read through every node.
    const want = [...acked.entries()].sort((x, y) => x[0] - y[0]);
    for (const i of [0, 1, 2]) {
      const r = new pg.Client({ host: '127.0.0.1', port: cl.node(i).spec.sqlPort, user: 'root', database: 'defaultdb' });
      await r.connect();
      const rows = (await r.query('SELECT k, v FROM t WHERE k >= 1000 ORDER BY k')).rows as { k: number; v: string }[];
      await r.end();
      const got = new Map(rows.map((x) => [Number(x.k), x.v]));
      expect(want.filter(([k, v]) => got.get(k) !== v)).toEqual([]);
    }
    for (const [i, t] of [...liveAt.entries(), ...mountedAt.entries()]) expect(t - (serving[i] ?? NaN)).toBeGreaterThanOrEqual(0);
    for (const d of [...live, ...mounted]) expect(d).toBeLessThan(ELECTION_TIMEOUT_MS);
  }, 240_000);
});
