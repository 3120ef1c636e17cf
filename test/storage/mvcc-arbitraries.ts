// fast-check arbitraries of the MVCC value formats, shared by the codec tests
// (mvcc.test.ts) and the write-path reference tests (mvcc-write-path.test.ts).
import fc from 'fast-check';
import type { Head } from '../../storage/mvcc-value.js';

export const tsArb = fc.record({ wall: fc.maxSafeNat(), logical: fc.nat() });
export const bytesArb = (max: number): fc.Arbitrary<Buffer> => fc.uint8Array({ maxLength: max }).map((u) => Buffer.from(u));

export interface HeadArbOptions {
  /** Committed and intent values (null: a tombstone). */
  readonly value: fc.Arbitrary<Buffer | null>;
  readonly maxHistory: number;
  readonly maxWrites: number;
  readonly maxAnchor: number;
  /** Epochs, sequences and priorities: fc.nat() or fc.maxSafeNat() (longest varints). */
  readonly counter: fc.Arbitrary<number>;
}

/** Any head encodeHead accepts (a committed version or an intent, or both). */
export function headArb(o: HeadArbOptions): fc.Arbitrary<Head> {
  return fc
    .record({
      committed: fc.option(fc.oneof(fc.record({ ts: tsArb, value: o.value }), fc.record({ ts: tsArb, value: fc.constant(undefined), len: fc.integer({ min: 0, max: 1e6 }) })), { nil: null }),
      history: fc.array(fc.record({ ts: tsArb, len: fc.integer({ min: -1, max: 5000 }) }), { maxLength: o.maxHistory }),
      tail: fc.option(fc.record({ count: fc.integer({ min: 1, max: 1e6 }), valBytes: fc.maxSafeNat() }), { nil: null }),
      intent: fc.option(
        fc.record({
          txn: fc.record(
            {
              id: fc.uint8Array({ minLength: 16, maxLength: 16 }).map((u) => Buffer.from(u)),
              epoch: o.counter,
              writeTimestamp: tsArb,
              minTimestamp: tsArb,
              sequence: o.counter,
              key: bytesArb(o.maxAnchor),
              priority: o.counter,
            },
            { requiredKeys: ['id', 'epoch', 'writeTimestamp', 'sequence', 'key', 'priority'] },
          ),
          writes: fc.array(fc.record({ seq: o.counter, value: o.value }), { minLength: 1, maxLength: o.maxWrites }),
        }),
        { nil: null },
      ),
    })
    .filter((h) => h.committed !== null || h.intent !== null);
}
