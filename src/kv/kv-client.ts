/**
 * A small non-transactional KV client (get/put/cput/scan/delete/deleteRange/
 * batch) and the routing behind it, for tests and early callers. The full
 * DistSender (range cache, parallel multi-range batches) replaces
 * LeaseholderRouter behind the same `Sender` interface.
 *
 *   KvClient ──► Sender.send(ba)                 rangeId 0: the router picks
 *                  │ LeaseholderRouter
 *                  ├─ descriptor of the first key: meta2 scan on r1
 *                  │   [meta2LookupKey(key), META2_MAX) limit 1
 *                  ├─ cached leaseholder node, else the descriptor's replicas in turn
 *                  └─ NodeDialer.send(nodeId, ba)   (RpcNodeDialer: KvMethod.Batch)
 *
 * Retries (CockroachDB's DistSender rules): NotLeaseHolderError → the lease
 * holder or hint it names; RangeNotFound, a stopped store, a never-sent RPC
 * (rpc.unavailable) or a dropped proposal → the next replica; after a full
 * pass without success, back off (injected sleep) and start again, until
 * maxAttempts. RangeKeyMismatch → refresh the descriptor. An ambiguous
 * error (AmbiguousResultError, a timed-out or lost RPC after sending) is
 * returned to the caller, never retried: the write may have happened.
 *
 * Multi-range: scan and deleteRange walk range by range (descriptor lookups);
 * batch() sends all its requests to the range of its first key.
 */
import { CairnError } from '../util/errors.js';
import { ZERO_TIMESTAMP, type Timestamp } from '../util/hlc.js';
import { KEY_MAX, META2_MAX, addressOf, isLocal, meta2LookupKey } from '../../storage/keys.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { ConnectionClass, type RpcTransport } from '../rpc/transport.js';
import {
  KvMethod,
  NotLeaseHolderError,
  RangeKeyMismatchError,
  type BatchRequest,
  type BatchResponse,
  type KeyValue,
  type RangeDescriptor,
  type Request,
  type Response,
  type ScanResponse,
} from './api.js';
import { decodeBatchResult, decodeRangeDescriptor, encodeBatchRequest } from './api-codec.js';
import { FIRST_RANGE_ID } from './bootstrap.js';

/** Sends a batch to the right replica and returns its response (or throws its error). */
export interface Sender {
  send(ba: BatchRequest): Promise<BatchResponse>;
}

/** Delivers a batch to the store of one node. */
export interface NodeDialer {
  /** `signal` abandons the call (the RPC layer's rpc.canceled: ambiguous iff the request was sent). */
  send(nodeId: number, ba: BatchRequest, opts?: { readonly signal?: AbortSignal }): Promise<BatchResponse>;
}

/** NodeDialer over src/rpc: KvMethod.Batch with the api-codec encoding. */
export class RpcNodeDialer implements NodeDialer {
  constructor(
    private readonly transport: RpcTransport,
    private readonly timeoutMs = 10_000,
  ) {}

  async send(nodeId: number, ba: BatchRequest, opts?: { readonly signal?: AbortSignal }): Promise<BatchResponse> {
    const call = { timeoutMs: this.timeoutMs, connectionClass: ConnectionClass.Default, ...(opts?.signal === undefined ? {} : { signal: opts.signal }) };
    const res = decodeBatchResult(await this.transport.call(nodeId, KvMethod.Batch, encodeBatchRequest(ba), call));
    if (!res.ok) throw res.error;
    return res.response;
  }
}

export interface RouterOptions {
  /** Node ids to try when nothing is known (to find r1). */
  readonly nodes: () => readonly number[];
  readonly maxAttempts?: number;
  /** Waits between passes over the replicas; default a timer. */
  readonly sleep?: (ms: number) => Promise<void>;
  readonly backoffMs?: number;
}

function firstKeyOf(reqs: readonly Request[]): Buffer | null {
  for (const q of reqs) {
    const k = (q as { key?: Buffer }).key;
    if (k !== undefined) return isLocal(k) ? addressOf(k) : k;
  }
  return null;
}

function retryElsewhere(e: unknown): boolean {
  return e instanceof CairnError && !e.ambiguous && (e.retryable || e.code === 'rpc.closed');
}

/** Routes each batch to its range's leaseholder (see the header). */
export class LeaseholderRouter implements Sender {
  private readonly leaseholders = new Map<number, number>();
  private descs: RangeDescriptor[] = [];
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    private readonly dialer: NodeDialer,
    private readonly opts: RouterOptions,
  ) {
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
  }

  async send(ba: BatchRequest): Promise<BatchResponse> {
    if (ba.header.rangeId !== 0) return this.sendToRange(ba, null);
    const key = firstKeyOf(ba.requests) ?? Buffer.alloc(0);
    for (let i = 0; ; i++) {
      const desc = await this.lookup(key);
      try {
        return await this.sendToRange({ header: { ...ba.header, rangeId: desc.rangeId }, requests: ba.requests }, desc);
      } catch (e) {
        if (!(e instanceof RangeKeyMismatchError) || i >= 3) throw e;
        this.evict(desc);
      }
    }
  }

  /** The descriptor of the range holding `key` (cached). */
  async lookup(key: Buffer): Promise<RangeDescriptor> {
    for (const d of this.descs) if (compareBytes(key, d.startKey) >= 0 && compareBytes(key, d.endKey) < 0) return d;
    const res = await this.sendToRange(
      { header: { rangeId: FIRST_RANGE_ID, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'scan', key: meta2LookupKey(key), endKey: META2_MAX, maxKeys: 1 }] },
      this.descs.find((d) => d.rangeId === FIRST_RANGE_ID) ?? null,
    );
    const row = (res.responses[0] as ScanResponse).rows[0];
    if (row === undefined) throw new CairnError('kv.range_lookup_failed', `kv: no meta2 record covers key ${key.toString('hex')}`);
    const desc = decodeRangeDescriptor(Buffer.from(row.value));
    this.descs = this.descs.filter((d) => d.rangeId !== desc.rangeId).concat(desc);
    return desc;
  }

  evict(desc: RangeDescriptor): void {
    this.descs = this.descs.filter((d) => d.rangeId !== desc.rangeId);
    this.leaseholders.delete(desc.rangeId);
  }

  private candidates(rangeId: number, desc: RangeDescriptor | null): number[] {
    const out: number[] = [];
    const lh = this.leaseholders.get(rangeId);
    if (lh !== undefined) out.push(lh);
    for (const n of desc?.replicas.map((r) => r.nodeId) ?? this.opts.nodes()) if (!out.includes(n)) out.push(n);
    return out;
  }

  private async sendToRange(ba: BatchRequest, desc: RangeDescriptor | null): Promise<BatchResponse> {
    const rangeId = ba.header.rangeId;
    const maxAttempts = this.opts.maxAttempts ?? 60;
    let last: unknown = null;
    for (let attempt = 0; attempt < maxAttempts; attempt++) {
      const tried = new Set<number>();
      let queue = this.candidates(rangeId, desc);
      while (queue.length > 0) {
        const nodeId = queue.shift() as number;
        if (tried.has(nodeId)) continue;
        tried.add(nodeId);
        try {
          const res = await this.dialer.send(nodeId, ba);
          this.leaseholders.set(rangeId, nodeId);
          return res;
        } catch (e) {
          last = e;
          if (e instanceof NotLeaseHolderError) {
            const next = e.lease?.replica.nodeId ?? e.hint?.nodeId;
            if (next !== undefined && !tried.has(next)) {
              this.leaseholders.set(rangeId, next);
              queue = [next, ...queue];
            } else if (this.leaseholders.get(rangeId) === nodeId) {
              this.leaseholders.delete(rangeId);
            }
            continue;
          }
          if (!retryElsewhere(e)) throw e;
          if (this.leaseholders.get(rangeId) === nodeId) this.leaseholders.delete(rangeId);
        }
      }
      await this.sleep(Math.min(200, (this.opts.backoffMs ?? 10) * (attempt + 1)));
    }
    throw last instanceof Error ? last : new CairnError('kv.send_failed', `kv: r${rangeId} unreachable`);
  }
}

/** The non-transactional client. */
export class KvClient {
  constructor(readonly sender: Sender) {}

  async batch(requests: readonly Request[], timestamp: Timestamp = ZERO_TIMESTAMP): Promise<readonly Response[]> {
    return (await this.sender.send({ header: { rangeId: 0, timestamp }, requests })).responses;
  }

  async get(key: Buffer): Promise<Buffer | null> {
    const [r] = await this.batch([{ kind: 'get', key }]);
    return r?.kind === 'get' ? r.value : null;
  }

  async put(key: Buffer, value: Buffer): Promise<void> {
    await this.batch([{ kind: 'put', key, value }]);
  }

  /** Writes `value` iff the current value equals `expected` (null: absent); ConditionFailedError otherwise. */
  async cput(key: Buffer, value: Buffer | null, expected: Buffer | null): Promise<void> {
    await this.batch([{ kind: 'cput', key, value, expected, allowIfDoesNotExist: false }]);
  }

  async delete(key: Buffer): Promise<void> {
    await this.batch([{ kind: 'delete', key }]);
  }

  /** Scans [key, endKey) across ranges, in key order, up to maxKeys rows (0: all). */
  async scan(key: Buffer, endKey: Buffer, maxKeys = 0): Promise<KeyValue[]> {
    const out: KeyValue[] = [];
    let from = key;
    while (compareBytes(from, endKey) < 0) {
      const router = this.sender instanceof LeaseholderRouter ? this.sender : null;
      const rangeEnd = router === null ? KEY_MAX : (await router.lookup(from)).endKey;
      const to = compareBytes(rangeEnd, endKey) < 0 ? rangeEnd : endKey;
      const want = maxKeys === 0 ? 0 : maxKeys - out.length;
      const [r] = await this.batch([{ kind: 'scan', key: from, endKey: to, maxKeys: want }]);
      const s = r as ScanResponse;
      for (const kv of s.rows) out.push(kv);
      if (maxKeys !== 0 && out.length >= maxKeys) break;
      if (s.resumeKey !== null) {
        from = s.resumeKey;
        continue;
      }
      from = to;
    }
    return out;
  }

  /** Deletes every key in [key, endKey) across ranges; returns how many were deleted. */
  async deleteRange(key: Buffer, endKey: Buffer): Promise<number> {
    let n = 0;
    let from = key;
    while (compareBytes(from, endKey) < 0) {
      const router = this.sender instanceof LeaseholderRouter ? this.sender : null;
      const rangeEnd = router === null ? KEY_MAX : (await router.lookup(from)).endKey;
      const to = compareBytes(rangeEnd, endKey) < 0 ? rangeEnd : endKey;
      const [r] = await this.batch([{ kind: 'deleteRange', key: from, endKey: to, returnKeys: true }]);
      n += r?.kind === 'deleteRange' ? r.keys.length : 0;
      from = to;
    }
    return n;
  }
}
