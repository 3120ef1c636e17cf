/**
 * The merge trigger, per store (CockroachDB's mergeTrigger + the RHS replica's
 * destruction), applied with the AdminMerge command of the left range
 * (batcheval/cmd-admin-merge.ts) in the same engine batch as its applied
 * index:
 *
 *   replicated (in the command, identical everywhere): the merged descriptor
 *   at the left's start, the right's descriptor deleted, the right's
 *   replicated range-ID state deleted, its stats added to the left's, meta2
 *   when the left holds it (merge.ts fixes meta2 otherwise);
 *   per store (here): the right range's Raft state and log deleted, its
 *   range tombstone written at MERGED_TOMBSTONE (range-tombstone.ts), the
 *   left replica serving the merged span from this entry on; once durable,
 *   the right replica is stopped and dropped from the Store.
 *
 * The right range's user data and range-local keys stay where they are: they
 * are inside the merged span now. Precondition (checked by the merge driver
 * before proposing, asserted here): this store's right replica applied the
 * Subsume freeze — it can never change again, so what the left absorbs is
 * exactly what every replica of the right held.
 *
 * Ownership: called through split-trigger.ts from the Store's apply loop.
 */
import { assert } from '../util/assert.js';
import type { WriteBatch } from '../../storage/engine.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { raftHardStateKey, raftReplicaIdKey, raftTruncatedStateKey, rangeLeaseKey } from '../../storage/keys.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { decodeLease } from './api-codec.js';
import { raftLogEngineKey } from './raft-storage.js';
import { MERGED_TOMBSTONE, writeRangeTombstone } from './range-tombstone.js';
import type { Replica } from './replica.js';
import type { MergeTrigger } from './split-trigger-codec.js';
import type { Store } from './store.js';

/** The replica id of the lease Subsume installs: nobody. */
export const FROZEN_REPLICA_ID = 0;

export function stageMergeTrigger(store: Store, r: Replica, batch: WriteBatch, t: MergeTrigger): void {
  assert(t.left.rangeId === r.rangeId && compareBytes(r.desc.endKey, t.right.startKey) === 0, `kv: r${r.rangeId} cannot absorb r${t.right.rangeId}`);
  const rhs = store.replica(t.right.rangeId);
  const leaseRaw = store.engine.getSync(encodeMvccKey(rangeLeaseKey(t.right.rangeId)));
  // NB: the command already deleted the right's lease in this batch; read the engine.
  assert(rhs !== undefined && rhs.initialized && leaseRaw !== undefined && decodeLease(leaseRaw).replica.replicaId === FROZEN_REPLICA_ID, `kv: s${store.storeId} merges r${t.right.rangeId} into r${r.rangeId} before its replica froze`);
  r.setDescriptor(t.left);
  const id = t.right.rangeId;
  for (let i = rhs.storage.truncated.index + 1; i <= rhs.storage.lastIndex(); i++) batch.delete(raftLogEngineKey(id, i));
  for (const k of [raftHardStateKey(id), raftTruncatedStateKey(id), raftReplicaIdKey(id)]) batch.delete(encodeMvccKey(k));
  // Stale messages for the right range (peers that have not applied the merge yet) must never re-create it.
  writeRangeTombstone(store.engine, batch, id, MERGED_TOMBSTONE);
  rhs.stop();
}

/**
 * Subsume's freeze: the replica's lease becomes the nobody-lease the command
 * wrote (read back from the apply batch). Not a lease side effect: the
 * proposer's own Subsume must answer with success, and every other command
 * still in flight under the old lease is rejected at apply (ambiguous).
 */
export function stageFreezeTrigger(r: Replica, batch: WriteBatch): void {
  const raw = batch.getSync(encodeMvccKey(rangeLeaseKey(r.rangeId)));
  assert(raw !== undefined, `kv: r${r.rangeId} freeze without a lease`);
  const lease = decodeLease(raw);
  assert(lease.replica.replicaId === FROZEN_REPLICA_ID, `kv: r${r.rangeId} freeze with a live lease`);
  r.lease = lease;
}

export function finishMergeTrigger(store: Store, t: MergeTrigger): void {
  store.removeReplica(t.right.rangeId);
}
