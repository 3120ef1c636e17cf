/**
 * CPU and memory of the processes a bench started, read from /proc (Linux):
 * CPU seconds (user + system) from /proc/<pid>/stat fields 14–15 in clock
 * ticks, resident memory from /proc/<pid>/status VmRSS. PostgreSQL runs as a
 * postmaster plus one backend per connection: its processes are the
 * postmaster (first line of <dataDir>/postmaster.pid) and its children.
 *
 * Backends that exit are reaped by the postmaster, whose cutime/cstime
 * (fields 16–17) then carry their CPU; a process's own CPU is fields 14–15;
 * so the postmaster's four fields plus its live children's own two cover all
 * of PostgreSQL's CPU. Cairn nodes have no children (cutime 0).
 *
 * Ownership: read-only; no process is touched.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Linux's USER_HZ (sysconf(_SC_CLK_TCK)), 100 on every mainstream build. */
const CLOCK_TICKS = 100;

/** The fields after the parenthesised command name of /proc/<pid>/stat (field 3 at index 0), or undefined once the process is gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return s.slice(s.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * utime + stime of a process in seconds, plus cutime + cstime (the CPU of
 * children it has waited for: a postmaster's exited backends), 0 once it has
 * exited.
 */
export function cpuSeconds(pid: number): number {
  const f = statFields(pid);
  if (f === undefined) return 0;
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / CLOCK_TICKS;
}

/** Resident memory in bytes (0 once the process has exited). */
export function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? 0 : Number(m[1]) * 1024;
  } catch {
    return 0;
  }
}

/** The direct children of a process. */
export function childPids(parent: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const f = statFields(Number(e));
    if (f !== undefined && Number(f[1]) === parent) out.push(Number(e));
  }
  return out;
}

/** The postmaster of a PostgreSQL data directory and its live children (backends, walwriter, …). */
export function postgresPids(dataDir: string): number[] {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return [postmaster, ...childPids(postmaster)];
}

/** CPU seconds of this process (the bench client), user + system. */
export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** Sum of CPU seconds over pids (processes gone count 0). */
export function totalCpuSeconds(pids: readonly number[]): number {
  let s = 0;
  for (const p of pids) s += cpuSeconds(p);
  return s;
}

/**
 * A CPU meter over an interval: `const m = cpuMeter(() => pids)`, run, then
 * `m.stop()` gives server and client CPU seconds used meanwhile. The pid list
 * is read at both ends (PostgreSQL backends appear when clients connect); a
 * process absent at the start counts from zero.
 */
export function cpuMeter(pids: () => readonly number[]): { stop(): CpuUse } {
  const start = new Map<number, number>();
  for (const p of pids()) start.set(p, cpuSeconds(p));
  const client0 = selfCpuSeconds();
  const t0 = performance.now();
  return {
    stop() {
      let server = 0;
      const perPid: number[] = [];
      for (const p of new Set([...pids(), ...start.keys()])) {
        const d = Math.max(0, cpuSeconds(p) - (start.get(p) ?? 0));
        server += d;
        perPid.push(d);
      }
      return { serverCpuSec: round2(server), clientCpuSec: round2(selfCpuSeconds() - client0), perPidCpuSec: perPid.map(round2), elapsedSec: (performance.now() - t0) / 1000 };
    },
  };
}

export interface CpuUse {
  readonly serverCpuSec: number;
  /** This process (the bench's clients). */
  readonly clientCpuSec: number;
  /** Per server process, in the order of `pids()` (then processes gone since the start). */
  readonly perPidCpuSec: number[];
  /** Wall-clock seconds between the meter's start and stop(). */
  readonly elapsedSec: number;
}

/**
 * What each server process burns doing no requests (timers, lease and
 * liveness upkeep, the range queues): cores per process over `ms`, in the
 * order of `pids()`. On a loaded shared machine a run may manage only a few
 * hundred operations per second, and this background CPU divided by them
 * swamps the per-operation figure; cpuPerOp subtracts it when given.
 */
export async function idleCores(pids: () => readonly number[], ms = 3000): Promise<number[]> {
  const m = cpuMeter(pids);
  await new Promise((r) => setTimeout(r, ms));
  const c = m.stop();
  return c.perPidCpuSec.map((s) => s / c.elapsedSec);
}

/**
 * CPU µs per operation: "n1 120 + n2 80 + … + client 40 = 300 µs/op" (labels: one per server process; without, the
 * servers' sum). With `idle` (idleCores of the same processes, same order), the servers' background CPU over the run
 * is also taken out: "…; without idle 260 µs/op (idle 0.02 + 0.03 + 0.02 cores)".
 */
export function cpuPerOp(c: CpuUse, ops: number, labels?: (i: number) => string, idle?: readonly number[]): string {
  if (ops <= 0) return 'no operations';
  const us = (sec: number): number => Math.round((sec * 1e6) / ops);
  const parts = labels === undefined ? [`server ${us(c.serverCpuSec)}`] : c.perPidCpuSec.map((s, i) => `${labels(i)} ${us(s)}`);
  const all = `${parts.join(' + ')} + client ${us(c.clientCpuSec)} = ${us(c.serverCpuSec + c.clientCpuSec)} µs/op`;
  if (idle === undefined || idle.length === 0) return all;
  let busy = c.clientCpuSec;
  c.perPidCpuSec.forEach((s, i) => (busy += Math.max(0, s - (idle[i] ?? 0) * c.elapsedSec)));
  return `${all}; without idle ${us(busy)} µs/op (idle ${idle.map((x) => x.toFixed(2)).join(' + ')} cores)`;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
