#!/usr/bin/env node
/**
 * The local multi-node cluster script (`npm run cluster -- …`): real,
 * separate node processes on this machine, each with its own data directory.
 *
 *   start --nodes N [--loopback-aliases] [--dir D] [-- extra node flags]
 *         starts N nodes (ports below), runs `cairn init` through node 1 when
 *         the cluster is new, waits until every node is ready, prints the
 *         connection strings
 *   stop             SIGTERM to every node we started (SIGKILL after 15 s)
 *   status           pid, liveness of the process, readiness, addresses
 *   kill N           SIGKILL of node N's process
 *   restart N        node N stopped (if running) and started again on its store
 *   wipe             stop, then delete the cluster directory
 *
 * Layout: <dir> (default .cairn-cluster/ in the repository root, ignored by
 * git) holds state.json and n1/, n2/ … (each node's store, with logs/ and
 * the process output node.out).
 *
 * Ports: on 127.0.0.1 node i listens on RPC 26357+i-1, SQL 26257+i-1 and
 * HTTP 8080+i-1 (bases set by --rpc-port/--sql-port/--http-port). With --loopback-aliases node i gets its own address
 * 127.0.0.(10+i) with the default ports (RPC 26357, SQL 26257, HTTP 8080)
 * and binds its outgoing RPC to it, so iptables rules on one address
 * partition one node (the jepsen-style suite).
 *
 * Safety: pids are kept in state.json, and a pid is signalled only if
 * /proc/<pid>/cmdline shows it is still the Cairn node on that store — the
 * script never kills a process it did not start.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { requestInit } from '../server/admin-client.js';
import { httpRequest, isNodeProcess, spawnNodeProcess, waitForExit, waitForHealth, type NodeProcessSpec } from './node-process.js';

interface NodeState {
  readonly index: number;
  readonly spec: NodeProcessSpec;
  pid: number;
}

interface ClusterState {
  initialized: boolean;
  readonly nodes: NodeState[];
}

const READY_TIMEOUT_MS = 90_000;

function repoRoot(): string {
  // dist/src/cli/cluster.js → the repository root
  return resolve(fileURLToPath(new URL('../../../', import.meta.url)));
}

function statePath(dir: string): string {
  return join(dir, 'state.json');
}

function loadState(dir: string): ClusterState | null {
  if (!existsSync(statePath(dir))) return null;
  return JSON.parse(readFileSync(statePath(dir), 'utf8')) as ClusterState;
}

function saveState(dir: string, s: ClusterState): void {
  writeFileSync(statePath(dir), `${JSON.stringify(s, null, 2)}\n`);
}

interface PortBases {
  readonly rpcPort: number;
  readonly sqlPort: number;
  readonly httpPort: number;
}

function nodeSpec(dir: string, i: number, n: number, aliases: boolean, extra: readonly string[], ports: PortBases): NodeProcessSpec {
  const host = (k: number): string => (aliases ? `127.0.0.${10 + k}` : '127.0.0.1');
  const rpcPort = (k: number): number => (aliases ? ports.rpcPort : ports.rpcPort + k - 1);
  const join: string[] = [];
  for (let k = 1; k <= n; k++) join.push(`${host(k)}:${rpcPort(k)}`);
  return {
    store: resolve(dir, `n${i}`),
    host: host(i),
    rpcPort: rpcPort(i),
    sqlPort: aliases ? ports.sqlPort : ports.sqlPort + i - 1,
    httpPort: aliases ? ports.httpPort : ports.httpPort + i - 1,
    join,
    extraArgs: extra,
    outFile: resolve(dir, `n${i}.out`),
    bindOutgoing: aliases,
  };
}

function running(n: NodeState): boolean {
  return n.pid > 0 && isNodeProcess(n.pid, n.spec.store);
}

function launch(n: NodeState): void {
  mkdirSync(n.spec.store, { recursive: true });
  const child = spawnNodeProcess(n.spec, { detached: true });
  if (child.pid === undefined) throw new Error(`cluster: could not start node ${n.index}`);
  n.pid = child.pid;
}

async function stopNode(n: NodeState, signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  if (!running(n)) {
    n.pid = 0;
    return;
  }
  process.kill(n.pid, signal);
  if (!(await waitForExit(n.pid, signal === 'SIGKILL' ? 5_000 : 15_000)) && signal === 'SIGTERM' && running(n)) {
    process.kill(n.pid, 'SIGKILL');
    await waitForExit(n.pid, 5_000);
  }
  n.pid = 0;
}

function nodeOf(s: ClusterState, arg: string): NodeState {
  const n = s.nodes.find((x) => x.index === Number(arg));
  if (n === undefined) throw new Error(`cluster: no node ${arg} (nodes 1…${s.nodes.length})`);
  return n;
}

function portArg(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65535 - 9) throw new InvalidArgumentError('expected a port number');
  return n;
}

function intArg(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 9) throw new InvalidArgumentError('expected an integer from 1 to 9');
  return n;
}

async function start(dir: string, count: number, aliases: boolean, extra: readonly string[], ports: PortBases): Promise<void> {
  mkdirSync(dir, { recursive: true });
  let s = loadState(dir);
  if (s !== null && s.nodes.some(running)) throw new Error(`cluster: already running (see \`npm run cluster -- status\`); stop it first`);
  if (s === null || s.nodes.length !== count) {
    if (s !== null && s.initialized) throw new Error(`cluster: ${dir} holds a ${s.nodes.length}-node cluster; \`wipe\` it first to start ${count} nodes`);
    s = { initialized: false, nodes: Array.from({ length: count }, (_, k) => ({ index: k + 1, spec: nodeSpec(dir, k + 1, count, aliases, extra, ports), pid: 0 })) };
  }
  const state = s;
  for (const n of state.nodes) launch(n);
  saveState(dir, state);
  for (const n of state.nodes) await waitForHealth(n.spec.host, n.spec.httpPort, false, READY_TIMEOUT_MS, () => running(n));
  if (!state.initialized) {
    const first = state.nodes[0] as NodeState;
    const res = await requestInit({ host: first.spec.host, port: first.spec.rpcPort });
    state.initialized = true;
    saveState(dir, state);
    process.stdout.write(`cluster initialized: ${res.clusterId}\n`);
  }
  await Promise.all(state.nodes.map((n) => waitForHealth(n.spec.host, n.spec.httpPort, true, READY_TIMEOUT_MS, () => running(n))));
  printStatus(state, null);
  const n1 = state.nodes[0] as NodeState;
  process.stdout.write(
    [
      '',
      `psql:  psql 'postgresql://root@${n1.spec.host}:${n1.spec.sqlPort}/defaultdb?sslmode=disable'`,
      `sql:   node dist/src/cli/main.js sql --url 'postgresql://root@${n1.spec.host}:${n1.spec.sqlPort}/defaultdb?sslmode=disable'`,
      `nodes: node dist/src/cli/main.js node status --ranges --host=${n1.spec.host}:${n1.spec.rpcPort}`,
      '',
    ].join('\n'),
  );
}

function printStatus(s: ClusterState, ready: Map<number, boolean> | null): void {
  const rows = s.nodes.map((n) => [
    `n${n.index}`,
    running(n) ? String(n.pid) : '-',
    running(n) ? 'running' : 'stopped',
    ready === null ? '' : ready.get(n.index) === true ? 'ready' : 'not ready',
    `${n.spec.host}:${n.spec.rpcPort}`,
    `${n.spec.host}:${n.spec.sqlPort}`,
    `http://${n.spec.host}:${n.spec.httpPort}`,
  ]);
  const header = ['node', 'pid', 'process', ready === null ? '' : 'health', 'rpc', 'sql', 'http'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  for (const r of [header, ...rows]) process.stdout.write(`${r.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd()}\n`);
}

async function readiness(s: ClusterState): Promise<Map<number, boolean>> {
  const out = new Map<number, boolean>();
  await Promise.all(
    s.nodes.map(async (n) => {
      try {
        out.set(n.index, running(n) && (await httpRequest(n.spec.host, n.spec.httpPort, '/health?ready=1', 'GET', undefined, 2_000)).status === 200);
      } catch {
        out.set(n.index, false);
      }
    }),
  );
  return out;
}

function requireState(dir: string): ClusterState {
  const s = loadState(dir);
  if (s === null) throw new Error(`cluster: no cluster in ${dir} (run \`npm run cluster -- start --nodes 3\`)`);
  return s;
}

async function main(): Promise<void> {
  const program = new Command('cluster').description('run a local multi-process Cairn cluster');
  program.option('--dir <dir>', 'cluster directory', join(repoRoot(), '.cairn-cluster'));
  const dirOf = (): string => resolve((program.opts() as { dir: string }).dir);
  program
    .command('start')
    .option('--nodes <n>', 'number of nodes', intArg, 3)
    .option('--loopback-aliases', 'give node i its own address 127.0.0.(10+i)', false)
    .option('--rpc-port <port>', 'RPC port of node 1 (node i: +i-1)', portArg, 26357)
    .option('--sql-port <port>', 'SQL port of node 1 (node i: +i-1)', portArg, 26257)
    .option('--http-port <port>', 'HTTP port of node 1 (node i: +i-1)', portArg, 8080)
    .argument('[nodeFlags...]', 'extra flags passed to every node (after --)')
    .action(async (nodeFlags: string[], o: { nodes: number; loopbackAliases: boolean } & PortBases) =>
      start(dirOf(), o.nodes, o.loopbackAliases, nodeFlags, { rpcPort: o.rpcPort, sqlPort: o.sqlPort, httpPort: o.httpPort }),
    );
  program.command('stop').action(async () => {
    const s = requireState(dirOf());
    await Promise.all(s.nodes.map((n) => stopNode(n, 'SIGTERM')));
    saveState(dirOf(), s);
    process.stdout.write('cluster stopped\n');
  });
  program.command('status').action(async () => {
    const s = requireState(dirOf());
    printStatus(s, await readiness(s));
  });
  program
    .command('kill')
    .argument('<n>')
    .action(async (arg: string) => {
      const s = requireState(dirOf());
      const n = nodeOf(s, arg);
      if (!running(n)) throw new Error(`cluster: node ${arg} is not running`);
      await stopNode(n, 'SIGKILL');
      saveState(dirOf(), s);
      process.stdout.write(`node ${arg} killed (SIGKILL)\n`);
    });
  program
    .command('restart')
    .argument('<n>')
    .action(async (arg: string) => {
      const s = requireState(dirOf());
      const n = nodeOf(s, arg);
      await stopNode(n, 'SIGTERM');
      launch(n);
      saveState(dirOf(), s);
      await waitForHealth(n.spec.host, n.spec.httpPort, true, READY_TIMEOUT_MS, () => running(n));
      process.stdout.write(`node ${arg} restarted (pid ${n.pid})\n`);
    });
  program.command('wipe').action(async () => {
    const dir = dirOf();
    const s = loadState(dir);
    if (s !== null) await Promise.all(s.nodes.map((n) => stopNode(n, 'SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
    process.stdout.write(`wiped ${dir}\n`);
  });
  await program.parseAsync(process.argv);
}

main().catch((e: unknown) => {
  process.stderr.write(`ERROR: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
