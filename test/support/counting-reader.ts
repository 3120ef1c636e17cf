/**
 * CountingReader: a storage Reader that counts what a caller asks of the
 * engine's iterators — iterators opened, nextBatch calls (each a trip
 * through the libuv pool on LevelDB), seeks, and entries returned — for
 * tests and benchmarks of how MVCC scans read (storage/mvcc.ts forEachHead).
 * Point reads pass through uncounted. With `hideSeek` its iterators offer no
 * seek, as a batch's merging iterator, so callers take their reopen path.
 */
import type { EngineIterator, Entry, IterOptions, Reader } from '../../storage/engine.js';

export class CountingReader implements Reader {
  opened = 0;
  calls = 0;
  seeks = 0;
  entries = 0;

  constructor(
    private readonly r: Reader,
    private readonly hideSeek = false,
  ) {}

  getSync(k: Buffer): Buffer | undefined {
    return this.r.getSync(k);
  }

  getMany(ks: readonly Buffer[]): Promise<(Buffer | undefined)[]> {
    return this.r.getMany(ks);
  }

  iterator(opts: IterOptions): EngineIterator {
    this.opened++;
    const it = this.r.iterator(opts);
    const counted: EngineIterator = {
      nextBatch: async (max: number): Promise<Entry[]> => {
        this.calls++;
        const rows = await it.nextBatch(max);
        this.entries += rows.length;
        return rows;
      },
      close: () => it.close(),
    };
    const seek = it.seek?.bind(it);
    if (seek === undefined || this.hideSeek) return counted;
    return {
      ...counted,
      seek: (k: Buffer) => {
        this.seeks++;
        seek(k);
      },
    };
  }
}
