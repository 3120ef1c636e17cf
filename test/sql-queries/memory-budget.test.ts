/**
 * The per-query memory budget: a cartesian join feeding a buffering operator
 * fails with 53200 instead of growing the process, the failing session and a
 * second session keep serving, and the budget is a session setting.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { QueryMemory, parseBytes, rowBytes } from '../../sql/exec/memory-budget.js';

describe('per-query memory budget', () => {
  let srv: TestSqlServer;
  beforeAll(async () => {
    srv = await startSqlServer();
  }, 30_000);
  afterAll(async () => {
    await srv?.stop();
  });

  it('parses sizes and accounts rows', () => {
    expect(parseBytes('64MB')).toBe(64 * 1024 * 1024);
    expect(parseBytes('512kB')).toBe(512 * 1024);
    expect(parseBytes('1000')).toBe(1000);
    expect(parseBytes('lots')).toBeUndefined();
    const m = new QueryMemory(1000);
    m.grow(rowBytes([1, 'abc', null]), 'test');
    expect(m.used).toBeGreaterThan(0);
    expect(() => m.grow(2000, 'test')).toThrow(expect.objectContaining({ sqlState: '53200' }) as Error);
  });

  it('a cartesian join over big tables fails with 53200 and the node keeps serving', async () => {
    const a = new pg.Client(srv.url);
    const b = new pg.Client(srv.url);
    await a.connect();
    await b.connect();
    try {
      await a.query('CREATE TABLE big (id INT PRIMARY KEY, pad TEXT)');
      const values = Array.from({ length: 1500 }, (_, i) => `(${i}, 'row-${i}-padding-padding')`).join(', ');
      await a.query(`INSERT INTO big VALUES ${values}`);
      await a.query("SET query_memory_budget = '16MB'");
      const before = process.memoryUsage().heapUsed;
      const err = await a.query('SELECT DISTINCT x.pad, y.pad FROM big x, big y').then(
        () => undefined,
        (e: unknown) => e as { code?: string; message?: string },
      );
      expect(err?.code).toBe('53200');
      expect(err?.message).toMatch(/memory budget exceeded/);
      // Hash join build side and GROUP BY are charged too.
      const err2 = await a.query('SELECT x.id, y.id, count(*) FROM big x CROSS JOIN big y GROUP BY x.id, y.id').then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
      expect(err2?.code).toBe('53200');
      // Both sessions still serve.
      expect((await a.query('SELECT count(*) AS n FROM big')).rows[0].n).toBe('1500');
      expect((await b.query('SELECT count(*) AS n FROM big x JOIN big y ON x.id = y.id')).rows[0].n).toBe('1500');
      expect(process.memoryUsage().heapUsed - before).toBeLessThan(512 * 1024 * 1024);
      expect(srv.internalErrors).toEqual([]);
    } finally {
      await a.end();
      await b.end();
    }
  }, 60_000);
});
