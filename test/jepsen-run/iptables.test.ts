// The iptables partition helper installs its DROP rules in its own chain and always
// removes them: on heal, on removeAll, and when the process exits or is killed by
// SIGTERM mid-run (issue 9, "cleanup guaranteed even on crash"). Where iptables is
// usable (root with the binary) the rules are checked in the kernel's table too;
// elsewhere the helper must say it is unavailable so the RPC fault hook is used instead.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHAIN, IptablesPartitioner, iptablesAvailable } from '../../jepsen-style/nemesis/iptables.js';
import type { CommandRunner } from '../../jepsen-style/nemesis/iptables.js';
import { PartitionNemesis } from '../../jepsen-style/nemesis/partition.js';

function recorder(): { run: CommandRunner; calls: string[] } {
  const calls: string[] = [];
  const chains = new Set<string>();
  // Behaves like iptables for the chain commands: -X/-F of a missing chain and -D of a
  // missing hook fail, as the real binary does.
  const run: CommandRunner = (cmd, args) => {
    const line = [cmd, ...args].join(' ');
    calls.push(line);
    const op = args[1];
    if (op === '-N') chains.add(args[2]!);
    else if (op === '-X' || op === '-F') {
      if (!chains.has(args[2]!)) throw new Error('No chain by that name');
      if (op === '-X') chains.delete(args[2]!);
    } else if (op === '-I') chains.add(`hook:${args[4]}`);
    else if (op === '-D') {
      if (!chains.delete(`hook:${args[4]}`)) throw new Error('Bad rule');
    }
  };
  return { run, calls };
}

describe('IptablesPartitioner', () => {
  it('puts one DROP rule per directed pair in its own chain, heals by flushing, removes chain and hook', () => {
    const { run, calls } = recorder();
    const p = new IptablesPartitioner(run);
    p.install([
      ['127.0.0.11', '127.0.0.12'],
      ['127.0.0.12', '127.0.0.11'],
    ]);
    expect(calls.filter((c) => c.includes('-A'))).toEqual([
      `iptables -w -A ${CHAIN} -s 127.0.0.11 -d 127.0.0.12 -j DROP`,
      `iptables -w -A ${CHAIN} -s 127.0.0.12 -d 127.0.0.11 -j DROP`,
    ]);
    expect(calls).toContain(`iptables -w -I INPUT -j ${CHAIN}`);
    expect(process.listeners('exit').length).toBeGreaterThan(0);
    calls.length = 0;
    p.heal();
    expect(calls).toEqual([`iptables -w -F ${CHAIN}`]);
    calls.length = 0;
    p.removeAll();
    expect(calls).toEqual([`iptables -w -D INPUT -j ${CHAIN}`, `iptables -w -D INPUT -j ${CHAIN}`, `iptables -w -F ${CHAIN}`, `iptables -w -X ${CHAIN}`]);
    expect(process.listeners('exit')).not.toContain((p as unknown as { onExit: unknown }).onExit);
    calls.length = 0;
    p.removeAll(); // idempotent
    expect(calls.every((c) => !c.includes('-A'))).toBe(true);
  });

  it('a process killed by SIGTERM mid-partition removes its rules on the way out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-iptables-'));
    try {
      const logFile = join(dir, 'calls');
      const script = join(dir, 'victim.mjs');
      const mod = join(process.cwd(), 'dist', 'jepsen-style', 'nemesis', 'iptables.js');
      writeFileSync(
        script,
        `import { appendFileSync } from 'node:fs';
import { IptablesPartitioner } from ${JSON.stringify(mod)};
const p = new IptablesPartitioner((cmd, args) => appendFileSync(${JSON.stringify(logFile)}, [cmd, ...args].join(' ') + '\\n'));
p.install([['127.0.0.11', '127.0.0.12']]);
process.stdout.write('installed\\n');
setInterval(() => {}, 1e9);
`,
      );
      const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => d.toString().includes('installed') && resolve());
        child.once('exit', () => reject(new Error('victim exited before installing')));
      });
      clearTimeout(guard);
      const exited = new Promise((r) => child.once('exit', (_c, sig) => r(sig)));
      child.kill('SIGTERM');
      expect(await exited).toBe('SIGTERM'); // it still dies of the signal
      const calls = readFileSync(logFile, 'utf8').trim().split('\n');
      const installedAt = calls.indexOf(`iptables -w -A ${CHAIN} -s 127.0.0.11 -d 127.0.0.12 -j DROP`);
      expect(installedAt).toBeGreaterThan(0);
      const after = calls.slice(installedAt + 1);
      expect(after).toContain(`iptables -w -D INPUT -j ${CHAIN}`);
      expect(after).toContain(`iptables -w -X ${CHAIN}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the real iptables: rules appear in the table and are gone after removeAll — or the helper reports it unusable', () => {
    let binary = true;
    try {
      execFileSync('iptables', ['--version'], { stdio: 'ignore' });
    } catch {
      binary = false;
    }
    const usable = iptablesAvailable();
    if (!binary || process.getuid?.() !== 0) {
      expect(usable).toBe(false);
      // Without iptables the partition nemesis falls back to the RPC fault hook.
      expect((new PartitionNemesis(['isolate']) as unknown as { iptables: unknown }).iptables).toBeUndefined();
      return;
    }
    expect(usable).toBe(true);
    const p = new IptablesPartitioner();
    try {
      p.install([['127.0.0.98', '127.0.0.99']]);
      expect(execFileSync('iptables', ['-w', '-S', CHAIN], { encoding: 'utf8' })).toContain('-A CAIRN-JEPSEN -s 127.0.0.98/32 -d 127.0.0.99/32 -j DROP');
    } finally {
      p.removeAll();
    }
    expect(execFileSync('iptables', ['-w', '-S', 'INPUT'], { encoding: 'utf8' })).not.toContain(CHAIN);
  });
});
