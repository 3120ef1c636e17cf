/**
 * The fast path's locking point read (src/kv/replica.ts lockingPointRead,
 * used by serveReadsFast for a transaction's FOR UPDATE get) against the
 * simple version it stands in for: cmd-get's evaluation of a locking get —
 * an mvccGet at the read timestamp, then the newest version: another
 * transaction's intent is a WriteIntentError, a committed version above
 * the read timestamp a WriteTooOldError (STYLE.md §4: a fast version
 * checked against a simple one). fast-check with a fixed seed
 * (LOCKING_READ_SEED overrides) over random key histories — puts and
 * tombstones at distinct timestamps, history index limits 2–17 (older
 * versions sometimes in the head's tail), sometimes an intent on top — and
 * readers at any timestamp, of the intent's own transaction or another:
 *   - whenever the fast read answers, cmd-get answers the same value and
 *     version timestamp (and would not have raised anything);
 *   - it declines (undefined: the sequenced path takes over) only when
 *     there is an intent (any transaction's) or a version above the read —
 *     so every other locking get of an unblocked key is served fast.
 */
import { describe, it, expect, afterEach } from 'vitest';
import fc from 'fast-check';
import { MemoryEngine } from '../../storage/memory-engine.js';
import { WriteIntentError, mvccDelete, mvccGet, mvccPut, setHistoryIndexLimit, type Txn } from '../../storage/mvcc.js';
import { MAX_TIMESTAMP, ZERO_TIMESTAMP, tsLess, type Timestamp } from '../../src/util/hlc.js';
import { lockingPointRead } from '../../src/kv/replica.js';

const SEED = Number(process.env.LOCKING_READ_SEED ?? 20261130);
const KEY = Buffer.from('k');
const T = (wall: number): Timestamp => ({ wall, logical: 0 });
const txnOf = (idByte: number, wall: number): Txn => ({ id: Buffer.alloc(16, idByte), epoch: 0, writeTimestamp: T(wall), sequence: 1, key: KEY });

type Outcome = { kind: 'value'; value: string | null; ts: Timestamp } | { kind: 'intent' } | { kind: 'tooOld' };

/** cmd-get's locking evaluation (src/kv/batcheval/cmd-get.ts), by its two MVCC reads. */
async function cmdGetLocking(e: MemoryEngine, ts: Timestamp, reader: Txn): Promise<Outcome> {
  let res;
  try {
    res = await mvccGet(e, KEY, ts, { txn: reader });
  } catch (err) {
    if (err instanceof WriteIntentError) return { kind: 'intent' };
    throw err;
  }
  const newest = await mvccGet(e, KEY, MAX_TIMESTAMP, { inconsistent: true, tombstones: true });
  if (newest.intent !== null && !newest.intent.txn.id.equals(reader.id)) return { kind: 'intent' };
  const v = newest.value;
  if (newest.intent === null && v !== null && tsLess(ts, v.ts)) return { kind: 'tooOld' };
  return { kind: 'value', value: res.value?.value?.toString() ?? null, ts: res.value?.ts ?? ZERO_TIMESTAMP };
}

afterEach(() => setHistoryIndexLimit(16));

describe('lockingPointRead (the fast path of a locking get) against cmd-get', () => {
  it('answers exactly what cmd-get answers, and declines only on an intent or a newer version (property)', async () => {
    let served = 0;
    let declined = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { maxLength: 24 }),
        fc.array(fc.boolean(), { minLength: 24, maxLength: 24 }),
        fc.option(fc.option(fc.string({ maxLength: 3 }), { nil: null }), { nil: undefined }),
        fc.integer({ min: 2, max: 17 }),
        fc.array(fc.record({ wall: fc.integer({ min: 0, max: 65 }), own: fc.boolean() }), { minLength: 1, maxLength: 8 }),
        async (walls, tomb, intent, indexLimit, readers) => {
          setHistoryIndexLimit(indexLimit);
          const e = new MemoryEngine();
          const b = e.newBatch();
          [...walls].sort((x, y) => x - y).forEach((w, i) => (tomb[i] === true ? mvccDelete(b, KEY, T(w)) : mvccPut(b, KEY, T(w), Buffer.from(`v${w}`))));
          const writer = txnOf(7, 61);
          if (intent === null) mvccDelete(b, KEY, T(61), { txn: writer });
          else if (intent !== undefined) mvccPut(b, KEY, T(61), Buffer.from(intent), { txn: writer });
          await e.write(b);
          const newestWall = walls.length === 0 ? -1 : Math.max(...walls);
          for (const r of readers) {
            const ts = T(r.wall);
            const reader = r.own ? txnOf(7, r.wall) : txnOf(9, r.wall);
            const fast = lockingPointRead(e, KEY, ts);
            const simple = await cmdGetLocking(e, ts, reader);
            if (fast === undefined) {
              declined++;
              // Declined: an intent is there, or a committed version lies above the read.
              expect(intent !== undefined || newestWall > r.wall).toBe(true);
              continue;
            }
            served++;
            expect(intent).toBeUndefined();
            expect(simple).toEqual({ kind: 'value', value: fast === null ? null : (fast.value?.toString() ?? null), ts: fast === null ? ZERO_TIMESTAMP : fast.ts });
          }
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
    // Both branches were exercised by this fixed-seed set.
    expect(served).toBeGreaterThan(0);
    expect(declined).toBeGreaterThan(0);
  });
});
