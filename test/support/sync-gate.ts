/**
 * A gate on an engine's synced writes (a slow fsync a test controls): the
 * engine's writes go in submission order, as LevelDB's do (a write queued
 * behind a synced one completes after it), and synced ones wait while the
 * gate is closed. Used to hold a Store's Ready loop inside a round.
 *
 *   const g = gateSyncs(c.node(i).engine);
 *   g.close(); …; await c.waitFor(() => g.holding); …; g.open();
 *   g.passOne();                            // only the held write goes on
 *
 * Ownership: replaces `e.write` for the engine's lifetime; open() the gate
 * in `finally` so a failed test never leaves a store's loop stuck.
 *
 * gatedCluster(start): a 3-node cluster with a gate on every node, its
 * leader and leaseholder together — elections take 300 ticks and leases
 * 10 s (while a loop is held no heartbeat answer reaches the leader).
 */
import type { Engine, WriteBatch, WriteOptions } from '../../storage/engine.js';
import type { KvSettings } from '../../src/kv/settings.js';
import type { TestCluster, TestClusterOptions } from './test-cluster.js';

export interface SyncGate {
  close(): void;
  open(): void;
  /** Lets the synced write waiting at the closed gate through; the gate stays closed for the next ones. */
  passOne(): void;
  /** A synced write is waiting at the closed gate. */
  readonly holding: boolean;
}

export function gateSyncs(e: Engine): SyncGate {
  const write = e.write.bind(e);
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  let holding = false;
  let passes = 0;
  let release: (() => void) | null = null;
  const opened = (): Promise<void> =>
    new Promise<void>((r) => {
      release = r;
    });
  e.write = (b: WriteBatch, o?: WriteOptions): Promise<void> => {
    const p = queue.then(async () => {
      while (o?.sync === true && closed && passes === 0) {
        holding = true;
        await opened();
      }
      if (o?.sync === true && closed) passes--;
      holding = false;
      return write(b, o);
    });
    queue = p.catch(() => undefined);
    return p;
  };
  return {
    close: () => void (closed = true),
    open: () => {
      closed = false;
      (release as (() => void) | null)?.();
    },
    passOne: () => {
      passes++;
      (release as (() => void) | null)?.();
    },
    get holding() {
      return holding;
    },
  };
}

/** See the header. `start`: the test file's autoCloseClusters(). */
export async function gatedCluster(
  start: (opts: TestClusterOptions) => Promise<TestCluster>,
  settings: Partial<KvSettings> = {},
): Promise<{ c: TestCluster; lh: number; followers: number[]; gates: SyncGate[] }> {
  const c = await start({ nodes: 3, settings: { electionTicks: 300, leaseDurationMicros: 10_000_000, ...settings } });
  c.startTicker();
  // The first election takes 300 ticks or more: a put before any leader exists exhausts the client's retries
  // (NotLeaseHolder, "leaseholder unknown") on a loaded machine.
  await c.waitFor(() => c.leader() >= 0, 30_000, 'a Raft leader');
  await c.client(0).put(Buffer.from('\x90gate-warm', 'latin1'), Buffer.from('w'));
  await c.waitFor(() => c.leader() >= 0 && c.leader() === c.leaseholder(), 20_000, 'leader and leaseholder together');
  const lh = c.leaseholder();
  const followers = [0, 1, 2].filter((i) => i !== lh);
  const gates = [0, 1, 2].map((i) => gateSyncs(c.node(i).engine));
  return { c, lh, followers, gates };
}
