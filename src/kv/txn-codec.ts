/**
 * Binary encoding of the transaction commands' requests and responses
 * (txn-api.ts). api-codec.ts writes the request tag and delegates the body
 * of these kinds here, so the layouts of the txn layer live beside it.
 *
 *   meta      = id:bytes epoch:uv writeTs:ts seq:uv key:bytes priority:uv hasMin:bool [minTs:ts]
 *   seqs      = n:uv (start:uv end:uv)×n
 *   status    = u8 (0 pending, 1 committed, 2 aborted)       (intent resolution)
 *   beginTxn          key:bytes
 *   heartbeatTxn      key:bytes now:ts
 *   endTxn            key:bytes commit:bool n:uv (key:bytes seq:uv)×n m:uv (key:bytes hasEnd:bool [end:bytes])×m
 *   pushTxn           key:bytes meta pusherId:bytes pusherPriority:uv type:u8 pushTo:ts now:ts force:bool n:uv dep:str×n
 *   queryTxn          key:bytes txnId:bytes
 *   queryIntent       key:bytes txnId:bytes epoch:uv seq:uv errorIfMissing:bool
 *   resolveIntent     key:bytes meta status seqs strict:bool
 *   resolveIntentRange key:bytes endKey:bytes meta status seqs
 *   recoverTxn        key:bytes meta implicitlyCommitted:bool
 *   refresh           key:bytes refreshFrom:ts
 *   refreshRange      key:bytes endKey:bytes refreshFrom:ts
 *   record response   hasRecord:bool [record (txn-record.ts)] pushed:bool onePhase:bool n:uv dep:str×n
 *   found response    found:uv                  (resolveIntentRange: then hasResume:bool [resumeKey:bytes])
 *
 * Ownership: src/kv (transaction layer).
 */
import type { BufReader, BufWriter } from '../rpc/codec.js';
import { assertNever } from '../util/assert.js';
import type { SeqRange, TxnMeta, TxnStatus } from '../../storage/mvcc.js';
import type { InFlightWrite, LockSpan, TxnRequest, TxnRequestKind, TxnResponse } from './txn-api.js';
import { readTxnRecord, writeTxnRecord } from './txn-record.js';

const RESOLVE_STATUS: readonly TxnStatus[] = ['pending', 'committed', 'aborted'];

function writeMeta(w: BufWriter, m: TxnMeta): void {
  w.bytes(m.id);
  w.uvarint(m.epoch);
  w.timestamp(m.writeTimestamp);
  w.uvarint(m.sequence);
  w.bytes(m.key);
  w.uvarint(m.priority ?? 0);
  w.bool(m.minTimestamp !== undefined);
  if (m.minTimestamp !== undefined) w.timestamp(m.minTimestamp);
}

function readMeta(r: BufReader): TxnMeta {
  const id = Buffer.from(r.bytes());
  const epoch = r.uvarint();
  const writeTimestamp = r.timestamp();
  const sequence = r.uvarint();
  const key = Buffer.from(r.bytes());
  const priority = r.uvarint();
  return r.bool() ? { id, epoch, writeTimestamp, sequence, key, priority, minTimestamp: r.timestamp() } : { id, epoch, writeTimestamp, sequence, key, priority };
}

function writeSeqs(w: BufWriter, s: readonly SeqRange[]): void {
  w.uvarint(s.length);
  for (const x of s) {
    w.uvarint(x.start);
    w.uvarint(x.end);
  }
}

function readSeqs(r: BufReader): SeqRange[] {
  const out: SeqRange[] = [];
  for (let n = r.uvarint(); n > 0; n--) out.push({ start: r.uvarint(), end: r.uvarint() });
  return out;
}

function readStatus(r: BufReader): TxnStatus {
  const s = RESOLVE_STATUS[r.u8()];
  if (s === undefined) throw new Error('kv: bad resolve status');
  return s;
}

export function writeTxnRequest(w: BufWriter, q: TxnRequest): void {
  w.bytes(q.key);
  switch (q.kind) {
    case 'beginTxn':
      return;
    case 'heartbeatTxn':
      w.timestamp(q.now);
      return;
    case 'endTxn':
      w.bool(q.commit);
      w.uvarint(q.inFlightWrites.length);
      for (const f of q.inFlightWrites) {
        w.bytes(f.key);
        w.uvarint(f.seq);
      }
      w.uvarint(q.lockSpans.length);
      for (const s of q.lockSpans) {
        w.bytes(s.key);
        w.bool(s.endKey !== null);
        if (s.endKey !== null) w.bytes(s.endKey);
      }
      return;
    case 'pushTxn':
      writeMeta(w, q.pushee);
      w.bytes(q.pusherId);
      w.uvarint(q.pusherPriority);
      w.u8(q.pushType === 'abort' ? 0 : 1);
      w.timestamp(q.pushTo);
      w.timestamp(q.now);
      w.bool(q.force);
      w.uvarint(q.dependents.length);
      for (const d of q.dependents) w.string(d);
      return;
    case 'queryTxn':
      w.bytes(q.txnId);
      return;
    case 'queryIntent':
      w.bytes(q.txnId);
      w.uvarint(q.epoch);
      w.uvarint(q.seq);
      w.bool(q.errorIfMissing);
      return;
    case 'resolveIntent':
      writeMeta(w, q.txn);
      w.u8(RESOLVE_STATUS.indexOf(q.status));
      writeSeqs(w, q.ignoredSeqNums);
      w.bool(q.strict);
      return;
    case 'resolveIntentRange':
      w.bytes(q.endKey);
      writeMeta(w, q.txn);
      w.u8(RESOLVE_STATUS.indexOf(q.status));
      writeSeqs(w, q.ignoredSeqNums);
      return;
    case 'recoverTxn':
      writeMeta(w, q.txn);
      w.bool(q.implicitlyCommitted);
      return;
    case 'refresh':
      w.timestamp(q.refreshFrom);
      return;
    case 'refreshRange':
      w.bytes(q.endKey);
      w.timestamp(q.refreshFrom);
      return;
    default:
      assertNever(q);
  }
}

export function readTxnRequest(r: BufReader, kind: TxnRequestKind): TxnRequest {
  const key = Buffer.from(r.bytes());
  switch (kind) {
    case 'beginTxn':
      return { kind, key };
    case 'heartbeatTxn':
      return { kind, key, now: r.timestamp() };
    case 'endTxn': {
      const commit = r.bool();
      const inFlightWrites: InFlightWrite[] = [];
      for (let n = r.uvarint(); n > 0; n--) inFlightWrites.push({ key: Buffer.from(r.bytes()), seq: r.uvarint() });
      const lockSpans: LockSpan[] = [];
      for (let n = r.uvarint(); n > 0; n--) {
        const k = Buffer.from(r.bytes());
        lockSpans.push({ key: k, endKey: r.bool() ? Buffer.from(r.bytes()) : null });
      }
      return { kind, key, commit, inFlightWrites, lockSpans };
    }
    case 'pushTxn': {
      const pushee = readMeta(r);
      const pusherId = Buffer.from(r.bytes());
      const pusherPriority = r.uvarint();
      const pushType = r.u8() === 0 ? 'abort' : 'timestamp';
      const pushTo = r.timestamp();
      const now = r.timestamp();
      const force = r.bool();
      const dependents: string[] = [];
      for (let n = r.uvarint(); n > 0; n--) dependents.push(r.string());
      return { kind, key, pushee, pusherId, pusherPriority, pushType, pushTo, now, force, dependents };
    }
    case 'queryTxn':
      return { kind, key, txnId: Buffer.from(r.bytes()) };
    case 'queryIntent':
      return { kind, key, txnId: Buffer.from(r.bytes()), epoch: r.uvarint(), seq: r.uvarint(), errorIfMissing: r.bool() };
    case 'resolveIntent':
      return { kind, key, txn: readMeta(r), status: readStatus(r), ignoredSeqNums: readSeqs(r), strict: r.bool() };
    case 'resolveIntentRange': {
      const endKey = Buffer.from(r.bytes());
      return { kind, key, endKey, txn: readMeta(r), status: readStatus(r), ignoredSeqNums: readSeqs(r) };
    }
    case 'recoverTxn':
      return { kind, key, txn: readMeta(r), implicitlyCommitted: r.bool() };
    case 'refresh':
      return { kind, key, refreshFrom: r.timestamp() };
    case 'refreshRange': {
      const endKey = Buffer.from(r.bytes());
      return { kind, key, endKey, refreshFrom: r.timestamp() };
    }
    default:
      return assertNever(kind);
  }
}

export function writeTxnResponse(w: BufWriter, p: TxnResponse): void {
  if ('found' in p) {
    w.uvarint(p.found);
    if (p.kind === 'resolveIntentRange') {
      const resume = p.resumeKey ?? null;
      w.bool(resume !== null);
      if (resume !== null) w.bytes(resume);
    }
    return;
  }
  w.bool(p.record !== null);
  if (p.record !== null) writeTxnRecord(w, p.record);
  w.bool(p.pushed);
  w.bool(p.onePhase);
  w.uvarint(p.dependents.length);
  for (const d of p.dependents) w.string(d);
}

const FOUND_KINDS = new Set<TxnRequestKind>(['queryIntent', 'resolveIntent', 'resolveIntentRange', 'refresh', 'refreshRange']);

export function readTxnResponse(r: BufReader, kind: TxnRequestKind): TxnResponse {
  if (kind === 'resolveIntentRange') {
    const found = r.uvarint();
    return { kind, found, resumeKey: r.bool() ? Buffer.from(r.bytes()) : null };
  }
  if (FOUND_KINDS.has(kind)) return { kind: kind as 'refresh', found: r.uvarint() };
  const record = r.bool() ? readTxnRecord(r) : null;
  const pushed = r.bool();
  const onePhase = r.bool();
  const dependents: string[] = [];
  for (let n = r.uvarint(); n > 0; n--) dependents.push(r.string());
  return { kind: kind as 'endTxn', record, pushed, onePhase, dependents };
}
