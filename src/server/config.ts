/**
 * The node's configuration as the command line gives it, and the parsers of
 * its flag values (addresses, durations, byte sizes). Every malformed value
 * is a ServerError with code `server.bad_flag` naming the flag, so the CLI
 * prints one line and exits non-zero.
 *
 * Ownership: src/server. Pure functions.
 */
import { CairnError } from '../util/errors.js';

/** Expected failures of the node process; `code` prefixed `server.`. */
export class ServerError extends CairnError {
  override name = 'ServerError';
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export function formatHostPort(a: HostPort): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

function badFlag(flag: string, value: string, why: string): ServerError {
  return new ServerError('server.bad_flag', `server: invalid ${flag} "${value}": ${why}`);
}

/** `HOST:PORT`, `:PORT` (host = defaultHost) or `[v6]:PORT`; port 0 = any free port. */
export function parseHostPort(flag: string, value: string, defaultHost = '127.0.0.1'): HostPort {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value.trim());
  if (m === null) throw badFlag(flag, value, 'expected HOST:PORT');
  const port = Number(m[3]);
  if (port > 65535) throw badFlag(flag, value, 'port above 65535');
  const host = m[1] ?? m[2] ?? '';
  return { host: host === '' ? defaultHost : host, port };
}

/** A comma-separated list of HOST:PORT (empty entries ignored). */
export function parseJoinList(value: string): HostPort[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => parseHostPort('--join', s));
}

/** `500ms`, `2s`, `1m`, or a bare number of milliseconds. */
export function parseDurationMs(flag: string, value: string): number {
  const m = /^(\d+(?:\.\d+)?)(us|µs|ms|s|m|h)?$/.exec(value.trim());
  if (m === null) throw badFlag(flag, value, 'expected a duration such as 500ms, 2s or 1m');
  const n = Number(m[1]);
  const unit = m[2] ?? 'ms';
  const factor = { us: 0.001, µs: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit] ?? 1;
  return n * factor;
}

/** `64MiB`, `1GB`, `512KiB`, a bare byte count, or a percentage of memory (`25%`, given totalBytes). */
export function parseBytes(flag: string, value: string, totalBytes: number): number {
  const v = value.trim();
  const pct = /^(\d+(?:\.\d+)?)%$/.exec(v);
  if (pct !== null) return Math.floor((Number(pct[1]) / 100) * totalBytes);
  const m = /^(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?$/i.exec(v);
  if (m === null) throw badFlag(flag, value, 'expected a size such as 256MiB or 25%');
  const unit = (m[2] ?? 'B').toUpperCase().replace(/B$/, '');
  const pow = { '': 0, K: 1, KI: 1, M: 2, MI: 2, G: 3, GI: 3, T: 4, TI: 4 }[unit];
  if (pow === undefined) throw badFlag(flag, value, 'unknown unit');
  const base = unit.endsWith('I') ? 1024 : 1000;
  return Math.floor(Number(m[1]) * base ** pow);
}

export interface NodeConfig {
  readonly storeDir: string;
  /** Where RPC listens and what other nodes dial (advertised as is). */
  readonly listenAddr: HostPort;
  readonly sqlAddr: HostPort;
  readonly httpAddr: HostPort;
  readonly join: readonly HostPort[];
  readonly insecure: boolean;
  readonly certsDir?: string;
  readonly maxOffsetMs: number;
  /** LevelDB block cache. */
  readonly cacheBytes: number;
  /** `cairn start-single-node`: bootstrap a one-node cluster if the store is empty. */
  readonly singleNode: boolean;
  /** A node liveness record lives this long after each heartbeat. */
  readonly livenessTtlMs: number;
  /** An uninitialised node exits after this long without reaching a --join address (0: waits forever). */
  readonly joinTimeoutMs: number;
  /** Raft tick interval (KvSettings.tickIntervalMs). */
  readonly tickIntervalMs: number;
  /** Lease duration (KvSettings.leaseDurationMicros / 1000). */
  readonly leaseDurationMs: number;
  /** Bind outgoing RPC connections to this local address (per-node loopback aliases for partitions). */
  readonly localAddress?: string;
  /** Ranges larger than this split (default 64 MiB). */
  readonly rangeMaxBytes?: number;
  /** A node not live for this long has its replicas replaced (default 5 minutes). */
  readonly deadNodeTimeoutMs?: number;
  /** MVCC versions older than this are garbage collected (gc-queue.ts; default 14400 s, CockroachDB's gc.ttlseconds). */
  readonly gcTtlSeconds?: number;
  /**
   * The merge queue merges two small neighbours only once neither has applied
   * a command for this long (default 10 s; CockroachDB's
   * kv.range_split.by_load_merge_delay plays this part). Tests shorten it.
   */
  readonly rangeMergeDelayMs?: number;
  /** Run the split/merge/replicate/GC queues (default true; false for tests that must pin replicas). */
  readonly rangeQueues?: boolean;
}

export const DEFAULT_NODE_CONFIG = {
  insecure: false,
  maxOffsetMs: 500,
  cacheBytes: 128 << 20,
  singleNode: false,
  livenessTtlMs: 4_500,
  joinTimeoutMs: 0,
  tickIntervalMs: 100,
  leaseDurationMs: 6_000,
} as const;
