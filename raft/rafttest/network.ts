/**
 * A deterministic in-memory network of RawNodes for table tests and
 * property tests (etcd/raft's `network` test helper). Every node persists
 * into a MemoryStorage and applies committed entries to an append-only list;
 * messages travel through one FIFO queue and are delivered by `deliverAll()`
 * until the group is quiet.
 *
 * Faults: `isolate(id)`, `cut(a, b)` (both directions), `heal()`,
 * `dropRate` and `reorder` with the injected Prng, `ignore(type)`, `restart(id)`. Nothing here reads a
 * clock or Math.random: the same seed gives the same run.
 */
import { Prng } from '../../src/util/prng.js';
import { decodeConfChange } from '../conf-change-codec.js';
import { RawNode } from '../raw-node.js';
import { MemoryStorage } from '../storage.js';
import {
  EMPTY_CONF_STATE,
  EntryType,
  MessageType,
  ReadOnlyOption,
  StateType,
  type Config,
  type Entry,
  type Message,
  type ReadState,
  type Snapshot,
} from '../types.js';

export interface NetworkNode {
  readonly id: number;
  rawNode: RawNode;
  readonly storage: MemoryStorage;
  /** Applied normal entries with data, in order. */
  readonly applied: Entry[];
  readonly readStates: ReadState[];
}

export interface NetworkOptions {
  readonly electionTick?: number;
  readonly heartbeatTick?: number;
  readonly preVote?: boolean;
  readonly checkQuorum?: boolean;
  readonly readOnlyOption?: ReadOnlyOption;
  readonly maxSizePerMsg?: number;
  readonly maxInflightMsgs?: number;
  readonly maxCommittedSizePerReady?: number;
  readonly stepDownOnRemoval?: boolean;
  readonly skipHeartbeatsAfterAppends?: boolean;
  readonly seed?: number;
}

/**
 * Storage whose snapshot is generated on demand at the node's applied index,
 * as a real replica does when it must send one (so it always carries the
 * current configuration and state).
 */
class OnDemandSnapshotStorage extends MemoryStorage {
  refresh: (() => void) | null = null;
  override snapshot(): Snapshot {
    this.refresh?.();
    return super.snapshot();
  }

  /** The last recorded snapshot, without refreshing it. */
  stored(): Snapshot {
    return super.snapshot();
  }
}

export class Network {
  readonly nodes = new Map<number, NetworkNode>();
  private queue: Message[] = [];
  private readonly cutPairs = new Set<string>();
  private readonly ignored = new Set<MessageType>();
  /** Probability of dropping any message in deliverAll. */
  dropRate = 0;
  /** Deliver each round's messages in a random order. */
  reorder = false;
  readonly prng: Prng;
  /** Every message delivered, in order, when `recordTrace` is set (for assertions). */
  readonly trace: Message[] = [];
  recordTrace = false;

  constructor(
    voters: readonly number[],
    private readonly opts: NetworkOptions = {},
  ) {
    this.prng = new Prng(opts.seed ?? 1);
    for (const id of voters) {
      const storage = new OnDemandSnapshotStorage();
      storage.applySnapshot({ data: new Uint8Array(0), metadata: { index: 1, term: 1, confState: { ...EMPTY_CONF_STATE, voters } } });
      this.nodes.set(id, { id, rawNode: new RawNode(this.config(id, storage, 1)), storage, applied: [], readStates: [] });
      storage.refresh = () => this.snapshotAtApplied(id);
    }
  }

  private config(id: number, storage: MemoryStorage, applied: number): Config {
    const o = this.opts;
    return {
      id,
      electionTick: o.electionTick ?? 10,
      heartbeatTick: o.heartbeatTick ?? 1,
      storage,
      applied,
      preVote: o.preVote ?? false,
      checkQuorum: o.checkQuorum ?? false,
      readOnlyOption: o.readOnlyOption ?? ReadOnlyOption.Safe,
      maxSizePerMsg: o.maxSizePerMsg ?? Number.MAX_SAFE_INTEGER,
      maxInflightMsgs: o.maxInflightMsgs ?? 256,
      maxCommittedSizePerReady: o.maxCommittedSizePerReady ?? Number.MAX_SAFE_INTEGER,
      stepDownOnRemoval: o.stepDownOnRemoval ?? false,
      skipHeartbeatsAfterAppends: o.skipHeartbeatsAfterAppends ?? false,
      prng: new Prng((this.opts.seed ?? 1) * 1000 + id),
    };
  }

  node(id: number): NetworkNode {
    const n = this.nodes.get(id);
    if (n === undefined) throw new Error(`network: no node ${id}`);
    return n;
  }

  raft(id: number): RawNode['raft'] {
    return this.node(id).rawNode.raft;
  }

  /** Handles every pending Ready of every node (persist, send, apply, advance). */
  processReadies(): boolean {
    let any = false;
    for (const n of this.nodes.values()) {
      while (n.rawNode.hasReady()) {
        any = true;
        const rd = n.rawNode.ready();
        if (rd.snapshot !== null) {
          n.storage.applySnapshot(rd.snapshot);
          n.applied.length = 0;
          n.applied.push(...decodeApplied(rd.snapshot.data));
        }
        n.storage.append(rd.entries);
        if (rd.hardState !== null) n.storage.setHardState(rd.hardState);
        for (const m of rd.messages) this.queue.push(m);
        for (const e of rd.committedEntries) {
          if (e.type === EntryType.ConfChange) n.rawNode.applyConfChange(decodeConfChange(e.data));
          else if (e.data.length > 0) n.applied.push(e);
        }
        for (const rs of rd.readStates) n.readStates.push(rs);
        n.rawNode.advance(rd);
      }
    }
    return any;
  }

  /** Delivers queued messages (subject to faults) and processes Readies until quiet. */
  deliverAll(maxRounds = 10_000): void {
    for (let round = 0; round < maxRounds; round++) {
      this.processReadies();
      if (this.queue.length === 0) return;
      const msgs = this.queue;
      this.queue = [];
      if (this.reorder) this.prng.shuffle(msgs);
      for (const m of msgs) this.deliver(m);
    }
    throw new Error('network: did not quiesce');
  }

  private deliver(m: Message): void {
    const n = this.nodes.get(m.to);
    const lost =
      n === undefined || this.cutPairs.has(`${m.from}-${m.to}`) || this.ignored.has(m.type) || (this.dropRate > 0 && this.prng.float() < this.dropRate);
    // A snapshot is streamed: the sender learns whether it arrived (as the
    // cluster layer reports with RawNode.reportSnapshot).
    if (m.type === MessageType.MsgSnap) this.nodes.get(m.from)?.rawNode.reportSnapshot(m.to, !lost);
    if (lost || n === undefined) return;
    if (this.recordTrace) this.trace.push(m);
    try {
      n.rawNode.step(m);
    } catch (e) {
      // A forwarded proposal that the receiver cannot accept is dropped, as a network would.
      if (!(e instanceof Error && 'code' in e)) throw e;
    }
  }

  /** Steps a message into its destination directly, then stabilizes. */
  send(m: Message): void {
    this.queue.push(m);
    this.deliverAll();
  }

  campaign(id: number): void {
    this.node(id).rawNode.campaign();
    this.deliverAll();
  }

  propose(id: number, data: string | Uint8Array): void {
    this.node(id).rawNode.propose(typeof data === 'string' ? Buffer.from(data) : data);
    this.deliverAll();
  }

  tick(id: number, n = 1): void {
    for (let i = 0; i < n; i++) this.node(id).rawNode.tick();
  }

  /** Ticks every node once and delivers, `n` times. */
  tickAll(n = 1): void {
    for (let i = 0; i < n; i++) {
      for (const node of this.nodes.values()) node.rawNode.tick();
      this.deliverAll();
    }
  }

  cut(a: number, b: number): void {
    this.cutPairs.add(`${a}-${b}`);
    this.cutPairs.add(`${b}-${a}`);
  }

  isolate(id: number): void {
    for (const other of this.nodes.keys()) if (other !== id) this.cut(id, other);
  }

  ignore(t: MessageType): void {
    this.ignored.add(t);
  }

  heal(): void {
    this.cutPairs.clear();
    this.ignored.clear();
    this.dropRate = 0;
  }

  /** Records a snapshot of node `id` at its applied index (data = its applied entries). */
  private snapshotAtApplied(id: number): void {
    const n = this.node(id);
    const r = n.rawNode.raft;
    const applied = r.raftLog.applied;
    if (applied <= (n.storage as OnDemandSnapshotStorage).stored().metadata.index) return;
    n.storage.createSnapshot(applied, r.trk.confState(), encodeApplied(n.applied));
  }

  /** Snapshots node `id` at its applied index and discards the log up to there. */
  compact(id: number): void {
    const n = this.node(id);
    const applied = n.rawNode.raft.raftLog.applied;
    if (applied <= n.storage.firstIndex() - 1) return;
    this.snapshotAtApplied(id);
    n.storage.compact(applied);
  }

  /** Crash and restart `id` from its storage. */
  restart(id: number): void {
    const n = this.node(id);
    const applied = n.rawNode.raft.raftLog.applied;
    // The state machine and its configuration are durable at `applied`
    // (Storage.initialState must return the ConfState as of `applied`).
    this.snapshotAtApplied(id);
    n.rawNode = new RawNode(this.config(id, n.storage, applied));
  }

  /**
   * The id of a current leader: a voter of its own configuration whose term
   * no member of that configuration has passed; 0 when there is none.
   */
  leader(): number {
    for (const n of this.nodes.values()) {
      const r = n.rawNode.raft;
      if (r.state !== StateType.Leader || !r.trk.isVoter(r.id)) continue;
      let current = true;
      for (const id of r.trk.ids()) if ((this.nodes.get(id)?.rawNode.raft.term ?? 0) > r.term) current = false;
      if (current) return n.id;
    }
    return 0;
  }
}

/** Test-only encoding of an applied-entry list: (term u32, index u32, len u32, data)*. */
function encodeApplied(ents: readonly Entry[]): Uint8Array {
  const parts: Buffer[] = [];
  for (const e of ents) {
    const h = Buffer.alloc(12);
    h.writeUInt32BE(e.term, 0);
    h.writeUInt32BE(e.index, 4);
    h.writeUInt32BE(e.data.length, 8);
    parts.push(h, Buffer.from(e.data));
  }
  return Buffer.concat(parts);
}

function decodeApplied(data: Uint8Array): Entry[] {
  const b = Buffer.from(data);
  const out: Entry[] = [];
  for (let off = 0; off < b.length; ) {
    const len = b.readUInt32BE(off + 8);
    out.push({ term: b.readUInt32BE(off), index: b.readUInt32BE(off + 4), type: EntryType.Normal, data: b.subarray(off + 12, off + 12 + len) });
    off += 12 + len;
  }
  return out;
}
