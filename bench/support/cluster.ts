/**
 * The systems the benches measure, started and stopped by the bench itself:
 * a local Cairn cluster of real `cairn start` processes
 * (dist/src/cli/main.js through src/cli/node-process.ts: temporary store
 * directories, free ports, `cairn init`, every node ready, every range
 * replicated 3x; node output in <dir>/n<i>.out) and a throwaway PostgreSQL 15
 * (test/support/postgres.ts, fsync=on, synchronous_commit=on).
 *
 * Ownership: each handle owns its processes and directories; stop() kills
 * them and removes the directories and is safe to call twice.
 * CAIRN_BENCH_CPU_PROF=<dir> profiles every Cairn node (V8 CPU profiler
 * through profiled-node.ts; stopped with SIGTERM so the profiles are written). Benches call
 * it in `finally` so no process outlives a failed run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { httpRequest, spawnNodeProcess, startArgs, waitForHealth, type NodeProcessSpec } from '../../src/cli/node-process.js';
import { requestInit } from '../../src/server/admin-client.js';
import type { RangeStatus } from '../../src/server/node.js';
import { freePorts } from '../../test/support/process-cluster.js';
import { findPostgresBinDir, startPostgres } from '../../test/support/postgres.js';
import { ChildGroup } from './child-group.js';
import { postgresPids, rssBytes } from './proc-stats.js';

export interface BenchTarget {
  readonly name: 'cairn' | 'postgres';
  /** PostgreSQL-protocol URLs, one per node (client i uses urls[i % n]). */
  readonly urls: readonly string[];
  /** The server processes now (CPU and memory are read from /proc). */
  pids(): number[];
  /** Resident memory per server process, MiB. */
  rssMiB(): number[];
  stop(): Promise<void>;
}

export interface CairnCluster extends BenchTarget {
  readonly name: 'cairn';
  readonly nodes: readonly NodeProcessSpec[];
  readonly dir: string;
  /** GET/POST on node i's HTTP endpoint, parsed JSON (throws on a non-200). */
  json<T>(i: number, path: string, method?: string, body?: unknown): Promise<T>;
}

/**
 * dist/src/cli/main.js: next to this file once compiled (dist/bench/support →
 * dist/src/cli), else under the repository's dist/ (running from source).
 */
function mainJs(): string {
  const compiled = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
  if (existsSync(compiled)) return compiled;
  const fromSource = resolve(fileURLToPath(new URL('../../', import.meta.url)), 'dist/src/cli/main.js');
  if (existsSync(fromSource)) return fromSource;
  throw new Error(`bench: ${fromSource} is missing; run \`npx tsc -p .\` first`);
}

/**
 * A local Cairn cluster of `nodes` real processes on 127.0.0.1 (temporary
 * store directories, free ports), initialised through node 1; resolves once
 * every node is ready and every range seen by node 1 has min(3, nodes)
 * replicas (the default replication factor is 3).
 */
export async function startCairn(nodes = 3, extraArgs: readonly string[] = [], readyTimeoutMs = 120_000): Promise<CairnCluster> {
  const main = mainJs();
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-'));
  const group = new ChildGroup(dir);
  // CAIRN_BENCH_CPU_PROF=<dir>: every node runs under the CPU profiler
  // (profiled-node.ts, compiled only) and is stopped with SIGTERM so that it
  // writes <dir>/node-<pid>.cpuprofile.
  const profDir = process.env['CAIRN_BENCH_CPU_PROF'];
  const stop = (): Promise<void> => group.stop(profDir !== undefined);
  try {
    const ports = await freePorts(3 * nodes);
    const joinList = Array.from({ length: nodes }, (_, i) => `127.0.0.1:${ports[3 * i] as number}`);
    const specs: NodeProcessSpec[] = Array.from({ length: nodes }, (_, i) => ({
      store: join(dir, `n${i + 1}`),
      host: '127.0.0.1',
      rpcPort: ports[3 * i] as number,
      sqlPort: ports[3 * i + 1] as number,
      httpPort: ports[3 * i + 2] as number,
      join: joinList,
      extraArgs,
      outFile: join(dir, `n${i + 1}.out`),
    }));
    for (const spec of specs) {
      mkdirSync(spec.store, { recursive: true });
      group.add(spawnNodeProcess(spec, { main: profDir === undefined ? main : fileURLToPath(new URL('./profiled-node.js', import.meta.url)) }));
    }
    const alive = (i: number) => (): boolean => group.running(i);
    await Promise.all(specs.map((s, i) => waitForHealth('127.0.0.1', s.httpPort, false, readyTimeoutMs, alive(i))));
    await requestInit({ host: '127.0.0.1', port: (specs[0] as NodeProcessSpec).rpcPort });
    await Promise.all(specs.map((s, i) => waitForHealth('127.0.0.1', s.httpPort, true, readyTimeoutMs, alive(i))));
    const json = async <T>(i: number, path: string, method = 'GET', body?: unknown): Promise<T> => {
      const spec = specs[i] as NodeProcessSpec;
      const r = await httpRequest('127.0.0.1', spec.httpPort, path, method, body, 120_000);
      if (r.status !== 200) throw new Error(`bench: ${method} ${path} on n${i + 1}: ${r.status} ${r.body}`);
      return JSON.parse(r.body) as T;
    };
    const want = Math.min(3, nodes);
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      const ranges = await json<RangeStatus[]>(0, '/_status/ranges');
      if (ranges.length > 0 && ranges.every((r) => r.replicas.length >= want)) break;
      if (Date.now() > deadline) throw new Error(`bench: ranges not replicated ${want}x within ${readyTimeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const pids = (): number[] => group.pids();
    return {
      name: 'cairn',
      nodes: specs,
      dir,
      urls: specs.map((s) => `postgresql://root@127.0.0.1:${s.sqlPort}/defaultdb?sslmode=disable`),
      pids,
      rssMiB: () => pids().map((p) => Math.round(rssBytes(p) / 2 ** 20)),
      json,
      stop,
    };
  } catch (e) {
    await stop();
    throw new Error(`bench: cairn cluster start failed: ${(e as Error).message} (args ${startArgs({ store: '…', host: '127.0.0.1', rpcPort: 0, sqlPort: 0, httpPort: 0, join: [], extraArgs, outFile: '' }).join(' ')})`);
  }
}

function ensurePostgresInstalled(): void {
  if (findPostgresBinDir() !== undefined) return;
  process.stdout.write("PostgreSQL not found: installing Debian's postgresql package\n");
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'postgresql'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
}

/** PostgreSQL with durable commits (synchronous_commit=on, fsync=on) and room for the benches' connections. */
export async function startPostgresTarget(): Promise<BenchTarget & { readonly version: string }> {
  ensurePostgresInstalled();
  const pg = await startPostgres({ settings: { max_connections: 300, synchronous_commit: 'on', fsync: 'on' } });
  const pids = (): number[] => {
    try {
      return postgresPids(pg.dataDir);
    } catch {
      return [];
    }
  };
  return {
    name: 'postgres',
    version: pg.version,
    urls: [pg.url],
    pids,
    rssMiB: () => [Math.round(pids().reduce((s, p) => s + rssBytes(p), 0) / 2 ** 20)],
    stop: () => pg.stop(),
  };
}
