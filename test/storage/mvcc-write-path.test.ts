// The MVCC write path's fast paths checked against simple references (the
// write-path performance work, issue 2's put benchmark):
//   - encodeHead writes straight into a buffer sized by a bound: its bytes
//     equal a plain reference encoder written from the layout drawing in
//     mvcc-value.ts (which also pins the on-disk format);
//   - LevelEngine.write hands the batch index to classic-level without
//     per-op BatchOp objects: the stored state equals a sorted-map model;
//   - evaluation with the heads prefetched by one getMany writes the same
//     bytes as evaluation with a getSync per head.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import xxhash from 'xxhash-wasm';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelEngine } from '../../storage/level-engine.js';
import { MemoryEngine } from '../../storage/memory-engine.js';
import type { Reader } from '../../storage/engine.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { encodeHead, type Head } from '../../storage/mvcc-value.js';
import { DEFAULT_INLINE_VALUE_LIMIT, mvccDelete, mvccPrefetch, mvccPut, mvccResolveIntent, setInlineValueLimit, type Txn } from '../../storage/mvcc.js';
import type { Timestamp } from '../../src/util/hlc.js';
import { bytesArb, headArb } from './mvcc-arbitraries.js';

const hasher = await xxhash();
const ts = (wall: number, logical = 0): Timestamp => ({ wall, logical });

// --- a reference head encoder, from the layout drawing ---------------------

function uvarint(n: number): Buffer {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

const tsBytes = (t: Timestamp): Buffer[] => [uvarint(t.wall), uvarint(t.logical)];
const lenBytes = (v: Buffer): Buffer[] => [uvarint(v.length), v];

function referenceEncodeHead(metaKey: Buffer, h: Head): Buffer {
  const c = h.committed;
  const flags =
    (c !== null ? 1 : 0) | (c !== null && c.value === null ? 2 : 0) | (h.intent !== null ? 4 : 0) | (h.intent?.txn.minTimestamp !== undefined ? 8 : 0) | (h.tail !== null ? 16 : 0) | (c !== null && c.value === undefined ? 32 : 0);
  const parts: Buffer[] = [Buffer.from([1, flags])];
  if (c !== null) {
    parts.push(...tsBytes(c.ts));
    if (c.value === undefined) parts.push(uvarint(c.len));
    else if (c.value !== null) parts.push(...lenBytes(c.value));
  }
  parts.push(uvarint(h.history.length));
  for (const e of h.history) parts.push(...tsBytes(e.ts), uvarint(e.len + 1));
  if (h.tail !== null) parts.push(uvarint(h.tail.count), uvarint(h.tail.valBytes));
  const it = h.intent;
  if (it !== null) {
    parts.push(it.txn.id, uvarint(it.txn.epoch), ...tsBytes(it.txn.writeTimestamp));
    if (it.txn.minTimestamp !== undefined) parts.push(...tsBytes(it.txn.minTimestamp));
    parts.push(uvarint(it.txn.sequence), ...lenBytes(it.txn.key), uvarint(it.txn.priority ?? 0), uvarint(it.writes.length));
    for (const w of it.writes) {
      parts.push(uvarint(w.seq), Buffer.from([w.value === null ? 0 : 1]));
      if (w.value !== null) parts.push(...lenBytes(w.value));
    }
  }
  const body = Buffer.concat(parts);
  // Checksum: xxhash32 of the body seeded with FNV-1a of the engine key.
  let seed = 0x811c9dc5;
  for (const c of metaKey) seed = Math.imul(seed ^ c, 0x01000193);
  const sum = Buffer.alloc(4);
  sum.writeUInt32LE(hasher.h32Raw(body, seed >>> 0));
  return Buffer.concat([sum, body]);
}

// Values up to 3 KB: heads cross Buffer's 4 KB pool boundary both ways;
// maxSafeNat counters give the longest varints the size bound must cover.
const valueArb = fc.option(fc.oneof(bytesArb(40), bytesArb(3000)), { nil: null });
const anyHead = headArb({ value: valueArb, maxHistory: 17, maxWrites: 6, maxAnchor: 300, counter: fc.maxSafeNat() });

describe('encodeHead', () => {
  it('writes the same bytes as the reference encoder, for any head including maximal varints (property)', () => {
    fc.assert(
      fc.property(bytesArb(20), anyHead, (key, h) => {
        const mk = encodeMvccKey(key);
        expect(encodeHead(mk, h).equals(referenceEncodeHead(mk, h))).toBe(true);
      }),
      { numRuns: 400 },
    );
  });
});

// --- LevelEngine.write against a model --------------------------------------

async function dump(r: Reader): Promise<string[]> {
  const it = r.iterator({});
  const out: string[] = [];
  try {
    for (;;) {
      const rows = await it.nextBatch(64);
      if (rows.length === 0) return out;
      for (const { key, value } of rows) out.push(`${key.toString('hex')}=${value.toString('hex')}`);
    }
  } finally {
    await it.close();
  }
}

describe('LevelEngine.write', () => {
  it('applies batches of puts, deletes and overwrites as a sorted map does (property)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-write-path-'));
    const e = await LevelEngine.open(dir);
    const model = new Map<string, string>();
    try {
      const opArb = fc.tuple(fc.integer({ min: 0, max: 30 }), fc.option(bytesArb(20), { nil: null }));
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { maxLength: 40 }), fc.boolean(), async (ops, sync) => {
          const batch = e.newBatch();
          for (const [k, v] of ops) {
            const key = Buffer.from(`k${k}`);
            if (v === null) {
              batch.delete(key);
              model.delete(key.toString('hex'));
            } else {
              batch.put(key, v);
              model.set(key.toString('hex'), v.toString('hex'));
            }
          }
          await e.write(batch, { sync });
          const want = [...model].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${v}`);
          expect(await dump(e)).toEqual(want);
        }),
        { numRuns: 60 },
      );
    } finally {
      await e.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// --- prefetched evaluation against getSync evaluation -----------------------

type WriteOp = { kind: 'put' | 'del'; key: number; txn: boolean; value: number } | { kind: 'commit' | 'abort'; key: number };

const writeOpArb: fc.Arbitrary<WriteOp> = fc.oneof(
  fc.record({ kind: fc.constantFrom('put' as const, 'del' as const), key: fc.integer({ min: 0, max: 7 }), txn: fc.boolean(), value: fc.integer({ min: 0, max: 2000 }) }),
  fc.record({ kind: fc.constantFrom('commit' as const, 'abort' as const), key: fc.integer({ min: 0, max: 7 }) }),
);

const TXN_ID = Buffer.alloc(16, 9);

/** Applies `batches` of ops, each batch evaluated then written; returns the final dump. */
async function run(batches: readonly (readonly WriteOp[])[], prefetch: boolean): Promise<string[]> {
  const e = new MemoryEngine();
  let wall = 0;
  for (const ops of batches) {
    const batch = e.newBatch();
    if (prefetch) await mvccPrefetch(batch, ops.map((o) => Buffer.from(`key${o.key}`)));
    for (const o of ops) {
      const key = Buffer.from(`key${o.key}`);
      wall += 10;
      const txn: Txn = { id: TXN_ID, epoch: 0, writeTimestamp: ts(wall), sequence: wall, key: Buffer.from('key0') };
      try {
        if (o.kind === 'put') mvccPut(batch, key, ts(wall), Buffer.alloc(o.value, o.value & 0xff), o.txn ? { txn } : {});
        else if (o.kind === 'del') mvccDelete(batch, key, ts(wall), o.txn ? { txn } : {});
        else mvccResolveIntent(batch, key, { txn: { ...txn, writeTimestamp: ts(wall) }, status: o.kind === 'commit' ? 'committed' : 'aborted' });
      } catch (err) {
        // Conflicts (a non-transactional write over the intent) fail alike on both paths.
        if (!(err instanceof Error) || !/conflicting intents/.test(err.message)) throw err;
      }
    }
    await e.write(batch);
  }
  return dump(e);
}

describe('prefetched evaluation', () => {
  it('writes exactly what getSync evaluation writes (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(writeOpArb, { maxLength: 12 }), { minLength: 1, maxLength: 6 }), fc.constantFrom(DEFAULT_INLINE_VALUE_LIMIT, 0, 1000), async (batches, inlineLimit) => {
        setInlineValueLimit(inlineLimit);
        try {
          expect(await run(batches, true)).toEqual(await run(batches, false));
        } finally {
          setInlineValueLimit(DEFAULT_INLINE_VALUE_LIMIT);
        }
      }),
      { numRuns: 150 },
    );
  });
});
