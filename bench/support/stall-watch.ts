/**
 * A bench's guard against waiting forever: every operation it sends is
 * registered with the watch (begin → end); a timer looks at the oldest one
 * every second, and once an operation has been outstanding for `stallMs`
 * the watch runs `onStall` ONCE (the bench dumps the cluster's state while
 * it is still stuck — clusterDiagnostics below) and then fails every
 * outstanding operation with a `bench.stalled` error, so the bench ends with
 * a report instead of hanging until an outer timeout kills it blind.
 *
 *   op ──begin(what, abort)──► outstanding ──end(token)──► done
 *                                   │ age ≥ stallMs (checked each second)
 *                                   ▼
 *                  onStall(oldest) once, then abort(bench.stalled) each
 *
 * Cost on the measured path: one Map insert and delete per operation, no
 * timer per operation.
 *
 * Ownership: the bench owns the watch; stop() clears its timer (call it in
 * `finally`). The cluster handle given to clusterDiagnostics is the caller's.
 */
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { httpRequest } from '../../src/cli/node-process.js';
import type { CairnCluster } from './cluster.js';

export interface Outstanding {
  readonly what: string;
  readonly ageMs: number;
}

interface Op {
  readonly what: string;
  readonly t0: number;
  readonly abort: (e: Error) => void;
}

export class StallWatch {
  private readonly ops = new Map<number, Op>();
  private seq = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private fired = false;

  constructor(
    private readonly stallMs: number,
    private readonly onStall: (oldest: Outstanding, count: number) => Promise<void>,
  ) {}

  /** Registers an operation; `abort` fails it (called only after a stall). Returns the token for end(). */
  begin(what: string, abort: (e: Error) => void): number {
    const id = ++this.seq;
    this.ops.set(id, { what, t0: performance.now(), abort });
    if (this.timer === null && !this.fired) {
      this.timer = setInterval(() => this.check(), 1000);
      this.timer.unref();
    }
    return id;
  }

  end(token: number): void {
    this.ops.delete(token);
  }

  /** True once a stall was reported (the run's figures are void). */
  get stalled(): boolean {
    return this.fired;
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private check(): void {
    if (this.fired) return;
    const now = performance.now();
    // Map iteration is insertion order: the first entry is the oldest.
    const first = this.ops.values().next();
    if (first.done === true || now - first.value.t0 < this.stallMs) return;
    this.fired = true;
    this.stop();
    const oldest = { what: first.value.what, ageMs: Math.round(now - first.value.t0) };
    const count = this.ops.size;
    const failAll = (): void => {
      const err = Object.assign(new Error(`bench: stalled — ${count} operation(s) outstanding, the oldest for ${oldest.ageMs} ms: ${oldest.what}`), { code: 'bench.stalled' });
      for (const op of this.ops.values()) op.abort(err);
      this.ops.clear();
    };
    this.onStall(oldest, count).then(failAll, (e: unknown) => {
      process.stderr.write(`bench: stall diagnostics failed: ${(e as Error).message}\n`);
      failAll();
    });
  }
}

/**
 * Writes what every node of `cluster` says about itself right now — ranges
 * (Raft state, leaseholder, applied index, pending proposals), lock tables,
 * RPC connections, the counters and gauges of /_status/vars — to
 * `<dir>/<name>.txt`, and copies each node's output file beside it
 * (<name>.n<i>.out). Each request is bounded (10 s), so a node that does not
 * answer is noted, not waited for. Returns the report's path.
 */
export async function clusterDiagnostics(cluster: CairnCluster, dir: string, name: string, header: string): Promise<string> {
  const parts: string[] = [header];
  const get = async (i: number, path: string): Promise<string> => {
    const n = cluster.nodes[i];
    if (n === undefined) return '';
    try {
      const r = await httpRequest('127.0.0.1', n.httpPort, path, 'GET', undefined, 10_000);
      return `${r.status} ${r.body}`;
    } catch (e) {
      return `no answer: ${(e as Error).message}`;
    }
  };
  for (let i = 0; i < cluster.nodes.length; i++) {
    const [ranges, locks, rpc, vars] = await Promise.all([get(i, '/_status/ranges'), get(i, '/_status/locks'), get(i, '/_status/rpc'), get(i, '/_status/vars')]);
    const keptVars = vars
      .split('\n')
      .filter((l) => l.startsWith('cairn_') && !l.includes('_bucket'))
      .join('\n');
    parts.push(`== n${i + 1} /_status/ranges\n${ranges}`, `== n${i + 1} /_status/locks\n${locks}`, `== n${i + 1} /_status/rpc\n${rpc}`, `== n${i + 1} /_status/vars (no buckets)\n${keptVars}`);
    const out = cluster.nodes[i]?.outFile;
    if (out !== undefined && existsSync(out)) copyFileSync(out, join(dir, `${name}.n${i + 1}.out`));
  }
  const file = join(dir, `${name}.txt`);
  writeFileSync(file, parts.join('\n\n') + '\n');
  return file;
}
