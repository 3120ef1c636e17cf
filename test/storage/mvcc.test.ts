// MVCC unit and property tests beyond the transcripts (issue 2): the head
// codec (round trip, every truncation and bit flip detected), the read cost
// contract (one getSync for a current read, no iterator for point reads),
// evaluation into a batch that reads its own writes, replication of a batch
// by its repr, persistence across reopen, and binary keys.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryEngine } from '../../storage/memory-engine.js';
import { LevelEngine } from '../../storage/level-engine.js';
import { WriteBatch, type EngineIterator, type IterOptions, type Reader } from '../../storage/engine.js';
import { decodeMvccKey, encodeMvccKey, mvccKeyPrefixLen, mvccKeyTs, mvccUserKey, mvccVersionKey } from '../../storage/mvcc-key.js';
import { decodeHead, decodeVersion, encodeHead, encodeVersion, type Head } from '../../storage/mvcc-value.js';
import {
  HistoryNotIndexedError,
  setHistoryIndexLimit,
  setInlineValueLimit,
  DEFAULT_INLINE_VALUE_LIMIT,
  mvccDelete,
  type ReadWithinUncertaintyIntervalError,
  computeStats,
  emptyStats,
  mvccDeleteRange,
  mvccGet,
  mvccGetSync,
  mvccPrefetch,
  mvccPut, mvccResolveIntent, mvccScan, type Txn } from '../../storage/mvcc.js';
import { CorruptionError } from '../../src/util/errors.js';
import { bytesArb, headArb, tsArb } from './mvcc-arbitraries.js';
import type { Timestamp } from '../../src/util/hlc.js';

const b = (s: string): Buffer => Buffer.from(s);
const ts = (wall: number, logical = 0): Timestamp => ({ wall, logical });
const ALL: [Buffer, Buffer] = [Buffer.alloc(0), Buffer.from([0xff, 0xff])];

async function dump(r: Reader): Promise<string[]> {
  const it = r.iterator({});
  const out: string[] = [];
  for (;;) {
    const rows = await it.nextBatch(100);
    if (rows.length === 0) break;
    for (const { key, value } of rows) out.push(`${key.toString('hex')}=${value.toString('hex')}`);
  }
  await it.close();
  return out;
}

const valueArb = fc.option(bytesArb(40), { nil: null });
const anyHead = headArb({ value: valueArb, maxHistory: 4, maxWrites: 4, maxAnchor: 10, counter: fc.nat() });

describe('head and version codecs', () => {
  it('round-trip (property)', () => {
    fc.assert(
      fc.property(bytesArb(12), anyHead, (key, h) => {
        const mk = encodeMvccKey(key);
        expect(decodeHead(mk, encodeHead(mk, h))).toEqual(h);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(bytesArb(12), tsArb, valueArb, (key, t, v) => {
        const vk = encodeMvccKey(key, t);
        expect(decodeVersion(vk, encodeVersion(vk, v))).toEqual(v);
      }),
    );
  });

  it('detects every truncation and every single-bit flip with CorruptionError naming the key', () => {
    const mk = encodeMvccKey(b('row/7'));
    const head: Head = {
      committed: { ts: ts(10), value: b('committed') },
      history: [{ ts: ts(5), len: 3 }],
      tail: { count: 2, valBytes: 7 },
      intent: { txn: { id: Buffer.alloc(16, 1), epoch: 2, writeTimestamp: ts(12, 3), sequence: 4, key: b('anchor'), priority: 7 }, writes: [{ seq: 4, value: b('prov') }] },
    };
    const enc = encodeHead(mk, head);
    for (let cut = 0; cut < enc.length; cut++) expect(() => decodeHead(mk, enc.subarray(0, cut))).toThrow(CorruptionError);
    for (let bit = 0; bit < enc.length * 8; bit++) {
      const bad = Buffer.from(enc);
      bad[bit >> 3] = (bad[bit >> 3] as number) ^ (1 << (bit & 7));
      expect(() => decodeHead(mk, bad)).toThrow(/corrupt MVCC value at "row\/7"/);
    }
    // A valid value moved under another key fails too.
    expect(() => decodeHead(encodeMvccKey(b('row/8')), enc)).toThrow(CorruptionError);
    const vk = encodeMvccKey(b('row/7'), ts(5));
    expect(() => decodeVersion(encodeMvccKey(b('row/7'), ts(6)), encodeVersion(vk, b('v')))).toThrow(/"row\/7"\/0.000006,0: checksum mismatch/);
  });
});

/** A Reader that counts what MVCC asks of the engine underneath it. */
class CountingReader implements Reader {
  gets = 0;
  iterators = 0;
  constructor(private readonly inner: Reader) {}
  getSync(key: Buffer): Buffer | undefined {
    this.gets++;
    return this.inner.getSync(key);
  }
  getMany(keys: readonly Buffer[]): Promise<(Buffer | undefined)[]> {
    this.gets += keys.length;
    return this.inner.getMany(keys);
  }
  iterator(opts: IterOptions): EngineIterator {
    this.iterators++;
    return this.inner.iterator(opts);
  }
}

describe('corruption is never returned', () => {
  // Inline newest values, and out-of-line ones (limit 8: the 9-byte values go out of line, every other one stays).
  it.each([Infinity, 8])('after any single bit flip in any stored value, reads either fail with CorruptionError or return what they returned before, inline value limit %s (property)', async (limit) => {
    const base = new MemoryEngine();
    const batch = base.newBatch();
    setInlineValueLimit(limit);
    try {
      for (let i = 0; i < 6; i++) for (let v = 1; v <= 3; v++) mvccPut(batch, b(`k${i}`), ts(v * 10 + i), b(i % 2 === 0 ? `value-${i}-${v}` : `v${i}${v}`));
      mvccPut(batch, b('k9'), ts(50), b('intent'), { txn: { id: Buffer.alloc(16, 7), epoch: 0, writeTimestamp: ts(50), sequence: 1, key: b('k9') } });
    } finally {
      setInlineValueLimit(DEFAULT_INLINE_VALUE_LIMIT);
    }
    await base.write(batch);
    const entries = (await dump(base)).map((line) => line.split('=').map((h) => Buffer.from(h, 'hex')) as [Buffer, Buffer]);
    const readAll = async (r: Reader, at: number): Promise<string> => {
      const scan = await mvccScan(r, b('k'), b('l'), ts(at), { inconsistent: true, tombstones: true });
      const gets: string[] = [];
      for (let i = 0; i < 10; i++) gets.push((await mvccGet(r, b(`k${i}`), ts(at), { inconsistent: true })).value?.value?.toString() ?? '-');
      return `${scan.kvs.map((kv) => `${kv.key.toString()}=${kv.value?.toString()}`).join(',')} | ${gets.join(',')}`;
    };
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.nat(), fc.integer({ min: 0, max: 60 }), async (which, bit, at) => {
        const [k, v] = entries[which % entries.length] as [Buffer, Buffer];
        const e = new MemoryEngine();
        const copy = e.newBatch();
        for (const [ek, ev] of entries) copy.put(ek, ev);
        const bad = Buffer.from(v);
        const pos = bit % (bad.length * 8);
        bad[pos >> 3] = (bad[pos >> 3] as number) ^ (1 << (pos & 7));
        copy.put(k, bad);
        await e.write(copy);
        const want = await readAll(base, at);
        try {
          expect(await readAll(e, at)).toBe(want);
        } catch (err) {
          expect(err).toBeInstanceOf(CorruptionError);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('read cost', () => {
  it('out of line: a current read is two getSyncs, displacing it writes nothing, and a scan reads it without a getSync, either way', async () => {
    const e = new MemoryEngine();
    setInlineValueLimit(2);
    try {
      const batch = e.newBatch();
      mvccPut(batch, b('j'), ts(10), b('j-long'));
      for (let i = 1; i <= 3; i++) mvccPut(batch, b('k'), ts(i * 10), b(`long-${i}`));
      mvccPut(batch, b('l'), ts(10), b('l'));
      await e.write(batch);
      // k: head + one entry per version, each written once; "l" (short) stays inline.
      expect((await dump(e)).length).toBe(2 + 4 + 1);
      const r = new CountingReader(e);
      expect(mvccGetSync(r, b('k'), ts(100)).value?.value?.toString()).toBe('long-3');
      expect(r.gets).toBe(2);
      expect(mvccGetSync(r, b('k'), ts(15)).value?.value?.toString()).toBe('long-1');
      expect(r.gets).toBe(4);
      for (const reverse of [false, true]) {
        const res = await mvccScan(r, b('a'), b('z'), ts(100), { reverse });
        expect(res.kvs.map((kv) => `${kv.key.toString()}=${kv.value?.toString()}`)).toEqual(reverse ? ['l=l', 'k=long-3', 'j=j-long'] : ['j=j-long', 'k=long-3', 'l=l']);
      }
      expect(r.gets).toBe(4);
      const w = e.newBatch();
      mvccPut(w, b('k'), ts(40), b('long-4'));
      expect(w.count).toBe(2);
    } finally {
      setInlineValueLimit(DEFAULT_INLINE_VALUE_LIMIT);
    }
  });

  it('a current read is one getSync, a historical read two, and no point read creates an iterator', async () => {
    const e = new MemoryEngine();
    const batch = e.newBatch();
    for (let i = 1; i <= 5; i++) mvccPut(batch, b('k'), ts(i * 10), b(`v${i}`));
    await e.write(batch);
    const r = new CountingReader(e);
    expect(mvccGetSync(r, b('k'), ts(100)).value?.value?.toString()).toBe('v5');
    expect([r.gets, r.iterators]).toEqual([1, 0]);
    expect(mvccGetSync(r, b('k'), ts(25)).value?.value?.toString()).toBe('v2');
    expect([r.gets, r.iterators]).toEqual([3, 0]);
    expect(mvccGetSync(r, b('missing'), ts(25)).value).toBeNull();
    expect([r.gets, r.iterators]).toEqual([4, 0]);
    await mvccScan(r, b('a'), b('z'), ts(100));
    expect(r.iterators).toBe(1);
  });
});

describe('history index and tail', () => {
  it('reads at any timestamp, with any uncertainty window, agree with the plain version list for any index limit (property)', async () => {
    const versionsArb = fc.uniqueArray(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 12 }).map((w) => w.sort((a, b) => a - b));
    await fc.assert(
      fc.asyncProperty(versionsArb, fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 45 }), fc.integer({ min: 0, max: 8 }), async (walls, tomb, limit, readWall, unc) => {
        setHistoryIndexLimit(limit);
        try {
          const e = new MemoryEngine();
          const batch = e.newBatch();
          walls.forEach((w, i) => (tomb[i] ? mvccDelete(batch, b('k'), ts(w)) : mvccPut(batch, b('k'), ts(w), b(`v${w}`))));
          await e.write(batch);
          const readTs = ts(readWall);
          const limitTs = unc === 0 ? undefined : ts(readWall + unc);
          const uncertain = limitTs === undefined ? undefined : [...walls].reverse().find((w) => w > readWall && w <= readWall + unc);
          const visible = [...walls].reverse().find((w) => w <= readWall);
          const want =
            uncertain !== undefined ? `uncertain@${uncertain}` : visible === undefined || tomb[walls.indexOf(visible)] ? 'none' : `v${visible}@${visible}`;
          let got: string;
          try {
            const r = await mvccGet(e, b('k'), readTs, limitTs === undefined ? {} : { uncertaintyLimit: limitTs });
            got = r.value === null ? 'none' : `${r.value.value?.toString()}@${r.value.ts.wall}`;
          } catch (err) {
            got = `uncertain@${(err as ReadWithinUncertaintyIntervalError).valueTimestamp.wall}`;
          }
          expect(got).toBe(want);
        } finally {
          setHistoryIndexLimit(16);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('mvccGetSync refuses a read below the index with a typed error; mvccGet answers it', async () => {
    setHistoryIndexLimit(1);
    try {
      const e = new MemoryEngine();
      const batch = e.newBatch();
      for (let w = 1; w <= 4; w++) mvccPut(batch, b('k'), ts(w), b(`v${w}`));
      await e.write(batch);
      expect(mvccGetSync(e, b('k'), ts(3)).value?.value?.toString()).toBe('v3');
      expect(() => mvccGetSync(e, b('k'), ts(2))).toThrow(HistoryNotIndexedError);
      expect((await mvccGet(e, b('k'), ts(2))).value?.value?.toString()).toBe('v2');
    } finally {
      setHistoryIndexLimit(16);
    }
  });
});

describe('prefetch', () => {
  it('after mvccPrefetch, evaluating writes reads nothing more from the engine, with the same result', async () => {
    const e = new MemoryEngine();
    const pre = e.newBatch();
    for (let i = 0; i < 10; i++) mvccPut(pre, b(`k${i}`), ts(1), b(`old${i}`));
    await e.write(pre);
    const keys = [0, 3, 5, 12].map((i) => b(`k${i}`));
    const counting = new CountingReader(e);
    const fast = new WriteBatch(counting);
    await mvccPrefetch(fast, keys);
    const readsAfterPrefetch = counting.gets;
    const slow = e.newBatch();
    for (const rw of [fast, slow]) for (const k of keys) mvccPut(rw, k, ts(5), Buffer.concat([k, b('!')]));
    expect(counting.gets).toBe(readsAfterPrefetch);
    expect(fast.repr().equals(slow.repr())).toBe(true);
  });
});

describe('evaluation into a batch', () => {
  it('later ops in one batch see earlier ones, for gets and for scans; the engine sees nothing until write', async () => {
    const e = new MemoryEngine();
    const pre = e.newBatch();
    mvccPut(pre, b('a'), ts(1), b('old-a'));
    mvccPut(pre, b('c'), ts(1), b('old-c'));
    await e.write(pre);

    const batch = e.newBatch();
    const stats = emptyStats();
    mvccPut(batch, b('b'), ts(5), b('new-b'), { stats });
    mvccPut(batch, b('a'), ts(5), b('new-a'), { stats });
    expect((await mvccGet(batch, b('a'), ts(5))).value?.value?.toString()).toBe('new-a');
    expect((await mvccGet(batch, b('a'), ts(4))).value?.value?.toString()).toBe('old-a');
    expect((await mvccGet(e, b('a'), ts(5))).value?.value?.toString()).toBe('old-a');
    const scanned = await mvccScan(batch, b('a'), b('z'), ts(5));
    expect(scanned.kvs.map((kv) => `${kv.key.toString()}=${kv.value?.toString()}`)).toEqual(['a=new-a', 'b=new-b', 'c=old-c']);
    const del = await mvccDeleteRange(batch, b('a'), b('z'), ts(6), { stats });
    expect(del.keys.map((k) => k.toString())).toEqual(['a', 'b', 'c']);
    expect((await mvccScan(batch, b('a'), b('z'), ts(6))).kvs).toEqual([]);
    const before = await computeStats(e, ...ALL);
    await e.write(batch);
    const after = await computeStats(e, ...ALL);
    for (const k of Object.keys(stats) as (keyof typeof stats)[]) expect(after[k] - before[k]).toBe(stats[k]);
    expect((await mvccScan(e, b('a'), b('z'), ts(5))).kvs.map((kv) => kv.value?.toString())).toEqual(['new-a', 'new-b', 'old-c']);
  });

  it('a batch shipped as its repr leaves a follower engine identical to the leader', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-mvcc-follower-'));
    const leader = new MemoryEngine();
    const follower = await LevelEngine.open(dir);
    try {
      const txn: Txn = { id: Buffer.alloc(16, 9), epoch: 0, writeTimestamp: ts(60), sequence: 1, key: b('a') };
      const steps: ((rw: ReturnType<MemoryEngine['newBatch']>) => unknown)[] = [
        (rw) => {
          for (let i = 0; i < 50; i++) mvccPut(rw, b(`k${i % 17}`), ts(1 + i), b(`v${i}`));
        },
        (rw) => mvccPut(rw, b('k3'), ts(60), b('intent'), { txn }),
        (rw) => mvccResolveIntent(rw, b('k3'), { txn: { ...txn, writeTimestamp: ts(65) }, status: 'committed' }),
        (rw) => mvccDeleteRange(rw, b('k1'), b('k2'), ts(70)),
      ];
      for (const step of steps) {
        const batch = leader.newBatch();
        await step(batch);
        const repr = batch.repr();
        await leader.write(batch);
        await follower.applyBatchRepr(repr, { sync: true });
        expect(await dump(follower)).toEqual(await dump(leader));
      }
      expect(await computeStats(follower, ...ALL)).toEqual(await computeStats(leader, ...ALL));
    } finally {
      await follower.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('LevelEngine persistence', () => {
  it('MVCC data, history and intents survive close and reopen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-mvcc-reopen-'));
    try {
      let e = await LevelEngine.open(dir);
      const batch = e.newBatch();
      mvccPut(batch, b('a'), ts(1), b('1'));
      mvccPut(batch, b('a'), ts(2), b('2'));
      mvccPut(batch, b('b'), ts(3), b('intent'), { txn: { id: Buffer.alloc(16, 3), epoch: 0, writeTimestamp: ts(3), sequence: 0, key: b('b') } });
      await e.write(batch, { sync: true });
      const stats = await computeStats(e, ...ALL);
      const contents = await dump(e);
      await e.close();
      e = await LevelEngine.open(dir);
      expect(await dump(e)).toEqual(contents);
      expect(await computeStats(e, ...ALL)).toEqual(stats);
      expect((await mvccGet(e, b('a'), ts(1))).value?.value?.toString()).toBe('1');
      expect(() => mvccGetSync(e, b('b'), ts(5))).toThrow(/conflicting intents on "b"/);
      await e.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('binary user keys', () => {
  it('mvccKeyTs reads the timestamp suffix of any engine key as decodeMvccKey does (property)', () => {
    fc.assert(
      fc.property(bytesArb(12), fc.option(tsArb, { nil: undefined }), (k, t) => {
        const ek = encodeMvccKey(k, t);
        expect(mvccKeyTs(ek, mvccKeyPrefixLen(ek))).toEqual(decodeMvccKey(ek).ts);
      }),
    );
  });

  it('mvccKeyPrefixLen and mvccUserKey (a JS loop up to 64 bytes, indexOf beyond) agree with a plain parse, garbage included (property)', () => {
    // The reference: walk the escaped key byte by byte (mvcc-key.ts layout).
    const refPrefixLen = (ek: Buffer): number | 'corrupt' => {
      for (let i = 0; i < ek.length; i++) {
        if (ek[i] !== 0) continue;
        if (ek[i + 1] === 0x01) return i + 2;
        if (ek[i + 1] !== 0xff) return 'corrupt';
        i++;
      }
      return 'corrupt';
    };
    const zeroHeavy = fc.uint8Array({ minLength: 0, maxLength: 90 }).map((a) => Buffer.from(a.map((x) => (x % 3 === 0 ? 0 : x))));
    fc.assert(
      fc.property(zeroHeavy, fc.option(tsArb, { nil: undefined }), zeroHeavy, (k, t, garbage) => {
        const ek = encodeMvccKey(k, t);
        const plen = mvccKeyPrefixLen(ek);
        expect(plen).toBe(refPrefixLen(ek));
        expect(mvccUserKey(ek, plen).equals(k)).toBe(true);
        const want = refPrefixLen(garbage);
        if (want === 'corrupt') expect(() => mvccKeyPrefixLen(garbage)).toThrow(CorruptionError);
        else expect(mvccKeyPrefixLen(garbage)).toBe(want);
      }),
      { numRuns: 3000 },
    );
  });

  it('mvccVersionKey built from the metadata key equals encodeMvccKey(key, ts), edges of wall and logical included (property)', () => {
    const edgeTs = fc.record({ wall: fc.constantFrom(0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 53 - 1), logical: fc.constantFrom(0, 1, 2 ** 31, 2 ** 32 - 1) });
    fc.assert(
      fc.property(bytesArb(12), fc.oneof(tsArb, edgeTs), (k, t) => {
        expect(mvccVersionKey(encodeMvccKey(k), t).equals(encodeMvccKey(k, t))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('scans return keys with 0x00 and 0xff bytes in bytewise order, forward and reverse, values inline or out of line (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(bytesArb(6), { minLength: 1, maxLength: 20, comparator: (x, y) => x.equals(y) }), fc.constantFrom(Infinity, 0, 3), async (keys, limit) => {
        const e = new MemoryEngine();
        const batch = e.newBatch();
        setInlineValueLimit(limit);
        try {
          for (const k of keys) {
            mvccPut(batch, k, ts(1), k);
            mvccPut(batch, k, ts(2), Buffer.concat([k, k]));
          }
        } finally {
          setInlineValueLimit(DEFAULT_INLINE_VALUE_LIMIT);
        }
        await e.write(batch);
        const sorted = [...keys].sort(Buffer.compare);
        const end = Buffer.alloc(8, 0xff);
        const fwd = await mvccScan(e, Buffer.alloc(0), end, ts(1));
        expect(fwd.kvs.map((kv) => kv.key.toString('hex'))).toEqual(sorted.map((k) => k.toString('hex')));
        expect(fwd.kvs.every((kv) => kv.value?.equals(kv.key))).toBe(true);
        const rev = await mvccScan(e, Buffer.alloc(0), end, ts(2), { reverse: true });
        expect(rev.kvs.map((kv) => kv.key.toString('hex'))).toEqual(sorted.reverse().map((k) => k.toString('hex')));
      }),
      { numRuns: 100 },
    );
  });
});
