/**
 * iptables rules that cut traffic between per-node loopback addresses, with cleanup
 * guaranteed: all rules live in one chain of our own,
 *
 *   INPUT ──(-j CAIRN-JEPSEN)──▶ CAIRN-JEPSEN:  -s 127.0.0.11 -d 127.0.0.12 -j DROP
 *                                               -s 127.0.0.12 -d 127.0.0.11 -j DROP …
 *
 * so healing is "flush the chain", and removing everything is "unhook, flush, delete the
 * chain" — which also runs on process exit, SIGINT and SIGTERM, and once before the first
 * install (leftovers of a crashed run). Loopback packets traverse INPUT on `lo`, so
 * dropping there cuts both TCP directions of a pair when both (a→b, b→a) are listed.
 *
 * Commands go through an injected runner (`execFileSync` by default) so the rule set can
 * be inspected where iptables is missing. Ownership: the partitioner owns the chain.
 */
import { execFileSync } from 'node:child_process';

export type CommandRunner = (cmd: string, args: readonly string[]) => void;

export const CHAIN = 'CAIRN-JEPSEN';

const defaultRunner: CommandRunner = (cmd, args) => {
  execFileSync(cmd, [...args], { stdio: 'ignore' });
};

/** Whether `iptables` exists and we may change rules (root). */
export function iptablesAvailable(run: CommandRunner = defaultRunner): boolean {
  try {
    run('iptables', ['-w', '-L', 'INPUT', '-n']);
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}

export class IptablesPartitioner {
  private hooked = false;
  private readonly onExit = (): void => this.removeAll();
  private readonly onSignal = (sig: NodeJS.Signals): void => {
    this.removeAll();
    process.kill(process.pid, sig);
  };

  constructor(private readonly run: CommandRunner = defaultRunner) {}

  private tryRun(args: readonly string[]): boolean {
    try {
      this.run('iptables', ['-w', ...args]);
      return true;
    } catch {
      return false;
    }
  }

  /** Drops every packet from `a` to `b` for each [a, b]; replaces the previous set. */
  install(drops: readonly (readonly [string, string])[]): void {
    if (!this.hooked) {
      this.removeAll(); // leftovers of a crashed run
      this.run('iptables', ['-w', '-N', CHAIN]);
      this.run('iptables', ['-w', '-I', 'INPUT', '-j', CHAIN]);
      this.hooked = true;
      process.once('exit', this.onExit);
      process.once('SIGINT', this.onSignal);
      process.once('SIGTERM', this.onSignal);
    }
    this.run('iptables', ['-w', '-F', CHAIN]);
    for (const [a, b] of drops) this.run('iptables', ['-w', '-A', CHAIN, '-s', a, '-d', b, '-j', 'DROP']);
  }

  /** Removes all rules but keeps the chain hooked (a healed network). */
  heal(): void {
    if (this.hooked) this.tryRun(['-F', CHAIN]);
  }

  /** Unhooks, flushes and deletes the chain; safe to call any time, any number of times. */
  removeAll(): void {
    // A hook may have been inserted more than once by crashed runs (bounded: a runner
    // that never fails must not spin).
    for (let i = 0; i < 16 && this.tryRun(['-D', 'INPUT', '-j', CHAIN]); i++);
    this.tryRun(['-F', CHAIN]);
    this.tryRun(['-X', CHAIN]);
    if (this.hooked) {
      this.hooked = false;
      process.removeListener('exit', this.onExit);
      process.removeListener('SIGINT', this.onSignal);
      process.removeListener('SIGTERM', this.onSignal);
    }
  }
}
