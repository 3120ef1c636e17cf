/**
 * Inflights: the bounded window of MsgApp messages sent to one follower in
 * the replicate state and not yet acknowledged (etcd/raft tracker/inflights).
 *
 * Each in-flight message is remembered by the index of its last entry and its
 * byte size, in a ring buffer that grows on demand up to `size` slots. The
 * window is full when it holds `size` messages or `maxBytes` bytes (0 = no byte
 * limit). An ack for index i frees every message whose last index is ≤ i.
 *
 * Invariant: indexes in the ring are strictly increasing from `start`.
 */
import { assert } from '../../src/util/assert.js';

export class Inflights {
  private start = 0;
  private count_ = 0;
  private bytes_ = 0;
  private indexes: number[] = [];
  private sizes: number[] = [];

  constructor(
    /** Max number of messages in flight. */
    readonly size: number,
    /** Max bytes in flight; 0 = unlimited. */
    readonly maxBytes: number = 0,
  ) {
    assert(size > 0, 'raft: inflights size must be positive');
  }

  clone(): Inflights {
    const c = new Inflights(this.size, this.maxBytes);
    c.start = this.start;
    c.count_ = this.count_;
    c.bytes_ = this.bytes_;
    c.indexes = this.indexes.slice();
    c.sizes = this.sizes.slice();
    return c;
  }

  get count(): number {
    return this.count_;
  }

  get bytes(): number {
    return this.bytes_;
  }

  /** Records a sent message whose last entry is `index`, carrying `bytes` bytes. */
  add(index: number, bytes: number): void {
    assert(!this.full(), 'raft: cannot add into a full inflights');
    if (this.count_ === this.indexes.length) this.grow();
    const cap = this.indexes.length;
    if (this.count_ > 0) {
      let last = this.start + this.count_ - 1;
      if (last >= cap) last -= cap;
      assert((this.indexes[last] as number) < index, 'raft: inflights indexes must increase');
    }
    let next = this.start + this.count_;
    if (next >= cap) next -= cap;
    this.indexes[next] = index;
    this.sizes[next] = bytes;
    this.count_++;
    this.bytes_ += bytes;
  }

  /** Doubles the ring (up to `size` slots), unrolling it to start at 0. */
  private grow(): void {
    const cap = this.indexes.length;
    const newCap = Math.min(this.size, Math.max(4, cap * 2));
    const indexes = new Array<number>(newCap).fill(0);
    const sizes = new Array<number>(newCap).fill(0);
    for (let i = 0; i < this.count_; i++) {
      let k = this.start + i;
      if (k >= cap) k -= cap;
      indexes[i] = this.indexes[k] as number;
      sizes[i] = this.sizes[k] as number;
    }
    this.indexes = indexes;
    this.sizes = sizes;
    this.start = 0;
  }

  /** Frees every in-flight message whose last index is ≤ `to`. */
  freeLE(to: number): void {
    if (this.count_ === 0) return;
    const cap = this.indexes.length;
    let idx = this.start;
    let i = 0;
    let bytes = 0;
    for (; i < this.count_; i++) {
      if ((this.indexes[idx] as number) > to) break;
      bytes += this.sizes[idx] as number;
      idx++;
      if (idx >= cap) idx -= cap;
    }
    this.count_ -= i;
    this.bytes_ -= bytes;
    this.start = idx;
    if (this.count_ === 0) this.start = 0;
  }

  full(): boolean {
    return this.count_ === this.size || (this.maxBytes !== 0 && this.bytes_ >= this.maxBytes);
  }

  reset(): void {
    this.count_ = 0;
    this.bytes_ = 0;
    this.start = 0;
  }
}
