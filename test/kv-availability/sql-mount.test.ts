/**
 * A restarted node mounts SQL (and becomes ready) within a few seconds while
 * another node is cut off (issue 4: each mount attempt's catalog read used to
 * wait out a 10 s RPC timeout on the cut-off peer).
 *
 *   n_X: r1's leaseholder, cut off: it drops everything it sends, and the
 *        node that stays up drops what it sends to n_X
 *   n_Y: stopped (SIGTERM), then restarted with no faults of its own: its
 *        requests reach n_X, whose answers never come back
 *   n_Z: up throughout; with n_Y it is the majority that must serve
 *
 * Real processes from dist/ (build first), 2 s leases.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import type { RangeStatus } from '../../src/server/node.js';
import { ProcessCluster } from '../support/process-cluster.js';

let c: ProcessCluster;

beforeAll(async () => {
  c = await ProcessCluster.start({ nodes: 3 });
}, 120_000);

afterAll(async () => {
  await c?.close();
});

describe('SQL mount with a cut-off peer', () => {
  it('a restarted node is ready and serves SQL within a few seconds', async () => {
    const ids = await Promise.all([0, 1, 2].map(async (i) => (await c.json<{ nodeId: number }>(i, '/health')).nodeId));
    const ranges = await c.json<RangeStatus[]>(0, '/_status/ranges');
    const lh = ranges.find((r) => r.rangeId === 1)?.leaseholderNodeId;
    const X = Math.max(0, ids.indexOf(lh as number));
    const [Y, Z] = [0, 1, 2].filter((i) => i !== X) as [number, number];

    await c.stop(Y);
    for (const i of [Y, Z]) await c.json(X, '/_admin/faults', 'POST', { nodeId: ids[i], spec: { partition: true } });
    await c.json(Z, '/_admin/faults', 'POST', { nodeId: ids[X], spec: { partition: true } });

    const t0 = Date.now();
    await c.restart(Y);
    const readyMs = Date.now() - t0;
    const client = new pg.Client({ host: '127.0.0.1', port: c.node(Y).spec.sqlPort, user: 'root', database: 'defaultdb' });
    await client.connect();
    try {
      await client.query('CREATE TABLE mount_probe (k INT PRIMARY KEY, v INT)');
      await client.query('INSERT INTO mount_probe VALUES (1, 2)');
      const r = await client.query('SELECT v FROM mount_probe WHERE k = 1');
      expect(r.rows[0]?.v).toBe(2);
    } finally {
      await client.end();
    }
    console.log(`sql-mount: n${ids[Y]} ready ${readyMs} ms after its restart began (n${ids[X]} cut off)`);
    // Process start + lease expiry (2 s) + probes: ~4 s quiet, ~10 s at load ~22
    // (9,996 ms seen) — the machine's figure, printed, not asserted. The
    // regression this guards against never became ready (every mount
    // attempt's catalog read waited out a 10 s RPC timeout on n_X: not ready
    // after 60 s): c.restart's own readiness wait (60 s) fails on it, and the
    // SQL round trips above show the mount is real.
    expect(c.node(Y).running).toBe(true);
  }, 90_000);
});
