/**
 * The lease rules (src/kv/replica-lease.ts) over random histories: replicas
 * with clocks skewed by up to maxOffset request leases at random times; a
 * request applies only if the lease in force still equals its prevLease (the
 * apply rule). Invariants (DESIGN.md §3 "Leases", §6):
 *   - a new holder's lease starts at or after the previous expiration and
 *     has sequence + 1; an extension keeps start and sequence;
 *   - in true time, the intervals in which two different holders consider
 *     their lease valid never overlap.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { leaseState, nextLease, ownsValidLease, shouldRenew, transferredLease } from '../../src/kv/replica-lease.js';
import type { Lease, ReplicaDescriptor } from '../../src/kv/api.js';

const MAX_OFFSET = 500;
const DURATION = 3_000;
const rep = (id: number): ReplicaDescriptor => ({ nodeId: id, storeId: id, replicaId: id, type: 0 });
const t = (wall: number) => ({ wall, logical: 0 });

describe('lease rules', () => {
  it('never lets two holders serve at the same true time', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -MAX_OFFSET / 2, max: MAX_OFFSET / 2 }), { minLength: 3, maxLength: 3 }),
        fc.array(fc.record({ who: fc.integer({ min: 1, max: 3 }), dt: fc.integer({ min: 0, max: 2_000 }) }), { maxLength: 40 }),
        (skews, steps) => {
          let lease: Lease | null = null;
          let now = 10_000;
          const granted: Lease[] = [];
          for (const s of steps) {
            now += s.dt;
            const local = t(now + (skews[s.who - 1] as number)); // the requester's clock
            const next = nextLease(lease, rep(s.who), local, DURATION);
            if (next === null) {
              // Someone else's unexpired lease: the requester must not be able to serve.
              expect(ownsValidLease(lease, s.who, local, MAX_OFFSET)).toBe(false);
              continue;
            }
            if (lease !== null) {
              if (next.replica.replicaId === lease.replica.replicaId && next.sequence === lease.sequence) {
                expect(next.start).toEqual(lease.start);
                expect(next.expiration.wall).toBeGreaterThanOrEqual(lease.expiration.wall);
              } else {
                expect(next.sequence).toBe(lease.sequence + 1);
                expect(next.start.wall).toBeGreaterThanOrEqual(lease.expiration.wall);
              }
            }
            lease = next;
            granted.push(next);
          }
          // Validity in true time: holder h (skew s) serves while start ≤ now+s < exp - maxOffset.
          for (let i = 0; i < granted.length; i++) {
            for (let j = i + 1; j < granted.length; j++) {
              const a = granted[i] as Lease;
              const b = granted[j] as Lease;
              if (a.replica.replicaId === b.replica.replicaId) continue;
              const sa = skews[a.replica.replicaId - 1] as number;
              const sb = skews[b.replica.replicaId - 1] as number;
              const aEnd = a.expiration.wall - MAX_OFFSET - sa;
              const bStart = b.start.wall - sb;
              const bEnd = b.expiration.wall - MAX_OFFSET - sb;
              const aStart = a.start.wall - sa;
              expect(aEnd <= bStart || bEnd <= aStart).toBe(true);
            }
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('states, renewal and transfers', () => {
    const l: Lease = { replica: rep(1), start: t(1_000), expiration: t(4_000), sequence: 3 };
    expect(leaseState(null, t(0), MAX_OFFSET)).toBe('none');
    expect(leaseState(l, t(3_000), MAX_OFFSET)).toBe('valid');
    expect(leaseState(l, t(3_600), MAX_OFFSET)).toBe('stasis');
    expect(leaseState(l, t(4_000), MAX_OFFSET)).toBe('expired');
    expect(ownsValidLease(l, 1, t(999), MAX_OFFSET)).toBe(false);
    expect(ownsValidLease(l, 2, t(2_000), MAX_OFFSET)).toBe(false);
    expect(shouldRenew(l, t(2_000), DURATION)).toBe(false);
    expect(shouldRenew(l, t(2_600), DURATION)).toBe(true);
    // With a commit allowance (the last lease round, replica-lease.ts) the renewal starts that much earlier.
    expect(shouldRenew(l, t(2_000), DURATION, 600)).toBe(true);
    expect(shouldRenew(l, t(1_900), DURATION, 600)).toBe(false);
    const tr = transferredLease(l, rep(2), t(2_000), DURATION);
    expect(tr).toEqual({ replica: rep(2), start: t(2_000), expiration: t(5_000), sequence: 4 });
  });
});
