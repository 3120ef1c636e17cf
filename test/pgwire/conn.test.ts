// The connection state machine in memory, against the toy backend: startup,
// authentication, simple and extended query flows (PostgreSQL docs §55.2),
// cancel, backpressure, and fuzzing ("never crash, never leak a session;
// malformed → 08P01 and close").
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { serialize } from 'pg-protocol';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { CancelRegistry } from '../../sql/pgwire/cancel-registry.js';
import { makeScramCredential } from '../../sql/pgwire/scram.js';
import { harness, started, names } from './conn-harness.js';
import { fuzzStreams, oracle } from './fuzz-streams.js';
import { parseBackend, rawDataRows, type PeerMessage } from './pg-peer.js';

const require = createRequire(import.meta.url);
const pgSasl = require(resolve('node_modules/pg/lib/crypto/sasl.js')) as {
  startSession(mechanisms: string[]): { response: string };
  continueSession(session: { response: string }, password: string, serverData: string): Promise<void>;
  finalizeSession(session: { response: string }, serverData: string): void;
};

const field = (m: PeerMessage | undefined, f: string): unknown => m?.[f];
const errorOf = (msgs: readonly PeerMessage[]) => msgs.find((m) => m.name === 'error');

describe('startup', () => {
  it('trust: AuthenticationOk, ParameterStatus, BackendKeyData, ReadyForQuery(I)', async () => {
    const h = harness();
    const msgs = await h.send(serialize.startup({ user: 'root', database: 'db', application_name: 'psql' }));
    expect(msgs[0]!.name).toBe('authenticationOk');
    const params = new Map(msgs.filter((m) => m.name === 'parameterStatus').map((m) => [m['parameterName'], m['parameterValue']]));
    expect(Object.fromEntries(params)).toMatchObject({
      server_version: '15.0 Cairn',
      client_encoding: 'UTF8',
      DateStyle: 'ISO, MDY',
      integer_datetimes: 'on',
      standard_conforming_strings: 'on',
      TimeZone: 'UTC',
      application_name: 'psql',
      is_superuser: 'on',
      session_authorization: 'root',
    });
    expect(names(msgs.slice(-2))).toEqual(['backendKeyData', 'readyForQuery']);
    expect(field(msgs.at(-1), 'status')).toBe('I');
    expect(h.registry.size).toBe(1);
  });

  it("answers SSLRequest and GSSENCRequest with 'N' when TLS is not configured", async () => {
    const h = harness();
    h.conn.feed(serialize.requestSsl());
    h.conn.feed(Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30]));
    await h.conn.whenIdle();
    expect(h.output().toString()).toBe('NN');
    h.conn.feed(serialize.startup({ user: 'root' }));
    await h.conn.whenIdle();
    expect(h.transport.closed).toBe(false);
    expect(h.transport.tlsStarted).toBe(false);
    // Without TLS nothing can be smuggled, so a pipelined StartupMessage is fine (as in PostgreSQL).
    const pipelined = harness();
    const out = await pipelined.raw(Buffer.concat([serialize.requestSsl(), serialize.startup({ user: 'root' })]));
    expect(out.subarray(0, 1).toString()).toBe('N');
    expect(parseBackend(out.subarray(1)).at(-1)).toMatchObject({ name: 'readyForQuery' });
  });

  it("answers 'S' and starts TLS when configured; unencrypted bytes after SSLRequest are a violation", async () => {
    const h = harness({ insecure: true }, { tlsAvailable: true });
    h.conn.feed(serialize.requestSsl());
    await h.conn.whenIdle();
    expect(h.output().toString()).toBe('S');
    expect(h.transport.tlsStarted).toBe(true);

    const stuffed = harness({ insecure: true }, { tlsAvailable: true });
    const msgs = await stuffed.send(Buffer.concat([serialize.requestSsl(), serialize.startup({ user: 'root' })]));
    expect(field(errorOf(msgs), 'code')).toBe('08P01');
    expect(stuffed.transport.closed).toBe(true);
    expect(stuffed.transport.tlsStarted).toBe(false);
  });

  it('refuses protocol 2.0 (0A000), negotiates 3.2 down to 3.0, requires a user (28000)', async () => {
    const v2 = harness();
    const startup2 = serialize.startup({ user: 'root' });
    startup2.writeInt32BE(0x00020000, 4);
    expect(field(errorOf(await v2.send(startup2)), 'code')).toBe('0A000');
    expect(v2.transport.closed).toBe(true);

    const v32 = harness();
    const startup32 = serialize.startup({ user: 'root', _pq_: 'x', '_pq_.compression': 'on' });
    startup32.writeInt32BE(0x00030002, 4);
    v32.conn.feed(startup32);
    await v32.conn.whenIdle();
    const out = v32.output();
    expect(out.subarray(0, 1).toString()).toBe('v');
    expect(out.readInt32BE(5)).toBe(0); // newest minor version we speak
    expect(out.readInt32BE(9)).toBe(1); // one unrecognised _pq_ option
    expect(out.subarray(13, 13 + 17).toString()).toBe('_pq_.compression\0');
    expect(v32.transport.closed).toBe(false);

    const noUser = harness();
    expect(field(errorOf(await noUser.send(serialize.startup({ database: 'db' }))), 'code')).toBe('28000');
    expect(noUser.transport.closed).toBe(true);
  });

  it('refuses a session the backend rejects (3D000) and a rejected user (28000), without leaking', async () => {
    const h = harness();
    const msgs = await h.send(serialize.startup({ user: 'root', database: 'nodb' }));
    expect(field(errorOf(msgs), 'code')).toBe('3D000');
    expect(field(errorOf(msgs), 'severity')).toBe('FATAL');
    expect(h.transport.closed).toBe(true);
    expect(h.factory.openSessions).toBe(0);

    const blocked = harness({ users: new Map() });
    expect(field(errorOf(await blocked.send(serialize.startup({ user: 'blocked' }))), 'code')).toBe('28000');
  });
});

describe('authentication', () => {
  const users = new Map([['alice', makeScramCredential('wonderland', Buffer.from('saltsaltsaltsalt'), 4096)]]);

  async function scram(user: string, password: string) {
    const h = harness({ users });
    const sasl = await h.send(serialize.startup({ user }));
    expect(sasl).toMatchObject([{ name: 'authenticationSASL', mechanisms: ['SCRAM-SHA-256'] }]);
    const client = pgSasl.startSession(['SCRAM-SHA-256']);
    const cont = await h.send(serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', client.response));
    expect(names(cont)).toEqual(['authenticationSASLContinue']);
    await pgSasl.continueSession(client, password, String(cont[0]!['data']));
    const final = await h.send(serialize.sendSCRAMClientFinalMessage(client.response));
    return { h, client, final };
  }

  it('SCRAM-SHA-256 with the right password (RFC 5802 exchange, pg client)', async () => {
    const { h, client, final } = await scram('alice', 'wonderland');
    expect(names(final).slice(0, 2)).toEqual(['authenticationSASLFinal', 'authenticationOk']);
    pgSasl.finalizeSession(client, String(final[0]!['data']));
    expect(final.at(-1)).toMatchObject({ name: 'readyForQuery', status: 'I' });
    expect(h.transport.closed).toBe(false);
  });

  it('a wrong password gets 28P01 and the connection closes; an unknown user looks the same', async () => {
    for (const [user, pw] of [['alice', 'wrong'], ['nobody', 'wonderland']] as const) {
      const { h, final } = await scram(user, pw);
      expect(final).toMatchObject([{ name: 'error', severity: 'FATAL', code: '28P01', message: `password authentication failed for user "${user}"` }]);
      expect(h.transport.closed).toBe(true);
      expect(h.factory.openSessions).toBe(0);
    }
  });

  it('a query instead of the SASL response is a protocol violation', async () => {
    const h = harness({ users });
    await h.send(serialize.startup({ user: 'alice' }));
    expect(field(errorOf(await h.send(serialize.query('select 1'))), 'code')).toBe('08P01');
    expect(h.transport.closed).toBe(true);
  });

  it('hostile SASL messages end in 08P01 or 28P01 and a close, never a crash (property)', async () => {
    const client = Buffer.from(serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', 'n,,n=*,r=clientnonce'));
    const body = fc.oneof(
      fc.uint8Array({ maxLength: 80 }).map((a) => {
        const m = Buffer.alloc(5 + a.length);
        m.write('p', 0, 'latin1');
        m.writeInt32BE(4 + a.length, 1);
        Buffer.from(a).copy(m, 5);
        return m;
      }),
      fc.tuple(fc.nat(client.length - 1), fc.integer({ min: 0, max: 255 })).map(([at, v]) => {
        const m = Buffer.from(client);
        m[at] = v;
        return m;
      }),
    );
    await fc.assert(
      fc.asyncProperty(body, fc.string({ maxLength: 60 }), async (first, final) => {
        const h = harness({ users });
        await h.send(serialize.startup({ user: 'alice' }));
        const msgs = [...(await h.send(first)), ...(h.transport.closed ? [] : await h.send(serialize.sendSCRAMClientFinalMessage(final)))];
        expect(h.internalErrors).toEqual([]);
        if (h.transport.closed) {
          const last = msgs.at(-1) as { code?: string; severity?: string };
          expect(last.severity).toBe('FATAL');
          expect(['08P01', '28P01']).toContain(last.code);
        }
        h.conn.inputEnded();
        await h.conn.closed;
        expect(h.factory.openSessions).toBe(0);
        expect(h.factory.contractViolations).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('cleartext password over TLS when preferred', async () => {
    const h = harness({ users }, { tlsAvailable: true, preferCleartextOverTls: true });
    expect((await h.raw(serialize.requestSsl())).toString()).toBe('S');
    expect(names(await h.send(serialize.startup({ user: 'alice' })))).toEqual(['authenticationCleartextPassword']);
    const ok = await h.send(serialize.password('wonderland'));
    expect(ok[0]!.name).toBe('authenticationOk');
    expect(ok.at(-1)!.name).toBe('readyForQuery');

    const bad = harness({ users }, { tlsAvailable: true, preferCleartextOverTls: true });
    await bad.raw(serialize.requestSsl());
    await bad.send(serialize.startup({ user: 'alice' }));
    expect(field(errorOf(await bad.send(serialize.password('nope'))), 'code')).toBe('28P01');
    expect(bad.transport.closed).toBe(true);
  });
});

describe('simple query', () => {
  it('runs several statements per message', async () => {
    const h = await started();
    const msgs = await h.send(serialize.query('select 1; select * from t'));
    expect(names(msgs)).toEqual([
      'rowDescription', 'dataRow', 'commandComplete',
      'rowDescription', 'dataRow', 'dataRow', 'dataRow', 'commandComplete', 'readyForQuery',
    ]);
    expect(msgs[1]).toMatchObject({ fields: ['1'] });
    expect(msgs[4]).toMatchObject({ fields: ['1', 'alice', '1.5', 't', '\\xdead', '9007199254740993'] });
    expect(msgs[6]).toMatchObject({ fields: ['3', 'carol', '0', 't', null, '0'] });
    expect(msgs[7]).toMatchObject({ text: 'SELECT 3' });
  });

  it('an error aborts the rest of the message; ErrorResponse carries position and hint', async () => {
    const h = await started();
    const msgs = await h.send(serialize.query('select 1; select 1/0; select 2'));
    // The failing statement's RowDescription precedes its (run-time) error, as in PostgreSQL.
    expect(names(msgs)).toEqual(['rowDescription', 'dataRow', 'commandComplete', 'rowDescription', 'error', 'readyForQuery']);
    expect(msgs[4]).toMatchObject({ severity: 'ERROR', code: '22012', message: 'division by zero' });
    const syntax = await h.send(serialize.query('selec 1'));
    expect(syntax[0]).toMatchObject({ code: '42601', position: '1', hint: 'the toy backend knows a handful of statements' });
    expect(h.transport.closed).toBe(false);
  });

  it('empty query → EmptyQueryResponse', async () => {
    const h = await started();
    expect(names(await h.send(serialize.query('')))).toEqual(['emptyQuery', 'readyForQuery']);
    expect(names(await h.send(serialize.query('  ;')))).toEqual(['emptyQuery', 'readyForQuery']);
  });

  it('reports the transaction status: T inside, E after an error, I after rollback', async () => {
    const h = await started();
    expect((await h.send(serialize.query('begin'))).at(-1)).toMatchObject({ status: 'T' });
    expect((await h.send(serialize.query('select 1/0'))).at(-1)).toMatchObject({ status: 'E' });
    const aborted = await h.send(serialize.query('select 1'));
    expect(aborted[0]).toMatchObject({ code: '25P02' });
    expect(aborted.at(-1)).toMatchObject({ status: 'E' });
    expect((await h.send(serialize.query('rollback'))).at(-1)).toMatchObject({ status: 'I' });
  });

  it('relays notices and parameter changes mid-statement', async () => {
    const h = await started();
    const msgs = await h.send(serialize.query("select notice(); set timezone = 'Europe/Paris'"));
    expect(names(msgs)).toEqual(['rowDescription', 'notice', 'dataRow', 'commandComplete', 'parameterStatus', 'commandComplete', 'readyForQuery']);
    expect(msgs[1]).toMatchObject({ severity: 'WARNING', code: '01000', detail: 'sent mid-statement' });
    expect(msgs[4]).toMatchObject({ parameterName: 'TimeZone', parameterValue: 'Europe/Paris' });
  });

  it('a bug in the backend (not a CairnError) is FATAL XX000, closes, and is reported', async () => {
    const h = await started();
    const msgs = await h.send(serialize.query('select boom()'));
    expect(msgs).toMatchObject([{ name: 'error', severity: 'FATAL', code: 'XX000' }]);
    expect(h.transport.closed).toBe(true);
    expect(h.internalErrors).toHaveLength(1);
    await h.conn.closed;
    expect(h.factory.openSessions).toBe(0);
  });
});

describe('extended query', () => {
  it('Parse, Bind, Describe portal, Execute, Sync with a text parameter', async () => {
    const h = await started();
    const msgs = await h.send(
      serialize.parse({ text: 'select * from t where id = $1' }),
      serialize.bind({ values: ['2'] }),
      serialize.describe({ type: 'P' }),
      serialize.execute(),
      serialize.sync(),
    );
    expect(names(msgs)).toEqual(['parseComplete', 'bindComplete', 'rowDescription', 'dataRow', 'commandComplete', 'readyForQuery']);
    expect(msgs[3]).toMatchObject({ fields: ['2', 'bob', '-2.25', 'f', '\\x', '-1'] });
    expect(msgs[4]).toMatchObject({ text: 'SELECT 1' });
  });

  it('binary parameters and results, byte-exact; RowDescription carries the format codes', async () => {
    const h = await started();
    const id = Buffer.alloc(4);
    id.writeInt32BE(1);
    const out = await h.raw(
      serialize.parse({ name: 'q', text: 'select * from t where id = $1' }),
      serialize.bind({ statement: 'q', values: [id], binary: true }),
      serialize.describe({ type: 'P' }),
      serialize.execute(),
      serialize.sync(),
    );
    const msgs = parseBackend(out);
    const rd = msgs.find((m) => m.name === 'rowDescription') as unknown as { fields: { format: string; dataTypeID: number }[] };
    expect(rd.fields.map((f) => f.format)).toEqual(Array(6).fill('binary'));
    expect(rd.fields.map((f) => f.dataTypeID)).toEqual([23, 25, 701, 16, 17, 20]);
    const [row] = rawDataRows(out);
    expect(row!.map((v) => v?.toString('hex'))).toEqual([
      '00000001', Buffer.from('alice').toString('hex'), '3ff8000000000000', '01', 'dead', '0020000000000001',
    ]);
  });

  it('Describe statement: ParameterDescription with inferred types, then RowDescription or NoData', async () => {
    const h = await started();
    const msgs = await h.send(
      serialize.parse({ name: 'inc', text: 'select $1 + 1' }),
      serialize.describe({ type: 'S', name: 'inc' }),
      serialize.parse({ name: 'b', text: 'begin' }),
      serialize.describe({ type: 'S', name: 'b' }),
      serialize.sync(),
    );
    expect(names(msgs)).toEqual(['parseComplete', 'parameterDescription', 'rowDescription', 'parseComplete', 'parameterDescription', 'noData', 'readyForQuery']);
    expect(msgs[1]).toMatchObject({ dataTypeIDs: [23] });
    expect(msgs[4]).toMatchObject({ dataTypeIDs: [] });
  });

  it('after an error, discards messages until Sync (§55.2.3)', async () => {
    const h = await started();
    const msgs = await h.send(
      serialize.parse({ text: 'selec oops' }),
      serialize.bind(),
      serialize.describe({ type: 'P' }),
      serialize.execute(),
      serialize.query('select 1'),
      serialize.sync(),
    );
    expect(names(msgs)).toEqual(['error', 'readyForQuery']);
    expect(msgs[0]).toMatchObject({ code: '42601' });
    const next = await h.send(serialize.parse({ text: 'select 7' }), serialize.bind(), serialize.execute(), serialize.sync());
    expect(names(next)).toEqual(['parseComplete', 'bindComplete', 'dataRow', 'commandComplete', 'readyForQuery']);
  });

  it('Execute with a row limit → PortalSuspended, and resumes', async () => {
    const h = await started();
    const msgs = await h.send(
      serialize.parse({ text: 'select * from generate_series(1, 5)' }),
      serialize.bind({ portal: 'c' }),
      serialize.execute({ portal: 'c', rows: 2 }),
      serialize.execute({ portal: 'c', rows: 2 }),
      serialize.execute({ portal: 'c', rows: 2 }),
      serialize.sync(),
    );
    expect(names(msgs)).toEqual([
      'parseComplete', 'bindComplete', 'dataRow', 'dataRow', 'portalSuspended',
      'dataRow', 'dataRow', 'portalSuspended', 'dataRow', 'commandComplete', 'readyForQuery',
    ]);
    expect(msgs.filter((m) => m.name === 'dataRow').map((m) => (m['fields'] as string[])[0])).toEqual(['1', '2', '3', '4', '5']);
    expect(msgs[9]).toMatchObject({ text: 'SELECT 1' });
  });

  it('named statements and portals must be closed before reuse; unknown names are errors; Close of a missing name is fine', async () => {
    const h = await started();
    const dupStmt = await h.send(serialize.parse({ name: 's', text: 'select 1' }), serialize.parse({ name: 's', text: 'select 2' }), serialize.sync());
    expect(names(dupStmt)).toEqual(['parseComplete', 'error', 'readyForQuery']);
    expect(dupStmt[1]).toMatchObject({ code: '42P05' });
    const reuse = await h.send(serialize.close({ type: 'S', name: 's' }), serialize.parse({ name: 's', text: 'select 2' }), serialize.close({ type: 'S', name: 'zz' }), serialize.sync());
    expect(names(reuse)).toEqual(['closeComplete', 'parseComplete', 'closeComplete', 'readyForQuery']);
    const dupPortal = await h.send(serialize.query('begin'), serialize.bind({ portal: 'p', statement: 's' }), serialize.bind({ portal: 'p', statement: 's' }), serialize.sync());
    expect(names(dupPortal).slice(-3)).toEqual(['bindComplete', 'error', 'readyForQuery']);
    expect(dupPortal.at(-2)).toMatchObject({ code: '42P03' });
    expect((await h.send(serialize.bind({ statement: 'nope' }), serialize.sync()))[0]).toMatchObject({ code: '26000' });
    expect((await h.send(serialize.execute({ portal: 'nope' }), serialize.sync()))[0]).toMatchObject({ code: '34000' });
  });

  it('portals die at the end of the transaction', async () => {
    const h = await started();
    await h.send(serialize.parse({ name: 's', text: 'select 1' }), serialize.bind({ portal: 'p', statement: 's' }), serialize.sync());
    expect((await h.send(serialize.execute({ portal: 'p' }), serialize.sync()))[0]).toMatchObject({ code: '34000' });
  });

  it('a Bind with the wrong parameter count is an error, not a disconnect', async () => {
    const h = await started();
    const msgs = await h.send(serialize.parse({ text: 'select $1 + 1' }), serialize.bind({ values: [] }), serialize.sync());
    expect(msgs[1]).toMatchObject({ code: '08P01', severity: 'ERROR' });
    expect(h.transport.closed).toBe(false);
  });

  it('output waits for Sync or Flush', async () => {
    const h = await started();
    expect(await h.send(serialize.parse({ text: 'select 1' }))).toEqual([]);
    expect(names(await h.send(serialize.flush()))).toEqual(['parseComplete']);
  });

  it('CopyData/CopyDone/CopyFail outside COPY are ignored; a password message is a violation', async () => {
    const h = await started();
    expect(await h.send(serialize.copyData(Buffer.from('x')), serialize.copyDone(), serialize.copyFail('x'))).toEqual([]);
    expect(await h.send(serialize.password('x'))).toMatchObject([{ name: 'error', code: '08P01', severity: 'FATAL' }]);
    expect(h.transport.closed).toBe(true);
  });

  it('a message above maxMessageSize is a protocol violation, detected from its header', async () => {
    const h = await started({ insecure: true }, { maxMessageSize: 1024 });
    expect(names(await h.send(serialize.query(`select ${'1'.repeat(900)}`)))).toContain('readyForQuery');
    const big = serialize.query(`select ${'1'.repeat(2000)}`);
    expect(await h.send(big.subarray(0, 5))).toMatchObject([{ name: 'error', severity: 'FATAL', code: '08P01' }]);
    expect(h.transport.closed).toBe(true);
  });

  it('Terminate closes the connection and the session', async () => {
    const h = await started();
    await h.send(serialize.end());
    expect(h.transport.closed).toBe(true);
    await h.conn.closed;
    expect(h.factory.openSessions).toBe(0);
    expect(h.registry.size).toBe(0);
  });
});

describe('COPY', () => {
  it('FROM STDIN: CopyInResponse is flushed at once, CopyData flows to the session until CopyDone', async () => {
    const h = await started();
    const start = await h.send(serialize.query('copy t from stdin'));
    expect(start).toMatchObject([{ name: 'copyInResponse', binary: false, columnTypes: [0, 0, 0, 0, 0, 0] }]);
    expect(await h.send(serialize.copyData(Buffer.from('1\tx\n2\t')), serialize.flush())).toEqual([]);
    const end = await h.send(serialize.copyData(Buffer.from('y\n')), serialize.copyDone());
    expect(end).toMatchObject([{ name: 'commandComplete', text: 'COPY 2' }, { name: 'readyForQuery', status: 'I' }]);
    expect(h.factory.copied).toEqual(['1\tx', '2\ty']);
  });

  it('FROM STDIN: CopyFail ends the COPY with 57014; late CopyData is ignored', async () => {
    const h = await started();
    await h.send(serialize.query('copy t from stdin'));
    const msgs = await h.send(serialize.copyData(Buffer.from('1\n')), serialize.copyFail('client gave up'), serialize.copyData(Buffer.from('2\n')));
    expect(msgs).toMatchObject([{ name: 'error', code: '57014', message: 'COPY from stdin failed: client gave up' }, { name: 'readyForQuery' }]);
    expect(h.transport.closed).toBe(false);
  });

  it('FROM STDIN: a Query in the middle is a protocol violation; closing mid-COPY closes the session', async () => {
    const h = await started();
    await h.send(serialize.query('copy t from stdin'));
    expect(await h.send(serialize.query('select 1'))).toMatchObject([{ name: 'error', severity: 'FATAL', code: '08P01' }]);
    expect(h.transport.closed).toBe(true);
    await h.conn.closed;
    expect(h.factory.openSessions).toBe(0);

    const g = await started();
    await g.send(serialize.query('copy t from stdin'));
    g.conn.inputEnded();
    await g.conn.closed;
    expect(g.factory.openSessions).toBe(0);
  });

  it('TO STDOUT: CopyOutResponse, CopyData per row, CopyDone, CommandComplete', async () => {
    const h = await started();
    const msgs = await h.send(serialize.query('copy t to stdout'));
    expect(names(msgs)).toEqual(['copyOutResponse', 'copyData', 'copyData', 'copyData', 'copyDone', 'commandComplete', 'readyForQuery']);
    expect(String(msgs[1]!['chunk'])).toBe('1\talice\t1.5\tt\t\\xdead\t9007199254740993\n');
    expect(msgs[5]).toMatchObject({ text: 'COPY 3' });
  });
});

describe('cancel', () => {
  it('a CancelRequest with the right (pid, secret) cancels the running statement (57014); a wrong secret does nothing', async () => {
    const registry = new CancelRegistry();
    const h = await started({ insecure: true }, {}, registry);
    const key = h.output();
    const k = key.indexOf(Buffer.from([0x4b, 0, 0, 0, 12]));
    const pid = key.readInt32BE(k + 5);
    const secret = key.readInt32BE(k + 9);
    h.conn.feed(serialize.query('select pg_sleep(60)'));
    await new Promise((r) => setImmediate(r));

    const wrong = harness({ insecure: true }, {}, registry);
    expect(await wrong.send(serialize.cancel(pid, secret ^ 1))).toEqual([]);
    expect(wrong.transport.closed).toBe(true);

    const right = harness({ insecure: true }, {}, registry);
    await right.send(serialize.cancel(pid, secret));
    expect(right.transport.closed).toBe(true);
    await h.conn.whenIdle();
    const msgs = await h.send();
    expect(msgs).toMatchObject([{ name: 'rowDescription' }, { name: 'error', code: '57014' }, { name: 'readyForQuery', status: 'I' }]);
  });

  it('closing mid-statement cancels it and then closes the session once', async () => {
    const h = await started();
    h.conn.feed(serialize.query('select pg_sleep(60)'));
    await new Promise((r) => setImmediate(r));
    h.conn.inputEnded();
    await h.conn.closed;
    expect(h.factory.openSessions).toBe(0);
    expect(h.factory.contractViolations).toEqual([]);
  });
});

describe('backpressure', () => {
  it('a client that does not read stops the executor at the high-water mark', async () => {
    const h = await started({ insecure: true }, { flushBytes: 4096, highWaterMark: 16384 });
    h.transport.holdOutput = true;
    const N = 100_000;
    h.conn.feed(serialize.query(`select * from generate_series(1, ${N})`));
    // Wait (bounded) until the executor blocks on drain.
    for (let i = 0; i < 1000 && h.transport.drainWaiters === 0; i++) await new Promise((r) => setImmediate(r));
    expect(h.transport.drainWaiters).toBe(1);
    const blockedAt = h.conn.stats.rowsOut;
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(h.conn.stats.rowsOut).toBe(blockedAt); // nothing more is produced while the client does not read
    expect(h.conn.stats.maxBufferedBytes).toBeLessThanOrEqual(16384 + 4096 + 64);
    // The client reads: everything arrives, memory stayed bounded throughout.
    while (!h.output().includes(`SELECT ${N}`)) {
      h.transport.drain();
      await new Promise((r) => setImmediate(r));
    }
    await h.conn.whenIdle();
    expect(h.conn.stats.rowsOut).toBe(N);
    expect(h.conn.stats.maxBufferedBytes).toBeLessThanOrEqual(16384 + 4096 + 64);
  });

  it('input is paused while a statement runs and the unread input is large, then resumed', async () => {
    const h = await started({ insecure: true }, { inputHighWaterMark: 1024 });
    expect(h.conn.feed(serialize.query('select pg_sleep(0.05)'))).toBe(true);
    expect(h.conn.feed(Buffer.concat(Array.from({ length: 100 }, () => serialize.query('select 1'))))).toBe(false);
    await h.conn.whenIdle();
    expect(h.transport.resumed).toBe(1);
  });
});

describe('fuzzing: random and mutated frontend streams', () => {
  // NB: copied — pg-protocol's serializer may reuse its output buffer.
  const startupBytes = Buffer.from(serialize.startup({ user: 'root' }));
  const streams = fuzzStreams();

  it('never throws, ends malformed input with FATAL 08P01 + close, never leaks a session (property)', async () => {
    await fc.assert(
      fc.asyncProperty(streams, fc.boolean(), fc.nat(40), async (bytes, inStartup, cut) => {
        const h = harness();
        if (!inStartup) await h.send(startupBytes);
        const before = h.transport.out.length;
        h.conn.feed(bytes.subarray(0, cut));
        h.conn.feed(bytes.subarray(cut));
        await h.conn.whenIdle();
        expect(h.internalErrors).toEqual([]);
        const expected = oracle(bytes, inStartup);
        if (expected === 'violation') {
          expect(h.transport.closed).toBe(true);
          const msgs = parseBackend(Buffer.concat(h.transport.out.slice(before)));
          expect(msgs.at(-1)).toMatchObject({ name: 'error', severity: 'FATAL', code: '08P01' });
        } else if (expected === 'fine') {
          expect(h.transport.closed).toBe(false);
        }
        h.conn.inputEnded();
        await h.conn.closed;
        expect(h.factory.openSessions).toBe(0);
        expect(h.factory.contractViolations).toEqual([]);
      }),
      { numRuns: 400 },
    );
  });
});
