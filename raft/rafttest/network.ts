/**
 * A deterministic in-memory network of RawNodes for table tests and
 * property tests (etcd/raft's `network` test helper). Every node persists
 * into a MemoryStorage and applies committed entries to an append-only list;
 * messages travel through one FIFO queue and are delivered by `deliverAll()`
 * until the group is quiet.
 *
 * Faults: `isolate(id)`, `cut(a, b)` (both directions), `heal()`,
 * `dropRate` with the injected Prng, `ignore(type)`. Nothing here reads a
 * clock or Math.random: the same seed gives the same run.
 */
import { Prng } from '../../src/util/prng.js';
import { decodeConfChange } from '../conf-change-codec.js';
import { RawNode } from '../raw-node.js';
import { MemoryStorage } from '../storage.js';
import {
  EMPTY_CONF_STATE,
  EntryType,
  ReadOnlyOption,
  StateType,
  type Config,
  type Entry,
  type Message,
  type MessageType,
  type ReadState,
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
  readonly seed?: number;
}

export class Network {
  readonly nodes = new Map<number, NetworkNode>();
  private queue: Message[] = [];
  private readonly cutPairs = new Set<string>();
  private readonly ignored = new Set<MessageType>();
  /** Probability of dropping any message in deliverAll. */
  dropRate = 0;
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
      const storage = new MemoryStorage();
      storage.applySnapshot({ data: new Uint8Array(0), metadata: { index: 1, term: 1, confState: { ...EMPTY_CONF_STATE, voters } } });
      this.nodes.set(id, { id, rawNode: new RawNode(this.config(id, storage, 1)), storage, applied: [], readStates: [] });
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
        if (rd.snapshot !== null) n.storage.applySnapshot(rd.snapshot);
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
      for (const m of msgs) this.deliver(m);
    }
    throw new Error('network: did not quiesce');
  }

  private deliver(m: Message): void {
    if (this.cutPairs.has(`${m.from}-${m.to}`) || this.ignored.has(m.type)) return;
    if (this.dropRate > 0 && this.prng.float() < this.dropRate) return;
    const n = this.nodes.get(m.to);
    if (n === undefined) return;
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

  /** Crash and restart `id` from its storage. */
  restart(id: number): void {
    const n = this.node(id);
    const applied = n.rawNode.raft.raftLog.applied;
    n.rawNode = new RawNode(this.config(id, n.storage, applied));
  }

  /** The leader id if exactly one node believes it leads the highest term, else 0. */
  leader(): number {
    let best = 0;
    let term = -1;
    for (const n of this.nodes.values()) {
      const r = n.rawNode.raft;
      if (r.state === StateType.Leader && r.term > term) {
        best = n.id;
        term = r.term;
      }
    }
    return best;
  }
}
