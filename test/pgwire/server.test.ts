// End to end over TCP: the socket adapter driven by real clients — pg (simple,
// prepared, binary), postgres.js (pipelined extended queries, cursors, cancel)
// and psql — plus raw-socket checks of SSLRequest, skip-to-Sync, TLS and a
// client that stops reading (the "Backpressure" requirement).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import postgres from 'postgres';
import { serialize } from 'pg-protocol';
import { handlePgConnection, secureContextFromCertsDir, type PgConnectionOptions } from '../../sql/pgwire/server.js';
import { CancelRegistry } from '../../sql/pgwire/cancel-registry.js';
import type { PgConn } from '../../sql/pgwire/conn.js';
import { makeScramCredential } from '../../sql/pgwire/scram.js';
import { ToyFactory, type ToyOptions } from './toy-backend.js';
import { parseBackend, type PeerMessage } from './pg-peer.js';
import { fuzzStreams, oracle } from './fuzz-streams.js';
import fc from 'fast-check';

const run = promisify(execFile);

interface TestServer {
  readonly server: Server;
  readonly port: number;
  readonly factory: ToyFactory;
  readonly conns: PgConn[];
  close(): Promise<void>;
}

async function startServer(toy: ToyOptions, opts: Partial<PgConnectionOptions> = {}): Promise<TestServer> {
  const factory = new ToyFactory(toy);
  const cancelRegistry = new CancelRegistry();
  const conns: PgConn[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    conns.push(handlePgConnection(socket, { factory, cancelRegistry, ...opts }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    port,
    factory,
    conns,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all(conns.map((c) => c.closed));
    },
  };
}

/** Waits for a condition, polling, at most `ms`. */
async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A raw protocol client: writes pg-protocol messages, reads backend messages. */
class RawClient {
  private buf: Buffer[] = [];
  private waiters: (() => void)[] = [];
  ended = false;
  constructor(readonly socket: Socket) {
    socket.on('error', () => {}); // a reset after the server closed shows up as 'close'
    socket.on('data', (c) => {
      this.buf.push(c);
      this.wake();
    });
    socket.on('close', () => {
      this.ended = true;
      this.wake();
    });
  }
  static async open(port: number): Promise<RawClient> {
    const s = connect(port, '127.0.0.1');
    await new Promise((r) => s.once('connect', r));
    return new RawClient(s);
  }
  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
  bytes(): Buffer {
    return Buffer.concat(this.buf);
  }
  async readUntil(pred: (b: Buffer) => boolean, ms = 10_000): Promise<Buffer> {
    const deadline = Date.now() + ms;
    while (!pred(this.bytes())) {
      if (this.ended) break;
      if (Date.now() > deadline) throw new Error('raw client: timed out');
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    const b = this.bytes();
    this.buf = [];
    return b;
  }
  /** Reads messages up to and including ReadyForQuery. */
  async untilReady(): Promise<PeerMessage[]> {
    let all = Buffer.alloc(0);
    for (;;) {
      all = Buffer.concat([all, await this.readUntil((b) => b.length > 0)]);
      const msgs = parseBackend(all);
      if (msgs.some((m) => m.name === 'readyForQuery') || this.ended) return msgs;
    }
  }
}

describe('pgwire over TCP, trust (--insecure)', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startServer({ insecure: true });
  });
  afterAll(async () => {
    await srv.close();
    expect(srv.factory.openSessions).toBe(0);
    expect(srv.factory.contractViolations).toEqual([]);
  });

  it('pg: simple query, prepared statements, binary results, errors', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: srv.port, user: 'root', database: 'db' });
    await client.connect();
    try {
      const simple = await client.query('select * from t');
      expect(simple.rows[0]).toEqual({ id: 1, name: 'alice', score: 1.5, ok: true, data: Buffer.from([0xde, 0xad]), big: '9007199254740993' });
      expect(simple.rows[2]).toMatchObject({ data: null });
      expect(simple.command).toBe('SELECT');

      for (const id of [2, 3]) {
        const r = await client.query({ name: 'byid', text: 'select * from t where id = $1', values: [id] });
        expect(r.rows.map((x) => x.id)).toEqual([id]);
      }
      // Binary results, read raw and decoded here. NB: pg hands binary fields
      // through a UTF-8 string, so only bytes that are valid UTF-8 survive:
      // float8 1.5 (3ff8…) does not, and is checked byte-exactly in conn.test.ts.
      const raw = { getTypeParser: () => (v: unknown) => v };
      const binary = await client.query({ text: 'select * from t where id = $1', values: [1], binary: true, types: raw } as pg.QueryConfig);
      const row = binary.rows[0] as Record<string, Buffer>;
      expect(binary.fields.map((f) => f.format)).toEqual(Array(6).fill('binary'));
      expect(row['id']!.readInt32BE(0)).toBe(1);
      expect(row['name']!.toString()).toBe('alice');
      expect(row['ok']).toEqual(Buffer.from([1]));
      expect(row['data']).toEqual(Buffer.from([0xde, 0xad]));
      expect(row['big']!.readBigInt64BE(0)).toBe(9007199254740993n);
      // A Buffer parameter goes binary; the text result comes back through pg-types.
      const echo = await client.query('select $1::bytea', [Buffer.from([0, 1, 255])]);
      expect(echo.rows[0].bytea).toEqual(Buffer.from([0, 1, 255]));

      await expect(client.query('select 1/0')).rejects.toMatchObject({ code: '22012' });
      await expect(client.query({ text: 'selec $1', values: [1] })).rejects.toMatchObject({ code: '42601', position: '1' });
      expect((await client.query('select 42')).rows).toEqual([{ '?column?': 42 }]);
      expect((client as unknown as { processID: number }).processID).toBeGreaterThan(0);
    } finally {
      await client.end();
    }
  });

  it('postgres.js: pipelined extended queries, an error inside a pipeline, cursors (PortalSuspended)', async () => {
    const sql = postgres({ host: '127.0.0.1', port: srv.port, user: 'root', database: 'db', max: 1, fetch_types: false, onnotice: () => {} });
    try {
      const results = await Promise.allSettled([
        sql`select * from t where id = ${1}`,
        sql`select * from t where id = ${2}`,
        sql.unsafe('select 1/0'),
        sql`select * from t where id = ${3}`,
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      expect((results[0] as unknown as PromiseFulfilledResult<{ name: string }[]>).value[0]!.name).toBe('alice');
      expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: '22012' });

      const batches: number[][] = [];
      await sql`select * from generate_series(1, 10)`.cursor(4, async (rows) => {
        batches.push(rows.map((r) => r['generate_series'] as number));
      });
      expect(batches).toEqual([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]);

      const multi = await sql.unsafe('select 1; select 2');
      expect(multi.length).toBe(2);

      const inTxn = await sql.begin(async (tx) => [await tx`select * from t where id = ${2}`, await tx`select 7`]);
      expect(inTxn[0]![0]).toMatchObject({ name: 'bob' });
      await expect(sql.begin(async (tx) => tx`select 1/0`)).rejects.toMatchObject({ code: '22012' });
      expect((await sql`select 8`)[0]).toEqual({ '?column?': 8 });
    } finally {
      await sql.end();
    }
  });

  it('postgres.js: query.cancel() sends a CancelRequest that stops the running statement (57014)', async () => {
    const sql = postgres({ host: '127.0.0.1', port: srv.port, user: 'root', database: 'db', max: 1, fetch_types: false });
    try {
      const q = sql`select pg_sleep(60)`;
      const outcome = q.then(() => 'finished', (e: { code?: string }) => e.code);
      await until(() => [...srv.factory.sessions].some((s) => s.running));
      q.cancel();
      expect(await outcome).toBe('57014');
      expect((await sql`select 5`)[0]).toEqual({ '?column?': 5 });
    } finally {
      await sql.end();
    }
  });

  it('psql: select 1, a multi-row result, COPY in and out, an error', async () => {
    const env = { ...process.env, PGCONNECT_TIMEOUT: '10', PGSSLMODE: 'prefer' };
    const one = await run('/usr/bin/psql', ['-h', '127.0.0.1', '-p', String(srv.port), '-U', 'root', '-d', 'db', '-X', '-A', '-t', '-c', 'select 1'], { env });
    expect(one.stdout.trim()).toBe('1');
    const t = await run('/usr/bin/psql', ['-h', '127.0.0.1', '-p', String(srv.port), '-U', 'root', '-d', 'db', '-X', '-A', '-c', 'select * from t'], { env });
    expect(t.stdout.split('\n').slice(0, 2)).toEqual(['id|name|score|ok|data|big', '1|alice|1.5|t|\\xdead|9007199254740993']);
    const copy = run('/usr/bin/psql', ['-h', '127.0.0.1', '-p', String(srv.port), '-U', 'root', '-X', '-c', 'copy t from stdin'], { env });
    copy.child.stdin!.end('7\tseven\n8\teight\n');
    expect((await copy).stdout.trim()).toBe('COPY 2');
    expect(srv.factory.copied.slice(-2)).toEqual(['7\tseven', '8\teight']);
    const out = await run('/usr/bin/psql', ['-h', '127.0.0.1', '-p', String(srv.port), '-U', 'root', '-X', '-c', 'copy t to stdout'], { env });
    expect(out.stdout.split('\n')[1]).toBe('2\tbob\t-2.25\tf\t\\x\t-1');
    const err = await run('/usr/bin/psql', ['-h', '127.0.0.1', '-p', String(srv.port), '-U', 'root', '-X', '-v', 'ON_ERROR_STOP=1', '-c', 'select 1/0'], { env }).catch((e) => e);
    expect(err.stderr).toContain('division by zero');
  });

  it("raw: SSLRequest and GSSENCRequest are answered 'N', then startup proceeds", async () => {
    const c = await RawClient.open(srv.port);
    c.socket.write(serialize.requestSsl());
    expect((await c.readUntil((b) => b.length >= 1)).toString()).toBe('N');
    c.socket.write(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30]));
    expect((await c.readUntil((b) => b.length >= 1)).toString()).toBe('N');
    c.socket.write(serialize.startup({ user: 'root' }));
    expect((await c.untilReady()).at(-1)).toMatchObject({ name: 'readyForQuery', status: 'I' });
    c.socket.end(serialize.end());
  });

  it('raw: after an error, messages up to Sync are skipped; a malformed message gets 08P01 and a close', async () => {
    const c = await RawClient.open(srv.port);
    c.socket.write(serialize.startup({ user: 'root' }));
    await c.untilReady();
    c.socket.write(Buffer.concat([serialize.parse({ text: 'nonsense' }), serialize.bind(), serialize.execute(), serialize.sync()]));
    expect((await c.untilReady()).map((m) => m.name)).toEqual(['error', 'readyForQuery']);
    c.socket.write(Buffer.from([0x3f, 0, 0, 0, 4]));
    const bye = parseBackend(await c.readUntil(() => c.ended));
    expect(bye).toMatchObject([{ name: 'error', severity: 'FATAL', code: '08P01' }]);
    expect(c.ended).toBe(true);
  });

  it('fuzz over TCP: hostile byte streams never crash the server or leak a session; malformed → 08P01 and close (property)', async () => {
    const startupBytes = Buffer.from(serialize.startup({ user: 'root' }));
    await fc.assert(
      fc.asyncProperty(fuzzStreams(), fc.boolean(), async (bytes, inStartup) => {
        const c = await RawClient.open(srv.port);
        if (!inStartup) {
          c.socket.write(startupBytes);
          await c.untilReady();
        }
        c.socket.write(bytes);
        if (oracle(bytes, inStartup) === 'violation') {
          const out = await c.readUntil(() => c.ended);
          expect(parseBackend(out).at(-1)).toMatchObject({ name: 'error', severity: 'FATAL', code: '08P01' });
        }
        c.socket.destroy();
      }),
      { numRuns: 60 },
    );
    await until(() => srv.factory.openSessions === 0);
  });

  it('a client that stops reading: the server stops producing and its buffers stay bounded', async () => {
    const N = 1_000_000;
    const c = await RawClient.open(srv.port);
    c.socket.write(serialize.startup({ user: 'root' }));
    await c.untilReady();
    const conn = srv.conns.at(-1)!;
    c.socket.pause();
    c.socket.write(serialize.query(`select * from generate_series(1, ${N})`));
    // Wait until the executor is parked: rowsOut stops moving.
    let last = -1;
    await until(() => {
      const now = conn.stats.rowsOut;
      const parked = now > 0 && now === last;
      last = now;
      return parked;
    });
    await new Promise((r) => setTimeout(r, 100));
    const parkedAt = conn.stats.rowsOut;
    expect(parkedAt).toBeLessThan(N);
    expect(conn.stats.maxBufferedBytes).toBeLessThanOrEqual(256 * 1024 + 64 * 1024 + 64);
    // Read everything: the rest arrives.
    const start = Date.now();
    let total = 0;
    let tail = Buffer.alloc(0);
    await new Promise<void>((resolve) => {
      c.socket.removeAllListeners('data');
      c.socket.on('data', (b: Buffer) => {
        total += b.length;
        tail = Buffer.concat([tail, b]).subarray(-64);
        if (tail.includes(Buffer.from(`SELECT ${N}\0`))) resolve();
      });
      c.socket.resume();
    });
    const ms = Date.now() - start;
    console.log(`pgwire slow reader: parked after ${parkedAt} rows with at most ${conn.stats.maxBufferedBytes} bytes buffered; ${N} rows (${total} bytes) in ${ms} ms`);
    expect(conn.stats.maxBufferedBytes).toBeLessThanOrEqual(256 * 1024 + 64 * 1024 + 64);
    c.socket.end(serialize.end());
  });
});

describe('pgwire over TCP, passwords and TLS', () => {
  const users = new Map([['alice', makeScramCredential('wonderland', Buffer.from('0123456789abcdef'), 4096)]]);
  let srv: TestServer;
  let tlsSrv: TestServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pgwire-tls-'));
    await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'node.key'), '-out', join(dir, 'node.crt'), '-days', '1', '-subj', '/CN=localhost']);
    const secureContext = secureContextFromCertsDir(dir);
    expect(secureContext).toBeDefined();
    srv = await startServer({ users });
    tlsSrv = await startServer({ users }, { secureContext, preferCleartextOverTls: true });
  });
  afterAll(async () => {
    await srv.close();
    await tlsSrv.close();
    rmSync(dir, { recursive: true, force: true });
    expect(srv.factory.openSessions + tlsSrv.factory.openSessions).toBe(0);
    expect([...srv.factory.contractViolations, ...tlsSrv.factory.contractViolations]).toEqual([]);
  });

  it('--certs-dir: no certificates → no TLS; a key without a certificate is an error', () => {
    const empty = mkdtempSync(join(tmpdir(), 'pgwire-certs-'));
    try {
      expect(secureContextFromCertsDir(empty)).toBeUndefined();
      writeFileSync(join(empty, 'node.key'), 'x');
      expect(() => secureContextFromCertsDir(empty)).toThrow(/node\.crt and node\.key/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('a client that never finishes authentication is disconnected after authTimeoutMs', async () => {
    const quick = await startServer({ users }, { authTimeoutMs: 50 });
    try {
      const c = await RawClient.open(quick.port);
      c.socket.write(serialize.startup({ user: 'alice' })); // then never answers the SASL request
      await c.readUntil(() => c.ended);
      expect(c.ended).toBe(true);
      await quick.conns[0]!.closed;
      expect(quick.factory.openSessions).toBe(0);
    } finally {
      await quick.close();
    }
  });

  it('pg: SCRAM-SHA-256 with the right password works; a wrong one gets 28P01 and the server closes', async () => {
    const ok = new pg.Client({ host: '127.0.0.1', port: srv.port, user: 'alice', password: 'wonderland', database: 'db' });
    await ok.connect();
    expect((await ok.query('select 1')).rows).toEqual([{ '?column?': 1 }]);
    await ok.end();

    const bad = new pg.Client({ host: '127.0.0.1', port: srv.port, user: 'alice', password: 'wrong', database: 'db' });
    await expect(bad.connect()).rejects.toMatchObject({ code: '28P01', message: 'password authentication failed for user "alice"' });
    const conn = srv.conns.at(-1)!;
    await conn.closed;
    expect(conn.isClosed).toBe(true);
  });

  it('psql: SCRAM with PGPASSWORD, and a wrong password', async () => {
    const args = ['-h', '127.0.0.1', '-p', String(srv.port), '-U', 'alice', '-d', 'db', '-X', '-A', '-t', '-c', 'select 2'];
    const ok = await run('/usr/bin/psql', args, { env: { ...process.env, PGPASSWORD: 'wonderland' } });
    expect(ok.stdout.trim()).toBe('2');
    const bad = await run('/usr/bin/psql', args, { env: { ...process.env, PGPASSWORD: 'nope' } }).catch((e) => e);
    expect(bad.stderr).toContain('password authentication failed for user "alice"');
  });

  it("TLS: garbage instead of a handshake after 'S' closes the connection without a crash or a session", async () => {
    const c = await RawClient.open(tlsSrv.port);
    c.socket.write(serialize.requestSsl());
    expect((await c.readUntil((b) => b.length >= 1)).toString()).toBe('S');
    c.socket.write(Buffer.from('this is not a TLS ClientHello, just some bytes\r\n'));
    await c.readUntil(() => c.ended);
    await tlsSrv.conns.at(-1)!.closed;
    expect(tlsSrv.factory.openSessions).toBe(0);
  });

  it('TLS after SSLRequest: pg with cleartext password over TLS, psql with sslmode=require', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: tlsSrv.port, user: 'alice', password: 'wonderland', database: 'db', ssl: { rejectUnauthorized: false } });
    await client.connect();
    expect((await client.query('select * from t where id = $1', [3])).rows[0]).toMatchObject({ name: 'carol' });
    await client.end();
    const out = await run('/usr/bin/psql', ['-h', '127.0.0.1', '-p', String(tlsSrv.port), '-U', 'alice', '-d', 'db', '-X', '-A', '-t', '-c', 'select 3'], {
      env: { ...process.env, PGPASSWORD: 'wonderland', PGSSLMODE: 'require' },
    });
    expect(out.stdout.trim()).toBe('3');
  });
});
