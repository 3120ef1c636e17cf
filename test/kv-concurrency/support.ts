// Shared generators for the concurrency tests: keys from a small alphabet so
// that spans overlap often, points and ranges, timestamps from a small range.
import fc from 'fast-check';
import type { DeclaredSpan, Span } from '../../src/kv/concurrency/span-set.js';
import { ts, type Timestamp } from '../../src/util/hlc.js';

export const k = (s: string): Buffer => Buffer.from(s, 'latin1');

export const arbKey: fc.Arbitrary<string> = fc.constantFrom('a', 'b', 'bb', 'c', 'd', 'e', 'f', 'g');

/** A point (half the time) or a non-empty range over the small alphabet. */
export const arbSpan: fc.Arbitrary<Span> = fc.oneof(
  arbKey.map((a) => ({ key: k(a) })),
  fc.tuple(arbKey, arbKey).filter(([a, b]) => a !== b).map(([a, b]) => (a < b ? { key: k(a), endKey: k(b) } : { key: k(b), endKey: k(a) })),
);

export const arbTs: fc.Arbitrary<Timestamp> = fc.tuple(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 0, max: 1 })).map(([w, l]) => ts(w, l));

export const arbDeclared: fc.Arbitrary<DeclaredSpan> = fc.record(
  { access: fc.constantFrom('read' as const, 'write' as const), span: arbSpan, timestamp: arbTs },
  { requiredKeys: ['access', 'span'] },
);

/** Runs every pending promise continuation (all queued microtasks run before a macrotask). */
export function flushMicrotasks(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}
