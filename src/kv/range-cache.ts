/**
 * The range-descriptor cache (CockroachDB's kvclient/rangecache): which range
 * holds a key, and which replica of it was last seen holding the lease.
 *
 *   descs: non-overlapping descriptors sorted by end key
 *       [a,c) gen 3 | [c,f) gen 1 | [f,KEY_MAX) gen 4
 *   get(k)        binary search for the first end > k, hit iff start ≤ k
 *   getReverse(k) the range holding the key just before k: first end ≥ k, start < k
 *   miss → meta2 scan on the first range (injected `lookupMeta`), which also
 *   returns the next few records (prefetch); everything returned is inserted.
 *
 * Coalescing (CockroachDB coalesces by the range that will hold the key): a
 * miss falls into a gap between cached descriptors; while a lookup for any
 * key of that gap is in flight, other misses in the same gap (same
 * direction) wait for it and look in the cache again, and only start their
 * own lookup when what it returned does not cover them. After a split or an
 * eviction, the keys of the affected range therefore cost one meta2 scan
 * (plus one per range the prefetch did not reach), not one per key.
 *
 *   cache:   [a,c) ........gap........ [f,KEY_MAX)
 *   misses:  k1 ∈ [c,f) → lookup(k1) in flight, tagged gap c..f
 *            k2, k3 ∈ [c,f) → wait for it, then get() again
 *
 * Invariants: entries never overlap. insert() evicts every overlapping entry
 * unless one of them is newer (a higher generation: splits give both halves
 * generation+1, a merge max+1, so along any key a newer descriptor has a
 * higher generation), in which case the stale insert is dropped. Callers
 * evict on RangeKeyMismatch / unreachable replicas and insert what the error
 * carried; meta2 may lag behind a split for a moment (split-trigger.ts), which
 * only costs a retry.
 *
 * Ownership: one per DistSender; not shared across processes. No I/O of its
 * own (lookupMeta is the caller's).
 */
import { compareBytes } from '../../storage/encoding/bytes.js';
import type { RangeDescriptor, ReplicaDescriptor } from './api.js';

/** Reads meta2 records: the descriptor holding `key` (reverse: the key just before `key`) first, then possibly its successors/predecessors. */
export type MetaLookup = (key: Buffer, reverse: boolean) => Promise<readonly RangeDescriptor[]>;

export class RangeCache {
  private descs: RangeDescriptor[] = [];
  private readonly leaseholders = new Map<number, ReplicaDescriptor>();
  /** Lookups in flight, by direction and gap (see the header). */
  private readonly inflight = new Map<string, Promise<RangeDescriptor>>();
  /** Meta2 lookups done (cache misses). */
  lookups = 0;

  constructor(private readonly lookupMeta: MetaLookup) {}

  get size(): number {
    return this.descs.length;
  }

  /** Index of the first entry whose end key is > key (reverse: ≥ key). */
  private search(key: Buffer, inclusive: boolean): number {
    let lo = 0;
    let hi = this.descs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = compareBytes((this.descs[mid] as RangeDescriptor).endKey, key);
      if (c > 0 || (inclusive && c === 0)) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** The cached range holding `key`. */
  get(key: Buffer): RangeDescriptor | undefined {
    const d = this.descs[this.search(key, false)];
    return d !== undefined && compareBytes(d.startKey, key) <= 0 ? d : undefined;
  }

  /** The cached range holding the last key before `key`. */
  getReverse(key: Buffer): RangeDescriptor | undefined {
    const d = this.descs[this.search(key, true)];
    return d !== undefined && compareBytes(d.startKey, key) < 0 ? d : undefined;
  }

  byRangeId(rangeId: number): RangeDescriptor | undefined {
    return this.descs.find((d) => d.rangeId === rangeId);
  }

  /** The range holding `key` (reverse: the key before it), from the cache or meta2. */
  lookup(key: Buffer, reverse = false): Promise<RangeDescriptor> {
    const hit = reverse ? this.getReverse(key) : this.get(key);
    if (hit !== undefined) return Promise.resolve(hit);
    return this.lookupMiss(key, reverse);
  }

  /**
   * The gap of the cache `key` falls in, as a tag: its direction and the
   * bounds of the cached neighbours. Keys with the same tag are likely held
   * by the same range (one lookup for them all).
   */
  private gapTag(key: Buffer, reverse: boolean): string {
    const i = this.search(key, reverse);
    const prev = i > 0 ? (this.descs[i - 1] as RangeDescriptor).endKey.toString('latin1') : '';
    const next = this.descs[i]?.startKey.toString('latin1') ?? '\u{10ffff}';
    return `${reverse ? 'r' : 'f'}${prev}\u0000${next}`;
  }

  private async lookupMiss(key: Buffer, reverse: boolean): Promise<RangeDescriptor> {
    // Waits for other keys' lookups in its gap (each one that succeeds fills
    // part of the gap), then looks the key up itself; after another key's
    // lookup failed, or too many waits, it looks up on its own at once.
    for (let waits = 0, failed = false; ; waits++) {
      const tag = this.gapTag(key, reverse);
      const p = this.inflight.get(tag);
      if (p === undefined || failed || waits >= 64) {
        const own = this.fetch(key, reverse).finally(() => {
          if (this.inflight.get(tag) === own) this.inflight.delete(tag);
        });
        if (p === undefined) this.inflight.set(tag, own);
        return own;
      }
      try {
        const d = await p;
        if (reverse ? compareBytes(d.startKey, key) < 0 && compareBytes(key, d.endKey) <= 0 : compareBytes(d.startKey, key) <= 0 && compareBytes(key, d.endKey) < 0) return d;
      } catch {
        failed = true;
      }
      const hit = reverse ? this.getReverse(key) : this.get(key);
      if (hit !== undefined) return hit;
    }
  }

  /**
   * The range holding `key` as meta2 says now, bypassing the cache (a replica
   * GC check must not trust it). What meta2 returned is inserted as on a miss:
   * an identical entry stays with its leaseholder, an older one is replaced —
   * nothing is evicted first, so the gateway's routing of the range (its
   * cached leaseholder) survives the check.
   */
  lookupFresh(key: Buffer): Promise<RangeDescriptor> {
    return this.fetch(key, false);
  }

  private async fetch(key: Buffer, reverse: boolean): Promise<RangeDescriptor> {
    this.lookups++;
    const found = await this.lookupMeta(key, reverse);
    for (const d of found) this.insert(d);
    const first = found[0];
    if (first === undefined) throw new Error(`range-cache: meta2 holds no range for ${key.toString('hex')}`);
    return first;
  }

  /** Adds a descriptor, evicting the overlapping ones (see the header). */
  insert(desc: RangeDescriptor): void {
    const from = this.search(desc.startKey, false);
    let to = from;
    while (to < this.descs.length && compareBytes((this.descs[to] as RangeDescriptor).startKey, desc.endKey) < 0) {
      const old = this.descs[to] as RangeDescriptor;
      if (old.generation > desc.generation || (old.rangeId === desc.rangeId && old.generation === desc.generation && compareBytes(old.startKey, desc.startKey) === 0 && compareBytes(old.endKey, desc.endKey) === 0)) return;
      to++;
    }
    for (let i = from; i < to; i++) {
      const old = this.descs[i] as RangeDescriptor;
      if (old.rangeId !== desc.rangeId) this.leaseholders.delete(old.rangeId);
    }
    this.descs.splice(from, to - from, desc);
  }

  /** Drops `desc` (if still cached as it is) and its leaseholder. */
  evict(desc: RangeDescriptor): void {
    const i = this.descs.findIndex((d) => d.rangeId === desc.rangeId && d.generation === desc.generation);
    if (i >= 0) this.descs.splice(i, 1);
    this.leaseholders.delete(desc.rangeId);
  }

  clear(): void {
    this.descs = [];
    this.leaseholders.clear();
  }

  leaseholder(rangeId: number): ReplicaDescriptor | undefined {
    return this.leaseholders.get(rangeId);
  }

  setLeaseholder(rangeId: number, r: ReplicaDescriptor): void {
    this.leaseholders.set(rangeId, r);
  }

  clearLeaseholder(rangeId: number, nodeId?: number): void {
    if (nodeId === undefined || this.leaseholders.get(rangeId)?.nodeId === nodeId) this.leaseholders.delete(rangeId);
  }
}
