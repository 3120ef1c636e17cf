/**
 * GET /_status/locks and the transaction/pusher counters of /_status/vars on a
 * real one-node cluster: a transaction holding an intent blocks another's read;
 * while it does, the leaseholder's lock table shows the holder and the reader's
 * coordinator counts a pusher waiting; once the holder commits, the reader gets
 * the row, the waiting gauge is back to 0 and the lock is gone; the
 * leaseholder counted the wait and its hand-back to the pusher
 * (cairn_kv_lock_waits_total, cairn_kv_push_handoffs_total). These are the
 * views used to find what a stalled jepsen workload waits on (issue 9).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { parsePrometheusText } from '../../src/server/metrics.js';
import type { LockTableStatus } from '../../src/server/node.js';
import { ProcessCluster } from '../support/process-cluster.js';

describe('/_status/locks and txn counters', () => {
  let c: ProcessCluster;
  const clients: pg.Client[] = [];

  beforeAll(async () => {
    c = await ProcessCluster.start({ nodes: 1 });
  }, 90_000);

  afterAll(async () => {
    for (const cl of clients) await cl.end().catch(() => undefined);
    await c?.close();
  });

  const connect = async (): Promise<pg.Client> => {
    const cl = new pg.Client({ host: '127.0.0.1', port: c.node(0).spec.sqlPort, user: 'root', database: 'defaultdb' });
    await cl.connect();
    clients.push(cl);
    return cl;
  };
  const vars = async (): Promise<(name: string) => number> => {
    const r = await c.http(0, '/_status/vars');
    const { samples } = parsePrometheusText(r.body);
    return (name) => samples.find((s) => s.name === name)?.value ?? NaN;
  };
  const locks = async (): Promise<LockTableStatus[]> => JSON.parse((await c.http(0, '/_status/locks')).body) as LockTableStatus[];
  /** Polls until `cond` holds (bounded). */
  const until = async <T>(what: string, f: () => Promise<T>, cond: (v: T) => boolean, ms = 20_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await f();
      if (cond(v)) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it('shows the holder of a lock while a reader waits on it, and nothing once it commits', async () => {
    const holder = await connect();
    const reader = await connect();
    await holder.query('CREATE TABLE sl (id INT PRIMARY KEY, v INT)');
    const v0 = await vars();
    expect(v0('cairn_txn_pushers_waiting')).toBe(0);
    expect(v0('cairn_sql_open_connections')).toBeGreaterThanOrEqual(2);

    await holder.query('BEGIN');
    await holder.query('INSERT INTO sl VALUES (1, 10)');
    const read = reader.query('SELECT v FROM sl');

    // The read waits in the lock table, then (the holder outliving the push delays) in its coordinator's pusher.
    await until('a waiting pusher', vars, (v) => v('cairn_txn_pushers_waiting') >= 1);
    const during = await locks();
    const r1 = during.find((l) => l.held > 0);
    expect(r1, JSON.stringify(during)).toBeDefined();
    expect(r1?.isLeaseholder).toBe(true);
    expect(r1?.dump).toMatch(/holder: txn: [0-9a-f]{8} epoch: 0 ts: \S+ replicated/);
    const pushing = await vars();
    expect(pushing('cairn_txn_pushes_total')).toBeGreaterThanOrEqual(1);
    // The leaseholder's contention counters (ReplicaConcurrency.counters): the read queued on the lock, then went
    // back to its client to push (the holder outlived the push delays).
    expect(pushing('cairn_kv_lock_waits_total')).toBeGreaterThanOrEqual(1);
    expect(pushing('cairn_kv_push_handoffs_total')).toBeGreaterThanOrEqual(1);

    await holder.query('COMMIT');
    expect((await read).rows).toEqual([{ v: 10 }]);
    const after = await until('the waiting gauge back to 0', vars, (v) => v('cairn_txn_pushers_waiting') === 0);
    expect(after('cairn_txn_commits_total')).toBeGreaterThanOrEqual(1);
    expect(after('cairn_txn_lock_wait_timeouts_total')).toBe(0);
    await until('the lock released', locks, (ls) => ls.every((l) => l.held === 0));
  }, 60_000);
});
