// Frontend decoder: pg-protocol's client serializer is the peer (the issue:
// "round-trip every message … split streams at every offset"), plus
// malformed-input cases and fuzzing (PostgreSQL docs §55.7).
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { serialize } from 'pg-protocol';
import {
  FrontendDecoder,
  parsePasswordMessage,
  parseSASLInitialResponse,
  type FrontendMessage,
} from '../../sql/pgwire/frontend.js';
import { ProtocolViolationError } from '../../sql/pgwire/errors.js';
import { fuzzStreams } from './fuzz-streams.js';

function decodeAll(chunks: readonly Buffer[], phase: 'startup' | 'normal' = 'normal', maxMessageSize?: number): FrontendMessage[] {
  const d = new FrontendDecoder({ maxMessageSize });
  if (phase === 'normal') d.startNormalPhase();
  const out: FrontendMessage[] = [];
  for (const c of chunks) {
    d.push(c);
    for (let m = d.next(); m !== undefined; m = d.next()) out.push(m);
  }
  expect(d.bufferedBytes).toBe(0);
  return out;
}

const bin = Buffer.from([1, 2, 0, 255]);
const NORMAL: readonly [Buffer, FrontendMessage][] = [
  [serialize.query('select 1; select \'é\''), { kind: 'query', sql: "select 1; select 'é'" }],
  [serialize.query(''), { kind: 'query', sql: '' }],
  [serialize.parse({ name: 's1', text: 'select $1, $2', types: [23, 0xfffffff0] }), { kind: 'parse', name: 's1', sql: 'select $1, $2', paramTypes: [23, 0xfffffff0] }],
  [serialize.parse({ text: 'select 1' }), { kind: 'parse', name: '', sql: 'select 1', paramTypes: [] }],
  [
    serialize.bind({ portal: 'p', statement: 's1', values: ['a', null, bin], binary: true }),
    { kind: 'bind', portal: 'p', statement: 's1', paramFormats: [0, 0, 1], params: [Buffer.from('a'), null, bin], resultFormats: [1] },
  ],
  [serialize.bind(), { kind: 'bind', portal: '', statement: '', paramFormats: [], params: [], resultFormats: [0] }],
  [serialize.execute({ portal: 'p', rows: 10 }), { kind: 'execute', portal: 'p', maxRows: 10 }],
  [serialize.execute(), { kind: 'execute', portal: '', maxRows: 0 }],
  [serialize.describe({ type: 'S', name: 's1' }), { kind: 'describe', target: 'S', name: 's1' }],
  [serialize.describe({ type: 'P' }), { kind: 'describe', target: 'P', name: '' }],
  [serialize.close({ type: 'P', name: 'p' }), { kind: 'close', target: 'P', name: 'p' }],
  [serialize.close({ type: 'S', name: 's' }), { kind: 'close', target: 'S', name: 's' }],
  [serialize.flush(), { kind: 'flush' }],
  [serialize.sync(), { kind: 'sync' }],
  [serialize.copyData(Buffer.from('1\t2\n')), { kind: 'copyData', data: Buffer.from('1\t2\n') }],
  [serialize.copyDone(), { kind: 'copyDone' }],
  [serialize.copyFail('client gave up'), { kind: 'copyFail', message: 'client gave up' }],
  [serialize.password('secret'), { kind: 'password', data: Buffer.from('secret\0') }],
  [serialize.sendSCRAMClientFinalMessage('c=biws,r=x,p=y'), { kind: 'password', data: Buffer.from('c=biws,r=x,p=y') }],
  [serialize.end(), { kind: 'terminate' }],
];

describe('FrontendDecoder, normal phase', () => {
  it('decodes every message pg-protocol serializes', () => {
    for (const [bytes, expected] of NORMAL) expect(decodeAll([bytes])).toEqual([expected]);
  });

  it('decodes a stream split at every offset', () => {
    const stream = Buffer.concat(NORMAL.map(([b]) => b));
    const expected = NORMAL.map(([, m]) => m);
    for (let k = 0; k <= stream.length; k++) {
      expect(decodeAll([stream.subarray(0, k), stream.subarray(k)])).toEqual(expected);
    }
  });

  it('decodes a stream cut into arbitrary chunks (property)', () => {
    const stream = Buffer.concat(NORMAL.map(([b]) => b));
    const expected = NORMAL.map(([, m]) => m);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: stream.length }), { maxLength: 20 }), (cuts) => {
        const points = [0, ...[...cuts].sort((a, b) => a - b), stream.length];
        const chunks = points.slice(1).map((p, i) => stream.subarray(points[i], p));
        expect(decodeAll(chunks)).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  it('parses password and SASL bodies', () => {
    const [pw] = decodeAll([serialize.password('hunter2')]);
    expect(parsePasswordMessage((pw as { data: Buffer }).data)).toBe('hunter2');
    const [init] = decodeAll([serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', 'n,,n=*,r=abc')]);
    const parsed = parseSASLInitialResponse((init as { data: Buffer }).data);
    expect(parsed.mechanism).toBe('SCRAM-SHA-256');
    expect(parsed.response?.toString()).toBe('n,,n=*,r=abc');
    expect(() => parseSASLInitialResponse(Buffer.from('SCRAM-SHA-256\0\0\0\0\x09ab'))).toThrow(ProtocolViolationError);
    expect(() => parsePasswordMessage(Buffer.from('no terminator'))).toThrow(ProtocolViolationError);
  });
});

describe('FrontendDecoder, startup phase', () => {
  it('decodes StartupMessage, SSLRequest, GSSENCRequest and CancelRequest', () => {
    const gss = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x30]);
    const msgs = decodeAll(
      [serialize.requestSsl(), gss, serialize.cancel(1234, -5678), serialize.startup({ user: 'root', database: 'db', application_name: 'tést' })],
      'startup',
    );
    expect(msgs).toEqual([
      { kind: 'sslRequest' },
      { kind: 'gssEncRequest' },
      { kind: 'cancelRequest', processId: 1234, secretKey: -5678 },
      {
        kind: 'startup',
        protocolVersion: 196608,
        params: new Map([
          ['user', 'root'],
          ['database', 'db'],
          ['application_name', 'tést'],
          ['client_encoding', 'UTF8'],
        ]),
      },
    ]);
  });

  it('decodes startup packets split at every offset', () => {
    const stream = Buffer.concat([serialize.requestSsl(), serialize.startup({ user: 'u' })]);
    for (let k = 0; k <= stream.length; k++) {
      expect(decodeAll([stream.subarray(0, k), stream.subarray(k)], 'startup').map((m) => m.kind)).toEqual(['sslRequest', 'startup']);
    }
  });
});

function tagged(type: string, body: Buffer, lengthDelta = 0): Buffer {
  const h = Buffer.alloc(5);
  h.write(type, 0, 'latin1');
  h.writeInt32BE(body.length + 4 + lengthDelta, 1);
  return Buffer.concat([h, body]);
}

function untagged(body: Buffer, length = body.length + 4): Buffer {
  const h = Buffer.alloc(4);
  h.writeInt32BE(length);
  return Buffer.concat([h, body]);
}

const i16 = (...v: number[]) => Buffer.concat(v.map((x) => { const b = Buffer.alloc(2); b.writeInt16BE(x); return b; }));
const i32 = (...v: number[]) => Buffer.concat(v.map((x) => { const b = Buffer.alloc(4); b.writeInt32BE(x); return b; }));
const cstr = (s: string) => Buffer.from(`${s}\0`);

describe('FrontendDecoder, malformed input → ProtocolViolationError (08P01)', () => {
  const cases: [string, Buffer, 'startup' | 'normal'][] = [
    ['unknown type byte', tagged('?', Buffer.alloc(0)), 'normal'],
    ['FunctionCall is not supported', tagged('F', Buffer.alloc(4)), 'normal'],
    ['length below 4', tagged('Q', Buffer.alloc(0), -1), 'normal'],
    ['negative length', Buffer.from([0x51, 0xff, 0xff, 0xff, 0xff]), 'normal'],
    ['over the maximum size', Buffer.from([0x51, 0x01, 0x00, 0x00, 0x00]), 'normal'],
    ['unterminated Query', tagged('Q', Buffer.from('select 1')), 'normal'],
    ['trailing bytes in Query', tagged('Q', Buffer.from('select 1\0x')), 'normal'],
    ['trailing bytes in Sync', tagged('S', Buffer.from([0])), 'normal'],
    ['Parse with a short OID list', tagged('P', Buffer.concat([cstr(''), cstr('x'), i16(2), i32(23)])), 'normal'],
    ['Bind with format code 2', tagged('B', Buffer.concat([cstr(''), cstr(''), i16(1, 2), i16(0), i16(0)])), 'normal'],
    ['Bind with parameter length −2', tagged('B', Buffer.concat([cstr(''), cstr(''), i16(0), i16(1), i32(-2), i16(0)])), 'normal'],
    ['Bind value past the end', tagged('B', Buffer.concat([cstr(''), cstr(''), i16(0), i16(1), i32(100), i16(0)])), 'normal'],
    ['Describe target X', tagged('D', Buffer.concat([Buffer.from('X'), cstr('')])), 'normal'],
    ['Execute without row count', tagged('E', cstr('')), 'normal'],
    ['startup length 7', untagged(i32(196608), 7), 'startup'],
    ['startup length above 10000', untagged(i32(196608), 10_001), 'startup'],
    ['startup without terminator', untagged(Buffer.concat([i32(196608), cstr('user'), Buffer.from('root')])), 'startup'],
    ['startup with a name and no value', untagged(Buffer.concat([i32(196608), cstr('user'), Buffer.from([0])])), 'startup'],
    ['CancelRequest too short', untagged(Buffer.concat([i32(80877102), i32(1)])), 'startup'],
    ['SSLRequest with a body', untagged(Buffer.concat([i32(80877103), i32(0)])), 'startup'],
  ];
  for (const [name, bytes, phase] of cases) {
    it(name, () => {
      const d = new FrontendDecoder({ maxMessageSize: 1 << 20 });
      if (phase === 'normal') d.startNormalPhase();
      d.push(bytes);
      expect(() => d.next()).toThrow(ProtocolViolationError);
      // Poisoned: the stream cannot be resynchronised.
      expect(() => d.next()).toThrow(ProtocolViolationError);
    });
  }

  it('rejects a message larger than maxMessageSize before it arrives in full', () => {
    const d = new FrontendDecoder({ maxMessageSize: 100 });
    d.startNormalPhase();
    d.push(Buffer.from([0x51, 0, 0, 0, 200]));
    expect(() => d.next()).toThrow(/exceeds the maximum/);
  });

  it('random and mutated streams yield messages or a ProtocolViolationError, nothing else (property)', () => {
    const stream = fuzzStreams(Buffer.concat(NORMAL.map(([b]) => b)));
    fc.assert(
      fc.property(stream, fc.boolean(), fc.nat(50), (bytes, startup, cut) => {
        const d = new FrontendDecoder({ maxMessageSize: 4096 });
        if (!startup) d.startNormalPhase();
        let steps = 0;
        try {
          for (const c of [bytes.subarray(0, cut), bytes.subarray(cut)]) {
            d.push(c);
            while (d.next() !== undefined) expect(++steps).toBeLessThanOrEqual(bytes.length);
          }
        } catch (e) {
          expect(e).toBeInstanceOf(ProtocolViolationError);
          expect((e as ProtocolViolationError).sqlState).toBe('08P01');
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('FrontendDecoder.nextIsSync', () => {
  it('sees a complete Sync right after an Execute, at every split of the bytes, and nothing else', () => {
    const bytes = Buffer.concat([serialize.execute(), serialize.sync(), serialize.execute(), serialize.flush()]);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const d = new FrontendDecoder({ maxMessageSize: 4096 });
      d.startNormalPhase();
      expect(d.nextIsSync()).toBe(false); // nothing buffered
      d.push(bytes.subarray(0, cut));
      const seen: boolean[] = [];
      const drain = (): void => {
        for (let m = d.next(); m !== undefined; m = d.next()) seen.push(d.nextIsSync());
      };
      drain();
      d.push(bytes.subarray(cut));
      // the peek after the first Execute is true only when the whole Sync had arrived with it
      const execEnd = serialize.execute().length;
      const firstPeekSawSync = seen.length > 0 ? seen[0] : undefined;
      drain();
      expect(seen.length).toBe(4);
      if (cut >= execEnd + 5) expect(firstPeekSawSync).toBe(true);
      else if (firstPeekSawSync !== undefined) expect(firstPeekSawSync).toBe(false);
      expect(seen.slice(1)).toEqual([false, false, false]); // after Sync: Execute; after it: Flush, not Sync
    }
  });

  it('is false in the startup phase', () => {
    const d = new FrontendDecoder({ maxMessageSize: 4096 });
    d.push(serialize.sync());
    expect(d.nextIsSync()).toBe(false);
  });
});
