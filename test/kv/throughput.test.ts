/**
 * Measures replicated puts/s and leaseholder gets/s with 64 concurrent
 * clients, 1 KB values, on 3 in-process nodes over loopback TCP with LevelDB
 * engines (synced group commits). Prints the figures (issue 4's benchmark
 * targets are for multi-process clusters and never gate tests); asserts
 * only that the work completed and that group commit batched.
 */
import { describe, it, expect } from 'vitest';
import { build } from 'hdr-histogram-js';
import { autoCloseClusters } from '../support/test-cluster.js';

const startCluster = autoCloseClusters();

const CLIENTS = 64;
const VALUE = Buffer.alloc(1024, 0x61);
const KEYS = 20_000;
const key = (i: number): Buffer => Buffer.from(`\x90bench${String(i % KEYS).padStart(8, '0')}`, 'latin1');

async function run(ms: number, op: (i: number) => Promise<void>): Promise<{ ops: number; perSec: number; p50: number; p99: number }> {
  const h = build({ lowestDiscernibleValue: 1, highestTrackableValue: 10_000_000, numberOfSignificantValueDigits: 2 });
  const end = performance.now() + ms;
  let n = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, w) => {
      for (let i = w; performance.now() < end; i += CLIENTS) {
        const s = performance.now();
        await op(i);
        h.recordValue(Math.max(1, Math.round((performance.now() - s) * 1000)));
        n++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  return { ops: n, perSec: Math.round(n / secs), p50: h.getValueAtPercentile(50) / 1000, p99: h.getValueAtPercentile(99) / 1000 };
}

describe('throughput (3 nodes, LevelDB, loopback, 64 clients, 1 KB values)', () => {
  it('measures replicated puts/s and gets/s', async () => {
    const c = await startCluster({ nodes: 3, engine: 'level', settings: { tickIntervalMs: 50, leaseDurationMicros: 3_000_000 } });
    c.startTicker();
    await c.waitFor(() => c.leaseholder() >= 0, 10_000, 'a leaseholder');
    const lh = c.leaseholder();
    const kv = c.client(lh);
    const m0 = { ...c.store(lh).metrics };
    // Workers advance at different rates, so the keys written are not 0..ops-1: remember them.
    const written: number[] = [];
    const puts = await run(3_000, async (i) => {
      await kv.put(key(i), VALUE);
      written.push(i % KEYS);
    });
    const m1 = c.store(lh).metrics;
    const gets = await run(2_000, async (i) => {
      const v = await kv.get(key(written[i % written.length] as number));
      if (v === null) throw new Error('missing value');
    });
    const proposals = m1.proposals - m0.proposals;
    const syncs = m1.syncs - m0.syncs;
    console.log(
      `kv throughput: puts ${puts.perSec}/s (p50 ${puts.p50.toFixed(2)} ms, p99 ${puts.p99.toFixed(2)} ms), ` +
        `gets ${gets.perSec}/s (p50 ${gets.p50.toFixed(2)} ms, p99 ${gets.p99.toFixed(2)} ms); ` +
        `leaseholder: ${proposals} proposals in ${syncs} synced Ready writes (${(proposals / Math.max(1, syncs)).toFixed(1)} per sync)`,
    );
    expect(puts.ops).toBeGreaterThan(0);
    expect(gets.ops).toBeGreaterThan(0);
    expect(syncs).toBeLessThan(proposals);
  });
});
