/**
 * StatementCache: LRU by text for the simple protocol (DESIGN.md §3 "SQL").
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { initParser, parseSql, SqlError, StatementCache, type ParsedStatement } from '../../sql/parser/index.js';

describe('StatementCache', () => {
  beforeAll(async () => {
    await initParser();
  });

  it('parses once per text and shares the result', () => {
    let parses = 0;
    const cache = new StatementCache(8, 1024, (t) => {
      parses++;
      return parseSql(t);
    });
    const a = cache.get('SELECT * FROM t WHERE k = $1');
    const b = cache.get('SELECT * FROM t WHERE k = $1');
    expect(b).toBe(a);
    expect(parses).toBe(1);
    expect(cache.stats()).toEqual({ hits: 1, misses: 1, size: 1 });
    // Texts differing only in spacing are different keys.
    cache.get('SELECT *  FROM t WHERE k = $1');
    expect(parses).toBe(2);
  });

  it('evicts the least recently used entry when full', () => {
    const cache = new StatementCache(3);
    cache.get('SELECT 1');
    cache.get('SELECT 2');
    cache.get('SELECT 3');
    cache.get('SELECT 1'); // 1 is now the most recent; 2 is the oldest
    cache.get('SELECT 4');
    expect(cache.has('SELECT 2')).toBe(false);
    expect(cache.has('SELECT 1')).toBe(true);
    expect(cache.has('SELECT 3')).toBe(true);
    expect(cache.has('SELECT 4')).toBe(true);
    expect(cache.stats().size).toBe(3);
  });

  it("never holds more than maxEntries under a random workload and returns each text's statements", () => {
    const cache = new StatementCache(16);
    let seed = 7;
    for (let i = 0; i < 2000; i++) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const text = `SELECT ${seed % 40} FROM t`;
      const got: readonly ParsedStatement[] = cache.get(text);
      expect(got[0]?.sql).toBe(text);
      expect(cache.stats().size).toBeLessThanOrEqual(16);
    }
    const s = cache.stats();
    expect(s.hits + s.misses).toBe(2000);
    expect(s.hits).toBeGreaterThan(0);
  });

  it('does not cache errors or oversized texts', () => {
    let parses = 0;
    const cache = new StatementCache(8, 20, (t) => {
      parses++;
      return parseSql(t);
    });
    expect(() => cache.get('SELEC 1')).toThrow(SqlError);
    expect(() => cache.get('SELEC 1')).toThrow(SqlError);
    expect(cache.has('SELEC 1')).toBe(false);
    const long = 'SELECT 1 AS aaaaaaaaaaaaaaaaaaaaaaa';
    cache.get(long);
    cache.get(long);
    expect(cache.has(long)).toBe(false);
    expect(parses).toBe(4);
  });

  it('returns frozen statement lists that are safe to share', () => {
    const cache = new StatementCache(4);
    const list = cache.get('UPSERT INTO t VALUES (1); SELECT 2');
    expect(list.map((p) => p.ast.kind)).toEqual(['Insert', 'Select']);
    expect(Object.isFrozen(list)).toBe(true);
    expect(list.every((p) => Object.isFrozen(p))).toBe(true);
  });
});
