/**
 * Lock-footprint condensing (src/kv/client/lock-footprint.ts, CockroachDB's
 * condensableSpanSet and kv.transaction.max_intents_bytes), issue 7 "Bulk
 * data":
 *   - the fast condensing against the simplest reference (fast-check): every
 *     span inserted is covered by a span of the set, whatever the budget and
 *     the range boundaries; past the budget the set condensed, per range;
 *   - on a real 3-node cluster with three ranges: a transaction whose lock
 *     footprint passes a small budget commits, and afterwards no intent of it
 *     is left on any replica (raw MVCC scan of every node's engine) — the
 *     condensed spans were resolved with paged ResolveIntentRange (resume
 *     keys) and the EndTxn resolved only its bounded share in its own batch.
 */
import { describe, it, expect, afterEach } from 'vitest';
import fc from 'fast-check';
import { compareBytes, keyNext } from '../../storage/encoding/bytes.js';
import { mvccScan } from '../../storage/mvcc.js';
import { MAX_TIMESTAMP } from '../../src/util/hlc.js';
import { CondensableSpanSet, condenseSpans, footprintSettings, SPAN_OVERHEAD_BYTES, type RangeBoundsOf } from '../../src/kv/client/lock-footprint.js';
import type { LockSpan } from '../../src/kv/txn-api.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, TSPAN_START, TSPAN_END } from '../kv-txn/support.js';

const start = autoCloseClusters();
const saved = { ...footprintSettings };
afterEach(() => Object.assign(footprintSettings, saved));

const b = (n: number): Buffer => Buffer.from([n >> 8, n & 0xff]);

/** Is [key, end) (a point: [key, keyNext(key))) inside some span of `set`? */
function covered(s: LockSpan, set: readonly LockSpan[]): boolean {
  const end = s.endKey ?? keyNext(s.key);
  return set.some((c) => compareBytes(c.key, s.key) <= 0 && compareBytes(end, c.endKey ?? keyNext(c.key)) <= 0);
}

const spanArb = fc.tuple(fc.integer({ min: 0, max: 2000 }), fc.option(fc.integer({ min: 1, max: 50 }), { nil: null })).map(([k, len]): LockSpan => ({ key: b(k), endKey: len === null ? null : b(k + len) }));

describe('CondensableSpanSet', () => {
  it('covers every inserted span, under any budget and range boundaries (property)', () => {
    fc.assert(
      fc.property(fc.array(spanArb, { maxLength: 300 }), fc.integer({ min: 0, max: 20_000 }), fc.uniqueArray(fc.integer({ min: 1, max: 2050 }), { maxLength: 6 }), (spans, budget, splits) => {
        const bounds = [0, ...splits.sort((x, y) => x - y), 0xffff];
        const rangeOf: RangeBoundsOf = (k) => {
          const v = k.readUInt16BE(0);
          for (let i = 0; i + 1 < bounds.length; i++) if (v >= (bounds[i] as number) && v < (bounds[i + 1] as number)) return { startKey: b(bounds[i] as number), endKey: b(bounds[i + 1] as number) };
          return undefined;
        };
        const set = new CondensableSpanSet(budget, rangeOf);
        for (const s of spans) set.insert(s);
        const out = set.spans();
        for (const s of spans) expect(covered(s, out)).toBe(true);
        const exactBytes = new Set(spans.map((s) => `${s.key.toString('hex')}-${s.endKey?.toString('hex') ?? ''}`)).size * SPAN_OVERHEAD_BYTES;
        if (exactBytes > budget) expect(set.condensations).toBeGreaterThan(0);
        if (set.condensations > 0) {
          const fresh = condenseSpans(out, rangeOf);
          // One group starts in each range at most (sorted spans; a new group only in another range).
          expect(fresh.length).toBeLessThanOrEqual(bounds.length - 1);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('condenses per range into covering spans; a lone point stays a point', () => {
    const rangeOf: RangeBoundsOf = (k) => (k[0] as number) < 10 ? { startKey: b(0), endKey: Buffer.from([10]) } : { startKey: Buffer.from([10]), endKey: Buffer.from([0xff]) };
    const out = condenseSpans([{ key: Buffer.from([3]), endKey: null }, { key: Buffer.from([1]), endKey: null }, { key: Buffer.from([5]), endKey: Buffer.from([7]) }, { key: Buffer.from([20]), endKey: null }], rangeOf);
    expect(out).toEqual([
      { key: Buffer.from([1]), endKey: Buffer.from([7]) },
      { key: Buffer.from([20]), endKey: null },
    ]);
    // Without range information everything condenses into one span.
    expect(condenseSpans([{ key: Buffer.from([3]), endKey: null }, { key: Buffer.from([20]), endKey: null }])).toEqual([{ key: Buffer.from([3]), endKey: keyNext(Buffer.from([20])) }]);
  });

  it('deduplicates and counts bytes; clear() empties', () => {
    const set = new CondensableSpanSet(1 << 20);
    set.insert({ key: Buffer.from('a'), endKey: null });
    set.insert({ key: Buffer.from('a'), endKey: null });
    set.insert({ key: Buffer.from('a'), endKey: Buffer.from('b') });
    expect(set.size).toBe(2);
    expect(set.bytes).toBe(1 + 2 + 2 * SPAN_OVERHEAD_BYTES);
    set.clear();
    expect(set.size).toBe(0);
    expect(set.bytes).toBe(0);
  });
});

describe('a transaction past its lock budget on a real cluster', () => {
  it('commits and leaves no intent on any replica', async () => {
    // ~20 spans' worth before condensing: 6,000 written keys condense many times over.
    footprintSettings.maxIntentsBytes = 20 * (SPAN_OVERHEAD_BYTES + 9);
    // Production lease length (6 s): with the 1 s test leases, a 2-core machine at load ~40 lets r1's lease lapse
    // again and again and the asynchronous finalization of the STAGING record waits out the whole test.
    const { c, dbs } = await startTxnCluster(start, { splits: [tkey(2000), tkey(4000)], settings: { leaseDurationMicros: 6_000_000 } });
    const db = dbs[0] as TxnDB;
    const txn = db.newTxn();
    const N = 6000;
    for (let i = 0; i < N; i += 250) {
      await txn.run(batch((bb) => {
        for (let j = i; j < i + 250; j++) bb.put(tkey(j), Buffer.from(`v${j}`));
      }));
    }
    const footprint = (txn as unknown as { lockSpans: CondensableSpanSet }).lockSpans;
    expect(footprint.condensations).toBeGreaterThan(0);
    expect(footprint.bytes).toBeLessThanOrEqual(footprintSettings.maxIntentsBytes);
    expect(footprint.size).toBeLessThan(25);
    await txn.commit();
    // A parallel commit is made explicit asynchronously, and the resolution queued after it: wait (bounded) until
    // every replica has applied every resolution — the raw MVCC of each node's engine holds no intent.
    const intentsLeft = async (): Promise<number> => {
      let n = 0;
      for (let i = 0; i < c.size; i++) n += (await mvccScan(c.node(i).engine, TSPAN_START, TSPAN_END, MAX_TIMESTAMP, { inconsistent: true })).intents.filter((x) => x !== null).length;
      return n;
    };
    const deadline = Date.now() + 30_000;
    while ((await intentsLeft()) > 0 && Date.now() < deadline) await db.resolver.drain().then(() => new Promise((r) => setImmediate(r)));
    expect(await intentsLeft()).toBe(0);
    for (let i = 0; i < c.size; i++) expect((await mvccScan(c.node(i).engine, TSPAN_START, TSPAN_END, MAX_TIMESTAMP, { inconsistent: true })).kvs.length).toBe(N);
    // The condensed spans held more intents than one ResolveIntentRange resolves: it was paged (resume keys).
    expect(db.resolver.metrics.resumed).toBeGreaterThan(0);
    // And a new transaction reads every value, committed.
    const r = db.newTxn();
    const [scan] = await r.run(batch((bb) => bb.scan(TSPAN_START, TSPAN_END)));
    expect((scan as { rows: readonly unknown[] }).rows.length).toBe(N);
    await r.commit();
  });
});
