/**
 * Descriptor leases (sql/catalog/lease-manager.ts) on the real KV: a 3-node
 * in-process cluster, SQL gateways on nodes 1, 2 and 3, each KV client
 * behind a DistSender that counts what it sends.
 *
 *   - steady state: a prepared point SELECT is ONE KV batch and touches no
 *     /System key (before leases, every statement also read the schema
 *     version key, on the system range: two RPCs); a prepared single-row
 *     UPDATE is its read and its 1PC write, no /System key either;
 *   - DDL on one node while another runs DML: the DML loop never fails, and a
 *     statement started after the DDL returned sees the new schema (no half-
 *     applied change, no stale lease);
 *   - a gateway whose lease tick stalls keeps its lease to expiration: a DDL
 *     elsewhere commits only after that expiration (HLC order, not a timing),
 *     and the stalled gateway's next statement does not use the stale lease;
 *   - a prepared SELECT * re-planned under a wider table: 0A000 (PostgreSQL's
 *     "cached plan must not change result type"), not a row wider than its
 *     RowDescription;
 *   - fences: another node's live fence stops every lease use until it goes;
 *     one left behind by a schema change that died is cleared by the next
 *     tick once it expired, and leases resume; the list's byte format round-
 *     trips and refuses truncated values;
 *   - the KV commit deadline (KVTxn.setDeadline) refuses to commit at or above it.
 * Issue 6 (descriptor caching with versioned leases, DESIGN.md §3 "SQL").
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { TestCluster, type TestClusterOptions } from '../support/test-cluster.js';
import { startTxnCluster, distSender } from '../kv-txn/support.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { TxnDB } from '../../src/kv/client/txn-db.js';
import { Prng } from '../../src/util/prng.js';
import { tsLess } from '../../src/util/hlc.js';
import type { BatchRequest } from '../../src/kv/api.js';
import { SYSTEM_SPAN, prettyKey } from '../../storage/keys.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { KVBatch } from '../../sql/kv.js';
import { FENCE_LIST_KEY, decodeFenceList, encodeFenceList, type LeaseManager } from '../../sql/catalog/lease-manager.js';
import { errorOf } from './pg-helpers.js';

interface Counted {
  readonly db: TxnDB;
  /** Every batch sent, as the pretty keys of its requests. */
  readonly sent: string[][];
}

function countingDb(c: TestCluster, i: number): Counted {
  const ds = distSender(c, i);
  const sent: string[][] = [];
  const sender = new Proxy(ds, {
    get(target, prop, receiver) {
      if (prop === 'send') {
        return (ba: BatchRequest) => {
          sent.push(ba.requests.map((r) => `${r.kind} ${'key' in r && r.key instanceof Buffer ? prettyKey(r.key) : ''}`));
          return target.send(ba);
        };
      }
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { db: new TxnDB({ sender, clock: c.node(i).clock, nodeId: i + 1, prng: new Prng(2000 + i) }), sent };
}

const isSystem = (k: string): boolean => k.includes(' /System');

async function within<T>(what: string, ms: number, f: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let cluster: TestCluster | undefined;
const servers: TestSqlServer[] = [];
const clients: pg.Client[] = [];
let counted: Counted[] = [];

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  for (const s of servers) await s.stop();
  await cluster?.close();
});

function leasesOf(i: number): LeaseManager {
  const l = servers[i]?.sql.leases;
  if (l === undefined) throw new Error('leases off');
  return l;
}

/** Runs statements until one runs on node i's lease (after a DDL, leases come back at the next tick). */
async function untilLeased(c: pg.Client, i: number, sql: string, params: unknown[] = []): Promise<void> {
  await within(`a lease on node ${i + 1}`, 20_000, async () => {
    const before = leasesOf(i).stats.uses;
    await c.query(sql, params);
    return leasesOf(i).stats.uses > before ? true : undefined;
  });
}

describe('descriptor leases', () => {
  beforeAll(async () => {
    await startTxnCluster(async (o: TestClusterOptions) => (cluster = await TestCluster.start(o)));
    const c = cluster as TestCluster;
    counted = [0, 1, 2].map((i) => countingDb(c, i));
    // Node 3's lease is short, for the stalled-gateway case.
    const durations = [20_000, 20_000, 1_500];
    for (let i = 0; i < 3; i++) {
      servers.push(await startSqlServer({ insecure: true, db: (counted[i] as Counted).db, descriptorLeases: { durationMs: durations[i] as number, tickMs: 20 } }));
      const cl = new pg.Client((servers[i] as TestSqlServer).url);
      await cl.connect();
      clients.push(cl);
    }
    const a = clients[0] as pg.Client;
    await a.query('CREATE TABLE kv (k INT PRIMARY KEY, v INT NOT NULL)');
    await a.query(`INSERT INTO kv VALUES ${Array.from({ length: 20 }, (_, i) => `(${i + 1}, 0)`).join(', ')}`);
  }, 120_000);

  it('a steady-state point SELECT is one KV batch with no catalog read; an UPDATE is its read and its 1PC write', async () => {
    const a = clients[0] as pg.Client;
    const sel = { name: 'sel', text: 'SELECT v FROM kv WHERE k = $1', values: [1] };
    const upd = { name: 'upd', text: 'UPDATE kv SET v = $1 WHERE k = $2', values: [0, 1] };
    await untilLeased(a, 0, sel.text, sel.values);
    await a.query(sel);
    await a.query(upd);
    // Freeze the lease (no background renewal traffic in the count) with plenty of it left.
    const leases = leasesOf(0);
    await leases.tick();
    leases.stop();
    try {
      const sent = (counted[0] as Counted).sent;
      const uses = leases.stats.uses;
      sent.length = 0;
      const N = 20;
      for (let i = 0; i < N; i++) expect((await a.query({ ...sel, values: [1 + (i % 20)] })).rows).toEqual([{ v: 0 }]);
      expect(leases.stats.uses - uses).toBe(N);
      expect(sent.length).toBe(N);
      expect(sent.flat().filter(isSystem)).toEqual([]);

      sent.length = 0;
      for (let i = 0; i < N; i++) expect((await a.query({ ...upd, values: [i, 1 + (i % 20)] })).rowCount).toBe(1);
      expect(sent.flat().filter(isSystem)).toEqual([]);
      // One locking read and one 1PC batch (writes + EndTxn) per UPDATE; nothing else (no heartbeat, no record).
      expect(sent.length).toBe(2 * N);
      expect(sent.map((b) => b.map((r) => r.split(' ')[0]))).toEqual(Array.from({ length: N }, () => [['get'], ['put', 'endTxn']]).flat());
    } finally {
      leases.start();
    }
  }, 60_000);

  it('DDL through one node while another runs DML: no error, and the next statement sees the new schema', async () => {
    const [a, b] = clients as [pg.Client, pg.Client];
    await untilLeased(a, 0, 'SELECT v FROM kv WHERE k = 1');
    let stop = false;
    const errors: unknown[] = [];
    let iterations = 0;
    const loop = (async () => {
      for (let i = 0; !stop; i++) {
        try {
          await a.query({ name: 'u2', text: 'UPDATE kv SET v = v + 1 WHERE k = $1', values: [1 + (i % 20)] });
          await a.query({ name: 's2', text: 'SELECT k, v FROM kv WHERE k = $1', values: [1 + (i % 20)] });
          iterations++;
        } catch (e) {
          errors.push(e);
        }
      }
    })();
    const usesBefore = leasesOf(0).stats.uses;
    try {
      await within('DML running', 20_000, async () => (iterations > 3 ? true : undefined));
      const star = { name: 'star', text: 'SELECT * FROM kv WHERE k = $1', values: [1] };
      expect((await a.query(star)).fields.length).toBe(2);
      await b.query('ALTER TABLE kv ADD COLUMN w INT NOT NULL DEFAULT 7');
      // A prepared statement's result shape is fixed at Parse (PostgreSQL: 0A000), the connection stays usable.
      expect((await errorOf(a.query(star))).code).toBe('0A000');
      // Started after the ALTER returned: must see w, on either node.
      expect((await a.query('SELECT k, v >= 0 AS ok, w FROM kv WHERE k = 2')).rows).toEqual([{ k: 2, ok: true, w: 7 }]);
      await b.query('CREATE INDEX kv_v ON kv (v)');
      await b.query('ALTER TABLE kv DROP COLUMN w');
      const after = await a.query('SELECT * FROM kv WHERE k = 3');
      expect(after.fields.map((f) => f.name)).toEqual(['k', 'v']);
      const n = iterations;
      await within('DML after the DDL', 20_000, async () => (iterations > n + 3 ? true : undefined));
    } finally {
      stop = true;
      await loop;
    }
    expect(errors).toEqual([]);
    // The loop ran on the lease between the schema changes.
    expect(leasesOf(0).stats.uses).toBeGreaterThan(usesBefore);
    expect(leasesOf(1).stats.fences).toBeGreaterThanOrEqual(3);
  }, 120_000);

  it('a gateway whose lease tick stalls: the DDL commits after its lease expires and it does not use the stale lease', async () => {
    const [a, , c3] = clients as [pg.Client, pg.Client, pg.Client];
    const l3 = leasesOf(2);
    await untilLeased(c3, 2, 'SELECT * FROM kv WHERE k = 1');
    l3.stop(); // no tick: node 3 never sees the fence and keeps its lease until it expires
    const stale = (l3 as unknown as { lease?: { expiration: { wall: number; logical: number } } }).lease?.expiration;
    expect(stale).toBeDefined();
    try {
      await a.query('ALTER TABLE kv ADD COLUMN z INT NOT NULL DEFAULT 9');
      // The ALTER committed above the stalled lease's expiration: its node's clock is past it.
      expect(tsLess(stale as { wall: number; logical: number }, (counted[0] as Counted).db.now())).toBe(true);
      const uses = l3.stats.uses;
      expect((await c3.query('SELECT k, z FROM kv WHERE k = 4')).rows).toEqual([{ k: 4, z: 9 }]);
      expect(l3.stats.uses).toBe(uses); // fell back to reading the schema version
    } finally {
      l3.start();
    }
    await untilLeased(c3, 2, 'SELECT k, z FROM kv WHERE k = 5');
  }, 120_000);

  it('a live fence stops lease use; an expired one (its schema change died) is cleared and leases resume', async () => {
    const a = clients[0] as pg.Client;
    const db = (counted[1] as Counted).db;
    // Adds (or, null, removes) a fence in the list as a schema change would: read-modify-write of the one key.
    const put = (token: string, wallMicros: number | null): Promise<void> =>
      db.runTxn(async (t) => {
        const g = new KVBatch();
        g.get(FENCE_LIST_KEY);
        const [r] = await t.run(g);
        const rest = decodeFenceList(r?.kind === 'get' ? r.value : null).filter((f) => f.token !== token);
        const next = wallMicros === null ? rest : [...rest, { token, expiration: { wall: wallMicros, logical: 0 } }];
        const v = encodeFenceList(next);
        const b = new KVBatch();
        if (v === null) b.del(FENCE_LIST_KEY);
        else b.put(FENCE_LIST_KEY, v);
        await t.commitInBatch(b);
      });
    await untilLeased(a, 0, 'SELECT k FROM kv WHERE k = 1');
    await put('live-test', db.now().wall + 600_000_000);
    try {
      // Once node 1's tick saw the fence, its statements stop using the lease.
      await within('the fence seen', 20_000, async () => {
        const before = leasesOf(0).stats.uses;
        await a.query('SELECT k FROM kv WHERE k = 1');
        return leasesOf(0).stats.uses === before && leasesOf(0).leasedVersion() === undefined ? true : undefined;
      });
    } finally {
      await put('live-test', null);
    }
    await untilLeased(a, 0, 'SELECT k FROM kv WHERE k = 1');
    // A fence whose expiration passed: deleted by a tick, no lease held back.
    await put('dead-test', db.now().wall - 1);
    await untilLeased(a, 0, 'SELECT k FROM kv WHERE k = 1');
    await within('the expired fence deleted', 20_000, async () => {
      const t = db.newTxn({ readOnly: true });
      const b = new KVBatch();
      b.get(FENCE_LIST_KEY);
      const [r] = await t.commitInBatch(b);
      return r?.kind === 'get' && r.value === null ? true : undefined;
    });
  }, 120_000);

  it('schema changes on two nodes at once share the fence list: both commit, the list empties, leases resume everywhere', async () => {
    const [a, b, c3] = clients as [pg.Client, pg.Client, pg.Client];
    await untilLeased(c3, 2, 'SELECT k FROM kv WHERE k = 1');
    const db = (counted[2] as Counted).db;
    const listed = async (): Promise<string[]> => {
      const t = db.newTxn({ readOnly: true });
      const g = new KVBatch();
      g.get(FENCE_LIST_KEY);
      const [r] = await t.commitInBatch(g);
      return decodeFenceList(r?.kind === 'get' ? r.value : null).map((f) => f.token);
    };
    // Both fence() calls read-modify-write the one key; one of the two transactions retries.
    const fencesBefore = leasesOf(0).stats.fences + leasesOf(1).stats.fences;
    for (let round = 0; round < 3; round++) {
      await Promise.all([a.query(`CREATE TABLE par_a${round} (k INT PRIMARY KEY)`), b.query(`CREATE TABLE par_b${round} (k INT PRIMARY KEY)`)]);
    }
    expect(leasesOf(0).stats.fences + leasesOf(1).stats.fences - fencesBefore).toBe(6);
    expect(await listed()).toEqual([]);
    for (const [i, cl] of [a, b, c3].entries()) await untilLeased(cl, i, 'SELECT count(*) FROM par_a2');
  }, 120_000);

  it('the fence list value: round-trips (several fences, multi-byte tokens), empty is no key, malformed is refused', () => {
    const fences = [
      { token: '1.7.1700000000000000', expiration: { wall: 1_700_000_300_000_000, logical: 3 } },
      { token: 'nœud-2.1', expiration: { wall: 2 ** 53 - 1, logical: 0xffffffff } },
      { token: '', expiration: { wall: 0, logical: 0 } },
    ];
    const v = encodeFenceList(fences) as Buffer;
    expect(decodeFenceList(v)).toEqual(fences);
    expect(encodeFenceList([])).toBeNull();
    expect(decodeFenceList(null)).toEqual([]);
    for (let n = 0; n < v.length; n++) expect(() => decodeFenceList(v.subarray(0, n))).toThrow(/fence list/);
    expect(() => decodeFenceList(Buffer.concat([v, Buffer.from([0])]))).toThrow(/fence list/);
  });

  it('KVTxn.setDeadline: a commit at or above the deadline fails with 40001 and writes nothing', async () => {
    const db = (counted[0] as Counted).db;
    const key = Buffer.from('\xfe\x01deadline-probe', 'latin1');
    expect(compareBytes(key, SYSTEM_SPAN.endKey) > 0).toBe(true);
    const late = db.newTxn();
    late.setDeadline(late.readTimestamp()); // reached by the txn's own timestamp
    const b = new KVBatch();
    b.put(key, Buffer.from('x'));
    const err = await late.commitInBatch(b).then(
      () => undefined,
      (e: { sqlState?: string; message: string }) => e,
    );
    expect(err?.sqlState).toBe('40001');
    expect(err?.message).toMatch(/RETRY_COMMIT_DEADLINE/);
    await late.rollback();
    const r = db.newTxn({ readOnly: true });
    const g = new KVBatch();
    g.get(key);
    expect(await r.commitInBatch(g)).toEqual([{ kind: 'get', value: null }]);
    const ok = db.newTxn();
    ok.setDeadline({ wall: db.now().wall + 60_000_000, logical: 0 });
    const b2 = new KVBatch();
    b2.put(key, Buffer.from('y'));
    await ok.commitInBatch(b2);
  }, 60_000);
});
