/**
 * AdminChangeReplicas: one replication step (replica-change.ts drives the
 * sequence learner → snapshot → promote, through a joint configuration when
 * more than one voter changes). Writes the new descriptor (generation + 1;
 * meta2 too when the range holds it) and carries a 'change' trigger whose
 * apply, on every replica in the same batch, installs the descriptor and
 * applies the matching Raft configuration change (replica-change.ts
 * stageChangeTrigger) — the descriptor's replica list and Raft's
 * configuration change at the same log position, atomically.
 *
 * Refused: a descriptor no longer at `generation` (kv.descriptor_changed,
 * retryable), a target already present for AddLearners (kv.replica_exists),
 * anything but learners to promote / voters to remove (kv.invalid_change),
 * removing the leaseholder's replica (kv.cannot_remove_leaseholder: transfer
 * the lease first), a change while joint other than LeaveJoint (kv.in_joint),
 * a range left without voters, and any change while the right neighbour is
 * frozen for a merge into this range other than removing learners
 * (kv.merge_in_progress: the merge
 * absorbs it only while both are on the same stores — Subsume checked that,
 * cmd-subsume.ts — so this range's replicas must not move until the merge
 * is done; read from this store's replica of the neighbour, which a
 * leaseholder of a range colocated with it has).
 * Spans: the range descriptor key, write.
 */
import { CairnError } from '../../util/errors.js';
import { compareBytes } from '../../../storage/encoding/bytes.js';
import { MAX_TIMESTAMP } from '../../util/hlc.js';
import type { ReadWriter } from '../../../storage/engine.js';
import { encodeMvccKey } from '../../../storage/mvcc-key.js';
import { KEY_MAX, meta2Key, rangeDescriptorKey, rangeLeaseKey } from '../../../storage/keys.js';
import { mvccGet, mvccPut } from '../../../storage/mvcc.js';
import { decodeLease, decodeRangeDescriptor, encodeRangeDescriptor } from '../api-codec.js';
import { FROZEN_REPLICA_ID } from '../merge-trigger.js';
import { ChangeReplicasOp, type AdminChangeReplicasRequest, type RangeDescriptor, type ReplicaDescriptor, type ReplicaType } from '../api.js';
import { encodeRangeTrigger } from '../split-trigger-codec.js';
import { holdsMeta2 } from './cmd-admin-split.js';
import { registerCommand } from './command.js';

const invalid = (d: RangeDescriptor, why: string): CairnError => new CairnError('kv.invalid_change', `kv: r${d.rangeId}: ${why}`);

/** The descriptor after one step (pure; exported for tests). */
export function changedDescriptor(d: RangeDescriptor, req: AdminChangeReplicasRequest, leaseStoreId: number | null): RangeDescriptor {
  if (req.generation !== d.generation) throw new CairnError('kv.descriptor_changed', `kv: r${d.rangeId} is at generation ${d.generation}, not ${req.generation}`, { retryable: true });
  const joint = d.replicas.some((r) => r.type === 2 || r.type === 3);
  if (joint && req.op !== ChangeReplicasOp.LeaveJoint) throw new CairnError('kv.in_joint', `kv: r${d.rangeId} is in a joint configuration`, { retryable: true });
  let reps: ReplicaDescriptor[] = [...d.replicas];
  let next = d.nextReplicaId;
  const find = (storeId: number, type: ReplicaType): ReplicaDescriptor => {
    const r = reps.find((x) => x.storeId === storeId);
    if (r === undefined || r.type !== type) throw invalid(d, `s${storeId} holds no ${type === 1 ? 'learner' : 'voter'}`);
    return r;
  };
  const retype = (r: ReplicaDescriptor, type: ReplicaType | null): void => {
    reps = type === null ? reps.filter((x) => x !== r) : reps.map((x) => (x === r ? { ...x, type } : x));
  };
  switch (req.op) {
    case ChangeReplicasOp.AddLearners:
      for (const t of req.adds) {
        if (reps.some((x) => x.storeId === t.storeId || x.nodeId === t.nodeId)) throw new CairnError('kv.replica_exists', `kv: r${d.rangeId} already has a replica on n${t.nodeId}`);
        reps.push({ nodeId: t.nodeId, storeId: t.storeId, replicaId: next++, type: 1 });
      }
      break;
    case ChangeReplicasOp.ChangeVoters: {
      const viaJoint = req.adds.length + req.removes.length > 1;
      for (const t of req.adds) retype(find(t.storeId, 1), viaJoint ? 2 : 0);
      for (const t of req.removes) {
        if (t.storeId === leaseStoreId) throw new CairnError('kv.cannot_remove_leaseholder', `kv: r${d.rangeId}: transfer the lease off s${t.storeId} first`, { retryable: true });
        retype(find(t.storeId, 0), viaJoint ? 3 : null);
      }
      break;
    }
    case ChangeReplicasOp.LeaveJoint:
      if (!joint) throw invalid(d, 'not in a joint configuration');
      for (const r of [...reps]) if (r.type === 2) retype(r, 0);
      for (const r of [...reps]) if (r.type === 3) retype(r, null);
      break;
    case ChangeReplicasOp.RemoveLearners:
      for (const t of req.removes) retype(find(t.storeId, 1), null);
      break;
  }
  if (!reps.some((r) => r.type === 0 || r.type === 2)) throw invalid(d, 'no voters would be left');
  return { ...d, replicas: reps, nextReplicaId: next, generation: d.generation + 1 };
}

/** The id of d's right neighbour if this store's replica of it is frozen by Subsume (cmd-subsume.ts), else null. */
async function frozenRightNeighbour(rw: ReadWriter, d: RangeDescriptor): Promise<number | null> {
  if (compareBytes(d.endKey, KEY_MAX) >= 0) return null;
  const raw = (await mvccGet(rw, rangeDescriptorKey(d.endKey), MAX_TIMESTAMP, { inconsistent: true })).value?.value;
  if (raw == null) return null;
  const right = decodeRangeDescriptor(raw);
  const lease = rw.getSync(encodeMvccKey(rangeLeaseKey(right.rangeId)));
  return lease !== undefined && decodeLease(lease).replica.replicaId === FROZEN_REPLICA_ID ? right.rangeId : null;
}

registerCommand<AdminChangeReplicasRequest>({
  kind: 'adminChangeReplicas',
  isWrite: true,
  declareKeys(_h, _req, desc, out) {
    out.push({ key: rangeDescriptorKey(desc.startKey), endKey: null, write: true });
  },
  async evaluate(ctx, rw, h, req) {
    const d = ctx.desc;
    if (compareBytes(req.key, d.startKey) !== 0) throw new CairnError('kv.descriptor_changed', `kv: r${d.rangeId} does not start at ${req.key.toString('hex')}`, { retryable: true });
    // Removing learners only brings the range closer to its frozen neighbour (all voters): allowed.
    const frozen = req.op === ChangeReplicasOp.RemoveLearners ? null : await frozenRightNeighbour(rw, d);
    if (frozen !== null) throw new CairnError('kv.merge_in_progress', `kv: r${d.rangeId}: its right neighbour r${frozen} is frozen for a merge into it`);
    const next = changedDescriptor(d, req, ctx.lease?.replica.storeId ?? null);
    const enc = encodeRangeDescriptor(next);
    mvccPut(rw, rangeDescriptorKey(d.startKey), h.timestamp, enc, { stats: ctx.stats });
    if (holdsMeta2(d)) mvccPut(rw, meta2Key(d.endKey), h.timestamp, enc, { stats: ctx.stats });
    ctx.sideEffects.trigger = encodeRangeTrigger({ kind: 'change', left: next, right: d });
    return { kind: 'adminChangeReplicas', desc: next };
  },
});
