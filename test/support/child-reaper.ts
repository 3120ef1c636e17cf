/**
 * Kills the server processes a test or bench started when its own process
 * ends — however it ends: a normal exit, or SIGTERM / SIGINT / SIGHUP (vitest
 * tears its workers down with a signal, which skips 'exit' handlers, and a
 * test that timed out never reaches its `finally`: its nodes would outlive
 * the suite). On a signal the children are SIGKILLed and the process exits
 * with 128 + the signal's number, as it would have without the handler.
 *
 * Ownership: one module-level set per process; reap(child) adds, spare(child)
 * removes once the owner has stopped the child itself.
 */
import type { ChildProcess } from 'node:child_process';
import { constants } from 'node:os';

const live = new Set<ChildProcess>();

function killAll(): void {
  for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

let installed = false;
function install(): void {
  if (installed) return;
  installed = true;
  process.once('exit', killAll);
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(sig, () => {
      killAll();
      process.exit(128 + constants.signals[sig]);
    });
  }
}

/** Kill `child` when this process ends, unless spared first. */
export function reap(child: ChildProcess): void {
  install();
  live.add(child);
}

/** The owner stopped `child` itself. */
export function spare(child: ChildProcess): void {
  live.delete(child);
}
