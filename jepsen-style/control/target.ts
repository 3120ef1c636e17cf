/**
 * What the runner and the nemeses need from a system under test: its nodes, their SQL
 * URLs, the real pids of the node processes, and kill / restart / pause / resume.
 *
 *   ClusterTarget ──┬── PostgresTarget (postgres-target.ts): one PostgreSQL server; tests
 *                   │   the harness itself (kill = SIGKILL of the postmaster, restart on
 *                   │   the same data directory).
 *                   └── CairnTarget (cairn-target.ts): N `cairn start` processes, one per
 *                       loopback address 127.0.0.11…, each with its own store directory;
 *                       admin HTTP for faults, clock skew and range status.
 *
 * Ownership: a target owns its processes and directories; `stop()` kills every process it
 * started (idempotent) and leaves the node logs in the run's store directory.
 */
export interface TargetNode {
  /** 1-based node id. */
  readonly id: number;
  /** Loopback address the node listens and dials from (127.0.0.1 for PostgreSQL). */
  readonly host: string;
  readonly sqlUrl: string;
  /** Admin HTTP base URL (Cairn only). */
  readonly httpUrl: string | undefined;
  readonly logPath: string;
}

export interface ClusterTarget {
  readonly kind: 'cairn' | 'postgres';
  readonly nodes: readonly TargetNode[];
  /** Pid of node i's process (the server itself, never a wrapper); undefined when down. */
  pid(i: number): number | undefined;
  /** SIGKILL node i's process and wait for it to exit. */
  kill(i: number): Promise<void>;
  /** Start node i again on the same data directory (no-op if running). */
  restart(i: number): Promise<void>;
  /** SIGSTOP (paused = true) or SIGCONT the node's processes. */
  pause(i: number, paused: boolean): Promise<void>;
  /** Resolves once every node answers SQL (bounded by timeoutMs; throws otherwise). */
  waitHealthy(timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
  /** Node processes that exited on their own (not killed by kill() or stop()), oldest first. */
  crashes?(): readonly NodeCrash[];
}

/** A node process that exited without being told to — a finding of its own, whatever the checkers say. */
export interface NodeCrash {
  /** 1-based node id. */
  readonly node: number;
  readonly pid: number;
  /** Exit code or signal name. */
  readonly exit: string;
  /** Wall-clock time of the exit (ms since the epoch). */
  readonly atMs: number;
  /** The first error line of the node's output tail (e.g. an AssertionError), or its last line. */
  readonly reason: string;
}

/** The line of a node's output tail that says why it died: the last `…Error: …` line, else the last line. */
export function crashReason(logTail: string): string {
  const lines = logTail.split('\n').map((l) => l.trim()).filter((l) => l.length > 0 && !l.startsWith('at '));
  const errs = lines.filter((l) => /^[A-Za-z]*Error\b|Error: /.test(l) && !l.startsWith('{'));
  return (errs[errs.length - 1] ?? lines[lines.length - 1] ?? '(no output)').slice(0, 300);
}

/** Sends `sig` to `pid`; false when the process does not exist. */
export function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/** Whether a process with this pid exists (and is not a zombie we reaped). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `cond` every `everyMs` until it holds or `timeoutMs` passes. */
export async function waitFor(what: string, timeoutMs: number, cond: () => boolean | Promise<boolean>, everyMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`jepsen: timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Probes one SQL connection with `SELECT 1`. */
export async function sqlAnswers(url: string, timeoutMs: number): Promise<boolean> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}
