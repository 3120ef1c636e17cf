/**
 * The binary encoding of everything the KV layer sends or stores that is not
 * MVCC data: batches, responses, KV errors, Raft messages (coalesced per
 * store pair), Raft commands (a proposal's payload), snapshot chunks and the
 * replica's persisted state records (applied state, hard state, truncated
 * state, lease, range descriptor, store ident). One module per format
 * (STYLE.md §5): every layout is drawn here and has exactly one encoder and
 * one decoder, built from src/rpc's BufWriter/BufReader primitives
 * (uvarint, varint, bytes, string, timestamp = uvarint wall, uvarint logical).
 * No JSON anywhere.
 *
 *   replica    = nodeId:uv storeId:uv replicaId:uv type:u8
 *   desc       = rangeId:uv startKey:bytes endKey:bytes n:uv replica×n nextReplicaId:uv generation:uv
 *                opt(stickyBit:ts)
 *                (stickyBit added in session 2: descriptors written before it do not decode —
 *                 there is no on-disk version to keep; a store is rebuilt, not upgraded)
 *   lease      = replica start:ts expiration:ts sequence:uv
 *   opt(x)     = 0:u8 | 1:u8 x
 *   txn        = id:bytes epoch:uv writeTs:ts opt(minTs:ts) seq:uv key:bytes opt(priority:uv)
 *                n:uv (start:uv end:uv)×n                        (ignored seq ranges)
 *   stats      = 8 × varint (liveBytes liveCount keyBytes keyCount valBytes valCount intentBytes intentCount)
 *
 *   BatchRequest  = rangeId:uv replicaId:uv ts:ts opt(txn) opt(uncertaintyLimit:ts) flags:u8 [observed]
 *                   n:uv request×n
 *                   (flags bit0: asyncConsensus — write pipelining, see api.ts; bit1: the observed list
 *                    follows; the other bits are zero. Added in sessions 3 and 4: there is no wire
 *                    version, so every node runs one build)
 *   observed      = n:uv (nodeId:uv ts:ts)×n        observed timestamps (uncertainty.ts), one per node
 *   (the transaction commands' request/response bodies: txn-codec.ts)
 *   request       = tag:u8 body   (tags: REQ_* below; bodies field by field)
 *   BatchResult   = 0:u8 now:ts ts:ts observed n:uv response×n    | 1:u8 error
 *
 *   Design note (session 4, observed timestamps): a transactional batch carries the
 *   transaction's observed timestamps in its header and its response carries the serving
 *   node's reading taken on arrival (Store.send), so the leaseholder can narrow the
 *   uncertainty limit to what it observed (uncertainty.ts). A request without them has
 *   flags bit1 clear and costs nothing more; a response always spends one byte (n = 0 for
 *   non-transactional batches), which keeps the result a single layout:
 *
 *     BatchRequest  … flags:u8 ─┬─ bit1 clear ─► n:uv request×n
 *                               └─ bit1 set ───► nObs:uv ┌nodeId:uv┬wall:uv┬logical:uv┐×nObs  n:uv request×n
 *     BatchResult   0:u8 now:ts ts:ts nObs:uv ┌nodeId:uv┬wall:uv┬logical:uv┐×nObs  n:uv response×n
 *   response      = tag:u8 body
 *   error         = tag:u8 body  (ERR_* below, each with the typed fields and the message text; unknown CairnErrors travel as
 *                   ERR_GENERIC code:str message:str retryable:bool ambiguous:bool sqlState:str)
 *
 *   RaftMessageBatch = fromNode:uv fromStore:uv toStore:uv n:uv
 *                      (rangeId:uv fromReplica:uv toReplica:uv quiesce:bool raftMsg)×n
 *   raftMsg    = type:u8 to:uv from:uv term:uv logTerm:uv index:uv n:uv entry×n commit:uv
 *                opt(snapshot) reject:bool rejectHint:uv opt(context:bytes)
 *   entry      = term:uv index:uv type:u8 data:bytes
 *   snapshot   = data:bytes index:uv term:uv confState
 *   confState  = voters learners votersOutgoing learnersNext (each n:uv id:uv×n) autoLeave:bool
 *
 *   RaftCommand = cmdId:uv leaseSeq:uv maxLeaseIndex:uv flags:u8 opt(prevLease) [priorReadSummary:ts]
 *                 repr:bytes stats opt(newLease) opt(truncIndex:uv truncTerm:uv) opt(checksumId:uv)
 *                 opt(trigger:bytes) [gcThreshold:ts]
 *                 (flags bit0: a lease request, checked against prevLease instead of leaseSeq/MLI;
 *                  bit1: priorReadSummary present)
 *
 *   Design note (session 8, lease transfers): a TransferLease command carries the
 *   outgoing holder's read summary — the highest timestamp it served a read at,
 *   taken under a latch over the whole range — and the new holder's timestamp
 *   cache starts there instead of 2 max offsets ahead of its clock (every write
 *   after a transfer used to be pushed ~1 s into the future and, outside a
 *   transaction, wait for the clock). Flag bit 1 marks it, so commands written
 *   before it (flags 0 or 1) decode unchanged.
 *
 *   Design note (session 7, MVCC GC): a command that raises the range's GC threshold
 *   (GCRequest, a merge absorbing a range with a higher one) carries the new threshold
 *   as a trailing timestamp, present iff the command ends after the trigger option —
 *   so commands in logs written before it decode unchanged, and no other command
 *   pays a byte. Every replica adopts it (max) at apply; the command's batch also
 *   writes it at rangeGCThresholdKey (replicated range-ID-local, so snapshots,
 *   restarts and the consistency checker see it), encoded as `gcThreshold = ts`.
 *   GCRequest = tag 17 key:bytes endKey:bytes threshold:ts n:uv key:bytes×n (response: tag only);
 *   its error BatchTimestampBeforeGCError = tag 11 rangeId:uv ts:ts threshold:ts.
 *   An empty entry (data length 0) is the no-op a new Raft leader appends.
 *
 *   SnapshotChunk = rangeId:uv snapId:uv fromNode:uv toStore:uv n:uv (key:bytes value:bytes)×n
 *                   final:bool [RaftMessageBatch of one message, iff final]
 *
 *   appliedState  = appliedIndex:uv appliedTerm:uv leaseAppliedIndex:uv stats
 *   hardState     = term:uv vote:uv commit:uv
 *   truncState    = index:uv term:uv
 *   storeIdent    = clusterId:str nodeId:uv storeId:uv
 *
 * Decoders raise RpcCodecError (`rpc.codec`) on malformed input (BufReader's
 * bounds checks) and never return partial objects. Decoded Buffers are views
 * into the input (no copies): callers that keep them long-term copy.
 *
 * Ownership: src/kv. Encoders return buffers the caller owns.
 */
import { BufReader, BufWriter, RpcCodecError } from '../rpc/codec.js';
import { AmbiguousResultError, CairnError } from '../util/errors.js';
import { assertNever } from '../util/assert.js';
import type { Timestamp } from '../util/hlc.js';
import { readTxnRequest, readTxnResponse, writeTxnRequest, writeTxnResponse } from './txn-codec.js';
import { ConditionFailedError, ReadWithinUncertaintyIntervalError, WriteIntentError, WriteTooOldError, type Intent, type Txn } from '../../storage/mvcc.js';
import type { TxnMeta } from '../../storage/mvcc-value.js';
import { emptyStats, type MvccStats } from '../../storage/mvcc-stats.js';
import type { ConfState, Entry, HardState, Message, Snapshot } from '../../raft/types.js';
import {
  BatchTimestampBeforeGCError,
  NotLeaseHolderError,
  RangeKeyMismatchError,
  RangeNotFoundError,
  ProposalDroppedKvError,
  StoreStoppedError,
  type BatchRequest,
  type ChangeReplicasOp,
  type EmptyResponse,
  type ReplicationTarget,
  type BatchResponse,
  type Lease,
  type RangeAppliedState,
  type RangeDescriptor,
  type ReplicaDescriptor,
  type ReplicaType,
  type Request,
  type Response,
  type StoreIdent,
  type TruncatedState,
  type KeyValue,
  type ObservedTimestamp,
} from './api.js';

const w = new BufWriter(1 << 16);

function finish(): Buffer {
  return w.copyOut();
}

function bad(what: string): never {
  throw new RpcCodecError(`kv: ${what}`);
}

// ---- small pieces --------------------------------------------------------------

function writeOpt<T>(wr: BufWriter, v: T | null | undefined, f: (wr: BufWriter, v: T) => void): void {
  if (v === null || v === undefined) wr.u8(0);
  else {
    wr.u8(1);
    f(wr, v);
  }
}

function readOpt<T>(r: BufReader, f: (r: BufReader) => T): T | null {
  return r.bool() ? f(r) : null;
}

function writeReplica(wr: BufWriter, d: ReplicaDescriptor): void {
  wr.uvarint(d.nodeId);
  wr.uvarint(d.storeId);
  wr.uvarint(d.replicaId);
  wr.u8(d.type);
}

function readReplica(r: BufReader): ReplicaDescriptor {
  const nodeId = r.uvarint();
  const storeId = r.uvarint();
  const replicaId = r.uvarint();
  const type = r.u8();
  if (type > 3) bad(`unknown replica type ${type}`);
  return { nodeId, storeId, replicaId, type: type as ReplicaType };
}

export function writeDescriptor(wr: BufWriter, d: RangeDescriptor): void {
  wr.uvarint(d.rangeId);
  wr.bytes(d.startKey);
  wr.bytes(d.endKey);
  wr.uvarint(d.replicas.length);
  for (const rep of d.replicas) writeReplica(wr, rep);
  wr.uvarint(d.nextReplicaId);
  wr.uvarint(d.generation);
  writeOpt(wr, d.stickyBit, (w, t) => w.timestamp(t));
}

export function readDescriptor(r: BufReader): RangeDescriptor {
  const rangeId = r.uvarint();
  const startKey = r.bytes();
  const endKey = r.bytes();
  const n = r.uvarint();
  const replicas: ReplicaDescriptor[] = [];
  for (let i = 0; i < n; i++) replicas.push(readReplica(r));
  const nextReplicaId = r.uvarint();
  const generation = r.uvarint();
  const stickyBit = readOpt(r, (x) => x.timestamp());
  return stickyBit === null ? { rangeId, startKey, endKey, replicas, nextReplicaId, generation } : { rangeId, startKey, endKey, replicas, nextReplicaId, generation, stickyBit };
}

function writeLease(wr: BufWriter, l: Lease): void {
  writeReplica(wr, l.replica);
  wr.timestamp(l.start);
  wr.timestamp(l.expiration);
  wr.uvarint(l.sequence);
}

function readLease(r: BufReader): Lease {
  return { replica: readReplica(r), start: r.timestamp(), expiration: r.timestamp(), sequence: r.uvarint() };
}

function writeTxnMeta(wr: BufWriter, t: TxnMeta): void {
  wr.bytes(t.id);
  wr.uvarint(t.epoch);
  wr.timestamp(t.writeTimestamp);
  writeOpt(wr, t.minTimestamp, (x, v) => x.timestamp(v));
  wr.uvarint(t.sequence);
  wr.bytes(t.key);
  writeOpt(wr, t.priority, (x, v) => x.uvarint(v));
}

function readTxnMeta(r: BufReader): { -readonly [K in keyof TxnMeta]: TxnMeta[K] } {
  const id = r.bytes();
  const epoch = r.uvarint();
  const writeTimestamp = r.timestamp();
  const minTimestamp = readOpt(r, (x) => x.timestamp());
  const sequence = r.uvarint();
  const key = r.bytes();
  const priority = readOpt(r, (x) => x.uvarint());
  const t: { -readonly [K in keyof TxnMeta]: TxnMeta[K] } = { id, epoch, writeTimestamp, sequence, key };
  if (minTimestamp !== null) t.minTimestamp = minTimestamp;
  if (priority !== null) t.priority = priority;
  return t;
}

function writeTxn(wr: BufWriter, t: Txn): void {
  writeTxnMeta(wr, t);
  const ign = t.ignoredSeqNums ?? [];
  wr.uvarint(ign.length);
  for (const s of ign) {
    wr.uvarint(s.start);
    wr.uvarint(s.end);
  }
}

function readTxn(r: BufReader): Txn {
  const meta = readTxnMeta(r);
  const n = r.uvarint();
  if (n === 0) return meta;
  const ignoredSeqNums: { start: number; end: number }[] = [];
  for (let i = 0; i < n; i++) ignoredSeqNums.push({ start: r.uvarint(), end: r.uvarint() });
  return { ...meta, ignoredSeqNums };
}

/** The order stats fields travel in. */
const STATS_FIELDS = ['liveBytes', 'liveCount', 'keyBytes', 'keyCount', 'valBytes', 'valCount', 'intentBytes', 'intentCount'] as const;

function writeStats(wr: BufWriter, s: MvccStats): void {
  for (const f of STATS_FIELDS) wr.varint(s[f]);
}

function readStats(r: BufReader): MvccStats {
  const s = emptyStats();
  for (const f of STATS_FIELDS) s[f] = r.varint();
  return s;
}

function writeNullableBytes(wr: BufWriter, b: Buffer | null): void {
  writeOpt(wr, b, (x, v) => x.bytes(v));
}

function readNullableBytes(r: BufReader): Buffer | null {
  return readOpt(r, (x) => x.bytes());
}

// ---- requests ----------------------------------------------------------------------

const REQ_TAGS: Record<Request['kind'], number> = {
  get: 1,
  put: 2,
  cput: 3,
  delete: 4,
  deleteRange: 5,
  scan: 6,
  reverseScan: 7,
  requestLease: 8,
  transferLease: 9,
  leaseInfo: 10,
  computeChecksum: 11,
  truncateLog: 12,
  gc: 17,
  adminSplit: 13,
  subsume: 14,
  adminMerge: 15,
  adminChangeReplicas: 16,
  beginTxn: 40,
  heartbeatTxn: 41,
  endTxn: 42,
  pushTxn: 43,
  queryTxn: 44,
  queryIntent: 45,
  resolveIntent: 46,
  resolveIntentRange: 47,
  recoverTxn: 48,
  refresh: 49,
  refreshRange: 50,
};
const REQ_KINDS = invert(REQ_TAGS);

function invert<K extends string>(m: Record<K, number>): Map<number, K> {
  const out = new Map<number, K>();
  for (const k of Object.keys(m) as K[]) out.set(m[k], k);
  return out;
}

function writeRequest(wr: BufWriter, q: Request): void {
  wr.u8(REQ_TAGS[q.kind]);
  switch (q.kind) {
    case 'beginTxn':
    case 'heartbeatTxn':
    case 'endTxn':
    case 'pushTxn':
    case 'queryTxn':
    case 'queryIntent':
    case 'resolveIntent':
    case 'resolveIntentRange':
    case 'recoverTxn':
    case 'refresh':
    case 'refreshRange':
      writeTxnRequest(wr, q);
      return;
    case 'get':
      wr.bytes(q.key);
      wr.bool(q.lock === 'exclusive');
      return;
    case 'delete':
      wr.bytes(q.key);
      return;
    case 'put':
      wr.bytes(q.key);
      wr.bytes(q.value);
      return;
    case 'cput':
      wr.bytes(q.key);
      writeNullableBytes(wr, q.value);
      writeNullableBytes(wr, q.expected);
      wr.bool(q.allowIfDoesNotExist);
      return;
    case 'deleteRange':
      wr.bytes(q.key);
      wr.bytes(q.endKey);
      wr.bool(q.returnKeys);
      return;
    case 'scan':
    case 'reverseScan':
      wr.bytes(q.key);
      wr.bytes(q.endKey);
      wr.uvarint(q.maxKeys);
      wr.bool(q.lock === 'exclusive');
      return;
    case 'requestLease':
    case 'transferLease':
      writeLease(wr, q.lease);
      writeOpt(wr, q.prevLease, writeLease);
      return;
    case 'leaseInfo':
      return;
    case 'computeChecksum':
      wr.uvarint(q.checksumId);
      return;
    case 'truncateLog':
      wr.uvarint(q.index);
      return;
    case 'gc':
      wr.bytes(q.key);
      wr.bytes(q.endKey);
      wr.timestamp(q.threshold);
      wr.uvarint(q.keys.length);
      for (const k of q.keys) wr.bytes(k);
      return;
    case 'adminSplit':
      wr.bytes(q.key);
      wr.uvarint(q.newRangeId);
      writeOpt(wr, q.expiration, (w, t) => w.timestamp(t));
      return;
    case 'subsume':
      wr.bytes(q.key);
      writeOpt(wr, q.left, writeDescriptor);
      return;
    case 'adminMerge':
      wr.bytes(q.key);
      writeDescriptor(wr, q.right);
      return;
    case 'adminChangeReplicas':
      wr.bytes(q.key);
      wr.uvarint(q.generation);
      wr.u8(q.op);
      for (const list of [q.adds, q.removes]) {
        wr.uvarint(list.length);
        for (const t of list) {
          wr.uvarint(t.nodeId);
          wr.uvarint(t.storeId);
        }
      }
      return;
    default:
      assertNever(q);
  }
}

function readRequest(r: BufReader): Request {
  const tag = r.u8();
  const kind = REQ_KINDS.get(tag) ?? bad(`unknown request tag ${tag}`);
  switch (kind) {
    case 'beginTxn':
    case 'heartbeatTxn':
    case 'endTxn':
    case 'pushTxn':
    case 'queryTxn':
    case 'queryIntent':
    case 'resolveIntent':
    case 'resolveIntentRange':
    case 'recoverTxn':
    case 'refresh':
    case 'refreshRange':
      return readTxnRequest(r, kind);
    case 'get': {
      const key = r.bytes();
      return r.bool() ? { kind, key, lock: 'exclusive' } : { kind, key };
    }
    case 'delete':
      return { kind, key: r.bytes() };
    case 'put':
      return { kind, key: r.bytes(), value: r.bytes() };
    case 'cput':
      return { kind, key: r.bytes(), value: readNullableBytes(r), expected: readNullableBytes(r), allowIfDoesNotExist: r.bool() };
    case 'deleteRange':
      return { kind, key: r.bytes(), endKey: r.bytes(), returnKeys: r.bool() };
    case 'scan':
    case 'reverseScan': {
      const scan = { kind, key: r.bytes(), endKey: r.bytes(), maxKeys: r.uvarint() } as const;
      return r.bool() ? { ...scan, lock: 'exclusive' } : scan;
    }
    case 'requestLease':
    case 'transferLease':
      return { kind, lease: readLease(r), prevLease: readOpt(r, readLease) };
    case 'leaseInfo':
      return { kind };
    case 'computeChecksum':
      return { kind, checksumId: r.uvarint() };
    case 'truncateLog':
      return { kind, index: r.uvarint() };
    case 'gc': {
      const key = r.bytes();
      const endKey = r.bytes();
      const threshold = r.timestamp();
      const n = r.uvarint();
      const keys: Buffer[] = [];
      for (let i = 0; i < n; i++) keys.push(r.bytes());
      return { kind, key, endKey, threshold, keys };
    }
    case 'adminSplit': {
      const key = r.bytes();
      const newRangeId = r.uvarint();
      const expiration = readOpt(r, (x) => x.timestamp());
      return expiration === null ? { kind, key, newRangeId } : { kind, key, newRangeId, expiration };
    }
    case 'subsume': {
      const key = r.bytes();
      const left = readOpt(r, readDescriptor);
      return left === null ? { kind, key } : { kind, key, left };
    }
    case 'adminMerge':
      return { kind, key: r.bytes(), right: readDescriptor(r) };
    case 'adminChangeReplicas': {
      const key = r.bytes();
      const generation = r.uvarint();
      const op = r.u8();
      if (op > 3) bad(`unknown change-replicas op ${op}`);
      const lists: ReplicationTarget[][] = [[], []];
      for (const list of lists) {
        const n = r.uvarint();
        for (let i = 0; i < n; i++) list.push({ nodeId: r.uvarint(), storeId: r.uvarint() });
      }
      return { kind, key, generation, op: op as ChangeReplicasOp, adds: lists[0] as ReplicationTarget[], removes: lists[1] as ReplicationTarget[] };
    }
    default:
      return assertNever(kind);
  }
}

/** BatchRequest header flags (bit 0: header.asyncConsensus; bit 1: observed timestamps follow). */
const BATCH_FLAG_ASYNC_CONSENSUS = 1;
const BATCH_FLAG_OBSERVED = 2;

function writeObserved(wr: BufWriter, obs: readonly ObservedTimestamp[] | undefined): void {
  if (obs === undefined) {
    wr.uvarint(0);
    return;
  }
  wr.uvarint(obs.length);
  for (const o of obs) {
    wr.uvarint(o.nodeId);
    wr.timestamp(o.timestamp);
  }
}

function readObserved(r: BufReader): ObservedTimestamp[] {
  const n = r.uvarint();
  const out: ObservedTimestamp[] = [];
  for (let i = 0; i < n; i++) out.push({ nodeId: r.uvarint(), timestamp: r.timestamp() });
  return out;
}

export function encodeBatchRequest(ba: BatchRequest): Buffer {
  w.reset();
  const h = ba.header;
  w.uvarint(h.rangeId);
  w.uvarint(h.replicaId ?? 0);
  w.timestamp(h.timestamp);
  writeOpt(w, h.txn, writeTxn);
  writeOpt(w, h.uncertaintyLimit, (x, t) => x.timestamp(t));
  const observed = h.observedTimestamps !== undefined && h.observedTimestamps.length > 0;
  w.u8((h.asyncConsensus === true ? BATCH_FLAG_ASYNC_CONSENSUS : 0) | (observed ? BATCH_FLAG_OBSERVED : 0));
  if (observed) writeObserved(w, h.observedTimestamps);
  w.uvarint(ba.requests.length);
  for (const q of ba.requests) writeRequest(w, q);
  return finish();
}

export function decodeBatchRequest(buf: Uint8Array): BatchRequest {
  const r = new BufReader(buf);
  const rangeId = r.uvarint();
  const replicaId = r.uvarint();
  const timestamp = r.timestamp();
  const txn = readOpt(r, readTxn);
  const uncertaintyLimit = readOpt(r, (x) => x.timestamp());
  const flags = r.u8();
  if ((flags & ~(BATCH_FLAG_ASYNC_CONSENSUS | BATCH_FLAG_OBSERVED)) !== 0) bad(`batch header flags ${flags}`);
  const observedTimestamps = (flags & BATCH_FLAG_OBSERVED) !== 0 ? readObserved(r) : null;
  if (observedTimestamps !== null && observedTimestamps.length === 0) bad('batch header: empty observed timestamps');
  const n = r.uvarint();
  const requests: Request[] = [];
  for (let i = 0; i < n; i++) requests.push(readRequest(r));
  r.expectEnd('batch request');
  const header = {
    rangeId,
    replicaId,
    timestamp,
    ...(txn === null ? {} : { txn }),
    ...(uncertaintyLimit === null ? {} : { uncertaintyLimit }),
    ...((flags & BATCH_FLAG_ASYNC_CONSENSUS) !== 0 ? { asyncConsensus: true } : {}),
    ...(observedTimestamps === null ? {} : { observedTimestamps }),
  };
  return { header, requests };
}

// ---- responses ---------------------------------------------------------------------

function writeResponse(wr: BufWriter, p: Response): void {
  wr.u8(REQ_TAGS[p.kind]);
  switch (p.kind) {
    case 'beginTxn':
    case 'heartbeatTxn':
    case 'endTxn':
    case 'pushTxn':
    case 'queryTxn':
    case 'queryIntent':
    case 'resolveIntent':
    case 'resolveIntentRange':
    case 'recoverTxn':
    case 'refresh':
    case 'refreshRange':
      writeTxnResponse(wr, p);
      return;
    case 'get':
      writeNullableBytes(wr, p.value);
      wr.timestamp(p.ts);
      return;
    case 'deleteRange':
      wr.uvarint(p.keys.length);
      for (const k of p.keys) wr.bytes(k);
      return;
    case 'scan':
    case 'reverseScan':
      wr.uvarint(p.rows.length);
      for (const kv of p.rows) {
        wr.bytes(kv.key);
        wr.bytes(kv.value);
      }
      writeNullableBytes(wr, p.resumeKey);
      writeNullableBytes(wr, p.resumeEndKey);
      return;
    case 'leaseInfo':
      writeOpt(wr, p.lease, writeLease);
      return;
    case 'adminSplit':
      writeDescriptor(wr, p.left);
      writeDescriptor(wr, p.right);
      return;
    case 'subsume':
    case 'adminMerge':
    case 'adminChangeReplicas':
      writeDescriptor(wr, p.desc);
      return;
    default:
      return;
  }
}

function readResponse(r: BufReader): Response {
  const tag = r.u8();
  const kind = REQ_KINDS.get(tag) ?? bad(`unknown response tag ${tag}`);
  switch (kind) {
    case 'beginTxn':
    case 'heartbeatTxn':
    case 'endTxn':
    case 'pushTxn':
    case 'queryTxn':
    case 'queryIntent':
    case 'resolveIntent':
    case 'resolveIntentRange':
    case 'recoverTxn':
    case 'refresh':
    case 'refreshRange':
      return readTxnResponse(r, kind);
    case 'get':
      return { kind, value: readNullableBytes(r), ts: r.timestamp() };
    case 'deleteRange': {
      const n = r.uvarint();
      const keys: Buffer[] = [];
      for (let i = 0; i < n; i++) keys.push(r.bytes());
      return { kind, keys };
    }
    case 'scan':
    case 'reverseScan': {
      const n = r.uvarint();
      const rows: KeyValue[] = [];
      for (let i = 0; i < n; i++) rows.push({ key: r.bytes(), value: r.bytes() });
      return { kind, rows, resumeKey: readNullableBytes(r), resumeEndKey: readNullableBytes(r) };
    }
    case 'leaseInfo':
      return { kind, lease: readOpt(r, readLease) };
    case 'adminSplit':
      return { kind, left: readDescriptor(r), right: readDescriptor(r) };
    case 'subsume':
    case 'adminMerge':
    case 'adminChangeReplicas':
      return { kind, desc: readDescriptor(r) };
    default:
      return { kind: kind as EmptyResponse['kind'] };
  }
}

/** A batch's outcome: its response, or the KV error it failed with. */
export type BatchResult = { readonly ok: true; readonly response: BatchResponse } | { readonly ok: false; readonly error: CairnError };

export function encodeBatchResult(res: BatchResult): Buffer {
  w.reset();
  if (res.ok) {
    w.u8(0);
    w.timestamp(res.response.now);
    w.timestamp(res.response.timestamp);
    writeObserved(w, res.response.observedTimestamps);
    w.uvarint(res.response.responses.length);
    for (const p of res.response.responses) writeResponse(w, p);
  } else {
    w.u8(1);
    writeError(w, res.error);
  }
  return finish();
}

export function decodeBatchResult(buf: Uint8Array): BatchResult {
  const r = new BufReader(buf);
  const status = r.u8();
  let out: BatchResult;
  if (status === 0) {
    const now = r.timestamp();
    const timestamp = r.timestamp();
    const observedTimestamps = readObserved(r);
    const n = r.uvarint();
    const responses: Response[] = [];
    for (let i = 0; i < n; i++) responses.push(readResponse(r));
    out = { ok: true, response: observedTimestamps.length === 0 ? { now, timestamp, responses } : { now, timestamp, responses, observedTimestamps } };
  } else if (status === 1) {
    out = { ok: false, error: readError(r) };
  } else {
    bad(`unknown batch result status ${status}`);
  }
  r.expectEnd('batch result');
  return out;
}

// ---- errors ------------------------------------------------------------------------

const ERR_GENERIC = 0;
const ERR_NOT_LEASE_HOLDER = 1;
const ERR_RANGE_NOT_FOUND = 2;
const ERR_RANGE_KEY_MISMATCH = 3;
const ERR_AMBIGUOUS = 4;
const ERR_WRITE_INTENT = 5;
const ERR_WRITE_TOO_OLD = 6;
const ERR_CONDITION_FAILED = 7;
const ERR_UNCERTAINTY = 8;
const ERR_PROPOSAL_DROPPED = 9;
const ERR_STORE_STOPPED = 10;
const ERR_BEFORE_GC = 11;

function writeIntent(wr: BufWriter, i: Intent): void {
  wr.bytes(i.key);
  writeTxnMeta(wr, i.txn);
}

/** Writes a KV error; any CairnError not listed travels as its code/message/flags. */
export function writeError(wr: BufWriter, e: CairnError): void {
  if (e instanceof NotLeaseHolderError) {
    wr.u8(ERR_NOT_LEASE_HOLDER);
    wr.uvarint(e.rangeId);
    writeOpt(wr, e.lease, writeLease);
    writeOpt(wr, e.hint, writeReplica);
    wr.string(e.message);
  } else if (e instanceof RangeNotFoundError) {
    wr.u8(ERR_RANGE_NOT_FOUND);
    wr.uvarint(e.rangeId);
    wr.uvarint(e.storeId);
  } else if (e instanceof RangeKeyMismatchError) {
    wr.u8(ERR_RANGE_KEY_MISMATCH);
    wr.bytes(e.key);
    writeNullableBytes(wr, e.endKey);
    wr.uvarint(e.descriptors.length);
    for (const d of e.descriptors) writeDescriptor(wr, d);
  } else if (e instanceof AmbiguousResultError) {
    wr.u8(ERR_AMBIGUOUS);
    wr.string(e.message.replace(/^result is ambiguous: /, ''));
  } else if (e instanceof WriteIntentError) {
    wr.u8(ERR_WRITE_INTENT);
    wr.uvarint(e.intents.length);
    for (const i of e.intents) writeIntent(wr, i);
  } else if (e instanceof WriteTooOldError) {
    wr.u8(ERR_WRITE_TOO_OLD);
    wr.bytes(e.key);
    wr.timestamp(e.timestamp);
    wr.timestamp(e.actualTimestamp);
  } else if (e instanceof ConditionFailedError) {
    wr.u8(ERR_CONDITION_FAILED);
    wr.bytes(e.key);
    writeNullableBytes(wr, e.actual);
  } else if (e instanceof ReadWithinUncertaintyIntervalError) {
    wr.u8(ERR_UNCERTAINTY);
    wr.bytes(e.key);
    wr.timestamp(e.readTimestamp);
    wr.timestamp(e.valueTimestamp);
    wr.timestamp(e.uncertaintyLimit);
  } else if (e instanceof ProposalDroppedKvError) {
    wr.u8(ERR_PROPOSAL_DROPPED);
    wr.string(e.message);
  } else if (e instanceof StoreStoppedError) {
    wr.u8(ERR_STORE_STOPPED);
    wr.string(e.message);
  } else if (e instanceof BatchTimestampBeforeGCError) {
    wr.u8(ERR_BEFORE_GC);
    wr.uvarint(e.rangeId);
    wr.timestamp(e.timestamp);
    wr.timestamp(e.threshold);
  } else {
    wr.u8(ERR_GENERIC);
    wr.string(e.code);
    wr.string(e.message);
    wr.bool(e.retryable);
    wr.bool(e.ambiguous);
    wr.string(e.sqlState);
  }
}

/** A CairnError re-created from the wire: the same class for the kinds listed, else generic. */
class RemoteError extends CairnError {
  override name = 'CairnError';
  constructor(code: string, message: string, retryable: boolean, ambiguous: boolean, sqlState: string) {
    super(code, message, { retryable, ambiguous, sqlState });
  }
}

function withMessage<E extends CairnError>(e: E, message: string): E {
  Object.defineProperty(e, 'message', { value: message, enumerable: false, writable: true, configurable: true });
  return e;
}

export function readError(r: BufReader): CairnError {
  const tag = r.u8();
  switch (tag) {
    case ERR_NOT_LEASE_HOLDER:
      return withMessage(new NotLeaseHolderError(r.uvarint(), readOpt(r, readLease), readOpt(r, readReplica)), r.string());
    case ERR_RANGE_NOT_FOUND:
      return new RangeNotFoundError(r.uvarint(), r.uvarint());
    case ERR_RANGE_KEY_MISMATCH: {
      const key = r.bytes();
      const endKey = readNullableBytes(r);
      const n = r.uvarint();
      const descs: RangeDescriptor[] = [];
      for (let i = 0; i < n; i++) descs.push(readDescriptor(r));
      return new RangeKeyMismatchError(key, endKey, descs);
    }
    case ERR_AMBIGUOUS:
      return new AmbiguousResultError(r.string());
    case ERR_WRITE_INTENT: {
      const n = r.uvarint();
      const intents: Intent[] = [];
      for (let i = 0; i < n; i++) intents.push({ key: r.bytes(), txn: readTxnMeta(r) });
      return new WriteIntentError(intents);
    }
    case ERR_WRITE_TOO_OLD:
      return new WriteTooOldError(r.bytes(), r.timestamp(), r.timestamp());
    case ERR_CONDITION_FAILED:
      return new ConditionFailedError(r.bytes(), readNullableBytes(r));
    case ERR_UNCERTAINTY:
      return new ReadWithinUncertaintyIntervalError(r.bytes(), r.timestamp(), r.timestamp(), r.timestamp());
    case ERR_PROPOSAL_DROPPED:
      return withMessage(new ProposalDroppedKvError(0, ''), r.string());
    case ERR_STORE_STOPPED:
      return withMessage(new StoreStoppedError(0), r.string());
    case ERR_BEFORE_GC:
      return new BatchTimestampBeforeGCError(r.uvarint(), r.timestamp(), r.timestamp());
    case ERR_GENERIC:
      return new RemoteError(r.string(), r.string(), r.bool(), r.bool(), r.string());
    default:
      return bad(`unknown error tag ${tag}`);
  }
}

// ---- Raft messages -----------------------------------------------------------------

function writeIds(wr: BufWriter, ids: readonly number[]): void {
  wr.uvarint(ids.length);
  for (const id of ids) wr.uvarint(id);
}

function readIds(r: BufReader): number[] {
  const n = r.uvarint();
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(r.uvarint());
  return out;
}

export function writeConfState(wr: BufWriter, cs: ConfState): void {
  writeIds(wr, cs.voters);
  writeIds(wr, cs.learners);
  writeIds(wr, cs.votersOutgoing);
  writeIds(wr, cs.learnersNext);
  wr.bool(cs.autoLeave);
}

export function readConfState(r: BufReader): ConfState {
  return { voters: readIds(r), learners: readIds(r), votersOutgoing: readIds(r), learnersNext: readIds(r), autoLeave: r.bool() };
}

function writeSnapshot(wr: BufWriter, s: Snapshot): void {
  wr.bytes(s.data);
  wr.uvarint(s.metadata.index);
  wr.uvarint(s.metadata.term);
  writeConfState(wr, s.metadata.confState);
}

function readSnapshot(r: BufReader): Snapshot {
  const data = r.bytes();
  return { data, metadata: { index: r.uvarint(), term: r.uvarint(), confState: readConfState(r) } };
}

function writeRaftMessage(wr: BufWriter, m: Message): void {
  wr.u8(m.type);
  wr.uvarint(m.to);
  wr.uvarint(m.from);
  wr.uvarint(m.term);
  wr.uvarint(m.logTerm);
  wr.uvarint(m.index);
  wr.uvarint(m.entries.length);
  for (const e of m.entries) {
    wr.uvarint(e.term);
    wr.uvarint(e.index);
    wr.u8(e.type);
    wr.bytes(e.data);
  }
  wr.uvarint(m.commit);
  writeOpt(wr, m.snapshot, writeSnapshot);
  wr.bool(m.reject);
  wr.uvarint(m.rejectHint);
  writeOpt(wr, m.context, (x, v) => x.bytes(v));
}

function readRaftMessage(r: BufReader): Message {
  const type = r.u8();
  if (type > 18) bad(`unknown raft message type ${type}`);
  const to = r.uvarint();
  const from = r.uvarint();
  const term = r.uvarint();
  const logTerm = r.uvarint();
  const index = r.uvarint();
  const n = r.uvarint();
  const entries: Entry[] = [];
  for (let i = 0; i < n; i++) {
    const et = r.uvarint();
    const ei = r.uvarint();
    const ty = r.u8();
    if (ty > 1) bad(`unknown entry type ${ty}`);
    entries.push({ term: et, index: ei, type: ty, data: r.bytes() });
  }
  const commit = r.uvarint();
  const snapshot = readOpt(r, readSnapshot);
  const reject = r.bool();
  const rejectHint = r.uvarint();
  const context = readOpt(r, (x) => x.bytes());
  return { type, to, from, term, logTerm, index, entries, commit, snapshot, reject, rejectHint, context };
}

/** One Raft message of one range, addressed replica to replica. */
export interface RaftMessageRequest {
  readonly rangeId: number;
  readonly fromReplicaId: number;
  readonly toReplicaId: number;
  /** The leader tells the follower to stop ticking (quiescence); carried on a heartbeat. */
  readonly quiesce: boolean;
  readonly message: Message;
}

/** All the Raft messages of one Ready round from one store to another. */
export interface RaftMessageBatch {
  readonly fromNodeId: number;
  readonly fromStoreId: number;
  readonly toStoreId: number;
  readonly messages: readonly RaftMessageRequest[];
}

function writeRaftBatch(wr: BufWriter, b: RaftMessageBatch): void {
  wr.uvarint(b.fromNodeId);
  wr.uvarint(b.fromStoreId);
  wr.uvarint(b.toStoreId);
  wr.uvarint(b.messages.length);
  for (const m of b.messages) {
    wr.uvarint(m.rangeId);
    wr.uvarint(m.fromReplicaId);
    wr.uvarint(m.toReplicaId);
    wr.bool(m.quiesce);
    writeRaftMessage(wr, m.message);
  }
}

function readRaftBatch(r: BufReader): RaftMessageBatch {
  const fromNodeId = r.uvarint();
  const fromStoreId = r.uvarint();
  const toStoreId = r.uvarint();
  const n = r.uvarint();
  const messages: RaftMessageRequest[] = [];
  for (let i = 0; i < n; i++) {
    messages.push({ rangeId: r.uvarint(), fromReplicaId: r.uvarint(), toReplicaId: r.uvarint(), quiesce: r.bool(), message: readRaftMessage(r) });
  }
  return { fromNodeId, fromStoreId, toStoreId, messages };
}

export function encodeRaftMessageBatch(b: RaftMessageBatch): Buffer {
  w.reset();
  writeRaftBatch(w, b);
  return finish();
}

export function decodeRaftMessageBatch(buf: Uint8Array): RaftMessageBatch {
  const r = new BufReader(buf);
  const b = readRaftBatch(r);
  r.expectEnd('raft message batch');
  return b;
}

// ---- Raft commands -----------------------------------------------------------------

/** Replicated effects beyond the write batch, applied by every replica. */
export interface ReplicatedSideEffects {
  readonly newLease?: Lease;
  readonly truncatedState?: TruncatedState;
  readonly checksumId?: number;
  /**
   * A descriptor-changing trigger (split; later merge, replica change),
   * encoded and applied by split-trigger.ts on every replica in the same
   * apply batch as the command.
   */
  readonly trigger?: Buffer;
  /** GC (batcheval/cmd-gc.ts) or a merge raised the range's GC threshold to this; every replica adopts it on apply. */
  readonly gcThreshold?: Timestamp;
  /** With newLease from a transfer: what the outgoing holder served (see the header's design note). */
  readonly priorReadSummary?: Timestamp;
}

/** A proposal's payload: what every replica applies (proposer-evaluated). */
export interface RaftCommand {
  /** Identifies the proposal on its proposer (never 0). */
  readonly cmdId: number;
  /** The lease sequence it was evaluated under. */
  readonly leaseSeq: number;
  /** Applies only while the lease-applied index is below it (not for lease requests). */
  readonly maxLeaseIndex: number;
  /** A lease request/transfer: checked against prevLease instead of leaseSeq/MLI. */
  readonly isLeaseRequest: boolean;
  readonly prevLease: Lease | null;
  readonly repr: Buffer;
  readonly stats: MvccStats;
  readonly sideEffects: ReplicatedSideEffects;
}

export function encodeRaftCommand(c: RaftCommand): Buffer {
  w.reset();
  w.uvarint(c.cmdId);
  w.uvarint(c.leaseSeq);
  w.uvarint(c.maxLeaseIndex);
  const se = c.sideEffects;
  w.u8((c.isLeaseRequest ? 1 : 0) | (se.priorReadSummary !== undefined ? 2 : 0));
  writeOpt(w, c.prevLease, writeLease);
  if (se.priorReadSummary !== undefined) w.timestamp(se.priorReadSummary);
  w.bytes(c.repr);
  writeStats(w, c.stats);
  writeOpt(w, se.newLease, writeLease);
  writeOpt(w, se.truncatedState, (x, t) => {
    x.uvarint(t.index);
    x.uvarint(t.term);
  });
  writeOpt(w, se.checksumId, (x, v) => x.uvarint(v));
  writeOpt(w, se.trigger, (x, v) => x.bytes(v));
  // Trailing and optional (see the header): a command without it ends here.
  if (se.gcThreshold !== undefined) w.timestamp(se.gcThreshold);
  return finish();
}

export function decodeRaftCommand(buf: Uint8Array): RaftCommand {
  const r = new BufReader(buf);
  const cmdId = r.uvarint();
  const leaseSeq = r.uvarint();
  const maxLeaseIndex = r.uvarint();
  const flags = r.u8();
  if (flags > 3) bad(`unknown raft command flags ${flags}`);
  const prevLease = readOpt(r, readLease);
  const priorReadSummary = (flags & 2) !== 0 ? r.timestamp() : null;
  const repr = r.bytes();
  const stats = readStats(r);
  const newLease = readOpt(r, readLease);
  const truncatedState = readOpt(r, (x) => ({ index: x.uvarint(), term: x.uvarint() }));
  const checksumId = readOpt(r, (x) => x.uvarint());
  const trigger = readOpt(r, (x) => x.bytes());
  const gcThreshold = r.remaining > 0 ? r.timestamp() : null;
  r.expectEnd('raft command');
  const sideEffects: { -readonly [K in keyof ReplicatedSideEffects]: ReplicatedSideEffects[K] } = {};
  if (newLease !== null) sideEffects.newLease = newLease;
  if (truncatedState !== null) sideEffects.truncatedState = truncatedState;
  if (checksumId !== null) sideEffects.checksumId = checksumId;
  if (trigger !== null) sideEffects.trigger = trigger;
  if (gcThreshold !== null) sideEffects.gcThreshold = gcThreshold;
  if (priorReadSummary !== null) sideEffects.priorReadSummary = priorReadSummary;
  return { cmdId, leaseSeq, maxLeaseIndex, isLeaseRequest: (flags & 1) === 1, prevLease, repr, stats, sideEffects };
}

// ---- snapshot chunks ----------------------------------------------------------------

export interface SnapshotChunk {
  readonly rangeId: number;
  /** Unique per sending store. */
  readonly snapId: number;
  readonly fromNodeId: number;
  readonly toStoreId: number;
  /** Engine key/value pairs, in key order across chunks. */
  readonly kvs: readonly KeyValue[];
  /** The last chunk carries the MsgSnap to step. */
  readonly final: RaftMessageBatch | null;
}

export function encodeSnapshotChunk(c: SnapshotChunk): Buffer {
  w.reset();
  w.uvarint(c.rangeId);
  w.uvarint(c.snapId);
  w.uvarint(c.fromNodeId);
  w.uvarint(c.toStoreId);
  w.uvarint(c.kvs.length);
  for (const kv of c.kvs) {
    w.bytes(kv.key);
    w.bytes(kv.value);
  }
  writeOpt(w, c.final, writeRaftBatch);
  return finish();
}

export function decodeSnapshotChunk(buf: Uint8Array): SnapshotChunk {
  const r = new BufReader(buf);
  const rangeId = r.uvarint();
  const snapId = r.uvarint();
  const fromNodeId = r.uvarint();
  const toStoreId = r.uvarint();
  const n = r.uvarint();
  const kvs: KeyValue[] = [];
  for (let i = 0; i < n; i++) kvs.push({ key: r.bytes(), value: r.bytes() });
  const final = readOpt(r, readRaftBatch);
  r.expectEnd('snapshot chunk');
  return { rangeId, snapId, fromNodeId, toStoreId, kvs, final };
}

// ---- persisted state records ----------------------------------------------------------

function encodeWith<T>(f: (wr: BufWriter, v: T) => void, v: T): Buffer {
  w.reset();
  f(w, v);
  return finish();
}

function decodeWith<T>(f: (r: BufReader) => T, buf: Uint8Array, what: string): T {
  const r = new BufReader(buf);
  const v = f(r);
  r.expectEnd(what);
  return v;
}

export const encodeAppliedState = (s: RangeAppliedState): Buffer =>
  encodeWith((x, v: RangeAppliedState) => {
    x.uvarint(v.raftAppliedIndex);
    x.uvarint(v.raftAppliedTerm);
    x.uvarint(v.leaseAppliedIndex);
    writeStats(x, v.stats);
  }, s);
export const decodeAppliedState = (b: Uint8Array): RangeAppliedState =>
  decodeWith((r) => ({ raftAppliedIndex: r.uvarint(), raftAppliedTerm: r.uvarint(), leaseAppliedIndex: r.uvarint(), stats: readStats(r) }), b, 'applied state');

export const encodeHardState = (s: HardState): Buffer =>
  encodeWith((x, v: HardState) => {
    x.uvarint(v.term);
    x.uvarint(v.vote);
    x.uvarint(v.commit);
  }, s);
export const decodeHardState = (b: Uint8Array): HardState => decodeWith((r) => ({ term: r.uvarint(), vote: r.uvarint(), commit: r.uvarint() }), b, 'hard state');

export const encodeTruncatedState = (s: TruncatedState): Buffer =>
  encodeWith((x, v: TruncatedState) => {
    x.uvarint(v.index);
    x.uvarint(v.term);
  }, s);
export const decodeTruncatedState = (b: Uint8Array): TruncatedState => decodeWith((r) => ({ index: r.uvarint(), term: r.uvarint() }), b, 'truncated state');

export const encodeLease = (l: Lease): Buffer => encodeWith(writeLease, l);
export const decodeLease = (b: Uint8Array): Lease => decodeWith(readLease, b, 'lease');

export const encodeRangeDescriptor = (d: RangeDescriptor): Buffer => encodeWith(writeDescriptor, d);
export const decodeRangeDescriptor = (b: Uint8Array): RangeDescriptor => decodeWith(readDescriptor, b, 'range descriptor');

export const encodeStoreIdent = (s: StoreIdent): Buffer =>
  encodeWith((x, v: StoreIdent) => {
    x.string(v.clusterId);
    x.uvarint(v.nodeId);
    x.uvarint(v.storeId);
  }, s);
export const decodeStoreIdent = (b: Uint8Array): StoreIdent => decodeWith((r) => ({ clusterId: r.string(), nodeId: r.uvarint(), storeId: r.uvarint() }), b, 'store ident');

/** A raft entry as stored in the log (key: raftLogKey(rangeId, index)): term:uv type:u8 data:rest. */
export function encodeRaftEntry(e: Entry): Buffer {
  w.reset();
  w.uvarint(e.term);
  w.u8(e.type);
  w.raw(e.data);
  return finish();
}

export function decodeRaftEntry(index: number, b: Buffer): Entry {
  const r = new BufReader(b);
  const term = r.uvarint();
  const type = r.u8();
  if (type > 1) bad(`unknown entry type ${type}`);
  return { term, index, type, data: r.raw(r.remaining) };
}

/** The timestamp codec alone: tests, and the replicated GC threshold (keys.ts rangeGCThresholdKey). */
export function encodeTimestamp(t: Timestamp): Buffer {
  return encodeWith((x, v: Timestamp) => x.timestamp(v), t);
}

export const decodeTimestamp = (b: Uint8Array): Timestamp => decodeWith((r) => r.timestamp(), b, 'timestamp');
