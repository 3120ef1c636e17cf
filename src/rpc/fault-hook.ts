/**
 * Network faults injected on the sending side, per peer pair: the hook of this
 * node decides the fate of every message it sends to a peer (requests,
 * responses and one-ways alike). Each direction of a pair is set on the node
 * that sends in that direction, so an asymmetric partition is one call and a
 * full partition is two. Tests and the jepsen-style suite set it at run time
 * (the admin HTTP endpoint that calls setFaults/clearFaults lives in
 * src/server).
 *
 *   partition              drop everything to that peer
 *   dropProbability p      drop each message with probability p
 *   delayMs d | [lo, hi]   deliver each message d ms late (a range draws a
 *                          uniform integer per message, which also reorders)
 *   duplicateProbability p send a second copy with probability p (a
 *                          duplicated request runs twice on the peer; the
 *                          caller keeps the first response)
 *
 * Randomness comes only from the injected Prng, so a seed replays the same
 * decisions for the same message sequence. Counters record what the hook did
 * (dropped / delayed / duplicated), the evidence that a fault took effect
 * (DESIGN.md §6, "every fault must show that it took effect").
 *
 * Hot path: with no faults set, plan() is one size check.
 *
 * Ownership: src/rpc.
 */
import { CairnError } from '../util/errors.js';
import type { Prng } from '../util/prng.js';

export interface FaultSpec {
  readonly partition?: boolean;
  readonly dropProbability?: number;
  readonly delayMs?: number | readonly [number, number];
  readonly duplicateProbability?: number;
}

export interface FaultCounters {
  dropped: number;
  delayed: number;
  duplicated: number;
}

export class InvalidFaultSpecError extends CairnError {
  override name = 'InvalidFaultSpecError';
  constructor(message: string) {
    super('rpc.invalid_fault_spec', `rpc: invalid fault spec: ${message}`, { sqlState: '22023' });
  }
}

function checkProbability(name: string, p: number | undefined): void {
  if (p !== undefined && !(p >= 0 && p <= 1)) throw new InvalidFaultSpecError(`${name} ${p} is not in [0, 1]`);
}

function checkDelay(d: FaultSpec['delayMs']): void {
  if (d === undefined) return;
  const [lo, hi] = typeof d === 'number' ? [d, d] : d;
  if (!(Number.isFinite(lo) && Number.isFinite(hi) && lo >= 0 && hi >= lo)) {
    throw new InvalidFaultSpecError(`delay ${JSON.stringify(d)} must be a number ≥ 0 or a range [lo, hi] with 0 ≤ lo ≤ hi`);
  }
}

export class FaultHook {
  private readonly specs = new Map<number, FaultSpec>();
  private readonly counters = new Map<number, FaultCounters>();
  /** Delay chosen by the last plan() that returned copies > 0. */
  delayMs = 0;
  /** Messages held back by a delay right now (maintained by the connections). */
  delayedInFlight = 0;

  constructor(private readonly prng: Prng) {}

  /** Replaces the faults toward peerId (an empty spec clears them). */
  setFaults(peerId: number, spec: FaultSpec): void {
    checkProbability('dropProbability', spec.dropProbability);
    checkProbability('duplicateProbability', spec.duplicateProbability);
    checkDelay(spec.delayMs);
    const copy: FaultSpec = { ...spec };
    const empty = !copy.partition && !copy.dropProbability && !copy.duplicateProbability && !copy.delayMs;
    if (empty) this.specs.delete(peerId);
    else this.specs.set(peerId, copy);
  }

  /** Clears the faults toward one peer, or toward all. Counters are kept. */
  clearFaults(peerId?: number): void {
    if (peerId === undefined) this.specs.clear();
    else this.specs.delete(peerId);
  }

  get active(): boolean {
    return this.specs.size > 0;
  }

  /** Whether faults are set toward peerId. */
  hasFaults(peerId: number): boolean {
    return this.specs.size > 0 && this.specs.has(peerId);
  }

  /** The faults in force, by peer id. */
  describe(): Record<number, FaultSpec> {
    const out: Record<number, FaultSpec> = {};
    for (const [peer, spec] of this.specs) out[peer] = { ...spec };
    return out;
  }

  /** What the hook did to messages toward peerId (all zero if nothing). */
  countersFor(peerId: number): Readonly<FaultCounters> {
    return this.counters.get(peerId) ?? { dropped: 0, delayed: 0, duplicated: 0 };
  }

  totals(): FaultCounters {
    const t: FaultCounters = { dropped: 0, delayed: 0, duplicated: 0 };
    for (const c of this.counters.values()) {
      t.dropped += c.dropped;
      t.delayed += c.delayed;
      t.duplicated += c.duplicated;
    }
    return t;
  }

  private count(peerId: number): FaultCounters {
    let c = this.counters.get(peerId);
    if (c === undefined) {
      c = { dropped: 0, delayed: 0, duplicated: 0 };
      this.counters.set(peerId, c);
    }
    return c;
  }

  /**
   * Decides one message to peerId: returns how many copies to send (0 = drop,
   * 1, or 2) and leaves the delay for them in `delayMs` (0 = now).
   */
  plan(peerId: number): number {
    this.delayMs = 0;
    if (this.specs.size === 0) return 1;
    const spec = this.specs.get(peerId);
    if (spec === undefined) return 1;
    if (spec.partition || (spec.dropProbability !== undefined && this.prng.float() < spec.dropProbability)) {
      this.count(peerId).dropped++;
      return 0;
    }
    let copies = 1;
    if (spec.duplicateProbability !== undefined && this.prng.float() < spec.duplicateProbability) {
      this.count(peerId).duplicated++;
      copies = 2;
    }
    const d = spec.delayMs;
    if (d !== undefined) {
      this.delayMs = typeof d === 'number' ? d : this.prng.between(Math.ceil(d[0]), Math.floor(d[1]));
      if (this.delayMs > 0) this.count(peerId).delayed++;
    }
    return copies;
  }
}
