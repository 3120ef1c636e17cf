// Node-to-node RPC over real TCP on 127.0.0.1 (issue 4, "A real multi-node
// cluster"): round trips, coalescing, large payloads, reconnect, handshake
// checks, deadlines and cancellation, HLC propagation and offset rejection,
// bad input.
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { CairnError } from '../../src/util/errors.js';
import { createLogger } from '../../src/util/log.js';
import { Clock, ClockOffsetError, compareTimestamps, ManualPhysical } from '../../src/util/hlc.js';
import { Prng } from '../../src/util/prng.js';
import { RpcContext } from '../../src/rpc/rpc-context.js';
import { ConnectionClass } from '../../src/rpc/transport.js';
import { encodeFrame, FrameDecoder } from '../../src/rpc/frame.js';
import { decodeHandshake, encodeHandshake } from '../../src/rpc/handshake.js';
import { BufReader, BufWriter } from '../../src/rpc/codec.js';
import { decodeEnvelope, encodeEnvelope, MessageKind } from '../../src/rpc/envelope.js';
import { collectOneWays, countRuns, ECHO, eventually, NEVER, Nodes, ONE_WAY, registerEcho, rejection, T0, waitFor } from './nodes.js';

const nodes = new Nodes();
const servers: Server[] = [];
afterEach(async () => {
  await nodes.closeAll();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A raw TCP server that records what it receives and never answers. */
async function silentServer(host = '127.0.0.1'): Promise<{ port: number; received: () => Buffer; sockets: Socket[] }> {
  const chunks: Buffer[] = [];
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    sockets.push(s);
    s.on('data', (c) => chunks.push(c));
    s.on('error', () => {});
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    received: () => Buffer.concat(chunks),
    sockets,
  };
}

function rawClient(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port }, () => resolve(s));
    s.on('error', reject);
  });
}

function closed(s: Socket): Promise<void> {
  return new Promise((r) => (s.closed ? r() : s.once('close', () => r())));
}

function hello(fromNodeId: number, toNodeId: number, clusterId = 'cluster-a'): Buffer {
  return encodeFrame(encodeHandshake({ type: 'hello', clusterId, fromNodeId, toNodeId, ts: { wall: T0, logical: 0 } }));
}

describe('round trips', () => {
  it('calls a registered method and gets its response; the handler sees the caller', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const seen: number[] = [];
    n2.ctx.register(7, (p, ctx) => {
      seen.push(ctx.peerId, ctx.method);
      return Buffer.concat([p, Buffer.from('!')]);
    });
    const res = await n1.ctx.call(2, 7, Buffer.from('ping'));
    expect(res.toString()).toBe('ping!');
    expect(seen).toEqual([1, 7]);
    expect(n1.ctx.isConnected(2)).toBe(true);
    expect(n1.ctx.status()).toEqual([
      {
        peer: 'n2',
        nodeId: 2,
        connectionClass: 0,
        state: 'ready',
        pendingCalls: 0,
        failedAttempts: 0,
        backoffRemainingMs: 0,
        lastError: null,
      },
    ]);
  });

  it('async handlers and empty responses', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    n2.ctx.register(3, async () => {
      await Promise.resolve();
    });
    expect((await n1.ctx.call(2, 3, Buffer.alloc(0))).length).toBe(0);
  });

  it('keeps 2,000 calls in flight and matches every response to its request', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    n2.ctx.register(ECHO, async (p) => p);
    const calls = [];
    for (let i = 0; i < 2000; i++) calls.push(n1.ctx.call(2, ECHO, Buffer.from(`m${i}`)));
    const res = await Promise.all(calls);
    res.forEach((r, i) => expect(r.toString()).toBe(`m${i}`));
  });

  it('coalesces: 64 calls made in one turn leave in one frame and one write', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    registerEcho(n2.ctx);
    await n1.ctx.call(2, ECHO, Buffer.from('warm up'));
    const m = n1.ctx.metrics.peer(2);
    const [frames, msgs] = [m.framesSent, m.messagesSent];
    const calls = [];
    for (let i = 0; i < 64; i++) calls.push(n1.ctx.call(2, ECHO, Buffer.alloc(1024, i)));
    await Promise.all(calls);
    expect(m.messagesSent - msgs).toBe(64);
    expect(m.framesSent - frames).toBe(1);
    // The server's 64 synchronous responses also went back together.
    expect(n2.ctx.metrics.peer(1).framesSent).toBe(1 + 1 + 1); // handshake ack, warm-up response, the batch
  });

  it('carries large payloads (8 MiB each way) and rejects ones beyond the frame limit', async () => {
    const n1 = await nodes.start(1, { maxFrameBytes: 16 * 1024 * 1024 });
    const n2 = await nodes.start(2, { maxFrameBytes: 16 * 1024 * 1024 });
    registerEcho(n2.ctx);
    const big = Buffer.alloc(8 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4096) big[i] = i & 0xff;
    const res = await n1.ctx.call(2, ECHO, big);
    expect(res.equals(big)).toBe(true);
    const err = await rejection(n1.ctx.call(2, ECHO, Buffer.alloc(16 * 1024 * 1024)));
    expect(err.code).toBe('rpc.message_too_large');
  });

  it('one-way messages arrive in order and need no response', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const got = collectOneWays(n2.ctx);
    for (let i = 0; i < 500; i++) expect(n1.ctx.send(2, ONE_WAY, Buffer.from(String(i)))).toBe(true);
    await waitFor(() => got.length === 500, 5000, 'one-ways');
    expect(got).toEqual(Array.from({ length: 500 }, (_, i) => String(i)));
  });

  it('re-raises handler errors as CairnError with code and flags; other failures as rpc.internal', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    n2.ctx.register(4, () => {
      throw new CairnError('kv.not_leaseholder', 'kv: not leaseholder', { retryable: true, sqlState: '40001' });
    });
    n2.ctx.register(5, async () => {
      throw new TypeError('boom');
    });
    const e1 = await rejection(n1.ctx.call(2, 4, Buffer.alloc(0)));
    expect(e1).toBeInstanceOf(CairnError);
    expect([e1.code, e1.message, e1.retryable, e1.ambiguous, (e1 as CairnError).sqlState]).toEqual([
      'kv.not_leaseholder',
      'kv: not leaseholder',
      true,
      false,
      '40001',
    ]);
    const e2 = await rejection(n1.ctx.call(2, 5, Buffer.alloc(0)));
    expect(e2.code).toBe('rpc.internal');
    expect(e2.message).toMatch(/boom/);
    const e3 = await rejection(n1.ctx.call(2, 77, Buffer.alloc(0)));
    expect([e3.code, e3.retryable, e3.ambiguous]).toEqual(['rpc.unknown_method', true, false]); // never ran: safe elsewhere
  });

  it('finds peers through the resolve option when no address was set', async () => {
    const n2 = await nodes.start(2);
    registerEcho(n2.ctx);
    const asked: number[] = [];
    const ctx = new RpcContext({
      nodeId: 6,
      clusterId: 'cluster-a',
      clock: new Clock(new ManualPhysical(T0).read),
      prng: new Prng(6),
      resolve: (id) => {
        asked.push(id);
        return id === 2 ? n2.addr : undefined;
      },
    });
    try {
      expect((await ctx.call(2, ECHO, Buffer.from('via resolve'))).toString()).toBe('via resolve');
      const e = await rejection(ctx.call(7, ECHO, Buffer.alloc(0)));
      expect([e.code, e.message]).toEqual(['rpc.unavailable', 'rpc: n7 unavailable: no known address']);
      expect(asked).toEqual([2, 7]);
    } finally {
      await ctx.close();
    }
  });

  it('a listen address in use is a typed error', async () => {
    const n1 = await nodes.start(1);
    const e = await rejection(nodes.start(3, { port: n1.addr.port }));
    expect(e.code).toBe('rpc.listen_failed');
    expect(e.message).toMatch(/EADDRINUSE/);
  });

  it('a node can call itself (over loopback, like any peer)', async () => {
    const n1 = await nodes.start(1);
    n1.ctx.setPeerAddress(1, n1.addr);
    n1.ctx.register(3, (p, ctx) => Buffer.from(`${p.toString()} from n${ctx.peerId}`));
    expect((await n1.ctx.call(1, 3, Buffer.from('hi'))).toString()).toBe('hi from n1');
  });

  it('dials from the configured local address (a 127.0.0.x alias)', async () => {
    const raw = await silentServer('127.0.0.3');
    const n1 = await nodes.start(1, { localAddress: '127.0.0.2', host: '127.0.0.2' });
    n1.ctx.setPeerAddress(9, { host: '127.0.0.3', port: raw.port });
    n1.ctx.send(9, 1, Buffer.alloc(0));
    await waitFor(() => raw.sockets.length === 1, 5000, 'the dial');
    expect(raw.sockets[0]?.remoteAddress).toBe('127.0.0.2');
    expect(n1.addr.host).toBe('127.0.0.2');
  });
});

describe('connections', () => {
  it('reconnects after the peer restarts on the same port', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    registerEcho(n2.ctx);
    expect((await n1.ctx.call(2, ECHO, Buffer.from('a'))).toString()).toBe('a');
    await n2.ctx.close();
    await waitFor(() => !n1.ctx.isConnected(2), 5000, 'the disconnect');
    // While n2 is down calls fail as unavailable (retryable: never sent).
    const down = await rejection(n1.ctx.call(2, ECHO, Buffer.from('b')));
    expect(down.code).toBe('rpc.unavailable');
    expect(down.retryable).toBe(true);
    const n2b = await nodes.start(2, { port: n2.addr.port });
    registerEcho(n2b.ctx);
    // Backoff may still hold for up to 200 ms: retry until the redial succeeds.
    const res = await eventually(() => n1.ctx.call(2, ECHO, Buffer.from('c'), { timeoutMs: 1000 }));
    expect(res.toString()).toBe('c');
    const m = n1.ctx.metrics.peer(2);
    expect(m.reconnects).toBeGreaterThanOrEqual(1);
    expect(m.connectionsEstablished).toBe(2);
  });

  it('backs off after a failed dial: calls fail fast as unavailable without redialing', async () => {
    const n1 = await nodes.start(1, { backoff: { initialMs: 60_000, maxMs: 60_000 } });
    const raw = await silentServer();
    servers.pop()?.close(); // free the port: nothing listens there now
    await waitFor(() => true);
    n1.ctx.setPeerAddress(4, { host: '127.0.0.1', port: raw.port });
    const e1 = await rejection(n1.ctx.call(4, ECHO, Buffer.alloc(0)));
    expect([e1.code, e1.retryable, e1.ambiguous]).toEqual(['rpc.unavailable', true, false]);
    const e2 = await rejection(n1.ctx.call(4, ECHO, Buffer.alloc(0)));
    expect(e2.code).toBe('rpc.unavailable');
    expect(e2.message).toMatch(/backoff/);
    expect(n1.ctx.send(4, ECHO, Buffer.alloc(0))).toBe(false);
    const m = n1.ctx.metrics.peer(4);
    expect(m.dials).toBe(1);
    expect(m.oneWayDropped).toBe(1);
    const [st] = n1.ctx.status();
    expect(st).toMatchObject({ peer: 'n4', nodeId: 4, connectionClass: ConnectionClass.Default, state: 'backoff', failedAttempts: 1 });
    expect(st?.backoffRemainingMs).toBeGreaterThan(40_000);
    expect(st?.lastError).toMatch(/ECONNREFUSED/);
  });

  it('refuses a peer of another cluster with rpc.cluster_id_mismatch, on both ends', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2, { clusterId: 'cluster-b' });
    registerEcho(n2.ctx);
    const e = await rejection(n1.ctx.call(2, ECHO, Buffer.alloc(0)));
    expect(e.code).toBe('rpc.cluster_id_mismatch');
    expect(e.retryable).toBe(false);
    expect(e.message).toMatch(/cluster-a/);
    expect(n2.ctx.metrics.peer(0).errors).toBe(1);
    // During backoff the refusal is reported again, not a generic unavailable.
    expect((await rejection(n1.ctx.call(2, ECHO, Buffer.alloc(0)))).code).toBe('rpc.cluster_id_mismatch');
  });

  it('refuses a dial that reaches the wrong node with rpc.node_id_mismatch', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    registerEcho(n2.ctx);
    n1.ctx.setPeerAddress(5, n2.addr); // stale address: n5 "lives" where n2 listens
    const e = await rejection(n1.ctx.call(5, ECHO, Buffer.alloc(0)));
    expect(e.code).toBe('rpc.node_id_mismatch');
    expect(e.message).toMatch(/n5/);
  });

  it('lets a joining node (no cluster id, no node id) call a join address and learn the cluster id', async () => {
    const n1 = await nodes.start(1);
    n1.ctx.register(11, (_p, ctx) => Buffer.from(String(ctx.peerId)));
    const joiner = await nodes.start(0, { clusterId: '' });
    const res = await joiner.ctx.callAddress(n1.addr, 11, Buffer.alloc(0));
    expect(res.toString()).toBe('0');
    joiner.ctx.setClusterId('cluster-a');
    joiner.ctx.setNodeId(3);
    expect(joiner.ctx.clusterId).toBe('cluster-a');
    // A node that does not know its cluster yet also accepts connections.
    const fresh = await nodes.start(7, { clusterId: '' });
    registerEcho(fresh.ctx);
    expect((await n1.ctx.call(7, ECHO, Buffer.from('welcome'))).toString()).toBe('welcome');
  });

  it('refuses a protocol version it does not speak', async () => {
    const n2 = await nodes.start(2);
    const s = await rawClient(n2.addr.port);
    const chunks: Buffer[] = [];
    s.on('data', (c) => chunks.push(c));
    s.write(encodeFrame(encodeHandshake({ type: 'hello', clusterId: 'cluster-a', fromNodeId: 1, toNodeId: 2, ts: { wall: T0, logical: 0 } }, 7)));
    await closed(s);
    expect(Buffer.concat(chunks).toString()).toMatch(/protocol version 7/);
  });
});

describe('deadlines and cancellation', () => {
  it('a call whose request was sent times out as ambiguous (it may have run)', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const h = countRuns(n2.ctx, NEVER);
    const t0 = performance.now();
    const e = await rejection(n1.ctx.call(2, NEVER, Buffer.alloc(0), { timeoutMs: 50 }));
    expect(performance.now() - t0).toBeGreaterThanOrEqual(45);
    expect([e.code, e.ambiguous, e.retryable]).toEqual(['rpc.timeout', true, false]);
    expect(h.ran).toBe(1);
    expect(n1.ctx.metrics.peer(2).callsAbandoned).toBe(1);
  });

  it('a call that timed out before its request left is retryable, and the request is never sent', async () => {
    const raw = await silentServer(); // accepts, never acks the handshake
    const n1 = await nodes.start(1);
    n1.ctx.setPeerAddress(6, { host: '127.0.0.1', port: raw.port });
    const e = await rejection(n1.ctx.call(6, ECHO, Buffer.from('SECRET-PAYLOAD'), { timeoutMs: 30 }));
    expect([e.code, e.ambiguous, e.retryable]).toEqual(['rpc.timeout', false, true]);
    await waitFor(() => raw.received().length >= hello(1, 6).length, 5000, 'the hello');
    expect(raw.received().includes('SECRET-PAYLOAD')).toBe(false);
  });

  it('an AbortSignal cancels: ambiguous once sent, not sent if aborted in the same turn', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const h = countRuns(n2.ctx, NEVER);
    registerEcho(n2.ctx);
    await n1.ctx.call(2, ECHO, Buffer.alloc(0));
    const early = new AbortController();
    const p1 = n1.ctx.call(2, NEVER, Buffer.alloc(0), { signal: early.signal });
    early.abort();
    const e1 = await rejection(p1);
    expect([e1.code, e1.ambiguous, e1.retryable]).toEqual(['rpc.canceled', false, true]);
    const late = new AbortController();
    const p2 = n1.ctx.call(2, NEVER, Buffer.alloc(0), { signal: late.signal });
    await waitFor(() => h.ran === 1, 5000, 'the handler');
    late.abort();
    const e2 = await rejection(p2);
    expect([e2.code, e2.ambiguous]).toEqual(['rpc.canceled', true]);
    const pre = await rejection(n1.ctx.call(2, ECHO, Buffer.alloc(0), { signal: AbortSignal.abort() }));
    expect(pre.code).toBe('rpc.canceled');
    expect(h.ran).toBe(1); // the early-aborted request never reached n2
  });

  it('calls in flight when the connection drops fail as ambiguous connection_lost', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const h = countRuns(n2.ctx, NEVER);
    const p = n1.ctx.call(2, NEVER, Buffer.alloc(0));
    await waitFor(() => h.ran === 1, 5000, 'the handler');
    await n2.ctx.close();
    const e = await rejection(p);
    expect([e.code, e.ambiguous, e.retryable]).toEqual(['rpc.connection_lost', true, false]);
  });

  it('calls after close fail with rpc.closed', async () => {
    const n1 = await nodes.start(1);
    await n1.ctx.close();
    expect((await rejection(n1.ctx.call(2, ECHO, Buffer.alloc(0)))).code).toBe('rpc.closed');
  });
});

describe('HLC', () => {
  it('every message carries the sender clock; the receiver folds it in (both directions)', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    let seenTs = { wall: 0, logical: 0 };
    n2.ctx.register(ECHO, (p, ctx) => {
      seenTs = ctx.ts;
      return p;
    });
    n1.physical.advance(200_000); // n1 is 200 ms ahead (within the 500 ms bound)
    const before = n1.clock.now();
    await n1.ctx.call(2, ECHO, Buffer.alloc(0));
    expect(compareTimestamps(seenTs, before)).toBeGreaterThan(0);
    expect(compareTimestamps(n2.clock.peek(), before)).toBeGreaterThan(0);
    // n2's response carried a timestamp above n1's request: n1 moved past it.
    n2.physical.advance(400_000);
    const n2Now = n2.clock.now();
    await n1.ctx.call(2, ECHO, Buffer.alloc(0));
    expect(compareTimestamps(n1.clock.peek(), n2Now)).toBeGreaterThan(0);
  });

  it('refuses a connection from a peer whose clock is beyond the max offset', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    registerEcho(n2.ctx);
    n1.physical.advance(600_000);
    const e = await rejection(n1.ctx.call(2, ECHO, Buffer.alloc(0)));
    expect(e.code).toBe('hlc.clock_offset');
    expect(n2.ctx.metrics.peer(0).clockOffsetErrors).toBe(1);
  });

  it('fails a message whose clock is beyond the max offset: the request is not served, the response is rejected', async () => {
    const offsets: number[] = [];
    const n1 = await nodes.start(1, { onClockOffset: (peer) => offsets.push(peer) });
    const n2 = await nodes.start(2, { onClockOffset: (peer) => offsets.push(-peer) });
    const h = countRuns(n2.ctx, ECHO);
    await n1.ctx.call(2, ECHO, Buffer.alloc(0));
    // n1's clock jumps 1 s ahead: n2 rejects n1's request without running it.
    n1.physical.advance(1_000_000);
    const e1 = await rejection(n1.ctx.call(2, ECHO, Buffer.alloc(0)));
    expect(e1).toBeInstanceOf(CairnError);
    expect([e1.code, e1.ambiguous]).toEqual(['hlc.clock_offset', false]); // refused before it ran
    expect(h.ran).toBe(1);
    expect(n2.ctx.metrics.peer(1).clockOffsetErrors).toBe(1);
    // n2 catches up, then jumps 1 s further: n1 rejects n2's response.
    n2.physical.set(n1.physical.micros + 1_000_000);
    const e2 = await rejection(n1.ctx.call(2, ECHO, Buffer.alloc(0)));
    expect([e2.code, e2.ambiguous]).toEqual(['hlc.clock_offset', true]); // it ran: outcome unknown to n1
    expect(e2.cause).toBeInstanceOf(ClockOffsetError);
    expect(h.ran).toBe(2);
    expect(n1.ctx.metrics.peer(2).clockOffsetErrors).toBeGreaterThanOrEqual(1);
    expect(offsets).toContain(-1);
    expect(offsets).toContain(2);
  });
});

describe('bad input', () => {
  it('garbage closes that connection only, and is logged with the peer; the server keeps serving a valid client', async () => {
    const lines: string[] = [];
    const logger = createLogger({ name: 'n2', level: 'warn', destination: { write: (l: string) => lines.push(l) } });
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2, { logger });
    registerEcho(n2.ctx);
    const s = await rawClient(n2.addr.port);
    const localPort = s.localPort;
    s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await closed(s);
    expect(n2.ctx.metrics.peer(0).malformedFrames).toBe(1);
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] as string) as { msg: string; peer: string; err: string };
    expect(line.msg).toBe('rpc: malformed input, closing connection');
    expect(line.peer).toBe(`127.0.0.1:${localPort}`);
    expect(line.err).toMatch(/exceeds the maximum/); // "GET " read as a length
    expect((await n1.ctx.call(2, ECHO, Buffer.from('still here'))).toString()).toBe('still here');
  });

  it('serves a well-formed stream delivered one byte per write (handshake included)', async () => {
    const n2 = await nodes.start(2);
    registerEcho(n2.ctx);
    const oneWays: string[] = [];
    n2.ctx.register(ONE_WAY, (p) => {
      oneWays.push(p.toString());
    });
    const s = await rawClient(n2.addr.port);
    s.setNoDelay(true);
    const replies: Buffer[] = [];
    const dec = new FrameDecoder();
    s.on('data', (c: Buffer) => dec.push(c, (body) => replies.push(Buffer.from(body))));
    const w = new BufWriter();
    const ts = { wall: T0, logical: 0 };
    for (let id = 1; id <= 3; id++) encodeEnvelope(w, MessageKind.Request, ECHO, id, ts, Buffer.from(`r${id}`));
    const requests = encodeFrame(w.copyOut());
    w.reset();
    encodeEnvelope(w, MessageKind.OneWay, 9, 0, ts, Buffer.from('ow'));
    const stream = Buffer.concat([hello(9, 2), requests, encodeFrame(w.copyOut())]);
    for (let i = 0; i < stream.length; i++) {
      await new Promise<void>((r) => s.write(stream.subarray(i, i + 1), () => r()));
    }
    await waitFor(() => replies.length >= 2 && oneWays.length === 1, 5000, 'the replies');
    const ack = decodeHandshake(new BufReader(replies[0] as Buffer));
    expect(ack).toMatchObject({ type: 'ack', clusterId: 'cluster-a', nodeId: 2 });
    const got: string[] = [];
    for (const body of replies.slice(1)) {
      const r = new BufReader(body);
      while (r.remaining > 0) {
        const env = decodeEnvelope(r);
        got.push(`${env.kind}:${env.requestId}:${env.payload.toString()}`);
      }
    }
    expect(got).toEqual(['1:1:r1', '1:2:r2', '1:3:r3']);
    expect(oneWays).toEqual(['ow']);
    s.destroy();
  });

  it('random bytes after a good handshake never disturb the node (property)', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2, { maxFrameBytes: 4096 });
    registerEcho(n2.ctx);
    n2.ctx.register(ONE_WAY, () => undefined);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.uint8Array({ minLength: 1, maxLength: 64 }), { minLength: 1, maxLength: 4 }), async (chunks) => {
        const s = await rawClient(n2.addr.port);
        s.resume();
        s.on('error', () => {});
        s.write(hello(9, 2));
        for (const c of chunks) s.write(c);
        s.end();
        await closed(s);
        expect((await n1.ctx.call(2, ECHO, Buffer.from('ok'))).toString()).toBe('ok');
      }),
      { numRuns: 30 },
    );
    await waitFor(() => n2.ctx.incomingConnections === 1, 5000, 'the raw connections to close');
  });

  it('before the handshake, a frame larger than a handshake is refused whatever the frame limit', async () => {
    const n2 = await nodes.start(2); // 64 MiB frames once a peer has shaken hands
    const s = await rawClient(n2.addr.port);
    s.resume();
    s.write(Buffer.from('00100000', 'hex')); // 1 MiB "hello"
    await closed(s);
    expect(n2.ctx.metrics.peer(0).malformedFrames).toBe(1);
  });

  it('after the handshake, a frame over the configured limit closes the connection before buffering', async () => {
    const n2 = await nodes.start(2, { maxFrameBytes: 1024 });
    const s = await rawClient(n2.addr.port);
    s.resume();
    s.write(hello(9, 2));
    await waitFor(() => n2.ctx.metrics.peer(9).framesReceived === 1, 5000, 'the handshake');
    s.write(Buffer.from('00000401', 'hex')); // 1025 bytes: over the 1024 limit
    await closed(s);
    expect(n2.ctx.metrics.peer(9).malformedFrames).toBe(1);
  });

  it('a malformed envelope after a good handshake closes it; a truncated frame then EOF is harmless', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    registerEcho(n2.ctx);
    const s = await rawClient(n2.addr.port);
    s.on('data', () => {});
    s.write(hello(9, 2));
    const w = new BufWriter();
    encodeEnvelope(w, MessageKind.Request, ECHO, 1, { wall: T0, logical: 0 }, Buffer.from('ok'));
    const good = w.copyOut();
    // A good request, then one whose payload length runs past the frame end.
    s.write(encodeFrame(Buffer.concat([good, good.subarray(0, good.length - 1)])));
    await closed(s);
    expect(n2.ctx.metrics.peer(9).malformedFrames).toBe(1);
    expect(n2.ctx.metrics.peer(9).messagesReceived).toBe(1);

    const t = await rawClient(n2.addr.port);
    t.resume();
    t.write(hello(8, 2));
    t.write(encodeFrame(good).subarray(0, 5));
    t.end();
    await closed(t);
    expect((await n1.ctx.call(2, ECHO, Buffer.from('fine'))).toString()).toBe('fine');
  });

  it('a peer that never completes the handshake is dropped after the handshake timeout', async () => {
    const n2 = await nodes.start(2, { handshakeTimeoutMs: 50 });
    const s = await rawClient(n2.addr.port);
    await closed(s);
    expect(n2.ctx.incomingConnections).toBe(0);
  });
});

describe('backpressure', () => {
  it('refuses calls and drops one-ways once the outgoing queue is over its bound', async () => {
    const raw = await silentServer(); // never acks: everything stays queued
    const n1 = await nodes.start(1, { maxQueuedBytes: 1000 });
    n1.ctx.setPeerAddress(6, { host: '127.0.0.1', port: raw.port });
    expect(n1.ctx.send(6, 1, Buffer.alloc(600))).toBe(true);
    expect(n1.ctx.send(6, 1, Buffer.alloc(600))).toBe(true);
    expect(n1.ctx.send(6, 1, Buffer.alloc(600))).toBe(false);
    const e = await rejection(n1.ctx.call(6, 1, Buffer.alloc(1)));
    expect([e.code, e.retryable, e.ambiguous]).toEqual(['rpc.backpressure', true, false]);
    expect(n1.ctx.metrics.peer(6).oneWayDropped).toBe(1);
  });
});

describe('connection classes', () => {
  it('a small system-class call overtakes a bulk transfer on the default class', async () => {
    const big = 16 * 1024 * 1024;
    const n1 = await nodes.start(1, { maxFrameBytes: 2 * big });
    const n2 = await nodes.start(2, { maxFrameBytes: 2 * big });
    const order: string[] = [];
    n2.ctx.register(3, (p) => {
      order.push(`served ${p.length}`);
      return Buffer.alloc(0);
    });
    await n1.ctx.call(2, 3, Buffer.alloc(1));
    await n1.ctx.call(2, 3, Buffer.alloc(2), { connectionClass: ConnectionClass.System });
    expect(n1.ctx.isConnected(2, ConnectionClass.System)).toBe(true);
    expect(n2.ctx.incomingConnections).toBe(2);
    order.length = 0;
    const bulk = n1.ctx.call(2, 3, Buffer.alloc(big)).then(() => order.push('bulk done'));
    const small = n1.ctx.call(2, 3, Buffer.alloc(3), { connectionClass: ConnectionClass.System }).then(() => order.push('small done'));
    await Promise.all([bulk, small]);
    expect(order.indexOf('small done')).toBeLessThan(order.indexOf(`served ${big}`));
    n1.ctx.disconnect(2); // every class
    expect(n1.ctx.isConnected(2)).toBe(false);
    expect(n1.ctx.isConnected(2, ConnectionClass.System)).toBe(false);
  });
});

describe('connection lifecycle and metrics', () => {
  it('redials at once after a healthy connection closes, and counts the reconnect', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    registerEcho(n2.ctx);
    await n1.ctx.call(2, ECHO, Buffer.alloc(0));
    n1.ctx.disconnect(2);
    expect(n1.ctx.isConnected(2)).toBe(false);
    expect((await n1.ctx.call(2, ECHO, Buffer.from('again'))).toString()).toBe('again');
    const m = n1.ctx.metrics.peer(2);
    expect([m.dials, m.reconnects, m.connectionsEstablished]).toEqual([2, 1, 2]);
    await waitFor(() => n2.ctx.incomingConnections === 1, 5000, 'n2 to drop the old connection');
  });

  it('a dialer that receives garbage instead of an ack closes; its unsent calls are retryable', async () => {
    const server = createServer((s) => {
      s.on('data', () => s.write(Buffer.from('00000004ffffffff', 'hex')));
      s.on('error', () => {});
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const n1 = await nodes.start(1);
    n1.ctx.setPeerAddress(7, { host: '127.0.0.1', port: (server.address() as { port: number }).port });
    const e = await rejection(n1.ctx.call(7, ECHO, Buffer.alloc(0)));
    expect([e.code, e.retryable, e.ambiguous]).toEqual(['rpc.unavailable', true, false]);
    expect(e.message).toMatch(/handshake magic/);
    expect(n1.ctx.metrics.peer(7).malformedFrames).toBe(1);
  });

  it('a message delayed by the fault hook is dropped if its connection closes meanwhile', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const got = collectOneWays(n2.ctx);
    registerEcho(n2.ctx);
    await n1.ctx.call(2, ECHO, Buffer.alloc(0));
    n1.ctx.faults.setFaults(2, { delayMs: 30 });
    n1.ctx.send(2, ONE_WAY, Buffer.from('late'));
    n1.ctx.disconnect(2);
    n1.ctx.faults.clearFaults();
    n1.ctx.send(2, ONE_WAY, Buffer.from('fresh'));
    await waitFor(() => got.length === 1, 5000, 'the fresh one-way');
    await waitFor(() => n1.ctx.metrics.peer(2).delayedDiscarded === 1, 5000, 'the delay to end');
    expect(got).toEqual(['fresh']);
  });

  it('counts bytes, messages and frames on both ends', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    registerEcho(n2.ctx);
    await Promise.all([0, 1, 2].map(() => n1.ctx.call(2, ECHO, Buffer.alloc(100))));
    const a = n1.ctx.metrics.peer(2);
    const b = n2.ctx.metrics.peer(1);
    expect([a.messagesSent, a.messagesReceived, b.messagesSent, b.messagesReceived]).toEqual([3, 3, 3, 3]);
    expect(a.bytesSent).toBe(b.bytesReceived);
    expect(b.bytesSent).toBe(a.bytesReceived);
    expect(a.framesSent).toBe(b.framesReceived);
    expect(n1.ctx.metrics.totals().messagesSent).toBe(3);
    expect(Object.keys(n1.ctx.metrics.snapshot())).toContain('2');
  });
});
