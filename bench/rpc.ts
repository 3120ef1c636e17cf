/**
 * RPC transport benchmark: round trips per second between two RpcContexts in
 * one process over TCP loopback, with a fixed number of calls in flight
 * (each completion issues the next call), 1 KB request and response
 * payloads, and a synchronous echo handler. Also reports the latency of
 * sequential calls (one in flight) and the one-way message rate. Prints figures; never asserted in `npm test` (DESIGN.md §5).
 *
 *   npx tsc -p . && node dist/bench/rpc.js [--seconds 5] [--inflight 64] [--payload 1024] [--oneway-seconds 2]
 *                                          [--no-coalesce]   (one socket write per message, for comparison)
 *                                          [--server-process] (server in a child process; round trips only)
 *
 * The machine is shared: the rate per CPU-second (process CPU time, both
 * endpoints) is the steadier figure when other work competes for the cores.
 *
 * DESIGN.md §4 reference: ~650,000 round trips/s coalesced, ~50,000/s with
 * one write() per message; target here ≥ 200,000 round trips/s.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Clock, systemPhysicalMicros } from '../src/util/hlc.js';
import { Prng } from '../src/util/prng.js';
import { RpcContext } from '../src/rpc/rpc-context.js';

function arg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
}

const seconds = arg('seconds', 5);
const inflight = arg('inflight', 64);
const payloadBytes = arg('payload', 1024);
const oneWaySeconds = arg('oneway-seconds', 2);

const uncoalesced = process.argv.includes('--no-coalesce');

async function node(nodeId: number): Promise<{ ctx: RpcContext; port: number }> {
  const ctx = new RpcContext({
    nodeId,
    clusterId: 'bench',
    clock: new Clock(systemPhysicalMicros),
    prng: new Prng(nodeId),
    flushEachMessage: uncoalesced,
  });
  const { port } = await ctx.listen('127.0.0.1', 0);
  return { ctx, port };
}

async function roundTrips(a: RpcContext, payload: Buffer, ms: number): Promise<number> {
  let done = 0;
  let stop = false;
  const deadline = performance.now() + ms;
  await new Promise<void>((resolve, reject) => {
    let running = inflight;
    const loop = (): void => {
      a.call(2, 1, payload).then(() => {
        done++;
        if (!stop && (done & 1023) === 0 && performance.now() > deadline) stop = true;
        if (stop) {
          if (--running === 0) resolve();
        } else loop();
      }, reject);
    };
    for (let i = 0; i < inflight; i++) loop();
  });
  return done;
}

/** Registers the benchmark's methods: 1 echoes a fixed response, 2 counts one-ways. */
function serve(ctx: RpcContext): { oneWays: () => number } {
  const response = Buffer.alloc(payloadBytes, 0x5a);
  ctx.register(1, () => response);
  let oneWays = 0;
  ctx.register(2, () => {
    oneWays++;
  });
  return { oneWays: () => oneWays };
}

/** --server-process: the server runs in a child process (one core each, as between real nodes). */
async function childServer(): Promise<void> {
  const n2 = await node(2);
  serve(n2.ctx);
  process.send?.({ port: n2.port });
  // The parent asks for this process's CPU time around its measurement.
  process.on('message', () => process.send?.({ cpu: process.cpuUsage() }));
  process.on('disconnect', () => void n2.ctx.close().then(() => process.exit(0)));
}

async function main(): Promise<void> {
  if (process.argv.includes('--child')) return childServer();
  const separate = process.argv.includes('--server-process');
  const n1 = await node(1);
  let n2: { ctx: RpcContext; port: number } | null = null;
  let oneWays: () => number;
  let child: ChildProcess | null = null;
  if (separate) {
    child = fork(fileURLToPath(import.meta.url), [...process.argv.slice(2), '--child']);
    const port = await new Promise<number>((resolve) => child?.once('message', (m: { port: number }) => resolve(m.port)));
    n1.ctx.setPeerAddress(2, { host: '127.0.0.1', port });
    oneWays = () => -1;
  } else {
    n2 = await node(2);
    n1.ctx.setPeerAddress(2, { host: '127.0.0.1', port: n2.port });
    n2.ctx.setPeerAddress(1, { host: '127.0.0.1', port: n1.port });
    oneWays = serve(n2.ctx).oneWays;
  }
  const payload = Buffer.alloc(payloadBytes, 0xa5);

  const childCpu = async (): Promise<number> => {
    if (child === null) return 0;
    const reply = new Promise<number>((resolve) =>
      child?.once('message', (m: { cpu: NodeJS.CpuUsage }) => resolve(m.cpu.user + m.cpu.system)),
    );
    child.send('cpu');
    return reply;
  };

  await roundTrips(n1.ctx, payload, 500); // warm up
  const serverCpu0 = await childCpu();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const n = await roundTrips(n1.ctx, payload, seconds * 1000);
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const serverCpu = ((await childCpu()) - serverCpu0) / 1e6;
  const m = n1.ctx.metrics.peer(2);
  console.log(
    `rpc round trips: ${Math.round(n / elapsed).toLocaleString('en-US')}/s ` +
      `(${inflight} in flight, ${payloadBytes} B each way, ${elapsed.toFixed(1)} s, ` +
      `cpu ${((cpu.user + cpu.system) / 1e6 / elapsed).toFixed(2)} cores = ` +
      `${Math.round(n / ((cpu.user + cpu.system) / 1e6)).toLocaleString('en-US')} per cpu-second, ` +
      `${(m.messagesSent / m.framesSent).toFixed(1)} messages/frame sent${uncoalesced ? ', NOT coalesced' : ''}` +
      `${separate ? ', server in another process: cpu is the client only' : ''})`,
  );
  if (separate) {
    console.log(
      `  server process: cpu ${(serverCpu / elapsed).toFixed(2)} cores = ` +
        `${Math.round(n / serverCpu).toLocaleString('en-US')} round trips per server cpu-second`,
    );
  }

  // Latency with one call in flight: percentiles over sequential round trips.
  const lat: number[] = [];
  const tl = performance.now();
  while (performance.now() - tl < 1000) {
    const s = performance.now();
    await n1.ctx.call(2, 1, payload);
    lat.push((performance.now() - s) * 1000);
  }
  lat.sort((a, b) => a - b);
  const pct = (q: number): string => (lat[Math.min(lat.length - 1, Math.floor(q * lat.length))] as number).toFixed(0);
  console.log(`rpc latency, 1 in flight: p50 ${pct(0.5)} µs, p99 ${pct(0.99)} µs, p99.9 ${pct(0.999)} µs (${lat.length} calls)`);

  // One-way throughput: batches of 1,000 sends per turn, waiting for delivery.
  const small = Buffer.alloc(64);
  const t1 = performance.now();
  let sent = 0;
  while (!separate && performance.now() - t1 < oneWaySeconds * 1000) {
    for (let i = 0; i < 1000; i++) n1.ctx.send(2, 2, small);
    sent += 1000;
    const target = sent;
    while (oneWays() < target) await new Promise((r) => setImmediate(r));
  }
  const el2 = (performance.now() - t1) / 1000;
  if (sent > 0)
    console.log(`rpc one-way messages: ${Math.round(sent / el2).toLocaleString('en-US')}/s (64 B, 1,000 per turn)`);

  await n1.ctx.close();
  await n2?.ctx.close();
  child?.disconnect();
}

void main();
