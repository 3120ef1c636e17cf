/**
 * Insertion-index counters (YCSB's CounterGenerator and
 * AcknowledgedCounterGenerator).
 *
 * CounterGenerator hands out consecutive integers from a start value; the
 * loader uses one to give each batch its range of record indexes.
 *
 * AcknowledgedCounter is how inserts extend the key space during a run:
 *   - next() reserves the next insertion index (unique among every client of
 *     this process that shares the counter);
 *   - acknowledge(i) is called when the insert of i has finished (YCSB calls
 *     it whether the insert succeeded or not, so a failed insert cannot stall
 *     the key space; a read of such a key finds no row, which is not an error);
 *   - lastValue() is the largest index L such that every index ≤ L has been
 *     acknowledged. Readers, updaters and the "latest" distribution only pick
 *     indexes ≤ L, so they never target a row whose insert is still in flight.
 *
 * Invariants: lastValue() never decreases; lastValue() < every index handed
 * out and not yet acknowledged; at most WINDOW indexes are outstanding
 * (unacknowledged) at once — enough for any number of clients in one process.
 *
 * Ownership and the multi-process case: one AcknowledgedCounter is shared by
 * all client loops of one `runYcsb` call (single-threaded, so no lock is
 * needed). Two processes running inserts against the same table each start
 * their counter at the row count they saw at start and would insert the same
 * keys (duplicate-key errors), and neither would read the other's inserts.
 * So run insert workloads (D, E) from one process, with as many clients as
 * needed; the insert-free workloads (A, B, C, F) may run from any number.
 */
import { assert } from '../../util/assert.js';

export class CounterGenerator {
  private counter: number;
  constructor(start: number) {
    assert(Number.isSafeInteger(start) && start >= 0, `workload: counter start must be a non-negative integer, got ${start}`);
    this.counter = start;
  }
  /** The next value; values are consecutive and never repeat. */
  next(): number {
    return this.counter++;
  }
  /** The last value handed out (start - 1 before the first call). */
  lastValue(): number {
    return this.counter - 1;
  }
}

/** Outstanding (handed out, unacknowledged) indexes allowed at once. */
const WINDOW = 1 << 20;

export class AcknowledgedCounter {
  private readonly counter: CounterGenerator;
  private readonly window = new Uint8Array(WINDOW);
  private limit: number;

  /** Indexes below `start` are taken as already present (the loaded records). */
  constructor(start: number) {
    this.counter = new CounterGenerator(start);
    this.limit = start - 1;
  }

  next(): number {
    const v = this.counter.next();
    assert(v - this.limit <= WINDOW, 'workload: too many unacknowledged inserts outstanding');
    return v;
  }

  acknowledge(v: number): void {
    assert(v > this.limit && v <= this.counter.lastValue(), `workload: acknowledged index ${v} was not outstanding`);
    const slot = v & (WINDOW - 1);
    assert(this.window[slot] === 0, `workload: index ${v} acknowledged twice`);
    this.window[slot] = 1;
    // Advance over the contiguous acknowledged prefix.
    for (;;) {
      const nextSlot = (this.limit + 1) & (WINDOW - 1);
      if (this.limit + 1 > this.counter.lastValue() || this.window[nextSlot] === 0) break;
      this.window[nextSlot] = 0;
      this.limit++;
    }
  }

  /** Every index ≤ lastValue() has been acknowledged (or was loaded). */
  lastValue(): number {
    return this.limit;
  }
}
