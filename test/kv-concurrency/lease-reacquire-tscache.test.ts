/**
 * The timestamp cache and lock table across lease changes
 * (ReplicaConcurrency.onLeaseApplied; DESIGN.md §6 "Timestamp cache after a
 * lease transfer"; CockroachDB bumps the cache only when a lease changes hands):
 *   - a lease that changes hands (another replica, or a sequence gap — a
 *     snapshot that skipped another holder's lease) raises the low-water mark
 *     to the horizon: a write at now is pushed above every read another
 *     holder may have served;
 *   - the holder's own lapsed lease re-acquired (same replica, sequence + 1:
 *     no other lease lies between) keeps the cache and the locks: a write at
 *     now is not pushed (before: pushed 2 max offsets ahead, and a
 *     non-transactional write then waited for the clock — bench:kv's 6-range
 *     puts, ~18 % of them ~170 ms in process), while a read this replica
 *     served before the lapse still pushes a write below it.
 */
import { describe, it, expect } from 'vitest';
import { Clock, ManualPhysical, tsAddMicros, type Timestamp } from '../../src/util/hlc.js';
import { ReplicaConcurrency } from '../../src/kv/concurrency-manager.js';
import type { Lease, ReplicaDescriptor, Request } from '../../src/kv/api.js';
import type { EvalHeader } from '../../src/kv/batcheval/command.js';

const MAX_OFFSET = 500_000;
const T0 = 1_700_000_000_000_000;
const rep = (id: number): ReplicaDescriptor => ({ nodeId: id, storeId: id, replicaId: id, type: 0 });
const key = Buffer.from('\x90k1', 'latin1');
const put: Request = { kind: 'put', key, value: Buffer.from('v') };

function setup(): { phys: ManualPhysical; clock: Clock; rc: ReplicaConcurrency; pushedAt: (ts: Timestamp) => Timestamp } {
  const phys = new ManualPhysical(T0);
  const clock = new Clock(phys.read, MAX_OFFSET);
  const rc = new ReplicaConcurrency(clock);
  // Past the horizon the cache starts with at creation.
  phys.advance(3 * MAX_OFFSET);
  const pushedAt = (ts: Timestamp): Timestamp => rc.prepare({ rangeId: 2, timestamp: ts } as EvalHeader, [put], true).timestamp;
  return { phys, clock, rc, pushedAt };
}

function lease(replicaId: number, seq: number, start: Timestamp): Lease {
  return { replica: rep(replicaId), start, expiration: tsAddMicros(start, 6_000_000), sequence: seq };
}

describe('onLeaseApplied', () => {
  it("re-acquiring the holder's own lapsed lease keeps the cache: no push at now, its reads still push writes below them", () => {
    const { phys, clock, rc, pushedAt } = setup();
    const l1 = lease(1, 4, clock.now());
    rc.onLeaseApplied(l1, null);
    phys.advance(3 * MAX_OFFSET);
    // A read this holder served, then its lease lapsed and it took it again.
    const readTs = clock.now();
    rc.tscache.add({ key, endKey: null }, readTs, undefined);
    phys.advance(7_000_000);
    const l2 = lease(1, 5, clock.now());
    rc.onLeaseApplied(l2, l1);
    const now = clock.now();
    expect(pushedAt(now)).toEqual(now);
    // A write below the read it served before the lapse is still pushed just above it.
    const below = { wall: readTs.wall - 1000, logical: 0 };
    expect(pushedAt(below)).toEqual({ wall: readTs.wall, logical: readTs.logical + 1 });
  });

  // Replica 1 holds lease 4 since long enough for the cache's creation horizon to be passed; then `next` applies.
  const afterLease4 = (next: (l1: Lease, now: Timestamp) => Lease): { now0: Timestamp; pushedAt: (ts: Timestamp) => Timestamp } => {
    const { phys, clock, rc, pushedAt } = setup();
    const l1 = lease(1, 4, clock.now());
    rc.onLeaseApplied(l1, null);
    phys.advance(3 * MAX_OFFSET);
    const now0 = clock.now();
    expect(pushedAt(now0)).toEqual(now0);
    rc.onLeaseApplied(next(l1, now0), l1);
    return { now0, pushedAt };
  };

  it('a lease that changes hands pushes writes at now above the horizon', () => {
    const { now0, pushedAt } = afterLease4((_, now) => lease(2, 5, now));
    expect(pushedAt(now0).wall).toBeGreaterThanOrEqual(now0.wall + 2 * MAX_OFFSET);
  });

  it('the same replica after a sequence gap (another holder in between, skipped by a snapshot) counts as a change of hands', () => {
    const { now0, pushedAt } = afterLease4((_, now) => lease(1, 6, now));
    expect(pushedAt(now0).wall).toBeGreaterThanOrEqual(now0.wall + 2 * MAX_OFFSET);
  });

  it('an extension (same sequence) changes nothing', () => {
    const { now0, pushedAt } = afterLease4((l1) => ({ ...l1, expiration: tsAddMicros(l1.expiration, 3_000_000) }));
    expect(pushedAt(now0)).toEqual(now0);
  });
});
