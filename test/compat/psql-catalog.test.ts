/**
 * test/compat/psql-catalog.test.ts — pg_catalog / information_schema as tools
 * see them (issue 7 part 3, must show 1): psql's \dt, \dn, \di, \d <table>
 * (defaults, indexes, CHECK, foreign keys both ways) and \d <index> print
 * exactly what PostgreSQL 15 prints for the same schema; \du and \l print its
 * columns and the same superuser / database row, \du every role made by
 * CREATE USER; \dv, \ds, \d and \d of a view or a sequence print what
 * PostgreSQL prints; catalog rows and the functions drivers call agree with
 * PostgreSQL's answers.
 */
import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';

const SCHEMA = [
  'CREATE TABLE accounts (id INT PRIMARY KEY, owner TEXT NOT NULL, balance NUMERIC(12,2) DEFAULT 0, code VARCHAR(8))',
  'CREATE TABLE events (id BIGINT PRIMARY KEY, at TIMESTAMPTZ, payload JSONB, ref TEXT UNIQUE)',
  'CREATE INDEX accounts_owner_idx ON accounts (owner)',
  'CREATE UNIQUE INDEX events_at_uniq ON events (at)',
  // Defaults, a CHECK and a foreign key for \d; the FK's index exists first (Cairn would otherwise add one, PostgreSQL does not).
  "CREATE TABLE orders (id BIGINT PRIMARY KEY, account INT NOT NULL, note TEXT DEFAULT 'none', placed TIMESTAMPTZ DEFAULT now(), paid BOOLEAN DEFAULT false, qty INT CHECK (qty > 0))",
  'CREATE INDEX orders_account_idx ON orders (account)',
  'ALTER TABLE orders ADD CONSTRAINT orders_account_fkey FOREIGN KEY (account) REFERENCES accounts (id) ON DELETE CASCADE',
  'CREATE VIEW rich AS SELECT id, owner, balance FROM accounts WHERE balance > 100',
  'CREATE VIEW order_notes AS SELECT o.id, o.note, a.code FROM orders o JOIN accounts a ON a.id = o.account',
  'CREATE SEQUENCE ticket_seq',
  'CREATE SEQUENCE batch_seq START 10 INCREMENT 5 MINVALUE 1 MAXVALUE 1000 CACHE 1 CYCLE',
  'CREATE USER alice',
  "CREATE USER bob WITH PASSWORD 'pw-bob'",
  'CREATE USER carol',
  'DROP USER carol',
];

/** Runs psql asynchronously (the Cairn server lives in this process). */
function psql(url: string, cmd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn('psql', [url, '-X', '-v', 'ON_ERROR_STOP=1', '-c', cmd], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PGCONNECT_TIMEOUT: '10' } });
    let out = '';
    let err = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.stderr.on('data', (b: Buffer) => (err += b.toString()));
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`psql ${cmd} exited ${String(code)}: ${err}`))));
  });
}

/** psql's aligned output with the Owner column's values blanked (the roles differ). */
function withoutOwner(out: string): string[][] {
  const lines = out.split('\n').filter((l) => l.includes('|'));
  const header = (lines[0] ?? '').split('|').map((s) => s.trim());
  const owner = header.indexOf('Owner');
  return lines.map((l, i) => l.split('|').map((s, j) => (j === owner && i > 0 ? '' : s.trim())));
}

describe('catalog for tools', () => {
  let cairn: TestSqlServer;
  let pgs: PostgresServer;
  let cairnUrl: string;
  beforeAll(async () => {
    [cairn, pgs] = await Promise.all([startSqlServer(), startPostgres()]);
    cairnUrl = `postgresql://root@${cairn.host}:${cairn.port}/defaultdb?sslmode=disable`;
    for (const url of [cairnUrl, pgs.url]) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      for (const s of SCHEMA) await c.query(s);
      await c.end();
    }
  }, 90_000);
  afterAll(async () => {
    await Promise.all([cairn?.stop(), pgs?.stop()]);
  });

  for (const cmd of ['\\dt', '\\dn', '\\di', '\\dv', '\\ds', '\\d']) {
    it(`psql ${cmd} prints what PostgreSQL prints`, async () => {
      const [a, b] = await Promise.all([psql(cairnUrl, cmd), psql(pgs.url, cmd)]);
      expect(withoutOwner(a)).toEqual(withoutOwner(b));
    });
  }

  // \d of a table (columns, defaults, indexes, CHECK, FKs both ways) and of each index kind: the whole output.
  for (const cmd of ['\\d accounts', '\\d orders', '\\d events', '\\d accounts_pkey', '\\d accounts_owner_idx', '\\d events_ref_key', '\\d events_at_uniq', '\\d rich', '\\d order_notes', '\\d ticket_seq', '\\d batch_seq']) {
    it(`psql ${cmd} prints what PostgreSQL prints`, async () => {
      const [a, b] = await Promise.all([psql(cairnUrl, cmd), psql(pgs.url, cmd)]);
      expect(a).toBe(b);
    });
  }

  it('psql \\du prints PostgreSQL\'s columns and the superuser row (root on Cairn, postgres there)', async () => {
    const [a, b] = await Promise.all([psql(cairnUrl, '\\du'), psql(pgs.url, '\\du')]);
    const rows = (out: string): string[][] => out.split('\n').filter((l) => l.includes('|')).map((l) => l.split('|').map((x) => x.trim()));
    const [ha, ...ra] = rows(a);
    const [hb, ...rb] = rows(b);
    expect(ha).toEqual(hb);
    expect(ra.find((r) => r[0] === 'root')?.slice(1)).toEqual(rb.find((r) => r[0] === 'postgres')?.slice(1));
    // Every role CREATE USER made (and not dropped), with the same attributes and memberships.
    expect(ra.filter((r) => r[0] !== 'root')).toEqual(rb.filter((r) => r[0] !== 'postgres'));
    expect(ra.map((r) => r[0])).toEqual(['alice', 'bob', 'root']);
    const [pa, pb] = await Promise.all([psql(cairnUrl, '\\du b*'), psql(pgs.url, '\\du b*')]);
    expect(pa).toBe(pb);
  });

  it('psql \\l prints PostgreSQL\'s columns and the same row for database postgres', async () => {
    const [a, b] = await Promise.all([psql(cairnUrl, '\\l'), psql(pgs.url, '\\l')]);
    const ca = withoutOwner(a);
    const cb = withoutOwner(b);
    expect(ca[0]).toEqual(cb[0]);
    const row = (rows: string[][]): string[] | undefined => rows.find((r) => r[0] === 'postgres');
    expect(row(ca)).toEqual(row(cb));
    expect(ca.some((r) => r[0] === 'defaultdb')).toBe(true);
  });

  it('information_schema.columns and pg_attribute agree with PostgreSQL', async () => {
    const queries = [
      "SELECT table_name, column_name, ordinal_position, column_default, is_nullable, data_type, character_maximum_length, numeric_precision, numeric_scale, udt_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
      "SELECT c.relname, a.attname, a.attnum, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull, a.atthasdef FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, 3",
      "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
      "SELECT tc.table_name, tc.constraint_type, kcu.column_name FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name WHERE tc.table_schema = 'public' ORDER BY 1, 3",
      "SELECT c.relname, i.indisprimary, i.indisunique FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY 1",
      "SELECT t.typname, t.typlen FROM pg_catalog.pg_type t WHERE t.typname IN ('int4', 'text', 'jsonb', 'numeric', '_int4') ORDER BY 1",
      "SELECT pg_catalog.pg_table_is_visible(c.oid) AS v, pg_catalog.obj_description(c.oid, 'pg_class') AS d FROM pg_catalog.pg_class c WHERE c.relname = 'accounts'",
      "SELECT current_schema(), current_schemas(false), pg_encoding_to_char(6), quote_ident('Mixed'), array_to_string(ARRAY[1, NULL, 3], ',', '*'), 'abc' ~ '^a', 'abc' !~* '^A'",
    ];
    const ask = async (url: string): Promise<unknown[]> => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      const out: unknown[] = [];
      try {
        for (const q of queries) out.push((await c.query(q)).rows);
      } finally {
        await c.end();
      }
      return out;
    };
    const [a, b] = await Promise.all([ask(cairnUrl), ask(pgs.url)]);
    for (let i = 0; i < queries.length; i++) expect(a[i], queries[i]).toEqual(b[i]);
  });

  it('catalog rows follow schema changes (OIDs stable per object)', async () => {
    const c = new pg.Client({ connectionString: cairnUrl });
    await c.connect();
    const oid = async (name: string): Promise<number | undefined> => (await c.query('SELECT oid FROM pg_catalog.pg_class WHERE relname = $1', [name])).rows[0]?.oid as number | undefined;
    const before = await oid('accounts');
    await c.query('CREATE TABLE later (k TEXT PRIMARY KEY)');
    expect(await oid('later')).toBeGreaterThan(0);
    expect(await oid('accounts')).toBe(before);
    await c.query('DROP TABLE later');
    expect(await oid('later')).toBeUndefined();
    await c.end();
  });
});
