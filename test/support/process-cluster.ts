/**
 * A multi-process test cluster: N real `cairn start` processes from
 * dist/src/cli/main.js (build first: `npm test` does) on 127.0.0.1, each with
 * its own temporary store directory and free ports.
 *
 *   const c = await ProcessCluster.start({ nodes: 3 });   // spawned, initialised, ready
 *   await c.kv(0, [{ op: 'put', key, value }]);             // POST /_admin/kv on node 1
 *   await c.kill(1);                                        // SIGKILL node 2's process
 *   await c.restart(1);                                     // same store, same ports; waits ready
 *   c.node(2).env = { CAIRN_CRASH_POINT: '…' };             // extra environment for node 3's next spawn
 *   c.node(2).args = ['--range-max-bytes=64MiB'];           // extra flags for its next spawns (a later flag wins)
 *   c.logs(1);                                              // its output and log file
 *   await c.close();                                        // kills what is left, removes the dirs
 *
 * Nodes are 0-based indexes here (node i is usually n(i+1)). Every process is
 * killed in close(), which tests call in afterEach/afterAll so nothing
 * outlives a failed test; child-reaper.ts kills stragglers if the runner
 * itself is torn down (exit or signal). CAIRN_KEEP_TEST_DIRS=1 keeps the directories.
 *
 * Raw KV operations of multi-process tests go through the node's admin HTTP
 * endpoint (/_admin/kv, src/server/status-server.ts), which routes each
 * operation through that node's KV client to the leaseholder; SQL (and so
 * transactions) is served over pgwire on each node's spec.sqlPort.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requestInit } from '../../src/server/admin-client.js';
import type { RangeChecksums } from '../../src/server/node.js';
import { httpRequest, startArgs, waitForExit, waitForHealth, type NodeProcessSpec } from '../../src/cli/node-process.js';
import { reap, spare } from './child-reaper.js';
import { claimPidFile, releasePidFile } from '../../jepsen-style/control/pid-file.js';

/** The repository root, from the source (test/support/) or from its compiled copy (dist/test/support/). */
function repoRoot(): string {
  const up = resolve(fileURLToPath(new URL('../../', import.meta.url)));
  return basename(up) === 'dist' && existsSync(join(up, '..', 'package.json')) ? resolve(up, '..') : up;
}
export const REPO_ROOT = repoRoot();
export const MAIN_JS = join(REPO_ROOT, 'dist/src/cli/main.js');

/** Flags that make a test cluster fast: 20 ms ticks (election 200 ms), 2 s leases and liveness. */
export const FAST_NODE_FLAGS: readonly string[] = ['--raft-tick=20ms', '--lease-duration=2s', '--liveness-ttl=2s'];

export interface ProcessClusterOptions {
  readonly nodes: number;
  /** Run `cairn init` through node 1 and wait for every node to be ready (default true). */
  readonly init?: boolean;
  readonly extraArgs?: readonly string[];
  readonly readyTimeoutMs?: number;
}

export interface AdminOpResult {
  readonly ok: boolean;
  readonly value?: string | null;
  readonly rows?: [string, string][];
  readonly code?: string;
  readonly message?: string;
  readonly ambiguous?: boolean;
}

export type AdminOp =
  | { readonly op: 'put'; readonly key: string; readonly value: string }
  | { readonly op: 'get'; readonly key: string }
  | { readonly op: 'scan'; readonly key: string; readonly endKey: string; readonly maxKeys?: number };


/**
 * Ports nobody listens on right now, drawn at random from 10000–30999: below
 * the kernel's ephemeral range (32768+), so an outgoing connection of some
 * process cannot take one between this check and the node's bind. Other
 * in-process tests bind port 0 (ephemeral), so they never collide either.
 *
 * Each port is also reserved for this process in PORT_DIR (a file named by
 * the port holding our pid, created exclusively) until releasePorts: a node
 * that a test stopped for a while (kill, then restart on the same ports) does
 * not listen, and without the reservation another test file's cluster could
 * draw its ports meanwhile — the restart then found its port taken and the
 * node exited (clean-clone CI: "node … exited before it was ready" in
 * test/kv-txn-multiproc/recovery). A reservation whose pid is gone is stale
 * and taken over.
 */
const PORT_DIR = join(tmpdir(), 'cairn-test-ports');

/** Reserves `port` for this process across test processes (see PORT_DIR); false if another live process holds it. */
export function reservePort(port: number): boolean {
  return claimPidFile(PORT_DIR, String(port));
}

/** Ends this process's reservations of `ports` (freePorts). */
export function releasePorts(ports: readonly number[]): void {
  for (const p of ports) releasePidFile(PORT_DIR, String(p));
}

export async function freePorts(n: number): Promise<number[]> {
  const out: number[] = [];
  while (out.length < n) {
    const port = 10_000 + Math.floor(Math.random() * 21_000);
    if (out.includes(port) || !reservePort(port)) continue;
    const s = createServer();
    const ok = await new Promise<boolean>((res) => {
      s.once('error', () => res(false));
      s.listen(port, '127.0.0.1', () => res(true));
    });
    if (ok) {
      out.push(port);
      await new Promise((r) => s.close(r));
    } else {
      releasePorts([port]);
    }
  }
  return out;
}

/** Runs the CLI to completion: exit status and output. */
export function runCli(args: readonly string[], timeoutMs = 30_000): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN_JS, ...args], { encoding: 'utf8', timeout: timeoutMs });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Runs the CLI without blocking the event loop (a test may serve or kill meanwhile). */
export function runCliAsync(args: readonly string[], timeoutMs = 30_000): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return runScriptAsync(MAIN_JS, args, timeoutMs);
}

/** Runs `node <script> args…` to completion (killed after timeoutMs): exit status and output. */
export function runScriptAsync(script: string, args: readonly string[], timeoutMs: number): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    reap(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      spare(child);
      resolveRun({ status, stdout, stderr });
    });
  });
}

export class ProcessNode {
  child: ChildProcess | null = null;
  exitCode: number | null = null;
  /** The process's stdout and stderr so far (the last 1 MiB). */
  output = '';
  /** Extra environment for the next spawn (e.g. CAIRN_CRASH_POINT before restart()). */
  env: Record<string, string> = {};
  /** Extra flags for the next spawns, after the spec's (commander: a repeated flag's last value wins) — a setting changed on restart. */
  args: string[] = [];
  constructor(
    readonly index: number,
    readonly spec: NodeProcessSpec,
  ) {}
  get running(): boolean {
    return this.child !== null && this.exitCode === null && this.child.signalCode === null;
  }
  get rpcAddr(): string {
    return `${this.spec.host}:${this.spec.rpcPort}`;
  }
}

export class ProcessCluster {
  readonly nodes: ProcessNode[] = [];

  private constructor(
    readonly dir: string,
    private readonly readyTimeoutMs: number,
  ) {}

  static async start(opts: ProcessClusterOptions): Promise<ProcessCluster> {
    if (!existsSync(MAIN_JS)) throw new Error(`process-cluster: ${MAIN_JS} is missing; run \`npx tsc -p .\` (npm test builds first)`);
    for (let attempt = 1; ; attempt++) {
      try {
        return await ProcessCluster.startOnce(opts);
      } catch (e) {
        // Another test file may have bound one of our ports in the meantime.
        if (attempt >= 3 || !/address already in use/.test((e as Error).message)) throw e;
      }
    }
  }

  private static async startOnce(opts: ProcessClusterOptions): Promise<ProcessCluster> {
    const c = new ProcessCluster(mkdtempSync(join(tmpdir(), 'cairn-proc-')), opts.readyTimeoutMs ?? 60_000);
    try {
      const ports = await freePorts(3 * opts.nodes);
      const joinList = Array.from({ length: opts.nodes }, (_, i) => `127.0.0.1:${ports[3 * i] as number}`);
      for (let i = 0; i < opts.nodes; i++) {
        c.nodes.push(
          new ProcessNode(i, {
            store: join(c.dir, `n${i + 1}`),
            host: '127.0.0.1',
            rpcPort: ports[3 * i] as number,
            sqlPort: ports[3 * i + 1] as number,
            httpPort: ports[3 * i + 2] as number,
            join: joinList,
            extraArgs: [...FAST_NODE_FLAGS, ...(opts.extraArgs ?? [])],
            outFile: join(c.dir, `n${i + 1}.out`),
          }),
        );
      }
      for (const n of c.nodes) c.spawn(n);
      await Promise.all(c.nodes.map((n) => waitForHealth('127.0.0.1', n.spec.httpPort, false, c.readyTimeoutMs, () => n.running)));
      if (opts.init !== false) {
        await requestInit({ host: '127.0.0.1', port: c.node(0).spec.rpcPort });
        await c.waitReady();
      }
      return c;
    } catch (e) {
      const logs = c.nodes.map((n) => `--- n${n.index + 1}\n${c.logs(n.index).slice(-2000)}`).join('\n');
      await c.close();
      throw new Error(`process-cluster: start failed: ${(e as Error).message}\n${logs}`);
    }
  }

  /**
   * Starts one more node joining the cluster (through the first nodes'
   * addresses); resolves once it is ready (or only up, with waitReady false).
   * Several may be added concurrently.
   */
  async addNode(waitReady = true): Promise<ProcessNode> {
    const [rpcPort, sqlPort, httpPort] = (await freePorts(3)) as [number, number, number];
    const i = this.nodes.length;
    const first = this.nodes[0];
    if (first === undefined) throw new Error('process-cluster: no node to join');
    const n = new ProcessNode(i, {
      ...first.spec,
      store: join(this.dir, `n${i + 1}`),
      rpcPort,
      sqlPort,
      httpPort,
      join: this.nodes.slice(0, 3).map((x) => x.rpcAddr),
      outFile: join(this.dir, `n${i + 1}.out`),
    });
    this.nodes.push(n);
    this.spawn(n);
    await waitForHealth('127.0.0.1', httpPort, waitReady, this.readyTimeoutMs, () => n.running);
    return n;
  }

  node(i: number): ProcessNode {
    const n = this.nodes[i];
    if (n === undefined) throw new Error(`process-cluster: no node ${i}`);
    return n;
  }

  private spawn(n: ProcessNode): void {
    mkdirSync(n.spec.store, { recursive: true });
    const child = spawn(process.execPath, [MAIN_JS, ...startArgs(n.spec), ...n.args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...n.env } });
    reap(child);
    n.child = child;
    n.exitCode = null;
    let out = '';
    const append = (d: Buffer): void => {
      out += d.toString();
      if (out.length > 1 << 20) out = out.slice(-(1 << 19));
      n.output = out;
      appendFileSync(n.spec.outFile, d); // kept with CAIRN_KEEP_TEST_DIRS=1 (a crash's stack lands here)
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    child.on('exit', (code, signal) => {
      n.exitCode = code ?? (signal === null ? -1 : 128);
      spare(child);
    });
  }

  /** Waits until every running node answers /health?ready=1. */
  async waitReady(timeoutMs = this.readyTimeoutMs): Promise<void> {
    await Promise.all(this.nodes.filter((n) => n.running).map((n) => waitForHealth('127.0.0.1', n.spec.httpPort, true, timeoutMs, () => n.running)));
  }

  /** SIGKILL of node i's process; resolves once it is gone. */
  async kill(i: number): Promise<void> {
    const n = this.node(i);
    if (!n.running || n.child === null) return;
    const pid = n.child.pid as number;
    n.child.kill('SIGKILL');
    await waitForExit(pid, 10_000);
    await this.exited(n);
  }

  /** SIGTERM (clean shutdown); resolves with the exit code. */
  async stop(i: number): Promise<number | null> {
    const n = this.node(i);
    if (!n.running || n.child === null) return n.exitCode;
    n.child.kill('SIGTERM');
    await this.exited(n, 20_000);
    return n.exitCode;
  }

  private async exited(n: ProcessNode, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (n.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (n.exitCode === null) throw new Error(`process-cluster: n${n.index + 1} did not exit`);
  }

  /** Starts node i again on its store and ports; waits until it is ready (or only up). */
  async restart(i: number, waitReady = true): Promise<void> {
    const n = this.node(i);
    if (n.running) await this.stop(i);
    this.spawn(n);
    try {
      await waitForHealth('127.0.0.1', n.spec.httpPort, waitReady, this.readyTimeoutMs, () => n.running);
    } catch (e) {
      throw new Error(`process-cluster: restart of n${i + 1} failed: ${(e as Error).message}\n${this.logs(i).slice(-2000)}`);
    }
  }

  async http(i: number, path: string, method = 'GET', body?: unknown): Promise<{ status: number; body: string }> {
    return httpRequest('127.0.0.1', this.node(i).spec.httpPort, path, method, body, 120_000);
  }

  async json<T>(i: number, path: string, method = 'GET', body?: unknown): Promise<T> {
    const r = await this.http(i, path, method, body);
    if (r.status !== 200) throw new Error(`process-cluster: ${method} ${path} on n${i + 1}: ${r.status} ${r.body}`);
    return JSON.parse(r.body) as T;
  }

  /** KV operations through node i's admin endpoint. */
  async kv(i: number, ops: readonly AdminOp[]): Promise<AdminOpResult[]> {
    return (await this.json<{ results: AdminOpResult[] }>(i, '/_admin/kv', 'POST', { ops })).results;
  }

  /**
   * Every replica of every range reports the same checksum (asked through
   * node i; each range must have `replicas` answers). NB: a replica that
   * applies the ComputeChecksum entry in the same Ready round as later
   * entries (a node catching up after a restart) hashes the state after the
   * whole round (src/kv/replica.ts finishApply takes the engine snapshot
   * after the round's apply batch), so one round can disagree although the
   * data agree; and a replica caught up by a snapshot covering the checksum
   * entry never computes it (null). Data that really diverged never agree
   * again, so a few fresh checksums, each on all replicas, still catch
   * divergence. Returns the agreeing checksums.
   */
  async expectChecksumsAgree(i: number, replicas: number, attempts = 5): Promise<RangeChecksums[]> {
    let last = '';
    for (let attempt = 0; attempt < attempts; attempt++) {
      const sums = await this.json<RangeChecksums[]>(i, '/_admin/checksum', 'POST');
      // Every replica hashes the command's own apply position: two different answers are a real divergence.
      const diverged = sums.filter((s) => new Set(Object.values(s.checksums).filter((v) => v !== null)).size > 1);
      if (diverged.length > 0) throw new Error(`process-cluster: replicas diverge: ${JSON.stringify(diverged)}`);
      // Only a missing answer (a replica caught up past the command by a snapshot, or slow) is asked again.
      const missing = sums.filter((s) => Object.keys(s.checksums).length !== replicas || Object.values(s.checksums).includes(null));
      if (sums.length > 0 && missing.length === 0) return sums;
      last = JSON.stringify(missing);
      console.log(`checksum attempt ${attempt + 1} incomplete: ${last}`);
    }
    throw new Error(`process-cluster: replicas did not all answer in ${attempts} checksums: ${last}`);
  }

  /** Node i's process output and log file. */
  logs(i: number): string {
    const n = this.node(i);
    const file = join(n.spec.store, 'logs', 'cairn.log');
    return `${n.output}${existsSync(file) ? readFileSync(file, 'utf8') : ''}`;
  }

  async close(): Promise<void> {
    for (const n of this.nodes) if (n.running) n.child?.kill('SIGKILL');
    for (const n of this.nodes) if (n.child !== null) await this.exited(n).catch(() => undefined);
    releasePorts(this.nodes.flatMap((n) => [n.spec.rpcPort, n.spec.sqlPort, n.spec.httpPort]));
    if (process.env['CAIRN_KEEP_TEST_DIRS'] !== '1') rmSync(this.dir, { recursive: true, force: true });
  }
}

