/**
 * Flag parsers (src/server/config.ts) and the liveness record codec
 * (src/server/liveness.ts): exact layouts, round trips (property), and the
 * one-line errors a bad flag produces.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { parseBytes, parseDurationMs, parseHostPort, parseJoinList, formatHostPort } from '../../src/server/config.js';
import { decodeLivenessRecord, encodeLivenessRecord, isLive } from '../../src/server/liveness.js';

describe('flag parsers', () => {
  it('addresses', () => {
    expect(parseHostPort('--x', '127.0.0.1:26257')).toEqual({ host: '127.0.0.1', port: 26257 });
    expect(parseHostPort('--x', ':80')).toEqual({ host: '127.0.0.1', port: 80 });
    expect(parseHostPort('--x', '[::1]:5')).toEqual({ host: '::1', port: 5 });
    expect(formatHostPort({ host: '::1', port: 5 })).toBe('[::1]:5');
    expect(parseJoinList('a:1, b:2,,')).toEqual([
      { host: 'a', port: 1 },
      { host: 'b', port: 2 },
    ]);
    expect(() => parseHostPort('--listen-addr', 'localhost')).toThrow('server: invalid --listen-addr "localhost": expected HOST:PORT');
    expect(() => parseHostPort('--listen-addr', 'h:70000')).toThrow(/port above 65535/);
    expect(() => parseJoinList('a:1,nope')).toThrow(/--join "nope"/);
  });

  it('durations and sizes', () => {
    expect(parseDurationMs('--d', '500ms')).toBe(500);
    expect(parseDurationMs('--d', '2s')).toBe(2000);
    expect(parseDurationMs('--d', '1.5m')).toBe(90_000);
    expect(parseDurationMs('--d', '250')).toBe(250);
    expect(() => parseDurationMs('--max-offset', 'soon')).toThrow(/--max-offset "soon"/);
    expect(parseBytes('--cache', '64MiB', 0)).toBe(64 << 20);
    expect(parseBytes('--cache', '1GB', 0)).toBe(1e9);
    expect(parseBytes('--cache', '25%', 4000)).toBe(1000);
    expect(() => parseBytes('--cache', 'lots', 0)).toThrow(/--cache/);
  });
});

describe('liveness record', () => {
  it('has a fixed 14-byte layout', () => {
    const b = encodeLivenessRecord({ nodeId: 3, epoch: 2, expirationMicros: 1_700_000_000_000_000, draining: false, decommissioning: true });
    expect(b.toString('hex')).toBe('01' + '00000002' + Buffer.from(new Float64Array([1_700_000_000_000_000]).buffer).reverse().toString('hex') + '02');
    expect(() => decodeLivenessRecord(3, b.subarray(0, 13))).toThrow(/liveness record of n3 is malformed/);
  });

  it('round-trips (property) and is live only before its expiration', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 2 ** 52 }), fc.boolean(), fc.boolean(), (nodeId, epoch, exp, draining, decommissioning) => {
        const r = { nodeId, epoch, expirationMicros: exp, draining, decommissioning };
        expect(decodeLivenessRecord(nodeId, encodeLivenessRecord(r))).toEqual(r);
        expect(isLive(r, exp - 1)).toBe(true);
        expect(isLive(r, exp)).toBe(false);
      }),
    );
  });
});
