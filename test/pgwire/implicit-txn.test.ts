/**
 * The extended protocol's implicit transaction (DESIGN.md §3, PostgreSQL's
 * exec_execute_message / Sync): the Executes between two Syncs outside BEGIN
 * run in ONE implicit transaction, committed at Sync and rolled back when any
 * of them failed — not one transaction per Execute. Driven over a real socket
 * with hand-built pipelines (pg-protocol's serializer), against the real
 * session (sql/session/session.ts) over MemoryKV; plus the Sync look-ahead
 * (RowSink.syncFollows) that keeps a lone Execute's one-phase commit, and
 * postgres.js, which pipelines one Sync per query.
 */
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { connect, type Socket } from 'node:net';
import { serialize } from 'pg-protocol';
import pg from 'pg';
import postgres from 'postgres';
import { startSqlServer, type TestSqlServer } from '../support/sql-server.js';
import { parseBackend, type PeerMessage } from './pg-peer.js';
import type { RowSink, SessionBackend } from '../../sql/pgwire/session-backend.js';

let srv: TestSqlServer;
let admin: pg.Client;

beforeEach(async () => {
  srv = await startSqlServer({ insecure: true });
  admin = new pg.Client(srv.url);
  await admin.connect();
  await admin.query('CREATE TABLE t (k INT PRIMARY KEY, v TEXT NOT NULL)');
});
afterEach(async () => {
  await admin.end();
  await srv.stop();
});

/** A raw protocol-3 connection: send frames, read until the n-th ReadyForQuery (or a predicate). */
class RawConn {
  private data = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  private constructor(private readonly sock: Socket) {
    sock.on('data', (d: Buffer) => {
      this.data = Buffer.concat([this.data, d]);
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static async open(port: number): Promise<RawConn> {
    const sock = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => sock.once('connect', resolve).once('error', reject));
    const c = new RawConn(sock);
    c.send(serialize.startup({ user: 'root', database: 'defaultdb' }));
    await c.until((ms) => ms.some((m) => m.name === 'readyForQuery'));
    c.data = Buffer.alloc(0);
    return c;
  }

  send(...frames: Buffer[]): void {
    this.sock.write(Buffer.concat(frames));
  }

  /** Waits (bounded) until the messages received since the last take() satisfy `done`; returns them. */
  async until(done: (ms: PeerMessage[]) => boolean, timeoutMs = 10_000): Promise<PeerMessage[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ms = parseBackend(this.data);
      if (done(ms)) return ms;
      if (Date.now() > deadline) throw new Error(`raw: timed out; got ${ms.map((m) => m.name).join(',')}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }

  /** Messages up to the next ReadyForQuery; consumes them. */
  async take(): Promise<PeerMessage[]> {
    const ms = await this.until((m) => m.some((x) => x.name === 'readyForQuery'));
    this.data = Buffer.alloc(0);
    return ms;
  }

  close(): void {
    this.sock.end(serialize.end());
  }
}

const insert = (k: number, v: string | null): Buffer[] => [serialize.bind({ statement: 'ins', values: [String(k), v] }), serialize.execute({})];
const names = (ms: readonly PeerMessage[]): string[] => ms.map((m) => (m.name === 'error' ? `error:${String(m['code'])}` : m.name === 'commandComplete' ? `complete:${String(m['text'])}` : m.name));
const count = async (): Promise<number> => Number((await admin.query('SELECT count(*) AS n FROM t')).rows[0].n);

describe('the implicit transaction of the extended protocol', () => {
  it('a pipelined batch of two INSERTs whose second fails leaves neither row', async () => {
    const c = await RawConn.open(srv.port);
    try {
      c.send(serialize.parse({ name: 'ins', text: 'INSERT INTO t VALUES ($1, $2)', types: [] }), ...insert(1, 'one'), ...insert(2, null), serialize.sync());
      expect(names(await c.take())).toEqual(['parseComplete', 'bindComplete', 'complete:INSERT 0 1', 'bindComplete', 'error:23502', 'readyForQuery']);
      expect(await count()).toBe(0);
      // The session is usable afterwards, and the same pipeline without the bad row commits both.
      c.send(...insert(1, 'one'), ...insert(2, 'two'), serialize.sync());
      expect(names(await c.take())).toEqual(['bindComplete', 'complete:INSERT 0 1', 'bindComplete', 'complete:INSERT 0 1', 'readyForQuery']);
      expect(await count()).toBe(2);
      // A unique violation in the middle rolls back the INSERT before it too.
      c.send(...insert(3, 'three'), ...insert(1, 'dup'), ...insert(4, 'four'), serialize.sync());
      expect(names(await c.take())).toEqual(['bindComplete', 'complete:INSERT 0 1', 'bindComplete', 'error:23505', 'readyForQuery']);
      expect((await admin.query('SELECT k FROM t ORDER BY k')).rows).toEqual([{ k: 1 }, { k: 2 }]);
    } finally {
      c.close();
    }
  });

  it('commits at Sync: the writes of a batch are invisible to others until Sync arrives', async () => {
    const c = await RawConn.open(srv.port);
    try {
      c.send(serialize.parse({ name: 'ins', text: 'INSERT INTO t VALUES ($1, $2)', types: [] }), ...insert(1, 'one'), ...insert(2, 'two'), serialize.flush());
      await c.until((ms) => ms.filter((m) => m.name === 'commandComplete').length === 2);
      expect(await count()).toBe(0);
      c.send(serialize.sync());
      const ms = await c.take();
      expect(ms[ms.length - 1]).toMatchObject({ name: 'readyForQuery', status: 'I' });
      expect(await count()).toBe(2);
    } finally {
      c.close();
    }
  });

  it('a commit that fails at Sync is reported there (40001 after both CommandCompletes); nothing is written', async () => {
    const c = await RawConn.open(srv.port);
    try {
      c.send(serialize.parse({ name: 'ins', text: 'INSERT INTO t VALUES ($1, $2)', types: [] }), serialize.flush());
      await c.until((ms) => ms.some((m) => m.name === 'parseComplete'));
      srv.kv.injectRetryErrors(1);
      c.send(...insert(1, 'one'), ...insert(2, 'two'), serialize.sync());
      const ms = await c.take();
      expect(names(ms).filter((n) => n !== 'parseComplete')).toEqual(['bindComplete', 'complete:INSERT 0 1', 'bindComplete', 'complete:INSERT 0 1', 'error:40001', 'readyForQuery']);
      expect(ms[ms.length - 1]).toMatchObject({ status: 'I' });
      expect(await count()).toBe(0);
    } finally {
      c.close();
    }
  });

  it('a later statement of the batch reads the earlier ones\' writes; ROLLBACK ends the batch\'s transaction', async () => {
    const c = await RawConn.open(srv.port);
    try {
      c.send(
        serialize.parse({ name: 'ins', text: 'INSERT INTO t VALUES ($1, $2)', types: [] }),
        ...insert(5, 'five'),
        serialize.parse({ name: 'cnt', text: 'SELECT count(*) FROM t', types: [] }),
        serialize.bind({ statement: 'cnt' }),
        serialize.execute({}),
        serialize.parse({ name: 'rb', text: 'ROLLBACK', types: [] }),
        serialize.bind({ statement: 'rb' }),
        serialize.execute({}),
        serialize.sync(),
      );
      const ms = await c.take();
      expect(ms.find((m) => m.name === 'dataRow')?.['fields']).toEqual(['1']);
      expect(names(ms).filter((n) => n.startsWith('complete'))).toEqual(['complete:INSERT 0 1', 'complete:SELECT 1', 'complete:ROLLBACK']);
      expect(await count()).toBe(0);
    } finally {
      c.close();
    }
  });

  it('BEGIN after earlier Executes of the same Sync makes their transaction explicit (PostgreSQL)', async () => {
    const c = await RawConn.open(srv.port);
    try {
      c.send(
        serialize.parse({ name: 'ins', text: 'INSERT INTO t VALUES ($1, $2)', types: [] }),
        ...insert(1, 'one'),
        serialize.parse({ name: 'begin', text: 'BEGIN', types: [] }),
        serialize.bind({ statement: 'begin' }),
        serialize.execute({}),
        ...insert(2, 'two'),
        serialize.sync(),
      );
      const ms = await c.take();
      expect(ms[ms.length - 1]).toMatchObject({ name: 'readyForQuery', status: 'T' });
      expect(await count()).toBe(0);
      c.send(serialize.query('ROLLBACK'));
      await c.take();
      expect(await count()).toBe(0);
    } finally {
      c.close();
    }
  });

  it('with the Sync look-ahead a lone Execute commits with itself; without it, at sync()', async () => {
    const session = (await srv.sql.factory.startSession({ user: 'root', database: 'defaultdb', params: new Map(), tls: false })) as SessionBackend;
    const sink = (syncFollows: boolean | undefined): RowSink => ({
      row: () => undefined,
      copyIn: () => {
        throw new Error('no copy');
      },
      copyOut: () => {},
      copyData: () => undefined,
      copyDone: () => {},
      canRewind: () => true,
      rewind: () => {},
      notice: () => {},
      parameterStatus: () => {},
      ...(syncFollows === undefined ? {} : { syncFollows: () => syncFollows }),
    });
    try {
      const stmt = await session.prepare('', 'INSERT INTO t VALUES ($1, $2)', []);
      const run = async (k: number, syncFollows: boolean | undefined): Promise<void> => {
        const portal = await session.bind(stmt, '', { values: [Buffer.from(String(k)), Buffer.from('x')], paramFormats: [0, 0], resultFormats: [] });
        expect(await session.execute(portal, 0, sink(syncFollows))).toEqual({ kind: 'complete', tag: 'INSERT 0 1' });
      };
      await run(1, true);
      expect(await count()).toBe(1); // committed by the Execute itself
      await run(2, false);
      expect(await count()).toBe(1); // waits for Sync
      await session.sync(false);
      expect(await count()).toBe(2);
      await run(3, undefined); // a connection without the look-ahead
      expect(await count()).toBe(2);
      await session.sync(true); // an error was sent since the previous Sync
      expect(await count()).toBe(2);
      const before = srv.kv.commitCount;
      await run(4, true);
      await session.sync(false);
      expect(srv.kv.commitCount - before).toBe(1);
    } finally {
      await session.close();
    }
  });

  it('postgres.js still pipelines (one Sync per query): a failing query fails alone', async () => {
    const sql = postgres({ host: '127.0.0.1', port: srv.port, user: 'root', database: 'defaultdb', max: 1, fetch_types: false, onnotice: () => {} });
    try {
      const results = await Promise.allSettled([
        sql`INSERT INTO t VALUES (${1}, ${'a'})`,
        sql`INSERT INTO t VALUES (${2}, ${'b'})`,
        sql`INSERT INTO t VALUES (${1}, ${'dup'})`,
        sql`INSERT INTO t VALUES (${3}, ${'c'})`,
        sql`SELECT count(*)::int AS n FROM t`,
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
      expect((results[4] as unknown as PromiseFulfilledResult<{ n: number }[]>).value[0]).toEqual({ n: 3 });
      const inTxn = await sql.begin(async (tx) => [await tx`INSERT INTO t VALUES (${4}, ${'d'})`, await tx`SELECT count(*)::int AS n FROM t`]);
      expect(inTxn[1]![0]).toEqual({ n: 4 });
      expect(await count()).toBe(4);
    } finally {
      await sql.end();
    }
  });
});
