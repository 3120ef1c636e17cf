/**
 * The keyspace: the one file where every key prefix is defined (DESIGN.md §3,
 * "Keys"), the constructors and decoders of every system and local key, and
 * the pretty-printer used wherever keys are shown (tests, logs, `cairn debug
 * keys`). Modelled on CockroachDB's `keys` package; our own byte choices.
 *
 * Layout, in sort order (these are user keys; MVCC adds its suffix on top,
 * see mvcc-key.ts):
 *
 *     (empty)                                       /Min = KEY_MIN
 *     01 …                                          /Local — never routed by its bytes
 *       01 69 <rangeId:int> 72 <suffix:4> [detail]  /Local/RangeID/<id>/r/…  replicated range-ID-local
 *       01 69 <rangeId:int> 75 <suffix:4> [detail]  /Local/RangeID/<id>/u/…  unreplicated range-ID-local
 *       01 6b <key:bytes> <suffix:4> [detail]       /Local/Range/<key>/…     range-local, addressed by <key>
 *       01 73 <suffix:4>                            /Local/Store/…           store-local
 *     02                                            /Meta1 — reserved, unused (below)
 *     03 <endKey>                                   /Meta2/<endKey>: range descriptor by end key
 *     04 <name> [detail]                            /System/…
 *     <tableId:int> <indexId:int> <columns…>        /Table/<tableId>/<indexId>/…  (first byte ≥ 0x88)
 *     ff ff                                         /Max = KEY_MAX
 *
 *   <…:int>   the ascending tuple int (storage/encoding/tuple.ts): self-delimiting
 *             and ordered, so ids sort numerically and no id's prefix is a
 *             prefix of another id's.
 *   <…:bytes> the ascending tuple bytes value (escaped + terminated), so the
 *             suffix after an embedded key is found and range-local keys sort
 *             in the order of the keys they are addressed by.
 *
 * Range-ID-local suffixes (4 ASCII bytes):
 *     replicated   "abc-" txnId:16   AbortSpan          "lgc-"  RangeGCThreshold
 *                  "rask"            RangeAppliedState  "rll-"  RangeLease
 *     unreplicated "rfth"            RaftHardState      "rftl" index:u64be  RaftLog
 *                  "rftt"            RaftTruncatedState "rftr"  RaftReplicaID
 *                  "rftb"            RangeTombstone
 *   e.g. raftLogKey(5, 123) = 01 69 | 8d | 75 | 72 66 74 6c | 00 00 00 00 00 00 00 7b
 *                             local range-ID, id 5, 'u', "rftl", index 123
 *   RangeGCThreshold (design note, session 7 — MVCC GC): the value is one HLC
 *   timestamp, wall:uvarint logical:uvarint (src/kv/api-codec.ts
 *   encodeTimestamp), written unversioned at the metadata key by the GCRequest
 *   that raises it (src/kv/batcheval/cmd-gc.ts) and by a merge taking the
 *   higher of two; copied to the right half by a split. Absent = zero: nothing
 *   collected. Reads and writes at or below it are refused (the versions they
 *   need may be gone). Being replicated range-ID-local, it travels in
 *   snapshots and is covered by the replica consistency checksum.
 * Range-local suffixes: "rdsc" RangeDescriptor, "txn-" txnId:16 Transaction.
 * Store-local: "iden" StoreIdent.
 * System names (ASCII, none a prefix of another): bootstrap-version,
 *   cluster-id, desc-fence/<token:string>, desc-lease/<nodeId:int>,
 *   descriptor/<id:int>, gen/descriptor-id, gen/node-id,
 *   gen/range-id, gen/store-id, liveness/<nodeId:int>,
 *   namespace/<parentId:int><name:string>, settings/<name:string>.
 *
 * Invariants:
 *   - local keys (01…) sort before every global key; system keys (04…)
 *     before table data (≥ 0x88); every user key is below KEY_MAX.
 *   - all replicated range-ID-local data of one range is the contiguous span
 *     rangeIdReplicatedSpan(id) = [01 69 <id> 72, 01 69 <id> 73), and its
 *     unreplicated data (Raft log and state) the span right after it, so a
 *     snapshot or a replica removal clears a range with a few range
 *     deletions (replicatedSpans lists them).
 *   - the Raft log of a range is ordered by index (fixed 8-byte big-endian).
 *   - the range-local keys of all keys in [start, end) lie in
 *     rangeLocalSpan(start, end).
 *
 * Addressing: only meta2 is implemented. Every range's descriptor is indexed
 * at meta2Key(endKey); the meta2 span [03, 04) lives in the first range and
 * must never be split (isValidSplitKey refuses it), so a lookup needs no
 * meta1 level. The cost: the number of ranges is bounded by what one range
 * can index — ample for this system's scale. Meta1 (02) stays reserved.
 *
 * Decoders raise CorruptionError (naming the key in hex) on keys of the wrong
 * kind or with malformed bytes; the pretty-printer never throws: an unknown
 * prefix or an undecodable tail prints as `?0x<hex>`.
 *
 * Ownership: constructors return fresh keys (views into a private slab that
 * is never rewritten); decoders may return views into their input. The
 * exported constant keys are shared Buffers: never mutate them.
 */
import { CairnError, CorruptionError } from '../src/util/errors.js';
import { assert } from '../src/util/assert.js';
import { formatTimestamp } from '../src/util/hlc.js';
import { decodeMvccKey } from './mvcc-key.js';
import { bytesEqual, compareBytes, corruptKey, hasPrefix, keyNext, prefixEnd } from './encoding/bytes.js';
import { KeyReader, KeyWriter, TAG_INT_MAX, TAG_INT_MIN, decodeValue } from './encoding/tuple.js';
import type { DecodedValue, Direction, KeyDatum } from './encoding/tuple.js';

/** A half-open key span [key, endKey), as in CockroachDB's roachpb.Span. */
export interface Span {
  readonly key: Buffer;
  readonly endKey: Buffer;
}

const ascii = (s: string): Buffer => Buffer.from(s, 'latin1');

// ---- Bounds and top-level prefixes ------------------------------------------

export const KEY_MIN: Buffer = Buffer.alloc(0);
export const KEY_MAX: Buffer = Buffer.from([0xff, 0xff]);

export const LOCAL_PREFIX: Buffer = Buffer.from([0x01]);
/** The first key above every local key: the first global (addressable) key. */
export const LOCAL_MAX: Buffer = Buffer.from([0x02]);
export const META1_PREFIX: Buffer = Buffer.from([0x02]);
export const META2_PREFIX: Buffer = Buffer.from([0x03]);
export const META2_MAX: Buffer = Buffer.from([0x04]);
export const SYSTEM_PREFIX: Buffer = Buffer.from([0x04]);
export const SYSTEM_MAX: Buffer = Buffer.from([0x05]);
/** The first key of table data: the prefix of table 0. */
export const TABLE_DATA_MIN: Buffer = Buffer.from([TAG_INT_MIN + 8]);
export const TABLE_DATA_MAX: Buffer = KEY_MAX;

export const META2_SPAN: Span = { key: META2_PREFIX, endKey: META2_MAX };
export const SYSTEM_SPAN: Span = { key: SYSTEM_PREFIX, endKey: SYSTEM_MAX };
export const TABLE_DATA_SPAN: Span = { key: TABLE_DATA_MIN, endKey: TABLE_DATA_MAX };

const LOCAL_RANGE_ID_INFIX = 0x69; // 'i'
const LOCAL_RANGE_INFIX = 0x6b; // 'k'
const LOCAL_STORE_INFIX = 0x73; // 's'
const REPLICATED_INFIX = 0x72; // 'r'
const UNREPLICATED_INFIX = 0x75; // 'u'

export const LOCAL_RANGE_ID_PREFIX: Buffer = Buffer.from([0x01, LOCAL_RANGE_ID_INFIX]);
export const LOCAL_RANGE_PREFIX: Buffer = Buffer.from([0x01, LOCAL_RANGE_INFIX]);
export const LOCAL_STORE_PREFIX: Buffer = Buffer.from([0x01, LOCAL_STORE_INFIX]);

// Range-ID-local suffixes.
const SUFFIX_ABORT_SPAN = ascii('abc-');
const SUFFIX_GC_THRESHOLD = ascii('lgc-');
const SUFFIX_APPLIED_STATE = ascii('rask');
const SUFFIX_LEASE = ascii('rll-');
const SUFFIX_RAFT_HARD_STATE = ascii('rfth');
const SUFFIX_RAFT_LOG = ascii('rftl');
const SUFFIX_RAFT_TRUNCATED_STATE = ascii('rftt');
const SUFFIX_RAFT_REPLICA_ID = ascii('rftr');
const SUFFIX_RANGE_TOMBSTONE = ascii('rftb');
// Range-local suffixes.
const SUFFIX_RANGE_DESCRIPTOR = ascii('rdsc');
const SUFFIX_TRANSACTION = ascii('txn-');
// Store-local suffixes.
const SUFFIX_STORE_IDENT = ascii('iden');

export const TXN_ID_LENGTH = 16;

// One writer and one reader serve every constructor and decoder here (none re-enters another mid-use).
const w = new KeyWriter();
const reader = new KeyReader(KEY_MIN);

// ---- Range-ID-local keys ------------------------------------------------------

function checkId(what: string, id: number): void {
  if (!(Number.isSafeInteger(id) && id >= 0)) assert(false, `keys: ${what} ${id} is not a non-negative safe integer`);
}

function rangeIdPrefixInto(rangeId: number, infix?: number): KeyWriter {
  checkId('range id', rangeId);
  w.reset().appendRaw(LOCAL_RANGE_ID_PREFIX).appendInt(rangeId);
  if (infix !== undefined) w.appendByte(infix);
  return w;
}

/** /Local/RangeID/<id>: the prefix of all range-ID-local keys of a range. */
export function rangeIdPrefix(rangeId: number): Buffer {
  return rangeIdPrefixInto(rangeId).finish();
}

/** /Local/RangeID/<id>/r: replicated range-ID-local data (applied state, lease, GC threshold, abort span). */
export function rangeIdReplicatedPrefix(rangeId: number): Buffer {
  return rangeIdPrefixInto(rangeId, REPLICATED_INFIX).finish();
}

/** /Local/RangeID/<id>/u: unreplicated range-ID-local data (Raft log, hard state, truncated state). */
export function rangeIdUnreplicatedPrefix(rangeId: number): Buffer {
  return rangeIdPrefixInto(rangeId, UNREPLICATED_INFIX).finish();
}

function spanOfPrefix(prefix: Buffer): Span {
  return { key: prefix, endKey: prefixEnd(prefix) };
}

/** All of a range's replicated range-ID-local data: one contiguous span. */
export function rangeIdReplicatedSpan(rangeId: number): Span {
  return spanOfPrefix(rangeIdReplicatedPrefix(rangeId));
}

/** All of a range's unreplicated range-ID-local data (its Raft log and Raft state). */
export function rangeIdUnreplicatedSpan(rangeId: number): Span {
  return spanOfPrefix(rangeIdUnreplicatedPrefix(rangeId));
}

/** Everything range-ID-local of a range, replicated and not. */
export function rangeIdSpan(rangeId: number): Span {
  return spanOfPrefix(rangeIdPrefix(rangeId));
}

function rangeIdKey(rangeId: number, infix: number, suffix: Buffer): Buffer {
  return rangeIdPrefixInto(rangeId, infix).appendRaw(suffix).finish();
}

export function rangeAppliedStateKey(rangeId: number): Buffer {
  return rangeIdKey(rangeId, REPLICATED_INFIX, SUFFIX_APPLIED_STATE);
}

export function rangeLeaseKey(rangeId: number): Buffer {
  return rangeIdKey(rangeId, REPLICATED_INFIX, SUFFIX_LEASE);
}

export function rangeGCThresholdKey(rangeId: number): Buffer {
  return rangeIdKey(rangeId, REPLICATED_INFIX, SUFFIX_GC_THRESHOLD);
}

function checkTxnId(txnId: Uint8Array): void {
  if (txnId.length !== TXN_ID_LENGTH) assert(false, `keys: a transaction id is ${TXN_ID_LENGTH} bytes, got ${txnId.length}`);
}

/** The abort span entry of a transaction in a range. */
export function abortSpanKey(rangeId: number, txnId: Uint8Array): Buffer {
  checkTxnId(txnId);
  return rangeIdPrefixInto(rangeId, REPLICATED_INFIX).appendRaw(SUFFIX_ABORT_SPAN).appendRaw(txnId).finish();
}

export function raftHardStateKey(rangeId: number): Buffer {
  return rangeIdKey(rangeId, UNREPLICATED_INFIX, SUFFIX_RAFT_HARD_STATE);
}

export function raftTruncatedStateKey(rangeId: number): Buffer {
  return rangeIdKey(rangeId, UNREPLICATED_INFIX, SUFFIX_RAFT_TRUNCATED_STATE);
}

/** This store's replica id in the range (etcd/raft's node id for the group). */
export function raftReplicaIdKey(rangeId: number): Buffer {
  return rangeIdKey(rangeId, UNREPLICATED_INFIX, SUFFIX_RAFT_REPLICA_ID);
}

/**
 * Left behind when a replica is removed from this store: the next replica id
 * it may be recreated with, so a stale message cannot resurrect the old one.
 * Written after the range's other range-ID-local data is cleared.
 */
export function rangeTombstoneKey(rangeId: number): Buffer {
  return rangeIdKey(rangeId, UNREPLICATED_INFIX, SUFFIX_RANGE_TOMBSTONE);
}

/** The prefix of a range's Raft log entries: [raftLogPrefix, prefixEnd(raftLogPrefix)) is the whole log. */
export function raftLogPrefix(rangeId: number): Buffer {
  return rangeIdKey(rangeId, UNREPLICATED_INFIX, SUFFIX_RAFT_LOG);
}

/** The Raft log entry of a range at `index`; keys sort by index. */
export function raftLogKey(rangeId: number, index: number): Buffer {
  return rangeIdPrefixInto(rangeId, UNREPLICATED_INFIX).appendRaw(SUFFIX_RAFT_LOG).appendUint64(index).finish();
}

/** The Raft log entries of a range with index in [lo, hi). */
export function raftLogSpan(rangeId: number, lo: number, hi: number): Span {
  return { key: raftLogKey(rangeId, lo), endKey: raftLogKey(rangeId, hi) };
}

/**
 * Reads an id (range, node, table, index): an ascending tuple int that is a
 * non-negative safe integer, the only form the constructors write; anything
 * else is corruption.
 */
function readId(r: KeyReader, what: string): number {
  const at = r.pos;
  const first = r.buf[at];
  if (first === undefined || first < TAG_INT_MIN || first > TAG_INT_MAX) throw corruptKey(r.buf, at, `bad ${what}`);
  const id = r.readInt();
  if (typeof id !== 'number' || id < 0) throw corruptKey(r.buf, at, `bad ${what}`);
  return id;
}

/** The parts of a range-ID-local key. */
export interface RangeIdLocalKey {
  readonly rangeId: number;
  readonly replicated: boolean;
  /** The 4-byte suffix, as ASCII ("rftl"). */
  readonly suffix: string;
  /** The bytes after the suffix (a log index, a txn id), a view into the key. */
  readonly detail: Buffer;
}

/** Splits a range-ID-local key; CorruptionError when it is not one. */
export function decodeRangeIdLocalKey(key: Buffer): RangeIdLocalKey {
  if (!hasPrefix(key, LOCAL_RANGE_ID_PREFIX)) throw corruptKey(key, 0, 'not a range-ID-local key');
  const r = reader.reset(key, LOCAL_RANGE_ID_PREFIX.length);
  const rangeId = readId(r, 'range id');
  const infix = key[r.pos];
  if (infix !== REPLICATED_INFIX && infix !== UNREPLICATED_INFIX) throw corruptKey(key, r.pos, 'bad range-ID-local infix');
  if (r.pos + 5 > key.length) throw corruptKey(key, r.pos, 'truncated range-ID-local suffix');
  return {
    rangeId,
    replicated: infix === REPLICATED_INFIX,
    suffix: key.toString('latin1', r.pos + 1, r.pos + 5),
    detail: key.subarray(r.pos + 5),
  };
}

/** The range id and index of a Raft log key; CorruptionError when it is not one. */
export function decodeRaftLogKey(key: Buffer): { rangeId: number; index: number } {
  const k = decodeRangeIdLocalKey(key);
  if (k.replicated || k.suffix !== 'rftl') throw corruptKey(key, 0, 'not a Raft log key');
  if (k.detail.length !== 8) throw corruptKey(key, key.length - k.detail.length, 'Raft log index is not 8 bytes');
  const index = k.detail.readUInt32BE(0) * 4294967296 + k.detail.readUInt32BE(4);
  if (!Number.isSafeInteger(index)) throw corruptKey(key, key.length - 8, 'Raft log index beyond 2^53');
  return { rangeId: k.rangeId, index };
}

/** The range id and transaction id of an abort span key; CorruptionError when it is not one. */
export function decodeAbortSpanKey(key: Buffer): { rangeId: number; txnId: Buffer } {
  const k = decodeRangeIdLocalKey(key);
  if (!k.replicated || k.suffix !== 'abc-') throw corruptKey(key, 0, 'not an abort span key');
  if (k.detail.length !== TXN_ID_LENGTH) throw corruptKey(key, key.length - k.detail.length, 'bad transaction id length');
  return { rangeId: k.rangeId, txnId: k.detail };
}

// ---- Range-local keys -------------------------------------------------------------

function rangeLocalInto(key: Uint8Array): KeyWriter {
  assert(!hasPrefix(key, LOCAL_PREFIX), 'keys: a range-local key is addressed by a global key');
  return w.reset().appendRaw(LOCAL_RANGE_PREFIX).appendBytes(key);
}

/** /Local/Range/<key>: the prefix of the range-local keys addressed by `key`. */
export function rangeLocalPrefix(key: Uint8Array): Buffer {
  return rangeLocalInto(key).finish();
}

/** The range-local keys of every key in [start, end). */
export function rangeLocalSpan(start: Uint8Array, end: Uint8Array): Span {
  return { key: rangeLocalPrefix(start), endKey: rangeLocalPrefix(end) };
}

/** Where a range keeps its own descriptor: addressed by its start key, so it moves with the range's first key. */
export function rangeDescriptorKey(startKey: Uint8Array): Buffer {
  return rangeLocalInto(startKey).appendRaw(SUFFIX_RANGE_DESCRIPTOR).finish();
}

/** A transaction record: on the range holding its anchor key (its first written key). */
export function transactionKey(anchor: Uint8Array, txnId: Uint8Array): Buffer {
  checkTxnId(txnId);
  return rangeLocalInto(anchor).appendRaw(SUFFIX_TRANSACTION).appendRaw(txnId).finish();
}

/** The parts of a range-local key. */
export interface RangeLocalKey {
  /** The global key it is addressed by (a view or a copy). */
  readonly key: Buffer;
  readonly suffix: string;
  readonly detail: Buffer;
}

/** Splits a range-local key; CorruptionError when it is not one. */
export function decodeRangeLocalKey(key: Buffer): RangeLocalKey {
  if (!hasPrefix(key, LOCAL_RANGE_PREFIX)) throw corruptKey(key, 0, 'not a range-local key');
  const r = reader.reset(key, LOCAL_RANGE_PREFIX.length);
  const addr = r.readBytes();
  if (addr === null || isLocal(addr)) throw corruptKey(key, LOCAL_RANGE_PREFIX.length, 'a range-local key must embed a global key');
  if (r.pos + 4 > key.length) throw corruptKey(key, r.pos, 'truncated range-local suffix');
  return { key: addr, suffix: key.toString('latin1', r.pos, r.pos + 4), detail: key.subarray(r.pos + 4) };
}

/** The anchor key and transaction id of a transaction record key; CorruptionError when it is not one. */
export function decodeTransactionKey(key: Buffer): { anchor: Buffer; txnId: Buffer } {
  const k = decodeRangeLocalKey(key);
  if (k.suffix !== 'txn-') throw corruptKey(key, 0, 'not a transaction key');
  if (k.detail.length !== TXN_ID_LENGTH) throw corruptKey(key, key.length - k.detail.length, 'bad transaction id length');
  return { anchor: k.key, txnId: k.detail };
}

/**
 * Every replicated key span of the range [startKey, endKey) with id `rangeId`,
 * in key order and disjoint: what a snapshot carries and what removing the
 * replica clears (with rangeIdUnreplicatedSpan for its Raft state). They are
 * its replicated range-ID-local data, the range-local keys addressed inside
 * it, and its user data (local keys are not data: the first range's data
 * starts at LOCAL_MAX).
 */
export function replicatedSpans(rangeId: number, startKey: Uint8Array, endKey: Uint8Array): Span[] {
  assert(compareBytes(startKey, endKey) < 0, 'keys: a range is a non-empty span');
  const dataStart = compareBytes(startKey, LOCAL_MAX) < 0 ? LOCAL_MAX : Buffer.from(startKey);
  return [rangeIdReplicatedSpan(rangeId), rangeLocalSpan(startKey, endKey), { key: dataStart, endKey: Buffer.from(endKey) }];
}

// ---- Store-local keys ---------------------------------------------------------------

/** A store's identity (cluster id, node id, store id), written when the store is bootstrapped. */
export const STORE_IDENT_KEY: Buffer = Buffer.concat([LOCAL_STORE_PREFIX, SUFFIX_STORE_IDENT]);

// ---- Meta addressing ------------------------------------------------------------------

/** Where the descriptor of the range ending at `endKey` is indexed. */
export function meta2Key(endKey: Uint8Array): Buffer {
  assert(!hasPrefix(endKey, LOCAL_PREFIX), 'keys: range bounds are global keys');
  assert(compareBytes(endKey, KEY_MAX) <= 0, 'keys: a range bound is at most KEY_MAX');
  return w.reset().appendRaw(META2_PREFIX).appendRaw(endKey).finish();
}

/**
 * Where a forward meta2 scan for `key` starts: the first entry at or after it
 * is the descriptor of the range containing `key` (the first range whose end
 * key is above `key`).
 */
export function meta2LookupKey(key: Uint8Array): Buffer {
  return meta2Key(keyNext(key));
}

/** The end key a meta2 key indexes (a view into it); CorruptionError when it is not a meta2 key. */
export function decodeMeta2Key(key: Buffer): Buffer {
  if (!hasPrefix(key, META2_PREFIX)) throw corruptKey(key, 0, 'not a meta2 key');
  return key.subarray(META2_PREFIX.length);
}

// ---- System keys ------------------------------------------------------------------------

const SYS_BOOTSTRAP_VERSION = ascii('bootstrap-version');
const SYS_CLUSTER_ID = ascii('cluster-id');
const SYS_DESCRIPTOR = ascii('descriptor/');
const SYS_DESC_LEASE = ascii('desc-lease/');
const SYS_DESC_FENCE = ascii('desc-fence/');
const SYS_DESC_ID_GEN = ascii('gen/descriptor-id');
const SYS_NODE_ID_GEN = ascii('gen/node-id');
const SYS_RANGE_ID_GEN = ascii('gen/range-id');
const SYS_STORE_ID_GEN = ascii('gen/store-id');
const SYS_LIVENESS = ascii('liveness/');
const SYS_NAMESPACE = ascii('namespace/');
const SYS_SETTINGS = ascii('settings/');

const systemKey = (name: Buffer): Buffer => Buffer.concat([SYSTEM_PREFIX, name]);

/** The cluster version the cluster was bootstrapped at. */
export const BOOTSTRAP_VERSION_KEY: Buffer = systemKey(SYS_BOOTSTRAP_VERSION);
export const CLUSTER_ID_KEY: Buffer = systemKey(SYS_CLUSTER_ID);
export const DESC_ID_GENERATOR_KEY: Buffer = systemKey(SYS_DESC_ID_GEN);
export const NODE_ID_GENERATOR_KEY: Buffer = systemKey(SYS_NODE_ID_GEN);
export const RANGE_ID_GENERATOR_KEY: Buffer = systemKey(SYS_RANGE_ID_GEN);
export const STORE_ID_GENERATOR_KEY: Buffer = systemKey(SYS_STORE_ID_GEN);
export const NODE_LIVENESS_PREFIX: Buffer = systemKey(SYS_LIVENESS);
export const NODE_LIVENESS_SPAN: Span = spanOfPrefix(NODE_LIVENESS_PREFIX);
export const DESCRIPTOR_PREFIX: Buffer = systemKey(SYS_DESCRIPTOR);
/** SQL descriptor leases, one record per node (sql/catalog/lease-manager.ts). */
export const DESC_LEASE_PREFIX: Buffer = systemKey(SYS_DESC_LEASE);
export const DESC_LEASE_SPAN: Span = spanOfPrefix(DESC_LEASE_PREFIX);
/** Schema-change fences: while one is live no node takes a new descriptor lease (lease-manager.ts). */
export const DESC_FENCE_PREFIX: Buffer = systemKey(SYS_DESC_FENCE);
export const DESC_FENCE_SPAN: Span = spanOfPrefix(DESC_FENCE_PREFIX);
export const NAMESPACE_PREFIX: Buffer = systemKey(SYS_NAMESPACE);
export const SETTINGS_PREFIX: Buffer = systemKey(SYS_SETTINGS);

/** A node's liveness record. */
export function nodeLivenessKey(nodeId: number): Buffer {
  checkId('node id', nodeId);
  return w.reset().appendRaw(NODE_LIVENESS_PREFIX).appendInt(nodeId).finish();
}

/** The node id of a liveness key; CorruptionError when it is not one. */
export function decodeNodeLivenessKey(key: Buffer): number {
  if (!hasPrefix(key, NODE_LIVENESS_PREFIX)) throw corruptKey(key, 0, 'not a node liveness key');
  const r = reader.reset(key, NODE_LIVENESS_PREFIX.length);
  const id = readId(r, 'node id');
  if (!r.done) throw corruptKey(key, r.pos, 'trailing bytes after the node id');
  return id;
}

/** A SQL descriptor (table, database, …) by id. */
export function descriptorKey(descId: number): Buffer {
  checkId('descriptor id', descId);
  return w.reset().appendRaw(DESCRIPTOR_PREFIX).appendInt(descId).finish();
}

/** Node `nodeId`'s descriptor lease record. */
export function descLeaseKey(nodeId: number): Buffer {
  checkId('node id', nodeId);
  return w.reset().appendRaw(DESC_LEASE_PREFIX).appendInt(nodeId).finish();
}

/** A schema-change fence, named by its owner's token. */
export function descFenceKey(token: string): Buffer {
  return w.reset().appendRaw(DESC_FENCE_PREFIX).appendString(token).finish();
}

/** A name → descriptor id entry under a parent (database or schema) descriptor. */
export function namespaceKey(parentId: number, name: string): Buffer {
  checkId('parent id', parentId);
  return w.reset().appendRaw(NAMESPACE_PREFIX).appendInt(parentId).appendString(name).finish();
}

/** A cluster setting by name. */
export function clusterSettingKey(name: string): Buffer {
  return w.reset().appendRaw(SETTINGS_PREFIX).appendString(name).finish();
}

// ---- Table data ---------------------------------------------------------------------------

/** /Table/<tableId>: all of a table's data. */
export function tablePrefix(tableId: number): Buffer {
  checkId('table id', tableId);
  return w.reset().appendInt(tableId).finish();
}

/** /Table/<tableId>/<indexId>: one index of a table; append the index columns with a KeyWriter. */
export function tableIndexPrefix(tableId: number, indexId: number): Buffer {
  checkId('table id', tableId);
  checkId('index id', indexId);
  return w.reset().appendInt(tableId).appendInt(indexId).finish();
}

/** Starts a table key in `writer`: /Table/<tableId>/<indexId>, ready for the key columns. */
export function appendTableIndexPrefix(writer: KeyWriter, tableId: number, indexId: number): KeyWriter {
  checkId('table id', tableId);
  checkId('index id', indexId);
  return writer.appendInt(tableId).appendInt(indexId);
}

/** A whole table key: /Table/<tableId>/<indexId>/<columns…>, each column in its direction (ascending by default). */
export function tableKey(tableId: number, indexId: number, columns: readonly KeyDatum[], dirs?: readonly Direction[]): Buffer {
  appendTableIndexPrefix(w.reset(), tableId, indexId);
  for (let i = 0; i < columns.length; i++) w.appendDatum(columns[i] as KeyDatum, dirs?.[i] ?? 'asc');
  return w.finish();
}

export function tableSpan(tableId: number): Span {
  return spanOfPrefix(tablePrefix(tableId));
}

export function tableIndexSpan(tableId: number, indexId: number): Span {
  return spanOfPrefix(tableIndexPrefix(tableId, indexId));
}

/**
 * The table a table-data key belongs to (/Table/<tableId>/…), or undefined
 * for any other key (local, meta, system, KEY_MAX) and for bytes that do not
 * start with a well-formed id. Never throws: span bounds built by keyNext /
 * prefixEnd are asked too.
 */
export function tableIdOf(key: Uint8Array): number | undefined {
  const first = key[0];
  if (first === undefined || first < (TABLE_DATA_MIN[0] as number) || first > TAG_INT_MAX) return undefined;
  try {
    const id = reader.reset(key as Buffer, 0).readInt();
    return typeof id === 'number' && id >= 0 ? id : undefined;
  } catch {
    return undefined;
  }
}

/** The table and index ids of a table-data key and the offset of its first key column. */
export function decodeTableIndexPrefix(key: Buffer): { tableId: number; indexId: number; next: number } {
  const first = key[0];
  if (first === undefined || first < (TABLE_DATA_MIN[0] as number) || first > TAG_INT_MAX) throw corruptKey(key, 0, 'not a table key');
  const r = reader.reset(key, 0);
  const tableId = readId(r, 'table id');
  const indexId = readId(r, 'index id');
  return { tableId, indexId, next: r.pos };
}

// ---- Classification and addressing -----------------------------------------------------

export function isLocal(key: Uint8Array): boolean {
  return key.length > 0 && key[0] === LOCAL_PREFIX[0];
}

/**
 * The global key a key is addressed by, for routing: a range-local key maps to
 * the key it embeds, a global key to itself. Range-ID-local and store-local
 * keys belong to a replica or a store, not to a key: asking is a caller bug
 * and raises `storage.key_not_addressable`; a malformed local key raises
 * CorruptionError.
 */
export function addressOf(key: Buffer): Buffer {
  if (!isLocal(key)) return key;
  if (key[1] === LOCAL_RANGE_INFIX) return decodeRangeLocalKey(key).key;
  if (key[1] === LOCAL_RANGE_ID_INFIX || key[1] === LOCAL_STORE_INFIX) {
    throw new CairnError('storage.key_not_addressable', `storage: key ${prettyKey(key)} is not addressable`);
  }
  throw corruptKey(key, 1, 'unknown local key infix');
}

/**
 * Whether a range may split at `key`: a global key strictly inside
 * (KEY_MIN, KEY_MAX), outside the meta2 span (which stays in one range — see
 * the header) and not equal to its end (the first system key may start a range).
 */
export function isValidSplitKey(key: Uint8Array): boolean {
  if (key.length === 0 || isLocal(key) || compareBytes(key, KEY_MAX) >= 0) return false;
  return !(compareBytes(key, META1_PREFIX) >= 0 && compareBytes(key, META2_MAX) < 0);
}

// ---- Pretty-printing ----------------------------------------------------------------------

const hexTail = (key: Uint8Array, from: number): string =>
  from >= key.length ? '' : `/?0x${Buffer.from(key.buffer, key.byteOffset + from, key.length - from).toString('hex')}`;

function quote(s: string, bytes: boolean): string {
  let out = bytes ? 'b"' : '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22 || c === 0x5c) out += `\\${s[i]}`;
    else if (c < 0x20 || c === 0x7f || (bytes && c > 0x7e)) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += s[i];
  }
  return `${out}"`;
}

function formatFloat(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  const s = String(v);
  return /[.e]/.test(s) ? s : `${s}.0`;
}

/** One decoded tuple value as the pretty-printer shows it: 7, 1.5, "str", b"\x00", true, NULL. */
export function formatKeyValue(d: DecodedValue): string {
  const v = d.value;
  switch (d.kind) {
    case 'null':
      return 'NULL';
    case 'int':
    case 'bool':
      return String(v);
    case 'float':
      return formatFloat(v as number);
    case 'string':
      return quote(v as string, false);
    case 'bytes':
      return quote((v as Buffer).toString('latin1'), true);
  }
}

/** `/v1/v2/…` for the tuple values from `from` to the end; an undecodable tail prints as hex. */
function prettyValues(key: Buffer, from: number): string {
  let out = '';
  let pos = from;
  while (pos < key.length) {
    let d: DecodedValue;
    try {
      d = decodeValue(key, pos);
    } catch {
      return out + hexTail(key, pos);
    }
    out += `/${formatKeyValue(d)}`;
    pos = d.next;
  }
  return out;
}

const RANGE_ID_SUFFIX_NAMES: Readonly<Record<string, string>> = {
  'abc-': 'AbortSpan',
  'lgc-': 'RangeGCThreshold',
  rask: 'RangeAppliedState',
  'rll-': 'RangeLease',
  rfth: 'RaftHardState',
  rftl: 'RaftLog',
  rftt: 'RaftTruncatedState',
  rftr: 'RaftReplicaID',
  rftb: 'RangeTombstone',
};
const RANGE_SUFFIX_NAMES: Readonly<Record<string, string>> = { rdsc: 'RangeDescriptor', 'txn-': 'Transaction' };
const STORE_SUFFIX_NAMES: Readonly<Record<string, string>> = { iden: 'StoreIdent' };

const SYSTEM_NAMES: readonly (readonly [Buffer, string])[] = [
  [SYS_BOOTSTRAP_VERSION, 'BootstrapVersion'],
  [SYS_CLUSTER_ID, 'ClusterID'],
  [SYS_DESCRIPTOR, 'Descriptor'],
  [SYS_DESC_LEASE, 'DescLease'],
  [SYS_DESC_FENCE, 'DescFence'],
  [SYS_DESC_ID_GEN, 'DescIDGen'],
  [SYS_NODE_ID_GEN, 'NodeIDGen'],
  [SYS_RANGE_ID_GEN, 'RangeIDGen'],
  [SYS_STORE_ID_GEN, 'StoreIDGen'],
  [SYS_LIVENESS, 'NodeLiveness'],
  [SYS_NAMESPACE, 'Namespace'],
  [SYS_SETTINGS, 'Settings'],
];

function formatTxnId(id: Buffer): string {
  if (id.length !== TXN_ID_LENGTH) return `?0x${id.toString('hex')}`;
  const h = id.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function prettyRangeIdLocal(key: Buffer): string {
  let k: RangeIdLocalKey;
  try {
    k = decodeRangeIdLocalKey(key);
  } catch {
    return `/Local/RangeID${prettyValues(key, LOCAL_RANGE_ID_PREFIX.length)}`;
  }
  const head = `/Local/RangeID/${k.rangeId}/${k.replicated ? 'r' : 'u'}`;
  const name = RANGE_ID_SUFFIX_NAMES[k.suffix];
  if (name === undefined) return head + hexTail(key, key.length - k.detail.length - 4);
  if (k.suffix === 'rftl' && k.detail.length === 8) {
    const index = k.detail.readUInt32BE(0) * 4294967296 + k.detail.readUInt32BE(4);
    if (Number.isSafeInteger(index)) return `${head}/${name}/${index}`;
  }
  if (k.suffix === 'abc-' && k.detail.length === TXN_ID_LENGTH) return `${head}/${name}/${formatTxnId(k.detail)}`;
  return `${head}/${name}${hexTail(key, key.length - k.detail.length)}`;
}

function prettyRangeLocal(key: Buffer): string {
  let k: RangeLocalKey;
  try {
    k = decodeRangeLocalKey(key);
  } catch {
    return `/Local/Range${hexTail(key, LOCAL_RANGE_PREFIX.length)}`;
  }
  const head = `/Local/Range${prettyKey(k.key)}`;
  const name = RANGE_SUFFIX_NAMES[k.suffix];
  if (name === undefined) return head + hexTail(key, key.length - k.detail.length - 4);
  if (k.suffix === 'txn-' && k.detail.length === TXN_ID_LENGTH) return `${head}/${name}/${formatTxnId(k.detail)}`;
  return `${head}/${name}${hexTail(key, key.length - k.detail.length)}`;
}

function prettyLocal(key: Buffer): string {
  switch (key[1]) {
    case LOCAL_RANGE_ID_INFIX:
      return prettyRangeIdLocal(key);
    case LOCAL_RANGE_INFIX:
      return prettyRangeLocal(key);
    case LOCAL_STORE_INFIX: {
      const name = STORE_SUFFIX_NAMES[key.toString('latin1', 2, 6)];
      if (name === undefined) return `/Local/Store${hexTail(key, 2)}`;
      return `/Local/Store/${name}${hexTail(key, 6)}`;
    }
    default:
      return `/Local${hexTail(key, 1)}`;
  }
}

function prettySystem(key: Buffer): string {
  const rest = key.subarray(SYSTEM_PREFIX.length);
  for (const [name, label] of SYSTEM_NAMES) {
    if (hasPrefix(rest, name)) return `/System/${label}${prettyValues(key, SYSTEM_PREFIX.length + name.length)}`;
  }
  return `/System${hexTail(key, SYSTEM_PREFIX.length)}`;
}

/**
 * A user key in symbolic form, e.g. `/Table/52/1/"user42"/7/NULL`,
 * `/Local/RangeID/5/u/RaftLog/123`, `/System/NodeLiveness/3`,
 * `/Meta2/Table/52/1/"x"`. Never throws: unknown prefixes and undecodable
 * tails print as `?0x<hex>`.
 */
export function prettyKey(key: Buffer): string {
  try {
    return prettyKeyUnchecked(key);
  } catch (e) {
    // A decoder this printer relies on found something it did not expect; still print.
    if (e instanceof CorruptionError) return hexTail(key, 0);
    throw e;
  }
}

function prettyKeyUnchecked(key: Buffer): string {
  if (key.length === 0) return '/Min';
  if (bytesEqual(key, KEY_MAX)) return '/Max';
  const first = key[0] as number;
  if (first === LOCAL_PREFIX[0]) return prettyLocal(key);
  if (first === META2_PREFIX[0]) {
    const end = key.subarray(META2_PREFIX.length);
    return end.length === 0 ? '/Meta2' : `/Meta2${prettyKey(end)}`;
  }
  if (first === META1_PREFIX[0]) return `/Meta1${hexTail(key, 1)}`;
  if (first === SYSTEM_PREFIX[0]) return prettySystem(key);
  if (first >= (TABLE_DATA_MIN[0] as number) && first <= TAG_INT_MAX) return `/Table${prettyValues(key, 0)}`;
  return hexTail(key, 0);
}

/** An engine key (mvcc-key.ts layout): the user key, then `/@<timestamp>` for a version. Never throws. */
export function prettyEngineKey(engineKey: Buffer): string {
  let k: ReturnType<typeof decodeMvccKey>;
  try {
    k = decodeMvccKey(engineKey);
  } catch {
    return hexTail(engineKey, 0) || '/?0x';
  }
  const user = prettyKey(k.key);
  return k.ts === undefined ? user : `${user}/@${formatTimestamp(k.ts)}`;
}

/** A span as `[start, end)` in pretty form. */
export function prettySpan(span: Span): string {
  return `[${prettyKey(span.key)}, ${prettyKey(span.endKey)})`;
}
