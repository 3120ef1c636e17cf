/**
 * The fault simulation's network (issue 3, DESIGN.md §2 "a deterministic
 * simulated network for tests"): messages in flight between simulated Raft
 * nodes, each with the simulated time (in ticks) from which it may arrive.
 * Unlike network.ts (a FIFO queue drained until quiet, for table tests), this
 * one lets the schedule deliver any one deliverable message at a time, so
 * messages are reordered freely; it also drops, duplicates and delays them and
 * partitions arbitrary subsets of nodes.
 *
 * Invariants / model:
 *   - Deterministic: the only randomness is the injected Prng.
 *   - A message is copied when sent (entries included, data bytes shared and
 *     never mutated), as serialization would: the library stamps a forwarded
 *     proposal's entries in place, so two deliveries of one object would
 *     corrupt each other.
 *   - Partitions are judged at delivery time: a message whose endpoints are in
 *     different partition groups when it is picked is lost.
 *   - A message to a node that is down when it is picked is lost.
 *
 * Ownership: the cluster (sim-cluster.ts) sends into it and asks it for the
 * next message to deliver; nothing else touches the in-flight list.
 */
import type { Prng } from '../../src/util/prng.js';
import type { Entry, Message } from '../types.js';

export interface SimNetworkFaults {
  /** Probability that a sent message is lost. */
  dropRate: number;
  /** Probability that a sent message is sent twice. */
  dupRate: number;
  /** Each message is delayed by a uniform number of ticks in [0, maxDelay]. */
  maxDelay: number;
}

export interface InFlight {
  readonly msg: Message;
  /** Simulated tick from which the message may be delivered. */
  readonly at: number;
}

export class SimNetwork {
  private inFlight: InFlight[] = [];
  /** node id → partition group; nodes in different groups cannot talk. Absent = group 0. */
  private readonly group = new Map<number, number>();
  now = 0;

  constructor(
    private readonly prng: Prng,
    public faults: SimNetworkFaults,
  ) {}

  get size(): number {
    return this.inFlight.length;
  }

  send(m: Message): void {
    const f = this.faults;
    if (f.dropRate > 0 && this.prng.float() < f.dropRate) return;
    const copies = f.dupRate > 0 && this.prng.float() < f.dupRate ? 2 : 1;
    for (let k = 0; k < copies; k++) {
      const at = this.now + (f.maxDelay > 0 ? this.prng.intn(f.maxDelay + 1) : 0);
      this.inFlight.push({ msg: copyMessage(m), at });
    }
  }

  /** Number of messages whose delay has passed. */
  deliverableCount(): number {
    let n = 0;
    for (const f of this.inFlight) if (f.at <= this.now) n++;
    return n;
  }

  /**
   * Removes and returns a random deliverable message (any of them: this is
   * where reordering happens), or null when none is due.
   */
  takeRandom(): Message | null {
    const n = this.deliverableCount();
    if (n === 0) return null;
    let k = this.prng.intn(n);
    for (let i = 0; i < this.inFlight.length; i++) {
      const f = this.inFlight[i] as InFlight;
      if (f.at > this.now) continue;
      if (k-- === 0) {
        this.inFlight.splice(i, 1);
        return f.msg;
      }
    }
    return null;
  }

  /** Removes and returns every deliverable message, oldest first. */
  takeAllDue(): Message[] {
    const due: Message[] = [];
    const rest: InFlight[] = [];
    for (const f of this.inFlight) {
      if (f.at <= this.now) due.push(f.msg);
      else rest.push(f);
    }
    this.inFlight = rest;
    return due;
  }

  /** Removes and returns every deliverable message that `pred` accepts, oldest first (directed tests). */
  take(pred: (m: Message) => boolean): Message[] {
    const out: Message[] = [];
    const rest: InFlight[] = [];
    for (const f of this.inFlight) {
      if (f.at <= this.now && pred(f.msg)) out.push(f.msg);
      else rest.push(f);
    }
    this.inFlight = rest;
    return out;
  }

  /** Whether a message from `from` to `to` would get through the partitions now. */
  connected(from: number, to: number): boolean {
    return (this.group.get(from) ?? 0) === (this.group.get(to) ?? 0);
  }

  /** Puts each listed node into the given group (others stay where they are). */
  partition(assignment: ReadonlyMap<number, number>): void {
    for (const [id, g] of assignment) this.group.set(id, g);
  }

  /** Removes every partition (message faults stay). */
  healPartitions(): void {
    this.group.clear();
  }

  /** Removes every partition and every fault. */
  heal(): void {
    this.group.clear();
    this.faults = { dropRate: 0, dupRate: 0, maxDelay: this.faults.maxDelay };
  }

  /** A short description of the partition, e.g. "1 2 | 3". */
  describePartition(ids: readonly number[]): string {
    const byGroup = new Map<number, number[]>();
    for (const id of ids) {
      const g = this.group.get(id) ?? 0;
      let l = byGroup.get(g);
      if (l === undefined) byGroup.set(g, (l = []));
      l.push(id);
    }
    return [...byGroup.keys()]
      .sort((a, b) => a - b)
      .map((g) => (byGroup.get(g) as number[]).join(' '))
      .join(' | ');
  }
}

/** A copy of `m` as a receiver would decode it: fresh message and entry objects, shared data bytes. */
export function copyMessage(m: Message): Message {
  let entries = m.entries;
  if (entries.length > 0) {
    entries = new Array<Entry>(m.entries.length);
    for (let k = 0; k < entries.length; k++) {
      const e = m.entries[k] as Entry;
      entries[k] = { term: e.term, index: e.index, type: e.type, data: e.data };
    }
  }
  return { ...m, entries };
}
