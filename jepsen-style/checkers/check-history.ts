/**
 * Command-line checking of a recorded history:
 *
 *   node dist/jepsen-style/checkers/check-history.js --workload append history.jsonl
 *
 * Reads the history (jsonl by default; `--format edn|jepsen-log` for Jepsen's own
 * files), runs the workload's checker, prints the result as JSON and exits 0 only when
 * the verdict is exactly `true` — 'unknown' (budget exhausted, nothing verified) and a
 * checker that throws are failures (exit 1); unusable arguments or an unreadable
 * history exit 2.
 *
 * `runCheckHistory` holds the logic with injected output so tests run it in-process.
 */
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import { CairnError } from '../../src/util/index.js';
import type { History } from '../history/history.js';
import { parseHistoryJsonl } from '../history/history.js';
import { parseEdnHistory, parseJepsenLog } from '../history/jepsen-formats.js';
import type { Checker } from './check-result.js';
import { bankChecker } from './bank.js';
import { elleAppendChecker } from './elle-append.js';
import type { ConsistencyModel } from './elle-append.js';
import { g2Checker } from './g2.js';
import { checkAll, exitStatus } from './index.js';
import { casRegister, linearizableChecker, register } from './linearizable.js';
import { monotonicChecker } from './monotonic.js';
import { sequentialChecker } from './sequential.js';
import { setsChecker } from './sets.js';

export const WORKLOADS = ['append', 'register', 'cas-register', 'bank', 'sets', 'monotonic', 'sequential', 'g2'] as const;
export type Workload = (typeof WORKLOADS)[number];

interface CliOptions {
  workload: string;
  format: string;
  model: string;
  total?: string;
  timeLimit?: string;
}

function checkerFor(o: CliOptions): Checker {
  const budget = o.timeLimit === undefined ? {} : { deadlineMs: Number(o.timeLimit) };
  switch (o.workload as Workload) {
    case 'append':
      return elleAppendChecker({ consistencyModel: o.model as ConsistencyModel });
    case 'register':
      return linearizableChecker(register, budget);
    case 'cas-register':
      return linearizableChecker(casRegister, budget);
    case 'bank':
      if (o.total === undefined) throw new CairnError('checkers.bad_argument', 'check-history: --total is required for bank');
      return bankChecker({ total: Number(o.total) });
    case 'sets':
      return setsChecker;
    case 'monotonic':
      return monotonicChecker;
    case 'sequential':
      return sequentialChecker;
    case 'g2':
      return g2Checker;
    default:
      throw new CairnError('checkers.bad_argument', `check-history: unknown workload ${o.workload} (one of ${WORKLOADS.join(', ')})`);
  }
}

function parse(text: string, format: string): History {
  if (format === 'edn') return parseEdnHistory(text);
  if (format === 'jepsen-log') return parseJepsenLog(text);
  if (format === 'jsonl') return parseHistoryJsonl(text);
  throw new CairnError('checkers.bad_argument', `check-history: unknown format ${format}`);
}

/** Runs the CLI; returns the exit status. */
export async function runCheckHistory(argv: readonly string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const cmd = new Command('check-history')
    .argument('<history>', 'history file')
    .requiredOption('--workload <name>', `one of ${WORKLOADS.join(', ')}`)
    .option('--format <format>', 'jsonl | edn | jepsen-log', 'jsonl')
    .option('--model <model>', 'append: serializable | strict-serializable', 'serializable')
    .option('--total <n>', 'bank: the total of all balances')
    .option('--time-limit <ms>', 'register: search budget in ms (exhausted → unknown)')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err });
  let checker: Checker;
  let history: History;
  try {
    cmd.parse([...argv], { from: 'user' });
    const opts = cmd.opts<CliOptions>();
    checker = checkerFor(opts);
    history = parse(await readFile(cmd.args[0]!, 'utf8'), opts.format);
  } catch (e) {
    if (e instanceof CommanderError) return e.code === 'commander.helpDisplayed' ? 0 : 2;
    err(`${e instanceof Error ? e.message : String(e)}\n`);
    return 2;
  }
  const result = checkAll([checker], history);
  out(JSON.stringify(result, (_k, v: unknown) => (v === Infinity ? 'Infinity' : v), 2) + '\n');
  return exitStatus(result);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const w = (s: string) => process.stdout.write(s);
  const e = (s: string) => process.stderr.write(s);
  process.exitCode = await runCheckHistory(process.argv.slice(2), w, e);
}
