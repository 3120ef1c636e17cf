/**
 * `npm run jepsen -- --workload append --nemesis partition,kill --nodes 5 --time 300
 *  --concurrency 10 --seed 7 [--target cairn|postgres] [--canary NAME] [--isolation L]
 *  [--fault-interval MS] [--fault-duration MS] [--store DIR] [--subnet N]
 *  [--node-arg=--log-level=debug …] [--op-timeout MS]`
 *
 * Runs one jepsen-style test (runner.ts), prints the one-line summary, and exits 0 only
 * when every checker said valid (unknown, a checker error or a crash is a failure).
 */
import { Command, InvalidArgumentError } from 'commander';
import { runJepsen } from './runner.js';
import { WORKLOADS } from './workloads/index.js';

function int(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name} must be a non-negative integer`);
    return n;
  };
}

const program = new Command('jepsen')
  .description('Black-box consistency test of Cairn (or PostgreSQL) under faults')
  .requiredOption('--workload <name>', `one of ${Object.keys(WORKLOADS).join(', ')}`)
  .option('--nemesis <list>', 'none | kill | pause | partition | clock | clock-safe | split | merge | lease | pause-leaseholder | partition-leaseholder | clock-lag | clock-writer, or a comma list', 'none')
  .option('--nodes <n>', 'cluster size (Cairn)', int('--nodes'), 5)
  .option('--time <s>', 'seconds of workload', int('--time'), 300)
  .option('--concurrency <n>', 'client processes', int('--concurrency'), 10)
  .option('--seed <s>', 'random seed', int('--seed'), Date.now() % 1_000_000)
  .option('--target <t>', 'cairn | postgres', 'cairn')
  .option('--canary <name>', 'CAIRN_CANARY for the nodes (a deliberately broken build)')
  .option('--isolation <level>', 'client isolation (anything but serializable is a broken client)', 'serializable')
  .option('--fault-interval <ms>', 'quiet time between faults', int('--fault-interval'), 5000)
  .option('--fault-duration <ms>', 'how long each fault stays on', int('--fault-duration'), 5000)
  .option('--store <dir>', 'where runs are written (default jepsen-style/store)')
  .option('--subnet <n>', 'Cairn: nodes on 127.0.<n>.11… (default: a free subnet of 100–254, reserved for the run)', int('--subnet'))
  .option('--node-arg <flag>', 'Cairn: extra `cairn start` flag for every node (repeatable), e.g. --node-arg=--log-level=debug', (v: string, prev: string[]) => [...prev, v], [] as string[])
  .option('--op-timeout <ms>', 'client-side timeout of one operation', int('--op-timeout'), 5000);

program.parse();
const o = program.opts<{
  workload: string;
  nemesis: string;
  nodes: number;
  time: number;
  concurrency: number;
  seed: number;
  target: string;
  canary?: string;
  isolation: string;
  faultInterval: number;
  faultDuration: number;
  store?: string;
  subnet?: number;
  nodeArg: string[];
  opTimeout: number;
}>();
if (o.target !== 'cairn' && o.target !== 'postgres') program.error('--target must be cairn or postgres');
if (o.subnet !== undefined && o.subnet > 255) program.error('--subnet must be 0–255 (the third octet of 127.0.<subnet>.11…)');
if (!['serializable', 'repeatable read', 'read committed'].includes(o.isolation)) program.error('--isolation must be serializable, "repeatable read" or "read committed"');

// Ctrl-C / kill: exit through process.exit so the runner's exit hooks kill the node
// processes and remove any iptables rules.
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(130));

try {
  const r = await runJepsen({
    workload: o.workload,
    nemesis: o.nemesis,
    nodes: o.nodes,
    timeSec: o.time,
    concurrency: o.concurrency,
    seed: o.seed,
    target: o.target as 'cairn' | 'postgres',
    isolation: o.isolation as 'serializable',
    faultIntervalMs: o.faultInterval,
    faultDurationMs: o.faultDuration,
    ...(o.subnet === undefined ? {} : { loopbackSubnet: o.subnet }),
    nodeArgs: o.nodeArg,
    opTimeoutMs: o.opTimeout,
    ...(o.canary === undefined ? {} : { canary: o.canary }),
    ...(o.store === undefined ? {} : { storeRoot: o.store }),
    log: (l) => process.stderr.write(l + '\n'),
  });
  process.stdout.write(`${r.summary}\n${r.dir}\n`);
  process.exit(r.valid === true ? 0 : 1);
} catch (e) {
  process.stderr.write(`jepsen: run failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(2);
}
