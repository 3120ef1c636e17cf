/**
 * Nemeses: fault injectors driven on a schedule by the runner.
 *
 *   time ──▶  [quiet interval] [fault on ──── duration ────] [healed] [quiet] [fault on …
 *                              start() → FaultStart            stop() → evidence
 *
 * A nemesis turns one fault on (`start`) and heals it (`stop`); `healAll` undoes anything
 * it may have left (called once at the end and on abort, must be idempotent). Every
 * start/stop returns evidence lines — pids killed, rules installed, leases that moved —
 * and the runner adds client-side evidence (errors, timeouts, latency in the window).
 * A fault window with no evidence at all is reported as "did nothing".
 *
 * Ownership: a nemesis holds only the state needed to heal what it did. Randomness comes
 * from the injected Prng, time from the runner.
 */
import type { Prng } from '../../src/util/index.js';
import type { ClusterTarget } from '../control/target.js';

export interface NemesisContext {
  readonly target: ClusterTarget;
  readonly prng: Prng;
  /** Appends a line to nemesis.log. */
  log(line: string): void;
}

export interface FaultStart {
  /** e.g. "kill n2,n3 (minority)". */
  readonly description: string;
  /** 1-based node ids affected. */
  readonly nodes: readonly number[];
  readonly evidence: readonly string[];
  /** How long the fault should stay on (ms); the runner's default when absent. */
  readonly durationMs?: number;
}

export interface Nemesis {
  readonly name: string;
  start(ctx: NemesisContext): Promise<FaultStart>;
  /** Heals the fault started last; returns evidence (e.g. the restarted pids). */
  stop(ctx: NemesisContext): Promise<readonly string[]>;
  healAll(ctx: NemesisContext): Promise<void>;
}

/** Picks `k` distinct node indexes (0-based) out of `n`. */
export function pickNodes(prng: Prng, n: number, k: number): number[] {
  const all = Array.from({ length: n }, (_, i) => i);
  for (let i = all.length - 1; i > 0; i--) {
    const j = prng.intn(i + 1);
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all.slice(0, k).sort((a, b) => a - b);
}

/** A minority of n (at least one node). */
export function minority(n: number): number {
  return Math.max(1, Math.floor((n - 1) / 2));
}

/**
 * Runs several nemeses as one: each fault window starts one of them, chosen at random
 * (Jepsen's `compose`), e.g. `--nemesis partition,kill`.
 */
export class ComposedNemesis implements Nemesis {
  readonly name: string;
  private current: Nemesis | undefined;

  constructor(private readonly parts: readonly Nemesis[]) {
    this.name = parts.map((p) => p.name).join('+');
  }

  async start(ctx: NemesisContext): Promise<FaultStart> {
    this.current = this.parts[ctx.prng.intn(this.parts.length)]!;
    const s = await this.current.start(ctx);
    return { ...s, description: `${this.current.name}: ${s.description}` };
  }

  async stop(ctx: NemesisContext): Promise<readonly string[]> {
    const c = this.current;
    this.current = undefined;
    return c === undefined ? [] : c.stop(ctx);
  }

  async healAll(ctx: NemesisContext): Promise<void> {
    for (const p of this.parts) await p.healAll(ctx);
  }
}
