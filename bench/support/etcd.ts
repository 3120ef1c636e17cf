/**
 * A throwaway 3-member etcd 3.4 cluster on 127.0.0.1 for the KV bench:
 * Debian's `etcd-server` package (installed with apt-get when `etcd` is not
 * on PATH), each member in its own temporary data directory with free client
 * and peer ports, default durability (fsync of the WAL per commit). Clients
 * speak to the v3 JSON gateway (`POST /v3/kv/put`, `/v3/kv/range`).
 *
 * Ownership: the handle owns the member processes and the directory; stop()
 * kills them and removes it (idempotent). A process-exit hook kills members
 * if the bench dies first.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../../test/support/process-cluster.js';
import { ChildGroup } from './child-group.js';
import { rssBytes } from './proc-stats.js';

export interface EtcdCluster {
  /** Client URLs, one per member (http://127.0.0.1:port). */
  readonly urls: readonly string[];
  readonly version: string;
  pids(): number[];
  rssMiB(): number[];
  stop(): Promise<void>;
}

function ensureEtcdInstalled(): string {
  try {
    return execFileSync('etcd', ['--version'], { encoding: 'utf8' }).split('\n')[0] ?? 'etcd';
  } catch {
    process.stdout.write("etcd not found: installing Debian's etcd-server package\n");
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '-qq', 'etcd-server'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    return execFileSync('etcd', ['--version'], { encoding: 'utf8' }).split('\n')[0] ?? 'etcd';
  }
}

export async function startEtcd(members = 3, readyTimeoutMs = 60_000): Promise<EtcdCluster> {
  const version = ensureEtcdInstalled();
  const dir = mkdtempSync(join(tmpdir(), 'etcd-bench-'));
  const ports = await freePorts(2 * members);
  const peer = (i: number): string => `http://127.0.0.1:${ports[2 * i + 1] as number}`;
  const client = (i: number): string => `http://127.0.0.1:${ports[2 * i] as number}`;
  const initial = Array.from({ length: members }, (_, i) => `m${i + 1}=${peer(i)}`).join(',');
  const group = new ChildGroup(dir);
  const stop = (): Promise<void> => group.stop();
  try {
    for (let i = 0; i < members; i++) {
      const fd = openSync(join(dir, `m${i + 1}.out`), 'a');
      const child = spawn(
        'etcd',
        [
          `--name=m${i + 1}`,
          `--data-dir=${join(dir, `m${i + 1}`)}`,
          `--listen-client-urls=${client(i)}`,
          `--advertise-client-urls=${client(i)}`,
          `--listen-peer-urls=${peer(i)}`,
          `--initial-advertise-peer-urls=${peer(i)}`,
          `--initial-cluster=${initial}`,
          '--initial-cluster-state=new',
          '--initial-cluster-token=cairn-bench',
          '--log-level=error',
        ],
        { stdio: ['ignore', fd, fd], env: { ...process.env, ETCD_UNSUPPORTED_ARCH: process.arch === 'x64' ? '' : process.arch } },
      );
      closeSync(fd);
      group.add(child);
    }
    const deadline = Date.now() + readyTimeoutMs;
    for (let i = 0; i < members; i++) {
      for (;;) {
        const ok = await fetch(`${client(i)}/health`)
          .then(async (r) => r.status === 200 && ((await r.json()) as { health?: string }).health === 'true')
          .catch(() => false);
        if (ok) break;
        if (Date.now() > deadline) throw new Error(`bench: etcd member m${i + 1} not healthy within ${readyTimeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const pids = (): number[] => group.pids();
    return { urls: Array.from({ length: members }, (_, i) => client(i)), version, pids, rssMiB: () => pids().map((p) => Math.round(rssBytes(p) / 2 ** 20)), stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
