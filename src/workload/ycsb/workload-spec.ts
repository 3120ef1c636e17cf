/**
 * The standard YCSB core workloads (workloads/workload{a..f} in YCSB) and the
 * operation chooser that draws from their mix.
 *
 *   workload  read  update  insert  scan  read-modify-write  distribution
 *   A         0.50  0.50                                      zipfian
 *   B         0.95  0.05                                      zipfian
 *   C         1.00                                            zipfian
 *   D         0.95          0.05                              latest
 *   E                       0.05    0.95                      zipfian
 *   F         0.50                        0.50                zipfian
 *
 * "zipfian" is YCSB's scrambled zipfian; reads, updates and scans pick among
 * acknowledged records only; inserts take the next insertion index.
 */
import { assertNever } from '../../util/assert.js';
import { CairnError } from '../../util/errors.js';
import type { Prng } from '../../util/prng.js';
import type { AcknowledgedCounter } from './counter-generator.js';
import { ScrambledZipfianGenerator } from './scrambled-zipfian-generator.js';
import { SkewedLatestGenerator } from './skewed-latest-generator.js';
import { UniformGenerator } from './uniform-generator.js';

export type WorkloadName = 'A' | 'B' | 'C' | 'D' | 'E' | 'F';
export const WORKLOAD_NAMES: readonly WorkloadName[] = ['A', 'B', 'C', 'D', 'E', 'F'];

export type OpType = 'read' | 'update' | 'insert' | 'scan' | 'readModifyWrite';
export const OP_TYPES: readonly OpType[] = ['read', 'update', 'insert', 'scan', 'readModifyWrite'];

export type RequestDistribution = 'zipfian' | 'uniform' | 'latest';

export interface WorkloadSpec {
  readonly name: WorkloadName;
  /** Proportions per operation type; they sum to 1. */
  readonly mix: Readonly<Partial<Record<OpType, number>>>;
  readonly distribution: RequestDistribution;
}

export const WORKLOADS: Readonly<Record<WorkloadName, WorkloadSpec>> = {
  A: { name: 'A', mix: { read: 0.5, update: 0.5 }, distribution: 'zipfian' },
  B: { name: 'B', mix: { read: 0.95, update: 0.05 }, distribution: 'zipfian' },
  C: { name: 'C', mix: { read: 1 }, distribution: 'zipfian' },
  D: { name: 'D', mix: { read: 0.95, insert: 0.05 }, distribution: 'latest' },
  E: { name: 'E', mix: { scan: 0.95, insert: 0.05 }, distribution: 'zipfian' },
  F: { name: 'F', mix: { read: 0.5, readModifyWrite: 0.5 }, distribution: 'zipfian' },
};

export class WorkloadError extends CairnError {
  override name = 'WorkloadError';
  constructor(code: string, message: string, cause?: unknown) {
    super(`workload.${code}`, `workload: ${message}`, { cause });
  }
}

export function parseWorkloadName(s: string): WorkloadName {
  const up = s.toUpperCase();
  if ((WORKLOAD_NAMES as readonly string[]).includes(up)) return up as WorkloadName;
  throw new WorkloadError('bad_flag', `unknown workload "${s}" (expected one of A–F)`);
}

export function parseDistribution(s: string): RequestDistribution {
  if (s === 'zipfian' || s === 'uniform' || s === 'latest') return s;
  throw new WorkloadError('bad_flag', `unknown request distribution "${s}" (zipfian, uniform or latest)`);
}

/** Draws operation types in a workload's proportions (cumulative thresholds). */
export class OperationChooser {
  private readonly ops: OpType[] = [];
  private readonly thresholds: number[] = [];

  constructor(
    private readonly rng: Prng,
    spec: WorkloadSpec,
  ) {
    let sum = 0;
    for (const op of OP_TYPES) {
      const p = spec.mix[op] ?? 0;
      if (p <= 0) continue;
      sum += p;
      this.ops.push(op);
      this.thresholds.push(sum);
    }
  }

  /** The operation types this mix can produce, in OP_TYPES order. */
  get opTypes(): readonly OpType[] {
    return this.ops;
  }

  next(): OpType {
    const u = this.rng.float() * (this.thresholds[this.thresholds.length - 1] as number);
    for (let i = 0; i < this.thresholds.length - 1; i++) {
      if (u < (this.thresholds[i] as number)) return this.ops[i] as OpType;
    }
    return this.ops[this.ops.length - 1] as OpType;
  }
}

/**
 * Picks the insertion index a read, update, scan or read-modify-write targets,
 * among acknowledged records only (CoreWorkload.nextKeynum).
 */
export class KeyChooser {
  private readonly pick: () => number;

  constructor(rng: Prng, distribution: RequestDistribution, acked: AcknowledgedCounter) {
    switch (distribution) {
      case 'zipfian': {
        const g = new ScrambledZipfianGenerator(rng);
        this.pick = () => g.next(acked.lastValue() + 1);
        break;
      }
      case 'uniform': {
        const g = new UniformGenerator(rng);
        this.pick = () => g.next(acked.lastValue() + 1);
        break;
      }
      case 'latest': {
        const g = new SkewedLatestGenerator(rng, acked);
        this.pick = () => g.next();
        break;
      }
      default:
        assertNever(distribution);
    }
  }

  next(): number {
    return this.pick();
  }
}
