/**
 * A throwaway PostgreSQL server for tests and comparisons.
 *
 *   const pg = await startPostgres();       // initdb + postgres on 127.0.0.1
 *   … connect to pg.url …
 *   await pg.stop();                        // fast shutdown, data dir removed
 *
 * Binaries: the newest /usr/lib/postgresql/<v>/bin (Debian's `postgresql`
 * package), else `pg_config --bindir`, else `initdb`/`postgres` on PATH.
 * The data directory is a fresh temporary directory; the server listens on
 * 127.0.0.1 only (TCP) and on a Unix socket inside the data directory, with
 * trust authentication, fsync=on and synchronous_commit=on (so its numbers
 * are honest durable-commit numbers).
 *
 * PostgreSQL refuses to run as root: when we are root, initdb and postgres run
 * as the `postgres` OS user (created with `useradd -r` if missing) through
 * `setpriv`, which execs in place, so the child's pid is the server's and
 * stop() signals it directly (SIGINT = fast shutdown). setpriv also gives the
 * server a parent-death signal (SIGINT): if the test process dies without
 * calling stop(), the server still shuts down (its directory stays behind).
 *
 * Ownership: the returned handle owns the process and the directory; stop()
 * is idempotent. A server whose process dies unexpectedly is reported by the
 * next stop() (it rejects with the server's log tail).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface StartPostgresOptions {
  /** TCP port; a free one is chosen when absent. */
  readonly port?: number;
  /** Extra `-c name=value` server settings. */
  readonly settings?: Readonly<Record<string, string | number>>;
  /** How long to wait for the server to accept connections; default 60 s. */
  readonly readyTimeoutMs?: number;
}

export interface PostgresServer {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** The server's version string, e.g. "PostgreSQL 15.18 (Debian …)". */
  readonly version: string;
  stop(): Promise<void>;
}

/** The directory holding initdb and postgres, or undefined when none is installed. */
export function findPostgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return join(root, versions[0] as string, 'bin');
  }
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb'))) return dir;
  } catch {
    // no pg_config
  }
  for (const dir of (process.env['PATH'] ?? '').split(':')) {
    if (dir !== '' && existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb'))) return dir;
  }
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/** When root: the postgres OS user (created if missing). Otherwise undefined (run as ourselves). */
function serverUser(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = (): RunAs | undefined => {
    try {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      return { uid, gid };
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found !== undefined) return found;
  execFileSync('useradd', ['-r', '-M', '-s', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' });
  const created = lookup();
  if (created === undefined) throw new Error('postgres: could not create the postgres OS user');
  return created;
}

/**
 * argv that runs `bin args…` in place through setpriv: as `user` when given,
 * and with a parent-death signal, so that a server whose test process dies
 * (a killed vitest worker) shuts down instead of lingering. Without setpriv
 * (and not root) the binary runs directly.
 */
function command(user: RunAs | undefined, bin: string, args: readonly string[], deathSignal?: string): [string, string[]] {
  const pre: string[] = [];
  if (user !== undefined) pre.push(`--reuid=${user.uid}`, `--regid=${user.gid}`, '--init-groups');
  if (deathSignal !== undefined && hasSetpriv()) pre.push(`--pdeathsig=${deathSignal}`);
  if (pre.length === 0) return [bin, [...args]];
  return ['setpriv', [...pre, '--', bin, ...args]];
}

let setprivFound: boolean | undefined;
function hasSetpriv(): boolean {
  if (setprivFound === undefined) {
    try {
      execFileSync('setpriv', ['--version'], { stdio: 'ignore' });
      setprivFound = true;
    } catch {
      setprivFound = false;
    }
  }
  return setprivFound;
}

export async function startPostgres(opts: StartPostgresOptions = {}): Promise<PostgresServer> {
  const binDir = findPostgresBinDir();
  if (binDir === undefined) {
    throw new Error('postgres: no PostgreSQL server binaries found (install Debian\'s "postgresql" package)');
  }
  const user = serverUser();
  const dataDir = mkdtempSync(join(tmpdir(), 'cairn-pg-'));
  if (user !== undefined) chownSync(dataDir, user.uid, user.gid);
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' };
  const cleanup = (): void => rmSync(dataDir, { recursive: true, force: true });

  try {
    const [initBin, initArgs] = command(user, join(binDir, 'initdb'), [
      '-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions',
    ]);
    execFileSync(initBin, initArgs, { env, stdio: ['ignore', 'pipe', 'pipe'], cwd: dataDir });
  } catch (e) {
    cleanup();
    const stderr = (e as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`postgres: initdb failed: ${stderr || String(e)}`);
  }

  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  const launch = async (port: number): Promise<Launched> => {
    const settings: Record<string, string | number> = {
      listen_addresses: '127.0.0.1',
      port,
      unix_socket_directories: dataDir,
      fsync: 'on',
      synchronous_commit: 'on',
      max_connections: 200,
      shared_buffers: '128MB',
      logging_collector: 'off',
      ...opts.settings,
    };
    const args = ['-D', dataDir];
    for (const [k, v] of Object.entries(settings)) args.push('-c', `${k}=${v}`);
    const [bin, argv] = command(user, join(binDir, 'postgres'), args, 'INT');
    const proc: ChildProcess = spawn(bin, argv, { env, stdio: ['ignore', 'ignore', 'pipe'], cwd: dataDir });
    const launched: Launched = { proc, port, log: '', exited: false, exit: Promise.resolve(), version: '' };
    proc.stderr?.on('data', (d: Buffer) => {
      launched.log = (launched.log + d.toString()).slice(-8000);
    });
    launched.exit = new Promise<void>((resolve) => {
      proc.once('exit', () => {
        launched.exited = true;
        resolve();
      });
    });
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (launched.exited) {
        const inUse = /could not bind|Address already in use|could not create any TCP\/IP sockets/.test(launched.log);
        throw new StartupError(`postgres: server exited during startup:\n${launched.log}`, inUse);
      }
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => undefined);
      try {
        await client.connect();
        const res = await client.query("SELECT version() AS v, current_setting('data_directory') AS d");
        await client.end();
        if (res.rows[0].d !== dataDir) {
          // Someone else's server took the port between freePort() and our bind.
          proc.kill('SIGKILL');
          await launched.exit;
          throw new StartupError(`postgres: port ${port} answered by another server (${String(res.rows[0].d)})`, true);
        }
        launched.version = String(res.rows[0].v);
        return launched;
      } catch (e) {
        await client.end().catch(() => undefined);
        if (e instanceof StartupError) throw e;
        if (Date.now() > deadline) {
          proc.kill('SIGKILL');
          await launched.exit;
          throw new StartupError(`postgres: not ready after ${readyTimeoutMs} ms:\n${launched.log}`, false);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };

  // A chosen port can be taken by another process before the server binds it:
  // then try another (only when the caller did not ask for a port).
  let server: Launched | undefined;
  for (let attempt = 1; server === undefined; attempt++) {
    try {
      server = await launch(opts.port ?? (await freePort()));
    } catch (e) {
      if (!(e instanceof StartupError && e.portInUse && opts.port === undefined && attempt < 5)) {
        cleanup();
        throw e;
      }
    }
  }
  const s = server;

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      const diedEarly = s.exited;
      if (!s.exited) {
        s.proc.kill('SIGINT'); // fast shutdown
        const timer = setTimeout(() => s.proc.kill('SIGKILL'), 30_000);
        await s.exit;
        clearTimeout(timer);
      }
      cleanup();
      if (diedEarly) throw new Error(`postgres: server had exited before stop():\n${s.log}`);
    })();
    return stopped;
  };
  return { url: `postgres://postgres@127.0.0.1:${s.port}/postgres`, port: s.port, dataDir, version: s.version, stop };
}

interface Launched {
  readonly proc: ChildProcess;
  readonly port: number;
  log: string;
  exited: boolean;
  exit: Promise<void>;
  version: string;
}

class StartupError extends Error {
  constructor(
    message: string,
    readonly portInUse: boolean,
  ) {
    super(message);
  }
}
