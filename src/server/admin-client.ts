/**
 * The client side of the node layer's admin RPCs, for the CLI (`cairn init`,
 * `cairn node status`) and the local cluster script: a throwaway RpcContext
 * without cluster or node id (the handshake lets an unknown id through, as
 * for a joining node) calls one node by address.
 *
 * Errors are one-line ServerErrors: an unreachable host names the address.
 *
 * Ownership: src/server. The caller's process owns the context for the
 * duration of one call.
 */
import { CairnError } from '../util/errors.js';
import { Clock, systemPhysicalMicros } from '../util/hlc.js';
import { Prng } from '../util/prng.js';
import { RpcContext } from '../rpc/rpc-context.js';
import { ServerError, formatHostPort, type HostPort } from './config.js';
import { ServerMethod, decodeJson, encodeJson, type InitResponse } from './node-directory.js';
import type { NodeStatusRow } from './node.js';

async function callNode(host: HostPort, method: number, timeoutMs: number, payload: Buffer = Buffer.alloc(0)): Promise<Buffer> {
  const rpc = new RpcContext({
    nodeId: 0,
    clusterId: '',
    clock: new Clock(systemPhysicalMicros, 0),
    prng: new Prng(Date.now() >>> 0),
    backoff: { initialMs: 50, maxMs: 200 },
    handshakeTimeoutMs: Math.min(timeoutMs, 5_000),
  });
  try {
    return await rpc.callAddress({ host: host.host, port: host.port }, method, payload, { timeoutMs });
  } catch (e) {
    if (e instanceof CairnError && e.code.startsWith('server.')) throw e;
    const full = e instanceof Error ? e.message : String(e);
    const why = full.includes('ECONNREFUSED') ? 'connection refused' : full.split(': ').slice(-1)[0] ?? full;
    throw new ServerError('server.unreachable', `cannot reach a Cairn node at ${formatHostPort(host)}: ${why}`, { cause: e });
  } finally {
    await rpc.close();
  }
}

/** `cairn init`: asks the node at `host` to bootstrap the cluster. */
export async function requestInit(host: HostPort, timeoutMs = 60_000): Promise<InitResponse> {
  return decodeJson<InitResponse>(await callNode(host, ServerMethod.Init, timeoutMs), 'init');
}

/** `cairn node status`: the cluster's node table as seen by `host`. */
export async function requestClusterStatus(host: HostPort, timeoutMs = 15_000): Promise<NodeStatusRow[]> {
  return decodeJson<NodeStatusRow[]>(await callNode(host, ServerMethod.ClusterStatus, timeoutMs), 'status');
}

/** `cairn node decommission` / `recommission`: sets node `nodeId`'s decommissioning flag through the node at `host`. */
export async function requestDecommission(host: HostPort, nodeId: number, decommissioning: boolean, timeoutMs = 15_000): Promise<void> {
  await callNode(host, ServerMethod.Decommission, timeoutMs, encodeJson({ nodeId, decommissioning }));
}

/** The node table as text, columns aligned (CockroachDB's `node status` layout). */
export function formatNodeStatus(rows: readonly NodeStatusRow[], withRanges: boolean): string {
  const header = ['id', 'address', 'sql_address', 'started', 'is_live'];
  if (withRanges) header.push('ranges', 'leaseholders', 'underreplicated');
  const body = rows.map((r) => {
    const row = [String(r.id), r.address, r.sqlAddress, r.started, String(r.isLive)];
    const num = (n: number | null): string => (n === null ? 'NULL' : String(n));
    if (withRanges) row.push(num(r.ranges), num(r.leaseholders), num(r.underreplicated));
    return row;
  });
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd();
  return [line(header), ...body.map(line), `(${rows.length} row${rows.length === 1 ? '' : 's'})`, ''].join('\n');
}
