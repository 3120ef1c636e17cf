/**
 * Descriptor-changing triggers (merges: merge-trigger.ts, dispatched from
 * here): the replicated side effect a split carries
 * (CockroachDB's splitTrigger), applied on every replica of the range in the
 * same engine batch as the command and its applied index — so a split is
 * atomic on each store's disk: before the batch the store holds the old
 * range, after it both halves, never anything in between.
 *
 * What one split command writes (evaluated on the leaseholder,
 * batcheval/cmd-admin-split.ts, into the proposal's batch — identical on every
 * replica):
 *   - the left descriptor (generation + 1) at rangeDescriptorKey(start);
 *   - the right descriptor [splitKey, end) at rangeDescriptorKey(splitKey);
 *   - the right range's replicated range-ID state: applied state (index 10,
 *     term 5 — as bootstrap — with its recounted MVCC stats) and a copy of the
 *     left's lease (the same holder serves both halves at once) and of its GC
 *     threshold (batcheval/cmd-gc.ts), if it has one;
 *   - when the range holds meta2 (r1): the two meta2 records, in the same
 *     batch (meta2 never leaves r1: split keys below META2_MAX are refused).
 *     Other ranges' meta2 records are fixed up afterwards by split.ts
 *     (fixMeta2), which is idempotent and run again by the split queue, so a
 *     kill between the split and the meta2 write recovers deterministically;
 *     meanwhile routers see RangeKeyMismatch and retry.
 *   - the left's stats delta: minus everything that moved right.
 *
 *  Per store, in the same apply batch (stageRangeTrigger):
 *   - the right range's Raft state (truncated at 10/5; hard state keeping any
 *     term/vote an uninitialized placeholder replica already persisted);
 *   - if this store already holds an *initialized* right-hand replica (it
 *     received a snapshot of the new range before applying the split), the
 *     right range's keys the command wrote are put back as they are — that
 *     replica is ahead.
 *  An uninitialized placeholder of the right range is dropped at stage time
 *  and none is created until the right replica is installed (Store
 *  beginInstall/installReplica): a placeholder loaded from the state staged
 *  here would acknowledge entries the installed replica never saw.
 *  Once the batch is durable (finishRangeTrigger): the left replica serves
 *  the new descriptor (it already did from stage time), the Store installs the
 *  right-hand Replica; the store holding the lease campaigns for the right
 *  range's leadership so that the copied lease can serve writes at once.
 *
 * Trigger encoding: split-trigger-codec.ts.
 *
 * Ownership: called by the Store from its apply loop (StoreContext
 * stageTrigger/finishTrigger). Deterministic given the engine state.
 */
import { assert } from '../util/assert.js';
import { decodeBatchRepr, type WriteBatch } from '../../storage/engine.js';
import { encodeMvccKey } from '../../storage/mvcc-key.js';
import { compareBytes, hasPrefix } from '../../storage/encoding/bytes.js';
import { raftHardStateKey, raftTruncatedStateKey, rangeDescriptorKey, rangeIdReplicatedPrefix } from '../../storage/keys.js';
import type { RangeDescriptor } from './api.js';
import { decodeHardState, encodeHardState, encodeTruncatedState } from './api-codec.js';
import { RAFT_INITIAL_LOG_INDEX, RAFT_INITIAL_LOG_TERM } from './bootstrap.js';
import { Replica } from './replica.js';
import type { Store } from './store.js';
import { decodeRangeTrigger } from './split-trigger-codec.js';
import { finishMergeTrigger, stageFreezeTrigger, stageMergeTrigger } from './merge-trigger.js';
import { finishChangeTrigger, stageChangeTrigger } from './replica-change.js';

/** Engine-key prefixes of the right-hand range's state that a split command writes. */
function rightHandKeys(right: RangeDescriptor): Buffer[] {
  const rid = rangeIdReplicatedPrefix(right.rangeId);
  const desc = rangeDescriptorKey(right.startKey);
  return [encodeMvccKey(rid).subarray(0, rid.length), encodeMvccKey(desc).subarray(0, desc.length)];
}

export function stageRangeTrigger(store: Store, r: Replica, batch: WriteBatch, trigger: Buffer, repr: Buffer): void {
  const t = decodeRangeTrigger(trigger);
  if (t.kind === 'merge') return stageMergeTrigger(store, r, batch, t);
  if (t.kind === 'freeze') return stageFreezeTrigger(r, batch);
  if (t.kind === 'change') return stageChangeTrigger(r, t);
  assert(t.left.rangeId === r.rangeId, `kv: r${r.rangeId} applying a split of r${t.left.rangeId}`);
  assert(compareBytes(t.left.endKey, t.right.startKey) === 0, 'kv: split halves not adjacent');
  r.setDescriptor(t.left);
  const existing = store.replica(t.right.rangeId);
  if (existing?.initialized === true) {
    // The right-hand replica got ahead by snapshot: keep its state.
    const prefixes = rightHandKeys(t.right);
    for (const op of decodeBatchRepr(repr)) {
      if (!prefixes.some((p) => hasPrefix(op.key, p))) continue;
      const cur = store.engine.getSync(op.key);
      if (cur === undefined) batch.delete(op.key);
      else batch.put(op.key, cur);
    }
    return;
  }
  const hsRaw = store.engine.getSync(encodeMvccKey(raftHardStateKey(t.right.rangeId)));
  const prior = existing?.storage.hardState ?? (hsRaw === undefined ? null : decodeHardState(hsRaw));
  const hs = {
    term: Math.max(prior?.term ?? 0, RAFT_INITIAL_LOG_TERM),
    vote: prior !== null && prior.term >= RAFT_INITIAL_LOG_TERM ? prior.vote : 0,
    commit: Math.max(prior?.commit ?? 0, RAFT_INITIAL_LOG_INDEX),
  };
  batch.put(encodeMvccKey(raftTruncatedStateKey(t.right.rangeId)), encodeTruncatedState({ index: RAFT_INITIAL_LOG_INDEX, term: RAFT_INITIAL_LOG_TERM }));
  batch.put(encodeMvccKey(raftHardStateKey(t.right.rangeId)), encodeHardState(hs));
  // From here until finishRangeTrigger installs the replica, no placeholder
  // of the right range may exist on this store (Store.beginInstall).
  store.beginInstall(t.right.rangeId);
}

export function finishRangeTrigger(store: Store, r: Replica, trigger: Buffer): void {
  const t = decodeRangeTrigger(trigger);
  if (t.kind === 'merge') return finishMergeTrigger(store, t);
  if (t.kind === 'freeze') return;
  if (t.kind === 'change') return finishChangeTrigger(store, r, t);
  const campaign = r.lease !== null && r.lease.replica.replicaId === r.replicaId;
  if (store.replica(t.right.rangeId)?.initialized === true) return; // ahead by snapshot (see stage)
  void store
    .installReplica(t.right)
    .then((rhs) => {
      if (campaign && !rhs.stopped) {
        rhs.raw.campaign();
        store.enqueueReady(rhs);
      }
    })
    .catch((e: unknown) => store.log.error({ err: (e as Error).message, rangeId: t.right.rangeId }, 'kv: creating the right-hand replica of a split failed'));
}
