/**
 * Parse + convert throughput (issue 6 target: ≥ 40,000/s for a point SELECT
 * on the 2-core reference machine; DESIGN.md §4 puts libpg-query's parseSync
 * alone at ~80,000/s). The measured rates are printed; the assertion is a
 * floor far below the target so that a shared, loaded machine does not fail
 * the suite — it catches order-of-magnitude regressions (e.g. the Cairn
 * layer's lexer pass running on the common path).
 */
import { parseSync } from 'libpg-query';
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parseSql, StatementCache } from '../../sql/parser/index.js';

const FLOOR_PER_SEC = 4_000;

function rate(fn: () => void, ms = 400): number {
  for (let i = 0; i < 2_000; i++) fn(); // warm up
  const start = performance.now();
  let n = 0;
  while (performance.now() - start < ms) {
    for (let i = 0; i < 200; i++) fn();
    n += 200;
  }
  return n / ((performance.now() - start) / 1000);
}

describe('parser throughput', () => {
  beforeAll(async () => {
    await initParser();
  });

  it('parses and converts point SELECTs, INSERTs and Cairn statements fast enough', () => {
    const select = 'SELECT * FROM usertable WHERE ycsb_key = $1';
    const insert = 'INSERT INTO usertable (ycsb_key, field0, field1) VALUES ($1, $2, $3)';
    const upsert = 'UPSERT INTO usertable (ycsb_key, field0) VALUES ($1, $2)';
    const pointSelect = rate(() => parseSql(select));
    const pointInsert = rate(() => parseSql(insert));
    const cairnUpsert = rate(() => parseSql(upsert));
    const cache = new StatementCache();
    const cached = rate(() => cache.get(select));
    const rawSelect = rate(() => parseSync(select));
    const fmt = (x: number): string => `${Math.round(x).toLocaleString('en-US')}/s`;
    console.log(
      `parser throughput: parseSync ${fmt(rawSelect)}; parse+convert point SELECT ${fmt(pointSelect)}, INSERT ${fmt(pointInsert)}, ` +
        `UPSERT (Cairn layer) ${fmt(cairnUpsert)}; cached SELECT ${fmt(cached)}`,
    );
    expect(pointSelect).toBeGreaterThan(FLOOR_PER_SEC);
    expect(pointInsert).toBeGreaterThan(FLOOR_PER_SEC);
    expect(cairnUpsert).toBeGreaterThan(FLOOR_PER_SEC / 4);
    expect(cached).toBeGreaterThan(pointSelect);
  });
});
