/**
 * The transaction record: its byte format and how commands read and write it.
 *
 * Where: keys.transactionKey(anchor, id) — range-local, so it lives on the
 * range that holds the anchor and moves with it on splits and merges. It is
 * stored as a committed MVCC value (non-transactional put) at a timestamp
 * above its previous version, so stats, checksums, snapshots and splits
 * treat it like any other range-local MVCC data; a deleted record is a
 * tombstone.
 *
 *   record = version:u8(=1) status:u8 id:bytes(16) key:bytes epoch:uv
 *            writeTs:ts minTs:ts priority:uv lastHeartbeat:ts
 *            nInFlight:uv (key:bytes seq:uv)×nInFlight
 *            nLocks:uv (key:bytes hasEnd:bool [endKey:bytes])×nLocks
 *            nIgnored:uv (start:uv end:uv)×nIgnored
 *   status: 0 PENDING, 1 STAGING, 2 COMMITTED, 3 ABORTED
 *   ts = wall:uv logical:uv (src/rpc BufWriter.timestamp)
 *
 * Invariants: COMMITTED and ABORTED are final (never rewritten to another
 * status); a STAGING record lists its in-flight writes, any other none.
 * Ownership: written only by the txn commands during evaluation.
 */
import { BufReader, BufWriter } from '../rpc/codec.js';
import { MAX_TIMESTAMP, tsMax, tsNext, type Timestamp } from '../util/hlc.js';
import { CorruptionError } from '../util/errors.js';
import { transactionKey } from '../../storage/keys.js';
import { mvccGetSync, mvccPut, type MvccStats } from '../../storage/mvcc.js';
import type { Reader, ReadWriter } from '../../storage/engine.js';
import type { TxnRecord, TxnRecordStatus } from './txn-api.js';

const STATUS: readonly TxnRecordStatus[] = ['pending', 'staging', 'committed', 'aborted'];

export function writeTxnRecord(w: BufWriter, r: TxnRecord): void {
  w.u8(1);
  w.u8(STATUS.indexOf(r.status));
  w.bytes(r.id);
  w.bytes(r.key);
  w.uvarint(r.epoch);
  w.timestamp(r.writeTimestamp);
  w.timestamp(r.minTimestamp);
  w.uvarint(r.priority);
  w.timestamp(r.lastHeartbeat);
  w.uvarint(r.inFlightWrites.length);
  for (const f of r.inFlightWrites) {
    w.bytes(f.key);
    w.uvarint(f.seq);
  }
  w.uvarint(r.lockSpans.length);
  for (const s of r.lockSpans) {
    w.bytes(s.key);
    w.bool(s.endKey !== null);
    if (s.endKey !== null) w.bytes(s.endKey);
  }
  w.uvarint(r.ignoredSeqNums.length);
  for (const s of r.ignoredSeqNums) {
    w.uvarint(s.start);
    w.uvarint(s.end);
  }
}

export function readTxnRecord(r: BufReader): TxnRecord {
  const v = r.u8();
  if (v !== 1) throw new CorruptionError(`kv: txn record version ${v}`);
  const status = STATUS[r.u8()];
  if (status === undefined) throw new CorruptionError('kv: txn record status');
  const id = Buffer.from(r.bytes());
  const key = Buffer.from(r.bytes());
  const epoch = r.uvarint();
  const writeTimestamp = r.timestamp();
  const minTimestamp = r.timestamp();
  const priority = r.uvarint();
  const lastHeartbeat = r.timestamp();
  const inFlightWrites = [];
  for (let n = r.uvarint(); n > 0; n--) inFlightWrites.push({ key: Buffer.from(r.bytes()), seq: r.uvarint() });
  const lockSpans = [];
  for (let n = r.uvarint(); n > 0; n--) {
    const k = Buffer.from(r.bytes());
    lockSpans.push({ key: k, endKey: r.bool() ? Buffer.from(r.bytes()) : null });
  }
  const ignoredSeqNums = [];
  for (let n = r.uvarint(); n > 0; n--) ignoredSeqNums.push({ start: r.uvarint(), end: r.uvarint() });
  return { id, key, epoch, status, writeTimestamp, minTimestamp, priority, lastHeartbeat, inFlightWrites, lockSpans, ignoredSeqNums };
}

export function encodeTxnRecord(rec: TxnRecord): Buffer {
  const w = new BufWriter(128);
  writeTxnRecord(w, rec);
  return w.copyOut();
}

export function decodeTxnRecord(buf: Uint8Array): TxnRecord {
  const r = new BufReader(buf);
  const rec = readTxnRecord(r);
  r.expectEnd('txn record');
  return rec;
}

/** The record of txn `id` anchored at `anchor`, with the timestamp of its stored version. */
export function loadTxnRecord(r: Reader, anchor: Buffer, id: Buffer): { record: TxnRecord | null; versionTs: Timestamp | null } {
  const res = mvccGetSync(r, transactionKey(anchor, id), MAX_TIMESTAMP, { tombstones: true });
  const v = res.value;
  if (v === null) return { record: null, versionTs: null };
  return { record: v.value === null ? null : decodeTxnRecord(v.value), versionTs: v.ts };
}

/** Writes the record as a new version above `versionTs` (its previous version) and `ts`. */
export function storeTxnRecord(rw: ReadWriter, rec: TxnRecord, ts: Timestamp, versionTs: Timestamp | null, stats: MvccStats): void {
  const at = versionTs === null ? ts : tsMax(ts, tsNext(versionTs));
  mvccPut(rw, transactionKey(rec.key, rec.id), at, encodeTxnRecord(rec), { stats });
}

/** Whether the record's coordinator stopped heartbeating it (no activity for expiryMicros). */
export function recordLastActive(rec: TxnRecord): Timestamp {
  return tsMax(rec.lastHeartbeat, rec.minTimestamp);
}

/** How long a record may go without a heartbeat before pushers may abort it (µs); settable by tests. */
export const txnLiveness = { expiryMicros: 2_000_000, heartbeatIntervalMs: 400 };
