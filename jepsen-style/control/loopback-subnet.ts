/**
 * Loopback subnets for CairnTarget runs: each run's nodes listen (and dial from)
 * 127.0.<subnet>.11, .12, … on fixed ports, so two runs on one machine (two test
 * files at once, two engineers' worktrees, a CI job beside a manual run) must never
 * share a subnet. A run that did once dialled the other run's nodes: its own nodes
 * could not bind and exited, the other run's node 1 answered /health, and `cairn init`
 * failed with "the cluster has already been initialized (n1 belongs to cluster …)".
 *
 *   reserveLoopbackSubnet({ nodes, ports })           → the first free subnet of 100–254
 *   reserveLoopbackSubnet({ nodes, ports, subnet: 7 }) → 7, or a clear error if it is taken
 *
 * A subnet is taken when another live process holds its reservation file
 * (<tmpdir>/cairn-jepsen-subnets/<subnet>, pid-file.ts) or when anything listens on one of
 * the run's addresses (each node host × each port is bound once and closed). The
 * reservation lasts until release() (CairnTarget.stop). The bind probe only shows the
 * addresses were free a moment ago; CairnTarget also checks that each node's /health is
 * answered by its own process (pid) before dialling anything.
 *
 * Ownership: the caller owns the reservation and releases it.
 */
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnError } from '../../src/util/index.js';
import { claimPidFile, pidFileOwner, releasePidFile } from './pid-file.js';

/** Subnets picked automatically: 0 (127.0.0.11…, the cluster script's aliases) and 1–99 are left to explicit choices. */
export const AUTO_SUBNETS = { first: 100, last: 254 } as const;

const DIR = join(tmpdir(), 'cairn-jepsen-subnets');

export interface SubnetReservation {
  readonly subnet: number;
  release(): void;
}

/** Node i's (1-based) address on `subnet`. */
export function loopbackHost(id: number, subnet: number): string {
  return `127.0.${subnet}.${10 + id}`;
}

function claim(subnet: number): boolean {
  return claimPidFile(DIR, String(subnet));
}

function unclaim(subnet: number): void {
  releasePidFile(DIR, String(subnet));
}

/** The first `host:port` that something listens on (a bind fails) and the bind's error code, or null. */
async function addressInUse(hosts: readonly string[], ports: readonly number[]): Promise<{ addr: string; code: string } | null> {
  for (const host of hosts) {
    for (const port of ports) {
      const err = await new Promise<string | null>((resolve) => {
        const s = createServer();
        s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
        s.listen({ host, port, exclusive: true }, () => s.close(() => resolve(null)));
      });
      if (err !== null) return { addr: `${host}:${port}`, code: err };
    }
  }
  return null;
}

/**
 * Reserves a subnet whose node addresses are all free: `subnet` if given (throws
 * jepsen.subnet_in_use when it is not), else the first free one of AUTO_SUBNETS
 * (throws jepsen.no_subnet when none is).
 */
export async function reserveLoopbackSubnet(opts: { readonly nodes: number; readonly ports: readonly number[]; readonly subnet?: number }): Promise<SubnetReservation> {
  const hosts = (subnet: number): string[] => Array.from({ length: opts.nodes }, (_, i) => loopbackHost(i + 1, subnet));
  const reservation = (subnet: number): SubnetReservation => ({ subnet, release: () => unclaim(subnet) });
  if (opts.subnet !== undefined) {
    const s = opts.subnet;
    if (!claim(s)) {
      const owner = pidFileOwner(DIR, String(s)) ?? '?';
      throw new CairnError('jepsen.subnet_in_use', `jepsen: loopback subnet 127.0.${s}.* is reserved by another run on this machine (pid ${owner}); pick another --subnet or leave it out`);
    }
    const used = await addressInUse(hosts(s), opts.ports);
    if (used !== null) {
      unclaim(s);
      throw new CairnError('jepsen.subnet_in_use', `jepsen: ${used.addr} is already in use (${used.code}: another cluster on this machine?); our nodes could not bind it — pick another --subnet or leave it out`);
    }
    return reservation(s);
  }
  const span = AUTO_SUBNETS.last - AUTO_SUBNETS.first + 1;
  const offset = process.pid % span; // concurrent runs start their search in different places
  for (let k = 0; k < span; k++) {
    const s = AUTO_SUBNETS.first + ((offset + k) % span);
    if (!claim(s)) continue;
    if ((await addressInUse(hosts(s), opts.ports)) === null) return reservation(s);
    unclaim(s);
  }
  throw new CairnError('jepsen.no_subnet', `jepsen: no free loopback subnet in 127.0.${AUTO_SUBNETS.first}–${AUTO_SUBNETS.last}.* (every one reserved or in use)`);
}
