/**
 * The range statements through both protocols over MemoryKV's admin
 * stand-in (its ranges are its split points, one replica on node 1): SPLIT AT
 * with parameters and Describe of SHOW RANGES in the extended protocol,
 * SHOW RANGES FROM INDEX; and statements not supported yet fail with 0A000
 * naming them (issue 6, "Bad input").
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import pg from 'pg';
import { bounds } from './support.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

describe('range statements over MemoryKV', () => {
  let srv: TestSqlServer;
  let c: pg.Client;
  beforeAll(async () => {
    srv = await startSqlServer({ insecure: true });
    c = new pg.Client(srv.url);
    await c.connect();
    await c.query('CREATE TABLE t (a INT, b TEXT, PRIMARY KEY (a, b))');
    await c.query('CREATE INDEX t_b ON t (b)');
  });
  afterAll(async () => {
    await c.end();
    await srv.stop();
  });

  it('SPLIT AT with parameters (prepared), SHOW RANGES of the table and of an index', async () => {
    const split = await c.query({ name: 'sp', text: 'ALTER TABLE t SPLIT AT VALUES ($1::INT, $2), ($3::INT, $4)', values: [10, 'a', 20, 'x'] });
    expect(split.fields.map((f) => f.name)).toEqual(['key', 'pretty']);
    expect(split.rows.map((r: { pretty: string }) => r.pretty.replace(/^\/Table\/\d+/, ''))).toEqual(['/1/10/"a"', '/1/20/"x"']);
    const ranges = await c.query({ name: 'sr', text: 'SHOW RANGES FROM TABLE t' });
    expect(ranges.fields.map((f) => [f.name, f.dataTypeID])).toEqual([
      ['start_key', 25],
      ['end_key', 25],
      ['range_id', 20],
      ['replicas', 25],
      ['lease_holder', 20],
    ]);
    expect(bounds(ranges.rows)).toEqual([
      ['…', '/1/10/"a"'],
      ['/1/10/"a"', '/1/20/"x"'],
      ['/1/20/"x"', '…'],
    ]);
    await c.query(`ALTER INDEX t@t_b SPLIT AT VALUES ('m')`);
    const ix = await c.query('SHOW RANGES FROM INDEX t@t_b');
    expect(bounds(ix.rows)).toEqual([
      ['…', '/2/"m"'],
      ['/2/"m"', '…'],
    ]);
  });

  it('statements not supported here fail with 0A000 naming them', async () => {
    const cases: [string, string][] = [
      ['ALTER TABLE t SCATTER', 'SCATTER'],
      ['SHOW CLUSTER SETTING kv.range_max_bytes', 'SHOW CLUSTER SETTING'],
      ['SHOW ALL CLUSTER SETTINGS', 'SHOW ALL CLUSTER SETTINGS'],
      ['SET CLUSTER SETTING kv.range_max_bytes = 1', 'SET CLUSTER SETTING'],
      ['ALTER TABLE t CONFIGURE ZONE USING num_replicas = 3', 'CONFIGURE ZONE'],
    ];
    for (const [sql, name] of cases) {
      await expect(c.query(sql), sql).rejects.toMatchObject({ code: '0A000', message: expect.stringContaining(name) });
    }
    expect((await c.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
  });
});

describe('session variables', () => {
  it('SHOW ALL lists every variable (name, setting, description); RESET ALL reports the parameters it changes', async () => {
    const srv = await startSqlServer({ insecure: true });
    const c = new pg.Client(srv.url);
    const reported: string[] = [];
    await c.connect();
    (c as unknown as { connection: { on(ev: string, f: (m: { parameterName: string; parameterValue: string }) => void): void } }).connection.on('parameterStatus', (m) => reported.push(`${m.parameterName}=${m.parameterValue}`));
    try {
      await c.query(`SET TIME ZONE 'Europe/Paris'`);
      await c.query(`SET statement_timeout = '5s'`);
      const all = await c.query({ text: 'SHOW ALL', rowMode: 'array' });
      expect(all.fields.map((f) => f.name)).toEqual(['name', 'setting', 'description']);
      const byName = new Map((all.rows as string[][]).map((r) => [r[0], r[1]]));
      expect(byName.get('TimeZone')).toBe('Europe/Paris');
      expect(byName.get('statement_timeout')).toBe('5s');
      expect(byName.get('server_version')).toBe('15.0 Cairn');
      const names = (all.rows as string[][]).map((r) => (r[0] as string).toLowerCase());
      expect(names).toEqual([...names].sort());
      reported.length = 0;
      await c.query('RESET ALL');
      expect(reported).toEqual(['TimeZone=UTC']);
      expect((await c.query('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '0' }]);
    } finally {
      await c.end();
      await srv.stop();
    }
  });
});
