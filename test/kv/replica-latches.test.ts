/**
 * The stand-in latch manager (src/kv/replica-latches.ts) against a simple
 * model: over random request sequences, no two requests with conflicting
 * spans (overlap, at least one write) ever hold latches at the same time,
 * conflicting requests are granted in arrival order, and every request is
 * eventually granted.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { LatchManager, type LatchGuard } from '../../src/kv/replica-latches.js';
import type { DeclaredSpan } from '../../src/kv/batcheval/command.js';

const key = (n: number): Buffer => Buffer.from([n]);
const span = fc.record({ a: fc.integer({ min: 0, max: 8 }), len: fc.integer({ min: 0, max: 3 }), write: fc.boolean() }).map(
  ({ a, len, write }): DeclaredSpan => ({ key: key(a), endKey: len === 0 ? null : key(a + len), write }),
);

function covers(s: DeclaredSpan): number[] {
  const a = s.key[0] as number;
  const end = s.endKey === null ? a + 1 : (s.endKey[0] as number);
  const out: number[] = [];
  for (let i = a; i < end; i++) out.push(i);
  return out;
}

function conflict(x: readonly DeclaredSpan[], y: readonly DeclaredSpan[]): boolean {
  return x.some((a) => y.some((b) => (a.write || b.write) && covers(a).some((k) => covers(b).includes(k))));
}

describe('replica latches (stand-in)', () => {
  it('serializes conflicting requests in arrival order and runs the rest concurrently', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(span, { minLength: 1, maxLength: 3 }), { maxLength: 25 }), fc.array(fc.nat({ max: 3 }), { maxLength: 25 }), async (reqs, holds) => {
        const lm = new LatchManager();
        const held = new Map<number, readonly DeclaredSpan[]>();
        const grantOrder: number[] = [];
        await Promise.all(
          reqs.map(async (spans, i) => {
            const g: LatchGuard = await lm.acquire(spans);
            for (const [j, other] of held) expect(conflict(spans, other), `requests ${i} and ${j} hold conflicting latches`).toBe(false);
            held.set(i, spans);
            grantOrder.push(i);
            for (let n = 0; n < (holds[i] ?? 0); n++) await Promise.resolve();
            held.delete(i);
            g.release();
          }),
        );
        expect(grantOrder.length).toBe(reqs.length);
        for (let x = 0; x < grantOrder.length; x++) {
          for (let y = x + 1; y < grantOrder.length; y++) {
            const i = grantOrder[x] as number;
            const j = grantOrder[y] as number;
            if (j < i && conflict(reqs[i] as DeclaredSpan[], reqs[j] as DeclaredSpan[])) expect.fail(`request ${i} overtook earlier conflicting request ${j}`);
          }
        }
        expect(lm.size).toBe(0);
      }),
      { numRuns: 200 },
    );
  });
});
