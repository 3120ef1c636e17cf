/**
 * Node liveness (CockroachDB's kvserver/liveness, expiration-based): each
 * node writes its liveness record through KV every heartbeat interval with
 * an expiration `ttl` in the future; a node is live while its record's
 * expiration is in the future by the reader's clock. The records live in the
 * system keyspace at nodeLivenessKey(nodeId), so they replicate with r1 and
 * survive any single node.
 *
 * Record value (big-endian):
 *
 *     +---------+------------+-------------------+-------+
 *     | version | epoch      | expiration wall   | flags |
 *     | u8 = 1  | u32        | f64 µs since epoch| u8    |
 *     +---------+------------+-------------------+-------+
 *     flags: bit 0 draining, bit 1 decommissioning
 *
 * The epoch grows by one each time a node process starts (it reads its old
 * record first), so a restarted node is distinguishable from the previous
 * incarnation. Heartbeats are plain (non-transactional) puts: the writer is
 * the only node that writes its own record.
 *
 * NodeLiveness owns no timer: the node's composition root calls heartbeat()
 * and refresh() from its loop (DESIGN.md §2: timers belong to src/server's
 * node.ts).
 *
 * Ownership: src/server.
 */
import { CorruptionError } from '../util/errors.js';
import type { Clock } from '../util/hlc.js';
import { NODE_LIVENESS_SPAN, decodeNodeLivenessKey, nodeLivenessKey } from '../../storage/keys.js';
import type { KvClient } from '../kv/kv-client.js';
import { ServerError } from './config.js';

export interface LivenessRecord {
  readonly nodeId: number;
  readonly epoch: number;
  /** Wall time in µs after which the node counts as dead. */
  readonly expirationMicros: number;
  readonly draining: boolean;
  readonly decommissioning: boolean;
}

const RECORD_BYTES = 14;

export function encodeLivenessRecord(r: LivenessRecord): Buffer {
  const b = Buffer.allocUnsafe(RECORD_BYTES);
  b.writeUInt8(1, 0);
  b.writeUInt32BE(r.epoch, 1);
  b.writeDoubleBE(r.expirationMicros, 5);
  b.writeUInt8((r.draining ? 1 : 0) | (r.decommissioning ? 2 : 0), 13);
  return b;
}

export function decodeLivenessRecord(nodeId: number, b: Buffer): LivenessRecord {
  if (b.length !== RECORD_BYTES || b.readUInt8(0) !== 1) {
    throw new CorruptionError(`server: liveness record of n${nodeId} is malformed (${b.toString('hex')})`);
  }
  const flags = b.readUInt8(13);
  return { nodeId, epoch: b.readUInt32BE(1), expirationMicros: b.readDoubleBE(5), draining: (flags & 1) !== 0, decommissioning: (flags & 2) !== 0 };
}

export function isLive(r: LivenessRecord, nowMicros: number): boolean {
  return r.expirationMicros > nowMicros;
}

export class NodeLiveness {
  private epoch = 0;
  private records = new Map<number, LivenessRecord>();
  private lastHeartbeatOk = 0;
  draining = false;
  decommissioning = false;
  heartbeats = 0;
  heartbeatFailures = 0;

  constructor(
    private readonly kv: KvClient,
    private readonly clock: Clock,
    readonly nodeId: number,
    readonly ttlMicros: number,
  ) {}

  /** First heartbeat of this process: epoch = previous epoch + 1. */
  async start(): Promise<void> {
    const old = await this.kv.get(nodeLivenessKey(this.nodeId));
    const prev = old === null ? null : decodeLivenessRecord(this.nodeId, old);
    this.epoch = (prev?.epoch ?? 0) + 1;
    if (prev !== null) this.decommissioning = prev.decommissioning;
    await this.heartbeat();
  }

  /** Writes this node's record with a fresh expiration. */
  async heartbeat(): Promise<void> {
    const rec: LivenessRecord = {
      nodeId: this.nodeId,
      epoch: this.epoch,
      expirationMicros: this.clock.physicalNow() + this.ttlMicros,
      draining: this.draining,
      decommissioning: this.decommissioning,
    };
    try {
      await this.kv.put(nodeLivenessKey(this.nodeId), encodeLivenessRecord(rec));
      this.records.set(this.nodeId, rec);
      this.lastHeartbeatOk = this.clock.physicalNow();
      this.heartbeats++;
    } catch (e) {
      this.heartbeatFailures++;
      throw e;
    }
  }

  /**
   * Sets another node's decommissioning flag in its record (used when that
   * node does not answer): a conditional put against the record read, so a
   * concurrent heartbeat of the node is never overwritten blindly.
   */
  async setFlagOf(nodeId: number, decommissioning: boolean): Promise<void> {
    const key = nodeLivenessKey(nodeId);
    const old = await this.kv.get(key);
    if (old === null) throw new ServerError('server.unknown_node', `server: n${nodeId} has no liveness record (no such node)`);
    const rec = decodeLivenessRecord(nodeId, old);
    await this.kv.cput(key, encodeLivenessRecord({ ...rec, decommissioning }), old);
  }

  /** Reads every node's record (one scan of the liveness span). */
  async refresh(): Promise<ReadonlyMap<number, LivenessRecord>> {
    const rows = await this.kv.scan(NODE_LIVENESS_SPAN.key, NODE_LIVENESS_SPAN.endKey);
    const next = new Map<number, LivenessRecord>();
    for (const row of rows) {
      const id = decodeNodeLivenessKey(row.key);
      next.set(id, decodeLivenessRecord(id, row.value));
    }
    this.records = next;
    return next;
  }

  /** The records as of the last refresh or heartbeat. */
  get cached(): ReadonlyMap<number, LivenessRecord> {
    return this.records;
  }

  isLive(nodeId: number, nowMicros = this.clock.physicalNow()): boolean {
    const r = this.records.get(nodeId);
    return r !== undefined && isLive(r, nowMicros);
  }

  /** True while our own last successful heartbeat has not expired. */
  get selfLive(): boolean {
    return this.lastHeartbeatOk + this.ttlMicros > this.clock.physicalNow();
  }

  get currentEpoch(): number {
    return this.epoch;
  }
}
