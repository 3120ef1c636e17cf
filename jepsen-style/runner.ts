/**
 * The jepsen-style test runner: one run of one workload under one nemesis.
 *
 *   start target ─▶ setup schema ─▶ fork N client processes ─┬─ clients: generator → op → outcome
 *                                                            └─ nemesis: quiet, fault on, heal, …
 *   time up ─▶ stop clients ─▶ heal everything ─▶ wait for recovery ─▶ final reads
 *           ─▶ stop target ─▶ history ─▶ checkers ─▶ results.json, timeline.html, summary
 *
 * Every operation's invoke and completion instants come from CLOCK_MONOTONIC, read in the
 * client process right before sending and right after the answer (the runner's own
 * events — nemesis start/stop — from the same clock); the history is these events sorted
 * by time, so `index` order is real-time order across processes. A client that answers
 * `info` moves to a fresh process id (process += concurrency), as in Jepsen; an operation
 * whose client died has no completion (= info). Final operations are read-only and are
 * retried, each attempt a recorded operation of its own, until one succeeds.
 *
 * Store layout, `<storeRoot>/<workload>-<nemesis>-<yyyymmddThhmmss>/`:
 *   history.jsonl  nemesis.log  seed  node<i>.log  results.json  timeline.html
 * Verdict: valid only when every checker says exactly true (composeResults).
 *
 * Ownership: the runner owns the target, the client processes and the store directory;
 * every exit path (including a thrown error) heals faults, kills clients and stops the
 * target.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Prng } from '../src/util/index.js';
import { composeResults, unknownResult } from './checkers/index.js';
import type { CheckResult, ComposedResult, Validity } from './checkers/index.js';
import { HistoryRecorder } from './history/recorder.js';
import type { Op } from './history/history.js';
import { writeHistoryFile } from './history/history.js';
import type { FromWorker, ToWorker, WorkerDone, WorkerInit } from './control/client-worker.js';
import { PostgresTarget } from './control/postgres-target.js';
import { CairnTarget } from './control/cairn-target.js';
import { signal, sqlAnswers, waitFor } from './control/target.js';
import { clusterRanges, leadershipChanges } from './control/admin.js';
import type { ClusterTarget } from './control/target.js';
import { nemesisFor } from './nemesis/index.js';
import type { NemesisContext, NemesisOptions } from './nemesis/index.js';
import { workloadNamed } from './workloads/index.js';
import type { OpGenerator, OpRequest, OpResult, WorkloadOptions } from './workloads/index.js';
import { renderTimeline } from './report/timeline.js';
import type { FaultWindow } from './report/timeline.js';
import { formatSummary, opCounts } from './report/summary.js';

export interface RunOptions {
  readonly workload: string;
  readonly nemesis: string;
  readonly nodes: number;
  readonly timeSec: number;
  readonly concurrency: number;
  readonly seed: number;
  readonly target: 'cairn' | 'postgres';
  /** CAIRN_CANARY for the nodes: a deliberately broken build the run must catch. */
  readonly canary?: string;
  /** Isolation of every transaction; anything but serializable is a broken client. */
  readonly isolation?: WorkloadOptions['isolation'];
  readonly storeRoot?: string;
  /** Cairn: third octet of the nodes' loopback addresses (127.0.<subnet>.11…); default a free one, reserved for the run. */
  readonly loopbackSubnet?: number;
  /** Cairn: extra `cairn start` flags for every node (e.g. --log-level=debug, --lease-duration=3s). */
  readonly nodeArgs?: readonly string[];
  /** Quiet time between faults and fault duration (ms). */
  readonly faultIntervalMs?: number;
  readonly faultDurationMs?: number;
  /** Client-side timeout of one operation (ms). */
  readonly opTimeoutMs?: number;
  readonly recoveryTimeoutMs?: number;
  /** Budget of the linearizability search etc. is the checkers' own; this bounds the whole check. */
  readonly log?: (line: string) => void;
}

export interface RunResult {
  readonly dir: string;
  readonly summary: string;
  readonly valid: Validity;
  readonly checks: ComposedResult;
  readonly counts: ReturnType<typeof opCounts>;
  readonly faults: readonly FaultWindow[];
  readonly history: readonly Op[];
}

interface RawEvent {
  readonly time: bigint;
  readonly seq: number;
  readonly process: number | string;
  readonly type: Op['type'];
  readonly f: string;
  readonly value: unknown;
  readonly key?: string | number;
  readonly error?: string;
}

/** The repository root, whether this module runs from dist/ or from its .ts source. */
export function repoRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return here.split('/').includes('dist') ? join(here, '..', '..') : join(here, '..');
}

/** The compiled client-worker.js (from dist/ when this module runs from its .ts source). */
function workerPath(): string {
  const local = join(dirname(fileURLToPath(import.meta.url)), 'control', 'client-worker.js');
  return existsSync(local) ? local : join(repoRoot(), 'dist', 'jepsen-style', 'control', 'client-worker.js');
}

function stamp(d: Date): string {
  return d.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
}

class ClientProcess {
  private readonly pending = new Map<number, { resolve: (m: WorkerDone | undefined) => void; sent: bigint }>();
  private nextId = 0;
  private dead = false;
  readonly exited: Promise<void>;
  /** Resolves when the client has loaded and connected (or exited). */
  readonly ready: Promise<void>;

  constructor(readonly child: ChildProcess) {
    let ready!: () => void;
    this.ready = new Promise((r) => (ready = r));
    child.on('message', (m) => {
      const msg = m as FromWorker;
      if (msg.kind === 'ready') {
        ready();
        return;
      }
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      p?.resolve(msg);
    });
    this.exited = new Promise((r) =>
      child.once('exit', () => {
        this.dead = true;
        ready();
        for (const p of this.pending.values()) p.resolve(undefined);
        this.pending.clear();
        r();
      }),
    );
  }

  /** Runs op; undefined when the client process died before answering. */
  call(op: OpRequest): { sent: bigint; done: Promise<WorkerDone | undefined> } {
    const sent = process.hrtime.bigint();
    if (this.dead) return { sent, done: Promise.resolve(undefined) };
    const id = this.nextId++;
    const done = new Promise<WorkerDone | undefined>((resolve) => this.pending.set(id, { resolve, sent }));
    this.child.send({ kind: 'op', id, op } satisfies ToWorker);
    return { sent, done };
  }

  async close(): Promise<void> {
    if (!this.dead) this.child.send({ kind: 'close' } satisfies ToWorker, () => undefined);
    const t = setTimeout(() => this.child.kill('SIGKILL'), 3000);
    await this.exited;
    clearTimeout(t);
  }
}

/**
 * The lease duration and max clock offset that `--lease-duration=…` / `--max-offset=…`
 * node flags set (the pause, partition and clock nemeses size their faults by them).
 */
export function nemesisOptions(nodeArgs: readonly string[] | undefined): NemesisOptions {
  const out: { leaseMs?: number; maxOffsetMs?: number } = {};
  for (const a of nodeArgs ?? []) {
    const m = /^--(lease-duration|max-offset)=(\d+(?:\.\d+)?)(ms|s)$/.exec(a);
    if (m === null) continue;
    const ms = Number(m[2]) * (m[3] === 's' ? 1000 : 1);
    if (m[1] === 'lease-duration') out.leaseMs = ms;
    else out.maxOffsetMs = ms;
  }
  return out;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Client-side timeout of one final read (see the runner's final-read loop). */
const FINAL_OP_TIMEOUT_MS = 30_000;

export async function runJepsen(opts: RunOptions): Promise<RunResult> {
  const log = opts.log ?? (() => undefined);
  const workload = workloadNamed(opts.workload);
  const storeRoot = opts.storeRoot ?? join(repoRoot(), 'jepsen-style', 'store');
  const nemesisName = opts.nemesis.split(/[,+]/).join('+');
  const dir = join(storeRoot, `${opts.workload}-${nemesisName}-${stamp(new Date())}-s${opts.seed}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'seed'), `${opts.seed}\n`);
  const nemesisLog = join(dir, 'nemesis.log');
  writeFileSync(nemesisLog, '');
  const t0 = process.hrtime.bigint();
  const runStartWallMs = Date.now(); // the same instant in wall-clock time (node crashes are stamped with it)
  const rel = (t: bigint): number => Number(t - t0);
  const nlog = (line: string): void => appendFileSync(nemesisLog, `${(rel(process.hrtime.bigint()) / 1e9).toFixed(3)} ${line}\n`);
  const prng = new Prng(opts.seed);
  const nemesis = nemesisFor(opts.nemesis, workload.tables, nemesisOptions(opts.nodeArgs));
  const events: RawEvent[] = [];
  let seq = 0;
  const push = (e: Omit<RawEvent, 'seq'>): void => {
    events.push({ ...e, seq: seq++ });
  };
  const notes: string[] = [];
  const env: Record<string, string> = opts.canary === undefined ? {} : { CAIRN_CANARY: opts.canary };
  if (opts.canary !== undefined) nlog(`canary: CAIRN_CANARY=${opts.canary}`);

  log(`jepsen: starting ${opts.target} (${opts.target === 'postgres' ? 1 : opts.nodes} nodes) in ${dir}`);
  const target: ClusterTarget = opts.target === 'postgres' ? await PostgresTarget.start(dir) : await CairnTarget.start({ dir, nodes: opts.nodes, env, ...(opts.loopbackSubnet === undefined ? {} : { subnet: opts.loopbackSubnet }), ...(opts.nodeArgs === undefined ? {} : { extraArgs: opts.nodeArgs }) });
  // If the harness itself dies (SIGINT → process.exit in run.ts, an uncaught error),
  // no node process may outlive it.
  const killNodes = (): void => {
    for (let i = 0; i < target.nodes.length; i++) {
      const pid = target.pid(i);
      if (pid !== undefined) signal(pid, 'SIGKILL');
    }
  };
  process.once('exit', killNodes);
  const clients: ClientProcess[] = [];
  const faults: FaultWindow[] = [];
  const ctx: NemesisContext = { target, prng: new Prng(opts.seed ^ 0x9e3779b9), log: nlog };
  let gen: OpGenerator | undefined;
  try {
    // Schema.
    let tsMode: WorkloadOptions['tsMode'] = 'value';
    const sql = workload.transport !== 'admin-kv';
    if (sql) {
      await waitFor('every node to answer SQL', opts.recoveryTimeoutMs ?? 60_000, async () => (await Promise.all(target.nodes.map((n) => sqlAnswers(n.sqlUrl, 2000)))).every((x) => x), 250);
      const c = new pg.Client({ connectionString: target.nodes[0]!.sqlUrl });
      await c.connect();
      try {
        await workload.setup(c as never, { isolation: 'serializable', target: opts.target });
        if (opts.workload === 'monotonic' && opts.target === 'cairn') {
          tsMode = await c.query('SELECT cluster_logical_timestamp()').then(
            () => 'cluster_logical_timestamp' as const,
            () => 'value' as const,
          );
        }
      } finally {
        await c.end();
      }
    }
    if (opts.workload === 'monotonic' && tsMode === 'value') notes.push('monotonic: no commit timestamp readable in SQL; rows ordered by value (regression check vacuous)');
    const wopts: WorkloadOptions = { isolation: opts.isolation ?? 'serializable', target: opts.target, tsMode };
    if (wopts.isolation !== 'serializable') notes.push(`clients run at ${wopts.isolation.toUpperCase()} (deliberately broken)`);

    // Client processes.
    const opTimeoutMs = opts.opTimeoutMs ?? 5000;
    for (let w = 0; w < opts.concurrency; w++) {
      const node = target.nodes[w % target.nodes.length]!;
      const init: WorkerInit = { url: node.sqlUrl, httpUrl: node.httpUrl, workload: opts.workload, opts: wopts, timeoutMs: opTimeoutMs };
      clients.push(new ClientProcess(fork(workerPath(), [JSON.stringify(init)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })));
    }
    gen = workload.generator(prng, opts.concurrency, target.nodes.length);
    const g = gen;
    const processOf = clients.map((_, w) => w);
    const runOp = async (w: number, op: OpRequest): Promise<OpResult | undefined> => {
      const proc = processOf[w]!;
      const { sent, done } = clients[w]!.call(op);
      const m = await done;
      const inv = { process: proc, f: op.f, ...(op.key === undefined ? {} : { key: op.key }) };
      if (m === undefined) {
        push({ ...inv, time: sent, type: 'invoke', value: op.value });
        processOf[w]! += opts.concurrency;
        return undefined;
      }
      push({ ...inv, time: BigInt(m.invokeNs), type: 'invoke', value: op.value });
      const r = m.result;
      push({ ...inv, time: BigInt(m.completeNs), type: r.type, value: r.value, ...(r.error === undefined ? {} : { error: r.error }) });
      if (r.type === 'info') processOf[w]! += opts.concurrency;
      return r;
    };

    // The run: clients and nemesis until time is up, counted from when every client is ready.
    await Promise.race([Promise.all(clients.map((c) => c.ready)), sleep(60_000)]);
    let stopping = false;
    const endAt = Date.now() + opts.timeSec * 1000;
    // Idle workers (the generator had nothing for them) wait for the next operation to end, at most 10 ms: a
    // generator that hands out work when another operation ends (register-handoff) gets it started at once.
    let wakeIdle!: () => void;
    let idle = new Promise<void>((r) => (wakeIdle = r));
    const kick = (): void => {
      wakeIdle();
      idle = new Promise<void>((r) => (wakeIdle = r));
    };
    const clientLoop = async (w: number): Promise<void> => {
      let ended = false;
      while (!stopping && Date.now() < endAt) {
        const op = g.next(processOf[w]!, w);
        // After the generator has heard that this worker's operation ended (inside next()).
        if (ended) kick();
        ended = false;
        if (op === undefined) {
          let t: NodeJS.Timeout | undefined;
          await Promise.race([idle, new Promise<void>((r) => (t = setTimeout(r, 10)))]);
          clearTimeout(t);
          continue;
        }
        const r = await runOp(w, op);
        ended = true;
        // A node that refuses connections is down: back off instead of spinning.
        if (r === undefined || /^connect:|fetch failed|ECONNREFUSED/.test(r.error ?? '')) await sleep(100);
      }
    };
    const nemesisLoop = async (): Promise<void> => {
      if (nemesis === undefined) return;
      const quiet = opts.faultIntervalMs ?? 5000;
      const on = opts.faultDurationMs ?? 5000;
      let startFailures = 0;
      while (Date.now() + quiet + 1000 < endAt) {
        await sleep(quiet);
        const rangesBefore = target.kind === 'cairn' ? await clusterRanges(target.nodes) : undefined;
        const startT = process.hrtime.bigint();
        let started;
        try {
          started = await nemesis.start(ctx);
        } catch (e) {
          // A part that cannot act on this target (split without tables) skips its window;
          // three failures in a row end the schedule.
          const why = e instanceof Error ? e.message : String(e);
          nlog(`start failed (no fault this window): ${why}`);
          notes.push(`nemesis ${nemesis.name}: a fault failed to start: ${why}`);
          if (++startFailures >= 3) break;
          continue;
        }
        startFailures = 0;
        nlog(`start ${started.description} | ${started.evidence.join('; ')}`);
        push({ time: startT, process: 'nemesis', type: 'info', f: 'start', value: started.description });
        await sleep(Math.min(started.durationMs ?? on, Math.max(0, endAt - Date.now())));
        // Leases and leaders that moved while the fault was on (read from the live nodes).
        const rangesDuring = rangesBefore === undefined ? undefined : await clusterRanges(target.nodes.filter((n) => target.pid(n.id - 1) !== undefined));
        const moved = rangesBefore !== undefined && rangesDuring !== undefined ? leadershipChanges(rangesBefore, rangesDuring) : [];
        let healed: readonly string[];
        try {
          const own = await nemesis.stop(ctx);
          healed = [...moved.filter((m) => !own.includes(m)), ...own];
        } catch (e) {
          healed = [`stop failed: ${e instanceof Error ? e.message : String(e)}`];
        }
        const stopT = process.hrtime.bigint();
        nlog(`stop ${started.description} | ${healed.join('; ')}`);
        push({ time: stopT, process: 'nemesis', type: 'info', f: 'stop', value: started.description });
        faults.push({ description: started.description, nodes: started.nodes, startNs: rel(startT), endNs: rel(stopT), evidence: [...started.evidence, ...healed], clientErrors: 0, bit: false });
      }
    };
    await Promise.all([...clients.map((_, w) => clientLoop(w)), nemesisLoop()]);
    stopping = true;
    log(`jepsen: workload done (${events.length} events); healing`);

    // Heal, recover, final reads.
    if (nemesis !== undefined) {
      await nemesis.healAll(ctx).catch((e: unknown) => notes.push(`healAll: ${String(e)}`));
      nlog('healed everything');
    }
    const recoveryMs = opts.recoveryTimeoutMs ?? 60_000;
    try {
      await target.waitHealthy(recoveryMs);
    } catch (e) {
      notes.push(`cluster did not recover within ${recoveryMs} ms: ${e instanceof Error ? e.message : String(e)}`);
    }
    const finalDeadline = Date.now() + recoveryMs;
    // Final reads through a client whose node runs (a node that crashed stays down).
    const up = (w: number): boolean => target.pid(w % target.nodes.length) !== undefined;
    const finalClient = Math.max(0, clients.findIndex((_, w) => up(w)));
    // A final read spans every key the run used (hundreds for some workloads): it gets
    // FINAL_OP_TIMEOUT_MS, not the op timeout, so that only a read that cannot finish fails.
    for (const op of workload.finalOps(g)) {
      for (let attempt = 0; ; attempt++) {
        const r = await runOp(finalClient, { ...op, timeoutMs: Math.max(opTimeoutMs, FINAL_OP_TIMEOUT_MS) });
        if (r?.type === 'ok') break;
        if (Date.now() > finalDeadline) {
          notes.push(`final ${op.f} never succeeded (${attempt + 1} attempts)`);
          break;
        }
        await sleep(Math.min(1000, 50 * 2 ** attempt));
      }
    }
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    if (nemesis !== undefined) await nemesis.healAll(ctx).catch(() => undefined);
    await target.stop().catch((e: unknown) => notes.push(`target stop: ${String(e)}`));
    process.removeListener('exit', killNodes);
  }
  const crashes = (target.crashes?.() ?? []).map((c) => ({ ...c, atSec: (c.atMs - runStartWallMs) / 1000 }));
  for (const c of crashes) {
    const line = `n${c.node} (pid ${c.pid}) exited on its own (${c.exit}) at ${c.atSec.toFixed(1)} s: ${c.reason}`;
    notes.push(line);
    nlog(`CRASH ${line}`);
  }

  // History, checks, reports.
  events.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : a.seq - b.seq));
  let cur = 0;
  const rec = new HistoryRecorder({ now: () => cur });
  const open = new Map<number | string, Op>();
  for (const e of events) {
    cur = rel(e.time);
    if (typeof e.process === 'string') {
      rec.event(e.process, e.f, e.value);
    } else if (e.type === 'invoke') {
      const prev = open.get(e.process);
      if (prev !== undefined) rec.complete(prev, 'info', prev.value, 'client: no answer');
      open.set(e.process, rec.invoke(e.process, e.f, e.value, e.key));
    } else {
      const inv = open.get(e.process)!;
      open.delete(e.process);
      rec.complete(inv, e.type, e.value, e.error);
    }
  }
  const history = rec.history();
  await writeHistoryFile(join(dir, 'history.jsonl'), history);
  for (const f of faults) {
    const inWindow = history.filter((o) => typeof o.process === 'number' && o.type !== 'invoke' && o.type !== 'ok' && o.time >= f.startNs && o.time <= f.endNs + 1e9);
    f.clientErrors = inWindow.length;
    f.bit = inWindow.length > 0 || f.evidence.some((e) => /gone|state T|iptables|hook|lease n|leader n|appeared|clock offset set|replicas n/.test(e) && !/STILL ALIVE/.test(e));
    if (!f.bit) nlog(`fault "${f.description}" did nothing visible`);
  }
  const wopts: WorkloadOptions = { isolation: opts.isolation ?? 'serializable', target: opts.target };
  const results: Record<string, CheckResult> = {};
  for (const c of gen === undefined ? [] : workload.checkers(gen, wopts)) {
    try {
      results[c.name] = c.check(history);
    } catch (e) {
      results[c.name] = unknownResult(`${c.name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  const checks = composeResults(results);
  const counts = opCounts(history);
  const summary = formatSummary({ workload: opts.workload, nemesis: nemesisName, seed: opts.seed, timeSec: opts.timeSec, counts, faults: faults.length, checks, crashes: crashes.length });
  writeFileSync(
    join(dir, 'results.json'),
    JSON.stringify(
      {
        summary,
        valid: checks.valid,
        options: { ...opts, log: undefined },
        counts,
        notes,
        faults,
        faultsThatBit: faults.filter((f) => f.bit).length,
        crashes,
        checkers: checks.results,
      },
      null,
      2,
    ),
  );
  writeFileSync(join(dir, 'timeline.html'), renderTimeline(history, faults, { title: summary, concurrency: opts.concurrency }));
  log(summary);
  return { dir, summary, valid: checks.valid, checks, counts, faults, history };
}
