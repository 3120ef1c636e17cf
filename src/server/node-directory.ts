/**
 * The node directory: what each node knows about the others' addresses
 * (CockroachDB learns these through gossip; Cairn exchanges the whole
 * directory with each peer on a timer — it is small: one entry per node).
 *
 *   node A ──Gossip{from, known[]}──► node B      B merges A's entries,
 *          ◄──{clusterId, nodeId, instanceId,     answers with its own;
 *              initialized, known[]}──────────     A merges those.
 *
 * Merge rule: per node id, the entry with the later `startedAtMicros` wins
 * (a restarted node may come back on another port). A node never takes
 * another node's word about its own id (that is how a duplicate would
 * overwrite the original; duplicates are detected separately, see node.ts).
 *
 * Payloads are JSON: this is control traffic on a timer, never on the KV
 * hot path (DESIGN.md §4).
 *
 * Ownership: src/server. No I/O here; node.ts calls and answers.
 */
import type { PeerAddress } from '../rpc/rpc-context.js';
import { ServerError, parseHostPort } from './config.js';

export interface NodeDescriptor {
  readonly nodeId: number;
  readonly clusterId: string;
  /** Random per process start: tells two processes claiming one node id apart. */
  readonly instanceId: string;
  readonly rpcAddr: string;
  readonly sqlAddr: string;
  readonly httpAddr: string;
  readonly startedAtMicros: number;
}

/** The RPC methods of the node layer (KvMethod uses 100…; src/rpc reserves the top). */
export const ServerMethod = {
  /** request: GossipRequest JSON; response: GossipResponse JSON. */
  Gossip: 200,
  /** request: BootstrapRequest JSON (sent by the node running `cairn init`); response: empty. */
  Bootstrap: 201,
  /** request: empty (sent by `cairn init`); response: InitResponse JSON. */
  Init: 202,
  /** request: empty; response: LocalNodeStatus JSON (this node's own view). */
  NodeStatus: 203,
  /** request: {rangeId, checksumId}; response: {checksum}. */
  Checksum: 204,
  /** request: empty (sent by `cairn node status`); response: NodeStatusRow[] JSON of the whole cluster. */
  ClusterStatus: 205,
  /** request: {nodeId, decommissioning} (sent by `cairn node decommission`); response: empty. */
  Decommission: 206,
} as const;

/** What a node reports about its store in each exchange (for the StorePool, store-pool.ts). */
export interface StoreLoad {
  readonly storeId: number;
  readonly replicaCount: number;
  readonly leaseCount: number;
}

export interface GossipRequest {
  readonly from: NodeDescriptor | null;
  readonly known: readonly NodeDescriptor[];
  /** The sender's store load (absent while it has no store). */
  readonly load?: StoreLoad | null;
}

export interface GossipResponse {
  readonly clusterId: string;
  readonly nodeId: number;
  readonly instanceId: string;
  readonly initialized: boolean;
  readonly rpcAddr: string;
  readonly known: readonly NodeDescriptor[];
  readonly load?: StoreLoad | null;
}

export interface BootstrapRequest {
  readonly clusterId: string;
  readonly nodeId: number;
  readonly replicas: readonly { nodeId: number; storeId: number; replicaId: number }[];
  readonly nowWall: number;
  readonly nowLogical: number;
  readonly known: readonly NodeDescriptor[];
}

export interface InitResponse {
  readonly clusterId: string;
  readonly nodeIds: readonly number[];
}

export function encodeJson(v: unknown): Buffer {
  return Buffer.from(JSON.stringify(v), 'utf8');
}

export function decodeJson<T>(b: Buffer, what: string): T {
  try {
    return JSON.parse(b.toString('utf8')) as T;
  } catch (e) {
    throw new ServerError('server.bad_message', `server: malformed ${what} message`, { cause: e });
  }
}

export class NodeDirectory {
  private readonly byId = new Map<number, NodeDescriptor>();

  constructor(
    private readonly selfId: () => number,
    /** Called when a node's RPC address is learnt or changes. */
    private readonly onAddress: (nodeId: number, addr: PeerAddress) => void,
  ) {}

  /** Merges one entry; true if it was new or newer. */
  merge(d: NodeDescriptor): boolean {
    if (!(Number.isInteger(d.nodeId) && d.nodeId > 0) || d.nodeId === this.selfId()) return false;
    const old = this.byId.get(d.nodeId);
    if (old !== undefined && old.startedAtMicros >= d.startedAtMicros) return false;
    this.byId.set(d.nodeId, d);
    if (old?.rpcAddr !== d.rpcAddr) this.onAddress(d.nodeId, peerAddress(d.rpcAddr));
    return true;
  }

  mergeAll(ds: readonly NodeDescriptor[]): void {
    for (const d of ds) this.merge(d);
  }

  /** Records this node's own entry (merge() refuses the own id). */
  setSelf(d: NodeDescriptor): void {
    this.byId.set(d.nodeId, d);
  }

  get(nodeId: number): NodeDescriptor | undefined {
    return this.byId.get(nodeId);
  }

  address(nodeId: number): PeerAddress | undefined {
    const d = this.byId.get(nodeId);
    return d === undefined ? undefined : peerAddress(d.rpcAddr);
  }

  all(): NodeDescriptor[] {
    return [...this.byId.values()].sort((a, b) => a.nodeId - b.nodeId);
  }

  nodeIds(): number[] {
    return this.all().map((d) => d.nodeId);
  }
}

export function peerAddress(hostPort: string): PeerAddress {
  const a = parseHostPort('address', hostPort);
  return { host: a.host, port: a.port };
}
