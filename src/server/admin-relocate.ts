/**
 * POST /_admin/relocate (CockroachDB's AdminRelocateRange, reduced to one
 * voter at a time): {"rangeId":N,"addNodeId"?:A,"removeNodeId"?:R} adds a
 * voter on A, removes the voter on R, or replaces R by A in one joint step
 * (replica-change.ts addVoter/removeVoter), and answers the new descriptor.
 *
 *   1. the descriptor from meta2 (any node can drive the change: every step
 *      goes through the DistSender to the leaseholder);
 *   2. a change a dead driver left (joint config, learner) is finished first;
 *   3. when R holds the lease it is handed to another voter first (the
 *      leaseholder's replica cannot be removed: kv.cannot_remove_leaseholder);
 *   4. the step; a retryable refusal (descriptor changed by a concurrent
 *      split/merge/replicate-queue step, lease moving) re-reads and retries,
 *      bounded. A retry that finds the move already done answers it.
 *
 * Errors (4xx via RELOCATE_ERROR_STATUS): server.unknown_range (404),
 * server.bad_request, server.unknown_node, server.replica_exists (409: A is
 * already a voter), server.no_replica (R holds no voter), server.last_voter
 * (removing the only voter).
 *
 * Ownership: src/server; the change itself is src/kv/replica-change.ts.
 */
import { CairnError } from '../util/errors.js';
import { ZERO_TIMESTAMP } from '../util/hlc.js';
import { ReplicaType, type LeaseInfoResponse, type RangeDescriptor, type ReplicationTarget } from '../kv/api.js';
import type { DistSender } from '../kv/dist-sender.js';
import { addVoter, finishPendingChange, removeVoter } from '../kv/replica-change.js';
import { ServerError } from './config.js';

/** HTTP status of the typed errors this endpoint raises. */
export const RELOCATE_ERROR_STATUS: ReadonlyMap<string, number> = new Map([
  ['server.unknown_range', 404],
  ['server.unknown_node', 400],
  ['server.replica_exists', 409],
  ['server.no_replica', 400],
  ['server.last_voter', 400],
]);

export interface RelocateHost {
  readonly ds: DistSender;
  /** Every range descriptor (meta2). */
  descriptors(): Promise<readonly RangeDescriptor[]>;
  /** The store of a node known to the cluster (undefined: unknown). */
  storeOf(nodeId: number): number | undefined;
  /** Moves the lease of desc from its holder to toNodeId. */
  transferLease(desc: RangeDescriptor, fromNodeId: number, toNodeId: number): Promise<void>;
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface RelocateRequest {
  readonly rangeId: number;
  readonly addNodeId?: number;
  readonly removeNodeId?: number;
}

const MAX_ATTEMPTS = 8;

const voterOn = (d: RangeDescriptor, nodeId: number): boolean => d.replicas.some((r) => r.nodeId === nodeId && r.type === ReplicaType.Voter);

export async function adminRelocate(h: RelocateHost, q: RelocateRequest): Promise<RangeDescriptor> {
  const { rangeId, addNodeId: add, removeNodeId: remove } = q;
  if (!Number.isInteger(rangeId) || (add === undefined && remove === undefined) || (add !== undefined && !Number.isInteger(add)) || (remove !== undefined && !Number.isInteger(remove)) || add === remove) {
    throw new ServerError('server.bad_request', 'server: relocate needs {"rangeId":N,"addNodeId"?:A,"removeNodeId"?:R} with A ≠ R and at least one of them');
  }
  const sleep = h.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  let target: ReplicationTarget | null = null;
  if (add !== undefined) {
    const storeId = h.storeOf(add);
    if (storeId === undefined) throw new ServerError('server.unknown_node', `server: n${add} is not a known node with a store`);
    target = { nodeId: add, storeId };
  }
  for (let attempt = 1; ; attempt++) {
    let d = await lookup(h, rangeId);
    if (attempt > 1 && (add === undefined || voterOn(d, add)) && (remove === undefined || !d.replicas.some((r) => r.nodeId === remove))) return d;
    if (d.replicas.some((r) => r.type !== ReplicaType.Voter)) d = await finishPendingChange(h.ds, d);
    if (add !== undefined && d.replicas.some((r) => r.nodeId === add)) throw new ServerError('server.replica_exists', `server: r${rangeId} already has a replica on n${add}`);
    let old: ReplicationTarget | null = null;
    if (remove !== undefined) {
      const rep = d.replicas.find((r) => r.nodeId === remove && r.type === ReplicaType.Voter);
      if (rep === undefined) throw new ServerError('server.no_replica', `server: r${rangeId} has no voter on n${remove}`);
      if (add === undefined && d.replicas.filter((r) => r.type === ReplicaType.Voter).length <= 1) throw new ServerError('server.last_voter', `server: n${remove} holds the last voter of r${rangeId}`);
      old = { nodeId: rep.nodeId, storeId: rep.storeId };
    }
    try {
      if (old !== null) await moveLeaseOff(h, d, old.nodeId);
      if (target !== null) return await addVoter(h.ds, d, target, old);
      return await removeVoter(h.ds, d, old as ReplicationTarget);
    } catch (e) {
      if (!(e instanceof CairnError) || !e.retryable || attempt >= MAX_ATTEMPTS) throw e;
      await sleep(50 * attempt);
    }
  }
}

async function lookup(h: RelocateHost, rangeId: number): Promise<RangeDescriptor> {
  const d = (await h.descriptors()).find((x) => x.rangeId === rangeId);
  if (d === undefined) throw new ServerError('server.unknown_range', `server: no range r${rangeId}`);
  return d;
}

/**
 * When `nodeId` holds d's lease, hands it to another voter. The lease is read
 * from nodeId's own replica: any replica answers leaseInfo (its own view, no
 * lease check), and a lagging one named an older holder — then the move went
 * ahead without a transfer and the change refused to remove the leaseholder,
 * attempt after attempt (s9, relocate.test.ts at load ~30: 40 s). A holder
 * always knows its own lease (it applied it before serving under it).
 */
async function moveLeaseOff(h: RelocateHost, d: RangeDescriptor, nodeId: number): Promise<void> {
  const rep = d.replicas.find((r) => r.nodeId === nodeId);
  if (rep === undefined) return;
  const [res] = (await h.ds.sendToNode(nodeId, { header: { rangeId: d.rangeId, replicaId: rep.replicaId, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'leaseInfo' }] })).responses;
  const holder = (res as LeaseInfoResponse).lease?.replica.nodeId;
  if (holder !== nodeId) return;
  const to = d.replicas.find((r) => r.nodeId !== nodeId && r.type === ReplicaType.Voter);
  if (to === undefined) return;
  await h.transferLease(d, nodeId, to.nodeId);
}
