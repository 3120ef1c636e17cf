/**
 * SQL's range statements on a real 3-node in-process cluster (LevelDB
 * engines, real Raft and RPC): ALTER TABLE … SPLIT AT, SHOW RANGES FROM
 * TABLE / INDEX, ALTER TABLE … SCATTER through TxnDB.admin
 * (src/kv/client/kv-admin.ts) — issue 6, "SHOW RANGES FROM TABLE t,
 * ALTER TABLE t SPLIT AT VALUES (…)"; CockroachDB's ALTER TABLE … SCATTER.
 */
import { describe, it, expect, afterEach } from 'vitest';
import pg from 'pg';
import { bounds, type RangeRow } from './support.js';
import type { KVAdmin } from '../../sql/kv.js';
import { KVClusterAdmin } from '../../src/kv/client/kv-admin.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import type { RangeDescriptor, ScanResponse } from '../../src/kv/api.js';
import { decodeRangeDescriptor } from '../../src/kv/api-codec.js';
import { MAX_TIMESTAMP, ZERO_TIMESTAMP } from '../../src/util/hlc.js';
import { META2_MAX, META2_PREFIX } from '../../storage/keys.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { startTxnCluster } from '../kv-txn/support.js';

// KVClusterAdmin restates sql/kv.ts's KVAdmin structurally (src/kv may not import sql/).
const assignable: (a: KVClusterAdmin) => KVAdmin = (a) => a;
void assignable;

const start = autoCloseClusters();
let srv: TestSqlServer | undefined;
afterEach(async () => {
  await srv?.stop();
  srv = undefined;
});

/** A cluster whose TxnDBs move leases through the holder's store (the server does it through Node). */
async function cluster(isLive?: (nodeId: number) => boolean): Promise<{ c: TestCluster; ds: DistSender; client: pg.Client; moves: number[] }> {
  const { c, ds, dbs } = await startTxnCluster(start, { engine: 'level' });
  const moves: number[] = [];
  for (const db of dbs) {
    db.admin.useLeaseTransferer(async (desc, from, to) => {
      moves.push(to);
      const target = desc.replicas.find((r) => r.nodeId === to);
      if (target === undefined) throw new Error(`no replica of r${desc.rangeId} on n${to}`);
      await (c.node(from - 1).store as NonNullable<ReturnType<TestCluster['node']>['store']>).transferLease(desc.rangeId, target.replicaId);
    }, isLive);
  }
  srv = await startSqlServer({ insecure: true, db: dbs[0] });
  const client = new pg.Client(srv.url);
  await client.connect();
  return { c, ds: ds[0] as DistSender, client, moves };
}

/** The meta2 descriptors (what SHOW RANGES reads), by start key in hex. */
async function descriptors(ds: DistSender): Promise<Map<string, RangeDescriptor>> {
  const res = await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'scan', key: META2_PREFIX, endKey: META2_MAX, maxKeys: 0 }] });
  const out = new Map<string, RangeDescriptor>();
  for (const row of (res.responses[0] as ScanResponse).rows) {
    const d = decodeRangeDescriptor(Buffer.from(row.value));
    out.set(d.startKey.toString('hex'), d);
  }
  return out;
}

describe('SPLIT AT / SHOW RANGES / SCATTER on a 3-node cluster', () => {
  it('splits a table, shows its ranges with replicas and leaseholders, keeps every row, and scatters the leases', async () => {
    const { ds, client } = await cluster();
    try {
      await client.query('CREATE TABLE kv (k INT PRIMARY KEY, v TEXT)');
      await client.query(`INSERT INTO kv VALUES ${Array.from({ length: 100 }, (_, i) => `(${i + 1}, 'v${i + 1}')`).join(', ')}`);
      const split = await client.query('ALTER TABLE kv SPLIT AT VALUES (20), (40), (60), (80)');
      expect(split.rows.map((r: { pretty: string }) => r.pretty.replace(/^\/Table\/\d+/, ''))).toEqual(['/1/20', '/1/40', '/1/60', '/1/80']);
      // Manual splits are sticky (the merge queue leaves them): forever by default.
      const descs = await descriptors(ds);
      for (const r of split.rows as { key: Buffer }[]) expect(descs.get(r.key.toString('hex'))?.stickyBit).toEqual(MAX_TIMESTAMP);

      const ranges = (await client.query<RangeRow>('SHOW RANGES FROM TABLE kv')).rows;
      expect(bounds(ranges)).toEqual([
        ['…', '/1/20'],
        ['/1/20', '/1/40'],
        ['/1/40', '/1/60'],
        ['/1/60', '/1/80'],
        ['/1/80', '…'],
      ]);
      expect(new Set(ranges.map((r) => r.range_id)).size).toBe(5);
      for (const r of ranges) {
        expect(r.replicas).toBe('{1,2,3}');
        expect(['1', '2', '3']).toContain(r.lease_holder);
      }

      // An open transaction's intent on a boundary row (k = 20 is the start key of a range) is not in SHOW RANGES' way.
      const other = new pg.Client((srv as TestSqlServer).url);
      await other.connect();
      try {
        await other.query('BEGIN');
        await other.query(`UPDATE kv SET v = 'held' WHERE k = 20`);
        expect((await client.query<RangeRow>('SHOW RANGES FROM TABLE kv')).rows.length).toBe(5);
        await other.query('COMMIT');
        expect((await client.query('SELECT v FROM kv WHERE k = 20')).rows).toEqual([{ v: 'held' }]);
        await client.query(`UPDATE kv SET v = 'v20' WHERE k = 20`);
      } finally {
        await other.end();
      }

      // Every row is still there, in order, across the five ranges.
      const rows = await client.query<{ k: number; v: string }>('SELECT k, v FROM kv ORDER BY k');
      expect(rows.rows.length).toBe(100);
      expect(rows.rows.every((r, i) => r.k === i + 1 && r.v === `v${i + 1}`)).toBe(true);
      expect((await client.query('SELECT v FROM kv WHERE k = 60')).rows).toEqual([{ v: 'v60' }]);

      // WITH EXPIRATION: sticky until then (an interval from now, or a timestamp); a past one is refused.
      const before = Date.now() * 1000;
      const exp = await client.query(`ALTER TABLE kv SPLIT AT VALUES (90) WITH EXPIRATION '1 hour'`);
      const bit = (await descriptors(ds)).get((exp.rows[0] as { key: Buffer }).key.toString('hex'))?.stickyBit;
      expect(bit?.wall).toBeGreaterThanOrEqual(before + 3600e6 - 5e6);
      expect(bit?.wall).toBeLessThan(before + 3600e6 + 60e6);
      await expect(client.query(`ALTER TABLE kv SPLIT AT VALUES (95) WITH EXPIRATION '2001-01-01 00:00:00'`)).rejects.toMatchObject({ code: '22023' });
      const at = await client.query(`ALTER TABLE kv SPLIT AT VALUES (95) WITH EXPIRATION '2200-01-01 00:00:00+00'`);
      expect((await descriptors(ds)).get((at.rows[0] as { key: Buffer }).key.toString('hex'))?.stickyBit?.wall).toBe(Date.UTC(2200, 0, 1) * 1000);
      await client.query('ALTER TABLE kv SPLIT AT VALUES (90), (95)'); // already boundaries: no-ops
      expect((await client.query('SHOW RANGES FROM TABLE kv')).rows.length).toBe(7);
      // Past what an HLC wall holds (2^53 µs, year 2255): forever.
      const far = await client.query(`ALTER TABLE kv SPLIT AT VALUES (97) WITH EXPIRATION '2999-01-01 00:00:00+00'`);
      expect((await descriptors(ds)).get((far.rows[0] as { key: Buffer }).key.toString('hex'))?.stickyBit).toEqual(MAX_TIMESTAMP);

      // Splitting where a range already starts is a no-op.
      await client.query('ALTER TABLE kv SPLIT AT VALUES (40)');
      expect((await client.query('SHOW RANGES FROM TABLE kv')).rows.length).toBe(8);

      const scattered = (await client.query<RangeRow>('ALTER TABLE kv SCATTER')).rows;
      expect(scattered.length).toBe(8);
      const after = (await client.query<RangeRow>('SHOW RANGES FROM TABLE kv')).rows;
      const holders = new Set(after.map((r) => r.lease_holder));
      expect(holders.size).toBeGreaterThan(1);
      // 8 ranges dealt round robin over 3 nodes: every node holds two or three leases.
      expect(holders.size).toBe(3);

      // Writes and reads still work with the leases spread.
      await client.query(`UPDATE kv SET v = 'w' || k::text WHERE k % 10 = 0`);
      const sum = await client.query<{ n: string }>(`SELECT count(*) AS n FROM kv WHERE v LIKE 'w%'`);
      expect(sum.rows[0]?.n).toBe('10');
      expect((await client.query('SELECT count(*)::int AS n FROM kv')).rows).toEqual([{ n: 100 }]);
    } finally {
      await client.end();
    }
  }, 90_000);

  it('SCATTER with a node down hands no lease to it; every row stays readable', async () => {
    let down = 0;
    const { c, client, moves } = await cluster((id) => id !== down);
    try {
      await client.query('CREATE TABLE kv (k INT PRIMARY KEY, v TEXT)');
      await client.query(`INSERT INTO kv VALUES ${Array.from({ length: 60 }, (_, i) => `(${i}, 'v${i}')`).join(', ')}`);
      await client.query('ALTER TABLE kv SPLIT AT VALUES (10), (20), (30), (40), (50)');
      await client.query('ALTER TABLE kv SCATTER');
      // n3 goes away (the SQL gateway is n1).
      down = 3;
      await c.stopNode(2);
      moves.length = 0;
      const after = (await client.query<RangeRow>('ALTER TABLE kv SCATTER')).rows;
      expect(after.length).toBe(6);
      expect(moves.filter((to) => to === 3)).toEqual([]);
      const holders = new Set((await client.query<RangeRow>('SHOW RANGES FROM TABLE kv')).rows.map((r) => r.lease_holder));
      expect([...holders].sort()).toEqual(['1', '2']);
      expect((await client.query('SELECT count(*)::int AS n FROM kv')).rows).toEqual([{ n: 60 }]);
    } finally {
      await client.end();
    }
  }, 90_000);

  it('splits a secondary index and shows its ranges; errors name what is wrong', async () => {
    const { client } = await cluster();
    try {
      await client.query('CREATE TABLE t (k INT PRIMARY KEY, s TEXT)');
      await client.query('CREATE INDEX t_s ON t (s)');
      await client.query(`INSERT INTO t VALUES (1, 'apple'), (2, 'mango'), (3, 'zebra')`);
      await client.query(`ALTER INDEX t@t_s SPLIT AT VALUES ('m')`);
      const ranges = (await client.query<RangeRow>('SHOW RANGES FROM INDEX t@t_s')).rows;
      expect(bounds(ranges)).toEqual([
        ['…', '/2/"m"'],
        ['/2/"m"', '…'],
      ]);
      expect((await client.query(`SELECT k FROM t WHERE s >= 'b' ORDER BY s`)).rows).toEqual([{ k: 2 }, { k: 3 }]);
      // The primary index by its name.
      expect((await client.query('SHOW RANGES FROM INDEX t@t_pkey')).rows.length).toBeGreaterThanOrEqual(1);
      await expect(client.query('SHOW RANGES FROM INDEX t@nope')).rejects.toMatchObject({ code: '42704' });
      await expect(client.query('SHOW RANGES FROM TABLE nope')).rejects.toMatchObject({ code: '42P01' });
      await expect(client.query(`ALTER TABLE t SPLIT AT VALUES (1, 2)`)).rejects.toMatchObject({ code: '42601' });
    } finally {
      await client.end();
    }
  }, 90_000);
});
