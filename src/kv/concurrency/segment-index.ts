/**
 * An ordered sequence of disjoint, non-empty, half-open key segments
 * [key, endKey), stored as a list of sorted chunks (a two-level B+tree): the
 * index under the timestamp cache.
 *
 * Keys are latin1 strings (one char per byte, so string order is byte order):
 * a string is one compact heap object that V8 compares natively, where a
 * Buffer is an object, an ArrayBuffer and a backing store — at 100,000
 * entries the searches are bound by those cache misses, and strings make
 * them ~3× faster. (Immutable, too: nothing a caller does can change them.)
 *
 *     chunks:  [ [a,b) [b,c) … (≤ 2·CHUNK) ] [ [m,n) … ] [ … ]
 *
 * Because the segments are disjoint, they are sorted by start and by end at
 * once, so "the first segment that ends after k" is a binary search over the
 * chunks' last ends and then inside one chunk: about log2(n) key comparisons
 * (~17 at 100,000 segments, against ~68 for the general interval treap), and
 * the segments overlapping a span are contiguous from there. Replacing a run
 * of segments by new ones is one splice inside a chunk (rarely across
 * chunks); a chunk that grows past 2·CHUNK is halved and empty chunks are
 * dropped, so an update costs O(log n + CHUNK) — a memmove of at most a few
 * hundred pointers — plus, on a split, a splice of the chunk list
 * (n / CHUNK entries, amortized over CHUNK inserts).
 *
 * Invariants (check()): segments are non-empty, sorted and disjoint across
 * all chunks; no chunk is empty.
 */
import { assert } from '../../util/assert.js';

/** A key as a latin1 string (Buffer.toString('latin1')): string order is byte order. */
export type KeyString = string;

export interface Segment {
  readonly key: KeyString;
  readonly endKey: KeyString;
}

/** A position in the index: chunk number and offset in the chunk (may be one past the last segment). */
export interface SegmentPos {
  readonly c: number;
  readonly i: number;
}

export class SegmentIndex<S extends Segment> {
  private chunks: S[][] = [];
  private count = 0;

  /** @param chunk the target chunk size CHUNK (a knob tests randomize). */
  constructor(private readonly chunk = 128) {
    assert(chunk >= 1, 'segment-index: chunk size must be positive');
  }

  get size(): number {
    return this.count;
  }

  /** The position of the first segment whose end is above k (the first that can overlap a span starting at k). */
  seek(k: KeyString): SegmentPos {
    const chunks = this.chunks;
    let lo = 0;
    let hi = chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const ch = chunks[mid] as S[];
      if ((ch[ch.length - 1] as S).endKey > k) hi = mid;
      else lo = mid + 1;
    }
    if (lo === chunks.length) return lo === 0 ? { c: 0, i: 0 } : { c: lo - 1, i: (chunks[lo - 1] as S[]).length };
    const ch = chunks[lo] as S[];
    let a = 0;
    let b = ch.length - 1; // the last one qualifies
    while (a < b) {
      const mid = (a + b) >>> 1;
      if ((ch[mid] as S).endKey > k) b = mid;
      else a = mid + 1;
    }
    return { c: lo, i: a };
  }

  /**
   * Calls fn for every segment overlapping [start, end) — or the point
   * `start` when end is null — in order, starting from seek(start).
   */
  forEachOverlap(start: KeyString, end: KeyString | null, fn: (s: S) => void, from: SegmentPos = this.seek(start)): void {
    const chunks = this.chunks;
    for (let c = from.c, i = from.i; c < chunks.length; c++, i = 0) {
      const ch = chunks[c] as S[];
      for (; i < ch.length; i++) {
        const s = ch[i] as S;
        if (end === null ? s.key > start : s.key >= end) return;
        fn(s);
      }
    }
  }

  /** Replaces `deleteCount` consecutive segments at `pos` by `insert` (sorted, fitting the gap). */
  splice(pos: SegmentPos, deleteCount: number, insert: readonly S[]): void {
    const chunks = this.chunks;
    if (chunks.length === 0) {
      assert(deleteCount === 0, 'segment-index: deleting from an empty index');
      if (insert.length > 0) chunks.push([...insert]);
      this.count = insert.length;
      this.split(0);
      return;
    }
    let remaining = deleteCount;
    let c = pos.c;
    let i = pos.i;
    while (remaining > 0) {
      const ch = chunks[c] as S[];
      const n = Math.min(remaining, ch.length - i);
      ch.splice(i, n);
      remaining -= n;
      if (remaining > 0) {
        c++;
        i = 0;
        assert(c < chunks.length, 'segment-index: deleting past the end');
      }
    }
    const first = chunks[pos.c] as S[];
    if (insert.length === 1) first.splice(pos.i, 0, insert[0] as S);
    else if (insert.length > 0) first.splice(pos.i, 0, ...insert);
    this.count += insert.length - deleteCount;
    // Drop the chunks the deletion emptied; halve the one that grew too big.
    let emptied = false;
    for (let k = pos.c; k <= c; k++) if ((chunks[k] as S[]).length === 0) emptied = true;
    if (!emptied) return this.split(pos.c);
    this.chunks = chunks.filter((ch) => ch.length > 0);
    if (first.length > 0) this.split(this.chunks.indexOf(first));
  }

  /** Keeps only the segments satisfying pred. */
  filter(pred: (s: S) => boolean): void {
    let n = 0;
    this.chunks = this.chunks.map((ch) => ch.filter(pred)).filter((ch) => ((n += ch.length), ch.length > 0));
    this.count = n;
  }

  forEach(fn: (s: S) => void): void {
    for (const ch of this.chunks) for (const s of ch) fn(s);
  }

  /** Test hook: verifies the invariants; returns the segment count. */
  check(): number {
    let prev: S | null = null;
    let n = 0;
    for (const ch of this.chunks) {
      assert(ch.length > 0, 'segment-index: empty chunk');
      for (const s of ch) {
        assert(s.key < s.endKey, 'segment-index: empty segment');
        assert(prev === null || prev.endKey <= s.key, 'segment-index: unsorted or overlapping segments');
        prev = s;
        n++;
      }
    }
    assert(n === this.count, 'segment-index: count');
    return n;
  }

  private split(c: number): void {
    const ch = this.chunks[c] as S[];
    if (ch.length <= 2 * this.chunk) return;
    const parts: S[][] = [];
    for (let k = 0; k < ch.length; k += this.chunk) parts.push(ch.slice(k, k + this.chunk));
    this.chunks.splice(c, 1, ...parts);
  }
}
