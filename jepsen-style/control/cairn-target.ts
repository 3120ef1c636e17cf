/**
 * CairnTarget: a local Cairn cluster of real node processes, one per loopback address.
 *
 *   node i (1-based): host 127.0.0.(10+i), RPC :26257, SQL :26258, HTTP :26259 on that
 *   address (distinct addresses, so the same ports), store `<dir>/data/n<i>`,
 *   log `<dir>/node<i>.log`; `cairn start --store --listen-addr --sql-addr --http-addr
 *   --join=<all RPC addresses>`, then `cairn init --host=<n1 RPC>` once.
 *
 * The node processes are spawned directly from `node dist/src/cli/main.js` (the same
 * command the cluster script runs), so `pid(i)` is the node's own pid and kill() sends
 * SIGKILL to the server itself. Extra environment (CAIRN_CANARY) is passed to every node.
 * restart() starts the node again on the same store directory.
 *
 * Ownership: owns the processes and the data directory (kept for post-mortems under the
 * run's store directory).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError } from '../../src/util/index.js';
import { signal, sqlAnswers, waitFor } from './target.js';
import type { ClusterTarget, TargetNode } from './target.js';

export interface CairnTargetOptions {
  readonly dir: string;
  readonly nodes: number;
  readonly env?: Readonly<Record<string, string>>;
  /** Path of the compiled CLI; default <repo>/dist/src/cli/main.js. */
  readonly cliPath?: string;
  readonly basePort?: number;
  readonly startTimeoutMs?: number;
}

const REPO = new URL('../../', import.meta.url).pathname.replace(/\/dist\/$/, '/');

export function loopbackHost(id: number): string {
  return `127.0.0.${10 + id}`;
}

export class CairnTarget implements ClusterTarget {
  readonly kind = 'cairn';
  readonly nodes: readonly TargetNode[];
  private readonly procs: (ChildProcess | undefined)[];
  private readonly exits: Promise<void>[];
  private stopped = false;

  private constructor(
    private readonly opts: CairnTargetOptions,
    private readonly cli: string,
    private readonly port: number,
  ) {
    this.nodes = Array.from({ length: opts.nodes }, (_, i): TargetNode => {
      const host = loopbackHost(i + 1);
      return { id: i + 1, host, sqlUrl: `postgres://root@${host}:${port + 1}/defaultdb`, httpUrl: `http://${host}:${port + 2}`, logPath: join(opts.dir, `node${i + 1}.log`) };
    });
    this.procs = this.nodes.map(() => undefined);
    this.exits = this.nodes.map(() => Promise.resolve());
  }

  static async start(opts: CairnTargetOptions): Promise<CairnTarget> {
    const cli = opts.cliPath ?? join(REPO, 'dist', 'src', 'cli', 'main.js');
    if (!existsSync(cli)) throw new CairnError('jepsen.no_cairn', `jepsen: the Cairn CLI ${cli} is not built (npm run build)`);
    const t = new CairnTarget(opts, cli, opts.basePort ?? 26257);
    for (let i = 0; i < opts.nodes; i++) await t.restart(i);
    await t.cliRun(['init', `--host=${loopbackHost(1)}:${t.port}`, '--insecure']);
    await t.waitHealthy(opts.startTimeoutMs ?? 60_000);
    return t;
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
    const join_ = this.nodes.map((m) => `${m.host}:${this.port}`).join(',');
    const args = [this.cli, 'start', `--store=${store}`, `--listen-addr=${n.host}:${this.port}`, `--sql-addr=${n.host}:${this.port + 1}`, `--http-addr=${n.host}:${this.port + 2}`, `--join=${join_}`, '--insecure'];
    const log = openSync(n.logPath, 'a');
    const proc = spawn(process.execPath, args, { stdio: ['ignore', log, log], env: { ...process.env, ...this.opts.env } });
    closeSync(log);
    this.procs[i] = proc;
    this.exits[i] = new Promise((r) => proc.once('exit', () => r()));
  }

  async kill(i: number): Promise<void> {
    const pid = this.pid(i);
    if (pid === undefined) return;
    signal(pid, 'SIGKILL');
    await this.exits[i];
  }

  async pause(i: number, paused: boolean): Promise<void> {
    const pid = this.pid(i);
    if (pid !== undefined) signal(pid, paused ? 'SIGSTOP' : 'SIGCONT');
  }

  async waitHealthy(timeoutMs: number): Promise<void> {
    await waitFor('every Cairn node to answer SQL', timeoutMs, async () => {
      for (const n of this.nodes) if (!(await sqlAnswers(n.sqlUrl, 2000))) return false;
      return true;
    }, 250);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
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
