/**
 * Nemesis names as the command line gives them: `none`, one name, or a comma / plus list
 * (`partition,kill`) composed into one nemesis that picks one part per fault window.
 */
import { CairnError } from '../../src/util/index.js';
import { ClockLagNemesis, ClockNemesis, ClockWriterNemesis } from './clock.js';
import { KillNemesis } from './kill.js';
import type { Nemesis } from './nemesis.js';
import { ComposedNemesis } from './nemesis.js';
import { PartitionNemesis } from './partition.js';
import { PauseLeaseholderNemesis, PauseNemesis } from './pause.js';
import { LeaseNemesis, MergeNemesis, MoveNemesis, SplitNemesis } from './split.js';

export * from './nemesis.js';

export const NEMESIS_NAMES = ['kill', 'pause', 'partition', 'clock', 'clock-safe', 'split', 'merge', 'lease', 'move', 'pause-leaseholder', 'partition-leaseholder', 'clock-lag', 'clock-writer'] as const;

/** What some nemeses need to know about the system under test. */
export interface NemesisOptions {
  /** The nodes' lease duration (ms): pause lengths are chosen around it. Default 6000 (Cairn's). */
  readonly leaseMs?: number;
  /** The nodes' max clock offset (ms): clock skews are fractions of it. Default 500 (Cairn's). */
  readonly maxOffsetMs?: number;
}

/** Builds the nemesis for `spec`; undefined for 'none'. `tables` feeds the split and move nemeses. */
export function nemesisFor(spec: string, tables: readonly string[], opts: NemesisOptions = {}): Nemesis | undefined {
  const names = spec.split(/[,+]/).map((s) => s.trim()).filter((s) => s !== '' && s !== 'none');
  if (names.length === 0) return undefined;
  const parts = names.map((name): Nemesis => {
    switch (name) {
      case 'kill':
        return new KillNemesis();
      case 'pause':
        return new PauseNemesis(opts.leaseMs);
      case 'pause-leaseholder':
        return new PauseLeaseholderNemesis(opts.leaseMs);
      case 'partition-leaseholder':
        return new PartitionNemesis(['leaseholder'], undefined, opts.leaseMs);
      case 'clock-lag':
        return new ClockLagNemesis(opts.maxOffsetMs);
      case 'clock-writer':
        return new ClockWriterNemesis(opts.maxOffsetMs);
      case 'partition':
        return new PartitionNemesis();
      case 'clock':
        return new ClockNemesis(opts.maxOffsetMs);
      case 'clock-safe':
        return new ClockNemesis(opts.maxOffsetMs, true);
      case 'split':
        return new SplitNemesis(tables);
      case 'merge':
        return new MergeNemesis();
      case 'lease':
        return new LeaseNemesis();
      case 'move':
        return new MoveNemesis(tables);
      default:
        throw new CairnError('jepsen.unknown_nemesis', `jepsen: unknown nemesis ${name} (have none, ${NEMESIS_NAMES.join(', ')})`);
    }
  });
  return parts.length === 1 ? parts[0] : new ComposedNemesis(parts);
}
