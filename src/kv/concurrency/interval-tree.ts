/**
 * An ordered set of possibly overlapping key intervals with overlap search:
 * the index under the latch manager and the lock table (CockroachDB uses an
 * augmented interval B-tree for the same job in spanlatch/ and
 * concurrency/lock_table.go; we use an augmented treap, which is shorter and
 * O(log n) expected per operation). The timestamp cache, whose segments are
 * disjoint, uses the flatter segment-index.ts instead.
 *
 * An item is a point `[key, key]` (endKey null) or a half-open range
 * `[key, endKey)` (endKey > key). Keys compare bytewise (storage's compareKeys,
 * a JS loop that beats the native Buffer.compare call on short keys).
 * Items are ordered by (key, insertion id), so equal intervals coexist; each
 * node carries the largest end of its subtree ("maxEnd"), where a point's end
 * `key]` sorts just above a range end `key)` with the same bytes. An overlap
 * search prunes every subtree whose maxEnd lies at or before the query start
 * and stops at the first node that starts after the query end, so it visits
 * O(log n + k) nodes for k results.
 *
 * Invariants (checked by `check()` in tests):
 *   - in-order traversal is sorted by (key, id);
 *   - heap order: a parent's priority ≥ its children's;
 *   - node.maxEnd is the largest end in its subtree.
 *
 * Ownership: the tree keeps references to the items and their key Buffers;
 * callers must not mutate a key while its item is in the tree. Priorities come
 * from an internal xorshift generator with a fixed seed, so the shape is
 * deterministic for a given sequence of operations.
 */
import { compareKeys } from '../../../storage/engine.js';
import { assert } from '../../util/assert.js';

export interface IntervalItem {
  readonly key: Buffer;
  /** null: the single key `key`; otherwise the exclusive end (> key). */
  readonly endKey: Buffer | null;
}

/** A handle to an inserted item; pass it back to delete(). */
export interface IntervalHandle<T extends IntervalItem> {
  readonly item: T;
}

class Node<T extends IntervalItem> implements IntervalHandle<T> {
  left: Node<T> | null = null;
  right: Node<T> | null = null;
  /** This item's own end, and whether it is inclusive (a point). */
  readonly end: Buffer;
  readonly endIncl: boolean;
  maxEnd: Buffer;
  maxEndIncl: boolean;
  constructor(
    readonly item: T,
    readonly id: number,
    readonly prio: number,
  ) {
    this.end = this.maxEnd = item.endKey ?? item.key;
    this.endIncl = this.maxEndIncl = item.endKey === null;
  }
}

/** Compares two interval ends; an inclusive end sorts above an exclusive one with the same bytes. */
function compareEnds(a: Buffer, aIncl: boolean, b: Buffer, bIncl: boolean): number {
  const c = compareKeys(a, b);
  if (c !== 0) return c;
  return (aIncl ? 1 : 0) - (bIncl ? 1 : 0);
}

function update<T extends IntervalItem>(n: Node<T>): void {
  let end = n.end;
  let incl = n.endIncl;
  const l = n.left;
  if (l !== null && compareEnds(l.maxEnd, l.maxEndIncl, end, incl) > 0) {
    end = l.maxEnd;
    incl = l.maxEndIncl;
  }
  const r = n.right;
  if (r !== null && compareEnds(r.maxEnd, r.maxEndIncl, end, incl) > 0) {
    end = r.maxEnd;
    incl = r.maxEndIncl;
  }
  n.maxEnd = end;
  n.maxEndIncl = incl;
}

function compareNodeTo<T extends IntervalItem>(n: Node<T>, key: Buffer, id: number): number {
  const c = compareKeys(n.item.key, key);
  if (c !== 0) return c;
  return n.id - id;
}

/** Whether the query [qs, qe) — or the point qs when qe is null — overlaps item. */
export function overlaps(item: IntervalItem, qs: Buffer, qe: Buffer | null): boolean {
  // The item starts before the query ends ...
  const startVsQueryEnd = compareKeys(item.key, qe ?? qs);
  if (startVsQueryEnd > 0 || (startVsQueryEnd === 0 && qe !== null)) return false;
  // ... and ends after the query starts.
  if (item.endKey === null) return compareKeys(item.key, qs) >= 0;
  return compareKeys(item.endKey, qs) > 0;
}

export class IntervalTree<T extends IntervalItem> {
  private root: Node<T> | null = null;
  private nextId = 1;
  private rng = 0x2545f491;
  private count = 0;

  get size(): number {
    return this.count;
  }

  private nextPrio(): number {
    let x = this.rng;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.rng = x;
    return x >>> 0;
  }

  insert(item: T): IntervalHandle<T> {
    assert(item.endKey === null || compareKeys(item.key, item.endKey) < 0, 'interval-tree: empty or inverted range');
    const n = new Node(item, this.nextId++, this.nextPrio());
    this.root = this.insertAt(this.root, n);
    this.count++;
    return n;
  }

  private insertAt(t: Node<T> | null, n: Node<T>): Node<T> {
    if (t === null) return n;
    if (compareNodeTo(n, t.item.key, t.id) < 0) {
      t.left = this.insertAt(t.left, n);
      if (t.left.prio > t.prio) return rotateRight(t);
    } else {
      t.right = this.insertAt(t.right, n);
      if (t.right.prio > t.prio) return rotateLeft(t);
    }
    // t's subtree gained exactly n, whatever rotations happened below.
    if (compareEnds(n.end, n.endIncl, t.maxEnd, t.maxEndIncl) > 0) {
      t.maxEnd = n.end;
      t.maxEndIncl = n.endIncl;
    }
    return t;
  }

  /** Removes the item behind `h` (inserted into this tree, not yet deleted). */
  delete(h: IntervalHandle<T>): void {
    const n = h as Node<T>;
    this.root = this.deleteAt(this.root, n);
    this.count--;
  }

  private deleteAt(t: Node<T> | null, n: Node<T>): Node<T> | null {
    assert(t !== null, 'interval-tree: deleting an item that is not in the tree');
    if (t === n) return merge(t.left, t.right);
    if (compareNodeTo(n, t.item.key, t.id) < 0) t.left = this.deleteAt(t.left, n);
    else t.right = this.deleteAt(t.right, n);
    // t's subtree lost exactly n: its maxEnd changes only if n's end was it.
    if (compareEnds(n.end, n.endIncl, t.maxEnd, t.maxEndIncl) >= 0) update(t);
    return t;
  }

  /**
   * Calls fn for every item overlapping [start, end) — or the point `start`
   * when end is null — in (key, id) order. fn returning true stops the search;
   * the result tells whether it was stopped. fn must not modify the tree.
   */
  search(start: Buffer, end: Buffer | null, fn: (item: T) => boolean | void): boolean {
    return this.searchAt(this.root, start, end, fn);
  }

  private searchAt(t: Node<T> | null, qs: Buffer, qe: Buffer | null, fn: (item: T) => boolean | void): boolean {
    while (t !== null) {
      // Nothing in this subtree ends after the query start.
      const c = compareKeys(t.maxEnd, qs);
      if (c < 0 || (c === 0 && !t.maxEndIncl)) return false;
      if (t.left !== null && this.searchAt(t.left, qs, qe, fn)) return true;
      // This node and everything to its right start after the query end.
      const item = t.item;
      const s = compareKeys(item.key, qe ?? qs);
      if (s > 0 || (s === 0 && qe !== null)) return false;
      // The node starts before the query ends; it overlaps when it ends after the query starts.
      const e = item.endKey;
      const hit = e === null ? (qe === null ? s === 0 : compareKeys(item.key, qs) >= 0) : compareKeys(e, qs) > 0;
      if (hit && fn(item) === true) return true;
      t = t.right;
    }
    return false;
  }

  /** Whether any item overlaps the query (see search). */
  any(start: Buffer, end: Buffer | null, pred?: (item: T) => boolean): boolean {
    return this.search(start, end, pred ?? (() => true));
  }

  /** Every item, in (key, id) order. */
  forEach(fn: (item: T) => void): void {
    const walk = (t: Node<T> | null): void => {
      while (t !== null) {
        walk(t.left);
        fn(t.item);
        t = t.right;
      }
    };
    walk(this.root);
  }

  /** Test hook: verifies order, heap and maxEnd invariants; returns the item count. */
  check(): number {
    let prev: Node<T> | null = null;
    const walk = (t: Node<T> | null): number => {
      if (t === null) return 0;
      const nl = walk(t.left);
      if (prev !== null) assert(compareNodeTo(prev, t.item.key, t.id) < 0, 'interval-tree: order');
      prev = t;
      if (t.left !== null) assert(t.left.prio <= t.prio, 'interval-tree: heap');
      if (t.right !== null) assert(t.right.prio <= t.prio, 'interval-tree: heap');
      const maxEnd = t.maxEnd;
      const maxIncl = t.maxEndIncl;
      update(t);
      assert(compareEnds(maxEnd, maxIncl, t.maxEnd, t.maxEndIncl) === 0, 'interval-tree: maxEnd');
      return nl + 1 + walk(t.right);
    };
    const n = walk(this.root);
    assert(n === this.count, 'interval-tree: count');
    return n;
  }
}

function rotateRight<T extends IntervalItem>(t: Node<T>): Node<T> {
  const l = t.left as Node<T>;
  t.left = l.right;
  l.right = t;
  update(t);
  update(l);
  return l;
}

function rotateLeft<T extends IntervalItem>(t: Node<T>): Node<T> {
  const r = t.right as Node<T>;
  t.right = r.left;
  r.left = t;
  update(t);
  update(r);
  return r;
}

/** Joins two treaps where every item of a precedes every item of b. */
function merge<T extends IntervalItem>(a: Node<T> | null, b: Node<T> | null): Node<T> | null {
  if (a === null) return b;
  if (b === null) return a;
  if (a.prio >= b.prio) {
    a.right = merge(a.right, b);
    update(a);
    return a;
  }
  b.left = merge(a, b.left);
  update(b);
  return b;
}
