/**
 * STAND-IN latch manager, to be replaced by src/kv/concurrency's latch
 * manager (owned by the concurrency engineer): the simplest correct
 * serialization of a replica's requests by the spans their commands declare
 * (batcheval/command.ts DeclaredSpan).
 *
 * Rule: two requests conflict when one of their spans overlaps one of the
 * other's and at least one of the two accesses is a write. A request waits
 * for every conflicting request that arrived before it (held or itself still
 * waiting) — FIFO among conflicts, so no deadlock and no starvation; requests
 * that do not conflict never wait for each other.
 *
 * Writers keep their latches from evaluation until their command has applied
 * (or failed) on this replica, which is what makes a later read on the
 * leaseholder see every acknowledged write and lets evaluation read the
 * engine without seeing another in-flight command's half-applied state.
 *
 * Cost: O(requests in flight × spans) per acquire — fine for the tens of
 * requests a replica has in flight; the real manager uses an interval tree.
 */
import { compareKeys } from '../../storage/engine.js';
import type { DeclaredSpan } from './batcheval/command.js';

export interface LatchGuard {
  readonly spans: readonly DeclaredSpan[];
  /** Resolves when the guard is released. */
  readonly done: Promise<void>;
  release(): void;
}

function overlaps(a: DeclaredSpan, b: DeclaredSpan): boolean {
  // [a.key, aEnd) ∩ [b.key, bEnd) ≠ ∅; a single key k is [k, k].
  const aEndBelowB = a.endKey === null ? compareKeys(a.key, b.key) < 0 : compareKeys(a.endKey, b.key) <= 0;
  if (aEndBelowB) return false;
  const bEndBelowA = b.endKey === null ? compareKeys(b.key, a.key) < 0 : compareKeys(b.endKey, a.key) <= 0;
  return !bEndBelowA;
}

function conflicts(x: readonly DeclaredSpan[], y: readonly DeclaredSpan[]): boolean {
  for (const a of x) {
    for (const b of y) {
      if ((a.write || b.write) && overlaps(a, b)) return true;
    }
  }
  return false;
}

export class LatchManager {
  private readonly guards = new Set<LatchGuard>();

  /** Waits for every earlier conflicting request, then holds the spans until release(). */
  async acquire(spans: readonly DeclaredSpan[]): Promise<LatchGuard> {
    const waits: Promise<void>[] = [];
    if (spans.length > 0) {
      for (const g of this.guards) if (conflicts(g.spans, spans)) waits.push(g.done);
    }
    let release!: () => void;
    const done = new Promise<void>((r) => (release = r));
    const guard: LatchGuard = {
      spans,
      done,
      release: () => {
        if (!this.guards.delete(guard)) return;
        release();
      },
    };
    this.guards.add(guard);
    if (waits.length > 0) await Promise.all(waits);
    return guard;
  }

  /** Requests holding or waiting for latches. */
  get size(): number {
    return this.guards.size;
  }
}
