/**
 * Lock-footprint condensing (src/kv/client/lock-footprint.ts, CockroachDB's
 * condensableSpanSet and kv.transaction.max_intents_bytes), issue 7 "Bulk
 * data":
 *   - the fast condensing against the simplest reference (fast-check): every
 *     span inserted is covered by a span of the set, whatever the budget and
 *     the range boundaries; past the budget the set condensed, per range;
 *   - condensing never widens a span beyond its table's data (fast-check over
 *     system keys and three tables; and the COPY case: a descriptor read and
 *     rows in one range never cover /System/gen/range-id or liveness);
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
import { DESC_ID_GENERATOR_KEY, KEY_MAX, KEY_MIN, RANGE_ID_GENERATOR_KEY, clusterSettingKey, descriptorKey, namespaceKey, nodeLivenessKey, tableIdOf, tableKey } from '../../storage/keys.js';
import type { TxnDB } from '../../src/kv/client/txn-db.js';
import { adminSplit } from '../../src/kv/split.js';
import type { DistSender } from '../../src/kv/dist-sender.js';
import { autoCloseClusters } from '../support/test-cluster.js';
import { startTxnCluster, tkey, batch, TSPAN_START, TSPAN_END } from '../kv-txn/support.js';

const start = autoCloseClusters();
const saved = { ...footprintSettings };
afterEach(() => Object.assign(footprintSettings, saved));

/** Key n of table 1's data (/Table/1/…): condensing widens spans only within one table's data. */
const b = (n: number): Buffer => Buffer.from([0x89, n >> 8, n & 0xff]);

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
          const v = k.readUInt16BE(1);
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
    const rangeOf: RangeBoundsOf = (k) => (k.readUInt16BE(1) < 10 ? { startKey: b(0), endKey: b(10) } : { startKey: b(10), endKey: b(0xffff) });
    const out = condenseSpans([{ key: b(3), endKey: null }, { key: b(1), endKey: null }, { key: b(5), endKey: b(7) }, { key: b(20), endKey: null }], rangeOf);
    expect(out).toEqual([
      { key: b(1), endKey: b(7) },
      { key: b(20), endKey: null },
    ]);
    // Without range information a table's spans condense into one span.
    expect(condenseSpans([{ key: b(3), endKey: null }, { key: b(20), endKey: null }])).toEqual([{ key: b(3), endKey: keyNext(b(20)) }]);
  });

  // Issue 7, COPY of 100,000 rows on the 3-node process cluster: its read footprint (the catalog read of the
  // descriptor, then a cput per row) condensed per range into ONE span from /System/descriptor/52 to the last row —
  // r1 holds the system keys and the table's first rows — which covered /System/gen/range-id: the split's own write
  // there failed the refresh the split's push then needed (40001).
  it('never widens a span outside its table: system keys stay exact (the COPY refresh failure)', () => {
    const row = (i: number): Buffer => tableKey(52, 1, [{ kind: 'string', value: `user${String(i).padStart(19, '0')}` }]);
    const r1: RangeBoundsOf = (k) => (compareBytes(k, row(30_559)) < 0 ? { startKey: KEY_MIN, endKey: row(30_559) } : { startKey: row(30_559), endKey: KEY_MAX });
    const set = new CondensableSpanSet(100 * (SPAN_OVERHEAD_BYTES + 30), r1);
    set.insert({ key: descriptorKey(52), endKey: null });
    set.insert({ key: namespaceKey(50, 'bench_copy'), endKey: null });
    for (let i = 0; i < 1000; i++) set.insert({ key: row(i * 40), endKey: null });
    expect(set.condensations).toBeGreaterThan(0);
    set.condense(); // the points inserted since the last condensing too
    expect(set.overBudget).toBe(false);
    const spans = set.spans();
    const covers = (k: Buffer): boolean => covered({ key: k, endKey: null }, spans);
    for (const k of [RANGE_ID_GENERATOR_KEY, DESC_ID_GENERATOR_KEY, nodeLivenessKey(1), nodeLivenessKey(3), clusterSettingKey('kv.x'), tableKey(51, 1, [{ kind: 'int', value: 1 }]), tableKey(53, 1, [{ kind: 'int', value: 1 }])]) expect(covers(k)).toBe(false);
    // The system reads stay points; the rows condensed into one span per range (r1's part and r2's).
    expect(spans).toContainEqual({ key: descriptorKey(52), endKey: null });
    expect(spans).toContainEqual({ key: namespaceKey(50, 'bench_copy'), endKey: null });
    expect(spans.filter((s) => tableIdOf(s.key) === 52).length).toBe(2);
    for (let i = 0; i < 1000; i++) expect(covers(row(i * 40))).toBe(true);
  });

  it('a condensed span covers a key no input covered only inside the table its run started in (property)', () => {
    // Keys of a small universe: system keys (04 x) and the data of tables 1–3 (0x88+t x), in ranges cut anywhere.
    const keyArb = fc.tuple(fc.constantFrom(0x04, 0x89, 0x8a, 0x8b), fc.integer({ min: 0, max: 63 })).map(([p, x]) => Buffer.from([p, x]));
    const pointArb = keyArb.map((k): LockSpan => ({ key: k, endKey: null }));
    fc.assert(
      fc.property(fc.array(pointArb, { minLength: 1, maxLength: 200 }), fc.integer({ min: 0, max: 4000 }), fc.uniqueArray(keyArb, { maxLength: 5 }), (spans, budget, cuts) => {
        const bounds = [KEY_MIN, ...cuts.sort(compareBytes), KEY_MAX];
        const rangeOf: RangeBoundsOf = (k) => {
          for (let i = 0; i + 1 < bounds.length; i++) if (compareBytes(k, bounds[i] as Buffer) >= 0 && compareBytes(k, bounds[i + 1] as Buffer) < 0) return { startKey: bounds[i] as Buffer, endKey: bounds[i + 1] as Buffer };
          return undefined;
        };
        const set = new CondensableSpanSet(budget, rangeOf);
        for (const s of spans) set.insert(s);
        const out = set.spans();
        for (const p of [0x04, 0x89, 0x8a, 0x8b]) {
          for (let x = 0; x < 64; x++) {
            const k = Buffer.from([p, x]);
            if (covered({ key: k, endKey: null }, spans)) continue;
            for (const c of out) {
              if (!covered({ key: k, endKey: null }, [c])) continue;
              // Widened over k: only within table data, and only the table the span starts in.
              expect(tableIdOf(k)).toBeDefined();
              expect(tableIdOf(c.key)).toBe(tableIdOf(k));
            }
          }
        }
      }),
      { numRuns: 200 },
    );
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
  // Issue 7's COPY hang on the process cluster, reduced: a transaction reads a system key (COPY's catalog read),
  // then cputs rows in the same range until its read footprint condenses; a split writes /System/gen/range-id;
  // a later read of the next row's key pushes its cput (timestamp cache) and the coordinator refreshes. Before the
  // fix the condensed span [descriptor, last row] covered gen/range-id and the refresh failed (40001).
  it('refreshes a condensed read footprint past a split’s write to /System/gen/range-id, without restarting', async () => {
    footprintSettings.maxRefreshSpansBytes = 20 * (SPAN_OVERHEAD_BYTES + 9);
    const { dbs, ds } = await startTxnCluster(start, { nodes: 1 });
    const db = dbs[0] as TxnDB;
    const t = db.newTxn();
    await t.run(batch((bb) => bb.get(descriptorKey(52))));
    for (let i = 0; i < 1000; i += 250) {
      await t.run(batch((bb) => {
        for (let j = i; j < i + 250; j++) bb.cput(tkey(j), Buffer.from(`v${j}`), null);
      }));
    }
    expect((t as unknown as { readSpans: CondensableSpanSet }).readSpans.condensations).toBeGreaterThan(0);
    await adminSplit(ds[0] as DistSender, tkey(5000));
    // A read of the next key above the transaction's timestamp: its cput is pushed, the reads must refresh.
    const r = db.newTxn();
    await r.run(batch((bb) => bb.get(tkey(1000))));
    await r.commit();
    const refreshes = db.metrics.refreshes;
    await t.run(batch((bb) => bb.cput(tkey(1000), Buffer.from('v1000'), null)));
    await t.commit();
    expect(db.metrics.refreshes).toBeGreaterThan(refreshes);
    expect(db.metrics.refreshFailures).toBe(0);
    expect(db.metrics.restarts).toBe(0);
    const check = db.newTxn();
    const [scan] = await check.run(batch((bb) => bb.scan(TSPAN_START, TSPAN_END)));
    expect((scan as { rows: readonly unknown[] }).rows.length).toBe(1001);
    await check.commit();
  });

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
