// How MVCC scans use the engine iterator (storage/mvcc.ts forEachHead, issue
// 2's scan benchmark):
//   - a forward scan that meets a head with more versions stored after it
//     than setScanSeekThreshold allows beyond the current chunk seeks its
//     iterator to that key's history end (or reopens it there, where the
//     iterator has no seek) instead of reading them — the results equal
//     those of a scan that reads every version (property, both engines and a
//     batch with pending writes), and a key with hundreds of versions is
//     skipped without reading them;
//   - a limited scan's first chunk is sized by the entries per head that
//     recent scans met, so a store with older versions between heads is
//     scanned in one nextv again.
import { describe, it, expect, afterEach } from 'vitest';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryEngine } from '../../storage/memory-engine.js';
import { LevelEngine } from '../../storage/level-engine.js';
import type { Engine, Reader } from '../../storage/engine.js';
import { DEFAULT_INLINE_VALUE_LIMIT, mvccDelete, mvccPut, mvccScan, setInlineValueLimit, setScanSeekThreshold, type MvccScanOptions, type Txn } from '../../storage/mvcc.js';
import type { Timestamp } from '../../src/util/hlc.js';
import { CountingReader } from '../support/counting-reader.js';

const ts = (wall: number, logical = 0): Timestamp => ({ wall, logical });
const key = (i: number): Buffer => Buffer.from(`k${String(i).padStart(3, '0')}`);
const END = Buffer.from('l');
const txnOf = (n: number): Txn => ({ id: Buffer.alloc(16, n), epoch: 0, writeTimestamp: ts(500 + n), sequence: 1, key: key(0) });

const show = (r: Awaited<ReturnType<typeof mvccScan>>): string =>
  `${r.kvs.map((kv) => `${kv.key.toString()}=${kv.value?.toString() ?? '<del>'}@${kv.ts.wall}`).join(' ')} | intents ${r.intents.map((i) => i.key.toString()).join(',')} | resume ${r.resumeSpan?.key.toString() ?? '-'}`;

/** One key's history: committed writes (null: delete) at walls 1, 2, …, and maybe an intent above them. */
interface KeyHistory {
  readonly writes: readonly (string | null)[];
  readonly intent: boolean;
}

async function load(engine: Engine, keys: readonly KeyHistory[]): Promise<void> {
  const batch = engine.newBatch();
  keys.forEach((h, i) => {
    h.writes.forEach((v, w) => (v === null ? mvccDelete(batch, key(i), ts(w + 1)) : mvccPut(batch, key(i), ts(w + 1), Buffer.from(v))));
    if (h.intent) mvccPut(batch, key(i), ts(500), Buffer.from(`intent${i}`), { txn: txnOf(1) });
  });
  await engine.write(batch);
}

const historyArb: fc.Arbitrary<KeyHistory> = fc.record({
  writes: fc.oneof(
    fc.array(fc.option(fc.constantFrom('a', 'bb', 'x'.repeat(40)), { nil: null, freq: 5 }), { maxLength: 3 }),
    fc.array(fc.option(fc.constantFrom('a', 'bb', 'x'.repeat(40)), { nil: null, freq: 5 }), { minLength: 10, maxLength: 90 }),
  ),
  intent: fc.boolean(),
});

afterEach(() => {
  setScanSeekThreshold(16);
  setInlineValueLimit(DEFAULT_INLINE_VALUE_LIMIT);
});

describe('forward scans reopen past long histories', () => {
  it('return what a scan reading every version returns: both engines, and a batch with pending writes (property)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-scan-seek-'));
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(historyArb, { minLength: 1, maxLength: 12 }),
          fc.constantFrom(0, 1, 3, 20),
          fc.constantFrom(DEFAULT_INLINE_VALUE_LIMIT, 1),
          fc.array(fc.record({ wall: fc.integer({ min: 0, max: 100 }), maxKeys: fc.integer({ min: 0, max: 6 }), reverse: fc.boolean(), tombstones: fc.boolean() }), { minLength: 1, maxLength: 6 }),
          async (keys, threshold, inlineLimit, scans) => {
            setInlineValueLimit(inlineLimit);
            const memory = new MemoryEngine();
            const level = await LevelEngine.open(join(dir, `r${run++}`));
            try {
              await load(memory, keys);
              await load(level, keys);
              // A batch whose pending writes sit over some keys' histories.
              const batch = level.newBatch();
              for (let i = 0; i < keys.length; i += 3) if (!(keys[i] as KeyHistory).intent) mvccPut(batch, key(i), ts(200), Buffer.from(`pending${i}`), { txn: txnOf(2) });
              for (const s of scans) {
                const opts: MvccScanOptions = { inconsistent: true, tombstones: s.tombstones, reverse: s.reverse, maxKeys: s.maxKeys };
                for (const r of [memory, level, batch] as Reader[]) {
                  setScanSeekThreshold(1_000_000);
                  const want = show(await mvccScan(r, key(0), END, ts(s.wall), opts));
                  setScanSeekThreshold(threshold);
                  expect(show(await mvccScan(r, key(0), END, ts(s.wall), opts))).toBe(want);
                }
              }
            } finally {
              await level.close();
            }
          },
        ),
        { numRuns: 60, seed: 20261201 },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('skip the versions of a key with hundreds of them without reading them', async () => {
    const engine = new MemoryEngine();
    // k000..k009 one version each; k005 has 600 versions.
    await load(engine, Array.from({ length: 10 }, (_, i) => ({ writes: Array.from({ length: i === 5 ? 600 : 1 }, (_v, w) => `v${i}.${w}`), intent: false })));
    const all = 'k000=v0.0@1 k001=v1.0@1 k002=v2.0@1 k003=v3.0@1 k004=v4.0@1 k005=v5.599@600 k006=v6.0@1 k007=v7.0@1 k008=v8.0@1 k009=v9.0@1 | intents  | resume -';
    const first8 = 'k000=v0.0@1 k001=v1.0@1 k002=v2.0@1 k003=v3.0@1 k004=v4.0@1 k005=v5.599@600 k006=v6.0@1 k007=v7.0@1 | intents  | resume k008';
    for (const [maxKeys, want, entriesRead] of [
      [0, all, 609], // k005: its head (the newest value inline) and 599 older versions
      [8, first8, 608], // stops at k008's head
    ] as const) {
      // One seek past k005's history (the default threshold); far fewer entries read than its 600 versions.
      const r = new CountingReader(engine);
      expect(show(await mvccScan(r, key(0), END, ts(1000), { maxKeys }))).toBe(want);
      expect([r.opened, r.seeks]).toEqual([1, 1]);
      expect(r.entries).toBeLessThan(200);
      // An iterator without seek is reopened instead.
      const noSeek = new CountingReader(engine, true);
      expect(show(await mvccScan(noSeek, key(0), END, ts(1000), { maxKeys }))).toBe(want);
      expect([noSeek.opened, noSeek.seeks]).toEqual([2, 0]);
      expect(noSeek.entries).toBeLessThan(200);
      // Without either every version is read.
      setScanSeekThreshold(1_000_000);
      const every = new CountingReader(engine);
      expect(show(await mvccScan(every, key(0), END, ts(1000), { maxKeys }))).toBe(want);
      expect([every.opened, every.seeks]).toEqual([1, 0]);
      expect(every.entries).toBeGreaterThanOrEqual(entriesRead);
      setScanSeekThreshold(16);
    }
    // A reverse scan meets the versions before the head: it reads them (one iterator), same rows.
    const rev = new CountingReader(engine);
    const back = await mvccScan(rev, key(0), END, ts(1000), { reverse: true });
    expect(back.kvs.map((kv) => kv.key.toString()).reverse().join(' ')).toBe('k000 k001 k002 k003 k004 k005 k006 k007 k008 k009');
    expect(rev.opened).toBe(1);
  });
});

describe('the first chunk of a limited scan', () => {
  it('is sized by the entries per head recent scans met: one nextv per scan once learned', async () => {
    const flat = new MemoryEngine();
    await load(flat, Array.from({ length: 400 }, () => ({ writes: ['only'], intent: false })));
    /** Scans of a store with one entry per head bring the estimate back to one: rows + 1 entries, one nextv. */
    const flatScans = async (): Promise<void> => {
      for (let i = 0; i < 120; i++) await mvccScan(flat, key(0), END, ts(10), { maxKeys: 50 });
      const r = new CountingReader(flat);
      await mvccScan(r, key(0), END, ts(10), { maxKeys: 50 });
      expect([r.calls, r.entries]).toEqual([1, 51]);
    };
    await flatScans();
    // 400 keys, every other one with one older version: 1.5 entries per head.
    const engine = new MemoryEngine();
    await load(engine, Array.from({ length: 400 }, (_, i) => ({ writes: i % 2 === 0 ? ['old', 'new'] : ['only'], intent: false })));
    const callsPerScan = async (): Promise<number> => {
      const r = new CountingReader(engine);
      const res = await mvccScan(r, key(100), END, ts(10), { maxKeys: 100 });
      expect(res.kvs.length).toBe(100);
      return r.calls;
    };
    // Guessing one entry per head, the first chunk ends two thirds of the way: a second nextv.
    expect(await callsPerScan()).toBe(2);
    for (let i = 0; i < 40; i++) await callsPerScan();
    expect(await callsPerScan()).toBe(1);
    await flatScans();
  });
});
