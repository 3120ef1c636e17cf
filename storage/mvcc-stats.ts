/**
 * MVCC statistics of a span (CockroachDB's enginepb.MVCCStats, simplified):
 * maintained incrementally by every MVCC write (each op adds its delta into a
 * caller-owned MvccStats) and recomputable from the engine by computeStats.
 * Tests assert incremental == recount after every random operation sequence.
 *
 * Definitions (one user key with a head; "versions" = the intent, the head's
 * committed version and the historical versions; tombstones count as versions
 * with 0 value bytes):
 *   keyCount    1 per user key
 *   keyBytes    metadata engine key length once, + 12 (timestamp suffix) per version
 *   valCount    number of versions
 *   valBytes    Σ value lengths of versions (the intent counts its provisional value)
 *   liveCount   1 if the newest version (the intent if any) is not a tombstone
 *   liveBytes   for a live key: metadata key length + 12 + its newest value length
 *   intentCount 1 per intent; intentBytes = 12 + provisional value length
 *
 * The incremental path derives a key's contribution from its head alone (the
 * head indexes its older versions with their lengths and summarises the rest
 * as the tail); the recount reads every engine entry — heads *and* version
 * values — so it checks the index and the tail summary too. A head whose
 * newest value is out of line counts that version itself; the recount checks
 * the version stored right after the head is that value (timestamp and
 * length) and counts it once.
 */
import { CorruptionError } from '../src/util/errors.js';
import { formatTimestamp, tsEqual, type Timestamp } from '../src/util/hlc.js';
import { decodeMvccKey, encodeMvccKey, mvccKeyPrefixLen } from './mvcc-key.js';
import { decodeHead, decodeVersion, prettyEngineKey, versionLen, type Head, type OutOfLineVersion } from './mvcc-value.js';
import type { Reader } from './engine.js';

export interface MvccStats {
  liveBytes: number;
  liveCount: number;
  keyBytes: number;
  keyCount: number;
  valBytes: number;
  valCount: number;
  intentBytes: number;
  intentCount: number;
}

export const TS_SUFFIX_BYTES = 12;

export function emptyStats(): MvccStats {
  return { liveBytes: 0, liveCount: 0, keyBytes: 0, keyCount: 0, valBytes: 0, valCount: 0, intentBytes: 0, intentCount: 0 };
}

const FIELDS = ['liveBytes', 'liveCount', 'keyBytes', 'keyCount', 'valBytes', 'valCount', 'intentBytes', 'intentCount'] as const;

/** into += sign × s */
export function addStats(into: MvccStats, s: Readonly<MvccStats>, sign = 1): void {
  for (const f of FIELDS) into[f] += sign * s[f];
}

const len = (v: Buffer | null): number => (v === null ? 0 : v.length);

/** Adds (sign 1) or removes (sign -1) the contribution of one key's head. */
export function addHeadStats(into: MvccStats, metaKeyLen: number, h: Head | null, sign: number): void {
  if (h === null) return;
  into.keyCount += sign;
  into.keyBytes += sign * metaKeyLen;
  const versions = (h.committed !== null ? 1 : 0) + h.history.length + (h.tail?.count ?? 0) + (h.intent !== null ? 1 : 0);
  into.valCount += sign * versions;
  into.keyBytes += sign * TS_SUFFIX_BYTES * versions;
  /** The newest version's value length, -1 for a tombstone or none. */
  let newest = h.committed !== null ? versionLen(h.committed) : -1;
  let vb = Math.max(0, newest) + (h.tail?.valBytes ?? 0);
  for (const e of h.history) if (e.len > 0) vb += e.len;
  if (h.intent !== null) {
    const v = (h.intent.writes[h.intent.writes.length - 1] as { value: Buffer | null }).value;
    newest = v === null ? -1 : v.length;
    vb += len(v);
    into.intentCount += sign;
    into.intentBytes += sign * (TS_SUFFIX_BYTES + len(v));
  }
  into.valBytes += sign * vb;
  if (newest >= 0) {
    into.liveCount += sign;
    into.liveBytes += sign * (metaKeyLen + TS_SUFFIX_BYTES + newest);
  }
}

/** Full recount over the user keys [start, end), reading every engine entry. */
export async function computeStats(reader: Reader, start: Buffer, end: Buffer): Promise<MvccStats> {
  const s = emptyStats();
  let outOfLine: { metaKey: Buffer; version: OutOfLineVersion } | null = null;
  const it = reader.iterator({ gte: encodeMvccKey(start), lt: encodeMvccKey(end) });
  try {
    for (;;) {
      const rows = await it.nextBatch(512);
      if (rows.length === 0) break;
      for (const { key, value } of rows) {
        const plen = mvccKeyPrefixLen(key);
        if (plen === key.length) {
          if (outOfLine !== null) throw missingOutOfLine(outOfLine);
          const h = decodeHead(key, value);
          addHeadStats(s, key.length, { committed: h.committed, history: [], tail: null, intent: h.intent }, 1);
          if (h.committed !== null && h.committed.value === undefined) outOfLine = { metaKey: key, version: h.committed };
          continue;
        }
        const v = decodeVersion(key, value);
        if (outOfLine !== null) {
          // The first version after a head with an out-of-line value is that
          // value, already counted from the head: check it, count it once.
          const ts = decodeMvccKey(key).ts as Timestamp;
          if (!key.subarray(0, plen).equals(outOfLine.metaKey) || !tsEqual(ts, outOfLine.version.ts) || len(v) !== outOfLine.version.len || v === null) throw missingOutOfLine(outOfLine);
          outOfLine = null;
          continue;
        }
        s.valCount++;
        s.keyBytes += TS_SUFFIX_BYTES;
        s.valBytes += len(v);
      }
    }
  } finally {
    await it.close();
  }
  if (outOfLine !== null) throw missingOutOfLine(outOfLine);
  return s;
}

function missingOutOfLine(o: { metaKey: Buffer; version: OutOfLineVersion }): CorruptionError {
  return new CorruptionError(`storage: the out-of-line value of ${prettyEngineKey(o.metaKey)} at ${formatTimestamp(o.version.ts)} (${o.version.len} bytes) is not the version stored after its head`);
}
