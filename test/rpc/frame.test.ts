// Framing and the message envelope (src/rpc/frame.ts, envelope.ts): golden
// bytes, a stream split at every offset (as pg-protocol's parser is tested),
// oversized and malformed frames.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BufReader, BufWriter, RpcCodecError } from '../../src/rpc/codec.js';
import {
  decodeEnvelope,
  decodeErrorPayload,
  encodeEnvelope,
  encodeErrorPayload,
  type Envelope,
  MessageKind,
} from '../../src/rpc/envelope.js';
import { beginFrame, encodeFrame, endFrame, FrameDecoder } from '../../src/rpc/frame.js';
import { decodeHandshake, encodeHandshake, type Handshake } from '../../src/rpc/handshake.js';
import { RpcError } from '../../src/rpc/errors.js';
import { CairnError } from '../../src/util/errors.js';

function decodeAll(dec: FrameDecoder, chunks: Buffer[]): string[] {
  const out: string[] = [];
  for (const c of chunks) dec.push(c, (body) => out.push(body.toString('hex')));
  return out;
}

const stream = Buffer.concat([
  encodeFrame(Buffer.from('hello')),
  encodeFrame(Buffer.alloc(0)),
  encodeFrame(Buffer.from('x')),
  encodeFrame(Buffer.alloc(300, 0xaa)),
]);
const expected = [Buffer.from('hello').toString('hex'), '', '78', Buffer.alloc(300, 0xaa).toString('hex')];

describe('FrameDecoder', () => {
  it('frames are a u32 big-endian length then the body', () => {
    expect(encodeFrame(Buffer.from('hi')).toString('hex')).toBe('00000002' + '6869');
  });

  it('decodes a whole stream in one chunk', () => {
    const dec = new FrameDecoder();
    expect(decodeAll(dec, [stream])).toEqual(expected);
    expect(dec.idle).toBe(true);
  });

  it('decodes the stream split into two chunks at every offset', () => {
    for (let i = 0; i <= stream.length; i++) {
      const dec = new FrameDecoder();
      expect(decodeAll(dec, [stream.subarray(0, i), stream.subarray(i)]), `split at ${i}`).toEqual(expected);
      expect(dec.idle).toBe(true);
    }
  });

  it('copies every body out when the caller reuses its chunk buffer', () => {
    const dec = new FrameDecoder(1024, true);
    const reused = Buffer.alloc(64);
    const bodies: Buffer[] = [];
    for (const body of ['ab', 'cd']) {
      const frame = encodeFrame(Buffer.from(body));
      frame.copy(reused);
      dec.push(reused.subarray(0, frame.length), (b) => bodies.push(b));
      reused.fill(0x7a); // the next read overwrites the buffer
    }
    expect(bodies.map((b) => b.toString())).toEqual(['ab', 'cd']);
  });

  it('decodes the stream fed one byte at a time', () => {
    const chunks: Buffer[] = [];
    for (let i = 0; i < stream.length; i++) chunks.push(stream.subarray(i, i + 1));
    expect(decodeAll(new FrameDecoder(), chunks)).toEqual(expected);
  });

  it('decodes any chunking of any frame sequence (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 10 }),
        fc.array(fc.nat(400), { maxLength: 12 }),
        (bodies, cuts) => {
          const s = Buffer.concat(bodies.map((b) => encodeFrame(b)));
          const points = [...new Set(cuts.map((c) => c % (s.length + 1)))].sort((a, b) => a - b);
          const chunks: Buffer[] = [];
          let prev = 0;
          for (const p of points) {
            chunks.push(s.subarray(prev, p));
            prev = p;
          }
          chunks.push(s.subarray(prev));
          expect(decodeAll(new FrameDecoder(), chunks)).toEqual(bodies.map((b) => Buffer.from(b).toString('hex')));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('rejects a length above the maximum before buffering the body, and stays poisoned', () => {
    const dec = new FrameDecoder(16);
    expect(decodeAll(dec, [encodeFrame(Buffer.alloc(16))])).toHaveLength(1);
    try {
      dec.push(Buffer.from('00000011', 'hex'), () => {});
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(RpcCodecError);
      expect((e as RpcCodecError).code).toBe('rpc.frame_too_large');
    }
    expect(() => dec.push(Buffer.from('00'), () => {})).toThrow(/after an error/);
  });

  it('rejects an oversized length even when the header arrives split', () => {
    const dec = new FrameDecoder(1024);
    dec.push(Buffer.from('ffff', 'hex'), () => {});
    expect(() => dec.push(Buffer.from('ffff', 'hex'), () => {})).toThrow(/exceeds the maximum of 1024/);
  });

  it('writes several frames into one buffer with beginFrame/endFrame', () => {
    const w = new BufWriter();
    const a = beginFrame(w);
    w.u8(1);
    w.u8(2);
    endFrame(w, a);
    const b = beginFrame(w);
    endFrame(w, b);
    expect(w.finish().toString('hex')).toBe('00000002' + '0102' + '00000000');
  });
});

describe('envelope', () => {
  const ts = { wall: 1_700_000_000_000_001, logical: 3 };

  it('has the documented layout (golden)', () => {
    const w = new BufWriter();
    encodeEnvelope(w, MessageKind.Request, 0x0102, 300, { wall: 300, logical: 1 }, Buffer.from('ab'));
    // kind 00 | method 0102 | reqId ac02 | wall ac02 | logical 01 | len 02 'ab'
    expect(w.finish().toString('hex')).toBe('00' + '0102' + 'ac02' + 'ac02' + '01' + '02' + '6162');
  });

  it('round-trips many envelopes back to back in one body', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            kind: fc.constantFrom(MessageKind.Request, MessageKind.Response, MessageKind.Error),
            method: fc.integer({ min: 0, max: 0xffff }),
            requestId: fc.maxSafeNat(),
            payload: fc.uint8Array({ maxLength: 100 }),
          }),
          { minLength: 1, maxLength: 20 },
        ),
        (msgs) => {
          const w = new BufWriter();
          for (const m of msgs) encodeEnvelope(w, m.kind, m.method, m.requestId, ts, m.payload);
          const r = new BufReader(w.copyOut());
          const got: Envelope[] = [];
          while (r.remaining > 0) got.push(decodeEnvelope(r));
          expect(got.map((e) => ({ kind: e.kind, method: e.method, requestId: e.requestId, payload: new Uint8Array(e.payload) }))).toEqual(
            msgs.map((m) => ({ ...m, payload: new Uint8Array(m.payload) })),
          );
          for (const e of got) expect(e.ts).toEqual(ts);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('rejects an unknown kind and a one-way with a request id', () => {
    const w = new BufWriter();
    encodeEnvelope(w, 4 as MessageKind, 1, 0, ts, Buffer.alloc(0));
    expect(() => decodeEnvelope(new BufReader(w.copyOut()))).toThrow(/unknown message kind 4/);
    w.reset();
    encodeEnvelope(w, MessageKind.OneWay, 1, 7, ts, Buffer.alloc(0));
    expect(() => decodeEnvelope(new BufReader(w.copyOut()))).toThrow(/one-way message carries request id 7/);
  });

  it('carries errors as code, message, retryable, ambiguous, sqlState', () => {
    for (const err of [
      new CairnError('kv.not_leaseholder', 'kv: not leaseholder', { retryable: true }),
      new CairnError('kv.ambiguous_result', 'result is ambiguous', { ambiguous: true }),
      new CairnError('sql.x', 'x', { sqlState: '40001' }),
    ]) {
      const back = decodeErrorPayload(new BufReader(encodeErrorPayload(err)));
      expect(back).toBeInstanceOf(CairnError);
      expect([back.code, back.message, back.retryable, back.ambiguous, back.sqlState]).toEqual([
        err.code,
        err.message,
        err.retryable,
        err.ambiguous,
        err.sqlState,
      ]);
    }
  });

  it('rejects an error payload that is both retryable and ambiguous', () => {
    const w = new BufWriter();
    w.string('c');
    w.string('m');
    w.u8(3);
    w.string('XX000');
    expect(() => decodeErrorPayload(new BufReader(w.copyOut()))).toThrow(RpcCodecError);
  });
});

describe('handshake', () => {
  const cases: Handshake[] = [
    { type: 'hello', clusterId: 'c-1', fromNodeId: 1, toNodeId: 2, ts: { wall: 5, logical: 0 } },
    { type: 'hello', clusterId: '', fromNodeId: 0, toNodeId: 0, ts: { wall: 5, logical: 9 } },
    { type: 'ack', clusterId: 'c-1', nodeId: 2, ts: { wall: 6, logical: 1 } },
    { type: 'reject', code: 'rpc.cluster_id_mismatch', message: 'no' },
  ];

  it('round-trips every type', () => {
    for (const h of cases) expect(decodeHandshake(new BufReader(encodeHandshake(h)))).toEqual(h);
  });

  it('starts with the magic and version (golden)', () => {
    expect(encodeHandshake(cases[3] as Handshake).subarray(0, 7).toString('hex')).toBe('43524e31' + '0001' + '02');
  });

  it('rejects bad magic as malformed, another version as a typed mismatch', () => {
    expect(() => decodeHandshake(new BufReader(Buffer.from('GET / HTTP/1.1')))).toThrow(/bad handshake magic/);
    try {
      decodeHandshake(new BufReader(encodeHandshake(cases[0] as Handshake, 9)));
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(RpcError);
      expect((e as RpcError).code).toBe('rpc.version_mismatch');
    }
  });
});

describe('decoders on arbitrary bytes (property)', () => {
  // Bad input must surface as the typed codec error that closes one connection —
  // never a RangeError from a Buffer read, a TypeError or an assertion (which would crash the node).
  function onlyTypedErrors(decode: () => unknown): void {
    try {
      decode();
    } catch (e) {
      expect(e).toBeInstanceOf(CairnError);
      expect((e as CairnError).code).toMatch(/^rpc\.(codec|version_mismatch|frame_too_large)$/);
    }
  }

  it('envelopes, error payloads and handshakes reject garbage with typed errors only', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const b = Buffer.from(bytes);
        onlyTypedErrors(() => {
          const r = new BufReader(b);
          while (r.remaining > 0) decodeEnvelope(r);
        });
        onlyTypedErrors(() => decodeErrorPayload(new BufReader(b)));
        onlyTypedErrors(() => decodeHandshake(new BufReader(b)));
        // With a valid magic and version in front, the rest is still garbage.
        onlyTypedErrors(() => decodeHandshake(new BufReader(Buffer.concat([Buffer.from('43524e310001', 'hex'), b]))));
      }),
      { numRuns: 2000 },
    );
  });

  it('the frame decoder fed garbage either waits for more, emits frames, or throws a typed error', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 6 }), (chunks) => {
        const dec = new FrameDecoder(64);
        onlyTypedErrors(() => {
          for (const c of chunks) dec.push(Buffer.from(c), () => {});
        });
      }),
      { numRuns: 1000 },
    );
  });
});
