/**
 * PgConn with the real Session (sql/session over MemoryKV): Bind, Describe
 * and Flush of a prepared statement are handled synchronously — their
 * answers reach the transport before feed() returns, no promise or
 * microtask turn in between — so the Bind/Describe/Execute/Sync of each
 * execution (what node-postgres sends per query) suspends only for Execute
 * and Sync (issue #8: CPU per YCSB read). The extended-protocol error rule
 * (§55.2.3) still holds for a Bind that fails synchronously.
 */
import { describe, expect, it } from 'vitest';
import { serialize } from 'pg-protocol';
import { PgConn } from '../../sql/pgwire/conn.js';
import { CancelRegistry } from '../../sql/pgwire/cancel-registry.js';
import { createSqlServer } from '../../sql/server-entry.js';
import { Prng } from '../../src/util/index.js';
import { MemoryKV } from '../support/memory-kv.js';
import { MemoryTransport, names } from './conn-harness.js';
import { parseBackend } from './pg-peer.js';

async function connect(): Promise<{ conn: PgConn; t: MemoryTransport; fresh: () => string[] }> {
  const sql = await createSqlServer(new MemoryKV(), { insecure: true });
  const t = new MemoryTransport();
  const prng = new Prng(3);
  const conn = new PgConn(t, { factory: sql.factory, cancelRegistry: new CancelRegistry(), random: (n) => prng.bytes(n) });
  let seen = 0;
  const fresh = (): string[] => {
    const b = Buffer.concat(t.out.slice(seen));
    seen = t.out.length;
    return b.length === 0 ? [] : names(parseBackend(b));
  };
  conn.feed(serialize.startup({ user: 'root', database: 'defaultdb' }));
  await conn.whenIdle();
  conn.feed(serialize.query('CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)'));
  await conn.whenIdle();
  conn.feed(serialize.query("INSERT INTO kv VALUES ('a', 'x')"));
  await conn.whenIdle();
  conn.feed(serialize.parse({ name: 's', text: 'SELECT * FROM kv WHERE k = $1' }));
  conn.feed(serialize.sync());
  await conn.whenIdle();
  fresh();
  return { conn, t, fresh };
}

describe('pgwire: synchronous Bind / Describe / Flush (issue #8)', () => {
  it('answers Bind, Describe portal and Flush before feed() returns; Execute and Sync follow', async () => {
    const { conn, fresh } = await connect();
    conn.feed(Buffer.concat([serialize.bind({ statement: 's', values: ['a'] }), serialize.describe({ type: 'P' }), serialize.flush()]));
    // Nothing awaited: what is here was written synchronously.
    expect(fresh()).toEqual(['bindComplete', 'rowDescription']);
    conn.feed(Buffer.concat([serialize.execute(), serialize.sync()]));
    await conn.whenIdle();
    expect(fresh()).toEqual(['dataRow', 'commandComplete', 'readyForQuery']);
  });

  it('a Bind that fails synchronously still sends one ErrorResponse and skips to Sync', async () => {
    const { conn, fresh } = await connect();
    conn.feed(Buffer.concat([serialize.bind({ statement: 'missing', values: [] }), serialize.describe({ type: 'P' }), serialize.execute(), serialize.sync()]));
    await conn.whenIdle();
    expect(fresh()).toEqual(['error', 'readyForQuery']);
    conn.feed(Buffer.concat([serialize.bind({ statement: 's', values: ['a'] }), serialize.execute(), serialize.sync()]));
    await conn.whenIdle();
    expect(fresh()).toEqual(['bindComplete', 'dataRow', 'commandComplete', 'readyForQuery']);
  });
});
