/**
 * A node whose SQL layer is not mounted yet (starting, or still joining) refuses a
 * PostgreSQL connection with 57P03 cannot_connect_now — PostgreSQL's "the database
 * system is starting up" — a retryable refusal, not 0A000 feature_not_supported;
 * a node whose clock is out of bounds still refuses with 58000. Real pgwire over a
 * real socket (node-postgres client), the node's own SqlServer and refusing factory.
 */
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { SqlServer, unmountedSessionFactory, type SqlServingState } from '../../src/server/sql-server.js';
import { silentLogger } from '../../src/util/log.js';
import { outcomeOfError } from '../../jepsen-style/history/outcome.js';

async function connectError(state: SqlServingState): Promise<{ code?: string; message: string }> {
  const server = new SqlServer(unmountedSessionFactory(state), silentLogger());
  const addr = await server.listen({ host: '127.0.0.1', port: 0 });
  const client = new pg.Client({ host: addr.host, port: addr.port, user: 'root', database: 'defaultdb', connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    throw new Error('connected to a node whose SQL layer is not mounted');
  } catch (e) {
    return e as { code?: string; message: string };
  } finally {
    await client.end().catch(() => undefined);
    await server.close();
  }
}

describe('SQL refusals while a node is not serving SQL', () => {
  it('SQL not mounted yet: 57P03 "node is starting", a definite fail for the jepsen clients', async () => {
    const e = await connectError({ notServingReason: () => null, isStarting: () => false });
    expect(e.code).toBe('57P03');
    expect(e.message).toMatch(/node is starting/);
    expect(outcomeOfError(e)).toBe('fail');
  });

  it('node still joining: 57P03 with the reason', async () => {
    const e = await connectError({ notServingReason: () => 'server: node is not serving yet (joining)', isStarting: () => true });
    expect(e.code).toBe('57P03');
    expect(e.message).toMatch(/not serving yet \(joining\)/);
  });

  it('clock beyond the max offset: still 58000', async () => {
    const e = await connectError({ notServingReason: () => 'server: n1 is not serving: its clock is beyond the max offset', isStarting: () => false });
    expect(e.code).toBe('58000');
  });
});
