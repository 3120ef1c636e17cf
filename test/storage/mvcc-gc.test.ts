// MVCC GC of named keys (storage/mvcc.ts mvccGarbageCollect — what a
// GCRequest evaluates, src/kv/batcheval/cmd-gc.ts) and the GC queue's
// candidate scan (mvccGcCandidates / mvccHeadNeedsGc) against a plain model,
// issue 5 ("AS OF SYSTEM TIME … bounded by the GC threshold"), with
// fast-check (fixed seed; CAIRN_MVCC_GC_SEED overrides). Per generated case:
// a few keys, each a history of puts and deletes at distinct timestamps,
// sometimes an intent on top; a history index limit of 2–17 (so the older
// versions are sometimes in the head's tail); a threshold T. Then:
//   - the candidates are a superset of the keys GC changes, and exactly them
//     when every head's index is complete;
//   - the versions left per key (counted raw in the engine) are the model's:
//     every version ≤ T shadowed by a newer one ≤ T is gone, and the newest
//     ≤ T too when it is a tombstone; nothing above T; the intent stays;
//   - every read at or above T returns what it returned before;
//   - the incremental stats delta leaves the stats equal to a recount;
//   - a second GC at T removes nothing (idempotent: every replica applying a
//     re-proposed GC command ends up the same).
import { describe, it, expect, afterEach } from 'vitest';
import fc from 'fast-check';
import { MemoryEngine } from '../../storage/memory-engine.js';
import { encodeMvccKey, mvccKeyHistoryEnd } from '../../storage/mvcc-key.js';
import {
  addStats,
  computeStats,
  emptyStats,
  mvccDelete,
  mvccGarbageCollect,
  mvccGcCandidates,
  mvccGet,
  mvccLoadHead,
  mvccPut,
  setHistoryIndexLimit,
  type Txn,
} from '../../storage/mvcc.js';
import type { Timestamp } from '../../src/util/hlc.js';

const SEED = Number(process.env.CAIRN_MVCC_GC_SEED ?? 20261130);
const K = (i: number): Buffer => Buffer.from(`k${i}`);
const T = (wall: number): Timestamp => ({ wall, logical: 0 });

interface KeyCase {
  /** Distinct walls, ascending; value null = tombstone. */
  readonly versions: { wall: number; value: string | null }[];
  /** An intent above every version. */
  readonly intent: string | null | undefined;
}

const keyCaseArb: fc.Arbitrary<KeyCase> = fc
  .record({
    walls: fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { minLength: 0, maxLength: 24 }),
    tomb: fc.array(fc.boolean(), { minLength: 24, maxLength: 24 }),
    intent: fc.option(fc.option(fc.string({ maxLength: 3 }), { nil: null }), { nil: undefined }),
  })
  .map(({ walls, tomb, intent }) => ({
    versions: [...walls].sort((a, b) => a - b).map((wall, i) => ({ wall, value: tomb[i] === true ? null : `v${wall}` })),
    intent: walls.length === 0 && intent === undefined ? undefined : intent,
  }));

/** The model: the versions left after GC at `t` (ascending). */
function modelGc(vs: KeyCase['versions'], t: number): KeyCase['versions'] {
  const newestFirst = [...vs].reverse();
  const idx = newestFirst.findIndex((v) => v.wall <= t);
  if (idx < 0) return vs;
  const keep = newestFirst[idx]?.value === null ? idx : idx + 1;
  return newestFirst.slice(0, keep).reverse();
}

function txnAt(wall: number): Txn {
  return { id: Buffer.alloc(16, 7), epoch: 0, writeTimestamp: T(wall), sequence: 1, key: K(0) };
}

/** Committed versions of `key` in the engine: the head's newest one plus the stored older ones (raw entries). */
async function rawVersionCount(e: MemoryEngine, key: Buffer): Promise<number> {
  const head = mvccLoadHead(e, key);
  if (head === null) return 0;
  const it = e.iterator({ gte: encodeMvccKey(key), lt: mvccKeyHistoryEnd(key) });
  const rows = await it.nextBatch(10_000);
  await it.close();
  // Entries after the head are version keys; an out-of-line newest version is one of them and is not counted twice.
  const stored = rows.length - 1;
  const c = head.committed;
  return c === null ? stored : c.value === undefined ? stored : stored + 1;
}

async function readAll(e: MemoryEngine, n: number, from: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    for (let w = from; w <= 62; w++) {
      // A tombstone and no version read the same (a collected newest tombstone leaves the latter).
      const r = await mvccGet(e, K(i), T(w), { inconsistent: true });
      out.push(`${i}@${w}=${r.value === null ? '-' : `${r.value.value?.toString() ?? '-'}@${r.value.ts.wall}`}`);
    }
  }
  return out;
}

afterEach(() => setHistoryIndexLimit(16));

describe('MVCC GC of named keys against the model (issue 5)', () => {
  it('removes exactly the shadowed versions at or below the threshold and the newest tombstone; reads at or above it unchanged', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(keyCaseArb, { minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 62 }), fc.integer({ min: 2, max: 17 }), async (cases, t, indexLimit) => {
        setHistoryIndexLimit(indexLimit);
        const e = new MemoryEngine();
        const stats = emptyStats();
        const b = e.newBatch();
        cases.forEach((kc, i) => {
          for (const v of kc.versions) {
            if (v.value === null) mvccDelete(b, K(i), T(v.wall), { stats });
            else mvccPut(b, K(i), T(v.wall), Buffer.from(v.value), { stats });
          }
          if (kc.intent !== undefined) {
            const txn = txnAt(61);
            if (kc.intent === null) mvccDelete(b, K(i), T(61), { txn, stats });
            else mvccPut(b, K(i), T(61), Buffer.from(kc.intent), { txn, stats });
          }
        });
        await e.write(b);
        const keys = cases.map((_, i) => K(i));
        const before = await readAll(e, cases.length, t);
        const counts = await Promise.all(keys.map((k) => rawVersionCount(e, k)));
        const candidates = (await mvccGcCandidates(e, K(0), K(9), T(t))).keys.map((k) => k.toString());
        const tails = keys.some((k) => mvccLoadHead(e, k)?.tail != null);

        const gc = e.newBatch();
        const delta = emptyStats();
        const removed = await mvccGarbageCollect(gc, keys, T(t), delta);
        await e.write(gc);
        addStats(stats, delta);

        const after = await readAll(e, cases.length, t);
        expect(after).toEqual(before);
        const changed: string[] = [];
        let expectRemoved = 0;
        for (let i = 0; i < cases.length; i++) {
          const kc = cases[i] as KeyCase;
          const want = modelGc(kc.versions, t);
          expect(await rawVersionCount(e, K(i))).toBe(want.length);
          expect(counts[i]).toBe(kc.versions.length);
          if (want.length !== kc.versions.length) changed.push(`k${i}`);
          expectRemoved += kc.versions.length - want.length;
          const head = mvccLoadHead(e, K(i));
          expect(head?.intent != null).toBe(kc.intent !== undefined);
          // Nothing above the threshold went.
          for (const v of kc.versions) if (v.wall > t) expect(want.some((w) => w.wall === v.wall)).toBe(true);
        }
        expect(removed).toBe(expectRemoved);
        for (const k of changed) expect(candidates).toContain(k);
        if (!tails) expect(candidates.sort()).toEqual(changed.sort());
        expect(stats).toEqual(await computeStats(e, K(0), K(9)));

        const again = e.newBatch();
        expect(await mvccGarbageCollect(again, keys, T(t), emptyStats())).toBe(0);
        expect((await mvccGcCandidates(e, K(0), K(9), T(t))).keys.filter((k) => mvccLoadHead(e, k)?.tail == null)).toEqual([]);
      }),
      { seed: SEED, numRuns: 200 },
    );
  });

  it('pages the candidate scan: max keys per page, resume key, every candidate once', async () => {
    const e = new MemoryEngine();
    const b = e.newBatch();
    for (let i = 0; i < 10; i++) {
      mvccPut(b, K(i), T(1), Buffer.from('old'));
      mvccPut(b, K(i), T(2), Buffer.from('new'));
    }
    await e.write(b);
    const seen: string[] = [];
    let from: Buffer | null = K(0);
    let pages = 0;
    while (from !== null) {
      const page: { keys: Buffer[]; resumeKey: Buffer | null } = await mvccGcCandidates(e, from, K(99), T(5), 3);
      expect(page.keys.length).toBeLessThanOrEqual(3);
      seen.push(...page.keys.map((k) => k.toString()));
      from = page.resumeKey;
      pages++;
    }
    expect(seen).toEqual(Array.from({ length: 10 }, (_, i) => `k${i}`));
    expect(pages).toBe(4);
    // Below every version nothing is a candidate.
    expect((await mvccGcCandidates(e, K(0), K(99), T(0))).keys).toEqual([]);
  });
});
