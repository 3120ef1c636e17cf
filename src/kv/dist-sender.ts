/**
 * DistSender: the router between a KV client and the ranges (CockroachDB's
 * kvclient/kvcoord.DistSender), behind the `Sender` interface of
 * kv-client.ts (it replaces LeaseholderRouter).
 *
 *   send(ba) ──► divide by range boundaries (range-cache.ts; meta2 on a miss)
 *                 │ one range: the batch as it is
 *                 │ several, no limits: one part per range, sent IN PARALLEL,
 *                 │   span requests truncated to each range, results
 *                 │   concatenated in key order (reverse scans: descending)
 *                 │ several, a scan limit: ranges visited one after another
 *                 │   in the scan direction, stopping as soon as the limits
 *                 │   are met (the resume span then says where to continue)
 *                 ▼
 *               sendToReplicas(desc, part): cached leaseholder first, then the
 *               descriptor's voters, then learners
 *
 * Retries:
 *   NotLeaseHolder          → the lease holder it names (else its hint), cached
 *   RangeNotFound, a stopped store, a dropped proposal, an RPC never sent
 *                           → the next replica
 *   every replica failed    → evict the descriptor, back off (injected sleep),
 *                             look the range up again and re-divide; when
 *                             each only said NotLeaseHolder (a lease being
 *                             acquired or moved) the descriptor is kept
 *                             and only the lease hints changed
 *   RangeKeyMismatch        → evict, insert the descriptors the error carries
 *                             (the replica's own, and its store's range that
 *                             holds the key: a split's right half while meta2
 *                             still names the unsplit range),
 *                             re-divide the part (it may now span ranges);
 *                             unless the replica's descriptor is older than
 *                             ours (it lags): then the next replica
 *   ambiguous (AmbiguousResultError, an RPC lost or timed out after sending)
 *                           → the replica's cached lease is dropped, then:
 *                             read-only batch: the next replica (never
 *                               reported ambiguous: a read changes nothing);
 *                             transactional writes without EndTxn: the next
 *                               replica (idempotent by sequence number), but
 *                               if the range then fails, the error is
 *                               ambiguous (the first send may have applied);
 *                             anything else (a non-transactional write, a
 *                               commit): returned as ambiguous, not retried
 *
 * Unreachable replicas (CockroachDB's per-node circuit breakers): with a
 * `probe` injected (node.ts: an RPC ping on the system class), a call that
 * has not answered after probeAfterMs probes its node (found by one periodic
 * sweep of the outstanding calls every probeAfterMs/4, running only while
 * calls are outstanding — not a timer per call); if the probe fails
 * the call is abandoned (rpc.canceled, ambiguous: it counts as sent) and
 * the node's breaker opens. An open node is tried last and skipped (never
 * sent); a background probe every probeAfterMs closes the breaker when it
 * succeeds (it stops, closing it, once nobody asked for the node for
 * breakerMs); any answer from the node closes it too. So a partitioned or paused
 * leaseholder costs one probe delay per DistSender, not one RPC timeout per
 * request, and the other replicas get asked (and acquire the lease once it
 * expires).
 *
 *   send ──► n1 (cached lh) ... probeAfterMs ... ping n1 ✗ ──► abort, breaker n1 open
 *        ──► n2: NotLeaseHolder(n1) ─► n1 open: skip ─► n3 ... (lease expires: n2/n3 acquire)
 * A part still failing after maxAttempts re-divisions returns its last error.
 *
 * Consistency: a multi-range batch whose timestamp is zero is given one
 * timestamp (the injected clock's now) so that all its parts read one
 * snapshot. Non-transactional writes spanning ranges are applied per range
 * (no atomicity across ranges: that is the transaction layer's job).
 *
 * Ownership: one per client/node; it owns its RangeCache. I/O through the
 * injected NodeDialer; time through the injected sleep/now.
 */
import { CairnError } from '../util/errors.js';
import { ZERO_TIMESTAMP, compareTimestamps, type Timestamp } from '../util/hlc.js';
import { KEY_MAX, KEY_MIN, LOCAL_RANGE_ID_PREFIX, LOCAL_STORE_PREFIX, META2_MAX, addressOf, isLocal, meta2Key, meta2LookupKey } from '../../storage/keys.js';
import { compareBytes, hasPrefix } from '../../storage/encoding/bytes.js';
import {
  KvMethod,
  NotLeaseHolderError,
  RangeKeyMismatchError,
  type BatchRequest,
  type BatchResponse,
  type KeyValue,
  type ObservedTimestamp,
  type RangeDescriptor,
  type ReplicaDescriptor,
  type Request,
  type Response,
  type ScanResponse,
  isWriteRequest,
} from './api.js';
import { decodeRangeDescriptor } from './api-codec.js';
import { abandonedCallError } from '../rpc/errors.js';
import { FIRST_RANGE_ID } from './bootstrap.js';
import type { NodeDialer, Sender } from './kv-client.js';
import { RangeCache } from './range-cache.js';
import { mergeObservedTimestamps, observedTimestampsOf } from './uncertainty.js';

export interface DistSenderOptions {
  /** Node ids to try when nothing is known (to find the first range). */
  readonly nodes: () => readonly number[];
  /** Re-divisions of a failing part before giving up (default 60). */
  readonly maxAttempts?: number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Base backoff in ms (default 10; capped at 200). */
  readonly backoffMs?: number;
  /** The timestamp given to multi-range batches sent with a zero timestamp. */
  readonly now?: () => Timestamp;
  /** Meta2 records fetched per cache miss (default 16). */
  readonly prefetch?: number;
  /** Resolves iff the node answers (a short-timeout ping); enables the breakers (see the header). */
  readonly probe?: (nodeId: number) => Promise<void>;
  /** How long a call waits before probing its node, and between probes (default 1000 ms). */
  readonly probeAfterMs?: number;
  /** An open breaker nobody asked for during this long closes (default 2000 ms). */
  readonly breakerMs?: number;
  /** Monotonic ms for the breakers (default performance.now). */
  readonly nowMs?: () => number;
}

/** A call of sendOne under the breaker watchdog. */
interface WatchedCall {
  readonly nodeId: number;
  /** performance.now() ms at which the call probes its node; Infinity while a probe is out. */
  dueMs: number;
  abandon: ((e: unknown) => void) | null;
  done: boolean;
}

export interface DistSenderMetrics {
  batches: number;
  /** Batches that spanned more than one range. */
  multiRange: number;
  /** Parts sent to ranges (RPCs that reached a replica, retries included). */
  rpcs: number;
  notLeaseHolder: number;
  rangeKeyMismatch: number;
  /** Re-divisions after a failure. */
  retries: number;
  /** Calls abandoned because their node failed a probe. */
  abandoned: number;
  /** Replicas skipped because their breaker was open. */
  breakerSkips: number;
}

/** One range's share of a batch: the truncated requests and their indexes in the original. */
interface Part {
  readonly desc: RangeDescriptor;
  readonly requests: Request[];
  readonly index: number[];
}

type Span = { key: Buffer; endKey: Buffer | null };

/** The routing span of a request (addresses of local keys); null: no key. */
function spanOf(q: Request): Span | null {
  const k = (q as { key?: Buffer }).key;
  if (k === undefined) return null;
  if (hasPrefix(k, LOCAL_RANGE_ID_PREFIX) || hasPrefix(k, LOCAL_STORE_PREFIX)) return { key: KEY_MIN, endKey: null };
  if (isLocal(k)) return { key: addressOf(k), endKey: null }; // local span requests stay within their range
  const e = (q as { endKey?: Buffer }).endKey;
  return { key: k, endKey: e === undefined ? null : e };
}

function isScan(q: Request): q is Request & { kind: 'scan' | 'reverseScan' } {
  return q.kind === 'scan' || q.kind === 'reverseScan';
}

/** The request restricted to desc, or null when it does not touch it. */
function truncate(q: Request, s: Span | null, desc: RangeDescriptor): Request | null {
  if (s === null) return desc.rangeId === FIRST_RANGE_ID || desc.startKey.length === 0 ? q : null;
  if (s.endKey === null) return compareBytes(s.key, desc.startKey) >= 0 && compareBytes(s.key, desc.endKey) < 0 ? q : null;
  const key = compareBytes(s.key, desc.startKey) > 0 ? s.key : desc.startKey;
  const endKey = compareBytes(s.endKey, desc.endKey) < 0 ? s.endKey : desc.endKey;
  if (compareBytes(key, endKey) >= 0) return null;
  if (key === s.key && endKey === s.endKey) return q;
  return { ...(q as Request), key, endKey } as Request;
}

function isAmbiguous(e: unknown): boolean {
  return e instanceof CairnError && e.ambiguous;
}

/** How a batch may be retried on another replica after an ambiguous attempt (see the header). */
function retryAfterAmbiguous(ba: BatchRequest): 'read' | 'txn-write' | 'no' {
  let write = false;
  for (const q of ba.requests) {
    if (q.kind === 'endTxn') return 'no';
    if (isWriteRequest(q)) write = true;
  }
  if (!write) return 'read';
  return ba.header.txn !== undefined ? 'txn-write' : 'no';
}

/** A replica did not answer a read: retryable, and never ambiguous. */
function unreachableError(nodeId: number, cause: unknown): CairnError {
  return new CairnError('kv.replica_unreachable', `kv: n${nodeId} did not answer: ${(cause as Error).message}`, { retryable: true, cause });
}

/** A transactional write sent to a replica that did not answer, and no other replica served it. */
function ambiguousAfter(first: unknown, last: unknown): CairnError {
  return new CairnError('kv.ambiguous_result', `kv: result is ambiguous: ${(first as Error).message}; retries failed: ${(last as Error | null)?.message ?? 'no replica'}`, {
    ambiguous: true,
    sqlState: '40003',
    cause: first,
  });
}

/** Errors of the request itself (MVCC conflicts, the transaction layer's verdicts): another replica would answer the same. */
const REQUEST_ERROR = /^(mvcc\.|kv\.(txn_|refresh_failed|intent_missing|timestamp_in_future|condition_failed))/;

function retryElsewhere(e: unknown): boolean {
  return e instanceof CairnError && !e.ambiguous && !(e instanceof RangeKeyMismatchError) && !REQUEST_ERROR.test(e.code) && (e.retryable || e.code === 'rpc.closed');
}

/** The node's breaker is open (a probe failed): the request was not sent. */
class BreakerOpenError extends CairnError {
  override name = 'BreakerOpenError';
  constructor(readonly nodeId: number) {
    super('kv.node_unreachable', `kv: n${nodeId} unreachable (breaker open)`, { retryable: true });
  }
}

/** Every replica of a range failed without an answer we can use. */
class SendFailedError extends CairnError {
  override name = 'SendFailedError';
  constructor(
    readonly desc: RangeDescriptor,
    readonly last: unknown,
    /** False when every replica answered NotLeaseHolder (a lease in motion): the descriptor is still good. */
    readonly stale = true,
  ) {
    super('kv.send_failed', `kv: no replica of r${desc.rangeId} could serve the batch: ${(last as Error | null)?.message ?? 'no replicas'}`, { retryable: true });
  }
}

export class DistSender implements Sender {
  readonly cache: RangeCache;
  readonly metrics: DistSenderMetrics = { batches: 0, multiRange: 0, rpcs: 0, notLeaseHolder: 0, rangeKeyMismatch: 0, retries: 0, abandoned: 0, breakerSkips: 0 };
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly maxAttempts: number;
  /** Probes in flight, by node: concurrent calls to one node share one. */
  private readonly probing = new Map<number, Promise<void>>();
  /** Open breakers: node id → when it was last wanted (nowMs). */
  private readonly open = new Map<number, { wanted: number }>();
  private readonly nowMs: () => number;
  /** Calls in flight under the breaker watchdog (sendOne), swept by one periodic timer. */
  private readonly watched = new Set<WatchedCall>();
  private sweeper: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly dialer: NodeDialer,
    private readonly opts: DistSenderOptions,
  ) {
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.maxAttempts = opts.maxAttempts ?? 60;
    this.nowMs = opts.nowMs ?? (() => performance.now());
    this.cache = new RangeCache((key, reverse) => this.lookupMeta(key, reverse));
  }

  async send(ba: BatchRequest): Promise<BatchResponse> {
    this.metrics.batches++;
    if (ba.header.rangeId !== 0) return this.sendToRangeId(ba);
    return this.divideAndSend(ba, 0);
  }

  // ---- dividing ------------------------------------------------------------------------

  private async divideAndSend(ba: BatchRequest, attempt: number): Promise<BatchResponse> {
    // Fast path: one point request (a get, a put): the range holding its key, no span arithmetic.
    if (ba.requests.length === 1) {
      const s = spanOf(ba.requests[0] as Request);
      if (s !== null && s.endKey === null) return this.sendPart(await this.cache.lookup(s.key), ba, attempt);
    }
    const spans = ba.requests.map(spanOf);
    let reverse = false;
    let limited = false;
    let forwardLimited = false;
    for (const q of ba.requests) {
      if (q.kind === 'reverseScan') reverse = true;
      if (isScan(q) && q.maxKeys > 0) {
        limited = true;
        if (q.kind === 'scan') forwardLimited = true;
      }
    }
    if (reverse && forwardLimited) throw new CairnError('kv.mixed_scan_directions', 'kv: a batch cannot hold a limited forward scan and a reverse scan');
    // Fast path: the whole batch in one cached range.
    let lo: Buffer | null = null;
    let hi: Buffer | null = null;
    for (const s of spans) {
      if (s === null) continue;
      if (lo === null || compareBytes(s.key, lo) < 0) lo = s.key;
      const end = s.endKey;
      if (end !== null && (hi === null || compareBytes(end, hi) > 0)) hi = end;
      if (end === null && (hi === null || compareBytes(s.key, hi) >= 0)) hi = Buffer.concat([s.key, Buffer.from([0])]);
    }
    if (lo === null || hi === null) {
      const desc = await this.cache.lookup(KEY_MIN);
      return this.sendPart(desc, ba, attempt);
    }
    const first = reverse ? await this.cache.lookup(hi, true) : await this.cache.lookup(lo);
    if (compareBytes(first.startKey, lo) <= 0 && compareBytes(hi, first.endKey) <= 0) return this.sendPart(first, ba, attempt);
    this.metrics.multiRange++;
    const header = compareTimestamps(ba.header.timestamp, ZERO_TIMESTAMP) === 0 && this.opts.now !== undefined ? { ...ba.header, timestamp: this.opts.now() } : ba.header;
    if (limited) return this.sendSequential({ header, requests: ba.requests }, spans, lo, hi, reverse, attempt);
    const parts: Part[] = [];
    for (let cur = lo; compareBytes(cur, hi) < 0; ) {
      const desc = await this.cache.lookup(cur);
      const part = this.partFor(ba.requests, spans, desc, undefined, cur, null);
      if (part.requests.length > 0) parts.push(part);
      if (compareBytes(desc.endKey, KEY_MAX) >= 0) break;
      cur = desc.endKey;
    }
    const results = await this.settle(parts.map((p) => this.sendPart(p.desc, { header, requests: p.requests }, attempt)));
    const perRequest: Response[][] = ba.requests.map(() => []);
    results.forEach((res, i) => {
      const p = parts[i] as Part;
      res.responses.forEach((r, j) => (perRequest[p.index[j] as number] as Response[]).push(r));
    });
    const responses = ba.requests.map((q, i) => combine(q, perRequest[i] as Response[]));
    const last = results[results.length - 1] as BatchResponse;
    // A part may have been evaluated above the header's timestamp (a write pushed by the timestamp cache): report the highest.
    let timestamp = header.timestamp;
    for (const r of results) if (compareTimestamps(r.timestamp, timestamp) > 0) timestamp = r.timestamp;
    const observedTimestamps = observedTimestampsOf(results);
    return observedTimestamps === undefined ? { now: last.now, timestamp, responses } : { now: last.now, timestamp, responses, observedTimestamps };
  }

  /** Waits for every part; the first error wins, an ambiguous one over any other. */
  private async settle(ps: Promise<BatchResponse>[]): Promise<BatchResponse[]> {
    const outs = await Promise.allSettled(ps);
    let err: unknown = null;
    for (const o of outs) {
      if (o.status === 'fulfilled') continue;
      if (err === null || (isAmbiguous(o.reason) && !isAmbiguous(err))) err = o.reason;
    }
    if (err !== null) throw err;
    return outs.map((o) => (o as PromiseFulfilledResult<BatchResponse>).value);
  }

  /**
   * The requests' share of `desc`, clamped to [from, to): a descriptor from a
   * lagging meta2 may reach back over keys an earlier part already covered
   * (split-trigger.ts), and must not serve them twice.
   */
  private partFor(reqs: readonly Request[], spans: readonly (Span | null)[], desc: RangeDescriptor, active: readonly boolean[] | undefined, from: Buffer | null, to: Buffer | null): Part {
    const part: Part = { desc, requests: [], index: [] };
    const startKey = from !== null && compareBytes(from, desc.startKey) > 0 ? from : desc.startKey;
    const endKey = to !== null && compareBytes(to, desc.endKey) < 0 ? to : desc.endKey;
    const eff: RangeDescriptor = startKey === desc.startKey && endKey === desc.endKey ? desc : { ...desc, startKey, endKey };
    reqs.forEach((q, i) => {
      if (active !== undefined && active[i] !== true) return;
      const t = truncate(q, spans[i] ?? null, eff);
      if (t === null) return;
      part.requests.push(t);
      part.index.push(i);
    });
    return part;
  }

  /**
   * Limited scans: one range at a time in the scan direction; each part asks
   * only for the rows still wanted; stops when every limit is met.
   */
  private async sendSequential(ba: BatchRequest, spans: readonly (Span | null)[], lo: Buffer, hi: Buffer, reverse: boolean, attempt: number): Promise<BatchResponse> {
    const reqs = ba.requests;
    const remaining = reqs.map((q) => (isScan(q) ? q.maxKeys : 0));
    const active = reqs.map(() => true);
    const done: (Response | null)[] = reqs.map(() => null);
    const perRequest: Response[][] = reqs.map(() => []);
    let now = ba.header.timestamp;
    let evalTs = ba.header.timestamp;
    let observedTimestamps: readonly ObservedTimestamp[] | undefined;
    let cur = reverse ? hi : lo;
    for (;;) {
      const desc = reverse ? await this.cache.lookup(cur, true) : await this.cache.lookup(cur);
      const part = this.partFor(
        reqs.map((q, i) => (isScan(q) && q.maxKeys > 0 ? { ...q, maxKeys: remaining[i] as number } : q)),
        spans,
        desc,
        active,
        reverse ? null : cur,
        reverse ? cur : null,
      );
      if (part.requests.length > 0) {
        const res = await this.sendPart(desc, { header: ba.header, requests: part.requests }, attempt);
        now = res.now;
        observedTimestamps = mergeObservedTimestamps(observedTimestamps, res.observedTimestamps);
        if (compareTimestamps(res.timestamp, evalTs) > 0) evalTs = res.timestamp;
        res.responses.forEach((r, j) => {
          const i = part.index[j] as number;
          const q = reqs[i] as Request;
          (perRequest[i] as Response[]).push(r);
          if (!isScan(q) || q.maxKeys === 0) return;
          const s = r as ScanResponse;
          remaining[i] = (remaining[i] as number) - s.rows.length;
          const stoppedInside = s.resumeKey !== null || s.resumeEndKey !== null;
          if ((remaining[i] as number) > 0 && !stoppedInside) return;
          active[i] = false;
          // Where the caller continues: inside this range, or past it.
          let resumeKey: Buffer | null = null;
          let resumeEndKey: Buffer | null = null;
          if (stoppedInside) {
            resumeKey = reverse ? q.key : (s.resumeKey as Buffer);
            resumeEndKey = reverse ? (s.resumeEndKey as Buffer) : q.endKey;
          } else if (!reverse && compareBytes(desc.endKey, q.endKey) < 0) {
            resumeKey = desc.endKey;
            resumeEndKey = q.endKey;
          } else if (reverse && compareBytes(desc.startKey, q.key) > 0) {
            resumeKey = q.key;
            resumeEndKey = desc.startKey;
          }
          done[i] = { kind: q.kind, rows: concatRows(perRequest[i] as Response[], false), resumeKey, resumeEndKey };
        });
      }
      if (!active.some((a, i) => a && isScan(reqs[i] as Request) && (reqs[i] as { maxKeys: number }).maxKeys > 0)) {
        // Limits met: unlimited requests still need the rest of their spans.
        if (!active.some((a, i) => a && !(isScan(reqs[i] as Request) && (reqs[i] as { maxKeys: number }).maxKeys > 0))) break;
      }
      if (reverse ? compareBytes(desc.startKey, lo) <= 0 : compareBytes(desc.endKey, hi) >= 0 || compareBytes(desc.endKey, KEY_MAX) >= 0) break;
      cur = reverse ? desc.startKey : desc.endKey;
    }
    // combine() wants parts in ascending range order; a reverse visit was descending.
    const responses = reqs.map((q, i) => done[i] ?? combine(q, reverse ? [...(perRequest[i] as Response[])].reverse() : (perRequest[i] as Response[])));
    return observedTimestamps === undefined ? { now, timestamp: evalTs, responses } : { now, timestamp: evalTs, responses, observedTimestamps };
  }

  // ---- sending to one range ------------------------------------------------------------

  /** Sends a batch built for `desc`; re-divides it on a stale descriptor or unreachable range. */
  private async sendPart(desc: RangeDescriptor, ba: BatchRequest, attempt: number): Promise<BatchResponse> {
    try {
      return await this.sendToReplicas(desc, desc.rangeId, { header: { ...ba.header, rangeId: desc.rangeId }, requests: ba.requests });
    } catch (e) {
      if (e instanceof RangeKeyMismatchError) {
        this.metrics.rangeKeyMismatch++;
        this.cache.evict(desc);
        for (const d of e.descriptors) this.cache.insert(d);
      } else if (e instanceof SendFailedError) {
        if (e.stale) this.cache.evict(desc);
      } else {
        throw e;
      }
      if (attempt + 1 >= this.maxAttempts) throw e instanceof SendFailedError && e.last instanceof Error ? e.last : e;
      this.metrics.retries++;
      await this.sleep(Math.min(200, (this.opts.backoffMs ?? 10) * (attempt + 1)));
      return this.divideAndSend({ header: { ...ba.header, rangeId: 0 }, requests: ba.requests }, attempt + 1);
    }
  }

  /** Sends a batch to one node as it is (the merge driver polls replicas with it). */
  sendToNode(nodeId: number, ba: BatchRequest): Promise<BatchResponse> {
    return this.dialer.send(nodeId, ba);
  }

  /** A batch addressed to one range by id (no key routing): retried with backoff while no replica serves it. */
  private async sendToRangeId(ba: BatchRequest): Promise<BatchResponse> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.sendToReplicas(this.cache.byRangeId(ba.header.rangeId) ?? null, ba.header.rangeId, ba);
      } catch (e) {
        if (!(e instanceof SendFailedError) || attempt + 1 >= this.maxAttempts) throw e instanceof SendFailedError && e.last instanceof Error ? e.last : e;
        this.metrics.retries++;
        await this.sleep(Math.min(200, (this.opts.backoffMs ?? 10) * (attempt + 1)));
      }
    }
  }

  private candidates(desc: RangeDescriptor | null, rangeId: number): number[] {
    const out: number[] = [];
    const lh = this.cache.leaseholder(rangeId);
    if (lh !== undefined) out.push(lh.nodeId);
    const reps: readonly ReplicaDescriptor[] = desc?.replicas ?? [];
    for (const r of reps) if (r.type === 0 && !out.includes(r.nodeId)) out.push(r.nodeId);
    for (const r of reps) if (r.type !== 0 && !out.includes(r.nodeId)) out.push(r.nodeId);
    if (desc === null) for (const n of this.opts.nodes()) if (!out.includes(n)) out.push(n);
    if (this.open.size === 0) return out;
    return [...out.filter((n) => !this.isOpen(n)), ...out.filter((n) => this.isOpen(n))];
  }

  // ---- breakers ----------------------------------------------------------------------------

  /** Whether node's breaker is open (a probe failed and none succeeded since). */
  isOpen(nodeId: number): boolean {
    const b = this.open.get(nodeId);
    if (b === undefined) return false;
    b.wanted = this.nowMs();
    return true;
  }

  /** Probes a node, joining a probe of it already in flight. */
  private probeNode(probe: (nodeId: number) => Promise<void>, nodeId: number): Promise<void> {
    let p = this.probing.get(nodeId);
    if (p === undefined) {
      p = probe(nodeId).finally(() => this.probing.delete(nodeId));
      this.probing.set(nodeId, p);
    }
    return p;
  }

  /**
   * Opens node's breaker and probes it in the background every probeAfterMs
   * until a probe succeeds (closed), or nobody asked for the node for
   * breakerMs (closed too: the next call probes it again itself).
   */
  private trip(nodeId: number): void {
    if (this.open.has(nodeId)) return;
    const probe = this.opts.probe;
    if (probe === undefined) return;
    const b = { wanted: this.nowMs() };
    this.open.set(nodeId, b);
    const every = this.opts.probeAfterMs ?? 1000;
    const again = (): void => {
      const t = setTimeout(() => {
        if (this.open.get(nodeId) !== b) return;
        if (this.nowMs() - b.wanted > (this.opts.breakerMs ?? 2000)) {
          this.open.delete(nodeId);
          return;
        }
        this.probeNode(probe, nodeId).then(
          () => {
            if (this.open.get(nodeId) === b) this.open.delete(nodeId);
          },
          again,
        );
      }, every);
      t.unref?.();
    };
    again();
  }

  /**
   * One call to one replica. With a probe: a node whose breaker is open is
   * skipped (never sent); a call without an answer after probeAfterMs
   * probes its node, and is abandoned if the probe fails.
   */
  private async sendOne(nodeId: number, ba: BatchRequest): Promise<BatchResponse> {
    const probe = this.opts.probe;
    if (probe === undefined) return this.dialer.send(nodeId, ba);
    if (this.isOpen(nodeId)) {
      this.metrics.breakerSkips++;
      throw new BreakerOpenError(nodeId);
    }
    // No AbortController per call (~2 µs each): an abandoned call is left to
    // its RPC deadline, its late answer ignored, and counts as sent (ambiguous).
    // No timer per call either: one sweep of the outstanding calls (watchCalls).
    const call = this.dialer.send(nodeId, ba);
    const w: WatchedCall = { nodeId, dueMs: performance.now() + (this.opts.probeAfterMs ?? 1000), abandon: null, done: false };
    this.watchCall(w);
    try {
      const res = await new Promise<BatchResponse>((resolve, reject) => {
        w.abandon = reject;
        call.then(resolve, reject);
      });
      this.open.delete(nodeId);
      return res;
    } finally {
      w.done = true;
      this.watched.delete(w);
      call.catch(() => undefined); // an abandoned call's late failure
    }
  }

  private watchCall(w: WatchedCall): void {
    this.watched.add(w);
    if (this.sweeper !== null) return;
    // A quarter of the probe delay: a silent call is probed between 1 and 1.25 probe delays after it was sent.
    this.sweeper = setInterval(() => this.sweepCalls(), Math.max(1, Math.floor((this.opts.probeAfterMs ?? 1000) / 4)));
    this.sweeper.unref?.();
  }

  /**
   * The breaker watchdog (see the header): every call unanswered past its due
   * time probes its node (concurrent calls to one node share the probe); a
   * probe that succeeds gives the call another probe delay, one that fails
   * abandons it and opens the node's breaker. The timer stops while no call
   * is outstanding.
   */
  private sweepCalls(): void {
    const probe = this.opts.probe;
    if (this.watched.size === 0 || probe === undefined) {
      if (this.sweeper !== null) clearInterval(this.sweeper);
      this.sweeper = null;
      return;
    }
    const now = performance.now();
    const every = this.opts.probeAfterMs ?? 1000;
    for (const w of this.watched) {
      if (w.dueMs > now) continue;
      w.dueMs = Infinity; // probing
      this.probeNode(probe, w.nodeId).then(
        () => {
          if (!w.done) w.dueMs = performance.now() + every;
        },
        () => {
          if (w.done) return;
          this.metrics.abandoned++;
          this.trip(w.nodeId);
          w.abandon?.(abandonedCallError('rpc.canceled', `n${w.nodeId}`, KvMethod.Batch, true));
        },
      );
    }
  }

  /**
   * One pass over the range's replicas, following NotLeaseHolder hints.
   * Throws SendFailedError when no replica could serve (the caller refreshes
   * the descriptor); any other error is the range's answer.
   */
  private async sendToReplicas(desc: RangeDescriptor | null, rangeId: number, ba: BatchRequest): Promise<BatchResponse> {
    const tried = new Set<number>();
    let queue = this.candidates(desc, rangeId);
    let last: unknown = null;
    let hops = 0;
    let onlyNotLeaseHolder = true;
    /** The first ambiguous error of a transactional write retried elsewhere. */
    let ambiguous: unknown = null;
    while (queue.length > 0) {
      const nodeId = queue.shift() as number;
      if (tried.has(nodeId)) continue;
      tried.add(nodeId);
      this.metrics.rpcs++;
      try {
        const res = await this.sendOne(nodeId, ba);
        const rep = desc?.replicas.find((r) => r.nodeId === nodeId);
        if (rep !== undefined) this.cache.setLeaseholder(rangeId, rep);
        return res;
      } catch (e) {
        last = e;
        if (isAmbiguous(e) && e instanceof CairnError && e.code.startsWith('rpc.')) {
          // The replica did not answer: forget it as leaseholder; retry elsewhere if that is safe.
          this.cache.clearLeaseholder(rangeId, nodeId);
          const how = retryAfterAmbiguous(ba);
          if (how === 'no') throw e;
          // Silence says nothing about the descriptor: keep it (no meta2 lookup for it).
          if (how === 'read') last = unreachableError(nodeId, e);
          else if (ambiguous === null) ambiguous = e;
          continue;
        }
        // Skipped, not asked: says nothing about the lease or the descriptor.
        if (e instanceof BreakerOpenError) continue;
        if (e instanceof NotLeaseHolderError) {
          this.metrics.notLeaseHolder++;
          // Frozen by Subsume (merge.ts): back off until the merge absorbed it.
          if (e.lease !== null && e.lease.replica.replicaId === 0) {
            onlyNotLeaseHolder = false;
            break;
          }
          const next = e.lease?.replica ?? e.hint;
          if (next !== null && next !== undefined && !tried.has(next.nodeId)) {
            this.cache.setLeaseholder(rangeId, next);
            queue = [next.nodeId, ...queue];
          } else {
            this.cache.clearLeaseholder(rangeId, nodeId);
          }
          // A lease being acquired: give the same replicas another round.
          if (queue.length === 0 && hops++ < 3 && e.lease === null) {
            await this.sleep(this.opts.backoffMs ?? 10);
            tried.clear();
            queue = this.candidates(desc, rangeId);
          }
          continue;
        }
        // A replica behind our descriptor (it has not applied the split or
        // merge we know of) says "mismatch" for keys its range now owns: ask
        // another replica instead of discarding the newer descriptor.
        // The replica's own descriptor comes first (a store may add its range holding the key, store.ts withKeyHolder).
        const own = e instanceof RangeKeyMismatchError ? e.descriptors[0] : undefined;
        const lagging = own !== undefined && desc !== null && own.rangeId === desc.rangeId && own.generation < desc.generation;
        if (!lagging && !retryElsewhere(e)) throw ambiguous !== null ? ambiguousAfter(ambiguous, e) : e;
        onlyNotLeaseHolder = false;
        this.cache.clearLeaseholder(rangeId, nodeId);
      }
    }
    if (ambiguous !== null) throw ambiguousAfter(ambiguous, last);
    throw new SendFailedError(desc ?? { rangeId, startKey: KEY_MIN, endKey: KEY_MAX, replicas: [], nextReplicaId: 0, generation: 0 }, last, !onlyNotLeaseHolder || last === null);
  }

  // ---- meta2 -------------------------------------------------------------------------------

  /** Reads meta2 on the first range: the record for `key` and the next few (see RangeCache). */
  private async lookupMeta(key: Buffer, reverse: boolean): Promise<RangeDescriptor[]> {
    const scan: Request = reverse
      ? { kind: 'scan', key: meta2Key(key), endKey: META2_MAX, maxKeys: 1 }
      : { kind: 'scan', key: meta2LookupKey(key), endKey: META2_MAX, maxKeys: this.opts.prefetch ?? 16 };
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await this.sendToReplicas(this.cache.byRangeId(FIRST_RANGE_ID) ?? null, FIRST_RANGE_ID, { header: { rangeId: FIRST_RANGE_ID, timestamp: ZERO_TIMESTAMP }, requests: [scan] });
        const rows = (res.responses[0] as ScanResponse).rows;
        if (rows.length === 0) throw new CairnError('kv.range_lookup_failed', `kv: no meta2 record covers key ${key.toString('hex')}`);
        return rows.map((kv) => decodeRangeDescriptor(Buffer.from(kv.value)));
      } catch (e) {
        if (!(e instanceof SendFailedError) || attempt + 1 >= this.maxAttempts) throw e instanceof SendFailedError && e.last instanceof Error ? e.last : e;
        this.cache.evict(e.desc);
        await this.sleep(Math.min(200, (this.opts.backoffMs ?? 10) * (attempt + 1)));
      }
    }
  }
}

function concatRows(parts: readonly Response[], reverse: boolean): KeyValue[] {
  const out: KeyValue[] = [];
  const ordered = reverse ? [...parts].reverse() : parts;
  for (const p of ordered) for (const kv of (p as ScanResponse).rows) out.push(kv);
  return out;
}

/** One request's response from its parts (in ascending range order). */
function combine(q: Request, parts: readonly Response[]): Response {
  if (parts.length === 1) return parts[0] as Response;
  switch (q.kind) {
    case 'scan':
    case 'reverseScan':
      return { kind: q.kind, rows: concatRows(parts, q.kind === 'reverseScan'), resumeKey: null, resumeEndKey: null };
    case 'deleteRange': {
      const keys: Buffer[] = [];
      for (const p of parts) if (p.kind === 'deleteRange') for (const k of p.keys) keys.push(k);
      return { kind: 'deleteRange', keys };
    }
    case 'resolveIntentRange': {
      // Each range's part stops at its own limit: the rest starts at the first part's resume key.
      let found = 0;
      let resumeKey: Buffer | null = null;
      for (const p of parts) {
        if (p.kind !== 'resolveIntentRange') continue;
        found += p.found;
        resumeKey ??= p.resumeKey ?? null;
      }
      return { kind: 'resolveIntentRange', found, resumeKey };
    }
    default:
      if (parts.length === 0) throw new CairnError('kv.no_range', `kv: no range served ${q.kind}`);
      return parts[0] as Response;
  }
}
