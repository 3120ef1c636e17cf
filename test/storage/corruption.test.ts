// Bad input on a real LevelDB store (issue 2, "Bad input"): corrupt or
// truncated values and keys raise a typed corruption error naming the key,
// and a damaged value is never returned; a store directory already held
// fails to open with a clear message; pretty-printers never throw.
//
// test/storage/mvcc.test.ts flips bits in a MemoryEngine (the MVCC decoding
// alone); here every stored entry of a small MVCC store is damaged in turn —
// truncated, one bit flipped, emptied, or (a version) removed — in a
// LevelEngine whose data was reopened from its files, and every read
// (mvccGetSync, mvccGet, mvccScan forward and reverse, at timestamps around
// every version) must either answer exactly as before or throw
// CorruptionError (`storage.corruption`) whose message names the damaged
// user key.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelEngine } from '../../storage/level-engine.js';
import type { Reader } from '../../storage/engine.js';
import { decodeMvccKey, encodeMvccKey, mvccKeyPrefixLen } from '../../storage/mvcc-key.js';
import { prettyEngineKey as prettyMvccEngineKey, prettyKey as prettyMvccKey } from '../../storage/mvcc-value.js';
import { prettyEngineKey, prettyKey } from '../../storage/keys.js';
import { DEFAULT_INLINE_VALUE_LIMIT, mvccDelete, mvccGet, mvccGetSync, mvccPut, mvccScan, setInlineValueLimit } from '../../storage/mvcc.js';
import { CorruptionError } from '../../src/util/errors.js';
import { Prng } from '../../src/util/prng.js';
import type { Timestamp } from '../../src/util/hlc.js';

const b = (s: string): Buffer => Buffer.from(s);
const ts = (wall: number): Timestamp => ({ wall, logical: 0 });
const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
const READ_AT = [5, 15, 25, 35, 45, 1000];

/** Every read this test makes, as one string per timestamp (or the error it threw). */
async function readAll(r: Reader): Promise<string[]> {
  const out: string[] = [];
  for (const at of READ_AT) {
    const parts: string[] = [];
    for (const k of KEYS) {
      const s = mvccGetSync(r, b(k), ts(at), { inconsistent: true, tombstones: true });
      const a = await mvccGet(r, b(k), ts(at), { inconsistent: true, tombstones: true });
      parts.push(`${k}=${s.value?.value?.toString() ?? (s.value === null ? '-' : '<del>')}${s.intent !== null ? '!' : ''}`);
      expect(a.value?.value?.toString()).toBe(s.value?.value?.toString());
    }
    for (const reverse of [false, true]) {
      const scan = await mvccScan(r, b('k'), b('l'), ts(at), { inconsistent: true, tombstones: true, reverse });
      parts.push(scan.kvs.map((kv) => `${kv.key.toString()}=${kv.value?.toString() ?? '<del>'}`).join(','));
    }
    out.push(parts.join(' '));
  }
  return out;
}

describe('a damaged entry of a LevelDB store is never returned', () => {
  let dir = '';
  let engine: LevelEngine;
  let entries: [Buffer, Buffer][] = [];
  let want: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-corruption-'));
    let e = await LevelEngine.open(dir);
    const batch = e.newBatch();
    // Values of 9+ bytes go out of line (their own version key), shorter ones stay in the head: both layouts.
    setInlineValueLimit(8);
    try {
      for (let i = 0; i < KEYS.length; i++) {
        const k = b(KEYS[i] as string);
        for (let v = 1; v <= 3; v++) mvccPut(batch, k, ts(v * 10 + i), b(i % 2 === 0 ? `value-${i}-${v}-long` : `v${i}${v}`));
      }
      mvccDelete(batch, b('k1'), ts(41));
      mvccPut(batch, b('k4'), ts(44), b('intent'), { txn: { id: Buffer.alloc(16, 7), epoch: 0, writeTimestamp: ts(44), sequence: 1, key: b('k4') } });
    } finally {
      setInlineValueLimit(DEFAULT_INLINE_VALUE_LIMIT);
    }
    await e.write(batch, { sync: true });
    await e.close();
    // Reopened: LevelDB recovers its log into a table file, so every read below comes from disk.
    e = await LevelEngine.open(dir);
    engine = e;
    const it = engine.iterator({});
    try {
      for (;;) {
        const rows = await it.nextBatch(100);
        if (rows.length === 0) break;
        for (const r of rows) entries.push([Buffer.from(r.key), Buffer.from(r.value)]);
      }
    } finally {
      await it.close();
    }
    entries = entries.filter(([k]) => k[0] === 0x6b);
    want = await readAll(engine);
  });

  afterAll(async () => {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds heads, out-of-line and displaced versions, a tombstone and an intent', () => {
    const heads = entries.filter(([k]) => mvccKeyPrefixLen(k) === k.length).length;
    expect(heads).toBe(KEYS.length);
    expect(entries.length - heads).toBeGreaterThanOrEqual(2 * KEYS.length);
    expect(want.join(' ')).toContain('k1=<del>');
    expect(want.join(' ')).toContain('k4=value-4-3-long!');
  });

  // Seeded, so the set of damaged positions is the same in every run.
  const rng = new Prng(20261201);
  for (const kind of ['truncated', 'one bit flipped', 'emptied', 'removed (a version)'] as const) {
    it(`every entry ${kind}: reads answer as before or throw CorruptionError naming its key`, async () => {
      let errors = 0;
      let cases = 0;
      for (const [key, value] of entries) {
        const isHead = mvccKeyPrefixLen(key) === key.length;
        if (kind === 'removed (a version)' && isHead) continue; // a removed head is a missing key, not a damaged one
        const bad = Buffer.from(value);
        let damaged: Buffer | null = bad;
        if (kind === 'truncated') damaged = bad.subarray(0, bad.length >> 1);
        else if (kind === 'emptied') damaged = Buffer.alloc(0);
        else if (kind === 'one bit flipped') {
          const bit = rng.intn(bad.length * 8);
          bad[bit >> 3] = (bad[bit >> 3] as number) ^ (1 << (bit & 7));
        } else damaged = null;
        if (damaged === null) await engine.delete(key);
        else await engine.put(key, damaged);
        cases++;
        try {
          const got = await readAll(engine).catch((e: unknown) => e);
          if (got instanceof Error) {
            expect(got).toBeInstanceOf(CorruptionError);
            expect(got).toMatchObject({ code: 'storage.corruption' });
            // Named as MVCC errors name keys: "k3", or "k3"/<ts> for a version.
            expect(got.message).toContain(prettyMvccKey(decodeMvccKey(key).key));
            errors++;
          } else expect(got, `${kind} ${prettyMvccEngineKey(key)}`).toEqual(want);
        } finally {
          await engine.put(key, value);
        }
      }
      expect(cases).toBeGreaterThanOrEqual(2 * KEYS.length);
      // Every damaged head is read by these reads: at least that many cases must have failed.
      expect(errors).toBeGreaterThanOrEqual(kind === 'removed (a version)' ? KEYS.length / 2 : KEYS.length);
      expect(await readAll(engine)).toEqual(want);
    });
  }

  it('a malformed engine key inside the span fails the scan with CorruptionError naming it in hex', async () => {
    for (const garbage of [
      Buffer.from('6b3200', 'hex'), //            "k2" then a lone 0x00: neither an escape nor the terminator
      Buffer.from('6b32000701', 'hex'), //        0x00 0x07
      Buffer.concat([encodeMvccKey(b('k2')), Buffer.from('0102', 'hex')]), // a suffix of 2 bytes, not 12
    ]) {
      await engine.put(garbage, Buffer.from('00000000', 'hex'));
      try {
        for (const reverse of [false, true]) {
          const err = await mvccScan(engine, b('k'), b('l'), ts(1000), { inconsistent: true, reverse }).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(CorruptionError);
          expect((err as Error).message).toContain(garbage.toString('hex'));
        }
      } finally {
        await engine.delete(garbage);
      }
    }
    expect(await readAll(engine)).toEqual(want);
  });
});

describe('a store directory already held', () => {
  it('by another LevelEngine of this process fails with storage.locked naming the directory, and opens once released', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-lock-same-'));
    try {
      const first = await LevelEngine.open(dir);
      const err = await LevelEngine.open(dir).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'storage.locked', sqlState: '55006' });
      expect((err as Error).message).toContain(dir);
      expect((err as Error).message).toMatch(/in use by another process/);
      // The failed open took nothing: the first engine still reads and writes.
      await first.put(b('a'), b('1'), { sync: true });
      expect(first.getSync(b('a'))?.toString()).toBe('1');
      await first.close();
      const again = await LevelEngine.open(dir);
      expect(again.getSync(b('a'))?.toString()).toBe('1');
      await again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('pretty-printers never throw', () => {
  it('on any bytes: keyspace keys, engine keys and MVCC keys (unknown prefixes print as hex)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 48 }), (u) => {
        const k = Buffer.from(u);
        for (const s of [prettyKey(k), prettyEngineKey(k), prettyMvccKey(k), prettyMvccEngineKey(k)]) expect(typeof s).toBe('string');
        // A key no printer can read shows its bytes in hex rather than failing.
        if (k.length > 0 && !/^[\x20-\x7e]*$/.test(k.toString('latin1'))) expect(prettyMvccKey(k)).toBe(`0x${k.toString('hex')}`);
      }),
      { numRuns: 2000, seed: 20261201 },
    );
  });
});
