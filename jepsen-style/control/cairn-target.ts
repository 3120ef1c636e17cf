/**
 * CairnTarget: a local Cairn cluster of real node processes, one per loopback address.
 *
 *   node i (1-based): host 127.0.0.(10+i) — RPC :26357, SQL :26257, HTTP :8080 on that
 *   address, as the cluster script's --loopback-aliases mode lays them out — store
 *   `<dir>/data/n<i>`, output `<dir>/node<i>.log`; `cairn start --store --listen-addr
 *   --sql-addr --http-addr --join=<all RPC addresses> --local-address=<host> --insecure`
 *   (outgoing RPC bound to the node's own address, so iptables rules on one address cut
 *   one node), then `cairn init --host=<n1 RPC>` once; ready = every node answers
 *   `GET /health?ready=1` with 200. The subnet is reserved for the run (loopback-subnet.ts)
 *   and nothing is dialled before every node's /health is answered by its own pid: a
 *   second run on the same machine once found its nodes unable to bind and initialised
 *   (failed to) the other run's cluster.
 *
 * The node processes are spawned directly from `node dist/src/cli/main.js` (the same
 * command the cluster script runs), so `pid(i)` is the node's own pid and kill() sends
 * SIGKILL to the server itself. Extra environment (CAIRN_CANARY) is passed to every node.
 * restart() starts the node again on the same store directory. A node process that exits
 * without kill() or stop() having asked (a crash: an assertion, a start-up failure) is
 * recorded with its exit status and the error line of its output (crashes()): the runner
 * reports it, and the kill nemesis's later windows find the node "already down".
 *
 * Ownership: owns the processes and the data directory (kept for post-mortems under the
 * run's store directory).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError } from '../../src/util/index.js';
import { signal, waitFor } from './target.js';
import { httpStatus } from './admin.js';
import { crashReason } from './target.js';
import { loopbackHost, reserveLoopbackSubnet, type SubnetReservation } from './loopback-subnet.js';
import type { ClusterTarget, NodeCrash, TargetNode } from './target.js';

export interface CairnTargetOptions {
  readonly dir: string;
  readonly nodes: number;
  readonly env?: Readonly<Record<string, string>>;
  /** Path of the compiled CLI; default <repo>/dist/src/cli/main.js. */
  readonly cliPath?: string;
  /** Extra `cairn start` flags (e.g. --lease-duration=3s). */
  readonly extraArgs?: readonly string[];
  readonly startTimeoutMs?: number;
  /**
   * Third octet of the nodes' loopback addresses: 127.0.<subnet>.(10+i). Default: a
   * free subnet of 100–254 reserved for this target until stop() (loopback-subnet.ts),
   * so concurrent runs never share addresses; a given subnet that another run holds or
   * anything listens on fails start() with jepsen.subnet_in_use before any node starts.
   */
  readonly subnet?: number;
}

const REPO = new URL('../../', import.meta.url).pathname.replace(/\/dist\/$/, '/');

const RPC_PORT = 26357;
const SQL_PORT = 26257;
const HTTP_PORT = 8080;

export class CairnTarget implements ClusterTarget {
  readonly kind = 'cairn';
  readonly nodes: readonly TargetNode[];
  private readonly procs: (ChildProcess | undefined)[];
  private readonly exits: Promise<void>[];
  private stopped = false;
  private starting = true;
  /** Pids kill() has signalled: their exits are not crashes. */
  private readonly killing = new Set<number>();
  private readonly crashList: NodeCrash[] = [];

  private constructor(
    private readonly opts: CairnTargetOptions,
    private readonly cli: string,
    private readonly subnet: SubnetReservation,
  ) {
    this.nodes = Array.from({ length: opts.nodes }, (_, i): TargetNode => {
      const host = loopbackHost(i + 1, subnet.subnet);
      return { id: i + 1, host, sqlUrl: `postgres://root@${host}:${SQL_PORT}/defaultdb`, httpUrl: `http://${host}:${HTTP_PORT}`, logPath: join(opts.dir, `node${i + 1}.log`) };
    });
    this.procs = this.nodes.map(() => undefined);
    this.exits = this.nodes.map(() => Promise.resolve());
  }

  static async start(opts: CairnTargetOptions): Promise<CairnTarget> {
    const cli = opts.cliPath ?? join(REPO, 'dist', 'src', 'cli', 'main.js');
    if (!existsSync(cli)) throw new CairnError('jepsen.no_cairn', `jepsen: the Cairn CLI ${cli} is not built (npm run build)`);
    const subnet = await reserveLoopbackSubnet({ nodes: opts.nodes, ports: [RPC_PORT, SQL_PORT, HTTP_PORT], ...(opts.subnet === undefined ? {} : { subnet: opts.subnet }) });
    const t = new CairnTarget(opts, cli, subnet);
    try {
      for (let i = 0; i < opts.nodes; i++) await t.restart(i);
      // Nothing is dialled (init) before every node's address is answered by that node's own process.
      await waitFor('every node to answer on its own addresses', opts.startTimeoutMs ?? 60_000, async () => {
        t.failIfExited();
        for (let i = 0; i < t.nodes.length; i++) if (!(await t.answersAsItself(i))) return false;
        return true;
      }, 100);
      await t.cliRun(['init', `--host=${t.nodes[0]!.host}:${RPC_PORT}`]);
      await t.waitReady(opts.startTimeoutMs ?? 60_000);
      t.starting = false;
    } catch (e) {
      await t.stop();
      throw e;
    }
    return t;
  }

  /**
   * Whether node i's /health is answered, by node i's own process: an answer from
   * another pid (a process of another run listening on this address) throws
   * jepsen.foreign_node — our node cannot have bound it.
   */
  private async answersAsItself(i: number): Promise<boolean> {
    const n = this.nodes[i]!;
    let body: { pid?: unknown };
    try {
      const res = await fetch(`${n.httpUrl!}/health`, { signal: AbortSignal.timeout(2000) });
      body = (await res.json()) as { pid?: unknown };
    } catch {
      return false; // not up yet
    }
    const ours = this.procs[i]?.pid;
    if (body.pid === ours) return true;
    throw new CairnError('jepsen.foreign_node', `jepsen: ${n.httpUrl!} is answered by another process (pid ${String(body.pid)}), not our n${n.id} (pid ${ours}): another cluster holds ${n.host}; our node could not bind it`);
  }

  /** A node that exited while the cluster starts will not come back: fail with its log's tail. */
  private failIfExited(): void {
    for (let i = 0; i < this.nodes.length; i++) {
      const p = this.procs[i];
      if (p === undefined || (p.exitCode === null && p.signalCode === null)) continue;
      let tail = '';
      try {
        tail = readFileSync(this.nodes[i]!.logPath, 'utf8').slice(-1500);
      } catch {
        // no log
      }
      throw new CairnError('jepsen.cairn_start', `jepsen: n${i + 1} exited during start-up (${p.exitCode ?? p.signalCode}):\n${tail}`);
    }
  }

  private cliRun(args: string[]): Promise<void> {
    return new Promise((resolve, reject) =>
      execFile(process.execPath, [this.cli, ...args], { timeout: 30_000 }, (err, _out, stderr) =>
        err === null ? resolve() : reject(new CairnError('jepsen.cairn_cli', `jepsen: cairn ${args[0]} failed: ${stderr || err.message}`)),
      ),
    );
  }

  pid(i: number): number | undefined {
    const p = this.procs[i];
    return p !== undefined && p.exitCode === null && p.signalCode === null ? p.pid : undefined;
  }

  async restart(i: number): Promise<void> {
    if (this.pid(i) !== undefined || this.stopped) return;
    const n = this.nodes[i]!;
    const store = join(this.opts.dir, 'data', `n${n.id}`);
    mkdirSync(store, { recursive: true });
    const join_ = this.nodes.map((m) => `${m.host}:${RPC_PORT}`).join(',');
    const args = [
      this.cli, 'start', `--store=${store}`, `--listen-addr=${n.host}:${RPC_PORT}`, `--sql-addr=${n.host}:${SQL_PORT}`,
      `--http-addr=${n.host}:${HTTP_PORT}`, `--join=${join_}`, `--local-address=${n.host}`, '--insecure', ...(this.opts.extraArgs ?? []),
    ];
    const log = openSync(n.logPath, 'a');
    const proc = spawn(process.execPath, args, { stdio: ['ignore', log, log], env: { ...process.env, CAIRN_LOG_PRETTY: '0', ...this.opts.env } });
    closeSync(log);
    this.procs[i] = proc;
    this.exits[i] = new Promise((r) =>
      proc.once('exit', (code, sig) => {
        if (!this.stopped && proc.pid !== undefined && !this.killing.delete(proc.pid)) this.recordCrash(i, proc.pid, sig ?? String(code));
        r();
      }),
    );
  }

  private recordCrash(i: number, pid: number, exit: string): void {
    let tail = '';
    try {
      tail = readFileSync(this.nodes[i]!.logPath, 'utf8').slice(-4000);
    } catch {
      // no log
    }
    this.crashList.push({ node: i + 1, pid, exit, atMs: Date.now(), reason: crashReason(tail) });
  }

  crashes(): readonly NodeCrash[] {
    return this.crashList;
  }

  async kill(i: number): Promise<void> {
    const pid = this.pid(i);
    if (pid === undefined) return;
    this.killing.add(pid);
    signal(pid, 'SIGKILL');
    await this.exits[i];
  }

  async pause(i: number, paused: boolean): Promise<void> {
    const pid = this.pid(i);
    if (pid !== undefined) signal(pid, paused ? 'SIGSTOP' : 'SIGCONT');
  }

  /**
   * Every node answers GET /health?ready=1 with 200 (joined, initialised, live, clock
   * healthy) — except, after start-up, a node that crashed and is down (crashes()): it
   * will not answer, and the crash is reported on its own.
   */
  async waitReady(timeoutMs: number): Promise<void> {
    await waitFor('every Cairn node to be ready', timeoutMs, async () => {
      if (this.starting) this.failIfExited();
      const crashedDown = (i: number): boolean => !this.starting && this.pid(i) === undefined && this.crashList.some((c) => c.node === i + 1);
      for (const [i, n] of this.nodes.entries()) if (!crashedDown(i) && (await httpStatus(n.httpUrl!, '/health?ready=1')) !== 200) return false;
      return true;
    }, 250);
  }

  /** Ready (the runner checks SQL separately for SQL workloads). */
  async waitHealthy(timeoutMs: number): Promise<void> {
    await this.waitReady(timeoutMs);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    try {
      await this.stopNodes();
    } finally {
      this.subnet.release();
    }
  }

  private async stopNodes(): Promise<void> {
    for (let i = 0; i < this.nodes.length; i++) {
      const pid = this.pid(i);
      if (pid === undefined) continue;
      signal(pid, 'SIGCONT');
      signal(pid, 'SIGTERM');
      const t = setTimeout(() => signal(pid, 'SIGKILL'), 10_000);
      await this.exits[i];
      clearTimeout(t);
    }
  }
}
