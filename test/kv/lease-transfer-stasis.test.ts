/**
 * A lease transfer asked of a holder whose own lease is in its last max
 * offset (stasis) or just expired — its renewal late, as under load with the
 * 2 s leases of the process tests — succeeds: the holder, as Raft leader,
 * extends (or re-takes) its lease first (src/kv/replica.ts transferLease),
 * as drain does. Before, it refused with kv.not_lease_holder naming itself,
 * and /_admin/relocate (test/kv-ranges-multiproc/relocate.test.ts, s9 CI at
 * load ~35) answered that for 60 s.
 *
 * In process, manual clocks: the clocks are moved into the stasis window (or
 * past the expiration) and the transfer is asked at once, before any tick
 * could renew the lease.
 */
import { describe, it, expect } from 'vitest';
import { autoCloseClusters } from '../support/test-cluster.js';

const startCluster = autoCloseClusters();
const key = Buffer.from('\x90lts-k', 'latin1');

describe('lease transfer from a holder whose lease is in stasis or just expired', () => {
  it.each([{ at: 'stasis' }, { at: 'expired' }])('extends it first and hands it over ($at)', async ({ at }) => {
    const c = await startCluster({ nodes: 3, clock: 'manual' });
    c.startTicker();
    await c.client(0).put(key, Buffer.from('v1'));
    const lh = c.leaseholder();
    expect(lh).toBeGreaterThanOrEqual(0);
    await c.waitFor(() => c.leader() === lh, 10_000, 'the leaseholder leading');
    const r = c.store(lh).replica(1)!;
    const lease = r.lease!;
    const maxOffset = c.node(lh).clock.maxOffsetMicros;
    // Into the window: its last max offset, or just past the expiration (the leader alone may take it then).
    const to = at === 'stasis' ? lease.expiration.wall - maxOffset / 2 : lease.expiration.wall + 1_000;
    for (const i of [0, 1, 2]) {
      const p = c.node(i).physical!;
      if (p.micros < to) p.set(to);
    }
    expect(r.ownsValidLease(c.node(lh).clock.now())).toBe(false);
    const target = r.desc.replicas.find((x) => x.nodeId - 1 !== lh)!;
    await c.store(lh).transferLease(1, target.replicaId);
    await c.waitFor(() => c.store(target.nodeId - 1).replica(1)!.ownsValidLease(c.node(target.nodeId - 1).clock.now()), 10_000, 'the target holding the lease');
    expect(c.store(target.nodeId - 1).replica(1)!.lease!.sequence).toBeGreaterThan(lease.sequence);
    expect((await c.client(lh).get(key))?.toString()).toBe('v1');
  }, 30_000);

  it('still refuses on a replica that does not hold the lease', async () => {
    const c = await startCluster({ nodes: 3, clock: 'manual' });
    c.startTicker();
    await c.client(0).put(key, Buffer.from('v1'));
    const lh = c.leaseholder();
    const other = [0, 1, 2].find((i) => i !== lh)!;
    const target = c.store(other).replica(1)!.desc.replicas.find((x) => x.nodeId - 1 !== other)!;
    await expect(c.store(other).transferLease(1, target.replicaId)).rejects.toMatchObject({ code: 'kv.not_lease_holder' });
  }, 30_000);
});
