/**
 * The CAIRN_CANARY flags (src/kv/canary.ts) are real: parsing refuses
 * unknown names, and skip-timestamp-cache, flipped in-process, lets a
 * non-transactional write slip under a read the leaseholder already served
 * (the read at T is no longer repeatable), while the correct build pushes
 * the write above it; expired-lease-reads lets a partitioned former
 * leaseholder answer a read with a value the new leaseholder has overwritten.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters, type TestCluster } from '../support/test-cluster.js';
import { canary, parseCanary } from '../../src/kv/canary.js';
import { compareTimestamps, type Timestamp } from '../../src/util/hlc.js';
import type { BatchRequest, Request } from '../../src/kv/api.js';
import { retryDropped } from './support.js';

const k = (s: string): Buffer => Buffer.from(`\x90${s}`, 'latin1');
const startCluster = autoCloseClusters();
const ZERO = { wall: 0, logical: 0 };

async function send(c: TestCluster, ts: Timestamp, q: Request): Promise<{ timestamp: Timestamp; value: string | null }> {
  const lh = c.leaseholder();
  const ba: BatchRequest = { header: { rangeId: 1, timestamp: ts }, requests: [q] };
  const res = await retryDropped(() => c.store(lh).send(ba));
  const r = res.responses[0] as { value?: Buffer | null };
  return { timestamp: res.timestamp, value: r.value === undefined || r.value === null ? null : r.value.toString() };
}

/** Reads key at T (ahead of the clock), writes it with the leaseholder's timestamp, reads at T again. */
async function readWriteRead(c: TestCluster, key: Buffer): Promise<{ first: string | null; second: string | null; writeTs: Timestamp; readTs: Timestamp }> {
  const lh = c.leaseholder();
  const r = c.store(lh).replica(1)!;
  const clock = c.node(lh).clock;
  // Past the low-water horizon of the new lease, so the read below is the highest entry in the cache.
  await c.waitFor(() => compareTimestamps(clock.now(), r.concurrency.tscache.lowWater) > 0, 10_000, 'clock past the timestamp-cache low water');
  const T = { wall: clock.now().wall + 50_000, logical: 0 };
  const first = (await send(c, T, { kind: 'get', key } as Request)).value;
  const w = await send(c, ZERO, { kind: 'put', key, value: Buffer.from('b') } as Request);
  const second = (await send(c, T, { kind: 'get', key } as Request)).value;
  return { first, second, writeTs: w.timestamp, readTs: T };
}

describe('kv-bugs: canary flags', () => {
  it('parses CAIRN_CANARY values and refuses unknown names', () => {
    expect(parseCanary(undefined)).toEqual({ skipTimestampCache: false, skipUncertaintyRestart: false, ackBeforeQuorum: false, expiredLeaseReads: false });
    expect(parseCanary('skip-timestamp-cache').skipTimestampCache).toBe(true);
    expect(parseCanary('skip-uncertainty-restart').skipUncertaintyRestart).toBe(true);
    expect(parseCanary('ack-before-quorum').ackBeforeQuorum).toBe(true);
    expect(parseCanary('expired-lease-reads').expiredLeaseReads).toBe(true);
    expect(() => parseCanary('skip-everything')).toThrow(/unknown CAIRN_CANARY/);
    expect(canary.skipTimestampCache).toBe(false); // the test process runs the correct build
  });

  it('skip-timestamp-cache lets a write slip under a served read; the correct build pushes it above', async () => {
    const c = await startCluster({ nodes: 1 });
    c.startTicker();
    await c.waitFor(() => c.leaseholder() >= 0, 10_000, 'a leaseholder');
    await send(c, ZERO, { kind: 'put', key: k('a'), value: Buffer.from('a') } as Request);
    await send(c, ZERO, { kind: 'put', key: k('b'), value: Buffer.from('a') } as Request);

    const ok = await readWriteRead(c, k('a'));
    expect(ok.first).toBe('a');
    expect(compareTimestamps(ok.writeTs, ok.readTs)).toBeGreaterThan(0);
    expect(ok.second).toBe('a');

    canary.skipTimestampCache = true;
    try {
      const broken = await readWriteRead(c, k('b'));
      expect(broken.first).toBe('a');
      expect(compareTimestamps(broken.writeTs, broken.readTs)).toBeLessThan(0);
      expect(broken.second).toBe('b'); // the read at T changed after it was served
    } finally {
      canary.skipTimestampCache = false;
    }
  }, 30_000);

  it('expired-lease-reads lets a cut-off former leaseholder serve a stale read; the correct build refuses', async () => {
    const c = await startCluster({ nodes: 3 });
    c.startTicker();
    await c.waitFor(() => c.leaseholder() >= 0 && c.leader() === c.leaseholder(), 10_000, 'a leaseholder on the leader');
    const key = k('stale');
    await send(c, ZERO, { kind: 'put', key, value: Buffer.from('old') } as Request);
    const L = c.leaseholder();
    const cut = (on: boolean): void => {
      for (let j = 0; j < 3; j++) {
        if (j === L) continue;
        c.node(L).rpc!.faults.setFaults(j + 1, on ? { partition: true } : {});
        c.node(j).rpc!.faults.setFaults(L + 1, on ? { partition: true } : {});
      }
    };
    cut(true);
    try {
      await c.waitFor(() => c.leaseholder() >= 0 && c.leaseholder() !== L, 20_000, 'a new leaseholder');
      const nl = c.leaseholder();
      await retryDropped(() => c.store(nl).send({ header: { rangeId: 1, timestamp: ZERO }, requests: [{ kind: 'put', key, value: Buffer.from('new') }] } as never));
      const readOnL = async () => ((await c.store(L).send({ header: { rangeId: 1, timestamp: ZERO }, requests: [{ kind: 'get', key }] } as never)).responses[0] as { value: Buffer | null }).value?.toString();
      await expect(readOnL()).rejects.toThrow();
      canary.expiredLeaseReads = true;
      try {
        expect(await readOnL()).toBe('old'); // the overwritten value, served without a valid lease
      } finally {
        canary.expiredLeaseReads = false;
      }
    } finally {
      cut(false);
    }
  }, 40_000);
});
