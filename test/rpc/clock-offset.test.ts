// Clock-offset measurement between nodes (CockroachDB's RemoteClockMonitor;
// DESIGN.md §6, "Clock offset beyond the bound": a node out of bounds must
// stop serving — this is how it finds out). Manual physical clocks throughout.
import { afterEach, describe, expect, it } from 'vitest';
import { BufWriter } from '../../src/rpc/codec.js';
import { isOffsetHealthy, measureOffset, PING_METHOD } from '../../src/rpc/clock-offset.js';
import { Nodes } from './nodes.js';

function pingResponse(remoteMicros: number): Buffer {
  const w = new BufWriter();
  w.uvarint(remoteMicros);
  return w.copyOut();
}

describe('offset arithmetic', () => {
  it('takes the offset against the midpoint of the round trip; half the round trip is the uncertainty', () => {
    expect(measureOffset(pingResponse(1_000_600), 1_000_000, 1_000_200)).toEqual({
      offsetMicros: 500,
      uncertaintyMicros: 100,
      measuredAt: 1_000_200,
    });
    expect(measureOffset(pingResponse(999_000), 1_000_000, 1_000_000).offsetMicros).toBe(-1000);
    expect(() => measureOffset(Buffer.from([1, 2]), 0, 0)).toThrow(/trailing bytes after ping response/);
  });

  it('is healthy while a majority of measured peers is not surely beyond tolerance (ambiguous counts as within)', () => {
    const m = (offsetMicros: number, uncertaintyMicros = 0) => ({ offsetMicros, uncertaintyMicros, measuredAt: 0 });
    expect(isOffsetHealthy([], 400)).toBe(true);
    expect(isOffsetHealthy([m(100), m(-399)], 400)).toBe(true);
    expect(isOffsetHealthy([m(100), m(450), m(-20)], 400)).toBe(true); // 2 of 3
    expect(isOffsetHealthy([m(100), m(450), m(-500)], 400)).toBe(false); // 1 of 3
    expect(isOffsetHealthy([m(100), m(450)], 400)).toBe(false); // 1 of 2 is no majority
    expect(isOffsetHealthy([m(500, 60)], 400)).toBe(false); // surely beyond: at least 440
    expect(isOffsetHealthy([m(350, 60)], 400)).toBe(true); // ambiguous (290..410): not stopped for it, as CockroachDB
    // A synchronized peer pinged through a stalled event loop: answered at once, the answer read 900 ms later.
    expect(isOffsetHealthy([measureOffset(pingResponse(1_000_000), 1_000_000, 1_900_000)], 400_000)).toBe(true);
    expect(isOffsetHealthy([measureOffset(pingResponse(1_450_000), 1_000_000, 1_000_100)], 400_000)).toBe(false); // 450 ms ahead, fast ping
  });
});

describe('ping over TCP', () => {
  const nodes = new Nodes();
  afterEach(() => nodes.closeAll());

  it('measures each peer and decides health by majority with 80 % of the max offset', async () => {
    const n1 = await nodes.start(1);
    const n2 = await nodes.start(2);
    const n3 = await nodes.start(3);
    const n4 = await nodes.start(4);
    n2.physical.advance(450_000); // beyond 80 % of 500 ms, within the 500 ms the HLC accepts
    n3.physical.advance(-40_000); // n1's HLC, pulled up to n2's, stays within n3's 500 ms bound
    expect((await n1.ctx.ping(2)).offsetMicros).toBe(450_000);
    expect(n1.ctx.isClockHealthy()).toBe(false); // the only peer measured is out of bounds
    expect((await n1.ctx.ping(3)).offsetMicros).toBe(-40_000);
    expect((await n1.ctx.ping(4)).offsetMicros).toBe(0);
    expect(n1.ctx.isClockHealthy()).toBe(true); // 2 of 3
    expect([...n1.ctx.clockOffsets().keys()].sort()).toEqual([2, 3, 4]);
    n1.ctx.forgetClockOffset(3);
    expect(n1.ctx.isClockHealthy()).toBe(false); // 1 of 2
    // From n2's side everyone is 450 ms behind: n2 is the one out of bounds.
    await n2.ctx.ping(1);
    await n2.ctx.ping(4);
    expect(n2.ctx.isClockHealthy()).toBe(false);
  });

  it('reserves the ping method id', async () => {
    const n1 = await nodes.start(1);
    expect(() => n1.ctx.register(PING_METHOD, () => undefined)).toThrow(/reserved/);
  });
});
