/**
 * KVClusterAdmin: sql/kv.ts's KVAdmin (ALTER TABLE … SPLIT AT, SHOW RANGES,
 * ALTER TABLE … SCATTER) over a node's Sender (its DistSender).
 *
 *   adminSplit(key)        split.ts adminSplitWithRetry — allocate a range id, AdminSplit
 *                          to the range holding key, fix meta2; it retries the
 *                          transient answers of a moving range itself. A
 *                          manual split is sticky (RangeDescriptor.stickyBit):
 *                          forever, or until the given expiration
 *   ranges(key, endKey)    the meta2 records overlapping [key, endKey), read in
 *                          pages with ordinary non-transactional scans, then
 *                          per range (in parallel, ≤ RANGE_CONCURRENCY): a
 *                          point read of its descriptor key (it needs a valid
 *                          lease, so it makes one if there is none) followed
 *                          by LeaseInfo, which the DistSender sends first to
 *                          the replica that just served the read
 *   scatter(key, endKey)   CockroachDB's AdminScatter, reduced to leases: the
 *                          ranges overlapping the span get their leases dealt
 *                          round robin over their live voters' nodes (starting
 *                          at a random offset), so a table's ranges are served
 *                          by every node that holds them; never to a node the
 *                          injected `isLive` says is down (it could not serve:
 *                          the range would wait out the lease); ≤ SCATTER_CONCURRENCY
 *                          ranges at once. A lease moves through
 *                          the injected `transferLease` (the leaseholder's
 *                          node proposes the transfer: only it may);
 *                          a transfer that fails because the lease moved
 *                          meanwhile is retried from the new holder (bounded).
 *
 * The shapes (KVRangeInfo, the KVAdmin methods) restate sql/kv.ts's
 * structurally: src/kv may not import sql/ (DESIGN.md §2); test/sql-admin
 * checks the assignability against sql/kv.ts itself.
 *
 * NB: meta2 may lag the descriptors for a moment after a split (split.ts:
 * the records of a non-first range are fixed after the split command); the
 * page reader therefore skips a record that ends at or before the end of the
 * previous one and clamps overlaps, and SHOW RANGES run right after a split
 * may still show the range whole.
 *
 * Ownership: one per node (TxnDB.admin); all I/O through the injected
 * Sender and transferLease; randomness through the injected Prng.
 */
import { CairnError } from '../../util/errors.js';
import { MAX_TIMESTAMP, ZERO_TIMESTAMP, type Timestamp } from '../../util/hlc.js';
import type { Prng } from '../../util/prng.js';
import { compareBytes } from '../../../storage/encoding/bytes.js';
import { META2_MAX, meta2LookupKey, rangeDescriptorKey } from '../../../storage/keys.js';
import { ReplicaType, type LeaseInfoResponse, type RangeDescriptor, type Request, type Response, type ScanResponse } from '../api.js';
import { decodeRangeDescriptor } from '../api-codec.js';
import type { Sender } from '../kv-client.js';
import { TRANSIENT_RANGE_ERRORS, adminSplitWithRetry } from '../split.js';

/** One range as SHOW RANGES reports it (sql/kv.ts KVRangeInfo). */
export interface KVRangeInfo {
  readonly rangeId: number;
  readonly startKey: Buffer;
  readonly endKey: Buffer;
  /** Node ids of the range's replicas, voters first, each group by node id. */
  readonly replicas: readonly number[];
  /** The node holding the lease, or null when no replica answered with one. */
  readonly leaseholder: number | null;
}

/**
 * Asks the node holding the lease of `desc` (`fromNodeId`) to hand it to the
 * replica on `toNodeId`. The server wires this to Node.transferLease on the
 * holder (locally or through its admin endpoint); tests to Store.transferLease.
 */
export type LeaseTransferer = (desc: RangeDescriptor, fromNodeId: number, toNodeId: number) => Promise<void>;

export interface KVClusterAdminOptions {
  readonly sender: Sender;
  /** Absent (and not set later by useLeaseTransferer): scatter() is refused (kv.admin_unsupported). */
  readonly transferLease?: LeaseTransferer;
  /** Whether a node may take a lease (default: every node). */
  readonly isLive?: (nodeId: number) => boolean;
  readonly prng: Prng;
  /** Sleeps between retries of a transient failure (default: a real timer). */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Meta2 records read per page. */
const META_PAGE = 64;
/** Ranges whose lease is looked up at once. */
const RANGE_CONCURRENCY = 16;
/** Ranges whose lease SCATTER moves at once. */
const SCATTER_CONCURRENCY = 8;
/**
 * Attempts of one lease lookup / one lease move before its error is returned,
 * with backoff doubling from 50 ms to at most 1 s (≈ 7.5 s in all): a range
 * just split may have no Raft leader for an election timeout or more under
 * load, and its lease moves only once it has one.
 */
const MAX_ATTEMPTS = 12;
const backoffMs = (attempt: number): number => Math.min(1000, 50 * 2 ** (attempt - 1));

function isTransient(e: unknown): boolean {
  return e instanceof CairnError && (e.retryable || TRANSIENT_RANGE_ERRORS.has(e.code));
}

export class KVClusterAdmin {
  private readonly sleep: (ms: number) => Promise<void>;
  private transferLease: LeaseTransferer | undefined;
  private isLive: (nodeId: number) => boolean;

  constructor(private readonly opts: KVClusterAdminOptions) {
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.transferLease = opts.transferLease;
    this.isLive = opts.isLive ?? (() => true);
  }

  /** Installs how leases move and which nodes may take them (the server does it once it can reach the other nodes). */
  useLeaseTransferer(t: LeaseTransferer, isLive?: (nodeId: number) => boolean): void {
    this.transferLease = t;
    if (isLive !== undefined) this.isLive = isLive;
  }

  /** Whether scatter() can move leases. */
  get canScatter(): boolean {
    return this.transferLease !== undefined;
  }

  /**
   * Splits the range holding `key` at `key`; a no-op when a range already
   * starts there. The boundary is sticky until `expiration` (default forever).
   */
  async adminSplit(key: Buffer, opts: { readonly expiration?: Timestamp } = {}): Promise<void> {
    await adminSplitWithRetry(this.opts.sender, key, { expiration: opts.expiration ?? MAX_TIMESTAMP });
  }

  /** The ranges overlapping [key, endKey), in key order, with their replicas and leaseholders. */
  async ranges(key: Buffer, endKey: Buffer): Promise<KVRangeInfo[]> {
    return mapLimited(await this.descriptors(key, endKey), RANGE_CONCURRENCY, async (d) => rangeInfo(d, await this.leaseholder(d)));
  }

  /**
   * Deals the leases of the ranges overlapping [key, endKey) round robin over
   * their voters (see the header); returns the ranges with their leaseholders
   * afterwards.
   */
  async scatter(key: Buffer, endKey: Buffer): Promise<KVRangeInfo[]> {
    const transfer = this.transferLease;
    if (transfer === undefined) throw new CairnError('kv.admin_unsupported', 'kv: scatter needs lease transfers, which this node cannot make', { sqlState: '0A000' });
    const descs = await this.descriptors(key, endKey);
    const offset = this.opts.prng.intn(1 << 16);
    return mapLimited(descs, SCATTER_CONCURRENCY, async (d, i) => {
      const voters = d.replicas.filter((r) => r.type === ReplicaType.Voter && this.isLive(r.nodeId)).map((r) => r.nodeId);
      voters.sort((a, b) => a - b);
      const target = voters[(i + offset) % Math.max(1, voters.length)];
      let holder = await this.leaseholder(d);
      // A holder that is down cannot hand its lease over; the lease expires and moves by itself.
      if (target !== undefined && holder !== null && holder !== target && this.isLive(holder)) {
        for (let attempt = 1; ; attempt++) {
          try {
            await transfer(d, holder, target);
            break;
          } catch (e) {
            if (!isTransient(e) || attempt >= MAX_ATTEMPTS) throw e;
            await this.sleep(backoffMs(attempt));
            holder = await this.leaseholder(d);
            if (holder === null || holder === target) break;
          }
        }
        holder = await this.leaseholder(d);
      }
      return rangeInfo(d, holder);
    });
  }

  /** The meta2 descriptors of the ranges overlapping [key, endKey), in key order. */
  private async descriptors(key: Buffer, endKey: Buffer): Promise<RangeDescriptor[]> {
    const out: RangeDescriptor[] = [];
    let from = meta2LookupKey(key);
    for (;;) {
      const [res] = await this.send([{ kind: 'scan', key: from, endKey: META2_MAX, maxKeys: META_PAGE }]);
      const rows = (res as ScanResponse).rows;
      for (const row of rows) {
        const d = decodeRangeDescriptor(Buffer.from(row.value));
        const prev = out[out.length - 1];
        // A lagging record (split.ts) may repeat or overlap keys already covered.
        if (prev !== undefined && compareBytes(d.endKey, prev.endKey) <= 0) continue;
        if (compareBytes(d.startKey, endKey) >= 0) return out;
        out.push(prev !== undefined && compareBytes(d.startKey, prev.endKey) < 0 ? { ...d, startKey: prev.endKey } : d);
        if (compareBytes(d.endKey, endKey) >= 0) return out;
      }
      const last = rows[rows.length - 1];
      if (rows.length < META_PAGE || last === undefined) return out;
      from = Buffer.concat([last.key, Buffer.from([0])]);
    }
  }

  /**
   * The node holding a valid lease of `d`: a point read of the range's own
   * descriptor key (range-local, so no user row and its intents are in the
   * way; served only under a valid lease, acquiring one if needed), then
   * LeaseInfo, which goes first to the replica that served the read. When
   * the read fails (an intent of a split in progress, an unavailable range),
   * LeaseInfo still says what the replicas know.
   */
  private async leaseholder(d: RangeDescriptor): Promise<number | null> {
    try {
      await this.retrying(() => this.send([{ kind: 'get', key: rangeDescriptorKey(d.startKey) }]));
    } catch (e) {
      if (!(e instanceof CairnError)) throw e;
    }
    return this.retrying(async () => {
      const [res] = (await this.opts.sender.send({ header: { rangeId: d.rangeId, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'leaseInfo' }] })).responses;
      return (res as LeaseInfoResponse).lease?.replica.nodeId ?? null;
    });
  }

  private async send(requests: Request[]): Promise<readonly Response[]> {
    return (await this.opts.sender.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests })).responses;
  }

  private async retrying<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (!isTransient(e) || attempt >= MAX_ATTEMPTS) throw e;
        await this.sleep(backoffMs(attempt));
      }
    }
  }
}

/** fn over every item, at most `limit` at a time; results in item order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

function rangeInfo(d: RangeDescriptor, leaseholder: number | null): KVRangeInfo {
  return { rangeId: d.rangeId, startKey: d.startKey, endKey: d.endKey, replicas: replicaNodes(d), leaseholder };
}

/** Node ids of a range's replicas: voters, then the others, each by node id. */
function replicaNodes(d: RangeDescriptor): number[] {
  const voters = d.replicas.filter((r) => r.type === ReplicaType.Voter).map((r) => r.nodeId);
  const others = d.replicas.filter((r) => r.type !== ReplicaType.Voter).map((r) => r.nodeId);
  return [...voters.sort((a, b) => a - b), ...others.sort((a, b) => a - b)];
}
