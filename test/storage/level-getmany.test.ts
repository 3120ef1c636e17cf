// LevelEngine's getMany split follows what recent reads found (issue 2,
// storage/level-engine.ts header): missing keys are answered by LevelDB's
// bloom filters, so a getMany of them runs as one pool job; found keys may
// each cost a block read, so a getMany of them runs as GETMANY_PARTS jobs.
import { describe, it, expect, afterEach } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelEngine } from '../../storage/level-engine.js';

const key = (i: number): Buffer => Buffer.from(`k${String(i).padStart(5, '0')}`);
const keys = (from: number, n: number): Buffer[] => Array.from({ length: n }, (_, i) => key(from + i));

describe('LevelEngine getMany split', () => {
  let dir = '';
  afterEach(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
    dir = '';
  });

  it('reads missing keys in one pool job and found keys in four, and the values stay right either way', async () => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-getmany-'));
    const e = await LevelEngine.open(dir);
    try {
      const w = e.newBatch();
      for (let i = 0; i < 100; i++) w.put(key(i), Buffer.from(`v${i}`));
      await e.write(w);
      const jobs = async (ks: Buffer[]): Promise<[number, (string | undefined)[]]> => {
        const before = e.poolReads;
        const got = await e.getMany(ks);
        return [e.poolReads - before, got.map((v) => v?.toString())];
      };
      // Before any read the engine splits (as it always did).
      const [first, firstVals] = await jobs(keys(0, 100));
      expect(first).toBe(4);
      expect(firstVals).toEqual(keys(0, 100).map((_, i) => `v${i}`));
      // Reads that find nothing: after a few, one job per getMany.
      const seen: number[] = [];
      for (let r = 0; r < 8; r++) {
        const [n, vals] = await jobs(keys(1000 + r * 100, 100));
        expect(vals.every((v) => v === undefined)).toBe(true);
        seen.push(n);
      }
      expect(seen[seen.length - 1]).toBe(1);
      // A small getMany is one job whatever was found.
      expect((await jobs(keys(0, 31)))[0]).toBe(1);
      // Reads that find their keys again: back to four jobs, values aligned.
      const back: number[] = [];
      for (let r = 0; r < 8; r++) {
        const [n, vals] = await jobs(keys(0, 100));
        expect(vals).toEqual(keys(0, 100).map((_, i) => `v${i}`));
        back.push(n);
      }
      expect(back[back.length - 1]).toBe(4);
      // Snapshots share the decision.
      const snap = e.snapshot();
      const before = e.poolReads;
      expect((await snap.getMany(keys(0, 100))).map((v) => v?.toString())).toEqual(keys(0, 100).map((_, i) => `v${i}`));
      expect(e.poolReads - before).toBe(4);
      await snap.close();
    } finally {
      await e.close();
    }
  });
});
