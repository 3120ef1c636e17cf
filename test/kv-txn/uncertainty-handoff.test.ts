/**
 * The register handoff in process (jepsen-style/workloads/register-handoff.ts
 * under the clock-writer nemesis, issue 9's skip-uncertainty-restart canary):
 * n1's clock runs ahead by 0.6 × max offset; a write through n1 is
 * acknowledged, then a transaction through n4 — a gateway with no replica,
 * whose clock has heard nothing of that write — reads the key. Its read
 * timestamp is below the write's, inside its uncertainty window: a read that
 * started after the acknowledgement must see the write (DESIGN.md §6, "Stale
 * reads from uncertainty").
 *
 * With observed timestamps (src/kv/uncertainty.ts) the reader's limit on the
 * leaseholder n2 is narrowed to n2's reading on arrival, which is above the
 * write (n2 evaluated it): the restart still happens, every read is current.
 * The canary (reads ignore their uncertainty limit) must read stale values in
 * the same schedule — the test shows the schedule exercises the window.
 *
 * Manual clocks advanced by the test (1 ms per round, all nodes), so that every
 * write's timestamp is above the reader gateway's clock; the ticker still
 * drives Raft and leases.
 */
import { describe, it, expect } from 'vitest';
import { Prng } from '../../src/util/prng.js';
import { formatTimestamp, tsLess, type Timestamp } from '../../src/util/hlc.js';
import { compareBytes } from '../../storage/encoding/bytes.js';
import { TxnDB } from '../../src/kv/client/txn-db.js';
import { canary } from '../../src/kv/canary.js';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { descriptors } from '../kv-ranges/support.js';
import { distSender, startTxnCluster, tkey, batch, str } from './support.js';

const start = autoCloseClusters();
const MAX_OFFSET = 500_000;
const SKEW = 300_000;
const ROUNDS = 40;

function rangeOf(c: TestCluster, k: Buffer): number {
  const d = descriptors(c).find((x) => compareBytes(x.startKey, k) <= 0 && compareBytes(k, x.endKey) < 0);
  if (d === undefined) throw new Error('no range');
  return d.rangeId;
}

interface Outcome {
  readonly stale: string[];
  /** Rounds whose read timestamp was below the write's (the window the test is about). */
  readonly inWindow: number;
}

async function handoff(c: TestCluster, writer: TxnDB, reader: TxnDB, k: Buffer, rounds: number): Promise<Outcome> {
  const stale: string[] = [];
  let inWindow = 0;
  for (let r = 1; r <= rounds; r++) {
    for (let i = 0; i < c.size; i++) c.node(i).physical?.advance(1000);
    let w: Timestamp | null = null;
    await writer.runTxn(async (t) => {
      await t.commitInBatch(batch((b) => b.put(k, Buffer.from(String(r)))));
      w = t.provisionalCommitTimestamp();
    });
    let readTs: Timestamp | null = null;
    const got = await reader.runTxn(async (t) => {
      readTs ??= t.readTimestamp();
      return str(((await t.run(batch((b) => b.get(k))))[0] as { value: Buffer | null }).value);
    });
    if (readTs !== null && w !== null && tsLess(readTs, w)) inWindow++;
    if (got !== String(r)) stale.push(`round ${r}: read ${got} at ${formatTimestamp(readTs as unknown as Timestamp)} after the write of ${r} at ${formatTimestamp(w as unknown as Timestamp)} was acknowledged`);
  }
  return { stale, inWindow };
}

describe('register handoff under a clock ahead (issue 5 × the skip-uncertainty-restart canary)', () => {
  it('every read after an acknowledged write sees it; the canary build reads stale values in the same schedule', async () => {
    const env = await startTxnCluster(start, { nodes: 3, clock: 'manual', maxOffsetMicros: MAX_OFFSET });
    const { c } = env;
    const writer = env.dbs[0] as TxnDB;
    const k = tkey(7);
    // The key's lease on n2; writes through n1 (ahead); reads through n4 (no replica).
    const rangeId = rangeOf(c, k);
    // An idle range's lease may have lapsed: a read acquires it.
    await writer.runTxn((t) => t.run(batch((b) => b.get(k))));
    await c.waitFor(() => c.leaseholder(rangeId) >= 0, 10_000, 'a leaseholder');
    const lh = c.leaseholder(rangeId);
    if (lh !== 1) await c.store(lh).transferLease(rangeId, descriptors(c).find((d) => d.rangeId === rangeId)?.replicas.find((r) => r.nodeId === 2)?.replicaId as number);
    await c.waitFor(() => c.leaseholder(rangeId) === 1, 10_000, 'the lease on n2');
    const g = await c.addNode();
    const reader = new TxnDB({ sender: distSender(c, g), clock: c.node(g).clock, nodeId: g + 1, prng: new Prng(44) });
    c.node(0).physical?.advance(SKEW);

    const correct = await handoff(c, writer, reader, k, ROUNDS);
    canary.skipUncertaintyRestart = true;
    let broken: Outcome;
    try {
      broken = await handoff(c, writer, reader, tkey(8), ROUNDS);
    } finally {
      canary.skipUncertaintyRestart = false;
    }
    console.log(`handoff: correct build ${correct.stale.length} stale of ${ROUNDS} (${correct.inWindow} reads below the write); canary ${broken.stale.length} stale (${broken.inWindow} below)`);
    expect(correct.inWindow, 'the schedule must put reads below the writes').toBeGreaterThanOrEqual(ROUNDS / 2);
    expect(correct.stale).toEqual([]);
    expect(broken.stale.length, 'the canary must be caught').toBeGreaterThan(0);
  }, 120_000);
});
