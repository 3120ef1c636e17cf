/**
 * Cairn's admin HTTP surface as the suite uses it (black box: plain HTTP + JSON):
 *   POST /_admin/faults   { peer: <node id>, spec: { partition?, dropProbability?,
 *                           delayMs?, duplicateProbability? } } sets the fault hook of
 *                           the node's RPC towards `peer`; { clear: true } clears all.
 *   POST /_admin/clock    { offsetMs } skews the node's HLC physical source.
 *   GET  /_status/ranges  JSON describing ranges, their leaseholders and Raft leaders.
 * The status shape is read tolerantly (rangeId / leaseholder / leader under the names
 * CockroachDB's status API uses), since only changes between snapshots matter here.
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

export interface RangeLeadership {
  readonly rangeId: number;
  readonly leaseholder: number | undefined;
  readonly leader: number | undefined;
  readonly startKey: string | undefined;
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

/** Extracts range leadership from a /_status/ranges body of any reasonable shape. */
export function parseRanges(body: unknown): RangeLeadership[] {
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
        leaseholder: nodeIdIn(o['leaseholder'] ?? o['leaseHolder'] ?? o['lease']),
        leader: nodeIdIn(o['leader'] ?? o['raftLeader'] ?? o['leaderId']),
        startKey: typeof o['startKey'] === 'string' ? o['startKey'] : undefined,
      });
      return;
    }
    Object.values(o).forEach(visit);
  };
  visit(body);
  return out;
}

export async function rangeStatus(httpUrl: string, timeoutMs = 3000): Promise<RangeLeadership[]> {
  const res = await fetch(httpUrl + '/_status/ranges', { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new CairnError('jepsen.admin', `jepsen: GET /_status/ranges on ${httpUrl}: ${res.status}`);
  return parseRanges(await res.json());
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
  return out;
}
