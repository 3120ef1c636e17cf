/**
 * The kvnemesis checkers on histories that must fail (DESIGN.md §6: "every
 * checker is tested on histories that must fail"): validate() against
 * hand-written transaction logs and MVCC histories — one violation of each
 * kind it names, and the ambiguous outcomes it resolves from the data — and
 * statsMismatches() against a replica whose engine was written behind Raft's
 * back.
 */
import { describe, it, expect } from 'vitest';
import type { Timestamp } from '../../src/util/hlc.js';
import { ZERO_TIMESTAMP } from '../../src/util/hlc.js';
import { mvccPut } from '../../storage/mvcc.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { rollForwardFrozen, statsMismatches, validate, type NemesisCounts, type Read, type ScanRead, type TxnLog } from './nemesis-support.js';
import { adminMerge } from '../../src/kv/merge.js';
import { descriptors } from '../kv-ranges/support.js';
import { isFrozen } from '../../src/kv/merge-queue.js';
import { startTxnCluster, tkey } from './support.js';

const start = autoCloseClusters();
const ts = (wall: number): Timestamp => ({ wall, logical: 0 });

function txn(name: string, status: TxnLog['status'], o: { at?: number; writes?: [number, string | null][]; reads?: Read[]; scans?: ScanRead[]; discarded?: string[]; commitSent?: boolean } = {}): TxnLog {
  return {
    name,
    status,
    commitTs: o.at === undefined ? null : ts(o.at),
    reads: o.reads ?? [],
    scans: o.scans ?? [],
    writes: new Map(o.writes ?? []),
    discarded: o.discarded ?? [],
    ...(o.commitSent === undefined ? {} : { commitSent: o.commitSent }),
  };
}
const read = (key: number, value: string | null): Read => ({ key, value, own: undefined });
type History = Map<number, { ts: Timestamp; value: string | null }[]>;
const history = (h: Record<number, [number, string | null][]>): History => new Map(Object.entries(h).map(([k, vs]) => [Number(k), vs.map(([w, value]) => ({ ts: ts(w), value }))]));

// A serializable base: w0t0 writes k0=a, k1=b at 10; w0t1 reads both at 20 and writes k2=c.
const base = (): TxnLog[] => [txn('w0t0', 'committed', { at: 10, writes: [[0, 'a'], [1, 'b']] }), txn('w0t1', 'committed', { at: 20, reads: [read(0, 'a'), read(1, 'b')], writes: [[2, 'c']] })];
const baseHistory = (): History => history({ 0: [[10, 'a']], 1: [[10, 'b']], 2: [[20, 'c']] });

describe('validate (kvnemesis)', () => {
  it('passes a serializable history', () => {
    expect(validate(base(), baseHistory())).toEqual([]);
    // Reverse and limited scans: the rows of the span in their order, cut at the limit.
    const scans: ScanRead[] = [
      { lo: 0, hi: 3, reverse: true, rows: [[2, 'c'], [1, 'b'], [0, 'a']], own: new Map() },
      { lo: 0, hi: 3, limit: 2, rows: [[0, 'a'], [1, 'b']], own: new Map() },
      { lo: 0, hi: 3, reverse: true, limit: 1, rows: [[2, 'c']], own: new Map() },
    ];
    expect(validate([...base(), txn('w1t0', 'committed', { at: 30, scans })], baseHistory())).toEqual([]);
  });

  it('finds each kind of violation', () => {
    const cases: [string, TxnLog[], History, RegExp][] = [
      ['an aborted value visible', [...base(), txn('w1t0', 'aborted', { discarded: ['x'] })], history({ 0: [[10, 'a'], [30, 'x']], 1: [[10, 'b']], 2: [[20, 'c']] }), /discarded\/aborted value x/],
      ['a value nobody wrote', base(), history({ 0: [[10, 'a']], 1: [[10, 'b'], [15, 'zz']], 2: [[20, 'c']] }), /value zz of no known final write/],
      ['a committed value off its commit timestamp', base(), history({ 0: [[10, 'a']], 1: [[10, 'b']], 2: [[21, 'c']] }), /w0t1's value at .* commit ts/],
      ['a committed write missing', base(), history({ 0: [[10, 'a']], 1: [[10, 'b']] }), /w0t1: write of key 2 = c missing/],
      ['a stale read', [...base(), txn('w1t0', 'committed', { at: 15, writes: [[1, 'b2']] })], history({ 0: [[10, 'a']], 1: [[10, 'b'], [15, 'b2']], 2: [[20, 'c']] }), /w0t1: read key 1 = b, but at its commit ts .* the value is b2/],
      [
        'a scan missing a row',
        [...base(), txn('w1t0', 'committed', { at: 30, scans: [{ lo: 0, hi: 3, rows: [[0, 'a'], [2, 'c']], own: new Map() }] })],
        baseHistory(),
        /w1t0: scan \[0,3\) = \{0=a,2=c\}, at .* \{0=a,1=b,2=c\}/,
      ],
      [
        'a reverse limited scan skipping the last row',
        [...base(), txn('w1t0', 'committed', { at: 30, scans: [{ lo: 0, hi: 3, reverse: true, limit: 1, rows: [[1, 'b']], own: new Map() }] })],
        baseHistory(),
        /w1t0: scan reverse limit 1 \[0,3\) = \{1=b\}, at .* \{2=c\}/,
      ],
    ];
    for (const [what, logs, h, want] of cases) {
      const errs = validate(logs, h);
      expect(errs.length, what).toBeGreaterThan(0);
      expect(errs.join('\n'), what).toMatch(want);
    }
  });

  it('resolves an ambiguous commit from the data: all or nothing, its reads checked where its writes show', () => {
    const amb = (o: Parameters<typeof txn>[2]): TxnLog[] => [...base(), txn('w1t0', 'ambiguous', { commitSent: true, writes: [[3, 'p'], [4, 'q']], ...o })];
    // Nothing shows: aborted — fine. Everything shows at one timestamp, reads consistent there: committed — fine.
    expect(validate(amb({}), baseHistory())).toEqual([]);
    const both = history({ 0: [[10, 'a']], 1: [[10, 'b']], 2: [[20, 'c']], 3: [[25, 'p']], 4: [[25, 'q']] });
    expect(validate(amb({ reads: [read(2, 'c')] }), both)).toEqual([]);
    // Half of it shows: a torn transaction.
    const half = history({ 0: [[10, 'a']], 1: [[10, 'b']], 2: [[20, 'c']], 3: [[25, 'p']] });
    expect(validate(amb({}), half).join('\n')).toMatch(/w1t0 \(ambiguous; its writes show: committed\): write of key 4 = q missing/);
    // Its writes at two timestamps.
    const split = history({ 0: [[10, 'a']], 1: [[10, 'b']], 2: [[20, 'c']], 3: [[25, 'p']], 4: [[26, 'q']] });
    expect(validate(amb({}), split).join('\n')).toMatch(/write of key 4 = q missing/);
    // Committed (its writes show at 25), but it read k2 as absent although c was committed at 20.
    expect(validate(amb({ reads: [read(2, null)] }), both).join('\n')).toMatch(/w1t0 \(ambiguous; its writes show: committed\): read key 2 = null, but at its commit ts .* the value is c/);
  });

  it('an ambiguous transaction that never sent its commit must not show at all', () => {
    const logs = [...base(), txn('w1t0', 'ambiguous', { commitSent: false, writes: [[3, 'p']], discarded: ['p'] })];
    expect(validate(logs, baseHistory())).toEqual([]);
    expect(validate(logs, history({ 0: [[10, 'a']], 1: [[10, 'b']], 2: [[20, 'c']], 3: [[25, 'p']] })).join('\n')).toMatch(/discarded\/aborted value p visible/);
  });
});

describe('statsMismatches (kvnemesis)', () => {
  it('is empty on a healthy cluster and names the replica whose data changed behind Raft', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(10)] });
    const ds = env.ds[0]!;
    for (const k of [1, 2, 11]) await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: tkey(k), value: Buffer.from(`v${k}`) }] });
    await env.c.waitFor(() => env.c.replicas(1).every(({ r }) => r.applied.raftAppliedIndex === env.c.replicas(1)[0]!.r.applied.raftAppliedIndex), 10_000, 'r1 replicas caught up');
    expect(await statsMismatches(env.c)).toEqual([]);
    // A value written straight into node 2's copy of the range holding tkey(12): its stats no longer match.
    const wb = env.c.node(1).engine.newBatch();
    mvccPut(wb, tkey(12), env.c.node(1).clock.now(), Buffer.from('not through raft'));
    await env.c.node(1).engine.write(wb);
    const errs = await statsMismatches(env.c);
    expect(errs.length).toBe(1);
    expect(errs[0]).toMatch(/ on n2 at applied index \d+: stats /);
  }, 60_000);
});

describe('rollForwardFrozen (kvnemesis)', () => {
  it('merges a range left frozen by a merge driver that died after the freeze; its keys serve again', async () => {
    const env = await startTxnCluster(start, { nodes: 3, splits: [tkey(10)] });
    const ds = env.ds[0]!;
    const put = (k: number) => ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'put', key: tkey(k), value: Buffer.from(`v${k}`) }] });
    await put(11);
    // The driver dies right after the Subsume freeze.
    const died = await adminMerge(ds, tkey(0), { afterFreeze: () => Promise.reject(new Error('driver died')) }).then(
      () => null,
      (e: unknown) => e,
    );
    expect((died as Error).message).toBe('driver died');
    const right = descriptors(env.c).find((d) => d.startKey.equals(tkey(10)))!;
    const frozen = (): boolean => env.c.replicas(right.rangeId).some(({ r }) => r.initialized && !r.stopped && isFrozen(r));
    await env.c.waitFor(frozen, 10_000, 'the right range frozen');
    const counts = { rolledForward: 0 } as NemesisCounts;
    await rollForwardFrozen(env.c, ds, counts);
    expect(counts.rolledForward).toBe(1);
    await put(12);
    const r = await ds.send({ header: { rangeId: 0, timestamp: ZERO_TIMESTAMP }, requests: [{ kind: 'get', key: tkey(11) }, { kind: 'get', key: tkey(12) }] });
    expect(r.responses.map((x) => (x as { value: Buffer | null }).value?.toString())).toEqual(['v11', 'v12']);
  }, 60_000);
});
