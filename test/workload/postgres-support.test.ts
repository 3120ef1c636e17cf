// test/support/postgres.ts: the throwaway server others compare against.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { startPostgres } from '../support/postgres.js';

describe('startPostgres', () => {
  it('starts a durable PostgreSQL on 127.0.0.1 and removes it on stop', async () => {
    const server = await startPostgres();
    try {
      expect(server.version).toMatch(/^PostgreSQL \d+/);
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      const settings = await client.query(
        "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'listen_addresses') ORDER BY name",
      );
      expect(Object.fromEntries(settings.rows.map((r) => [r.name, r.setting]))).toEqual({
        fsync: 'on',
        listen_addresses: '127.0.0.1',
        synchronous_commit: 'on',
      });
      await client.end();
    } finally {
      await server.stop();
    }
    expect(existsSync(server.dataDir)).toBe(false);
    await server.stop(); // idempotent
  });
});

describe('startPostgres on a taken port', () => {
  it('fails with the server log when the requested port is in use', async () => {
    const first = await startPostgres();
    try {
      await expect(startPostgres({ port: first.port, readyTimeoutMs: 20_000 })).rejects.toThrow(/another server|exited during startup/);
    } finally {
      await first.stop();
    }
  });
});
