/**
 * The server processes one bench target started, and the temporary
 * directory they live in: their pids (running ones), and stop(), which
 * SIGKILLs what still runs, waits for the exits and removes the directory
 * (kept with CAIRN_KEEP_TEST_DIRS=1); idempotent. The members of every group
 * are killed if the bench's process ends (exit or signal) before stop()
 * (test/support/child-reaper.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { waitForExit } from '../../src/cli/node-process.js';
import { reap, spare } from '../../test/support/child-reaper.js';


export class ChildGroup {
  private readonly children: ChildProcess[] = [];
  private stopped = false;

  constructor(readonly dir: string) {}

  add(child: ChildProcess): void {
    this.children.push(child);
    reap(child);
  }

  running(i: number): boolean {
    const c = this.children[i];
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  }

  /** The pids of the members still running. */
  pids(): number[] {
    return this.children.filter((_, i) => this.running(i)).map((c) => c.pid as number);
  }

  /**
   * Kills every member; with `graceful`, SIGTERM first and up to 20 s for a
   * clean exit (a node started with --cpu-prof writes its profile then).
   */
  async stop(graceful = false): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (graceful) {
      for (let i = 0; i < this.children.length; i++) if (this.running(i)) this.children[i]?.kill('SIGTERM');
      await Promise.all(this.children.map((c) => (c.pid === undefined ? true : waitForExit(c.pid, 20_000))));
    }
    for (let i = 0; i < this.children.length; i++) if (this.running(i)) this.children[i]?.kill('SIGKILL');
    await Promise.all(this.children.map((c) => (c.pid === undefined ? true : waitForExit(c.pid, 10_000))));
    for (const c of this.children) spare(c);
    if (process.env['CAIRN_KEEP_TEST_DIRS'] !== '1') rmSync(this.dir, { recursive: true, force: true });
  }
}
