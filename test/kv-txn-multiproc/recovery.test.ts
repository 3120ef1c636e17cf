/**
 * Parallel-commit recovery on real processes (issue 5, must show 4, second
 * half): the coordinating node's process dies between the STAGING write and
 * the client's acknowledgement (src/kv/crash-point.ts, CAIRN_CRASH_POINT set
 * on that node only), and a transaction through another node meets the
 * intents, finds the STAGING record whose heartbeat expired, runs recovery
 * and lands on the right outcome:
 *   - after-staging: every in-flight write was acknowledged → COMMITTED, both
 *     rows visible everywhere (the client itself never heard);
 *   - staging-only: the second range's write never left the coordinator (the
 *     first range's did) → recovery prevents it → ABORTED, no row visible.
 * The table is split so the two rows of one INSERT live on two ranges (a
 * 1-range INSERT commits in one phase and never stages). The statement is an
 * implicit INSERT … ON CONFLICT DO NOTHING: its reads go first and its writes
 * alone form the commit batch (a plain implicit INSERT runs its writes, then
 * a bare commit — no parallel commit). Needs dist/ (npm test builds first).
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import type pg from 'pg';
import { ProcessCluster } from '../support/process-cluster.js';
import { transactionKey } from '../../storage/keys.js';
import { decodeTxnRecord } from '../../src/kv/txn-record.js';
import type { TxnRecordStatus } from '../../src/kv/txn-api.js';
import { connect, waitFor } from './support.js';

let c: ProcessCluster;
const COORD = 2; // the node whose process dies
const hexOf = (s: string): string => Buffer.from(s, 'utf8').toString('hex');

beforeAll(async () => {
  c = await ProcessCluster.start({ nodes: 3 });
  const a = await connect(c, 0);
  try {
    await a.query('CREATE TABLE rec (k STRING PRIMARY KEY, v INT NOT NULL)');
    await a.query(`ALTER TABLE rec SPLIT AT VALUES ('m')`);
    await a.query('ALTER TABLE rec SCATTER');
  } finally {
    await a.end();
  }
}, 120_000);

afterAll(async () => {
  await c?.close();
});

/**
 * Restarts the coordinator with the crash point armed for `marker`, runs the
 * 2-range INSERT through it, and waits for its process to die at the point.
 * Returns the error the client saw and the transaction record's key (from the
 * crash point's line: transactionKey(anchor, id)).
 */
async function insertThroughDoomedCoordinator(point: string, marker: string, keys: readonly [string, string]): Promise<{ err: unknown; recordKey: Buffer }> {
  c.node(COORD).env = { CAIRN_CRASH_POINT: `${point}:${hexOf(marker)}` };
  await c.restart(COORD);
  c.node(COORD).env = {};
  const doomed = await connect(c, COORD);
  let err: unknown = null;
  try {
    await doomed.query('INSERT INTO rec VALUES ($1, 1), ($2, 2) ON CONFLICT (k) DO NOTHING', [keys[0], keys[1]]);
  } catch (e) {
    err = e;
  } finally {
    await doomed.end().catch(() => undefined);
  }
  await waitFor(`n${COORD + 1} to die at ${point}`, () => !c.node(COORD).running, 20_000);
  const m = new RegExp(`kv: crash point ${point} reached \\(txn ([0-9a-f]+) anchor ([0-9a-f]+)\\)`).exec(c.logs(COORD));
  expect(m, `n${COORD + 1} died at the crash point`).not.toBeNull();
  const [, id, anchor] = m as RegExpExecArray;
  return { err, recordKey: transactionKey(Buffer.from(anchor as string, 'hex'), Buffer.from(id as string, 'hex')) };
}

/** The record's status, read non-transactionally through node i's admin KV (a raw read: it resolves nothing). */
async function recordStatus(i: number, recordKey: Buffer): Promise<TxnRecordStatus | null> {
  const [r] = await c.kv(i, [{ op: 'get', key: recordKey.toString('hex') }]);
  expect(r?.ok, r?.message).toBe(true);
  return r?.value == null ? null : decodeTxnRecord(Buffer.from(r.value, 'hex')).status;
}

/** The rows of rec with the given keys, read through node i (a transaction that meets the dead coordinator's intents). */
async function rowsVia(i: number, keys: readonly string[]): Promise<{ k: string; v: number }[]> {
  const client = await connect(c, i);
  try {
    const r = await client.query<{ k: string; v: number }>('SELECT k, v FROM rec WHERE k = $1 OR k = $2 ORDER BY k', [keys[0], keys[1]]);
    return r.rows.map((row) => ({ k: row.k, v: Number(row.v) }));
  } finally {
    await client.end();
  }
}

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const out = await f();
  return [out, Math.round(performance.now() - t0)];
}

describe('coordinator death between STAGING and the acknowledgement', () => {
  it('after every in-flight write landed: another node recovers the record to COMMITTED, both writes visible', async () => {
    const keys = ['a-xq7commit', 'n-xq7commit'] as const;
    const { err, recordKey } = await insertThroughDoomedCoordinator('after-staging', 'xq7commit', keys);
    expect(err).not.toBeNull(); // the client was never answered: its connection died with the process
    expect(await recordStatus(0, recordKey)).toBe('staging');
    const [rows, ms] = await timed(() => rowsVia(0, keys));
    console.log(`recovery to COMMITTED: read through n1 took ${ms} ms (heartbeat expiry, push, RecoverTxn)`);
    expect(rows).toEqual([
      { k: keys[0], v: 1 },
      { k: keys[1], v: 2 },
    ]);
    expect(await recordStatus(1, recordKey)).toBe('committed');
    // The outcome is final: the other live node, and the coordinator once back, agree.
    expect(await rowsVia(1, keys)).toEqual(rows);
    await c.restart(COORD);
    expect(await rowsVia(COORD, keys)).toEqual(rows);
  }, 90_000);

  it('with the second range\'s write never sent: recovery prevents it and the record is ABORTED, no write visible', async () => {
    const keys = ['a-xq7abort', 'n-xq7abort'] as const;
    const { err, recordKey } = await insertThroughDoomedCoordinator('staging-only', 'xq7abort', keys);
    expect(err).not.toBeNull();
    expect(await recordStatus(0, recordKey)).toBe('staging');
    const [rows, ms] = await timed(() => rowsVia(1, keys));
    console.log(`recovery to ABORTED: read through n2 took ${ms} ms`);
    expect(rows).toEqual([]);
    expect(await recordStatus(0, recordKey)).toBe('aborted');
    expect(await rowsVia(0, keys)).toEqual([]);
    await c.restart(COORD);
    expect(await rowsVia(COORD, keys)).toEqual([]);
    // The keys are free again: a new INSERT of both commits (the aborted intents were cleaned up or are pushed aside).
    const a: pg.Client = await connect(c, 0);
    try {
      await a.query('INSERT INTO rec VALUES ($1, 10), ($2, 20)', [keys[0], keys[1]]);
    } finally {
      await a.end();
    }
    expect(await rowsVia(1, keys)).toEqual([
      { k: keys[0], v: 10 },
      { k: keys[1], v: 20 },
    ]);
  }, 90_000);
});
