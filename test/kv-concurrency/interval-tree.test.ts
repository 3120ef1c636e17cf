// The interval tree against a linear scan (STYLE.md §4: a fast version checked
// against a simple one).
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { IntervalTree, type IntervalHandle } from '../../src/kv/concurrency/interval-tree.js';
import { spansOverlap, type Span } from '../../src/kv/concurrency/span-set.js';
import { arbSpan, k } from './support.js';

interface Item {
  readonly key: Buffer;
  readonly endKey: Buffer | null;
  readonly n: number;
}

describe('IntervalTree', () => {
  it('finds points inside ranges, ranges over points, and respects exclusive ends', () => {
    const t = new IntervalTree<Item>();
    t.insert({ key: k('b'), endKey: k('d'), n: 1 });
    t.insert({ key: k('d'), endKey: null, n: 2 });
    t.insert({ key: k('a'), endKey: null, n: 3 });
    const found = (s: string, e?: string): number[] => {
      const out: number[] = [];
      t.search(k(s), e === undefined ? null : k(e), (i) => void out.push(i.n));
      return out;
    };
    expect(found('c')).toEqual([1]);
    expect(found('d')).toEqual([2]);
    expect(found('a', 'b')).toEqual([3]);
    expect(found('a', 'bb')).toEqual([3, 1]);
    expect(found('c', 'e')).toEqual([1, 2]);
    expect(found('e')).toEqual([]);
    expect(t.check()).toBe(3);
  });

  it('matches a linear scan over random inserts, deletes and searches (property)', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('insert' as const), span: arbSpan }),
      fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('search' as const), span: arbSpan }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        const t = new IntervalTree<Item>();
        const live: IntervalHandle<Item>[] = [];
        let n = 0;
        for (const o of ops) {
          if (o.kind === 'insert') live.push(t.insert({ key: o.span.key, endKey: o.span.endKey ?? null, n: n++ }));
          else if (o.kind === 'delete') {
            if (live.length === 0) continue;
            const [h] = live.splice(o.pick % live.length, 1);
            t.delete(h as IntervalHandle<Item>);
          } else {
            const got: number[] = [];
            t.search(o.span.key, o.span.endKey ?? null, (i) => void got.push(i.n));
            const want = live
              .map((h) => h.item)
              .filter((i) => spansOverlap(i as Span, o.span))
              .sort((a, b) => Buffer.compare(a.key, b.key) || a.n - b.n)
              .map((i) => i.n);
            expect(got).toEqual(want);
          }
          expect(t.check()).toBe(live.length);
        }
      }),
      { numRuns: 300 },
    );
  });
});
