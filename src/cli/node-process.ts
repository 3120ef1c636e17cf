/**
 * Launching and watching real node processes: shared by the local cluster
 * script (cluster.ts) and the multi-process test helper
 * (test/support/process-cluster.ts).
 *
 *   spawnNodeProcess(spec) ── node dist/src/cli/main.js start --store=… ──► child
 *        stdout/stderr appended to <store>/../<name>.out (the node's own log is
 *        <store>/logs/cairn.log)
 *   waitForHealth(http, ready) polls GET /health[?ready=1] until 200
 *   isNodeProcess(pid, store) reads /proc/<pid>/cmdline: a pid is only ever
 *        signalled if it is still the process we started on that store
 *
 * Ownership: src/cli. Callers own the children they spawn.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';

export interface NodeProcessSpec {
  readonly store: string;
  readonly host: string;
  readonly rpcPort: number;
  readonly sqlPort: number;
  readonly httpPort: number;
  /** RPC addresses (host:port) of the nodes to join; empty with singleNode. */
  readonly join: readonly string[];
  readonly singleNode?: boolean;
  /** Extra flags (e.g. --raft-tick=20ms). */
  readonly extraArgs?: readonly string[];
  /** stdout + stderr of the process go here (appended). */
  readonly outFile: string;
  /** Bind outgoing RPC to the node's own host (loopback alias mode). */
  readonly bindOutgoing?: boolean;
}

/** dist/src/cli/main.js next to this compiled file. */
export function mainScriptPath(): string {
  return fileURLToPath(new URL('./main.js', import.meta.url));
}

export function startArgs(spec: NodeProcessSpec): string[] {
  const args = [
    spec.singleNode === true ? 'start-single-node' : 'start',
    `--store=${spec.store}`,
    `--listen-addr=${spec.host}:${spec.rpcPort}`,
    `--sql-addr=${spec.host}:${spec.sqlPort}`,
    `--http-addr=${spec.host}:${spec.httpPort}`,
    '--insecure',
  ];
  if (spec.singleNode !== true) args.push(`--join=${spec.join.join(',')}`);
  if (spec.bindOutgoing === true) args.push(`--local-address=${spec.host}`);
  args.push(...(spec.extraArgs ?? []));
  return args;
}

/** Starts a node process detached from our terminal; its output goes to spec.outFile. */
export function spawnNodeProcess(spec: NodeProcessSpec, opts: { detached?: boolean; main?: string } = {}): ChildProcess {
  const fd = openSync(spec.outFile, 'a');
  try {
    const child = spawn(process.execPath, [opts.main ?? mainScriptPath(), ...startArgs(spec)], {
      stdio: ['ignore', fd, fd],
      detached: opts.detached ?? false,
      env: { ...process.env, CAIRN_LOG_PRETTY: '0' },
    });
    if (opts.detached === true) child.unref();
    return child;
  } finally {
    closeSync(fd);
  }
}

/** GET http://host:port/path → { status, body } (never throws on a status; rejects on connection errors). */
export function httpRequest(host: string, port: number, path: string, method = 'GET', body?: unknown, timeoutMs = 10_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = request({ host, port, path, method, timeout: timeoutMs, headers: data === undefined ? {} : { 'content-type': 'application/json', 'content-length': data.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`http: ${method} ${path} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(data);
  });
}

/** Polls /health (or /health?ready=1) until it answers 200; rejects after timeoutMs or if `alive()` turns false. */
export async function waitForHealth(host: string, httpPort: number, ready: boolean, timeoutMs: number, alive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (!alive()) throw new Error(`node at ${host}:${httpPort} exited before it was ${ready ? 'ready' : 'up'}`);
    try {
      const r = await httpRequest(host, httpPort, ready ? '/health?ready=1' : '/health', 'GET', undefined, 2_000);
      if (r.status === 200) return;
      last = r.body.trim();
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`node at ${host}:${httpPort} not ${ready ? 'ready' : 'up'} after ${timeoutMs} ms (${last})`);
}

/** True iff pid is alive and is a Cairn node started on `store` (checked through /proc, so a recycled pid is never signalled). */
export function isNodeProcess(pid: number, store: string): boolean {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return cmd.some((a) => a.endsWith('main.js')) && cmd.includes(`--store=${store}`);
  } catch {
    return false;
  }
}

/** Waits until pid is gone (or timeoutMs passes); true if it exited. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    // A zombie child of ours still answers kill(0); /proc shows its state.
    try {
      if (/\)\s+Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) return true;
    } catch {
      return true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
