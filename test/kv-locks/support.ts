/** Helpers of the lock tests: the leaseholder of a key, bounded waiting for a condition. */
import type { Replica } from '../../src/kv/replica.js';
import type { TestCluster } from '../support/test-cluster.js';

/** The replica holding the valid lease over `key` (null: none right now). */
export function leaseholder(c: TestCluster, key: Buffer): Replica | null {
  for (let i = 0; i < c.size; i++) {
    if (!c.isRunning(i)) continue;
    for (const r of c.store(i).allReplicas()) {
      const d = r.desc;
      if (Buffer.compare(key, d.startKey) >= 0 && Buffer.compare(key, d.endKey) < 0 && r.ownsValidLease()) return r;
    }
  }
  return null;
}

/** Waits (bounded) for a condition, polling; fails naming `what` on timeout. */
export async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Locks held in the lock tables of every replica of the cluster. */
export function heldLocks(c: TestCluster): number {
  let n = 0;
  for (let i = 0; i < c.size; i++) if (c.isRunning(i)) for (const r of c.store(i).allReplicas()) n += r.concurrency.lockTable.metrics().held;
  return n;
}
