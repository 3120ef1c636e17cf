/**
 * Bootstrapping and range addressing records (CockroachDB's
 * kvserver/store_init.go and the meta2 half of kv/kvclient/rangecache).
 *
 * bootstrapCluster(engine, …) writes, on one store's engine, everything a
 * brand-new cluster needs: the store ident, the cluster id, the id
 * generators, and the first range r1 = [KEY_MIN, KEY_MAX) with its
 * descriptor, meta2 record, applied state and initial Raft state. The
 * in-process test cluster calls it on every initial node's engine with the
 * same replica set and timestamp, so all initial replicas start
 * byte-identical (their checksums agree). A node that joins later gets only
 * writeStoreIdent and receives its replicas by snapshot.
 *
 * Initial Raft state (as CockroachDB's raftInitialLogIndex/Term): the log is
 * "truncated" at index 10, term 5, the applied index is 10, so every replica
 * starts with the same committed prefix and a snapshot is never needed for
 * the initial members.
 *
 * Range addressing: a range's descriptor lives at rangeDescriptorKey(start)
 * (range-local, moves with the range) and is indexed at meta2Key(end) in the
 * first range. Both are MVCC values written by writeRangeDescriptor — the one
 * helper splits/merges/replica changes reuse, inside their transaction.
 *
 * Ownership: src/kv. Logic with injected time (the `now` argument).
 */
import { assert } from '../util/assert.js';
import { MAX_TIMESTAMP, type Timestamp } from '../util/hlc.js';
import type { Engine, ReadWriter, Reader } from '../../storage/engine.js';
import {
  CLUSTER_ID_KEY,
  KEY_MAX,
  KEY_MIN,
  LOCAL_RANGE_PREFIX,
  NODE_ID_GENERATOR_KEY,
  RANGE_ID_GENERATOR_KEY,
  STORE_ID_GENERATOR_KEY,
  STORE_IDENT_KEY,
  decodeRangeLocalKey,
  meta2Key,
  rangeAppliedStateKey,
  rangeDescriptorKey,
} from '../../storage/keys.js';
import { prefixEnd } from '../../storage/encoding/bytes.js';
import { encodeMvccKey, mvccKeyPrefixLen, mvccUserKey } from '../../storage/mvcc-key.js';
import { emptyStats, mvccGet, mvccPut, type Txn } from '../../storage/mvcc.js';
import type { MvccStats } from '../../storage/mvcc-stats.js';
import { decodeRangeDescriptor, decodeStoreIdent, encodeAppliedState, encodeRangeDescriptor, encodeStoreIdent } from './api-codec.js';
import type { RangeDescriptor, ReplicaDescriptor, StoreIdent } from './api.js';
import { writeInitialRaftState } from './raft-storage.js';

export const RAFT_INITIAL_LOG_INDEX = 10;
export const RAFT_INITIAL_LOG_TERM = 5;
export const FIRST_RANGE_ID = 1;

/**
 * Writes a range descriptor and its meta2 addressing record at `ts` (as
 * intents of `txn` when given): the one place both are written.
 */
export function writeRangeDescriptor(rw: ReadWriter, desc: RangeDescriptor, ts: Timestamp, opts: { txn?: Txn; stats?: MvccStats } = {}): void {
  const value = encodeRangeDescriptor(desc);
  mvccPut(rw, rangeDescriptorKey(desc.startKey), ts, value, opts);
  mvccPut(rw, meta2Key(desc.endKey), ts, value, opts);
}

function uvarintValue(n: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  b.writeUInt32BE(Math.floor(n / 2 ** 32), 0);
  b.writeUInt32BE(n >>> 0, 4);
  return b;
}

export interface BootstrapOptions {
  readonly clusterId: string;
  readonly ident: StoreIdent;
  /** The initial members of r1 (replica ids 1…n). */
  readonly replicas: readonly ReplicaDescriptor[];
  /** The bootstrap timestamp: identical on every initial node. */
  readonly now: Timestamp;
}

/** Writes a new cluster's initial state onto an empty engine (see the header). */
export async function bootstrapCluster(engine: Engine, opts: BootstrapOptions): Promise<RangeDescriptor> {
  assert(engine.getSync(STORE_IDENT_KEY) === undefined, 'kv: bootstrapCluster on an engine that already holds a store');
  const desc: RangeDescriptor = {
    rangeId: FIRST_RANGE_ID,
    startKey: KEY_MIN,
    endKey: KEY_MAX,
    replicas: opts.replicas,
    nextReplicaId: Math.max(0, ...opts.replicas.map((r) => r.replicaId)) + 1,
    generation: 0,
  };
  const b = engine.newBatch();
  const stats = emptyStats();
  const ts = opts.now;
  mvccPut(b, CLUSTER_ID_KEY, ts, Buffer.from(opts.clusterId, 'utf8'), { stats });
  mvccPut(b, NODE_ID_GENERATOR_KEY, ts, uvarintValue(Math.max(...opts.replicas.map((r) => r.nodeId))), { stats });
  mvccPut(b, STORE_ID_GENERATOR_KEY, ts, uvarintValue(Math.max(...opts.replicas.map((r) => r.storeId))), { stats });
  mvccPut(b, RANGE_ID_GENERATOR_KEY, ts, uvarintValue(FIRST_RANGE_ID), { stats });
  writeRangeDescriptor(b, desc, ts, { stats });
  b.put(
    encodeMvccKey(rangeAppliedStateKey(desc.rangeId)),
    encodeAppliedState({ raftAppliedIndex: RAFT_INITIAL_LOG_INDEX, raftAppliedTerm: RAFT_INITIAL_LOG_TERM, leaseAppliedIndex: 0, stats }),
  );
  b.put(STORE_IDENT_KEY, encodeStoreIdent(opts.ident));
  await engine.write(b, { sync: true });
  await writeInitialRaftState(engine, desc.rangeId, RAFT_INITIAL_LOG_INDEX, RAFT_INITIAL_LOG_TERM);
  return desc;
}

/** Records a store's identity on an empty engine (a node joining an existing cluster). */
export async function writeStoreIdent(engine: Engine, ident: StoreIdent): Promise<void> {
  assert(engine.getSync(STORE_IDENT_KEY) === undefined, 'kv: the engine already holds a store');
  await engine.put(STORE_IDENT_KEY, encodeStoreIdent(ident), { sync: true });
}

export function readStoreIdent(engine: Reader): StoreIdent | null {
  const raw = engine.getSync(STORE_IDENT_KEY);
  return raw === undefined ? null : decodeStoreIdent(raw);
}

/** Every range descriptor stored on this engine (the replicas a store starts with), in key order. */
export async function loadRangeDescriptors(engine: Reader): Promise<RangeDescriptor[]> {
  const out: RangeDescriptor[] = [];
  const it = engine.iterator({ gte: encodeMvccKey(LOCAL_RANGE_PREFIX), lt: encodeMvccKey(prefixEnd(LOCAL_RANGE_PREFIX)) });
  const keys: Buffer[] = [];
  try {
    for (;;) {
      const rows = await it.nextBatch(1024);
      if (rows.length === 0) break;
      for (const { key } of rows) {
        const plen = mvccKeyPrefixLen(key);
        if (plen !== key.length) continue;
        const userKey = Buffer.from(mvccUserKey(key, plen));
        if (decodeRangeLocalKey(userKey).suffix === 'rdsc') keys.push(userKey);
      }
    }
  } finally {
    await it.close();
  }
  for (const k of keys) {
    const res = await mvccGet(engine, k, MAX_TIMESTAMP, { inconsistent: true });
    if (res.value?.value != null) out.push(decodeRangeDescriptor(res.value.value));
  }
  return out;
}
