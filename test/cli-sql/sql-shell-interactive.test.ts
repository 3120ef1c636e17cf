/**
 * `cairn sql` interactive mode: runSqlShell driven through terminal-like
 * streams (a PassThrough that says it is a TTY, so node:readline runs in
 * terminal mode and sees the same keystrokes a pty would deliver) against the
 * in-process Cairn SQL server. Prompts with transaction status, continuation
 * lines, meta-commands, Ctrl-C clearing the input and cancelling a running
 * statement, \q / Ctrl-D, and the history file. Then once through a real
 * pseudo-terminal (util-linux `script`) with the built CLI, which checks the
 * TTY detection itself. Every wait is for a condition, bounded.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection, createServer, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { runSqlShell, type SqlShellIo } from '../../src/cli/sql-shell.js';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { MemoryKV } from '../support/memory-kv.js';
import { MAIN_JS } from '../support/process-cluster.js';

let srv: TestSqlServer;
let dir: string;

beforeAll(async () => {
  srv = await startSqlServer();
  dir = mkdtempSync(join(tmpdir(), 'cairn-sql-tty-'));
});

afterAll(async () => {
  await srv?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const ANSI_CONTROL = /\x1b\[[0-9;]*[A-Za-z]/g;

/** Polls `cond` every 10 ms until it holds; fails with `what()` after `timeoutMs`. */
async function waitUntil(cond: () => boolean, what: () => string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A terminal session: keystrokes in, screen text (ANSI codes removed) out. */
class Terminal {
  readonly stdin = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => undefined });
  readonly stdout = Object.assign(new PassThrough(), { isTTY: true, columns: 200 });
  readonly stderr = new PassThrough();
  out = '';
  err = '';
  readonly done: Promise<number>;

  constructor(url: string, historyFile: string) {
    this.stdout.on('data', (d: Buffer) => (this.out += d.toString().replace(ANSI_CONTROL, '')));
    this.stderr.on('data', (d: Buffer) => (this.err += d.toString()));
    const io: SqlShellIo = { stdin: this.stdin, stdout: this.stdout, stderr: this.stderr, env: {}, historyFile };
    this.done = runSqlShell({ url }, io);
  }

  type(keys: string): void {
    this.stdin.write(keys);
  }

  /** Waits until the screen or stderr satisfies `cond`; 10 s bound. */
  waitFor(cond: (out: string, err: string) => boolean, what: string): Promise<void> {
    return waitUntil(() => cond(this.out, this.err), () => `${what}\n--- screen ---\n${this.out}\n--- stderr ---\n${this.err}`, 10_000);
  }

  /** Types a line and waits for the screen to grow by `expect` after it. */
  async line(keys: string, expectText: string): Promise<string> {
    const mark = this.out.length;
    this.type(`${keys}\r`);
    await this.waitFor((o) => o.slice(mark).includes(expectText), JSON.stringify(expectText));
    return this.out.slice(mark);
  }
}

describe('cairn sql on a terminal', () => {
  it('prompts with the transaction status, continues statements, runs meta-commands, saves history', async () => {
    const history = join(dir, 'history');
    const base = `root@127.0.0.1:${srv.port}/defaultdb`;
    const t = new Terminal(srv.url, history);
    await t.waitFor((o) => o.includes(`${base}> `), 'the first prompt');
    await t.line('CREATE TABLE i (k INT PRIMARY KEY, v TEXT);', 'CREATE TABLE');
    // an unfinished statement gets the continuation prompt, right-aligned under the prompt
    const cont = await t.line("INSERT INTO i VALUES (1, 'a;'),", `${' '.repeat(base.length - 1)}-> `);
    expect(cont).not.toContain('INSERT 0');
    await t.line("(2, 'b');", 'INSERT 0 2');
    const table = await t.line('SELECT k, v FROM i ORDER BY k;', '(2 rows)');
    expect(table).toContain(' k | v\n---+----\n 1 | a;\n 2 | b\n(2 rows)\n');
    await t.line('BEGIN;', `${base} OPEN> `);
    await t.line('SELECT * FROM nosuch;', `${base} ERROR> `);
    expect(t.err).toContain('ERROR: relation "nosuch" does not exist\nSQLSTATE: 42P01\n');
    await t.line('ROLLBACK;', `ROLLBACK\n${base}> `);
    await t.line('\\x', 'Expanded display is on.');
    expect(await t.line('SELECT 1 AS a, 2 AS b;', `${base}> `)).toContain('-[ RECORD 1 ]\na | 1\nb | 2\n');
    await t.line('\\x', 'Expanded display is off.');
    await t.line('\\timing', 'Timing is on.');
    // as psql: an empty line after the table, then the duration
    expect(await t.line('SELECT 3 AS c;', `${base}> `)).toMatch(/\(1 row\)\n\nTime: \d+\.\d{3} ms\n/);
    await t.line('\\?', '\\dt');
    expect(await t.line('\\dt', `${base}> `)).toMatch(/ public\s+\| i /);
    t.type('\\q\r');
    expect(await t.done).toBe(0);
    const saved = readFileSync(history, 'utf8').split('\n');
    expect(saved).toContain('CREATE TABLE i (k INT PRIMARY KEY, v TEXT);');
    expect(saved).toContain('\\q');

    // a new session starts with that history (Up arrow recalls the last line)
    const t2 = new Terminal(srv.url, history);
    await t2.waitFor((o) => o.includes(`${base}> `), 'the first prompt');
    const mark = t2.out.length;
    t2.type('\x1b[A');
    await t2.waitFor((o) => o.slice(mark).includes('\\q'), 'the recalled line');
    t2.type('\x15\x04'); // Ctrl-U clears the line, Ctrl-D on an empty line exits
    expect(await t2.done).toBe(0);
  });

  it('asks for the password on the terminal when the server wants one (SCRAM)', async () => {
    const secure = await startSqlServer({ insecure: false, rootPassword: 's3cret' });
    const t = new Terminal(secure.url, join(dir, 'history3'));
    try {
      await t.waitFor((_, e) => e.includes('Password for root: '), 'the password prompt');
      t.type('s3cret\r');
      await t.waitFor((o) => o.includes(`root@127.0.0.1:${secure.port}/defaultdb> `), 'the first prompt');
      expect(t.out).not.toContain('s3cret');
      expect(await t.line('SELECT current_user AS u;', '(1 row)')).toContain(' root\n');
      t.type('\x04');
      expect(await t.done).toBe(0);
    } finally {
      t.stdin.end();
      await secure.stop();
    }
  });

  it('Ctrl-C clears an unfinished statement, and cancels a running one', async () => {
    // 8000 rows scanned 10 per page, 5 ms per page: a full scan takes seconds, a cancel ends it.
    const slow = await startSqlServer({ insecure: true, kv: new MemoryKV(undefined, 5, 10) });
    const base = `root@127.0.0.1:${slow.port}/defaultdb`;
    const t = new Terminal(slow.url, join(dir, 'history2'));
    try {
      await t.waitFor((o) => o.includes(`${base}> `), 'the first prompt');
      await t.line('CREATE TABLE big (id INT PRIMARY KEY, pad TEXT);', 'CREATE TABLE');
      await t.line(`INSERT INTO big VALUES ${Array.from({ length: 8000 }, (_, j) => `(${j}, 'x')`).join(',')};`, 'INSERT 0 8000');

      await t.line('SELECT 1', '-> ');
      let mark = t.out.length;
      t.type('\x03');
      await t.waitFor((o) => o.slice(mark).includes(`^C\n${base}> `), 'the cleared prompt');
      expect(await t.line('SELECT 2 AS two;', '(1 row)')).toContain(' two\n-----\n   2\n');

      mark = t.out.length;
      t.type("SELECT id FROM big WHERE pad = 'nope';\r");
      // Ctrl-C until the cancel lands (one sent before the server starts the statement is ignored).
      const deadline = Date.now() + 10_000;
      while (!t.err.includes('SQLSTATE: 57014') && Date.now() < deadline) {
        t.type('\x03');
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(t.err).toContain('ERROR: canceling statement due to user request\nSQLSTATE: 57014\n');
      expect(t.out.slice(mark)).not.toContain('(0 rows)');
      expect(await t.line('SELECT 3 AS three;', '(1 row)')).toContain('   3\n');
      t.type('\\q\r');
      expect(await t.done).toBe(0);
    } finally {
      t.stdin.end();
      await slow.stop();
    }
  });
});

describe('cairn sql when the connection is lost', () => {
  it('reconnects before the next statement on a terminal; reports a failed reconnect and goes on', async () => {
    // A TCP relay in front of the server: cutting its sockets loses the connection, the server stays up.
    const relayed = new Set<Socket>();
    const relay = createServer((client) => {
      const upstream = createConnection(srv.port, '127.0.0.1');
      relayed.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const port = (relay.address() as { port: number }).port;
    const base = `root@127.0.0.1:${port}/defaultdb`;
    const t = new Terminal(`postgresql://root@127.0.0.1:${port}/defaultdb`, join(dir, 'history4'));
    try {
      await t.waitFor((o) => o.includes(`${base}> `), 'the first prompt');
      await t.line('BEGIN;', `${base} OPEN> `);
      for (const s of relayed) s.destroy();
      relayed.clear();
      // The next statement finds the connection gone — before sending (then it reconnects
      // first) or while running (then it fails and the shell reconnects at once).
      t.type('SELECT 1 AS one;\r');
      await t.waitFor((_, e) => e.includes(`# the connection was lost; reconnected to ${base} (any open transaction was rolled back)\n`), 'the reconnect');
      await t.waitFor((o) => o.endsWith(`${base}> `), 'the idle prompt of the new connection');
      expect(await t.line('SELECT 1 AS one;', '(1 row)')).toContain('   1\n');

      // now the relay refuses: the statement reports it, and the shell keeps going
      relay.close(); // stops accepting; the open relayed connection is cut next
      for (const s of relayed) s.destroy();
      const mark = t.err.length;
      await t.line('SELECT 2;', `${base}> `);
      await t.waitFor((_, e) => e.slice(mark).includes('ERROR: the connection was lost and reconnecting failed: cannot connect to'), 'the reconnect error');
      t.type('\\q\r');
      expect(await t.done).toBe(0);
    } finally {
      t.stdin.end();
      relay.close(() => undefined); // already closed on the success path
    }
  });
});

describe('cairn sql on a real pseudo-terminal', () => {
  it('detects the terminal: prompt, continuation, aligned table, \\q exits 0', async () => {
    if (!existsSync(MAIN_JS)) throw new Error(`${MAIN_JS} is missing: run \`npx tsc -p .\` first (npm test does)`);
    const base = `root@127.0.0.1:${srv.port}/defaultdb`;
    // script -q (no banner) -f (flush) -e (child's exit status) -c CMD; its stdin feeds the pty.
    const child = spawn('script', ['-qfec', `${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN_JS)} sql --url ${srv.url}`, '/dev/null'], {
      env: { PATH: process.env['PATH'] ?? '', HOME: dir, TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString().replace(ANSI_CONTROL, '').replace(/\r/g, '')));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const waitFor = (text: string, from: number): Promise<void> => waitUntil(() => out.slice(from).includes(text), () => `${JSON.stringify(text)}\n${out}`, 15_000);
    try {
      await waitFor(`${base}> `, 0);
      let mark = out.length;
      child.stdin.write('SELECT 1 AS a,\r');
      await waitFor('-> ', mark);
      mark = out.length;
      child.stdin.write("'x' AS b;\r");
      await waitFor(`${base}> `, mark);
      expect(out.slice(mark)).toContain(' a | b\n---+---\n 1 | x\n(1 row)\n');
      child.stdin.write('\\q\r');
      const code = await Promise.race([exited, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000))]);
      expect(code).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
