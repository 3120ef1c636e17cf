/**
 * A seeded random workload (puts, cputs, deletes, deleteRanges, gets, scans
 * from many concurrent clients through different gateways) under message
 * loss and delay, with a leaseholder restart in the middle; then:
 *   - every replica's checksum (ComputeChecksum, xxhash over the range's
 *     replicated spans at one applied index) is identical;
 *   - the final state agrees with what the clients saw: every key whose last
 *     acknowledged operation is known (no ambiguous or later write) holds it;
 *   - incremental MVCC stats equal a recount on every replica.
 * Ambiguous outcomes are expected and tolerated: such a key's value may be
 * either outcome (generator → applier → validator, STYLE.md §13).
 */
import { describe, it, expect } from 'vitest';
import { Prng } from '../../src/util/prng.js';
import { CairnError } from '../../src/util/errors.js';
import { autoCloseClusters } from '../support/test-cluster.js';

const startCluster = autoCloseClusters();

const KEYS = 40;
const key = (i: number): Buffer => Buffer.from(`\x90r${String(i).padStart(3, '0')}`, 'latin1');
const SPAN = [Buffer.from('\x90', 'latin1'), Buffer.from('\x91', 'latin1')] as const;

describe('random workload', () => {
  // Both apply paths of the Store's Ready loop (STYLE.md §9: internal knobs vary).
  it.each([true, false])('leaves identical replicas that agree with every acknowledged operation (applyDurableEarly %s)', async (applyDurableEarly) => {
    const seed = Number(process.env['CAIRN_SEED'] ?? 42);
    const prng = new Prng(seed);
    const c = await startCluster({ nodes: 3, seed, settings: { raftLogMaxEntries: 100, truncationIntervalTicks: 5, applyDurableEarly } });
    c.startTicker();
    for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) if (i !== j) c.node(i).rpc!.faults.setFaults(j + 1, { dropProbability: 0.02, delayMs: [0, 3] });
    /** Per key: the value after its last acknowledged write, or 'unknown' after an ambiguous one. */
    const model = new Map<number, string | null | 'unknown'>();
    let seq = 0;
    let ambiguous = 0;
    // Worker w owns the keys i ≡ w (mod 4), so each key's writes are sequential
    // and its last acknowledged write is well defined; reads go anywhere.
    const worker = async (w: number, ops: number): Promise<void> => {
      const kv = c.client(w % 3, 300); // a dropped request or response times out (ambiguous)
      for (let n = 0; n < ops; n++) {
        const i = (prng.intn(KEYS / 4) * 4 + w) % KEYS;
        const val = `w${w}-${seq++}`;
        const roll = prng.intn(10);
        try {
          if (roll < 4) {
            await kv.put(key(i), Buffer.from(val));
            model.set(i, val);
          } else if (roll < 5) {
            const cur = model.get(i);
            if (cur === 'unknown') continue;
            await kv.cput(key(i), Buffer.from(val), cur === undefined || cur === null ? null : Buffer.from(cur));
            model.set(i, val);
          } else if (roll < 6) {
            await kv.delete(key(i));
            model.set(i, null);
          } else if (roll < 7) {
            await kv.deleteRange(key(i), Buffer.concat([key(i), Buffer.from([0])]));
            model.set(i, null);
          } else if (roll < 9) {
            const got = (await kv.get(key(i)))?.toString() ?? null;
            const want = model.get(i);
            if (want !== 'unknown') expect(got).toBe(want ?? null);
          } else {
            await kv.scan(SPAN[0], SPAN[1]);
          }
        } catch (e) {
          if (!(e instanceof CairnError) || !e.ambiguous) throw e;
          ambiguous++;
          model.set(i, 'unknown');
        }
      }
    };
    await Promise.all([0, 1, 2, 3].map((w) => worker(w, 60)));
    // Restart the leaseholder mid-run, then more work.
    const lh = c.leaseholder();
    if (lh >= 0) {
      await c.stopNode(lh);
      await c.restartNode(lh);
    }
    await Promise.all([0, 1, 2, 3].map((w) => worker(w, 60)));
    for (let i = 0; i < 3; i++) for (let j = 0; j < 3; j++) if (i !== j) c.node(i).rpc!.faults.setFaults(j + 1, {});
    const kv = c.client(0);
    await kv.batch([{ kind: 'computeChecksum', checksumId: 7 }]);
    const sums = await Promise.all([0, 1, 2].map((i) => c.store(i).checksum(1, 7)));
    expect(new Set(sums).size).toBe(1);
    const rows = new Map((await kv.scan(SPAN[0], SPAN[1])).map((r) => [r.key.toString('latin1'), r.value.toString()]));
    let checked = 0;
    for (let i = 0; i < KEYS; i++) {
      const want = model.get(i);
      if (want === 'unknown') continue;
      expect(rows.get(key(i).toString('latin1')) ?? null).toBe(want ?? null);
      checked++;
    }
    expect(checked).toBeGreaterThan(KEYS / 2);
    const dropped = [0, 1, 2].reduce((n, i) => n + [1, 2, 3].reduce((m, j) => m + c.node(i).rpc!.faults.countersFor(j).dropped, 0), 0);
    expect(dropped).toBeGreaterThan(0); // the fault took effect
    console.log(`random workload: seed ${seed}, ${seq} writes attempted, ${ambiguous} ambiguous, ${dropped} messages dropped`);
    for (const { i, r } of c.replicas(1)) expect(r.applied.stats).toEqual(await c.recountStats(i));
  });
});
