/**
 * COPY through psql (`COPY … FROM STDIN` with data on stdin, `\copy` from a
 * file, `COPY … TO STDOUT`), run against Cairn and a real PostgreSQL 15 in
 * the same test: the exported text must be byte-identical, and errors carry
 * the same SQLSTATE.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { serialize } from 'pg-protocol';
import { parseBackend } from '../pgwire/pg-peer.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { startPostgres } from '../support/postgres.js';
import { checkIndexes } from './index-check.js';

/** Runs psql as a child process (asynchronously: the Cairn server runs in this process). */
function psql(url: string, args: string[], input?: string): Promise<{ out: string; err: string; status: number }> {
  return new Promise((resolve, reject) => {
    const p = spawn('psql', [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), 60_000);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ out, err, status: code ?? -1 });
    });
    p.stdin.end(input ?? '');
  });
}

const SETUP = `CREATE TABLE t (k INT PRIMARY KEY, s TEXT, f FLOAT8, b BOOL, d INT DEFAULT 42);
CREATE UNIQUE INDEX t_s ON t (s);`;

const TEXT_DATA = ['1\thello\t1.5\tt', '2\ttab\\there\t-2\tf', '3\t\\N\t\\N\t\\N', '4\tback\\\\slash nl\\nx\t0\tt', '5\tunicodé ✓\t3.25\tf', '\\.', ''].join('\n');
const CSV_DATA = ['k,s,f,b', '10,"comma, quoted",1,true', '11,"say ""hi""",2,false', '12,,3,', '13,"",4,true', '14,"multi', 'line",5,false', ''].join('\n');

describe('COPY through psql, beside PostgreSQL 15', () => {
  let cairn: TestSqlServer;
  let pgUrl: string;
  let stopPg: () => Promise<void>;
  let dir: string;

  beforeAll(async () => {
    cairn = await startSqlServer();
    const pg = await startPostgres();
    pgUrl = pg.url;
    stopPg = () => pg.stop();
    dir = mkdtempSync(join(tmpdir(), 'cairn-copy-'));
  }, 120_000);

  afterAll(async () => {
    await cairn?.stop();
    await stopPg?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it('loads text and CSV, exports identical text and CSV, keeps indexes consistent', async () => {
    const csvFile = join(dir, 'in.csv');
    writeFileSync(csvFile, CSV_DATA);
    const outs: string[] = [];
    for (const url of [cairn.url, pgUrl]) {
      expect((await psql(url, ['-c', SETUP])).status).toBe(0);
      const a = await psql(url, ['-c', 'COPY t (k, s, f, b) FROM STDIN'], TEXT_DATA);
      expect(a.err).toBe('');
      const b = await psql(url, ['-c', `\\copy t (k, s, f, b) FROM '${csvFile}' WITH (FORMAT csv, HEADER)`]);
      expect(b.err).toBe('');
      const text = await psql(url, ['-c', 'COPY t TO STDOUT']);
      const csv = await psql(url, ['-c', 'COPY (SELECT k, s, b FROM t WHERE k > 2) TO STDOUT WITH (FORMAT csv, HEADER)']);
      const cols = await psql(url, ['-c', 'COPY t (s, k) TO STDOUT']);
      expect(text.err + csv.err + cols.err).toBe('');
      outs.push([text.out, csv.out, cols.out].join('\n---\n'));
    }
    // Row order: Cairn and PostgreSQL both return these in insertion = key order here.
    expect(outs[0]).toBe(outs[1]);
    expect(outs[0]).toContain('2\ttab\\there\t-2\tf\t42');
  });

  it('a bad row or a duplicate fails the whole COPY with PostgreSQL\'s SQLSTATE and loads nothing', async () => {
    for (const [data, code] of [
      ['100\tx\t1\tt\n101\ty\tnotafloat\tt\n', '22P02'],
      ['100\tx\t1\tt\n101\thello\t1\tt\n', '23505'],
      ['100\tx\t1\n', '22P04'],
      ['100\tx\t1\tt\textra\n', '22P04'],
    ] as const) {
      for (const url of [cairn.url, pgUrl]) {
        const r = await psql(url, ['-v', 'VERBOSITY=verbose', '-c', 'COPY t (k, s, f, b) FROM STDIN'], data);
        expect(r.status, `${url}: ${data}`).not.toBe(0);
        expect(r.err, url).toContain(code);
        const n = await psql(url, ['-At', '-c', 'SELECT count(*) FROM t WHERE k >= 100']);
        expect(n.out.trim()).toBe('0');
      }
    }
    expect((await checkIndexes(cairn.kv, 'defaultdb', 't')).problems).toEqual([]);
  });

  it('a COPY that fails is answered at once, before CopyDone, and what the client still streams is ignored — as PostgreSQL does', async () => {
    for (const url of [cairn.url, pgUrl]) {
      const u = new URL(url);
      const sock = connect(Number(u.port), u.hostname);
      let got = Buffer.alloc(0);
      sock.on('data', (d: Buffer) => (got = Buffer.concat([got, d])));
      const names = (): string[] => parseBackend(got).map((m) => m.name);
      /** Waits until `n` ReadyForQuery messages have arrived (bounded). */
      const readyCount = async (n: number): Promise<void> => {
        const deadline = Date.now() + 15_000;
        while (names().filter((x) => x === 'readyForQuery').length < n) {
          expect(Date.now() < deadline, `${url}: no ReadyForQuery #${n} after ${names().join(',')}`).toBe(true);
          await new Promise<void>((r) => {
            const t = setTimeout(r, deadline - Date.now());
            sock.once('data', () => (clearTimeout(t), r()));
          });
        }
      };
      try {
        await new Promise<void>((r) => sock.once('connect', () => r()));
        sock.write(serialize.startup({ user: u.username, database: u.pathname.slice(1) }));
        await readyCount(1);
        sock.write(serialize.query('COPY t (k, s, f, b) FROM STDIN'));
        sock.write(serialize.copyData(Buffer.from('200\tfine\t1\tt\nnotanint\tbad\t1\tt\n')));
        // No CopyDone yet: the error and ReadyForQuery come anyway.
        await readyCount(2);
        const afterCopy = parseBackend(got).slice(-2);
        expect(afterCopy[0]?.name, url).toBe('error');
        expect((afterCopy[0] as { code?: string }).code, url).toBe('22P02');
        // The rest of the client's stream for the failed COPY is ignored; the session answers the next query.
        sock.write(Buffer.concat([serialize.copyData(Buffer.from('201\tlate\t1\tt\n')), serialize.copyDone(), serialize.query('SELECT count(*) FROM t WHERE k >= 200')]));
        await readyCount(3);
        const last = parseBackend(got).slice(-3);
        expect(last.map((m) => m.name), url).toEqual(['dataRow', 'commandComplete', 'readyForQuery']);
        expect((last[0] as { fields?: string[] }).fields, url).toEqual(['0']);
      } finally {
        sock.destroy();
      }
    }
  });

  it('a large import is streamed in batches inside one transaction', async () => {
    const n = 25_000;
    let data = '';
    for (let i = 0; i < n; i++) data += `${1000 + i}\tname-${i}\t${i / 4}\t${i % 2 === 0 ? 't' : 'f'}\n`;
    const r = await psql(cairn.url, ['-c', 'COPY t (k, s, f, b) FROM STDIN'], data);
    expect(r.err).toBe('');
    const c = await psql(cairn.url, ['-At', '-c', 'SELECT count(*) FROM t WHERE k >= 1000']);
    expect(c.out.trim()).toBe(String(n));
    const check = await checkIndexes(cairn.kv, 'defaultdb', 't');
    expect(check.problems).toEqual([]);
    expect(check.entries).toBe(check.rows);
  }, 120_000);
});
