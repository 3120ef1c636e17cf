/**
 * Issue 6 "Must show" 3 on the real transactional KV (3-node in-process
 * cluster, src/kv TxnDB), through two SQL nodes each with its own catalog
 * cache: two conflicting explicit transactions — the loser gets 40001
 * "restart transaction: …"; a SAVEPOINT cockroach_restart retry loop
 * succeeds; a table created through one node is visible through the other.
 */
import { describe, it, expect } from 'vitest';
import { errorOf } from './pg-helpers.js';
import { realKvSql } from './real-kv-support.js';

const sql = realKvSql();

describe('transactions on the real KV', () => {
  it('40001 between conflicting transactions, a cockroach_restart loop, and schema changes across SQL nodes', async () => {
    const { dbs } = await sql.start();
    for (const db of [dbs[0], dbs[1]]) await sql.server(db!);
    const [a, b] = await Promise.all(sql.servers.map((s) => sql.client(s)));
    if (a === undefined || b === undefined) throw new Error('clients');
    await a.query('CREATE TABLE acct (id INT PRIMARY KEY, v INT)');
    await a.query('INSERT INTO acct VALUES (1, 100)');

    // Two read-modify-write transactions on one row: exactly one commits.
    await a.query('BEGIN');
    await b.query('BEGIN');
    expect((await a.query('SELECT v FROM acct WHERE id = 1')).rows).toEqual([{ v: 100 }]);
    expect((await b.query('SELECT v FROM acct WHERE id = 1')).rows).toEqual([{ v: 100 }]);
    await a.query('UPDATE acct SET v = v + 1 WHERE id = 1');
    const bUpdate = b.query('UPDATE acct SET v = v + 10 WHERE id = 1').then(
      () => undefined,
      (e: { code: string; message: string }) => e,
    );
    await a.query('COMMIT');
    const bErr = (await bUpdate) ?? (await errorOf(b.query('COMMIT')));
    expect(bErr.code).toBe('40001');
    expect(bErr.message).toMatch(/^restart transaction: /);
    await b.query('ROLLBACK');
    expect((await b.query('SELECT v FROM acct WHERE id = 1')).rows).toEqual([{ v: 101 }]);

    // The client-side retry protocol.
    let attempts = 0;
    await a.query('BEGIN');
    await a.query('SAVEPOINT cockroach_restart');
    for (;;) {
      attempts++;
      try {
        const { rows } = await a.query('SELECT v FROM acct WHERE id = 1');
        if (attempts === 1) await b.query('UPDATE acct SET v = v + 100 WHERE id = 1');
        await a.query('UPDATE acct SET v = $1 WHERE id = 1', [rows[0].v + 1]);
        await a.query('RELEASE SAVEPOINT cockroach_restart');
        await a.query('COMMIT');
        break;
      } catch (e) {
        expect((e as { code: string }).code).toBe('40001');
        if (attempts > 5) throw e;
        await a.query('ROLLBACK TO SAVEPOINT cockroach_restart');
      }
    }
    expect(attempts).toBe(2);
    expect((await b.query('SELECT v FROM acct WHERE id = 1')).rows).toEqual([{ v: 202 }]);

    // A schema change through one SQL node is seen by the other's next statement.
    await a.query('CREATE TABLE t2 (k INT PRIMARY KEY)');
    await a.query('INSERT INTO t2 VALUES (5)');
    expect((await b.query('SELECT k FROM t2')).rows).toEqual([{ k: 5 }]);
    for (const s of sql.servers) expect(s.internalErrors).toEqual([]);
  }, 120_000);
});
