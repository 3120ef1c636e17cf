/**
 * Cairn's admin HTTP surface as the suite uses it (black box: plain HTTP + JSON):
 *   GET  /health[?ready=1]         200 when serving (ready: joined, live, clock healthy)
 *   POST /_admin/faults            { nodeId, spec: { partition?, dropProbability?,
 *                                  delayMs?, duplicateProbability? } } sets the fault hook
 *                                  of the node's RPC towards peer nodeId; { clear: true }
 *                                  clears all
 *   POST /_admin/clock             { offsetMs } skews the node's HLC physical source
 *   POST /_admin/transfer-lease    { rangeId, toNodeId }
 *   POST /_admin/kv                { ops: [{ op: 'put'|'get', key: HEX, value?: HEX }] }
 *   GET  /_status/ranges           this node's replicas: [{ rangeId, isLeader,
 *                                  isLeaseholder, leaseholderNodeId, … }]
 * The status shape is read tolerantly, since only changes between snapshots matter.
 */
import { CairnError } from '../../src/util/index.js';

export async function adminPost(httpUrl: string, path: string, body: unknown, timeoutMs = 5000): Promise<unknown> {
  const res = await fetch(httpUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new CairnError('jepsen.admin', `jepsen: POST ${path} on ${httpUrl}: ${res.status} ${text.slice(0, 200)}`);
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

/** The HTTP status of GET path, or 0 when the node does not answer. */
export async function httpStatus(httpUrl: string, path: string, timeoutMs = 2000): Promise<number> {
  try {
    const res = await fetch(httpUrl + path, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

export interface RangeLeadership {
  readonly rangeId: number;
  readonly leaseholder: number | undefined;
  readonly leader: number | undefined;
  readonly startKey: string | undefined;
  /** Node ids of the voters in the answering replica's descriptor (Cairn's RangeStatus.replicas, type 0). */
  readonly voters?: readonly number[];
}

/** Voter node ids of a RangeStatus-like replicas list ({nodeId,type}[]); undefined for other shapes. */
function votersIn(v: unknown): number[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: number[] = [];
  for (const r of v as Record<string, unknown>[]) {
    const id = typeof r === 'object' && r !== null ? num(r['nodeId']) : undefined;
    if (id === undefined) return undefined;
    if (r['type'] === undefined || r['type'] === 0) out.push(id);
  }
  return out.sort((a, b) => a - b);
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined;
}

function nodeIdIn(v: unknown): number | undefined {
  if (typeof v !== 'object' || v === null) return num(v);
  const o = v as Record<string, unknown>;
  if (o['replica'] !== undefined) return nodeIdIn(o['replica']);
  return num(o['nodeId'] ?? o['node_id']);
}

/**
 * Extracts range leadership from a /_status/ranges body of any reasonable shape;
 * `nodeId` is the answering node's id (a replica with isLeader makes it the leader).
 */
export function parseRanges(body: unknown, nodeId?: number): RangeLeadership[] {
  const out: RangeLeadership[] = [];
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) {
      v.forEach(visit);
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    const o = v as Record<string, unknown>;
    const rangeId = num(o['rangeId'] ?? o['range_id'] ?? o['rangeID']);
    if (rangeId !== undefined) {
      out.push({
        rangeId,
        leaseholder: nodeIdIn(o['leaseholderNodeId'] ?? o['leaseholder'] ?? o['leaseHolder'] ?? o['lease']) ?? (o['isLeaseholder'] === true ? nodeId : undefined),
        leader: nodeIdIn(o['leader'] ?? o['raftLeader'] ?? o['leaderId']) ?? (o['isLeader'] === true ? nodeId : undefined),
        startKey: typeof o['startKey'] === 'string' ? o['startKey'] : undefined,
        voters: votersIn(o['replicas']),
      });
      return;
    }
    Object.values(o).forEach(visit);
  };
  visit(body);
  return out;
}

export async function rangeStatus(httpUrl: string, nodeId?: number, timeoutMs = 3000): Promise<RangeLeadership[]> {
  const res = await fetch(httpUrl + '/_status/ranges', { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new CairnError('jepsen.admin', `jepsen: GET /_status/ranges on ${httpUrl}: ${res.status}`);
  return parseRanges(await res.json(), nodeId);
}

/**
 * The cluster's view: every answering node's replicas merged per range (leaseholder from
 * whoever knows it, leader from the replica that says it leads). Unreachable nodes are
 * skipped; undefined when none answers.
 */
export async function clusterRanges(nodes: readonly { id: number; httpUrl: string | undefined }[]): Promise<RangeLeadership[] | undefined> {
  const merged = new Map<number, RangeLeadership>();
  let answered = false;
  await Promise.all(
    nodes.map(async (n) => {
      if (n.httpUrl === undefined) return;
      try {
        for (const r of await rangeStatus(n.httpUrl, n.id, 1500)) {
          answered = true;
          const m = merged.get(r.rangeId);
          merged.set(r.rangeId, {
            rangeId: r.rangeId,
            leaseholder: m?.leaseholder ?? r.leaseholder,
            leader: m?.leader ?? r.leader,
            startKey: m?.startKey ?? r.startKey,
            // The leaseholder's descriptor is the current one; a follower's may lag.
            voters: r.leaseholder === n.id ? r.voters : (m?.voters ?? r.voters),
          });
        }
      } catch {
        // a down or paused node
      }
    }),
  );
  return answered ? [...merged.values()].sort((a, b) => a.rangeId - b.rangeId) : undefined;
}

/** Leaseholder/leader changes between two snapshots, as evidence lines. */
export function leadershipChanges(before: readonly RangeLeadership[], after: readonly RangeLeadership[]): string[] {
  const prev = new Map(before.map((r) => [r.rangeId, r]));
  const out: string[] = [];
  for (const r of after) {
    const p = prev.get(r.rangeId);
    if (p === undefined) {
      out.push(`r${r.rangeId} appeared (split)`);
      continue;
    }
    if (p.leaseholder !== r.leaseholder) out.push(`r${r.rangeId} lease n${p.leaseholder ?? '?'} → n${r.leaseholder ?? '?'}`);
    if (p.leader !== r.leader) out.push(`r${r.rangeId} leader n${p.leader ?? '?'} → n${r.leader ?? '?'}`);
  }
  // A range no live node reports any more: merged into its left neighbour (or every replica of it is down).
  const now = new Set(after.map((r) => r.rangeId));
  for (const r of before) if (!now.has(r.rangeId)) out.push(`r${r.rangeId} gone (merged, or no replica answered)`);
  return out;
}
