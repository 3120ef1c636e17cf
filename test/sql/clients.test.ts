/**
 * Real clients against the in-process SQL server (issue 6, "Must show" 1–3
 * and "Bad input"): psql, pg (simple, prepared, binary results), postgres.js
 * (pipelining, binary parameters), SCRAM authentication, 40001 from two
 * conflicting explicit transactions and a SAVEPOINT cockroach_restart retry
 * loop, implicit-transaction retries, cancellation, and bad input that leaves
 * the session usable.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn } from 'node:child_process';
import pg from 'pg';
import postgres from 'postgres';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { MemoryKV } from '../support/memory-kv.js';
import { errorOf } from './pg-helpers.js';

let srv: TestSqlServer;

beforeAll(async () => {
  srv = await startSqlServer();
});
afterAll(async () => {
  await srv.stop();
});

async function client(url = srv.url): Promise<pg.Client> {
  const c = new pg.Client(url);
  await c.connect();
  return c;
}

/** Runs psql asynchronously (the server lives in this process: spawnSync would deadlock it). */
function psql(args: readonly string[], input = ''): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const p = spawn('psql', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    p.on('error', reject);
    p.on('close', (code) => resolve({ stdout, stderr, code }));
    p.stdin.end(input);
  });
}


describe('psql', () => {
  it('runs a scripted session: DDL, DML, a transaction, an error with SQLSTATE', async () => {
    const script = [
      '\\set VERBOSITY verbose',
      'CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT NOT NULL, balance NUMERIC(10,2) DEFAULT 0);',
      "INSERT INTO accounts VALUES (1, 'ann', 100.50), (2, 'bob', 20);",
      'BEGIN;',
      'UPDATE accounts SET balance = balance - 10 WHERE id = 1;',
      'UPDATE accounts SET balance = balance + 10 WHERE id = 2;',
      'COMMIT;',
      'SELECT id, owner, balance FROM accounts ORDER BY id;',
      "INSERT INTO accounts VALUES (1, 'dup');",
      'SELECT 1 AS still_usable;',
      '',
    ].join('\n');
    const r = await psql(['-X', '-q', `postgresql://root@127.0.0.1:${srv.port}/defaultdb`], script);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        ' id | owner | balance ',
        '----+-------+---------',
        '  1 | ann   |   90.50',
        '  2 | bob   |   30.00',
        '(2 rows)',
        '',
        ' still_usable ',
        '--------------',
        '            1',
        '(1 row)',
        '',
        '',
      ].join('\n'),
    );
    expect(r.stderr).toContain('ERROR:  23505: duplicate key value violates unique constraint "accounts_pkey"');
    expect(r.stderr).toContain('DETAIL:  Key (id)=(1) already exists.');
  });
});

describe('pg (node-postgres)', () => {
  it('simple and prepared queries, and binary results through a type parser', async () => {
    const c = await client();
    await c.query('CREATE TABLE pgt (id INT8 PRIMARY KEY, name TEXT, score FLOAT8, ok BOOL)');
    await c.query("INSERT INTO pgt VALUES (1, 'a', 1.5, true), (9007199254740993, 'big', -2, false)");
    const simple = await c.query('SELECT id, name FROM pgt ORDER BY id');
    expect(simple.rows).toEqual([
      { id: '1', name: 'a' },
      { id: '9007199254740993', name: 'big' },
    ]);
    const prep = { name: 'by_id', text: 'SELECT name, score, ok FROM pgt WHERE id = $1', values: ['9007199254740993'] };
    expect((await c.query(prep)).rows).toEqual([{ name: 'big', score: -2, ok: false }]);
    expect((await c.query({ ...prep, values: ['1'] })).rows).toEqual([{ name: 'a', score: 1.5, ok: true }]);
    // Binary results: int8 arrives as 8 big-endian bytes, decoded by our parser.
    const binary = {
      getTypeParser: (oid: number, format?: string) => {
        if (format === 'binary' && oid === 20) return (b: Buffer) => b.readBigInt64BE(0);
        if (format === 'binary' && oid === 701) return (b: Buffer) => b.readDoubleBE(0);
        if (format === 'binary' && oid === 16) return (b: Buffer) => b[0] === 1;
        if (format === 'binary' && oid === 25) return (b: Buffer) => b.toString('utf8');
        if (format === 'binary' && oid === 23) return (b: Buffer) => b.readInt32BE(0);
        return pg.types.getTypeParser(oid, format as 'text');
      },
    } as unknown as pg.CustomTypesConfig;
    // NB: pg (8.x) turns every DataRow field into a UTF-8 string before the type
    // parser sees it, so only binary values whose bytes are all < 0x80 survive the
    // client; the ints and bools chosen here do (a float8's bytes would not).
    const r = await c.query({ text: 'SELECT id, name, ok, 7::INT4 AS small FROM pgt WHERE id > $1 ORDER BY id', values: [0], binary: true, types: binary } as pg.QueryConfig);
    expect(r.rows).toEqual([
      { id: 1n, name: 'a', ok: true, small: 7 },
      { id: 9007199254740993n, name: 'big', ok: false, small: 7 },
    ]);
    expect(r.fields.map((f) => f.dataTypeID)).toEqual([20, 25, 16, 23]);
    await c.end();
  });

  it('parameter types are inferred for Describe', async () => {
    const c = await client();
    await c.query('CREATE TABLE inf (k INT4 PRIMARY KEY, d DATE, u UUID)');
    // pg sends untyped parameters as text; the server infers int4/date/uuid from the columns.
    await c.query({ text: 'INSERT INTO inf VALUES ($1, $2, $3)', values: ['7', '2024-03-01', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'] });
    const r = await c.query({ text: 'SELECT k + $1 AS s, d, u FROM inf WHERE k = $2', values: [1, 7] });
    expect(r.rows[0].s).toBe(8);
    expect(r.rows[0].u).toBe('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');
    expect(r.fields.map((f) => f.dataTypeID)).toEqual([23, 1082, 2950]);
    await c.end();
  });
});

describe('postgres.js', () => {
  it('pipelines many queries on one connection and sends binary parameters', async () => {
    // fetch_types: false — postgres.js would otherwise read pg_catalog.pg_type with a
    // GROUP BY/JOIN query at connect (pg_catalog comes with the next issue).
    const sql = postgres(srv.url, { max: 1, onnotice: () => {}, fetch_types: false });
    try {
      await sql`CREATE TABLE pj (id INT PRIMARY KEY, data BYTEA, label TEXT)`;
      const n = 200;
      const inserts = [];
      for (let i = 0; i < n; i++) inserts.push(sql`INSERT INTO pj VALUES (${i}, ${Buffer.from([i & 255, 0, 255])}, ${`l${i}`})`);
      await Promise.all(inserts);
      const reads = [];
      for (let i = 0; i < n; i += 7) reads.push(sql`SELECT id, data, label FROM pj WHERE id = ${i}`);
      const results = await Promise.all(reads);
      for (const [j, rows] of results.entries()) {
        const i = j * 7;
        expect(rows[0]).toEqual({ id: i, data: Buffer.from([i & 255, 0, 255]), label: `l${i}` });
      }
      const all = await sql`SELECT id FROM pj WHERE id >= ${190} ORDER BY id`;
      expect(all.map((r) => r.id)).toEqual([190, 191, 192, 193, 194, 195, 196, 197, 198, 199]);
    } finally {
      await sql.end();
    }
  });
});

describe('the YCSB workload statements (src/workload/ycsb/ycsb-sql.ts)', () => {
  it('run as prepared statements; the scan reads one span with the LIMIT pushed down', async () => {
    const { CREATE_TABLE_SQL, DROP_TABLE_SQL, READ, SCAN, INSERT, UPDATES, insertSql } = await import('../../src/workload/ycsb/ycsb-sql.js');
    const c = await client();
    await c.query(DROP_TABLE_SQL);
    await c.query(CREATE_TABLE_SQL);
    const row = (k: number): string[] => [`user${String(k).padStart(4, '0')}`, ...Array.from({ length: 10 }, (_, f) => `v${k}-${f}`)];
    await c.query({ text: insertSql(3), values: [...row(1), ...row(2), ...row(3)] });
    for (let k = 4; k <= 20; k++) await c.query({ name: INSERT.name, text: INSERT.text, values: row(k) });
    const read = await c.query({ name: READ.name, text: READ.text, values: ['user0007'] });
    expect(read.rows[0]).toMatchObject({ ycsb_key: 'user0007', field0: 'v7-0', field9: 'v7-9' });
    const upd = UPDATES[3] as { name: string; text: string };
    expect((await c.query({ name: upd.name, text: upd.text, values: ['user0007', 'new'] })).rowCount).toBe(1);
    expect((await c.query({ name: READ.name, text: READ.text, values: ['user0007'] })).rows[0].field3).toBe('new');
    const scan = await c.query({ name: SCAN.name, text: SCAN.text, values: ['user0010', 5] });
    expect(scan.rows.map((r) => r.ycsb_key)).toEqual(['user0010', 'user0011', 'user0012', 'user0013', 'user0014']);
    const plan = (await c.query({ text: `EXPLAIN ${SCAN.text}`, values: ['user0010', 5] })).rows.map((r) => r.info).join('\n');
    expect(plan).toContain('spans: /$1 – /…');
    expect(plan).toContain('limit: pushed down');
    expect(plan).not.toContain('sort');
    await c.end();
  });
});

describe('transactions', () => {
  it('two conflicting explicit transactions: the loser gets 40001 "restart transaction"', async () => {
    const a = await client();
    const b = await client();
    await a.query('CREATE TABLE acct (id INT PRIMARY KEY, v INT)');
    await a.query('INSERT INTO acct VALUES (1, 100)');
    await a.query('BEGIN');
    await b.query('BEGIN');
    await a.query('SELECT v FROM acct WHERE id = 1');
    await b.query('SELECT v FROM acct WHERE id = 1');
    await a.query('UPDATE acct SET v = v + 1 WHERE id = 1');
    await b.query('UPDATE acct SET v = v + 10 WHERE id = 1');
    await a.query('COMMIT');
    const e = await errorOf(b.query('COMMIT'));
    expect(e.code).toBe('40001');
    expect(e.message).toMatch(/^restart transaction: /);
    expect((await b.query('SELECT v FROM acct WHERE id = 1')).rows).toEqual([{ v: 101 }]);
    await a.end();
    await b.end();
  });

  it('a SAVEPOINT cockroach_restart retry loop succeeds after a conflict', async () => {
    const a = await client();
    const other = await client();
    await a.query('CREATE TABLE ctr (id INT PRIMARY KEY, n INT)');
    await a.query('INSERT INTO ctr VALUES (1, 0)');
    let attempts = 0;
    await a.query('BEGIN');
    await a.query('SAVEPOINT cockroach_restart');
    for (;;) {
      attempts++;
      try {
        const { rows } = await a.query('SELECT n FROM ctr WHERE id = 1');
        if (attempts === 1) await other.query('UPDATE ctr SET n = n + 100 WHERE id = 1'); // a conflicting commit
        await a.query('UPDATE ctr SET n = $1 WHERE id = 1', [rows[0].n + 1]);
        await a.query('RELEASE SAVEPOINT cockroach_restart');
        await a.query('COMMIT');
        break;
      } catch (e) {
        expect((e as { code: string }).code).toBe('40001');
        await a.query('ROLLBACK TO SAVEPOINT cockroach_restart');
      }
    }
    expect(attempts).toBe(2);
    expect((await a.query('SELECT n FROM ctr WHERE id = 1')).rows).toEqual([{ n: 101 }]);
    await a.end();
    await other.end();
  });

  it('concurrent transfers (explicit with client retries, and implicit) keep the total (bank invariant)', async () => {
    const setup = await client();
    await setup.query('CREATE TABLE bank (id INT PRIMARY KEY, bal INT NOT NULL)');
    await setup.query(`INSERT INTO bank VALUES ${Array.from({ length: 6 }, (_, i) => `(${i}, 100)`).join(', ')}`);
    const clients = await Promise.all(Array.from({ length: 8 }, () => client()));
    let retries = 0;
    let seed = 1;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    await Promise.all(
      clients.map(async (c, ci) => {
        for (let i = 0; i < 15; i++) {
          const from = rand(6);
          const to = (from + 1 + rand(5)) % 6;
          const amount = 1 + rand(5);
          if (ci % 2 === 0) {
            for (;;) {
              try {
                await c.query('BEGIN');
                const r = await c.query('SELECT id, bal FROM bank WHERE id IN ($1, $2)', [from, to]);
                const bal = new Map(r.rows.map((x) => [x.id as number, x.bal as number]));
                await c.query('UPDATE bank SET bal = $2 WHERE id = $1', [from, (bal.get(from) as number) - amount]);
                await c.query('UPDATE bank SET bal = $2 WHERE id = $1', [to, (bal.get(to) as number) + amount]);
                await c.query('COMMIT');
                break;
              } catch (e) {
                expect((e as { code: string }).code).toBe('40001');
                retries++;
                await c.query('ROLLBACK');
              }
            }
          } else {
            // One implicit transaction (a multi-statement Query): retried by the server.
            await c.query(`UPDATE bank SET bal = bal - ${amount} WHERE id = ${from}; UPDATE bank SET bal = bal + ${amount} WHERE id = ${to}`).catch((e) => {
              // Its first statement's rows were complete when the second conflicted: only a 40001 may escape.
              expect((e as { code: string }).code).toBe('40001');
            });
          }
        }
      }),
    );
    const total = await setup.query('SELECT bal FROM bank');
    expect(total.rows.reduce((a, r) => a + (r.bal as number), 0)).toBe(600);
    expect(retries).toBeGreaterThan(0);
    for (const c of clients) await c.end();
    await setup.end();
  });

  it('implicit transactions are retried by the server while no row was sent', async () => {
    const c = await client();
    await c.query('CREATE TABLE ir (id INT PRIMARY KEY)');
    const before = srv.kv.commitCount;
    srv.kv.injectRetryErrors(3);
    await c.query('INSERT INTO ir VALUES (1), (2)');
    srv.kv.injectRetryErrors(2);
    const r = await c.query({ text: 'SELECT id FROM ir ORDER BY id', values: [] });
    expect(r.rows).toEqual([{ id: 1 }, { id: 2 }]);
    expect(srv.kv.commitCount - before).toBe(2);
    await c.end();
  });

  it('a large SELECT streams; once its rows reached the client a retryable error is reported, not retried', async () => {
    const c = await client();
    await c.query('CREATE TABLE stream (id INT PRIMARY KEY, pad TEXT)');
    await c.query(`INSERT INTO stream VALUES ${Array.from({ length: 3000 }, (_, j) => `(${j}, '${'p'.repeat(100)}')`).join(',')}`);
    // ~330 KB of rows: more than the connection buffers, so rows leave before the commit.
    srv.kv.injectRetryErrors(1);
    const e = await errorOf(c.query('SELECT id, pad FROM stream'));
    expect(e.code).toBe('40001');
    // A small result is still in the buffer at commit time: retried transparently.
    srv.kv.injectRetryErrors(1);
    expect((await c.query('SELECT id FROM stream WHERE id < 3 ORDER BY id')).rows).toEqual([{ id: 0 }, { id: 1 }, { id: 2 }]);
    expect((await c.query('SELECT id FROM stream')).rowCount).toBe(3000);
    await c.end();
  });

  it('statement_timeout cancels a long statement with 57014 and the session stays usable', async () => {
    const slow = await startSqlServer({ insecure: true, kv: new MemoryKV(undefined, 0, 50) });
    const c = await client(slow.url);
    await c.query('CREATE TABLE big (id INT PRIMARY KEY, pad TEXT)');
    for (let i = 0; i < 20; i++) {
      const vals = Array.from({ length: 500 }, (_, j) => `(${i * 500 + j}, 'x')`).join(',');
      await c.query(`INSERT INTO big VALUES ${vals}`);
    }
    await c.query("SET statement_timeout = '1ms'");
    const e = await errorOf(c.query("SELECT id FROM big WHERE pad = 'y' AND id > 0 AND id + 0 = -1 OR id = -1"));
    expect(e.code).toBe('57014');
    await c.query('SET statement_timeout = 0');
    expect((await c.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await c.end();
    await slow.stop();
  });
});

describe('cancellation', () => {
  it('a CancelRequest from another connection stops the running statement with 57014', async () => {
    // Scans return 10 rows per batch and each batch takes 5 ms: the full scan
    // below would take ~4 s — the cancel ends it long before (even on a busy machine).
    const slow = await startSqlServer({ insecure: true, kv: new MemoryKV(undefined, 5, 10) });
    const c = await client(slow.url);
    await c.query('CREATE TABLE big (id INT PRIMARY KEY, pad TEXT)');
    await c.query(`INSERT INTO big VALUES ${Array.from({ length: 8000 }, (_, j) => `(${j}, 'x')`).join(',')}`);
    const running = c.query("SELECT id FROM big WHERE pad = 'nope'");
    const canceller = new pg.Client(slow.url);
    await new Promise((resolve) => setImmediate(resolve));
    // pg's Client#cancel opens a connection and sends CancelRequest(pid, secret) for the active query.
    const active = (c as unknown as { activeQuery: unknown }).activeQuery;
    expect(active).toBeDefined();
    (canceller as unknown as { cancel(target: pg.Client, q: unknown): void }).cancel(c, active);
    const e = await errorOf(running);
    expect(e.code).toBe('57014');
    expect(e.message).toBe('canceling statement due to user request');
    expect((await c.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    await c.end();
    await slow.stop();
  });
});

describe('bad input', () => {
  it('each error is a clean ErrorResponse and the session stays usable (simple and extended)', async () => {
    const c = await client();
    await c.query('CREATE TABLE bad (id INT PRIMARY KEY, s VARCHAR(4), n INT NOT NULL DEFAULT 0 CHECK (n >= 0))');
    await c.query("INSERT INTO bad VALUES (1, 'ok')");
    const cases: [string, unknown[] | undefined, string][] = [
      ['SELECT * FROM bad WHERE', undefined, '42601'],
      ['SELECT * FROM nosuch', undefined, '42P01'],
      ['SELECT nosuch FROM bad', undefined, '42703'],
      ["SELECT 'abc'::INT", undefined, '22P02'],
      ['SELECT * FROM bad WHERE id = $1', ['abc'], '22P02'],
      ['INSERT INTO bad VALUES (true)', undefined, '42804'],
      ["INSERT INTO bad VALUES (1, 'x')", undefined, '23505'],
      ["INSERT INTO bad VALUES (2, 'x', NULL)", undefined, '23502'],
      ["INSERT INTO bad VALUES ($1, 'x', $2)", [3, -1], '23514'],
      ['SELECT 1 / 0', undefined, '22012'],
      ['SELECT $1::INT / 0', [5], '22012'],
      ["INSERT INTO bad VALUES (4, 'waytoolong')", undefined, '22001'],
      ['INSERT INTO bad VALUES ($1, $2)', [5, 'x'.repeat(1 << 20)], '22001'],
      ['SELECT 99999999999::INT4', undefined, '22003'],
      ['SELECT * FROM bad, ROWS FROM (generate_series(1, 2), generate_series(1, 3))', undefined, '0A000'],
      ['CREATE INDEX i ON bad ((s || n::TEXT))', undefined, '0A000'],
    ];
    for (const [text, values, code] of cases) {
      const e = await errorOf(c.query({ text, values }));
      expect(e.code, text).toBe(code);
      expect((await c.query('SELECT 1 AS ok')).rows, `after ${text}`).toEqual([{ ok: 1 }]);
    }
    const syntax = await errorOf(c.query('SELECT * FROM bad WHERE'));
    expect(syntax.position).toBe('24');
    expect(srv.internalErrors).toEqual([]);
    await c.end();
  });
});

describe('authentication', () => {
  it('SCRAM-SHA-256 for root and for users made with CREATE USER; wrong passwords get 28P01', async () => {
    const secure = await startSqlServer({ rootPassword: 'rootpw' });
    const url = (user: string, pw: string): string => `postgresql://${user}:${pw}@127.0.0.1:${secure.port}/defaultdb`;
    const root = await client(url('root', 'rootpw'));
    await root.query("CREATE USER alice WITH PASSWORD 'alicepw'");
    const alice = await client(url('alice', 'alicepw'));
    expect((await alice.query('SELECT current_user AS u')).rows).toEqual([{ u: 'alice' }]);
    await alice.end();
    expect((await errorOf(client(url('alice', 'wrong')))).code).toBe('28P01');
    expect((await errorOf(client(url('root', 'wrong')))).code).toBe('28P01');
    expect((await errorOf(client(url('nobody', 'x')))).code).toBe('28P01');
    await root.query("ALTER USER alice WITH PASSWORD 'newpw'");
    const again = await client(url('alice', 'newpw'));
    await again.end();
    await root.query('DROP USER alice');
    expect((await errorOf(client(url('alice', 'newpw')))).code).toBe('28P01');
    const ok = await psql(['-X', '-tA', '-c', 'SELECT 42', url('root', 'rootpw')]);
    expect(ok.stdout).toBe('42\n');
    const bad = await psql(['-X', '-tA', '-c', 'SELECT 42', url('root', 'nope')]);
    expect(bad.stderr).toContain('password authentication failed');
    await root.end();
    await secure.stop();
  });
});
