/**
 * Replication changes (CockroachDB's replica_command.go ChangeReplicas,
 * reduced): adding a replica as a learner, catching it up by snapshot,
 * promoting it — through a joint configuration when a voter leaves at the
 * same time — and removing replicas.
 *
 *   addVoter(target):      AddLearners ─► wait: learner initialized (snapshot) ─► ChangeVoters{+target}
 *   replaceVoter(t, old):  AddLearners ─► wait ─► ChangeVoters{+t, −old}: JOINT ─► LeaveJoint
 *                           (in joint: t VoterIncoming, old VoterOutgoing; both quorums needed)
 *   removeVoter(old):      ChangeVoters{−old}        removeLearner: RemoveLearners
 *
 * Each step is ONE Raft command (batcheval/cmd-admin-change-replicas.ts)
 * whose apply installs the new descriptor and applies the Raft configuration
 * change derived from old → new descriptor (stageChangeTrigger below) in the
 * same apply batch as the applied index: a kill at any moment leaves a
 * descriptor and a Raft configuration that agree. A learner left behind by a
 * dead driver, or a joint configuration, is finished by the replicate queue
 * (it leaves joint configs first and removes stray learners). After each step
 * meta2 is fixed up (split.ts fixMeta2) unless the range holds it.
 *
 * A store whose replica a change removes drops it once the change is durable
 * and clears its data (replicated spans and Raft state) in one batch.
 *
 * The new replica's snapshot is Raft's: the leader sends MsgSnap to a learner
 * it cannot catch up from the log; the target store creates an uninitialized
 * replica on the first message and the snapshot initializes it (store.ts).
 *
 * Ownership: the driver functions run wherever the caller is (the replicate
 * queue runs them on the leaseholder's store); I/O through the DistSender.
 */
import { assert } from '../util/assert.js';
import { CairnError } from '../util/errors.js';
import { ZERO_TIMESTAMP } from '../util/hlc.js';
import type { WriteBatch } from '../../storage/engine.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { rangeIdReplicatedSpan, rangeIdUnreplicatedSpan } from '../../storage/keys.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { ConfChangeTransition, ConfChangeType, type ConfChangeSingle, type ConfChangeV2 } from '../../raft/types.js';
import { ChangeReplicasOp, type RangeDescriptor, type RangeDescriptorResponse, type ReplicationTarget } from './api.js';
import type { DistSender } from './dist-sender.js';
import { writeRangeTombstone } from './range-tombstone.js';
import type { Replica } from './replica.js';
import { replicatedEngineSpans } from './replica-consistency.js';
import type { ChangeTrigger } from './split-trigger-codec.js';
import { fixMeta2 } from './split.js';
import type { Store } from './store.js';

const isJoint = (d: RangeDescriptor): boolean => d.replicas.some((r) => r.type === 2 || r.type === 3);

/** The Raft configuration change that turns `old`'s configuration into `next`'s. */
export function confChangeBetween(old: RangeDescriptor, next: RangeDescriptor): ConfChangeV2 {
  const none = new Uint8Array(0);
  if (isJoint(old) && !isJoint(next)) return { transition: ConfChangeTransition.Auto, changes: [], context: none };
  const changes: ConfChangeSingle[] = [];
  for (const r of next.replicas) {
    const o = old.replicas.find((x) => x.replicaId === r.replicaId);
    if (o === undefined) {
      assert(r.type === 1, `kv: r${next.rangeId} replica ${r.replicaId} added as type ${r.type}`);
      changes.push({ type: ConfChangeType.AddLearnerNode, nodeId: r.replicaId });
    } else if (o.type === 1 && (r.type === 0 || r.type === 2)) {
      changes.push({ type: ConfChangeType.AddNode, nodeId: r.replicaId });
    } else if (o.type === 0 && r.type === 3) {
      changes.push({ type: ConfChangeType.RemoveNode, nodeId: r.replicaId });
    }
  }
  for (const o of old.replicas) if (!next.replicas.some((x) => x.replicaId === o.replicaId)) changes.push({ type: ConfChangeType.RemoveNode, nodeId: o.replicaId });
  return { transition: isJoint(next) ? ConfChangeTransition.JointExplicit : ConfChangeTransition.Auto, changes, context: none };
}

/** Applies a change trigger on one replica (from split-trigger.ts, inside the apply batch). */
export function stageChangeTrigger(r: Replica, t: ChangeTrigger): void {
  assert(t.left.rangeId === r.rangeId, `kv: r${r.rangeId} applying a change of r${t.left.rangeId}`);
  r.setDescriptor(t.left);
  r.storage.confState = r.raw.applyConfChange(confChangeBetween(t.right, t.left));
}

/** Once durable: a store whose replica the change removed drops it and clears its data. */
export function finishChangeTrigger(store: Store, r: Replica, t: ChangeTrigger): void {
  if (t.left.replicas.some((x) => x.storeId === store.storeId)) return;
  store.removeReplica(r.rangeId);
  void clearReplicaData(store, t.right).catch((e: unknown) => store.log.error({ rangeId: r.rangeId, err: (e as Error).message }, 'kv: clearing a removed replica failed'));
}

/**
 * Deletes a removed replica's data from the store in one batch: its range-ID
 * state (replicated and Raft), and — when `withData` and no other initialized
 * replica on the store overlaps its span — its range-local keys and user data.
 * Skipped if an initialized replica of the range is back on the store. The
 * batch also writes the range tombstone (range-tombstone.ts): at least
 * `nextReplicaId` (default the descriptor's), so stale Raft messages for the
 * removed replica never re-create it. Until the batch is written no
 * placeholder of the range may appear on the store (Store.beginClear).
 */
export async function clearReplicaData(store: Store, desc: RangeDescriptor, withData = true, nextReplicaId = desc.nextReplicaId): Promise<void> {
  store.beginClear(desc.rangeId);
  try {
    await clearReplicaDataNow(store, desc, withData, nextReplicaId);
  } finally {
    store.endClear(desc.rangeId);
  }
}

async function clearReplicaDataNow(store: Store, desc: RangeDescriptor, withData: boolean, nextReplicaId: number): Promise<void> {
  const b: WriteBatch = store.engine.newBatch();
  const unrep = rangeIdUnreplicatedSpan(desc.rangeId);
  const rid = rangeIdReplicatedSpan(desc.rangeId);
  const spans = [
    { gte: encodeMvccKey(rid.key), lt: encodeMvccKey(rid.endKey) },
    { gte: encodeMvccKey(unrep.key), lt: encodeMvccKey(unrep.endKey) },
  ];
  const overlaps = store
    .allReplicas()
    .some((x) => x.initialized && x.rangeId !== desc.rangeId && compareBytes(x.desc.startKey, desc.endKey) < 0 && compareBytes(desc.startKey, x.desc.endKey) < 0);
  if (withData && !overlaps && desc.endKey.length > 0) spans.push(...replicatedEngineSpans(desc).slice(1));
  for (const span of spans) {
    const it = store.engine.iterator(span);
    try {
      for (;;) {
        const rows = await it.nextBatch(1024);
        if (rows.length === 0) break;
        for (const { key } of rows) b.delete(Buffer.from(key));
      }
    } finally {
      await it.close();
    }
  }
  // Only if the range did not come back to this store meanwhile (an uninitialized placeholder holds no data).
  if (store.replica(desc.rangeId)?.initialized === true) return;
  // After the span deletes (the tombstone lives in the unreplicated span); the old value is read from the engine.
  writeRangeTombstone(store.engine, b, desc.rangeId, nextReplicaId);
  await store.engine.write(b, { sync: false });
}

// ---- the driver --------------------------------------------------------------------------------

export interface ChangeOptions {
  /** How long to wait for a learner's snapshot (default 20 s). */
  readonly learnerWaitMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** One step; returns the new descriptor (meta2 fixed up). */
export async function changeReplicas(ds: DistSender, desc: RangeDescriptor, op: ChangeReplicasOp, adds: readonly ReplicationTarget[], removes: readonly ReplicationTarget[]): Promise<RangeDescriptor> {
  const res = await ds.send({
    header: { rangeId: 0, timestamp: ZERO_TIMESTAMP },
    requests: [{ kind: 'adminChangeReplicas', key: desc.startKey, generation: desc.generation, op, adds, removes }],
  });
  const next = (res.responses[0] as RangeDescriptorResponse).desc;
  ds.cache.insert(next);
  await fixMeta2(ds, next);
  return next;
}

/** Waits until the replica on `target` is initialized (its snapshot applied). */
export async function waitForLearner(ds: DistSender, desc: RangeDescriptor, target: ReplicationTarget, opts: ChangeOptions = {}): Promise<void> {
  const rep = desc.replicas.find((r) => r.storeId === target.storeId);
  assert(rep !== undefined, `kv: r${desc.rangeId} has no replica on s${target.storeId}`);
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = Date.now() + (opts.learnerWaitMs ?? 20_000);
  for (;;) {
    try {
      await ds.sendToNode(target.nodeId, { header: { rangeId: desc.rangeId, replicaId: rep.replicaId, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'leaseInfo' }] });
      return;
    } catch (e) {
      if (!(e instanceof CairnError)) throw e;
    }
    if (Date.now() > deadline) throw new CairnError('kv.learner_timeout', `kv: the learner of r${desc.rangeId} on n${target.nodeId} did not catch up`, { retryable: true });
    await sleep(20);
  }
}

/** Adds a voter on `target` (learner → snapshot → promote); with `replace`, that voter leaves in the same joint step. */
export async function addVoter(ds: DistSender, desc: RangeDescriptor, target: ReplicationTarget, replace: ReplicationTarget | null = null, opts: ChangeOptions = {}): Promise<RangeDescriptor> {
  let d = await changeReplicas(ds, desc, ChangeReplicasOp.AddLearners, [target], []);
  try {
    await waitForLearner(ds, d, target, opts);
  } catch (e) {
    await changeReplicas(ds, d, ChangeReplicasOp.RemoveLearners, [], [target]).catch(() => undefined);
    throw e;
  }
  d = await changeReplicas(ds, d, ChangeReplicasOp.ChangeVoters, [target], replace === null ? [] : [replace]);
  if (isJoint(d)) d = await changeReplicas(ds, d, ChangeReplicasOp.LeaveJoint, [], []);
  return d;
}

export function removeVoter(ds: DistSender, desc: RangeDescriptor, target: ReplicationTarget): Promise<RangeDescriptor> {
  return changeReplicas(ds, desc, ChangeReplicasOp.ChangeVoters, [], [target]);
}

/** Finishes what a dead driver left: leaves a joint config, removes stray learners. */
export async function finishPendingChange(ds: DistSender, desc: RangeDescriptor): Promise<RangeDescriptor> {
  let d = desc;
  if (isJoint(d)) d = await changeReplicas(ds, d, ChangeReplicasOp.LeaveJoint, [], []);
  const learners = d.replicas.filter((r) => r.type === 1).map((r) => ({ nodeId: r.nodeId, storeId: r.storeId }));
  if (learners.length > 0) d = await changeReplicas(ds, d, ChangeReplicasOp.RemoveLearners, [], learners);
  return d;
}
