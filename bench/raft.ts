/**
 * Raft benchmark (`npm run bench:raft`, issue 3): a 3-node group in one
 * process with an instant in-memory network and MemoryStorage. The leader
 * proposes 100-byte entries in batches (proposeBatch); every node's Ready is
 * handled as the contract says (persist entries and hard state, send, apply,
 * advance), messages are stepped straight into their destination, and the
 * loop runs until the group is quiet before the next batch. Prints committed
 * (applied on the leader) entries/s per batch size, and heap bytes allocated
 * per entry; also entries per CPU-second of this process, the steadier
 * figure when other work competes for the cores. Target: ≥ 300,000
 * entries/s on the 2-core machine, so that
 * consensus logic is never the database's bottleneck. It prints figures and
 * never fails on them (DESIGN.md §5).
 *
 *   npm run bench:raft [-- --seconds 3 --batches 1,16,64,256,1024]
 *
 * Allocation: the process re-executes itself with --expose-gc and a large
 * young generation, runs a fixed number of entries between two forced GCs
 * and reports the growth of used heap per entry (a lower bound if a
 * scavenge happened anyway, which it says). Retained log entries are
 * counted too (MemoryStorage keeps the whole log: the bench compacts it every
 * batch, as a replica truncates its log).
 */
import { spawnSync } from 'node:child_process';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Prng } from '../src/util/prng.js';
import { RawNode } from '../raft/raw-node.js';
import { MemoryStorage } from '../raft/storage.js';
import { EMPTY_CONF_STATE, EntryType, StateType, type Entry, type Message } from '../raft/types.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
}

const SECONDS = Number(arg('seconds', '3'));
const BATCHES = arg('batches', '1,16,64,256,1024').split(',').map(Number);
const PAYLOAD = 100;
const IDS = [1, 2, 3];

interface BenchNode {
  readonly rn: RawNode;
  readonly storage: MemoryStorage;
  applied: number;
}

/** A bootstrapped 3-node group with node 1 elected. */
class Group {
  readonly nodes = new Map<number, BenchNode>();
  private queue: Message[] = [];

  constructor() {
    for (const id of IDS) {
      const storage = new MemoryStorage();
      storage.applySnapshot({ data: new Uint8Array(0), metadata: { index: 1, term: 1, confState: { ...EMPTY_CONF_STATE, voters: IDS } } });
      const rn = new RawNode({
        id,
        electionTick: 10,
        heartbeatTick: 1,
        storage,
        applied: 1,
        maxSizePerMsg: 1 << 20,
        maxInflightMsgs: 256,
        prng: new Prng(id),
      });
      this.nodes.set(id, { rn, storage, applied: 0 });
    }
    this.leader.rn.campaign();
    this.settle();
    if (this.leader.rn.raft.state !== StateType.Leader) throw new Error('bench: node 1 did not become leader');
  }

  get leader(): BenchNode {
    return this.nodes.get(1) as BenchNode;
  }

  /** Handles Readies and delivers messages until the group is quiet. */
  settle(): void {
    for (;;) {
      for (const n of this.nodes.values()) {
        while (n.rn.hasReady()) {
          const rd = n.rn.ready();
          if (rd.entries.length > 0) n.storage.append(rd.entries);
          if (rd.hardState !== null) n.storage.setHardState(rd.hardState);
          for (let k = 0; k < rd.messages.length; k++) this.queue.push(rd.messages[k] as Message);
          const ce = rd.committedEntries;
          for (let k = 0; k < ce.length; k++) if ((ce[k] as Entry).type === EntryType.Normal && (ce[k] as Entry).data.length > 0) n.applied++;
          n.rn.advance(rd);
        }
      }
      if (this.queue.length === 0) return;
      const q = this.queue;
      this.queue = [];
      for (let k = 0; k < q.length; k++) {
        const m = q[k] as Message;
        (this.nodes.get(m.to) as BenchNode).rn.step(m);
      }
    }
  }

  /** Drops applied log entries (a replica truncates its log behind the applied index). */
  compact(): void {
    for (const n of this.nodes.values()) {
      const applied = n.rn.raft.raftLog.applied;
      if (applied > n.storage.firstIndex()) n.storage.compact(applied - 1);
    }
  }
}

function payloads(n: number): Uint8Array[] {
  const p = new Prng(7);
  return Array.from({ length: n }, () => p.bytes(PAYLOAD));
}

/** Proposes `batch`-sized batches for `seconds`; returns entries/s committed and applied on the leader. */
function throughput(batch: number, seconds: number): { rate: number; cpuRate: number; entries: number } {
  const g = new Group();
  const pool = payloads(4096);
  const datas: Uint8Array[] = new Array<Uint8Array>(batch);
  let next = 0;
  const start = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  let rounds = 0;
  for (;;) {
    for (let k = 0; k < batch; k++) datas[k] = pool[next++ & 4095] as Uint8Array;
    g.leader.rn.proposeBatch(datas);
    g.settle();
    if ((++rounds & 15) === 0) {
      g.compact();
      if (process.hrtime.bigint() >= deadline) break;
    }
  }
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cpuSecs = (cpu.user + cpu.system) / 1e6;
  for (const n of g.nodes.values()) if (n.applied !== g.leader.applied) throw new Error('bench: replicas applied different counts');
  return { rate: g.leader.applied / secs, cpuRate: g.leader.applied / cpuSecs, entries: g.leader.applied };
}

/** Heap bytes allocated per entry (child process with --expose-gc). */
function allocation(batch: number): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('bench: run with --expose-gc');
  const g = new Group();
  const pool = payloads(4096);
  const datas: Uint8Array[] = new Array<Uint8Array>(batch);
  // Warm up, so the JIT's own allocations are not counted.
  let next = 0;
  const run = (entries: number): void => {
    for (let done = 0; done < entries; done += batch) {
      for (let k = 0; k < batch; k++) datas[k] = pool[next++ & 4095] as Uint8Array;
      g.leader.rn.proposeBatch(datas);
      g.settle();
    }
    g.compact();
  };
  run(50_000);
  const n = 20_000;
  gc();
  let gcs = 0;
  const obs = new PerformanceObserver((l) => (gcs += l.getEntries().length));
  obs.observe({ entryTypes: ['gc'] });
  const before = process.memoryUsage().heapUsed;
  run(n);
  const after = process.memoryUsage().heapUsed;
  // GC entries are delivered asynchronously: count them after a turn.
  setTimeout(() => {
    obs.disconnect();
    const perEntry = (after - before) / n;
    console.log(
      `  batch ${String(batch).padStart(5)}: ${perEntry.toFixed(0).padStart(6)} heap bytes allocated per entry (3 replicas, incl. the ${PAYLOAD}-byte payload's entry objects; ${gcs === 0 ? 'no GC during the run' : `${gcs} GC(s) during the run: a lower bound`})`,
    );
  }, 50);
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US').padStart(10);
}

function main(): void {
  const childBatch = process.argv.indexOf('--alloc-child');
  if (childBatch >= 0) {
    allocation(Number(process.argv[childBatch + 1]));
    return;
  }
  console.log(`raft bench: 3 replicas in one process, instant network, MemoryStorage, ${PAYLOAD}-byte entries, ${SECONDS}s per batch size`);
  for (const b of BATCHES) {
    throughput(b, Math.min(0.5, SECONDS)); // warm-up
    const { rate, cpuRate, entries } = throughput(b, SECONDS);
    console.log(
      `  batch ${String(b).padStart(5)}: ${fmt(rate)} committed entries/s, ${fmt(cpuRate)} per CPU-second (${entries.toLocaleString('en-US')} entries)`,
    );
  }
  console.log('target: ≥ 300,000 committed entries/s');
  console.log('allocation (child process with --expose-gc, a 256 MB young generation):');
  const self = fileURLToPath(import.meta.url);
  for (const b of BATCHES) {
    const r = spawnSync(process.execPath, ['--expose-gc', '--min-semi-space-size=256', '--max-semi-space-size=256', self, '--alloc-child', String(b)], { encoding: 'utf8' });
    process.stdout.write(r.stdout);
    if (r.status !== 0) process.stderr.write(r.stderr);
  }
}

main();
