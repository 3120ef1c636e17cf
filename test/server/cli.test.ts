/**
 * The command-line tools as a user runs them: `npm run cluster -- …`
 * (src/cli/cluster.ts: start/status/kill/restart/stop/start again/wipe, and
 * it never signals a pid it did not start), `cairn version`, and `cairn
 * debug keys` on a stopped store (prettyEngineKey output).
 */
import { describe, it, expect, afterAll } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_NODE_FLAGS, REPO_ROOT, releasePorts, reservePort, runCliAsync, runScriptAsync } from '../support/process-cluster.js';

const CLUSTER_JS = join(REPO_ROOT, 'dist/src/cli/cluster.js');
const dir = mkdtempSync(join(tmpdir(), 'cairn-cli-'));

function cluster(args: string[], timeoutMs = 120_000): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return runScriptAsync(CLUSTER_JS, ['--dir', join(dir, 'c'), ...args], timeoutMs);
}

/**
 * Three consecutive free ports for each of RPC, SQL and HTTP (9 ports bound and released together), reserved for
 * this process like freePorts' (process-cluster.ts): between the probe and the cluster's bind, a concurrent test
 * file's freePorts could otherwise hand one of them to its own nodes.
 */
async function portBlock(): Promise<[number, number, number]> {
  for (;;) {
    const base = 10_000 + Math.floor(Math.random() * 20_000);
    const ports = [0, 1, 2, 100, 101, 102, 200, 201, 202].map((d) => base + d);
    const reserved: number[] = [];
    for (const p of ports) if (reservePort(p)) reserved.push(p);
    if (reserved.length < ports.length) {
      releasePorts(reserved);
      continue;
    }
    const servers: Server[] = [];
    let ok = true;
    for (const p of ports) {
      const s = createServer();
      const bound = await new Promise<boolean>((r) => {
        s.once('error', () => r(false));
        s.listen(p, '127.0.0.1', () => r(true));
      });
      if (!bound) {
        ok = false;
        break;
      }
      servers.push(s);
    }
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    if (ok) return [base, base + 100, base + 200];
    releasePorts(reserved);
  }
}

function pids(): number[] {
  const s = JSON.parse(readFileSync(join(dir, 'c', 'state.json'), 'utf8')) as { nodes: { pid: number }[] };
  return s.nodes.map((n) => n.pid);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/\)\s+Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

afterAll(async () => {
  if (existsSync(join(dir, 'c', 'state.json'))) await cluster(['wipe']);
  rmSync(dir, { recursive: true, force: true });
});

describe('npm run cluster', () => {
  it('start, status, kill, restart, stop, start again, wipe', async () => {
    const [rpc, sql, http] = await portBlock();
    const start = await cluster(['start', '--nodes', '3', '--rpc-port', String(rpc), '--sql-port', String(sql), '--http-port', String(http), '--', ...FAST_NODE_FLAGS]);
    expect(start.status, start.stderr).toBe(0);
    expect(start.stdout).toMatch(/^cluster initialized: [0-9a-f-]{36}$/m);
    expect(start.stdout).toContain(`postgresql://root@127.0.0.1:${sql}/defaultdb?sslmode=disable`);
    const started = pids();
    expect(started.every(alive)).toBe(true);

    const status = await cluster(['status']);
    expect(status.stdout.split('\n').filter((l) => /^n\d .* running +ready /.test(l))).toHaveLength(3);

    const kill = await cluster(['kill', '2']);
    expect(kill.stdout).toBe('node 2 killed (SIGKILL)\n');
    expect(alive(started[1] as number)).toBe(false);
    expect((await cluster(['status'])).stdout).toMatch(/^n2 +- +stopped/m);

    const restart = await cluster(['restart', '2']);
    expect(restart.status, restart.stderr).toBe(0);
    expect(pids()[1]).not.toBe(started[1]);

    const again = await cluster(['start', '--nodes', '3']);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/already running/);

    const stop = await cluster(['stop']);
    expect(stop.stdout).toBe('cluster stopped\n');
    expect(started.filter((p, i) => i !== 1).some(alive)).toBe(false);

    // Start again on the same stores: no second init, same cluster.
    const restartAll = await cluster(['start', '--nodes', '3']);
    expect(restartAll.status, restartAll.stderr).toBe(0);
    expect(restartAll.stdout).not.toMatch(/cluster initialized/);
    const status2 = await runCliAsync(['node', 'status', `--host=127.0.0.1:${rpc}`]);
    expect(status2.stdout).toMatch(/\(3 rows\)/);

    const wipe = await cluster(['wipe']);
    expect(wipe.status).toBe(0);
    expect(existsSync(join(dir, 'c'))).toBe(false);
  }, 240_000);

  it('never signals a process it did not start', async () => {
    const bystander = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const store = join(dir, 'c', 'n1');
      const state = { initialized: true, nodes: [{ index: 1, pid: bystander.pid, spec: { store, host: '127.0.0.1', rpcPort: 1, sqlPort: 2, httpPort: 3, join: [], outFile: join(dir, 'x.out') } }] };
      mkdirSync(join(dir, 'c'), { recursive: true });
      writeFileSync(join(dir, 'c', 'state.json'), JSON.stringify(state));
      const r = await cluster(['kill', '1']);
      expect(r.status).toBe(1);
      expect(r.stderr).toBe('ERROR: cluster: node 1 is not running\n');
      await cluster(['stop']);
      expect(alive(bystander.pid as number)).toBe(true);
    } finally {
      bystander.kill('SIGKILL');
    }
  });
});

describe('cairn', () => {
  it('version', async () => {
    const r = await runCliAsync(['version']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^cairn 0\.1\.0 \(node v\d+\.\d+\.\d+\)\n$/);
  });

  it('debug keys prints a stopped store\'s engine keys', async () => {
    const [rpc, sql, http] = await portBlock();
    const store = join(dir, 'single');
    const node = spawn(process.execPath, [join(REPO_ROOT, 'dist/src/cli/main.js'), 'start-single-node', `--store=${store}`, `--listen-addr=127.0.0.1:${rpc}`, `--sql-addr=127.0.0.1:${sql}`, `--http-addr=127.0.0.1:${http}`, ...FAST_NODE_FLAGS], { stdio: 'ignore' });
    const exited = new Promise<number | null>((r) => node.on('exit', (code) => r(code)));
    try {
      const { waitForHealth } = await import('../../src/cli/node-process.js');
      await waitForHealth('127.0.0.1', http, true, 30_000);
    } finally {
      node.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    const r = await runCliAsync(['debug', 'keys', `--store=${store}`]);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    for (const k of ['/System/ClusterID', '/System/NodeIDGen', '/System/NodeLiveness/1', '/Local/RangeID/1/u/RaftHardState', '/Local/Range/Min/RangeDescriptor', '/Meta2/Max']) {
      expect(lines, k).toContain(k);
    }
  }, 60_000);
});
