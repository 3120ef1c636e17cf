// The move nemesis (issue 9: "replica moves on the tables under test") against a real
// 4-node CairnTarget: it moves a voter of a range of the table under test to a node that
// held none (POST /_admin/relocate) and its evidence is the changed descriptor; then the
// merge nemesis, whose two ranges' voters differ, colocates them first and merges.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Prng } from '../../src/util/index.js';
import { CairnTarget } from '../../jepsen-style/control/cairn-target.js';
import { clusterRanges } from '../../jepsen-style/control/admin.js';
import { MergeNemesis, MoveNemesis } from '../../jepsen-style/nemesis/split.js';
import { nemesisFor } from '../../jepsen-style/nemesis/index.js';
import { tempStore } from './support.js';
import { waitFor } from '../kv-ranges-multiproc/support.js';

const dir = tempStore();
let target: CairnTarget;

beforeAll(async () => {
  target = await CairnTarget.start({ dir, nodes: 4 });
}, 120_000);

afterAll(async () => {
  await target?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('MoveNemesis', () => {
  it('is registered as `move` and combinable', () => {
    expect(nemesisFor('move', ['t'])?.name).toBe('move');
    expect(nemesisFor('move,kill', ['t'])?.name).toBe('move+kill');
  });

  it('moves a voter of a table range to a node without one; the merge nemesis colocates before merging', async () => {
    const c = new pg.Client({ connectionString: target.nodes[0]!.sqlUrl });
    await c.connect();
    await c.query('CREATE TABLE mv (k INT PRIMARY KEY, v INT)');
    await c.query('INSERT INTO mv VALUES (1, 1), (500, 500), (900, 900)');
    await c.query('ALTER TABLE mv SPLIT AT VALUES (500)');
    const ctx = { target, prng: new Prng(11), log: () => undefined };
    const move = new MoveNemesis(['mv']);
    // Right after bootstrap every range may still have a replica on all four nodes (the
    // replicate queue down-replicates to three): until then the nemesis finds nothing to move.
    const ev = await waitFor('a replica move', 60_000, async () => {
      const s = await move.start(ctx);
      await move.stop(ctx);
      return s.evidence.find((e) => /replicas n/.test(e));
    });
    const m = /^r\d+ replicas ([n\d,]+) → ([n\d,]+)$/.exec(ev);
    expect(m, ev).not.toBeNull();
    expect(m![1]).not.toEqual(m![2]);
    const rows = (await c.query<{ k: number }>('SELECT k FROM mv ORDER BY k')).rows.map((r) => Number(r.k));
    expect(rows).toEqual([1, 500, 900]);

    // Make the two ranges of mv hold different voters, then merge them through the nemesis.
    const ranges = (await c.query<{ range_id: string; replicas: string; start_key: string }>('SHOW RANGES FROM TABLE mv')).rows;
    expect(ranges.length).toBeGreaterThanOrEqual(2);
    await c.end();
    const merge = new MergeNemesis();
    const before = (await clusterRanges(target.nodes))!.length;
    const res = await waitFor('a merge', 60_000, async () => {
      const s = await merge.start(ctx);
      await merge.stop(ctx);
      return s.evidence.some((e) => /^merge: ok/.test(e)) ? s.evidence : undefined;
    });
    expect(res.every((e) => !/error/.test(e)), res.join('; ')).toBe(true);
    expect((await clusterRanges(target.nodes))!.length).toBeLessThanOrEqual(before);
    console.log(`move: ${ev}; merge: ${res.join('; ')}`);
  }, 150_000);
});
