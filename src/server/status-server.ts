/**
 * The HTTP listener on --http-addr (node:http): health, status and the admin
 * hooks that tests and the jepsen-style suite drive.
 *
 *   GET  /health                 200 {"status":"ok",…} while the process serves HTTP
 *   GET  /health?ready=1         200 when joined, initialised, live and clock-healthy;
 *                                503 {"status":"not ready","reason":…} otherwise
 *   GET  /_status/vars           Prometheus text format (metrics.ts)
 *   GET  /_status/nodes          JSON: NodeStatusRow[] (every node, with liveness)
 *   GET  /_status/ranges         JSON: RangeStatus[] (this node's replicas)
 *   GET  /_status/rpc            JSON: outgoing connection states (RpcContext.status)
 *   GET  /_status/locks          JSON: LockTableStatus[] (this node's lock tables with a lock
 *                                or an active request: holders and wait queues, for debugging)
 *   POST /_admin/faults          {"nodeId":N,"spec":FaultSpec} sets RPC faults towards
 *                                peer N; {"clear":true[,"nodeId":N]} clears them
 *   POST /_admin/clock           {"offsetMs":X} skews this node's physical clock
 *   POST /_admin/kv              {"ops":[{"op":"put","key":HEX,"value":HEX} |
 *                                        {"op":"get","key":HEX} |
 *                                        {"op":"scan","key":HEX,"endKey":HEX,"maxKeys":N}]}
 *                                → {"results":[{"ok":true,"value":HEX|null} |
 *                                   {"ok":true,"rows":[[HEX,HEX]…]} |
 *                                   {"ok":false,"code":…,"message":…,"ambiguous":bool}]}
 *                                ops run concurrently (at most 64 in flight), each its
 *                                own KV batch through this node's router
 *   POST /_admin/checksum        → [{"rangeId":N,"checksums":{nodeId:hex}}]
 *   POST /_admin/transfer-lease  {"rangeId":N,"toNodeId":M}
 *   POST /_admin/split           {"key":HEX, "expirationMs"?:N} → {"left":desc,"right":desc} | {"split":null}
 *                                a manual split: sticky (never merged by the merge queue) until
 *                                expirationMs (ms since the epoch; default forever)
 *   POST /_admin/merge           {"key":HEX} → {"merged":desc|null}: the range holding key absorbs its
 *                                right neighbour (sticky or not); null: it is the last range
 *                                (already a range boundary)
 *   POST /_admin/relocate        {"rangeId":N,"addNodeId"?:A,"removeNodeId"?:R} → {"desc":desc}: moves one
 *                                voter (add, remove, or replace R by A; admin-relocate.ts); typed
 *                                refusals are 4xx (unknown range 404, A already a replica 409, …)
 *
 * The admin KV endpoint is for tests and tools (JSON is fine off the hot
 * path); SQL is the production interface.
 *
 * Errors: a CairnError answers 4xx/5xx with {"code","message"}; anything else
 * is 500 and logged.
 *
 * Ownership: src/server owns the listener.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { CairnError } from '../util/errors.js';
import { MAX_TIMESTAMP, ts, type Timestamp } from '../util/hlc.js';
import type { FaultSpec } from '../rpc/fault-hook.js';
import type { RangeDescriptor } from '../kv/api.js';
import { ServerError, type HostPort } from './config.js';
import type { Node } from './node.js';
import { listenOn } from './sql-server.js';
import { RELOCATE_ERROR_STATUS } from './admin-relocate.js';

const MAX_BODY_BYTES = 64 << 20;
const KV_CONCURRENCY = 64;

type AdminOp =
  | { readonly op: 'put'; readonly key: string; readonly value: string }
  | { readonly op: 'get'; readonly key: string }
  | { readonly op: 'scan'; readonly key: string; readonly endKey: string; readonly maxKeys?: number };

export type OpResult =
  | { ok: true; value?: string | null; rows?: [string, string][] }
  | { ok: false; code: string; message: string; ambiguous: boolean };

function hex(s: unknown, what: string): Buffer {
  // Buffer.from stops at the first pair that is not hex: a full-length result is exactly /^([0-9a-fA-F]{2})*$/
  // (without running that regex over a 2 KB value on every put).
  const b = typeof s === 'string' ? Buffer.from(s, 'hex') : null;
  if (b === null || b.length * 2 !== (s as string).length) throw new ServerError('server.bad_request', `server: ${what} must be a hex string`);
  return b;
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let n = 0;
    req.on('data', (c: Buffer) => {
      n += c.length;
      if (n > MAX_BODY_BYTES) {
        reject(new ServerError('server.bad_request', 'server: request body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (text === '') return resolve({});
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new ServerError('server.bad_request', 'server: request body is not JSON'));
      }
    });
    req.on('error', reject);
  });
}

/**
 * The /_admin/kv answer as JSON text: {"results":[…]} (then a newline), the
 * ok results of gets and puts written directly — their values are hex, which
 * needs no escaping — and the rest through JSON.stringify. Same text as
 * JSON.stringify({ results }) + "\n".
 */
export function kvResultsJson(results: readonly OpResult[]): string {
  let out = '{"results":[';
  for (let i = 0; i < results.length; i++) {
    const r = results[i] as OpResult;
    if (i > 0) out += ',';
    if (r.ok && r.rows === undefined) out += r.value === undefined ? '{"ok":true}' : r.value === null ? '{"ok":true,"value":null}' : `{"ok":true,"value":"${r.value}"}`;
    else out += JSON.stringify(r);
  }
  return `${out}]}\n`;
}

function send(res: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  const text = typeof body === 'string' ? body : `${JSON.stringify(body)}\n`;
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function describe(d: RangeDescriptor): { rangeId: number; startKey: string; endKey: string; generation: number; sticky: boolean } {
  return { rangeId: d.rangeId, startKey: d.startKey.toString('hex'), endKey: d.endKey.toString('hex'), generation: d.generation, sticky: d.stickyBit !== undefined };
}

/** /_admin/split's expirationMs as an HLC timestamp: beyond 2^53 µs (year 2255) it is forever. */
function stickyExpiration(ms: unknown): Timestamp {
  const n = Number(ms);
  if (!Number.isFinite(n) || n < 0) throw new ServerError('server.bad_request', 'server: split expirationMs must be a non-negative number of ms since the epoch');
  return n * 1000 >= MAX_TIMESTAMP.wall ? MAX_TIMESTAMP : ts(Math.floor(n * 1000));
}

export class StatusServer {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly node: Node) {}

  listen(addr: HostPort): Promise<HostPort> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((e: unknown) => this.fail(res, e));
    });
    server.on('connection', (s) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
    this.server = server;
    return listenOn(server, addr, '--http-addr');
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    for (const sock of this.sockets) sock.destroy();
    if (s !== null) await new Promise<void>((r) => s.close(() => r()));
  }

  private fail(res: ServerResponse, e: unknown): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (e instanceof CairnError) {
      const status = RELOCATE_ERROR_STATUS.get(e.code) ?? (e.code === 'server.bad_request' || e.code.startsWith('rpc.invalid') ? 400 : e.code === 'server.not_serving' || e.retryable ? 503 : 500);
      send(res, status, { code: e.code, message: e.message });
      return;
    }
    this.node.log.error({ err: (e as Error).message }, 'server: HTTP handler failed');
    send(res, 500, { code: 'server.internal', message: (e as Error).message });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = req.url ?? '/';
    const q = raw.indexOf('?');
    // Only a query string needs the URL parser (~5 µs a request on the admin KV path otherwise).
    const url = q < 0 && raw.startsWith('/') ? null : new URL(raw, 'http://x');
    const n = this.node;
    const route = `${req.method ?? 'GET'} ${url === null ? raw : url.pathname}`;
    switch (route) {
      case 'GET /health': {
        const base = { nodeId: n.rpc.nodeId, state: n.state, clockHealthy: n.clockHealthy, pid: process.pid };
        if (url?.searchParams.get('ready') === '1' && !n.ready) {
          const reason = n.notServingReason() ?? (n.liveness?.selfLive !== true ? 'server: liveness heartbeat has not succeeded yet' : 'server: SQL is not mounted yet');
          send(res, 503, { status: 'not ready', reason, ...base });
          return;
        }
        send(res, 200, { status: 'ok', ...base });
        return;
      }
      case 'GET /_status/vars':
        send(res, 200, n.metrics.render(), 'text/plain; version=0.0.4; charset=utf-8');
        return;
      case 'GET /_status/nodes':
        send(res, 200, await n.clusterStatus());
        return;
      case 'GET /_status/ranges':
        send(res, 200, n.rangeStatus());
        return;
      case 'GET /_status/rpc':
        send(res, 200, n.rpc.status());
        return;
      case 'GET /_status/locks':
        send(res, 200, n.lockTableStatus());
        return;
      case 'POST /_admin/faults': {
        const b = (await readBody(req)) as { nodeId?: number; spec?: FaultSpec; clear?: boolean };
        if (b.clear === true) n.rpc.faults.clearFaults(b.nodeId);
        else {
          if (typeof b.nodeId !== 'number' || b.spec === undefined) throw new ServerError('server.bad_request', 'server: faults need {"nodeId":N,"spec":{…}} or {"clear":true}');
          n.rpc.faults.setFaults(b.nodeId, b.spec);
        }
        send(res, 200, { faults: n.rpc.faults.describe(), counters: n.rpc.faults.totals() });
        return;
      }
      case 'POST /_admin/clock': {
        const b = (await readBody(req)) as { offsetMs?: number };
        if (typeof b.offsetMs !== 'number' || !Number.isFinite(b.offsetMs)) throw new ServerError('server.bad_request', 'server: clock needs {"offsetMs":X}');
        n.setClockSkew(b.offsetMs);
        send(res, 200, { offsetMs: b.offsetMs });
        return;
      }
      case 'POST /_admin/kv': {
        const b = (await readBody(req)) as { ops?: AdminOp[] };
        if (!Array.isArray(b.ops)) throw new ServerError('server.bad_request', 'server: kv needs {"ops":[…]}');
        send(res, 200, kvResultsJson(await this.runOps(b.ops)));
        return;
      }
      case 'POST /_admin/checksum':
        send(res, 200, await n.rangeChecksums());
        return;
      case 'POST /_admin/transfer-lease': {
        const b = (await readBody(req)) as { rangeId?: number; toNodeId?: number };
        await n.transferLease(Number(b.rangeId), Number(b.toNodeId));
        send(res, 200, { ok: true });
        return;
      }
      case 'POST /_admin/split': {
        const b = (await readBody(req)) as { key?: string; expirationMs?: number };
        const exp = b.expirationMs === undefined ? undefined : stickyExpiration(b.expirationMs);
        const r = await n.adminSplit(hex(b.key, 'key'), exp);
        send(res, 200, r === null ? { split: null } : { left: describe(r.left), right: describe(r.right) });
        return;
      }
      case 'POST /_admin/merge': {
        const b = (await readBody(req)) as { key?: string };
        const r = await n.adminMerge(hex(b.key, 'key'));
        send(res, 200, { merged: r === null ? null : describe(r) });
        return;
      }
      case 'POST /_admin/relocate': {
        const b = (await readBody(req)) as { rangeId?: number; addNodeId?: number; removeNodeId?: number };
        const d = await n.adminRelocate({ rangeId: Number(b.rangeId), addNodeId: b.addNodeId, removeNodeId: b.removeNodeId });
        send(res, 200, { desc: { ...describe(d), replicas: d.replicas.map((r) => ({ nodeId: r.nodeId, storeId: r.storeId, replicaId: r.replicaId, type: r.type })) } });
        return;
      }
      default:
        send(res, 404, { code: 'server.not_found', message: `server: no route ${route}` });
    }
  }

  private async runOps(ops: readonly AdminOp[]): Promise<OpResult[]> {
    const kv = this.node.requireKv();
    const out: OpResult[] = new Array<OpResult>(ops.length);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < ops.length) {
        const i = next++;
        out[i] = await this.runOp(kv, ops[i] as AdminOp);
      }
    };
    // One op (the bench's, a tool's): no worker to start.
    if (ops.length === 1) out[0] = await this.runOp(kv, ops[0] as AdminOp);
    else await Promise.all(Array.from({ length: Math.min(KV_CONCURRENCY, ops.length) }, worker));
    return out;
  }

  /** One admin KV op; an expected failure (CairnError) is its result, anything else propagates (500). */
  private async runOp(kv: ReturnType<Node['requireKv']>, op: AdminOp): Promise<OpResult> {
    try {
      switch (op.op) {
        case 'put':
          await kv.put(hex(op.key, 'key'), hex(op.value, 'value'));
          return { ok: true };
        case 'get': {
          const v = await kv.get(hex(op.key, 'key'));
          return { ok: true, value: v === null ? null : v.toString('hex') };
        }
        case 'scan': {
          const rows = await kv.scan(hex(op.key, 'key'), hex(op.endKey, 'endKey'), op.maxKeys ?? 0);
          return { ok: true, rows: rows.map((r) => [Buffer.from(r.key).toString('hex'), Buffer.from(r.value).toString('hex')]) };
        }
        default:
          throw new ServerError('server.bad_request', `server: unknown op ${JSON.stringify((op as { op: unknown }).op)}`);
      }
    } catch (e) {
      if (!(e instanceof CairnError)) throw e;
      return { ok: false, code: e.code, message: e.message, ambiguous: e.ambiguous };
    }
  }
}

