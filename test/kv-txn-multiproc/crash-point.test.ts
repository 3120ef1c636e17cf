/**
 * src/kv/crash-point.ts's parsing and matching (the process-level behaviour
 * is recovery.test.ts's): production leaves it unarmed, a typo is refused,
 * only the commit batches whose in-flight keys carry the marker match, and
 * staging-only withholds exactly the last in-flight write.
 */
import { describe, it, expect } from 'vitest';
import { crashPoint, matchingCommit, parseCrashPoint, stagingOnlyBatch } from '../../src/kv/crash-point.js';
import type { BatchRequest, Request } from '../../src/kv/api.js';
import type { EndTxnRequest } from '../../src/kv/txn-api.js';
import { ZERO_TIMESTAMP } from '../../src/util/hlc.js';

const k = (s: string): Buffer => Buffer.from(s);
const put = (key: string): Request => ({ kind: 'put', key: k(key), value: k('v') }) as Request;
const endTxn = (commit: boolean, keys: readonly string[]): EndTxnRequest => ({ kind: 'endTxn', key: k(keys[0] ?? 'a'), commit, inFlightWrites: keys.map((x, seq) => ({ key: k(x), seq })), lockSpans: [] });

describe('crash points', () => {
  it('are off unless CAIRN_CRASH_POINT is set; the test process leaves it unset', () => {
    expect(process.env['CAIRN_CRASH_POINT'] ?? '').toBe('');
    expect(crashPoint.armed).toBe(false);
    expect(parseCrashPoint(undefined).armed).toBe(false);
    expect(parseCrashPoint('').armed).toBe(false);
  });

  it('parse a name and the hex marker; refuse unknown names and missing or odd hex', () => {
    const cp = parseCrashPoint('after-staging:786a');
    expect(cp).toEqual({ armed: true, name: 'after-staging', keyContains: k('xj') });
    expect(parseCrashPoint('staging-only:00ff').name).toBe('staging-only');
    for (const bad of ['after-stagin:00', 'after-staging', 'after-staging:', 'after-staging:abc', 'after-staging:zz']) {
      expect(() => parseCrashPoint(bad), bad).toThrow(expect.objectContaining({ code: 'kv.unknown_crash_point' }));
    }
  });

  it('match only a committing EndTxn with an in-flight key containing the marker', () => {
    const cp = parseCrashPoint(`after-staging:${k('mark').toString('hex')}`);
    const hit = endTxn(true, ['a-mark', 'z-mark']);
    expect(matchingCommit(cp, [put('a-mark'), put('z-mark'), hit])).toBe(hit);
    expect(matchingCommit(cp, [put('a'), put('z'), endTxn(true, ['a', 'z'])])).toBeNull();
    expect(matchingCommit(cp, [put('a-mark'), endTxn(false, ['a-mark'])])).toBeNull();
    expect(matchingCommit(cp, [put('a-mark')])).toBeNull();
    expect(matchingCommit(parseCrashPoint(undefined), [put('a-mark'), hit])).toBeNull();
  });

  it('staging-only withholds the write of the last in-flight key, keeping the rest and the EndTxn', () => {
    const end = endTxn(true, ['a-mark', 'm-mark', 'z-mark']);
    const ba: BatchRequest = { header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [put('a-mark'), put('m-mark'), put('z-mark'), end] };
    const cut = stagingOnlyBatch(ba, end);
    expect(cut.requests.map((r) => (r.kind !== 'endTxn' && 'key' in r ? r.key.toString() : r.kind))).toEqual(['a-mark', 'm-mark', 'endTxn']);
    expect(cut.requests[cut.requests.length - 1]).toBe(end);
    expect(end.inFlightWrites.map((w) => w.key.toString())).toEqual(['a-mark', 'm-mark', 'z-mark']);
  });
});
