/**
 * The GC queue on real processes (issue 5: "AS OF SYSTEM TIME … bounded by
 * the GC threshold"): three `cairn start` nodes with `--gc-ttl=15s`, a row
 * written 'old' then 'new' over pgwire. Right away, AS OF SYSTEM TIME at the
 * old write's commit timestamp reads 'old' (through every node). The nodes'
 * own GC queues (nothing triggered by the test) then collect it: polled
 * (bounded, no fixed sleep) until that query answers SQLSTATE 22023, the
 * queue's processed counter for queue="gc" is positive in /_status/vars, the
 * session still reads 'new', and every range's replicas agree on checksums.
 * The TTL (15 s) must outlast the first phase (connect, INSERT, UPDATE, three
 * AS OF SYSTEM TIME reads): at 5 s a clean-clone CI at load ~30 saw the GC
 * threshold pass the old write before the first read (session 10).
 */
import { describe, it, expect, afterAll } from 'vitest';
import pg from 'pg';
import { ProcessCluster } from '../support/process-cluster.js';

let c: ProcessCluster | undefined;
afterAll(async () => {
  await c?.close();
});

describe('GC queue on three processes (--gc-ttl)', () => {
  it('AS OF SYSTEM TIME reads the old value, then 22023 once the nodes\' GC queues pass it; replicas agree', async () => {
    c = await ProcessCluster.start({ nodes: 3, extraArgs: ['--gc-ttl=15s'] });
    const cl = c;
    const clients = cl.nodes.map((n) => new pg.Client({ host: '127.0.0.1', port: n.spec.sqlPort, user: 'root', database: 'defaultdb' }));
    for (const x of clients) await x.connect();
    try {
      const [a] = clients as [pg.Client];
      await a.query('CREATE TABLE t (k INT PRIMARY KEY, v TEXT)');
      const oldTs = (await a.query(`INSERT INTO t VALUES (1, 'old') RETURNING cluster_logical_timestamp()::STRING AS ts`)).rows[0].ts as string;
      await a.query(`UPDATE t SET v = 'new' WHERE k = 1`);
      for (const x of clients) expect((await x.query(`SELECT v FROM t AS OF SYSTEM TIME '${oldTs}' WHERE k = 1`)).rows).toEqual([{ v: 'old' }]);

      const deadline = Date.now() + 90_000;
      let code: string | undefined;
      while (code === undefined) {
        if (Date.now() > deadline) throw new Error('the GC queues never raised the threshold past the old write');
        code = await a.query(`SELECT v FROM t AS OF SYSTEM TIME '${oldTs}' WHERE k = 1`).then(
          () => undefined,
          (e: { code?: string }) => e.code ?? 'none',
        );
        if (code === undefined) await new Promise((r) => setTimeout(r, 250));
      }
      expect(code).toBe('22023');
      for (const x of clients) await expect(x.query(`SELECT v FROM t AS OF SYSTEM TIME '${oldTs}' WHERE k = 1`)).rejects.toMatchObject({ code: '22023' });
      for (const x of clients) expect((await x.query('SELECT v FROM t WHERE k = 1')).rows).toEqual([{ v: 'new' }]);
      let processed = 0;
      for (let i = 0; i < 3; i++) {
        const vars = await cl.http(i, '/_status/vars');
        const m = /cairn_queue_processed_total\{queue="gc"\} (\d+)/.exec(vars.body);
        processed += Number(m?.[1] ?? 0);
      }
      expect(processed).toBeGreaterThan(0);
      await cl.expectChecksumsAgree(0, 3);
    } finally {
      for (const x of clients) await x.end().catch(() => undefined);
    }
  }, 180_000);
});
