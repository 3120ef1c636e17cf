/**
 * `cairn sql` in batch mode, end to end: the real CLI as a child process
 * (dist/src/cli/main.js; `npm test` builds it first) against the in-process
 * Cairn SQL server (test/support/sql-server.ts) and against a throwaway
 * PostgreSQL 15 (test/support/postgres.ts) — the same scripts must print the
 * same thing on both. Issue 6: -e (repeatable, several statements each), -f,
 * standard input, exit status 1 with `ERROR:` + `SQLSTATE:` on stderr.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAIN_JS } from '../support/process-cluster.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';

interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `cairn sql ARGS` with INPUT on stdin (a pipe: batch mode); bounded. */
function cairnSql(args: readonly string[], input = '', env: Record<string, string> = {}): Promise<CliResult> {
  if (!existsSync(MAIN_JS)) throw new Error(`${MAIN_JS} is missing: run \`npx tsc -p .\` first (npm test does)`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN_JS, 'sql', ...args], { env: { PATH: process.env['PATH'] ?? '', HOME: tmpdir(), ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`cairn sql ${args.join(' ')} did not exit within 30 s; stderr: ${stderr}`));
    }, 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

let cairn: TestSqlServer;
let postgres: PostgresServer;
let dir: string;

beforeAll(async () => {
  [cairn, postgres] = await Promise.all([startSqlServer(), startPostgres()]);
  dir = mkdtempSync(join(tmpdir(), 'cairn-sql-'));
});

afterAll(async () => {
  await Promise.all([cairn?.stop(), postgres?.stop()]);
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** A script both servers run the same way (no Cairn- or PostgreSQL-only syntax). */
const SETUP = `CREATE TABLE kv (k INT PRIMARY KEY, v TEXT);
INSERT INTO kv VALUES (1, 'one'), (2, 'semi;colon'), (3, NULL);`;

const SCRIPT = `-- comments, multi-line statements and quotes with semicolons
SELECT k, v
  FROM kv /* ; */
 ORDER BY k;
UPDATE kv SET v = 'it''s; fine' WHERE k = 1;
SELECT v FROM kv WHERE k = 1; DELETE FROM kv WHERE k > 2;
BEGIN; INSERT INTO kv VALUES (4, $$dollar;quoted$$); COMMIT;
SELECT k AS n FROM kv ORDER BY k`;

const SCRIPT_TSV = `k\tv
1\tone
2\tsemi;colon
3\tNULL
UPDATE 1
v
it's; fine
DELETE 1
BEGIN
INSERT 0 1
COMMIT
n
1
2
4
`;

describe.each([
  ['cairn', () => cairn.url],
  ['postgres', () => postgres.url],
])('cairn sql against %s', (name, url) => {
  it('-e runs several statements per flag, in order, with command tags (tsv off a terminal)', async () => {
    const r = await cairnSql(['--url', url(), '-e', 'DROP TABLE IF EXISTS kv', '-e', SETUP, '-e', SCRIPT]);
    expect(r.stderr).toBe('NOTICE: table "kv" does not exist, skipping\n');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`DROP TABLE\nCREATE TABLE\nINSERT 0 3\n${SCRIPT_TSV}`);
  });

  it('-f FILE and standard input run the same script the same way', async () => {
    const file = join(dir, `${name}.sql`);
    writeFileSync(file, `DROP TABLE IF EXISTS kv;\n${SETUP}\n${SCRIPT}\n`);
    const fromFile = await cairnSql(['--url', url(), '-f', file]);
    expect(fromFile.code).toBe(0);
    expect(fromFile.stdout).toBe(`DROP TABLE\nCREATE TABLE\nINSERT 0 3\n${SCRIPT_TSV}`);
    const fromStdin = await cairnSql(['--url', url()], `DROP TABLE IF EXISTS kv;\n${SETUP}\n${SCRIPT}\n`);
    expect(fromStdin.code).toBe(0);
    expect(fromStdin.stdout).toBe(fromFile.stdout);
  });

  it('--format table and csv', async () => {
    const t = await cairnSql(['--url', url(), '--format', 'table', '-e', 'SELECT k, v FROM kv ORDER BY k']);
    expect(t.stdout).toBe(' k |       v\n---+---------------\n 1 | it\'s; fine\n 2 | semi;colon\n 4 | dollar;quoted\n(3 rows)\n\n');
    const c = await cairnSql(['--url', url(), '--format', 'csv', '-e', "SELECT k, v, NULL AS n, '' AS e FROM kv WHERE k < 3 ORDER BY k"]);
    expect(c.stdout).toBe('k,v,n,e\n1,it\'s; fine,,""\n2,semi;colon,,""\n');
  });

  it('the first error stops the run: exit 1, ERROR and SQLSTATE on stderr, later statements not run', async () => {
    const r = await cairnSql(['--url', url(), '-e', 'SELECT 1 AS a; SELECT * FROM nosuch; INSERT INTO kv VALUES (10, \'after\')']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('a\n1\n');
    // PostgreSQL adds the position (a caret under "nosuch"); Cairn does not report one here.
    expect(r.stderr.startsWith('ERROR: relation "nosuch" does not exist\nSQLSTATE: 42P01\n')).toBe(true);
    if (name === 'postgres') expect(r.stderr).toBe('ERROR: relation "nosuch" does not exist\nSQLSTATE: 42P01\nLINE 1: SELECT * FROM nosuch\n                      ^\n');
    const after = await cairnSql(['--url', url(), '-e', 'SELECT k FROM kv WHERE k = 10']);
    expect(after.stdout).toBe('k\n');
  });

  it('a syntax error prints the caret under the position', async () => {
    const r = await cairnSql(['--url', url()], 'SELECT 1 AS a;\nSELECT k\n  FORM kv;\nSELECT 2;\n');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('a\n1\n');
    expect(r.stderr).toBe('ERROR: syntax error at or near "kv"\nSQLSTATE: 42601\nLINE 2:   FORM kv\n               ^\n');
  });

  it('--continue-on-error runs the rest and still exits 1', async () => {
    const r = await cairnSql(['--url', url(), '--continue-on-error', '-e', 'SELECT 1/0 AS x; SELECT 2 AS y', '-e', 'SELECT 3 AS z']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('y\n2\nz\n3\n');
    expect(r.stderr).toBe('ERROR: division by zero\nSQLSTATE: 22012\n');
  });

  it('meta-commands work in batch input; \\q ends it', async () => {
    const r = await cairnSql(['--url', url(), '--format', 'csv'], '\\dt\nSELECT 1 AS one;\n\\q\nSELECT 2 AS two;\n');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^schema_name,table_name.*\npublic,kv[,\n]/);
    expect(r.stdout).toMatch(/\none\n1\n$/);
    const bad = await cairnSql(['--url', url(), '-e', '\\nosuch']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe('ERROR: invalid command \\nosuch; try \\? for help\n');
  });
});

describe('cairn sql reads scripts as they run', () => {
  it('a long script on stdin, with CRLF line ends and no final newline', async () => {
    const inserts = Array.from({ length: 1500 }, (_, i) => `INSERT INTO long_script VALUES (${i}, 'v${i};');`);
    const script = ['CREATE TABLE long_script (k INT PRIMARY KEY, v TEXT);', ...inserts, "SELECT k, v FROM long_script WHERE k IN (0, 1499) ORDER BY k"].join('\r\n');
    const r = await cairnSql(['--url', cairn.url], script);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = r.stdout.split('\n');
    expect(out.filter((l) => l === 'INSERT 0 1').length).toBe(1500);
    expect(out.slice(-4)).toEqual(['k\tv', '0\tv0;', '1499\tv1499;', '']);
  });
});

describe('cairn sql streams csv/tsv rows', () => {
  it('prints the rows that arrived before an error (PostgreSQL sends them as it computes)', async () => {
    const r = await cairnSql(['--url', postgres.url, '-e', 'SELECT 1 / (x - 3) AS q FROM generate_series(1, 5) x']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('q\n0\n-1\n');
    expect(r.stderr).toBe('ERROR: division by zero\nSQLSTATE: 22012\n');
    // a table needs every row for its widths: nothing is printed
    const t = await cairnSql(['--url', postgres.url, '--format', 'table', '-e', 'SELECT 1 / (x - 3) AS q FROM generate_series(1, 5) x']);
    expect(t.stdout).toBe('');
  });

  it('an export larger than one output chunk arrives whole and in order', async () => {
    const r = await cairnSql(['--url', postgres.url, '--format', 'csv', '-e', "SELECT g, repeat('x', 50) || g AS v FROM generate_series(1, 20000) g"]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.length).toBe(20002);
    expect(lines[0]).toBe('g,v');
    expect(lines[20000]).toBe(`20000,${'x'.repeat(50)}20000`);
    expect(lines.slice(1, -1).every((l, i) => l.startsWith(`${i + 1},`))).toBe(true);
  });
});

describe('cairn sql connection handling', () => {
  it('takes the server from CAIRN_URL, or from PGHOST/PGPORT/PGUSER/PGDATABASE', async () => {
    const viaCairnUrl = await cairnSql(['-e', 'SELECT current_user AS u'], '', { CAIRN_URL: cairn.url });
    expect(viaCairnUrl.stdout).toBe('u\nroot\n');
    const pgUrl = new URL(postgres.url);
    const viaPgEnv = await cairnSql(['-e', 'SELECT current_user AS u, current_database() AS d'], '', { PGHOST: '127.0.0.1', PGPORT: pgUrl.port, PGUSER: 'postgres', PGDATABASE: 'postgres' });
    expect(viaPgEnv.stdout).toBe('u\td\npostgres\tpostgres\n');
    const flags = await cairnSql(['--url', postgres.url, '--user', 'postgres', '--database', 'template1', '-e', 'SELECT current_database() AS d']);
    expect(flags.stdout).toBe('d\ntemplate1\n');
  });

  it('answers a SCRAM password request from PGPASSWORD or the URL; a wrong one is 28P01', async () => {
    const secure = await startSqlServer({ insecure: false, rootPassword: 's3cret' });
    try {
      const viaEnv = await cairnSql(['--url', secure.url, '-e', 'SELECT 1 AS one'], '', { PGPASSWORD: 's3cret' });
      expect(viaEnv).toEqual({ code: 0, stdout: 'one\n1\n', stderr: '' });
      const viaUrl = await cairnSql(['--url', secure.url.replace('root@', 'root:s3cret@'), '-e', 'SELECT 1 AS one']);
      expect(viaUrl.stdout).toBe('one\n1\n');
      // no terminal to ask on: an empty password is sent, and refused
      const wrong = await cairnSql(['--url', secure.url, '-e', 'SELECT 1'], '', { PGPASSWORD: 'nope' });
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toMatch(/^ERROR: cannot connect to root@127\.0\.0\.1:\d+\/defaultdb: .*\nSQLSTATE: 28P01\n$/);
    } finally {
      await secure.stop();
    }
  });

  it('an unreachable server or an unreadable file is a one-line error with exit 1', async () => {
    const r = await cairnSql(['--url', 'postgresql://root@127.0.0.1:1/defaultdb', '-e', 'SELECT 1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ERROR: cannot connect to root@127\.0\.0\.1:1\/defaultdb: .*ECONNREFUSED.*\n$/);
    const f = await cairnSql(['--url', cairn.url, '-f', join(dir, 'missing.sql')]);
    expect(f.code).toBe(1);
    expect(f.stderr).toMatch(/^ERROR: sql: cannot read .*missing\.sql: ENOENT/);
    const u = await cairnSql(['--url', 'http://x', '-e', 'SELECT 1']);
    expect(u.code).toBe(1);
    expect(u.stderr).toMatch(/^ERROR: sql: invalid --url "http:\/\/x": the scheme must be postgresql:\/\/\n$/);
  });
});
