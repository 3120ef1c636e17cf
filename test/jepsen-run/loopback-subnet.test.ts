// Concurrent jepsen-style runs on one machine never share loopback addresses (issue 9's
// harness): session 6 saw a second run's `cairn init` dial the FIRST run's nodes ("the
// cluster has already been initialized (n1 belongs to cluster …)") because both used
// 127.0.205.11–13 and the second run's own nodes could not bind. Each run now reserves a
// subnet (jepsen-style/control/loopback-subnet.ts), and a subnet that another run holds or
// that anything listens on fails the start with a clear message before any node starts.
import { existsSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CairnError } from '../../src/util/index.js';
import { CairnTarget } from '../../jepsen-style/control/cairn-target.js';
import { reserveLoopbackSubnet, type SubnetReservation } from '../../jepsen-style/control/loopback-subnet.js';
import { tempStore } from './support.js';

const PORTS = [26357, 26257, 8080];
const held: SubnetReservation[] = [];
const servers: Server[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const r of held.splice(0)) r.release();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function reserve(subnet?: number): Promise<SubnetReservation> {
  const r = await reserveLoopbackSubnet({ nodes: 3, ports: PORTS, ...(subnet === undefined ? {} : { subnet }) });
  held.push(r);
  return r;
}

/** A foreign process's listener on host:port answering /health like a Cairn node of another run. */
async function foreignNode(host: string, port: number): Promise<void> {
  const s = createServer((_, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok', nodeId: 1, pid: 1 })));
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, host, resolve);
  });
  servers.push(s);
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (e) {
    return e instanceof CairnError ? `${e.code}: ${e.message}` : `untyped: ${(e as Error).message}`;
  }
}

describe('loopback subnets of jepsen-style runs', () => {
  it('two runs get different subnets; a subnet held by another run is refused by name until released', async () => {
    const a = await reserve();
    const b = await reserve();
    expect(a.subnet).not.toBe(b.subnet);
    expect(a.subnet).toBeGreaterThanOrEqual(100);
    expect(await codeOf(reserve(a.subnet))).toMatch(new RegExp(`^jepsen\\.subnet_in_use: jepsen: loopback subnet 127\\.0\\.${a.subnet}\\.\\* is reserved by another run`));
    a.release();
    expect((await reserve(a.subnet)).subnet).toBe(a.subnet);
  });

  it('a subnet whose address something listens on is skipped when choosing, refused when asked for', async () => {
    const a = await reserve();
    a.release();
    await foreignNode(`127.0.${a.subnet}.11`, 26357);
    expect((await reserve()).subnet).not.toBe(a.subnet);
    expect(await codeOf(reserve(a.subnet))).toContain(`jepsen.subnet_in_use: jepsen: 127.0.${a.subnet}.11:26357 is already in use`);
  });

  it('CairnTarget.start on an occupied subnet fails with that line before starting or dialling any node', async () => {
    const a = await reserve();
    a.release();
    await foreignNode(`127.0.${a.subnet}.12`, 8080); // "another run's n2", answering /health
    const dir = tempStore();
    dirs.push(dir);
    const t0 = Date.now();
    expect(await codeOf(CairnTarget.start({ dir, nodes: 3, subnet: a.subnet }))).toContain(`jepsen.subnet_in_use: jepsen: 127.0.${a.subnet}.12:8080 is already in use`);
    expect(existsSync(join(dir, 'node1.log')), 'no node was started').toBe(false);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});
