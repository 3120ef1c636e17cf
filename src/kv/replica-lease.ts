/**
 * Range leases: expiration-based leases granted through Raft (DESIGN.md §3
 * "Leases", CockroachDB's replica_range_lease.go without epoch leases).
 * Pure functions over (lease, replica, clock reading); the Replica drives
 * the flow (replica.ts) and proposes RequestLease / TransferLease commands
 * (batcheval/cmd-lease.ts).
 *
 *   time ─────────────────────────────────────────────────────────────►
 *        start                     expiration-maxOffset      expiration
 *          │◄──────── VALID: holder serves ─────►│◄── STASIS ──►│  EXPIRED:
 *          │                                     │  nobody      │  any leader
 *          │                                     │  serves      │  may acquire
 *
 * Rules:
 *   - valid for its holder while start ≤ now < expiration - maxOffset on the
 *     holder's clock; nobody else serves while now < expiration on their
 *     clock, so with clocks within maxOffset two holders never overlap;
 *   - a new lease (another holder) starts at or after the previous
 *     expiration and gets sequence prev+1; an extension by the holder keeps
 *     start and sequence and moves the expiration;
 *   - a lease command applies only if the lease in force at apply time still
 *     equals its prevLease (two racing requests cannot both win);
 *   - the lease follows the Raft leader: only the leader acquires; a holder
 *     that is not the leader asks Raft for leadership, and if it is still not
 *     the leader an election timeout later, transfers the lease to the
 *     leader; a replica serves only under its own valid lease, so a follower
 *     without the lease never serves (see Replica.maintainLease);
 *   - a transfer gives the target a lease starting at the transferor's now,
 *     sequence prev+1; the transferor stops serving as soon as it proposes
 *     the transfer. The new holder's timestamp cache must start at the lease
 *     start (DESIGN.md §6): Store's `onLeaseApplied` hook hands the lease to
 *     the concurrency layer when a replica's lease changes.
 *
 * Settings: lease duration (default 6 s), renewal when less than half of it
 * remains (only while the range is active: a quiesced range lets its lease
 * lapse and re-acquires it on the next request).
 *
 * Commit allowance (KvSettings.leaseCommitAllowance, default on;
 * CAIRN_KV_LEASE_COMMIT_ALLOWANCE=0 turns it off): a lease is chosen at its
 * proposal (start = now) but usable only once it applies, a Raft round later.
 * When that round takes longer than duration − max offset (2 s test leases
 * under a load of 30–40 on 2 cores: rounds of 1.5–3 s), every lease arrives
 * in stasis or expired, its holder asks for the next one at once, and the
 * range serves nothing for as long as the load lasts (s9/s10 CI:
 * kv-ranges-multiproc/size-split-merge, the liveness range r4 re-taken by
 * its holder every 2–5 s for a minute, no heartbeat through). So the
 * replica's last lease round (proposal → apply, its own clock, at most one
 * duration) is added to the expiration it asks for and to the time before
 * the expiration at which it renews: a lease arrives with about the
 * configured duration left, and an extension before stasis. Safety is
 * unchanged (any expiration is safe: nobody else acquires before it passes);
 * the cost is a later failover by at most that allowance after the holder
 * dies — a range whose lease rounds take that long fails over no sooner
 * anyway, as the new holder's lease takes such a round too.
 */
import { compareTimestamps, tsAddMicros, type Timestamp } from '../util/hlc.js';
import type { Lease, ReplicaDescriptor } from './api.js';

export type LeaseState = 'valid' | 'stasis' | 'expired' | 'none';

/** The lease's state at `now` as seen by any replica. */
export function leaseState(lease: Lease | null, now: Timestamp, maxOffsetMicros: number): LeaseState {
  if (lease === null) return 'none';
  if (compareTimestamps(now, lease.expiration) >= 0) return 'expired';
  if (now.wall >= lease.expiration.wall - maxOffsetMicros) return 'stasis';
  return 'valid';
}

/** Whether `replicaId` may serve under `lease` at `now`. */
export function ownsValidLease(lease: Lease | null, replicaId: number, now: Timestamp, maxOffsetMicros: number): boolean {
  return lease !== null && lease.replica.replicaId === replicaId && compareTimestamps(now, lease.start) >= 0 && leaseState(lease, now, maxOffsetMicros) === 'valid';
}

/**
 * The lease `me` should request at `now`, or null when another replica's
 * lease has not expired yet (then the caller redirects to it).
 */
export function nextLease(prev: Lease | null, me: ReplicaDescriptor, now: Timestamp, durationMicros: number): Lease | null {
  const expiration = tsAddMicros(now, durationMicros);
  if (prev !== null && prev.replica.replicaId === me.replicaId && compareTimestamps(now, prev.expiration) < 0) {
    // Extension: same start and sequence, later expiration (never earlier).
    return { replica: me, start: prev.start, expiration: compareTimestamps(expiration, prev.expiration) > 0 ? expiration : prev.expiration, sequence: prev.sequence };
  }
  if (prev !== null && compareTimestamps(now, prev.expiration) < 0) return null;
  return { replica: me, start: now, expiration, sequence: (prev?.sequence ?? 0) + 1 };
}

/** The lease a holder hands to `target` at `now`. */
export function transferredLease(prev: Lease, target: ReplicaDescriptor, now: Timestamp, durationMicros: number): Lease {
  return { replica: target, start: now, expiration: tsAddMicros(now, durationMicros), sequence: prev.sequence + 1 };
}

/**
 * Whether the holder should extend its lease now: less than half the duration
 * left, plus `allowanceMicros` (the commit allowance in the header: the
 * extension then applies with about half the duration left).
 */
export function shouldRenew(lease: Lease, now: Timestamp, durationMicros: number, allowanceMicros = 0): boolean {
  return lease.expiration.wall - now.wall < durationMicros / 2 + allowanceMicros;
}
