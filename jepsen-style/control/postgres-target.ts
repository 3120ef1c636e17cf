/**
 * PostgresTarget: a throwaway single-node PostgreSQL as the system under test, so the
 * harness itself (clients, histories, nemesis plumbing, reports, checkers) is tested
 * against a real database that is known to be serializable.
 *
 * The server runs from the newest /usr/lib/postgresql/<v>/bin (else PATH) on a fresh
 * data directory and a fixed port on 127.0.0.1. As root it runs as the `postgres` OS
 * user through `setpriv`, which execs in place: the child's pid is the postmaster's, so
 * kill() signals the server itself, never a wrapper. kill = SIGKILL of the postmaster
 * (backends notice its death and exit); restart = a new postmaster on the same data
 * directory and port, retried while the old shared memory is still attached. pause =
 * SIGSTOP / SIGCONT of the postmaster and every backend (its children, from /proc).
 *
 * Ownership: owns the data directory (removed by stop()) and the server's log
 * (`<storeDir>/node1.log`, kept).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, closeSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnError } from '../../src/util/index.js';
import { isAlive, signal, sqlAnswers, waitFor } from './target.js';
import type { ClusterTarget, TargetNode } from './target.js';

function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const v = readdirSync(root).filter((d) => existsSync(join(root, d, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a));
    if (v.length > 0) return join(root, v[0]!, 'bin');
  }
  for (const dir of (process.env['PATH'] ?? '').split(':')) {
    if (dir !== '' && existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb'))) return dir;
  }
  throw new CairnError('jepsen.no_postgres', 'jepsen: no PostgreSQL server binaries found');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 0));
    });
  });
}

/** argv prefix that runs a binary as the postgres user when we are root. */
function asServerUser(): { prefix: string[]; uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return { prefix: [] };
  const id = (flag: string): number => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    id('-u');
  } catch {
    execFileSync('useradd', ['-r', '-M', '-s', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' });
  }
  const uid = id('-u');
  const gid = id('-g');
  return { prefix: ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--init-groups', '--pdeathsig=INT', '--'], uid, gid };
}

/** Pids of the direct children of `pid` (a postmaster's backends), from /proc. */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

export class PostgresTarget implements ClusterTarget {
  readonly kind = 'postgres';
  readonly nodes: readonly TargetNode[];
  private proc: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stopped = false;

  private constructor(
    private readonly bin: string,
    private readonly dataDir: string,
    private readonly port: number,
    private readonly user: { prefix: string[] },
    logPath: string,
    private readonly settings: Readonly<Record<string, string>>,
  ) {
    this.nodes = [{ id: 1, host: '127.0.0.1', sqlUrl: `postgres://postgres@127.0.0.1:${port}/postgres`, httpUrl: undefined, logPath }];
  }

  static async start(storeDir: string, settings: Readonly<Record<string, string>> = {}): Promise<PostgresTarget> {
    const bin = postgresBinDir();
    const user = asServerUser();
    const dataDir = mkdtempSync(join(tmpdir(), 'cairn-jepsen-pg-'));
    if (user.uid !== undefined) chownSync(dataDir, user.uid, user.gid!);
    const initArgs = ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'];
    const [cmd, ...rest] = [...user.prefix, join(bin, 'initdb'), ...initArgs];
    execFileSync(cmd!, rest, { stdio: 'ignore', cwd: dataDir, env: { ...process.env, LC_ALL: 'C' } });
    const t = new PostgresTarget(bin, dataDir, await freePort(), user, join(storeDir, 'node1.log'), settings);
    await t.restart(0);
    return t;
  }

  pid(_i = 0): number | undefined {
    const p = this.proc?.pid;
    return p !== undefined && this.proc!.exitCode === null && this.proc!.signalCode === null ? p : undefined;
  }

  async restart(_i = 0): Promise<void> {
    if (this.pid() !== undefined) return;
    const settings: Record<string, string> = {
      listen_addresses: '127.0.0.1',
      port: String(this.port),
      unix_socket_directories: this.dataDir,
      fsync: 'on',
      max_connections: '200',
      ...this.settings,
    };
    const args = ['-D', this.dataDir];
    for (const [k, v] of Object.entries(settings)) args.push('-c', `${k}=${v}`);
    const url = this.nodes[0]!.sqlUrl;
    // After a SIGKILL the old backends may hold the shared memory a few moments longer.
    await waitFor('postgres restart', 60_000, async () => {
      const log = openSync(this.nodes[0]!.logPath, 'a');
      const [cmd, ...rest] = [...this.user.prefix, join(this.bin, 'postgres'), ...args];
      const proc = spawn(cmd!, rest, { stdio: ['ignore', log, log], cwd: this.dataDir });
      closeSync(log);
      this.proc = proc;
      this.exited = new Promise((r) => proc.once('exit', () => r()));
      for (let i = 0; i < 100 && this.pid() !== undefined; i++) {
        if (await sqlAnswers(url, 2000)) return true;
        await new Promise((r) => setTimeout(r, 100));
      }
      if (this.pid() !== undefined) throw new CairnError('jepsen.postgres_start', 'jepsen: postgres did not accept connections');
      return false;
    }, 200);
  }

  async kill(_i = 0): Promise<void> {
    const pid = this.pid();
    if (pid === undefined) return;
    const backends = childPids(pid);
    signal(pid, 'SIGKILL');
    await this.exited;
    await waitFor('postgres backends to exit', 30_000, () => backends.every((b) => !isAlive(b)));
  }

  async pause(_i: number, paused: boolean): Promise<void> {
    const pid = this.pid();
    if (pid === undefined) return;
    const sig = paused ? 'SIGSTOP' : 'SIGCONT';
    signal(pid, sig);
    for (const c of childPids(pid)) signal(c, sig);
  }

  async waitHealthy(timeoutMs: number): Promise<void> {
    await waitFor('postgres to answer', timeoutMs, () => sqlAnswers(this.nodes[0]!.sqlUrl, 2000), 200);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const pid = this.pid();
    if (pid !== undefined) {
      await this.pause(0, false);
      signal(pid, 'SIGINT');
      const t = setTimeout(() => signal(pid, 'SIGKILL'), 20_000);
      await this.exited;
      clearTimeout(t);
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
