/**
 * `cairn workload …`: the YCSB tool on the command line.
 *
 *   cairn workload init ycsb [--drop] [--insert-count N] [--splits N]
 *                            [--concurrency C] [--batch-size B] [--seed S]
 *                            [--json FILE] URL…
 *   cairn workload run ycsb --workload A|B|C|D|E|F
 *                           [--request-distribution zipfian|uniform|latest]
 *                           [--concurrency C] [--duration 60s | --max-ops N]
 *                           [--max-rate R] [--ramp 5s] [--method prepare|noprepare|simple]
 *                           [--min-scan-length 1] [--max-scan-length 100]
 *                           [--read-modify-write-in-txn] [--tolerate-errors]
 *                           [--record-count N] [--seed S] [--json FILE] URL…
 *
 * registerWorkloadCommands(program) adds these to a commander Command (the
 * CLI's main.ts calls it). Output goes to standard output; a failed command
 * sets process.exitCode = 1 and prints the error. SIGINT during a run stops
 * it gracefully (totals and JSON are still written).
 */
import { writeFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import {
  initYcsb,
  parseDistribution,
  parseDuration,
  parseMethod,
  parseWorkloadName,
  runYcsb,
  type Output,
} from '../workload/index.js';

function intArg(name: string, min: number): (v: string) => number {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be an integer ≥ ${min}`);
    return n;
  };
}

function wrap<T>(fn: (v: string) => T): (v: string) => T {
  return (v: string) => {
    try {
      return fn(v);
    } catch (e) {
      throw new InvalidArgumentError(e instanceof Error ? e.message : String(e));
    }
  };
}

const stdout: Output = {
  write: (s: string) => void process.stdout.write(s),
  get isTTY() {
    return process.stdout.isTTY === true;
  },
};

interface InitFlags {
  readonly drop: boolean;
  readonly insertCount: number;
  readonly splits: number;
  readonly concurrency: number;
  readonly batchSize: number;
  readonly seed: number;
  readonly json?: string;
}

function fail(e: unknown): void {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
}

export function registerWorkloadCommands(program: Command): void {
  const workload = program.command('workload').description('generate load against a PostgreSQL-protocol server (YCSB)');

  workload
    .command('init')
    .description('create and load a workload\'s tables')
    .command('ycsb')
    .description('create usertable and load it with YCSB records')
    .argument('<urls...>', 'PostgreSQL-protocol connection URLs')
    .option('--drop', 'drop the table first', false)
    .option('--insert-count <n>', 'records to load', intArg('--insert-count', 0), 10_000)
    .option('--splits <n>', 'split the table into N ranges (Cairn only)', intArg('--splits', 0), 0)
    .option('--concurrency <c>', 'concurrent loaders', intArg('--concurrency', 1), 4)
    .option('--batch-size <b>', 'rows per INSERT', intArg('--batch-size', 1), 100)
    .option('--seed <s>', 'random seed for field values', intArg('--seed', 0), 1)
    .option('--json <file>', 'write the load result (rows/s per second, first/last 10 %) as JSON')
    .action(async (urls: string[], o: InitFlags) => {
      try {
        const res = await initYcsb(
          { urls, drop: o.drop, insertCount: o.insertCount, splits: o.splits, concurrency: o.concurrency, batchSize: o.batchSize, seed: o.seed },
          { output: stdout },
        );
        if (o.json !== undefined) writeFileSync(o.json, JSON.stringify(res, null, 2) + '\n');
      } catch (e) {
        fail(e);
      }
    });

  workload
    .command('run')
    .description('run a workload')
    .command('ycsb')
    .description('run a YCSB core workload (A–F)')
    .argument('<urls...>', 'PostgreSQL-protocol connection URLs (clients are spread over them)')
    .requiredOption('--workload <w>', 'A, B, C, D, E or F', wrap(parseWorkloadName))
    .option('--request-distribution <d>', 'zipfian, uniform or latest (default: the workload\'s)', wrap(parseDistribution))
    .option('--concurrency <c>', 'client connections', intArg('--concurrency', 1), 8)
    .option('--duration <d>', 'how long to run after the ramp (60s, 2m); default 60s unless --max-ops', wrap(parseDuration))
    .option('--max-ops <n>', 'stop after N operations', intArg('--max-ops', 1))
    .option('--max-rate <r>', 'total operations per second (0: unlimited)', intArg('--max-rate', 0))
    .option('--ramp <d>', 'start the clients over this period; its operations are not measured', wrap(parseDuration), 0)
    .option('--method <m>', 'prepare, noprepare or simple', wrap(parseMethod), 'prepare')
    .option('--min-scan-length <n>', 'shortest scan', intArg('--min-scan-length', 1), 1)
    .option('--max-scan-length <n>', 'longest scan', intArg('--max-scan-length', 1), 100)
    .option('--read-modify-write-in-txn', 'run read-modify-write in an explicit transaction', false)
    .option('--tolerate-errors', 'count errors and keep going', false)
    .option('--record-count <n>', 'records present (default: count the table)', intArg('--record-count', 0))
    .option('--seed <s>', 'random seed', intArg('--seed', 0))
    .option('--json <file>', 'write the per-second series and percentiles as JSON')
    .action(async (urls: string[], o: Record<string, unknown>) => {
      const abort = new AbortController();
      const onSigint = (): void => abort.abort();
      process.once('SIGINT', onSigint);
      try {
        await runYcsb(
          {
            urls,
            workload: o['workload'] as ReturnType<typeof parseWorkloadName>,
            requestDistribution: o['requestDistribution'] as ReturnType<typeof parseDistribution> | undefined,
            concurrency: o['concurrency'] as number,
            durationMs: o['duration'] as number | undefined,
            maxOps: o['maxOps'] as number | undefined,
            maxRate: o['maxRate'] as number | undefined,
            rampMs: o['ramp'] as number,
            method: o['method'] as ReturnType<typeof parseMethod>,
            minScanLength: o['minScanLength'] as number,
            maxScanLength: o['maxScanLength'] as number,
            readModifyWriteInTxn: o['readModifyWriteInTxn'] as boolean,
            tolerateErrors: o['tolerateErrors'] as boolean,
            recordCount: o['recordCount'] as number | undefined,
            seed: o['seed'] as number | undefined,
            jsonFile: o['json'] as string | undefined,
            signal: abort.signal,
          },
          { output: stdout },
        );
      } catch (e) {
        fail(e);
      } finally {
        process.off('SIGINT', onSigint);
      }
    });
}
