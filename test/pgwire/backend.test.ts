// Backend serializer: every message read back by pg-protocol's client Parser
// (PostgreSQL docs §55.7), whole and split at every offset; DataRow as a
// property over random rows.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { BackendWriter, sslResponse, type ColumnDescriptor } from '../../sql/pgwire/backend.js';
import { parseBackend } from './pg-peer.js';

const COLUMNS: ColumnDescriptor[] = [
  { name: 'id', tableOid: 16384, columnAttr: 1, typeOid: 23, typeSize: 4, typeModifier: -1, format: 0 },
  { name: 'naïve', tableOid: 0, columnAttr: 0, typeOid: 4294967295, typeSize: -1, typeModifier: 68, format: 1 },
];

function writeAll(w: BackendWriter): void {
  w.authenticationOk();
  w.authenticationCleartextPassword();
  w.authenticationSASL(['SCRAM-SHA-256', 'SCRAM-SHA-256-PLUS']);
  w.authenticationSASLContinue(Buffer.from('r=abc,s=c2FsdA==,i=4096'));
  w.authenticationSASLFinal(Buffer.from('v=sig'));
  w.parameterStatus('server_version', '15.0 Cairn');
  w.backendKeyData(42, -7);
  w.readyForQuery('T');
  w.rowDescription(COLUMNS);
  w.dataRow([Buffer.from('1'), null, Buffer.alloc(0)]);
  w.commandComplete('SELECT 1');
  w.emptyQueryResponse();
  w.errorResponse({
    severity: 'ERROR', code: '42601', message: 'syntax error', detail: 'd', hint: 'h', position: 7, internalPosition: 2,
    internalQuery: 'iq', where: 'w', schema: 'public', table: 't', column: 'c', dataType: 'int4', constraint: 'pk',
    file: 'conn.ts', line: 10, routine: 'parse',
  });
  w.noticeResponse({ severity: 'WARNING', code: '01000', message: 'careful' });
  w.parseComplete();
  w.bindComplete();
  w.closeComplete();
  w.noData();
  w.portalSuspended();
  w.parameterDescription([23, 25, 4294967295]);
  w.copyInResponse(0, [0, 0]);
  w.copyOutResponse(1, [1]);
  w.copyData(Buffer.from('1\t2\n'));
  w.copyDone();
}

const EXPECTED = [
  { name: 'authenticationOk' },
  { name: 'authenticationCleartextPassword' },
  { name: 'authenticationSASL', mechanisms: ['SCRAM-SHA-256', 'SCRAM-SHA-256-PLUS'] },
  { name: 'authenticationSASLContinue', data: 'r=abc,s=c2FsdA==,i=4096' },
  { name: 'authenticationSASLFinal', data: 'v=sig' },
  { name: 'parameterStatus', parameterName: 'server_version', parameterValue: '15.0 Cairn' },
  { name: 'backendKeyData', processID: 42, secretKey: -7 },
  { name: 'readyForQuery', status: 'T' },
  {
    name: 'rowDescription',
    fieldCount: 2,
    fields: [
      { name: 'id', tableID: 16384, columnID: 1, dataTypeID: 23, dataTypeSize: 4, dataTypeModifier: -1, format: 'text' },
      { name: 'naïve', tableID: 0, columnID: 0, dataTypeID: 4294967295, dataTypeSize: -1, dataTypeModifier: 68, format: 'binary' },
    ],
  },
  { name: 'dataRow', fieldCount: 3, fields: ['1', null, ''] },
  { name: 'commandComplete', text: 'SELECT 1' },
  { name: 'emptyQuery' },
  {
    name: 'error', severity: 'ERROR', code: '42601', message: 'syntax error', detail: 'd', hint: 'h', position: '7',
    internalPosition: '2', internalQuery: 'iq', where: 'w', schema: 'public', table: 't', column: 'c', dataType: 'int4',
    constraint: 'pk', file: 'conn.ts', line: '10', routine: 'parse',
  },
  { name: 'notice', severity: 'WARNING', code: '01000', message: 'careful' },
  { name: 'parseComplete' },
  { name: 'bindComplete' },
  { name: 'closeComplete' },
  { name: 'noData' },
  { name: 'portalSuspended' },
  { name: 'parameterDescription', parameterCount: 3, dataTypeIDs: [23, 25, 4294967295] },
  { name: 'copyInResponse', binary: false, columnTypes: [0, 0] },
  { name: 'copyOutResponse', binary: true, columnTypes: [1] },
  { name: 'copyData', chunk: Buffer.from('1\t2\n') },
  { name: 'copyDone' },
];

describe('BackendWriter', () => {
  it('serializes every backend message so that pg-protocol reads it back', () => {
    const w = new BackendWriter(8); // tiny initial capacity: exercises growth
    writeAll(w);
    const msgs = parseBackend(w.take());
    expect(msgs).toHaveLength(EXPECTED.length);
    EXPECTED.forEach((e, i) => expect(msgs[i]).toMatchObject(e));
  });

  it('is read identically when the stream is split at every offset', () => {
    const w = new BackendWriter();
    writeAll(w);
    const stream = w.take();
    for (let k = 0; k <= stream.length; k++) {
      const msgs = parseBackend([stream.subarray(0, k), stream.subarray(k)]);
      expect(msgs.map((m) => m.name)).toEqual(EXPECTED.map((e) => e.name));
    }
  });

  it('take() hands over the bytes and starts a fresh buffer', () => {
    const w = new BackendWriter(16);
    w.commandComplete('A');
    const a = w.take();
    w.commandComplete('B');
    const b = w.take();
    expect(w.length).toBe(0);
    expect(a.toString('latin1')).toBe('C\0\0\0\x06A\0');
    expect(b.toString('latin1')).toBe('C\0\0\0\x06B\0');
  });

  it('golden bytes: ReadyForQuery, DataRow with NULL, NegotiateProtocolVersion, SSL answer', () => {
    const w = new BackendWriter();
    w.readyForQuery('I');
    w.dataRow([null, Buffer.from('x')]);
    w.negotiateProtocolVersion(0, ['_pq_.x']);
    expect(w.take().toString('hex')).toBe(
      '5a0000000549' + '440000000f0002ffffffff0000000178' + '7600000013' + '00000000' + '00000001' + Buffer.from('_pq_.x\0').toString('hex'),
    );
    expect(sslResponse(false)).toEqual(Buffer.from('N'));
    expect(sslResponse(true)).toEqual(Buffer.from('S'));
  });

  it('DataRow round-trips any rows (property)', () => {
    const rows = fc.array(fc.array(fc.option(fc.string({ maxLength: 40 }), { nil: null }), { maxLength: 12 }), { maxLength: 30 });
    fc.assert(
      fc.property(rows, fc.integer({ min: 1, max: 64 }), (rs, cap) => {
        const w = new BackendWriter(cap);
        for (const r of rs) w.dataRow(r.map((v) => (v === null ? null : Buffer.from(v))));
        const out = w.take();
        const msgs = out.length === 0 ? [] : parseBackend(out);
        expect(msgs.map((m) => m['fields'])).toEqual(rs);
      }),
      { numRuns: 300 },
    );
  });

  it('DataRow: a string value is the same bytes as its UTF-8 Buffer — any code points, lone surrogates included (property)', () => {
    // The session hands text-format values over as strings (the writer UTF-8 encodes them in place) and binary ones
    // as bytes; a row may mix both. Lone surrogates become U+FFFD in both forms.
    const value = fc.oneof(
      fc.constant(null),
      fc.string({ unit: 'binary', maxLength: 40 }).map((s) => ({ s, asString: true })),
      fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => ({ s, asString: false })),
      fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)), maxLength: 5 }).map((s) => ({ s, asString: true })),
    );
    const rows = fc.array(fc.array(value, { maxLength: 12 }), { maxLength: 20 });
    fc.assert(
      fc.property(rows, fc.integer({ min: 1, max: 64 }), (rs, cap) => {
        const mixed = new BackendWriter(cap);
        const buffers = new BackendWriter(cap);
        for (const r of rs) {
          mixed.dataRow(r.map((v) => (v === null ? null : v.asString ? v.s : Buffer.from(v.s))));
          buffers.dataRow(r.map((v) => (v === null ? null : Buffer.from(v.s, 'utf8'))));
        }
        const out = mixed.take();
        expect(out.equals(buffers.take())).toBe(true);
        const msgs = out.length === 0 ? [] : parseBackend(out);
        expect(msgs.map((m) => m['fields'])).toEqual(rs.map((r) => r.map((v) => (v === null ? null : Buffer.from(v.s, 'utf8').toString('utf8')))));
      }),
      { numRuns: 300, seed: 20261201 },
    );
  });

  it('RowDescription of a reused column array: the kept encoding is the same bytes, every time', () => {
    const fresh = new BackendWriter(8);
    fresh.rowDescription(COLUMNS);
    const expected = fresh.take();
    const w = new BackendWriter(8);
    for (let i = 0; i < 3; i++) {
      w.rowDescription(COLUMNS, true);
      w.readyForQuery('I');
    }
    const out = w.take();
    const rfq = Buffer.from('5a0000000549', 'hex');
    expect(out.equals(Buffer.concat([expected, rfq, expected, rfq, expected, rfq]))).toBe(true);
    expect(parseBackend(out).filter((m) => m['name'] === 'rowDescription')).toHaveLength(3);
  });
});
