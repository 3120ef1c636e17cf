/**
 * MVCC over an Engine: versioned values with HLC timestamps, tombstones,
 * intents carrying transaction metadata, savepoint sequence history,
 * uncertainty, write-too-old, intent resolution, GC and incremental stats —
 * CockroachDB's storage/mvcc.go, reshaped around one *head* record per user
 * key (layout and rationale in mvcc-value.ts).
 *
 *     metadata engine key  "k"      -> head: intent? + newest committed version
 *                                      (its value inline, or its length when the
 *                                      value is out of line) + index of the next
 *                                      ≤ 16 older versions + summary of the rest
 *     version engine keys  "k"/ts   -> committed versions, newest first: an
 *                                      out-of-line newest one, then older ones
 *
 * Read cost: a point read at or above the newest version is ONE getSync when
 * its value is inline, two getSyncs of adjacent keys when it is out of line
 * (the second finds its block cached); a read of an indexed older version is
 * one getSync more; only a read below the index (older than the key's newest
 * 17 versions) seeks an iterator. Scans iterate the span in chunks (one await
 * per chunk), decode only the heads, take an out-of-line newest value from the
 * entry next to its head, and fetch an older version by getSync (or, below
 * the index, one seek) when the read needs one. A forward scan seeks past a
 * key whose head counts many versions beyond the chunk (scanSeekVersions),
 * and sizes a limited scan's first chunk by the entries per head recent
 * scans met (one nextv per scan when older versions sit between heads).
 *
 * Write path: every write reads the head (getSync through the batch), plans
 * the new head as a pure function (planWrite / planResolve / planGc — so a
 * failed check leaves the batch untouched), then writes the head; a new value
 * longer than the inline value limit is written once at its own version key,
 * and an inline committed version displaced by a newer one is written at its
 * version key (an out-of-line one already is: displacing it writes nothing).
 * Why (issue 2): LevelDB's compaction cost follows the bytes written, and an
 * inline value is written twice over its life (mvcc-value.ts has the numbers).
 *
 * Conventions (CockroachDB semantics unless noted):
 *   - Reads at `ts` see the newest committed version ≤ ts. A committed version
 *     in (ts, uncertaintyLimit] raises ReadWithinUncertaintyIntervalError.
 *     Another transaction's intent at ≤ max(ts, uncertaintyLimit) is a
 *     conflict: WriteIntentError (all intents met by a scan), or, with
 *     `inconsistent`, the intents are returned and the read sees below them.
 *   - A transaction reads its own intent (at any timestamp) as of its current
 *     sequence number, skipping writes whose seq lies in ignoredSeqNums;
 *     intents of an older epoch of the same transaction are ignored.
 *   - Writes at ts fail with WriteTooOldError when a committed version at
 *     ≥ ts exists; the error carries the timestamp to retry above. Another
 *     transaction's intent fails the write with WriteIntentError. A
 *     transaction rewriting its intent appends (seq, value) to the intent's
 *     history; a replay of an existing seq with the same value is a no-op.
 *   - Non-transactional writes write committed versions directly.
 *   - Stats: every write op takes an optional MvccStats into which it adds its
 *     delta (pass emptyStats() to get the delta of one op).
 *
 * Writes, resolution and mvccGetSync are synchronous; what may iterate is
 * async (mvccGet — only below the index —, scans, delete-range, ranged
 * resolve, GC, prefetch). None does I/O beyond its Reader / ReadWriter; none
 * reads a clock.
 *
 * API (rw: a WriteBatch from engine.newBatch(); r: an engine, snapshot or batch):
 *   mvccGetSync(r, key, ts, {txn?, uncertaintyLimit?, inconsistent?, tombstones?})
 *   mvccGet(r, key, ts, {…})                                                async
 *   mvccScan(r, start, end, ts, {…, reverse?, maxKeys?, targetBytes?})      async
 *   mvccPut / mvccDelete(rw, key, ts, [value,] {txn?, stats?})
 *   mvccConditionalPut(rw, key, ts, value|null, expected|null, {txn?, stats?, allowIfDoesNotExist?})
 *   mvccDeleteRange(rw, start, end, ts, {txn?, stats?, max?})               async
 *   mvccResolveIntent(rw, key, lockUpdate, stats?)
 *   mvccResolveIntentRange(rw, start, end, lockUpdate, {max?, stats?})      async
 *   mvccGarbageCollect(rw, keys, threshold, stats?)                          async
 *   mvccGarbageCollectRange(rw, start, end, threshold, stats?)              async
 *   mvccGcCandidates(r, start, end, threshold, max?) / mvccHeadNeedsGc      async / sync
 *   mvccPrefetch(batch, keys)                                               async
 *   computeStats(r, start, end)                                             async
 *   setInlineValueLimit(n), setHistoryIndexLimit(n), setScanSeekThreshold(n) knobs (tests, benchmarks)
 * Errors: WriteTooOldError, WriteIntentError, ReadWithinUncertaintyIntervalError,
 * ConditionFailedError, HistoryNotIndexedError (mvcc.*), CorruptionError
 * (storage.corruption).
 */
import { assert } from '../src/util/assert.js';
import { CairnError, CorruptionError } from '../src/util/errors.js';
import { formatTimestamp, tsEqual, tsLess, tsLessEq, tsMax, tsNext, type Timestamp } from '../src/util/hlc.js';
import type { Entry, ReadWriter, Reader, WriteBatch } from './engine.js';
import { decodeMvccKey, encodeMvccKey, mvccKeyHistoryEnd, mvccKeyPrefixLen, mvccKeyTs, mvccUserKey, mvccVersionKey } from './mvcc-key.js';
import { addHeadStats, type MvccStats } from './mvcc-stats.js';
import { decodeHead, decodeVersion, encodeHead, encodeVersion, prettyEngineKey, prettyKey, versionLen, type CommittedVersion, type Head, type HeadVersion, type HistoryEntry, type HistoryTail, type IntentWrite, type TxnMeta } from './mvcc-value.js';

export { initStorage, type TxnMeta, type Head } from './mvcc-value.js';
export { computeStats, emptyStats, addStats, type MvccStats } from './mvcc-stats.js';

/** An inclusive range of ignored sequence numbers (a rolled-back savepoint). */
export interface SeqRange {
  readonly start: number;
  readonly end: number;
}

/** A transaction as MVCC operations see it: its metadata plus rolled-back savepoints. */
export interface Txn extends TxnMeta {
  readonly ignoredSeqNums?: readonly SeqRange[];
}

/** An intent met by a read or write, for the concurrency layer. */
export interface Intent {
  readonly key: Buffer;
  readonly txn: TxnMeta;
}

export interface MvccKeyValue {
  readonly key: Buffer;
  /** null: a tombstone (only returned with `tombstones`). */
  readonly value: Buffer | null;
  readonly ts: Timestamp;
}

// --- errors ----------------------------------------------------------------

export class WriteTooOldError extends CairnError {
  override name = 'WriteTooOldError';
  constructor(
    readonly key: Buffer,
    readonly timestamp: Timestamp,
    /** The lowest timestamp a retry may write at. */
    readonly actualTimestamp: Timestamp,
  ) {
    super('mvcc.write_too_old', `mvcc: write too old: write at ${formatTimestamp(timestamp)} on ${prettyKey(key)} too old; must write at or above ${formatTimestamp(actualTimestamp)}`, { retryable: true, sqlState: '40001' });
  }
}

export class WriteIntentError extends CairnError {
  override name = 'WriteIntentError';
  constructor(readonly intents: readonly Intent[]) {
    const named = intents.slice(0, 5).map((i) => prettyKey(i.key)).join(', ');
    super('mvcc.write_intent', `mvcc: conflicting intents on ${named}${intents.length > 5 ? ` and ${intents.length - 5} more` : ''}`, { sqlState: '40001' });
  }
}

export class ReadWithinUncertaintyIntervalError extends CairnError {
  override name = 'ReadWithinUncertaintyIntervalError';
  constructor(
    readonly key: Buffer,
    readonly readTimestamp: Timestamp,
    readonly valueTimestamp: Timestamp,
    readonly uncertaintyLimit: Timestamp,
  ) {
    super(
      'mvcc.read_within_uncertainty_interval',
      `mvcc: read at time ${formatTimestamp(readTimestamp)} encountered previous write with future timestamp ${formatTimestamp(valueTimestamp)} within uncertainty interval ending at ${formatTimestamp(uncertaintyLimit)} on ${prettyKey(key)}`,
      { retryable: true, sqlState: '40001' },
    );
  }
}

export class ConditionFailedError extends CairnError {
  override name = 'ConditionFailedError';
  constructor(
    readonly key: Buffer,
    /** The value found; null when absent. */
    readonly actual: Buffer | null,
  ) {
    super('mvcc.condition_failed', `mvcc: unexpected value on ${prettyKey(key)}: ${actual === null ? 'absent' : prettyKey(actual)}`, { sqlState: '23000' });
  }
}

function epochRegression(key: Buffer, intentEpoch: number, txnEpoch: number): CairnError {
  return new CairnError('mvcc.epoch_regression', `mvcc: intent on ${prettyKey(key)} has epoch ${intentEpoch}, above the transaction's epoch ${txnEpoch}`);
}

// --- head plumbing ---------------------------------------------------------

function loadHead(r: Reader, metaKey: Buffer): Head | null {
  const raw = r.getSync(metaKey);
  return raw === undefined ? null : decodeHead(metaKey, raw);
}

/** A planned change to one key: the new head and the version keys to write / delete. */
interface Plan {
  readonly head: Head | null;
  /**
   * Versions to write at their version keys: an inline version displaced
   * from the head into the history, and a new out-of-line newest version.
   */
  readonly putVersions?: readonly CommittedVersion[];
  readonly deleteVersions?: readonly Timestamp[];
}

function applyPlan(rw: ReadWriter, key: Buffer, metaKey: Buffer, old: Head | null, plan: Plan, stats?: MvccStats): void {
  if (plan.putVersions !== undefined) {
    for (const v of plan.putVersions) {
      const vk = mvccVersionKey(metaKey, v.ts);
      rw.put(vk, encodeVersion(vk, v.value));
    }
  }
  if (plan.deleteVersions !== undefined) for (const t of plan.deleteVersions) rw.delete(mvccVersionKey(metaKey, t));
  if (plan.head === null) rw.delete(metaKey);
  else rw.put(metaKey, encodeHead(metaKey, plan.head));
  if (stats !== undefined) {
    addHeadStats(stats, metaKey.length, old, -1);
    addHeadStats(stats, metaKey.length, plan.head, 1);
  }
}

function historyEntry(c: HeadVersion): HistoryEntry {
  return { ts: c.ts, len: versionLen(c) };
}

/**
 * See setInlineValueLimit. Measured (bench/storage.ts): an inline overwrite
 * costs ~49 µs more CPU per KB of value (compaction of the twice-written
 * bytes), an out-of-line read one more cached getSync (~4 µs). Above 4 KiB
 * out of line wins for any mix with more than ~2% writes; at 1 KB it loses
 * for read-mostly mixes (below ~8% writes) and costs the point-get and scan
 * benchmarks a quarter of their rate, so rows up to 4 KiB stay one getSync.
 */
export const DEFAULT_INLINE_VALUE_LIMIT = 4096;

let inlineValueLimit = DEFAULT_INLINE_VALUE_LIMIT;

/**
 * Values longer than this many bytes are written out of line, once, at their
 * version key (mvcc-value.ts, "Inline or out of line"); shorter ones (and
 * tombstones) stay inline in the head. Default DEFAULT_INLINE_VALUE_LIMIT.
 * A knob for tests and benchmarks; it affects only versions written
 * afterwards — every head is read correctly whichever way it was written.
 */
export function setInlineValueLimit(n: number): void {
  assert(n >= 0 && (Number.isInteger(n) || n === Infinity), 'mvcc: the inline value limit is a non-negative integer or Infinity');
  inlineValueLimit = n;
}

/**
 * A new newest committed version as its head holds it, and the versions the
 * change writes at version keys: the displaced inline version `old` (an
 * out-of-line one is already stored) and, when the new value goes out of
 * line, the new version itself.
 */
function placeNewest(ts: Timestamp, value: Buffer | null, old: HeadVersion | null): { committed: HeadVersion; putVersions: CommittedVersion[] } {
  const putVersions: CommittedVersion[] = [];
  if (old !== null && old.value !== undefined) putVersions.push(old);
  if (value === null || value.length <= inlineValueLimit) return { committed: { ts, value }, putVersions };
  putVersions.push({ ts, value });
  return { committed: { ts, value: undefined, len: value.length }, putVersions };
}

/** Reads the stored version of `key` at `ts` that an index or head says is `len` bytes (-1: tombstone). */
function readVersion(r: Reader, key: Buffer, ts: Timestamp, len: number): Buffer | null {
  const vk = encodeMvccKey(key, ts);
  const raw = r.getSync(vk);
  if (raw === undefined) throw new CorruptionError(`storage: MVCC version ${prettyEngineKey(vk)} named by its head is missing`);
  const value = decodeVersion(vk, raw);
  if ((value === null ? -1 : value.length) !== len) throw new CorruptionError(`storage: MVCC version ${prettyEngineKey(vk)} does not match its head's index`);
  return value;
}

/**
 * The value of a head's newest committed version: inline, or `stored` (an
 * out-of-line value a scan already read, checked by forEachHead), or one
 * getSync of its version key.
 */
function committedValue(r: Reader, key: Buffer, c: HeadVersion, stored?: Buffer): Buffer | null {
  if (c.value !== undefined) return c.value;
  return stored !== undefined ? stored : readVersion(r, key, c.ts, c.len);
}

let historyIndexLimit = 16;

/**
 * How many older versions a head indexes (default 16); versions below the
 * index form the head's tail. A knob for tests, which set it low so that
 * tails occur; changing it affects only heads written afterwards.
 */
export function setHistoryIndexLimit(n: number): void {
  assert(Number.isInteger(n) && n >= 1, 'mvcc: the history index limit is a positive integer');
  historyIndexLimit = n;
}

/** `tail` with the versions history[from..] folded into it (null when nothing is folded into a null tail). */
function foldIntoTail(history: readonly HistoryEntry[], from: number, tail: HistoryTail | null): HistoryTail | null {
  if (from >= history.length) return tail;
  let count = tail?.count ?? 0;
  let valBytes = tail?.valBytes ?? 0;
  for (let i = from; i < history.length; i++) {
    count++;
    valBytes += Math.max(0, (history[i] as HistoryEntry).len);
  }
  return { count, valBytes };
}

/** Caps an index of older versions, folding the overflow into the tail summary. */
function capHistory(history: readonly HistoryEntry[], tail: HistoryTail | null): { history: readonly HistoryEntry[]; tail: HistoryTail | null } {
  if (history.length <= historyIndexLimit) return { history, tail };
  return { history: history.slice(0, historyIndexLimit), tail: foldIntoTail(history, historyIndexLimit, tail) };
}

/**
 * The history after displacing committed version `c` (if any) into it: one
 * new index array, already capped (a hot key's head sits at the cap, and the
 * overwrite path built the uncapped index and then sliced it).
 */
function pushHistory(head: Head | null, c: HeadVersion | null): { history: readonly HistoryEntry[]; tail: HistoryTail | null } {
  const history = head?.history ?? [];
  const tail = head?.tail ?? null;
  if (c === null) return { history, tail };
  const keep = Math.min(history.length, historyIndexLimit - 1);
  const out = new Array<HistoryEntry>(keep + 1);
  out[0] = historyEntry(c);
  for (let i = 0; i < keep; i++) out[i + 1] = history[i] as HistoryEntry;
  return { history: out, tail: foldIntoTail(history, keep, tail) };
}

/**
 * Every older version of `key` as stored (index and tail), newest first, read
 * with one iterator; checked against the head's index and tail summary.
 */
async function loadFullHistory(r: Reader, key: Buffer, head: Head): Promise<HistoryEntry[]> {
  const it = r.iterator({ gte: keyNext(encodeMvccKey(key)), lt: mvccKeyHistoryEnd(key) });
  const out: HistoryEntry[] = [];
  // An out-of-line newest version is stored first; it is the head's, not history.
  let skip = head.committed !== null && head.committed.value === undefined ? 1 : 0;
  try {
    for (;;) {
      const rows = await it.nextBatch(256);
      if (rows.length === 0) break;
      for (const { key: vk, value } of rows) {
        const v = decodeVersion(vk, value);
        if (skip > 0) {
          skip--;
          continue;
        }
        out.push({ ts: decodeMvccKey(vk).ts as Timestamp, len: v === null ? -1 : v.length });
      }
    }
  } finally {
    await it.close();
  }
  const want = head.history.length + (head.tail?.count ?? 0);
  if (out.length !== want) throw new CorruptionError(`storage: ${prettyKey(key)} has ${out.length} stored versions below its head, which accounts for ${want}`);
  return out;
}

function isIgnored(seq: number, ignored: readonly SeqRange[] | undefined): boolean {
  if (ignored === undefined) return false;
  for (const r of ignored) if (seq >= r.start && seq <= r.end) return true;
  return false;
}

/** The latest write with seq ≤ `seq` that is not ignored. */
function visibleWrite(writes: readonly IntentWrite[], seq: number, ignored: readonly SeqRange[] | undefined): IntentWrite | undefined {
  for (let i = writes.length - 1; i >= 0; i--) {
    const w = writes[i] as IntentWrite;
    if (w.seq <= seq && !isIgnored(w.seq, ignored)) return w;
  }
  return undefined;
}

function valuesEqual(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b);
}

function toMeta(txn: Txn, writeTimestamp: Timestamp): TxnMeta {
  const m: { -readonly [K in keyof TxnMeta]: TxnMeta[K] } = { id: txn.id, epoch: txn.epoch, writeTimestamp, sequence: txn.sequence, key: txn.key };
  if (txn.minTimestamp !== undefined) m.minTimestamp = txn.minTimestamp;
  if (txn.priority !== undefined) m.priority = txn.priority;
  return m;
}

// --- reads -----------------------------------------------------------------

export interface MvccReadOptions {
  /** The reading transaction: sees its own intents as of its sequence number. */
  readonly txn?: Txn;
  /** Values in (ts, uncertaintyLimit] raise ReadWithinUncertaintyIntervalError. */
  readonly uncertaintyLimit?: Timestamp;
  /** Return conflicting intents instead of throwing WriteIntentError; read below them. */
  readonly inconsistent?: boolean;
  /** Return tombstones (value null) instead of skipping them. */
  readonly tombstones?: boolean;
}

export interface MvccGetResult {
  readonly value: MvccKeyValue | null;
  /** A conflicting intent (only with `inconsistent`). */
  readonly intent: Intent | null;
}

/** The read's answer lies below the head's index: it needs readTail. */
const NEEDS_TAIL = Symbol('needs-tail');

interface ReadOutcome {
  kv: MvccKeyValue | null | typeof NEEDS_TAIL;
  intent: Intent | null;
}

function readCommitted(r: Reader, key: Buffer, head: Head, ts: Timestamp, limit: Timestamp | undefined, stored?: Buffer): MvccKeyValue | null | typeof NEEDS_TAIL {
  const c = head.committed;
  if (c === null) return null;
  if (limit !== undefined && tsLess(ts, c.ts) && tsLess(ts, limit)) {
    let uncertain: Timestamp | null = null;
    if (tsLessEq(c.ts, limit)) uncertain = c.ts;
    else {
      for (const h of head.history) {
        if (tsLessEq(h.ts, ts)) break;
        if (tsLessEq(h.ts, limit)) {
          uncertain = h.ts;
          break;
        }
      }
    }
    if (uncertain !== null) throw new ReadWithinUncertaintyIntervalError(key, ts, uncertain, limit);
  }
  if (tsLessEq(c.ts, ts)) return { key, value: committedValue(r, key, c, stored), ts: c.ts };
  for (const h of head.history) {
    if (!tsLessEq(h.ts, ts)) continue;
    return { key, value: readVersion(r, key, h.ts, h.len), ts: h.ts };
  }
  return head.tail === null ? null : NEEDS_TAIL;
}

/**
 * Reads below the head's index: every indexed version is above `ts` and none
 * is in the uncertainty window, so one seek from max(ts, limit) finds the
 * newest tail version at or below it — uncertain if above ts, else the answer.
 */
async function readTail(r: Reader, key: Buffer, ts: Timestamp, limit: Timestamp | undefined): Promise<MvccKeyValue | null> {
  const seekTs = limit !== undefined && tsLess(ts, limit) ? limit : ts;
  const it = r.iterator({ gte: encodeMvccKey(key, seekTs), lt: mvccKeyHistoryEnd(key) });
  try {
    const rows = await it.nextBatch(1);
    const row = rows[0];
    if (row === undefined) return null;
    const vts = decodeMvccKey(row.key).ts;
    assert(vts !== undefined, 'mvcc: a history seek met a metadata key');
    const value = decodeVersion(row.key, row.value);
    if (tsLess(ts, vts)) throw new ReadWithinUncertaintyIntervalError(key, ts, vts, seekTs);
    return { key, value, ts: vts };
  } finally {
    await it.close();
  }
}

function evalRead(r: Reader, key: Buffer, head: Head, ts: Timestamp, opts: MvccReadOptions, stored?: Buffer): ReadOutcome {
  const it = head.intent;
  let intent: Intent | null = null;
  if (it !== null) {
    const txn = opts.txn;
    if (txn !== undefined && it.txn.id.equals(txn.id)) {
      if (it.txn.epoch > txn.epoch) throw epochRegression(key, it.txn.epoch, txn.epoch);
      if (it.txn.epoch === txn.epoch) {
        const w = visibleWrite(it.writes, txn.sequence, txn.ignoredSeqNums);
        if (w !== undefined) return { kv: { key, value: w.value, ts: it.txn.writeTimestamp }, intent: null };
      }
    } else {
      const limit = opts.uncertaintyLimit !== undefined ? tsMax(ts, opts.uncertaintyLimit) : ts;
      if (tsLessEq(it.txn.writeTimestamp, limit)) {
        intent = { key, txn: it.txn };
        if (opts.inconsistent !== true) return { kv: null, intent };
      }
    }
  }
  return { kv: readCommitted(r, key, head, ts, opts.uncertaintyLimit, stored), intent };
}

/** A synchronous read needed a version below its head's index: use mvccGet. */
export class HistoryNotIndexedError extends CairnError {
  override name = 'HistoryNotIndexedError';
  constructor(
    readonly key: Buffer,
    readonly timestamp: Timestamp,
  ) {
    super('mvcc.history_not_indexed', `mvcc: a read of ${prettyKey(key)} at ${formatTimestamp(timestamp)} reaches below its head's version index and needs an iterator (use mvccGet)`);
  }
}

function getResult(o: { kv: MvccKeyValue | null; intent: Intent | null }, opts: MvccReadOptions): MvccGetResult {
  if (o.intent !== null && opts.inconsistent !== true) throw new WriteIntentError([o.intent]);
  const kv = o.kv !== null && o.kv.value === null && opts.tombstones !== true ? null : o.kv;
  return { value: kv, intent: o.intent };
}

/**
 * Reads `key` at `ts` synchronously: one getSync when the newest version
 * answers with an inline value, two when its value is out of line or an
 * indexed older version answers. A read below the index (older
 * than the head's newest `setHistoryIndexLimit` versions) throws
 * HistoryNotIndexedError: retry it with mvccGet.
 */
export function mvccGetSync(r: Reader, key: Buffer, ts: Timestamp, opts: MvccReadOptions = {}): MvccGetResult {
  const head = loadHead(r, encodeMvccKey(key));
  if (head === null) return { value: null, intent: null };
  const o = evalRead(r, key, head, ts, opts);
  if (o.kv === NEEDS_TAIL) throw new HistoryNotIndexedError(key, ts);
  return getResult({ kv: o.kv, intent: o.intent }, opts);
}

/** Reads `key` at `ts`; as mvccGetSync (no extra I/O) but also reads below the index. */
export async function mvccGet(r: Reader, key: Buffer, ts: Timestamp, opts: MvccReadOptions = {}): Promise<MvccGetResult> {
  const head = loadHead(r, encodeMvccKey(key));
  if (head === null) return { value: null, intent: null };
  const o = evalRead(r, key, head, ts, opts);
  const kv = o.kv === NEEDS_TAIL ? await readTail(r, key, ts, opts.uncertaintyLimit) : o.kv;
  return getResult({ kv, intent: o.intent }, opts);
}

export interface MvccScanOptions extends MvccReadOptions {
  readonly reverse?: boolean;
  /** Stop after this many rows (0 or absent: no limit). */
  readonly maxKeys?: number;
  /** Stop once the rows' key+value bytes reach this (the crossing row is included). */
  readonly targetBytes?: number;
}

export interface Span {
  readonly key: Buffer;
  readonly endKey: Buffer;
}

export interface MvccScanResult {
  readonly kvs: MvccKeyValue[];
  /** Conflicting intents (only with `inconsistent`; otherwise they are thrown). */
  readonly intents: Intent[];
  /** The part of the span not scanned because a limit was reached. */
  readonly resumeSpan: Span | null;
  readonly numBytes: number;
}

/** The smallest key after `k`. */
export function keyNext(k: Buffer): Buffer {
  const out = Buffer.allocUnsafe(k.length + 1);
  k.copy(out, 0);
  out[k.length] = 0;
  return out;
}

/**
 * Entries per nextv. Each chunk costs one trip through the libuv pool and
 * every entry read costs a copy, so a limited scan sizes its chunks from what
 * it still needs: the first asks for the rows wanted plus one (to find the
 * resume key) times the entries per head that recent limited scans met
 * (scanEntriesPerHead: older versions sit between heads), later ones scale
 * the rows still wanted by the entries per head seen so far. Unlimited scans
 * grow their chunks geometrically.
 *
 * Why the learned first chunk (session 8): once a store has overwrites, a
 * 100-row scan whose first chunk guessed one entry per head needed a second
 * nextv in every scan (measured: 2.09 nextv per scan after 30,000 overwrites
 * of 100,000 keys, 1.00 before), a second pool round trip that raw LevelDB's
 * nextv(100) never pays. With the estimate (and a 15 % margin once it is
 * above one) a scan is one round trip again; a store with one entry per head
 * keeps its exact first chunk.
 */
const FIRST_CHUNK = 64;
const MIN_CHUNK = 16;
const MAX_CHUNK = 1024;

/**
 * Entries per head met by recent limited scans (a moving average over scans
 * of at least 8 heads, in [1, 8]): sizes the first chunk of the next one.
 * Process-wide and advisory — it decides how many entries a nextv asks for,
 * never what a scan returns.
 */
let scanEntriesPerHead = 1;

/**
 * A forward scan that meets a head with more than this many of its versions
 * still ahead beyond the current chunk seeks its iterator to the key's
 * history end instead of reading them (CockroachDB's MVCC scanner seeks after
 * itersBeforeSeek steps; here the head *counts* the versions stored after it,
 * so the scan knows before reading them). The seek happens where the next
 * chunk would be read anyway (no extra round trip): classic-level repositions
 * its iterator synchronously (a few µs; the iterator keeps its view), while
 * each skipped entry would cost a 1 KB copy through the pool and the JS
 * thread (~1-2 µs), hence the default 16. An iterator without seek (a batch's
 * merging iterator) is reopened instead, only past REOPEN_FACTOR times as many
 * versions (creating one costs ~135 µs, DESIGN.md §4). Reverse scans meet the
 * versions before the head and read them.
 */
let scanSeekVersions = 16;
const REOPEN_FACTOR = 4;

/** See scanSeekVersions (default 16). A knob for tests, which set it low so seeks and reopens occur. */
export function setScanSeekThreshold(n: number): void {
  assert(Number.isInteger(n) && n >= 0, 'mvcc: the scan seek threshold is a non-negative integer');
  scanSeekVersions = n;
}

/** The versions stored after a head: its indexed history, its tail, and an out-of-line newest value. */
function storedVersionCount(head: Head): number {
  return head.history.length + (head.tail?.count ?? 0) + (head.committed !== null && head.committed.value === undefined ? 1 : 0);
}

/**
 * Visits every head in user keys [start, end) in order (descending with
 * `reverse`), in chunks. `fn` returns false to stop. Heads are decoded from
 * the chunk already read, so `fn` may write through a ReadWriter it shares.
 * `rowsWanted`, when given, says how many more heads the caller may still
 * need, to size chunks.
 *
 * A head whose newest value is out of line gets that value as `stored` when
 * the iterator yields it next to the head (the version right after it, or
 * right before it in reverse) with the timestamp and length the head names
 * and a valid checksum — so a scan reads it without a getSync. Otherwise
 * `stored` is undefined and a read falls back to the getSync, which reports
 * a missing or mismatched value as corruption.
 */
async function forEachHead(
  r: Reader,
  start: Buffer,
  end: Buffer,
  reverse: boolean,
  fn: (key: Buffer, metaKey: Buffer, head: Head, stored?: Buffer) => boolean | Promise<boolean>,
  rowsWanted?: () => number,
): Promise<void> {
  const lt = encodeMvccKey(end);
  let it = r.iterator({ gte: encodeMvccKey(start), lt, reverse });
  let entries = 0;
  let heads = 0;
  const nextChunk = (prev: number): number => {
    if (rowsWanted === undefined) return prev === 0 ? FIRST_CHUNK : Math.min(prev * 2, MAX_CHUNK);
    if (prev === 0) {
      const est = scanEntriesPerHead;
      return Math.max(MIN_CHUNK, Math.min(MAX_CHUNK, Math.ceil((rowsWanted() + 1) * (est > 1.02 ? est * 1.15 : 1))));
    }
    const perHead = heads === 0 ? 2 : entries / heads;
    return Math.max(MIN_CHUNK, Math.min(MAX_CHUNK, Math.ceil((rowsWanted() + 1) * perHead * 1.1)));
  };
  /** Forward: a head waiting for the entry after it. Reverse: the entry before the next head. */
  let pending: { ek: Buffer; plen: number; head: Head } | null = null;
  let prevVersion: Entry | null = null;
  /** Forward: where to reopen the iterator after this chunk (the history end of a key with many versions). */
  let reopenAt: Buffer | null = null;
  let reopenVersions = 0;
  const visit = (ek: Buffer, plen: number, head: Head, next: Entry | null): boolean | Promise<boolean> => {
    heads++;
    const c = head.committed;
    const stored = c !== null && c.value === undefined && next !== null ? storedNewest(ek, c, next) : undefined;
    return fn(mvccUserKey(ek, plen), ek, head, stored);
  };
  try {
    let chunk = nextChunk(0);
    for (;;) {
      const rows = await it.nextBatch(chunk);
      if (rows.length === 0) break;
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i] as Entry;
        entries++;
        const ek = row.key;
        const plen = mvccKeyPrefixLen(ek);
        let more: boolean | Promise<boolean> = true;
        if (pending !== null) {
          more = visit(pending.ek, pending.plen, pending.head, plen === ek.length ? null : row);
          pending = null;
          if (typeof more !== 'boolean') more = await more;
          if (!more) return;
        }
        if (plen !== ek.length) {
          prevVersion = row;
          continue;
        }
        const head = decodeHead(ek, row.value);
        // More than the threshold of this key's versions beyond the chunk: skip them by a reopen after it. Set
        // or cleared at every head, so a reopen never goes back before a head already visited (even if a corrupt
        // head over-counts).
        reopenAt = null;
        reopenVersions = storedVersionCount(head) - (rows.length - 1 - i);
        if (!reverse && reopenVersions > scanSeekVersions) {
          reopenAt = Buffer.from(ek);
          reopenAt[reopenAt.length - 1] = 0x02; // = mvccKeyHistoryEnd(user key): above all of its entries, below the next key's
        }
        if (!reverse && head.committed !== null && head.committed.value === undefined) {
          pending = { ek, plen, head };
          continue;
        }
        more = visit(ek, plen, head, reverse ? prevVersion : null);
        prevVersion = null;
        if (typeof more !== 'boolean') more = await more;
        if (!more) return;
      }
      if (reopenAt !== null) {
        // The rows after the head were its versions (skipped above); the rest of them are not read: a seek
        // where the engine's iterator offers one (same view, no new iterator), else a new iterator — only
        // for a history long enough to pay for its creation.
        if (it.seek !== undefined) it.seek(reopenAt);
        else if (reopenVersions > REOPEN_FACTOR * scanSeekVersions) {
          await it.close();
          it = r.iterator({ gte: reopenAt, lt, reverse: false });
        }
        reopenAt = null;
      }
      chunk = nextChunk(chunk);
    }
    if (pending !== null) await visit(pending.ek, pending.plen, pending.head, null);
  } finally {
    await it.close();
    if (rowsWanted !== undefined && heads >= 8) scanEntriesPerHead = Math.min(8, Math.max(1, scanEntriesPerHead + (entries / heads - scanEntriesPerHead) / 8));
  }
}

/** The out-of-line value `c` of the head at `metaKey` if `e` is its stored version, else undefined. */
function storedNewest(metaKey: Buffer, c: HeadVersion, e: Entry): Buffer | undefined {
  const k = e.key;
  const plen = mvccKeyPrefixLen(k);
  if (plen !== metaKey.length || k.compare(metaKey, 0, plen, 0, plen) !== 0) return undefined;
  const vts = mvccKeyTs(k, plen);
  if (vts === undefined || !tsEqual(vts, c.ts)) return undefined;
  const v = decodeVersion(k, e.value);
  return v !== null && v.length === versionLen(c) ? v : undefined;
}

/** Scans user keys [start, end) at `ts`. */
export async function mvccScan(r: Reader, start: Buffer, end: Buffer, ts: Timestamp, opts: MvccScanOptions = {}): Promise<MvccScanResult> {
  const kvs: MvccKeyValue[] = [];
  const intents: Intent[] = [];
  const reverse = opts.reverse === true;
  const maxKeys = opts.maxKeys ?? 0;
  const targetBytes = opts.targetBytes ?? 0;
  let numBytes = 0;
  let resumeSpan: Span | null = null;
  const accept = (key: Buffer, kv: MvccKeyValue | null): boolean => {
    if (kv === null || (kv.value === null && opts.tombstones !== true)) return true;
    if ((maxKeys > 0 && kvs.length >= maxKeys) || (targetBytes > 0 && numBytes >= targetBytes)) {
      resumeSpan = reverse ? { key: start, endKey: keyNext(key) } : { key, endKey: end };
      return false;
    }
    // kv is a fresh object per row whose key is a view into its own small engine-key buffer: kept as is, no copy.
    kvs.push(kv);
    numBytes += key.length + (kv.value?.length ?? 0);
    return true;
  };
  const onHead = (key: Buffer, _mk: Buffer, head: Head, stored?: Buffer): boolean | Promise<boolean> => {
    const o = evalRead(r, key, head, ts, opts, stored);
    if (o.intent !== null) intents.push(o.intent);
    if (o.kv !== NEEDS_TAIL) return accept(key, o.kv);
    return readTail(r, key, ts, opts.uncertaintyLimit).then((kv) => accept(key, kv));
  };
  await forEachHead(r, start, end, reverse, onHead, maxKeys > 0 ? () => Math.max(0, maxKeys - kvs.length) : undefined);
  if (intents.length > 0 && opts.inconsistent !== true) throw new WriteIntentError(intents);
  return { kvs, intents, resumeSpan, numBytes };
}

// --- writes ----------------------------------------------------------------

export interface MvccWriteOptions {
  /** Write an intent of this transaction (at `ts`) instead of a committed value. */
  readonly txn?: Txn;
  /** The op's stats delta is added here. */
  readonly stats?: MvccStats;
}

/** Plans a write of `value` (null: delete) at ts; null when it is an idempotent replay. */
function planWrite(key: Buffer, head: Head | null, ts: Timestamp, value: Buffer | null, txn: Txn | undefined): Plan | null {
  const it = head?.intent ?? null;
  let writeTs = ts;
  let writes: IntentWrite[] | undefined;
  if (it !== null) {
    if (txn === undefined || !it.txn.id.equals(txn.id)) throw new WriteIntentError([{ key, txn: it.txn }]);
    if (txn.epoch < it.txn.epoch) throw epochRegression(key, it.txn.epoch, txn.epoch);
    if (txn.epoch === it.txn.epoch) {
      const last = it.writes[it.writes.length - 1] as IntentWrite;
      if (txn.sequence <= last.seq) {
        const prior = it.writes.find((w) => w.seq === txn.sequence);
        if (prior !== undefined && valuesEqual(prior.value, value)) return null;
        throw new CairnError('mvcc.sequence_replay', `mvcc: transaction replayed sequence ${txn.sequence} on ${prettyKey(key)} with a different value`);
      }
      writes = [...it.writes, { seq: txn.sequence, value }];
    }
    writeTs = tsMax(ts, it.txn.writeTimestamp);
  }
  const c = head?.committed ?? null;
  if (c !== null && tsLessEq(writeTs, c.ts)) throw new WriteTooOldError(key, writeTs, tsNext(c.ts));
  if (txn !== undefined) {
    return { head: { committed: c, history: head?.history ?? [], tail: head?.tail ?? null, intent: { txn: toMeta(txn, writeTs), writes: writes ?? [{ seq: txn.sequence, value }] } } };
  }
  const placed = placeNewest(ts, value, c);
  return { head: { committed: placed.committed, ...pushHistory(head, c), intent: null }, putVersions: placed.putVersions };
}

function write(rw: ReadWriter, key: Buffer, ts: Timestamp, value: Buffer | null, opts: MvccWriteOptions): void {
  const metaKey = encodeMvccKey(key);
  const head = loadHead(rw, metaKey);
  const plan = planWrite(key, head, ts, value, opts.txn);
  if (plan !== null) applyPlan(rw, key, metaKey, head, plan, opts.stats);
}

/**
 * Reads the heads of `keys` ahead into `batch` with one getMany, so that the
 * writes evaluated next need no getSync each (see WriteBatch.prefetch).
 */
export function mvccPrefetch(batch: WriteBatch, keys: readonly Buffer[]): Promise<void> {
  return batch.prefetch(keys.map((k) => encodeMvccKey(k)));
}

/** Writes `value` at `ts` (an intent when `opts.txn`). */
export function mvccPut(rw: ReadWriter, key: Buffer, ts: Timestamp, value: Buffer, opts: MvccWriteOptions = {}): void {
  write(rw, key, ts, value, opts);
}

/** Writes a tombstone at `ts` (an intent when `opts.txn`). */
export function mvccDelete(rw: ReadWriter, key: Buffer, ts: Timestamp, opts: MvccWriteOptions = {}): void {
  write(rw, key, ts, null, opts);
}

export interface MvccConditionalPutOptions extends MvccWriteOptions {
  /** Also succeed when the key has no value, whatever `expected` says. */
  readonly allowIfDoesNotExist?: boolean;
}

/**
 * Writes `value` (null: delete) if the key's current value — the writer's own
 * intent as of its sequence, else the newest committed value — equals
 * `expected` (null: absent). Conflicts and write-too-old are checked first.
 */
export function mvccConditionalPut(rw: ReadWriter, key: Buffer, ts: Timestamp, value: Buffer | null, expected: Buffer | null, opts: MvccConditionalPutOptions = {}): void {
  const metaKey = encodeMvccKey(key);
  const head = loadHead(rw, metaKey);
  const plan = planWrite(key, head, ts, value, opts.txn);
  if (plan === null) return;
  const c = head?.committed ?? null;
  let actual: Buffer | null = c === null ? null : committedValue(rw, key, c);
  const it = head?.intent ?? null;
  const txn = opts.txn;
  if (it !== null && txn !== undefined && it.txn.epoch === txn.epoch) {
    const w = visibleWrite(it.writes, txn.sequence, txn.ignoredSeqNums);
    if (w !== undefined) actual = w.value;
  }
  if (!valuesEqual(actual, expected) && !(actual === null && opts.allowIfDoesNotExist === true)) throw new ConditionFailedError(key, actual);
  applyPlan(rw, key, metaKey, head, plan, opts.stats);
}

export interface MvccRangeResult {
  /** Keys affected, in order. */
  readonly keys: Buffer[];
  /** Where to continue when `max` stopped the operation. */
  readonly resumeSpan: Span | null;
}

/**
 * Deletes every key live at `ts` in [start, end) (as the writer sees it),
 * up to `max` keys. Conflicts raise WriteIntentError, newer versions
 * WriteTooOldError, before anything is written.
 */
export async function mvccDeleteRange(rw: ReadWriter, start: Buffer, end: Buffer, ts: Timestamp, opts: MvccWriteOptions & { readonly max?: number } = {}): Promise<MvccRangeResult> {
  const scanOpts: MvccScanOptions = opts.txn !== undefined ? { txn: opts.txn, maxKeys: opts.max ?? 0 } : { maxKeys: opts.max ?? 0 };
  const res = await mvccScan(rw, start, end, ts, scanOpts);
  const plans: [Buffer, Buffer, Head | null, Plan][] = [];
  for (const kv of res.kvs) {
    const metaKey = encodeMvccKey(kv.key);
    const head = loadHead(rw, metaKey);
    const plan = planWrite(kv.key, head, ts, null, opts.txn);
    if (plan !== null) plans.push([kv.key, metaKey, head, plan]);
  }
  for (const [key, metaKey, head, plan] of plans) applyPlan(rw, key, metaKey, head, plan, opts.stats);
  return { keys: res.kvs.map((kv) => kv.key), resumeSpan: res.resumeSpan };
}

// --- intent resolution -----------------------------------------------------

export type TxnStatus = 'pending' | 'committed' | 'aborted';

/** How to resolve a transaction's intents (CockroachDB's roachpb.LockUpdate). */
export interface LockUpdate {
  /** id and epoch identify the intents; writeTimestamp is the commit or push timestamp. */
  readonly txn: TxnMeta;
  readonly status: TxnStatus;
  readonly ignoredSeqNums?: readonly SeqRange[];
}

function planResolve(key: Buffer, head: Head, up: LockUpdate): Plan | null {
  const it = head.intent;
  if (it === null || !it.txn.id.equals(up.txn.id)) return null;
  const drop: Plan = { head: head.committed === null ? null : { ...head, intent: null } };
  if (up.status === 'aborted') return drop;
  if (it.txn.epoch > up.txn.epoch) {
    if (up.status === 'pending') return null;
    throw epochRegression(key, it.txn.epoch, up.txn.epoch);
  }
  // A committed transaction's intents from an earlier epoch were never re-written: they are not part of it.
  if (up.status === 'committed' && it.txn.epoch < up.txn.epoch) return drop;
  const ignored = up.ignoredSeqNums;
  const writes = ignored !== undefined && ignored.length > 0 ? it.writes.filter((w) => !isIgnored(w.seq, ignored)) : it.writes;
  if (writes.length === 0) return drop;
  if (up.status === 'pending') {
    const writeTimestamp = tsMax(it.txn.writeTimestamp, up.txn.writeTimestamp);
    return { head: { ...head, intent: { txn: { ...it.txn, writeTimestamp }, writes } } };
  }
  const commitTs = up.txn.writeTimestamp;
  const c = head.committed;
  if (c !== null && !tsLess(c.ts, commitTs)) assert(false, `mvcc: committing ${prettyKey(key)} at ${formatTimestamp(commitTs)} at or below its committed version ${formatTimestamp(c.ts)}`);
  const placed = placeNewest(commitTs, (writes[writes.length - 1] as IntentWrite).value, c);
  return { head: { committed: placed.committed, ...pushHistory(head, c), intent: null }, putVersions: placed.putVersions };
}

/** Resolves the intent on `key` if it belongs to `update.txn`; returns whether one was found. */
export function mvccResolveIntent(rw: ReadWriter, key: Buffer, update: LockUpdate, stats?: MvccStats): boolean {
  const metaKey = encodeMvccKey(key);
  const head = loadHead(rw, metaKey);
  if (head?.intent == null || !head.intent.txn.id.equals(update.txn.id)) return false;
  const plan = planResolve(key, head, update);
  if (plan !== null) applyPlan(rw, key, metaKey, head, plan, stats);
  return true;
}

/** Resolves the transaction's intents in [start, end), up to `max` of them. */
export async function mvccResolveIntentRange(rw: ReadWriter, start: Buffer, end: Buffer, update: LockUpdate, opts: { readonly max?: number; readonly stats?: MvccStats } = {}): Promise<MvccRangeResult> {
  const keys: Buffer[] = [];
  const max = opts.max ?? 0;
  let resumeSpan: Span | null = null;
  await forEachHead(rw, start, end, false, (key, metaKey, head) => {
    if (head.intent === null || !head.intent.txn.id.equals(update.txn.id)) return true;
    if (max > 0 && keys.length >= max) {
      resumeSpan = { key: Buffer.from(key), endKey: end };
      return false;
    }
    const k = Buffer.from(key);
    const plan = planResolve(k, head, update);
    if (plan !== null) applyPlan(rw, k, Buffer.from(metaKey), head, plan, opts.stats);
    keys.push(k);
    return true;
  });
  return { keys, resumeSpan };
}

// --- garbage collection ----------------------------------------------------

/**
 * Plans GC at `threshold` over a head whose `history` lists every older
 * version (its tail, if any, loaded): versions shadowed by a newer version at
 * or below the threshold go, and so does the newest version at or below the
 * threshold when it is a tombstone (reads at or above the threshold see
 * nothing either way). Intents are never touched. Reads at or above the
 * threshold return the same results before and after.
 */
function planGc(head: Head, full: readonly HistoryEntry[], threshold: Timestamp): Plan | null {
  const c = head.committed;
  if (c === null) return null;
  const all: HistoryEntry[] = [historyEntry(c), ...full];
  const idx = all.findIndex((v) => tsLessEq(v.ts, threshold));
  if (idx < 0) return null;
  const keep = (all[idx] as HistoryEntry).len < 0 ? idx : idx + 1;
  if (keep === all.length) return null;
  const deleteVersions = all.slice(Math.max(keep, 1)).map((v) => v.ts);
  // keep 0 drops the newest version too (a tombstone, so inline; an out-of-line one has a key to delete).
  if (keep === 0 && c.value === undefined) deleteVersions.push(c.ts);
  if (keep === 0) return { head: head.intent === null ? null : { committed: null, history: [], tail: null, intent: head.intent }, deleteVersions };
  return { head: { committed: c, ...capHistory(full.slice(0, keep - 1), null), intent: head.intent }, deleteVersions };
}

function versionCount(h: Head | null): number {
  return h === null ? 0 : (h.committed !== null ? 1 : 0) + h.history.length + (h.tail?.count ?? 0);
}

async function gcOne(rw: ReadWriter, key: Buffer, metaKey: Buffer, head: Head, threshold: Timestamp, stats?: MvccStats): Promise<number> {
  if (head.committed === null) return 0;
  const full = head.tail === null ? head.history : await loadFullHistory(rw, key, head);
  const plan = planGc(head, full, threshold);
  if (plan === null) return 0;
  applyPlan(rw, key, metaKey, head, plan, stats);
  return versionCount(head) - versionCount(plan.head);
}

/** GC of the given keys at `threshold`; returns the number of versions removed. */
export async function mvccGarbageCollect(rw: ReadWriter, keys: readonly Buffer[], threshold: Timestamp, stats?: MvccStats): Promise<number> {
  let removed = 0;
  for (const key of keys) {
    const metaKey = encodeMvccKey(key);
    const head = loadHead(rw, metaKey);
    if (head !== null) removed += await gcOne(rw, key, metaKey, head, threshold, stats);
  }
  return removed;
}

/** GC of every key in [start, end) at `threshold`; returns the number of versions removed. */
export async function mvccGarbageCollectRange(rw: ReadWriter, start: Buffer, end: Buffer, threshold: Timestamp, stats?: MvccStats): Promise<number> {
  let removed = 0;
  await forEachHead(rw, start, end, false, async (key, metaKey, head) => {
    removed += await gcOne(rw, Buffer.from(key), Buffer.from(metaKey), head, threshold, stats);
    return true;
  });
  return removed;
}

/**
 * Whether GC at `threshold` may remove something from the key with this head
 * — decided from the head alone (no history read): exact when the head's
 * index is complete, a superset when the versions at or below the threshold
 * lie in its tail (their kinds are not in the head).
 */
export function mvccHeadNeedsGc(head: Head, threshold: Timestamp): boolean {
  const c = head.committed;
  if (c === null) return false;
  const tailCount = head.tail?.count ?? 0;
  if (tsLessEq(c.ts, threshold)) return versionLen(c) < 0 || head.history.length + tailCount > 0;
  const h = head.history;
  for (let i = 0; i < h.length; i++) {
    const e = h[i] as HistoryEntry;
    if (tsLessEq(e.ts, threshold)) return e.len < 0 || i + 1 < h.length || tailCount > 0;
  }
  return tailCount > 0;
}

/**
 * The GC queue's scan (gc-queue.ts): the user keys in [start, end) with
 * versions GC at `threshold` may remove (mvccHeadNeedsGc), in order, at most
 * `max` of them (0: all), and the key to resume from when `max` stopped it.
 * Reads heads only; writes nothing.
 */
export async function mvccGcCandidates(r: Reader, start: Buffer, end: Buffer, threshold: Timestamp, max = 0): Promise<{ keys: Buffer[]; resumeKey: Buffer | null }> {
  const keys: Buffer[] = [];
  let resumeKey: Buffer | null = null;
  await forEachHead(r, start, end, false, (key, _mk, head) => {
    if (!mvccHeadNeedsGc(head, threshold)) return true;
    if (max > 0 && keys.length >= max) {
      resumeKey = Buffer.from(key);
      return false;
    }
    keys.push(Buffer.from(key));
    return true;
  });
  return { keys, resumeKey };
}

// --- inspection ------------------------------------------------------------

/** The head of `key`, decoded (tests, debugging, the consistency checker). */
export function mvccLoadHead(r: Reader, key: Buffer): Head | null {
  return loadHead(r, encodeMvccKey(key));
}
