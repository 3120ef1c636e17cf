/**
 * ReplicaRaftStorage (src/kv/raft-storage.ts) against raft's MemoryStorage
 * (the simple version, STYLE.md §4): the same random appends (overlapping
 * suffixes, as a new leader overwrites), truncations and hard states leave
 * both answering firstIndex/lastIndex/term/entries identically, and a reload
 * from the engine rebuilds the same view (DESIGN.md §3: the tail is rebuilt
 * on start).
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { MemoryStorage } from '../../raft/storage.js';
import { EMPTY_CONF_STATE, EntryType, type Entry, type Storage } from '../../raft/types.js';
import { MemoryEngine } from '../../storage/memory-engine.js';
import { ReplicaRaftStorage, raftLogEngineKey, raftLogEngineKeyFrom, raftLogEnginePrefix } from '../../src/kv/raft-storage.js';

type Op = { kind: 'append'; back: number; n: number; term: number } | { kind: 'truncate'; back: number } | { kind: 'hs'; term: number; commit: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('append' as const), back: fc.nat({ max: 4 }), n: fc.integer({ min: 1, max: 6 }), term: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('truncate' as const), back: fc.nat({ max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('hs' as const), term: fc.nat({ max: 9 }), commit: fc.nat({ max: 9 }) }) },
);

function outcome<T>(f: () => T): T | string {
  try {
    return f();
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

function sameView(a: Storage, b: Storage): void {
  expect(b.firstIndex()).toBe(a.firstIndex());
  expect(b.lastIndex()).toBe(a.lastIndex());
  for (let i = Math.max(0, a.firstIndex() - 2); i <= a.lastIndex() + 1; i++) {
    expect(outcome(() => b.term(i))).toEqual(outcome(() => a.term(i)));
  }
  const lo = a.firstIndex();
  const hi = a.lastIndex() + 1;
  if (lo < hi) {
    const strip = (es: Entry[] | string): unknown => (typeof es === 'string' ? es : es.map((e) => [e.index, e.term, Buffer.from(e.data).toString('hex')]));
    expect(strip(outcome(() => b.entries(lo, hi, Number.MAX_SAFE_INTEGER)))).toEqual(strip(outcome(() => a.entries(lo, hi, Number.MAX_SAFE_INTEGER))));
    expect(strip(outcome(() => b.entries(lo, hi, 1)))).toEqual(strip(outcome(() => a.entries(lo, hi, 1))));
  }
}

describe('ReplicaRaftStorage', () => {
  it('behaves like MemoryStorage over random appends and truncations, and reloads identically', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const engine = new MemoryEngine();
        const mem = new MemoryStorage();
        const rs = ReplicaRaftStorage.empty(7, EMPTY_CONF_STATE);
        let seq = 0;
        for (const o of ops) {
          const b = engine.newBatch();
          if (o.kind === 'append') {
            const from = Math.max(rs.firstIndex(), rs.lastIndex() + 1 - o.back);
            const lastTerm = rs.term(from - 1);
            const ents: Entry[] = [];
            for (let k = 0; k < o.n; k++) ents.push({ index: from + k, term: Math.max(lastTerm, o.term), type: EntryType.Normal, data: Buffer.from(`e${seq++}`) });
            rs.stageAppend(b, ents);
            await engine.write(b);
            rs.commitAppend(ents);
            mem.append(ents);
          } else if (o.kind === 'truncate') {
            const idx = rs.lastIndex() - o.back;
            if (idx < rs.firstIndex()) continue;
            const t = { index: idx, term: rs.term(idx) };
            rs.stageTruncation(b, t);
            await engine.write(b);
            rs.commitTruncation(t);
            mem.compact(idx);
          } else {
            const hs = { term: o.term, vote: 1, commit: o.commit };
            rs.stageHardState(b, hs);
            await engine.write(b);
            rs.commitHardState(hs);
            mem.setHardState(hs);
          }
          sameView(mem, rs);
        }
        const reloaded = await ReplicaRaftStorage.load(engine, 7, EMPTY_CONF_STATE);
        sameView(mem, reloaded);
        expect(reloaded.initialState().hardState).toEqual(mem.initialState().hardState);
      }),
      { numRuns: 150 },
    );
  });
});

describe('raftLogEngineKeyFrom (the hot-path log key)', () => {
  it('equals raftLogEngineKey for any range and index (zero bytes escaped, 32-bit boundaries)', () => {
    const edges = [0, 1, 255, 256, 65_535, 65_536, 2 ** 24, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 40, Number.MAX_SAFE_INTEGER];
    const index = fc.oneof(fc.constantFrom(...edges), fc.nat(), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), index, (rangeId, i) => {
        expect(raftLogEngineKeyFrom(raftLogEnginePrefix(rangeId), i).equals(raftLogEngineKey(rangeId, i))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
