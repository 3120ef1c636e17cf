/**
 * MemoryEngine: the in-memory Engine, for tests and simulation. It passes the
 * same conformance suite as LevelEngine (test/storage/engine.test.ts).
 *
 * Structure: one SkipList (engine.ts) whose nodes hold a short *version chain*
 * `[{seq, value|null}, …]` (oldest first). Every write batch takes the next
 * sequence number; a Snapshot or iterator pins the sequence it was opened at
 * and reads, for each key, the newest version with seq ≤ its pin. That makes
 * snapshots consistent without copying the map.
 *
 * Invariants:
 *   - with no reader pinned, every chain has exactly one version, and a
 *     deleted key's node is removed from the list at once;
 *   - with readers pinned, a write appends and prunes versions no pinned
 *     reader can see; nodes left holding only a deletion are queued and
 *     removed when the last reader closes.
 *
 * Writes are synchronous JS, so every batch is trivially atomic; `sync` is
 * accepted and ignored. Returned buffers are the stored ones: callers must not
 * mutate them (the same holds for the buffers handed to put).
 */
import { assert } from '../src/util/assert.js';
import {
  EngineClosedError,
  compareKeys,
  SkipList,
  WriteBatch,
  decodeBatchRepr,
  withinBounds,
  type BatchOp,
  type Engine,
  type EngineIterator,
  type Entry,
  type IterOptions,
  type Snapshot,
  type SkipNode,
  type WriteOptions,
} from './engine.js';

interface Version {
  readonly seq: number;
  readonly value: Buffer | null;
}

type Chain = Version[];

function visibleAt(chain: Chain, seq: number): Buffer | null {
  for (let i = chain.length - 1; i >= 0; i--) {
    const v = chain[i] as Version;
    if (v.seq <= seq) return v.value;
  }
  return null;
}

export class MemoryEngine implements Engine {
  private readonly list = new SkipList<Chain>();
  private seq = 0;
  /** Pinned sequence numbers of open snapshots and iterators (multiset). */
  private readonly pins = new Map<number, number>();
  private garbage: SkipNode<Chain>[] = [];
  private closed = false;

  private check(): void {
    if (this.closed) throw new EngineClosedError();
  }

  private pin(): number {
    this.pins.set(this.seq, (this.pins.get(this.seq) ?? 0) + 1);
    return this.seq;
  }

  private unpin(seq: number): void {
    const n = this.pins.get(seq) ?? 0;
    if (n <= 1) this.pins.delete(seq);
    else this.pins.set(seq, n - 1);
    if (this.pins.size === 0) this.collect();
  }

  private minPin(): number {
    let m = Infinity;
    for (const s of this.pins.keys()) if (s < m) m = s;
    return m;
  }

  private collect(): void {
    for (const node of this.garbage) {
      const chain = node.value;
      const lastV = chain[chain.length - 1] as Version;
      if (lastV.value === null) this.list.delete(node.key);
      else node.value = [lastV];
    }
    this.garbage = [];
  }

  private applyOps(ops: readonly BatchOp[]): void {
    this.check();
    const seq = ++this.seq;
    const pinned = this.pins.size > 0;
    const minPin = pinned ? this.minPin() : Infinity;
    for (const op of ops) {
      if (!pinned) {
        if (op.value === null) this.list.delete(op.key);
        else {
          const n = this.list.get(op.key);
          if (n === null) this.list.set(op.key, [{ seq, value: op.value }]);
          else n.value = [{ seq, value: op.value }];
        }
        continue;
      }
      const n = this.list.get(op.key);
      if (n === null) {
        if (op.value !== null) this.list.set(op.key, [{ seq, value: op.value }]);
        continue;
      }
      // Keep versions a pinned reader may still see: those newer than the
      // oldest pin, plus the newest one at or below it.
      const chain = n.value;
      let keepFrom = 0;
      for (let i = chain.length - 1; i >= 0; i--) {
        if ((chain[i] as Version).seq <= minPin) {
          keepFrom = i;
          break;
        }
      }
      const next = chain.slice(keepFrom);
      next.push({ seq, value: op.value });
      n.value = next;
      if (op.value === null) this.garbage.push(n);
    }
  }

  getSync(key: Buffer): Buffer | undefined {
    this.check();
    const n = this.list.get(key);
    if (n === null) return undefined;
    return visibleAt(n.value, this.seq) ?? undefined;
  }

  get(key: Buffer): Promise<Buffer | undefined> {
    try {
      return Promise.resolve(this.getSync(key));
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }

  getMany(keys: readonly Buffer[]): Promise<(Buffer | undefined)[]> {
    try {
      return Promise.resolve(keys.map((k) => this.getSync(k)));
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }

  private getAt(key: Buffer, seq: number): Buffer | undefined {
    this.check();
    const n = this.list.get(key);
    return n === null ? undefined : (visibleAt(n.value, seq) ?? undefined);
  }

  put(key: Buffer, value: Buffer, _opts?: WriteOptions): Promise<void> {
    return this.run(() => this.applyOps([{ key, value }]));
  }

  delete(key: Buffer, _opts?: WriteOptions): Promise<void> {
    return this.run(() => this.applyOps([{ key, value: null }]));
  }

  newBatch(): WriteBatch {
    return new WriteBatch(this);
  }

  write(batch: WriteBatch, _opts?: WriteOptions): Promise<void> {
    return this.run(() => this.applyOps(batch.ops()));
  }

  applyBatchRepr(repr: Buffer, _opts?: WriteOptions): Promise<void> {
    return this.run(() => this.applyOps(decodeBatchRepr(repr)));
  }

  private run(fn: () => void): Promise<void> {
    try {
      fn();
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e as Error);
    }
  }

  iterator(opts: IterOptions): EngineIterator {
    this.check();
    const seq = this.pin();
    return new MemoryIterator(this.list, opts, seq, () => this.unpin(seq));
  }

  snapshot(): Snapshot {
    this.check();
    const seq = this.pin();
    let open = true;
    return {
      getSync: (key: Buffer) => this.getAt(key, seq),
      getMany: (keys: readonly Buffer[]) => Promise.resolve(keys.map((k) => this.getAt(k, seq))),
      iterator: (opts: IterOptions) => {
        this.check();
        this.pins.set(seq, (this.pins.get(seq) ?? 0) + 1);
        return new MemoryIterator(this.list, opts, seq, () => this.unpin(seq));
      },
      close: () => {
        if (open) {
          open = false;
          this.unpin(seq);
        }
        return Promise.resolve();
      },
    };
  }

  approximateSize(start: Buffer, end: Buffer): Promise<number> {
    let size = 0;
    for (let n = this.list.seekGE(start); n !== null && compareKeys(n.key, end) < 0; n = n.next[0] as SkipNode<Chain> | null) {
      const v = visibleAt(n.value, this.seq);
      if (v !== null) size += n.key.length + v.length;
    }
    return Promise.resolve(size);
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  /** Number of live keys (tests). */
  get keyCount(): number {
    let n = 0;
    for (let x = this.list.first(); x !== null; x = x.next[0] as SkipNode<Chain> | null) if (visibleAt(x.value, this.seq) !== null) n++;
    return n;
  }
}

class MemoryIterator implements EngineIterator {
  private cur: SkipNode<Chain> | null;
  private done = false;

  constructor(
    private readonly list: SkipList<Chain>,
    private readonly opts: IterOptions,
    private readonly seq: number,
    private readonly release: () => void,
  ) {
    this.cur = list.start(opts);
  }

  seek(key: Buffer): void {
    assert(this.opts.reverse !== true, 'storage: seek is for forward iterators');
    if (this.done) return;
    const gte = this.opts.gte;
    this.cur = this.list.seekGE(gte !== undefined && compareKeys(key, gte) < 0 ? gte : key);
  }

  nextBatch(max: number): Promise<Entry[]> {
    const out: Entry[] = [];
    const rev = this.opts.reverse === true;
    while (out.length < max && this.cur !== null && !this.done) {
      const n = this.cur;
      if (!withinBounds(n.key, this.opts)) {
        this.cur = null;
        break;
      }
      this.cur = rev ? n.prev : (n.next[0] as SkipNode<Chain> | null);
      const v = visibleAt(n.value, this.seq);
      if (v !== null) out.push({ key: n.key, value: v });
    }
    return Promise.resolve(out);
  }

  close(): Promise<void> {
    if (!this.done) {
      this.done = true;
      this.cur = null;
      this.release();
    }
    return Promise.resolve();
  }
}
