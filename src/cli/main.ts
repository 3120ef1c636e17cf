#!/usr/bin/env node
/**
 * `cairn`: the command-line entry point (commander).
 *
 *   cairn start --store=DIR --listen-addr=HOST:PORT --sql-addr=HOST:PORT
 *               --http-addr=HOST:PORT --join=A,B,C [--insecure] [--certs-dir=DIR]
 *               [--max-offset=500ms] [--cache=128MiB] [--log-level=info]
 *               [--log-file=PATH|-] [--join-timeout=0] [--liveness-ttl=4.5s]
 *               [--raft-tick=100ms] [--lease-duration=6s] [--local-address=IP]
 *               [--range-max-bytes=64MiB] [--dead-node-timeout=5m] [--gc-ttl=4h] [--range-queues=on|off]
 *   cairn start-single-node …same flags without --join (initialises itself)
 *   cairn init --host=HOST:PORT            initialise a new cluster, exactly once
 *   cairn node status [--ranges] [--host=HOST:PORT] [--format=table|json]
 *   cairn sql …                            (src/cli/sql-shell.ts)
 *   cairn workload …                       (src/cli/workload-command.ts)
 *   cairn debug keys --store=DIR [--values]
 *   cairn version
 *
 * Also: `cairn node decommission N [--wait=5m]` marks node N decommissioning
 * (liveness record) and waits until the replicate queues moved its replicas
 * away; `cairn node recommission N` cancels it.
 *
 * Error contract: every user error (bad flag, port in use, store locked, store
 * of another cluster, duplicate node id, wrong --join, second init) exits
 * with status 1 and ONE line on stderr — the error's message, never a stack
 * trace. Logs go to <store>/logs/cairn.log unless --log-file says otherwise,
 * so stderr carries only that line. A broken invariant (AssertionError) is a
 * bug and still prints its stack.
 *
 * Signals: SIGTERM / SIGINT stop the node cleanly (listeners closed, store
 * drained, engine closed), then exit 0; a second signal exits at once.
 *
 * Ownership: src/cli owns the process's exit code and standard streams.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { freemem, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { pino } from 'pino';
import { AssertionError } from '../util/assert.js';
import { CairnError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { DEFAULT_NODE_CONFIG, ServerError, formatHostPort, parseBytes, parseDurationMs, parseHostPort, parseJoinList, type HostPort, type NodeConfig } from '../server/config.js';
// The server's code loads only for the subcommands that run a node or open a store,
// so `cairn sql` / `cairn workload` start without it.
import type { Node } from '../server/node.js';
import { formatNodeStatus, requestClusterStatus, requestDecommission, requestInit } from '../server/admin-client.js';
import { registerWorkloadCommands } from './workload-command.js';
import { registerSqlCommand } from './sql-shell.js';

function version(): string {
  for (const rel of ['../../../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'cairn' && pkg.version !== undefined) return pkg.version;
    } catch {
      // try the next location (dist/ vs source tree)
    }
  }
  return 'unknown';
}

/** Prints one line and exits 1 (user errors); bugs keep their stack. */
function die(e: unknown): never {
  if (e instanceof AssertionError || !(e instanceof Error)) {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  } else {
    const msg = e.message.split('\n')[0] ?? e.message;
    process.stderr.write(`ERROR: ${msg}\n`);
  }
  process.exit(1);
}

function argOf<T>(parse: (v: string) => T): (v: string) => T {
  return (v: string) => {
    try {
      return parse(v);
    } catch (e) {
      throw new InvalidArgumentError(e instanceof Error ? e.message.replace(/^server: /, '') : String(e));
    }
  };
}

interface StartFlags {
  readonly store: string;
  readonly listenAddr: HostPort;
  readonly sqlAddr: HostPort;
  readonly httpAddr: HostPort;
  readonly join?: HostPort[];
  readonly insecure?: boolean;
  readonly certsDir?: string;
  readonly maxOffset: number;
  readonly cache: string;
  readonly logLevel: string;
  readonly logFile?: string;
  readonly joinTimeout: number;
  readonly livenessTtl: number;
  readonly raftTick: number;
  readonly leaseDuration: number;
  readonly localAddress?: string;
  readonly rangeMaxBytes?: string;
  readonly deadNodeTimeout?: number;
  readonly gcTtl?: number;
  readonly rangeMergeDelay?: number;
  readonly rangeQueues?: string;
}

function addStartOptions(cmd: Command, withJoin: boolean): Command {
  cmd
    .requiredOption('--store <dir>', 'directory of this node\'s store (created if missing)')
    .option('--listen-addr <host:port>', 'RPC address other nodes dial', argOf((v) => parseHostPort('--listen-addr', v)), { host: '127.0.0.1', port: 26357 })
    .option('--sql-addr <host:port>', 'PostgreSQL-protocol address', argOf((v) => parseHostPort('--sql-addr', v)), { host: '127.0.0.1', port: 26257 })
    .option('--http-addr <host:port>', 'HTTP status address', argOf((v) => parseHostPort('--http-addr', v)), { host: '127.0.0.1', port: 8080 })
    .option('--insecure', 'no TLS, trust authentication', false)
    .option('--certs-dir <dir>', 'directory with node.crt / node.key (and ca.crt)')
    .option('--max-offset <duration>', 'maximum clock offset tolerated between nodes', argOf((v) => parseDurationMs('--max-offset', v)), DEFAULT_NODE_CONFIG.maxOffsetMs)
    .option('--cache <size>', 'LevelDB block cache (bytes, e.g. 256MiB, or % of memory)', '128MiB')
    .option('--log-level <level>', 'trace|debug|info|warn|error', 'info')
    .option('--log-file <path>', 'log destination; - for stderr (default <store>/logs/cairn.log)')
    .option('--liveness-ttl <duration>', 'node liveness record lifetime', argOf((v) => parseDurationMs('--liveness-ttl', v)), DEFAULT_NODE_CONFIG.livenessTtlMs)
    .option('--raft-tick <duration>', 'Raft tick interval', argOf((v) => parseDurationMs('--raft-tick', v)), DEFAULT_NODE_CONFIG.tickIntervalMs)
    .option('--lease-duration <duration>', 'range lease duration', argOf((v) => parseDurationMs('--lease-duration', v)), DEFAULT_NODE_CONFIG.leaseDurationMs)
    .option('--local-address <ip>', 'bind outgoing RPC connections to this address (per-node loopback aliases)')
    .option('--range-max-bytes <size>', 'ranges larger than this split (e.g. 64MiB)')
    .option('--dead-node-timeout <duration>', 'replicas of a node not live this long are replaced', argOf((v) => parseDurationMs('--dead-node-timeout', v)))
    .option('--gc-ttl <duration>', 'MVCC versions older than this are garbage collected (default 4h)', argOf((v) => parseDurationMs('--gc-ttl', v)))
    .option('--range-merge-delay <duration>', 'small neighbouring ranges merge once both were idle this long (default 10s)', argOf((v) => parseDurationMs('--range-merge-delay', v)))
    .addOption(new Option('--range-queues <on|off>', 'run the split, merge, replicate and replica-GC queues').choices(['on', 'off']).default('on'));
  if (withJoin) {
    cmd
      .option('--join <addrs>', 'comma-separated RPC addresses of nodes to join', argOf(parseJoinList))
      .option('--join-timeout <duration>', 'an uninitialised node exits if no --join address answers within this (0: wait forever)', argOf((v) => parseDurationMs('--join-timeout', v)), 0);
  }
  return cmd;
}

function makeLogger(flags: StartFlags, store: string): Logger {
  const levels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
  if (!levels.includes(flags.logLevel)) throw new ServerError('server.bad_flag', `invalid --log-level "${flags.logLevel}": expected one of ${levels.join(', ')}`);
  const file = flags.logFile ?? join(store, 'logs', 'cairn.log');
  if (file === '-') return pino({ name: 'cairn', level: flags.logLevel }, pino.destination(2));
  mkdirSync(dirname(file), { recursive: true });
  return pino({ name: 'cairn', level: flags.logLevel }, pino.destination({ dest: file, sync: true, append: true }));
}

async function runStart(flags: StartFlags, singleNode: boolean): Promise<void> {
  const store = resolve(flags.store);
  try {
    mkdirSync(store, { recursive: true });
  } catch (e) {
    throw new ServerError('server.bad_store', `cannot create store directory ${store}: ${(e as Error).message}`);
  }
  const log = makeLogger(flags, store);
  const config: NodeConfig = {
    storeDir: store,
    listenAddr: flags.listenAddr,
    sqlAddr: flags.sqlAddr,
    httpAddr: flags.httpAddr,
    join: flags.join ?? [],
    insecure: flags.insecure ?? false,
    ...(flags.certsDir === undefined ? {} : { certsDir: flags.certsDir }),
    maxOffsetMs: flags.maxOffset,
    cacheBytes: parseBytes('--cache', flags.cache, totalmem() || freemem()),
    singleNode,
    livenessTtlMs: flags.livenessTtl,
    joinTimeoutMs: flags.joinTimeout ?? 0,
    tickIntervalMs: flags.raftTick,
    leaseDurationMs: flags.leaseDuration,
    ...(flags.localAddress === undefined ? {} : { localAddress: flags.localAddress }),
    ...(flags.rangeMaxBytes === undefined ? {} : { rangeMaxBytes: parseBytes('--range-max-bytes', flags.rangeMaxBytes, 0) }),
    ...(flags.deadNodeTimeout === undefined ? {} : { deadNodeTimeoutMs: flags.deadNodeTimeout }),
    ...(flags.gcTtl === undefined ? {} : { gcTtlSeconds: flags.gcTtl / 1000 }),
    ...(flags.rangeMergeDelay === undefined ? {} : { rangeMergeDelayMs: flags.rangeMergeDelay }),
    rangeQueues: flags.rangeQueues !== 'off',
  };
  if (!singleNode && config.join.length === 0) {
    throw new ServerError('server.bad_flag', 'no --join addresses: give the RPC addresses of the cluster\'s nodes (use start-single-node for a one-node cluster)');
  }
  let node: Node | null = null;
  let exiting = false;
  const exit = async (code: number, line?: string): Promise<void> => {
    if (exiting) return;
    exiting = true;
    if (line !== undefined) process.stderr.write(`${line}\n`);
    await node?.stop().catch(() => undefined);
    process.exit(code);
  };
  // Handlers first: a signal during start-up still stops cleanly once the node exists.
  let signals = 0;
  let signalledEarly = false;
  const onSignal = (sig: string): void => {
    signals++;
    if (signals > 1) process.exit(1);
    log.info({ sig }, 'server: shutting down');
    if (node === null) signalledEarly = true;
    else void exit(0);
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  const { Node } = await import('../server/node.js');
  node = await Node.start(config, {
    logger: log,
    onFatal: (e) => {
      log.error({ code: e.code }, e.message);
      void exit(1, `ERROR: ${e.message}`);
    },
  });
  const n = node;
  if (signalledEarly) {
    await exit(0);
    return;
  }
  process.stdout.write(
    [
      `cairn node starting (version ${version()}, pid ${process.pid})`,
      `store:     ${store}`,
      `rpc:       ${formatHostPort(n.rpcAddr)}`,
      `sql:       postgresql://root@${formatHostPort(n.sqlAddr)}/defaultdb?sslmode=disable`,
      `http:      http://${formatHostPort(n.httpAddr)}`,
      n.state === 'serving' ? `nodeID:    ${n.rpc.nodeId}` : `status:    ${n.state}`,
      `clusterID: ${n.rpc.clusterId === '' ? '(waiting for init or join)' : n.rpc.clusterId}`,
      '',
    ].join('\n'),
  );
}

export function buildProgram(): Command {
  const program = new Command('cairn');
  program.description('Cairn: a distributed SQL database').showHelpAfterError(false).configureOutput({
    writeErr: (s) => process.stderr.write(s.split('\n').find((l) => l.trim() !== '') !== undefined ? `${s.split('\n').filter((l) => l.trim() !== '')[0]}\n` : s),
  });

  addStartOptions(program.command('start').description('start a node of a multi-node cluster'), true).action(async (flags: StartFlags) => runStart(flags, false));
  addStartOptions(program.command('start-single-node').description('start a one-node cluster (initialises itself)'), false).action(async (flags: StartFlags) => runStart(flags, true));

  program
    .command('init')
    .description('initialise a new cluster through one of its nodes (exactly once)')
    .option('--host <host:port>', 'RPC address of a node', argOf((v) => parseHostPort('--host', v)), { host: '127.0.0.1', port: 26357 })
    .addOption(new Option('--insecure', 'accepted for compatibility').default(false))
    .action(async (flags: { host: HostPort }) => {
      const res = await requestInit(flags.host);
      process.stdout.write(`Cluster successfully initialized: ${res.clusterId} (nodes ${res.nodeIds.map((id) => `n${id}`).join(', ')})\n`);
    });

  const node = program.command('node').description('inspect the cluster\'s nodes');
  node
    .command('status')
    .description('print the node table')
    .option('--host <host:port>', 'RPC address of a node', argOf((v) => parseHostPort('--host', v)), { host: '127.0.0.1', port: 26357 })
    .option('--ranges', 'add the ranges, leaseholders and underreplicated columns', false)
    .addOption(new Option('--format <format>', 'output format').choices(['table', 'json']).default('table'))
    .addOption(new Option('--insecure', 'accepted for compatibility').default(false))
    .action(async (flags: { host: HostPort; ranges: boolean; format: string }) => {
      const rows = await requestClusterStatus(flags.host);
      process.stdout.write(flags.format === 'json' ? `${JSON.stringify(rows, null, 2)}\n` : formatNodeStatus(rows, flags.ranges));
    });

  node
    .command('decommission')
    .description('move every replica and lease off a node (the replicate queues do the moving)')
    .argument('<id>', 'node id', argOf((v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new ServerError('server.bad_flag', `invalid node id "${v}"`);
      return n;
    }))
    .option('--host <host:port>', 'RPC address of a node', argOf((v) => parseHostPort('--host', v)), { host: '127.0.0.1', port: 26357 })
    .option('--wait <duration>', 'wait until the node holds no replicas (0: do not wait)', argOf((v) => parseDurationMs('--wait', v)), 300_000)
    .addOption(new Option('--insecure', 'accepted for compatibility').default(false))
    .action(async (id: number, flags: { host: HostPort; wait: number }) => {
      await requestDecommission(flags.host, id, true);
      process.stdout.write(`n${id} is decommissioning\n`);
      if (flags.wait <= 0) return;
      const deadline = Date.now() + flags.wait;
      let last = '';
      for (;;) {
        const row = (await requestClusterStatus(flags.host)).find((r) => r.id === id);
        const left = row?.ranges ?? null;
        const line = `replicas left on n${id}: ${left === null ? 'unknown (node not answering)' : left}`;
        if (line !== last) process.stdout.write(`${line}\n`);
        last = line;
        if (left === 0) {
          process.stdout.write(`n${id} decommissioned: it holds no replicas\n`);
          return;
        }
        if (Date.now() > deadline) throw new ServerError('server.decommission_timeout', `n${id} still holds replicas after ${flags.wait} ms; the replicate queues keep moving them`);
        await new Promise((r) => setTimeout(r, 1_000));
      }
    });
  node
    .command('recommission')
    .description('cancel a decommission')
    .argument('<id>', 'node id', argOf((v) => Number(v)))
    .option('--host <host:port>', 'RPC address of a node', argOf((v) => parseHostPort('--host', v)), { host: '127.0.0.1', port: 26357 })
    .addOption(new Option('--insecure', 'accepted for compatibility').default(false))
    .action(async (id: number, flags: { host: HostPort }) => {
      await requestDecommission(flags.host, id, false);
      process.stdout.write(`n${id} is no longer decommissioning\n`);
    });

  registerWorkloadCommands(program);
  registerSqlCommand(program);

  const debug = program.command('debug').description('debugging tools');
  debug
    .command('keys')
    .description('print every engine key of a (stopped) node\'s store')
    .requiredOption('--store <dir>', 'store directory')
    .option('--values', 'print each value in hex after its key', false)
    .action(async (flags: { store: string; values: boolean }) => {
      const { printEngineKeys } = await import('../server/debug-keys.js');
      await printEngineKeys(resolve(flags.store), flags.values, (s) => process.stdout.write(s));
    });

  program
    .command('version')
    .description('print the version')
    .action(() => {
      process.stdout.write(`cairn ${version()} (node ${process.version})\n`);
    });
  return program;
}

async function main(): Promise<void> {
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CairnError || e instanceof Error) die(e);
    die(e);
  }
}

void main();
