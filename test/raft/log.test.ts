// The log layers: MemoryStorage, Unstable and RaftLog (Raft §5.3 log
// matching; §7 compaction), and the Inflights window.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MemoryStorage } from '../../raft/storage.js';
import { Unstable } from '../../raft/log-unstable.js';
import { RaftLog } from '../../raft/log.js';
import { Inflights } from '../../raft/tracker/inflights.js';
import { Progress, ProgressStateType } from '../../raft/tracker/progress.js';
import { CompactedError, EMPTY_CONF_STATE, EntryType, NO_LIMIT, SnapshotOutOfDateError, UnavailableError, type Entry } from '../../raft/types.js';

function ent(term: number, index: number, size = 0): Entry {
  return { term, index, type: EntryType.Normal, data: new Uint8Array(size) };
}
const ti = (es: readonly Entry[]): string[] => es.map((e) => `${e.term}/${e.index}`);

function storageWith(snapIndex: number, snapTerm: number, ents: Entry[]): MemoryStorage {
  const s = new MemoryStorage();
  if (snapIndex > 0) s.applySnapshot({ data: new Uint8Array(0), metadata: { index: snapIndex, term: snapTerm, confState: EMPTY_CONF_STATE } });
  s.append(ents);
  return s;
}

describe('MemoryStorage', () => {
  const base = (): MemoryStorage => storageWith(3, 3, [ent(4, 4), ent(5, 5)]);

  it('term, first and last index around the snapshot point', () => {
    const s = base();
    expect(s.firstIndex()).toBe(4);
    expect(s.lastIndex()).toBe(5);
    expect(s.term(3)).toBe(3);
    expect(s.term(5)).toBe(5);
    expect(() => s.term(2)).toThrow(CompactedError);
    expect(() => s.term(6)).toThrow(UnavailableError);
  });

  it('entries honours bounds and the size limit (always at least one)', () => {
    const s = storageWith(3, 3, [ent(4, 4, 10), ent(5, 5, 10), ent(6, 6, 10)]);
    expect(() => s.entries(3, 5, NO_LIMIT)).toThrow(CompactedError);
    expect(ti(s.entries(4, 7, NO_LIMIT))).toEqual(['4/4', '5/5', '6/6']);
    expect(ti(s.entries(4, 7, 20))).toEqual(['4/4', '5/5']);
    expect(ti(s.entries(4, 7, 1))).toEqual(['4/4']);
  });

  it('append overwrites a conflicting suffix and ignores compacted entries', () => {
    const s = base();
    s.append([ent(3, 3), ent(6, 4), ent(6, 5), ent(6, 6)]);
    expect(ti(s.entries(4, 7, NO_LIMIT))).toEqual(['6/4', '6/5', '6/6']);
    s.append([ent(7, 5)]);
    expect(s.lastIndex()).toBe(5);
    expect(() => s.append([ent(7, 9)])).toThrow(/missing log entry/);
  });

  it('compact and createSnapshot', () => {
    const s = base();
    const snap = s.createSnapshot(4, { ...EMPTY_CONF_STATE, voters: [1] }, new Uint8Array([1]));
    expect(snap.metadata).toMatchObject({ index: 4, term: 4 });
    expect(() => s.createSnapshot(4, undefined, new Uint8Array(0))).toThrow(SnapshotOutOfDateError);
    s.compact(4);
    expect(s.firstIndex()).toBe(5);
    expect(s.term(4)).toBe(4);
    expect(() => s.compact(4)).toThrow(CompactedError);
    expect(() => s.applySnapshot({ data: new Uint8Array(0), metadata: { index: 2, term: 2, confState: EMPTY_CONF_STATE } })).toThrow(SnapshotOutOfDateError);
  });
});

describe('Unstable', () => {
  it('truncateAndAppend: continue, replace everything, truncate the middle', () => {
    const u = new Unstable(5);
    u.truncateAndAppend([ent(1, 5), ent(1, 6)]);
    u.truncateAndAppend([ent(1, 7)]);
    expect(ti(u.entries)).toEqual(['1/5', '1/6', '1/7']);
    u.truncateAndAppend([ent(2, 6), ent(2, 7), ent(2, 8)]);
    expect(ti(u.entries)).toEqual(['1/5', '2/6', '2/7', '2/8']);
    u.truncateAndAppend([ent(3, 4)]);
    expect(u.offset).toBe(4);
    expect(ti(u.entries)).toEqual(['3/4']);
  });

  it('entries handed out are not handed out again; a truncation re-exposes them', () => {
    const u = new Unstable(1);
    u.truncateAndAppend([ent(1, 1), ent(1, 2)]);
    expect(ti(u.nextEntries())).toEqual(['1/1', '1/2']);
    u.acceptInProgress();
    expect(u.nextEntries()).toEqual([]);
    u.truncateAndAppend([ent(1, 3)]);
    expect(ti(u.nextEntries())).toEqual(['1/3']);
    u.truncateAndAppend([ent(2, 2)]);
    expect(ti(u.nextEntries())).toEqual(['2/2']);
  });

  it('stableTo ignores a changed entry', () => {
    const u = new Unstable(1);
    u.truncateAndAppend([ent(1, 1), ent(1, 2)]);
    u.truncateAndAppend([ent(2, 2)]);
    u.stableTo(2, 1); // the entry at 2 is now of term 2
    expect(u.offset).toBe(1);
    u.stableTo(2, 2);
    expect(u.offset).toBe(3);
    expect(u.entries).toEqual([]);
  });
});

describe('RaftLog', () => {
  function log(ents: Entry[]): RaftLog {
    return new RaftLog(storageWith(0, 0, ents));
  }

  it('findConflict finds the first mismatching entry (Raft §5.3)', () => {
    const l = log([ent(1, 1), ent(2, 2), ent(3, 3)]);
    expect(l.findConflict([])).toBe(0);
    expect(l.findConflict([ent(1, 1), ent(2, 2), ent(3, 3)])).toBe(0);
    expect(l.findConflict([ent(2, 2), ent(3, 3), ent(4, 4), ent(4, 5)])).toBe(4);
    expect(l.findConflict([ent(1, 1), ent(4, 2), ent(4, 3)])).toBe(2);
  });

  it('maybeAppend checks the previous entry, truncates conflicts, commits at most the last new index', () => {
    const l = log([ent(1, 1), ent(2, 2), ent(3, 3)]);
    expect(l.maybeAppend(3, 2, 3, [ent(4, 4)])).toBe(-1); // wrong previous term
    expect(l.maybeAppend(3, 3, 5, [ent(4, 4)])).toBe(4);
    expect(l.committed).toBe(4);
    expect(l.maybeAppend(2, 2, 9, [])).toBe(2);
    expect(l.committed).toBe(4); // never decreases
  });

  it('appending below the commit index is a broken invariant', () => {
    const l = log([ent(1, 1), ent(2, 2), ent(3, 3)]);
    l.commitTo(3);
    expect(() => l.maybeAppend(1, 1, 3, [ent(4, 2)])).toThrow(/conflicts with committed entry/);
  });

  it('findConflictByTerm skips back to the last index with a term ≤ the given one', () => {
    const l = log([ent(1, 1), ent(1, 2), ent(4, 3), ent(4, 4), ent(5, 5), ent(5, 6)]);
    expect(l.findConflictByTerm(6, 5)).toEqual([6, 5]);
    expect(l.findConflictByTerm(6, 4)).toEqual([4, 4]);
    expect(l.findConflictByTerm(6, 3)).toEqual([2, 1]);
    expect(l.findConflictByTerm(6, 0)).toEqual([0, 0]);
  });

  it('slice spans storage and unstable, and respects the size limit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 0, max: 10 }), fc.integer({ min: 1, max: 300 }), (nStable, nUnstable, maxSize) => {
        const stable = Array.from({ length: nStable }, (_, i) => ent(1, i + 1, 20));
        const l = log(stable);
        l.append(Array.from({ length: nUnstable }, (_, i) => ent(2, nStable + i + 1, 20)));
        const got = l.slice(1, l.lastIndex() + 1, maxSize);
        const want = Math.max(1, Math.min(nStable + nUnstable, Math.floor(maxSize / 20)));
        expect(got.map((e) => e.index)).toEqual(Array.from({ length: want }, (_, i) => i + 1));
      }),
      { numRuns: 300 },
    );
  });

  it('isUpToDate compares last term, then last index (Raft §5.4.1)', () => {
    const l = log([ent(1, 1), ent(2, 2), ent(3, 3)]);
    expect(l.isUpToDate(3, 3)).toBe(true);
    expect(l.isUpToDate(2, 3)).toBe(false);
    expect(l.isUpToDate(1, 4)).toBe(true);
    expect(l.isUpToDate(9, 2)).toBe(false);
  });
});

describe('Inflights and Progress', () => {
  it('the window fills by count or bytes and frees by index', () => {
    const in1 = new Inflights(3, 250);
    in1.add(1, 100);
    in1.add(2, 100);
    expect(in1.full()).toBe(false);
    in1.add(3, 100);
    expect(in1.full()).toBe(true);
    in1.freeLE(2);
    expect([in1.count, in1.bytes, in1.full()]).toEqual([1, 100, false]);
    in1.add(4, 10);
    in1.add(5, 10);
    expect(in1.full()).toBe(true);
    in1.freeLE(10);
    expect(in1.count).toBe(0);
  });

  it('the ring wraps around without losing order (model check)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constant(-1), fc.integer({ min: 0, max: 3 })), { maxLength: 200 }), (ops) => {
        const ring = new Inflights(4);
        const model: number[] = [];
        let next = 1;
        for (const op of ops) {
          if (op === -1) {
            if (!ring.full()) {
              ring.add(next, 1);
              model.push(next++);
            }
          } else {
            const to = (model[0] ?? next) + op - 1;
            ring.freeLE(to);
            while (model.length > 0 && (model[0] as number) <= to) model.shift();
          }
          expect(ring.count).toBe(model.length);
        }
      }),
    );
  });

  it('probe → replicate → snapshot → probe transitions', () => {
    const pr = new Progress(5, new Inflights(10));
    expect(pr.state).toBe(ProgressStateType.Probe);
    pr.sentEntries(1, 1);
    expect(pr.isPaused()).toBe(true);
    expect(pr.maybeDecrTo(4, 2)).toBe(true); // rejection of the last probe
    expect(pr.next).toBe(3);
    expect(pr.maybeUpdate(4)).toBe(true);
    pr.becomeReplicate();
    expect(pr.next).toBe(5);
    expect(pr.maybeDecrTo(3, 3)).toBe(false); // stale: below match
    pr.becomeSnapshot(10);
    expect(pr.isPaused()).toBe(true);
    pr.becomeProbe();
    expect(pr.next).toBe(11);
  });
});
