/**
 * Machine-wide reservations between concurrent test runs: a file named by the
 * thing reserved (a loopback subnet, a port), created exclusively, holding the
 * owner's pid. A file whose pid is gone (or malformed) is stale and taken
 * over; an empty one belongs to an owner that created it and is about to
 * write its pid. Used by loopback-subnet.ts (jepsen-style runs) and
 * test/support/process-cluster.ts (ports of multi-process tests).
 *
 * Ownership: the claimer releases what it claimed.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pid in dir/name ('' while its owner has not written it yet; null: no such reservation). */
export function pidFileOwner(dir: string, name: string): string | null {
  try {
    return readFileSync(join(dir, name), 'utf8');
  } catch {
    return null;
  }
}

/** Claims dir/name for this process: true if it is ours now (new, or taken over from a dead owner). */
export function claimPidFile(dir: string, name: string): boolean {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    return true;
  } catch {
    const text = pidFileOwner(dir, name);
    if (text === null || text === '') return false; // released meanwhile (try again later), or being written
    const owner = Number(text);
    if (owner === process.pid || pidAlive(owner)) return false;
    writeFileSync(file, String(process.pid)); // stale: its process is gone
    return true;
  }
}

/** Ends this process's claim of dir/name (a file another process took over is left alone). */
export function releasePidFile(dir: string, name: string): void {
  if (pidFileOwner(dir, name) === String(process.pid)) rmSync(join(dir, name), { force: true });
}
