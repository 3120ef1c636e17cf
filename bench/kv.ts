/**
 * `npm run bench:kv`: single-key replicated puts and point gets of 1 KB
 * values, 64 concurrent clients, on a 3-node local Cairn cluster (started
 * here; replication factor 3) and on a 3-member etcd 3.4 cluster in the same
 * run, printed side by side with the ratio.
 *
 *   node dist/bench/kv.js [--clients 64] [--duration 10s] [--keys 10000]
 *        [--value-size 1024] [--splits 0,6 | --splits 6] [--skip-etcd] [--out bench/results]
 *        [--stall-after 30s]
 *   node dist/bench/kv.js --in-process 1|3 [--op get|put] [--engine memory|level] [--runs 3] [--ops 10000]
 *        [--gateways 1] [--no-local-calls] [--splits N]
 *
 * --in-process N: the KV request path alone, without HTTP/JSON: an
 * in-process cluster of N nodes (test/support/test-cluster.ts, memory
 * engines, in-process RPC with its codec), `--clients` concurrent point
 * gets (or replicated 1 KB puts, `--op put`; `--engine level` for LevelDB
 * stores with real fsyncs) through one DistSender (`--gateways 3`: the clients
 * spread over the three nodes' DistSenders, as SQL gateways are); prints the process CPU
 * (client, servers and LevelDB's threads) per operation for each run and the
 * median, with the put path's counters (Ready rounds and synced writes per
 * put, fast apply passes). Profile it with node --cpu-prof.
 *
 * --no-local-calls (in-process): a node's calls to itself go over its
 * loopback socket instead of in process (src/rpc/local-call.ts), for
 * before/after comparisons in one build.
 *
 * --splits N (in-process, only when given): the bench keyspace split into N
 * ranges whose leases and Raft leaderships sit on node i % 3 (as the
 * 3-process layout spreads them), to compare one range with N on the KV
 * path alone.
 *
 * Both systems are driven the same way: one HTTP request per operation with
 * a JSON body, clients spread over the members/nodes (client i on i % 3).
 * Cairn: the node's admin KV endpoint `POST /_admin/kv` (one op; the node
 * routes it through its KV client — DistSender — to the leaseholder, a
 * non-transactional KV batch: a replicated put, a leaseholder read).
 * etcd: the v3 JSON gateway `/v3/kv/put` and `/v3/kv/range` (linearizable
 * reads, etcd's default). Puts run first over `--keys` keys (so gets hit
 * present keys), then gets. Writes bench/results/kv-<date>.md and .json.
 *
 * --splits N[,M] (default 0,6): before anything is written, Cairn's bench keyspace
 * is split into N ranges at every keys/N-th key (POST /_admin/split) and
 * their leases spread over the nodes (bench/support/scatter.ts), as
 * `cockroach workload init kv --splits` does — otherwise one node holds
 * every lease and serves every request while the other two idle. A list
 * (`--splits 0,6`) measures each configuration in turn on the same cluster
 * (puts and gets for the first, then the splits added, puts and gets again),
 * so their effect is measured in one run; each is compared with etcd. Both by
 * default: see bench/sql.ts (the split layout measured slower under load,
 * its leases not staying where they were spread).
 * The report prints CPU µs per operation of every process and, per Cairn
 * phase, the nodes' counters per operation (support/node-metrics.ts: RPCs,
 * NotLeaseHolder redirects, Raft proposals, synced writes, Raft and RPC
 * messages) — what load distorts least.
 *
 * --stall-after D (default 30 s): an operation outstanding that long makes
 * the run dump every node's state (support/stall-watch.ts: ranges, lock
 * tables, RPC connections, counters, node logs → <out>/kv-stall-<date>.*)
 * and fail, instead of hanging until an outer timeout kills it blind.
 * Every process started here is stopped in `finally`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { Agent, request } from 'node:http';
import { Command } from 'commander';
import { parseDuration } from '../src/workload/index.js';
import { closedLoop, type LoopResult } from './support/closed-loop.js';
import { startCairn, type CairnCluster } from './support/cluster.js';
import { startEtcd } from './support/etcd.js';
import { cpuMeter, cpuPerOp } from './support/proc-stats.js';
import { scatterSpan, splitAtKeys } from './support/scatter.js';
import { mdTable, ratio } from './support/report.js';
import { StallWatch, clusterDiagnostics } from './support/stall-watch.js';
import { meanBetween, perOp, scrapeCounters, scrapeHistogramTotals, type Counter, type Counters, type HistogramTotals } from './support/node-metrics.js';
import { TestCluster } from '../test/support/test-cluster.js';
import { RpcNodeDialer, KvClient } from '../src/kv/kv-client.js';
import { DistSender } from '../src/kv/dist-sender.js';
import { adminSplit } from '../src/kv/split.js';

interface Opts {
  clients: number;
  duration: number;
  keys: number;
  valueSize: number;
  /** Ranges of the bench keyspace, one Cairn measurement each (ascending). */
  splits: number[];
  skipEtcd?: boolean;
  out: string;
  inProcess?: number;
  op: 'get' | 'put';
  engine: 'memory' | 'level';
  runs: number;
  ops: number;
  /** in-process: a node's calls to itself served in process (default) or over its loopback socket (--no-local-calls). */
  localCalls: boolean;
  /** in-process: clients spread over the DistSenders of this many nodes (client i on node i % gateways). */
  gateways: number;
  /** ms an operation may be outstanding before the run is declared stalled (diagnostics dumped, run failed). */
  stallAfter: number;
}

type Measured = LoopResult & { readonly serverCpuSec: number; readonly rssMiB: number[]; readonly cpuPerOp: string; readonly counts?: string };

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** The stall guard of the system being measured (support/stall-watch.ts); null: none. */
let watch: StallWatch | null = null;

/** POST a JSON body over a kept-alive connection; resolves with the parsed answer (rejects on a non-200, or when the watch declares a stall). */
function post(url: string, body: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (token !== 0) w?.end(token);
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) reject(Object.assign(new Error(`bench: ${url}: ${res.statusCode} ${text.slice(0, 200)}`), { code: `http.${res.statusCode}` }));
        else resolve(JSON.parse(text));
      });
    });
    const w = watch;
    const token = w === null ? 0 : w.begin(`POST ${url} ${body.slice(0, 120)}`, (e) => req.destroy(e));
    req.on('error', (e) => {
      if (token !== 0) w?.end(token);
      reject(e);
    });
    req.end(body);
  });
}

interface KvDriver {
  put(client: number, key: number): Promise<unknown>;
  get(client: number, key: number): Promise<unknown>;
}

/** Cairn's bench key of index k (hex): 0x90 0xfe (table-data keyspace, above every SQL table id in use) and k in 4 bytes. */
function cairnKey(k: number): string {
  return `90fe${k.toString(16).padStart(8, '0')}`;
}

function cairnDriver(httpPorts: readonly number[], value: Buffer): KvDriver {
  const valueHex = value.toString('hex');
  const key = cairnKey;
  const url = (c: number): string => `http://127.0.0.1:${httpPorts[c % httpPorts.length] as number}/_admin/kv`;
  const check = (r: unknown): unknown => {
    const res = (r as { results: { ok: boolean; code?: string; message?: string }[] }).results[0];
    if (res?.ok !== true) throw Object.assign(new Error(`cairn: ${res?.message ?? 'no result'}`), { code: res?.code ?? 'error' });
    return res;
  };
  return {
    put: async (c, k) => check(await post(url(c), `{"ops":[{"op":"put","key":"${key(k)}","value":"${valueHex}"}]}`)),
    get: async (c, k) => {
      const r = check(await post(url(c), `{"ops":[{"op":"get","key":"${key(k)}"}]}`)) as { value?: string | null };
      if (typeof r.value !== 'string') throw Object.assign(new Error('cairn: get found no value'), { code: 'not_found' });
      return r;
    },
  };
}

function etcdDriver(urls: readonly string[], value: Buffer): KvDriver {
  const value64 = value.toString('base64');
  const key = (k: number): string => Buffer.from(`bench/${k}`).toString('base64');
  return {
    put: (c, k) => post(`${urls[c % urls.length] as string}/v3/kv/put`, `{"key":"${key(k)}","value":"${value64}"}`),
    get: async (c, k) => {
      const r = (await post(`${urls[c % urls.length] as string}/v3/kv/range`, `{"key":"${key(k)}"}`)) as { kvs?: unknown[] };
      if (r.kvs === undefined || r.kvs.length !== 1) throw Object.assign(new Error('etcd: get found no value'), { code: 'not_found' });
      return r;
    },
  };
}

/**
 * Splits the bench keyspace into `n` ranges at key 0 and every keys/n-th key (those
 * already split stay) and spreads their leases; returns how they ended up.
 */
async function splitKeyspace(c: CairnCluster, keys: number, n: number): Promise<string> {
  await splitAtKeys(c, Array.from({ length: n }, (_, i) => cairnKey(Math.floor((i * keys) / n))));
  const s = await scatterSpan(c, cairnKey(0), cairnKey(keys), { stableRounds: 4, intervalMs: 500, timeoutMs: 30_000 });
  return `${s.ranges} ranges, leases by node ${JSON.stringify(s.leasesByNode)}${s.balanced ? '' : ' (not balanced in time)'}`;
}

/** The node counters printed per operation of a Cairn phase (support/node-metrics.ts). */
const PHASE_COUNTERS: readonly Counter[] = ['distsender_rpcs', 'distsender_not_lease_holder', 'distsender_retries', 'raft_proposals', 'raft_reproposals', 'raft_syncs', 'raft_messages_sent', 'raft_message_batches_sent', 'raft_appends_during_sync', 'raft_ready_rounds', 'raft_leader_changes', 'rpc_messages_sent', 'rpc_frames_sent'];

function countsLine(before: Counters, after: Counters, ops: number): string {
  const p = perOp(before, after, ops);
  return PHASE_COUNTERS.map((k) => `${k} ${p[k]}`).join(', ');
}

async function measure(name: string, d: KvDriver, pids: () => number[], rssMiB: () => number[], o: Opts, perProcess?: (i: number) => string, counters?: () => Promise<Counters>, syncs?: () => Promise<HistogramTotals>): Promise<{ put: Measured; get: Measured }> {
  // Every key written once so that the gets hit present keys.
  let next = 0;
  await Promise.all(
    Array.from({ length: o.clients }, async (_, c) => {
      for (let k = next++; k < o.keys; k = next++) await d.put(c, k);
    }),
  );
  const phase = async (op: 'put' | 'get'): Promise<Measured> => {
    const c0 = await counters?.();
    const s0 = await syncs?.();
    const m = cpuMeter(pids);
    const r = await closedLoop(o.clients, o.duration, (c) => d[op](c, Math.floor(Math.random() * o.keys)));
    const cpu = m.stop();
    const c1 = await counters?.();
    // The nodes' synced Raft-log writes over the phase (all nodes): their mean latency (cairn_storage_sync_latency_seconds).
    const s1 = await syncs?.();
    const syncMeanMs = s0 !== undefined && s1 !== undefined ? meanBetween(s0, s1).meanMs : undefined;
    const counts = c0 !== undefined && c1 !== undefined ? countsLine(c0, c1, r.ops) : undefined;
    const out = { ...r, serverCpuSec: cpu.serverCpuSec, rssMiB: rssMiB(), cpuPerOp: cpuPerOp(cpu, r.ops, perProcess), ...(counts !== undefined ? { counts } : {}) };
    process.stdout.write(`${name} ${op}: ${r.opsPerSec} ops/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  errors ${r.errors}  server CPU ${out.serverCpuSec} s; CPU ${out.cpuPerOp}\n`);
    if (counts !== undefined) process.stdout.write(`  per op: ${counts}${syncMeanMs !== undefined ? `; synced write mean ${syncMeanMs} ms` : ''}\n`);
    return out;
  };
  return { put: await phase('put'), get: await phase('get') };
}

/**
 * --in-process --splits N: splits the bench keyspace at `splitKeys` (the
 * first isolates it from the keys below) and moves the lease — and with it,
 * through maintainLease, the Raft leadership — of the i-th range to node
 * i % nodes; waits (30 s at most) until every range's leaseholder is its
 * Raft leader on the target node. Returns how the layout ended up.
 */
async function splitInProcess(c: TestCluster, ds: DistSender, splitKeys: readonly Buffer[]): Promise<string> {
  const rangeIds: number[] = [];
  for (const k of splitKeys) {
    const r = await adminSplit(ds, k);
    if (r === null) throw new Error(`bench: split at ${k.toString('hex')} found a boundary there already`);
    rangeIds.push(r.right.rangeId);
  }
  const target = (j: number): number => j % c.size;
  // An idle range's lease lapses (the leader takes it again at the next request): its leader counts.
  const holder = (id: number): number => (c.leaseholder(id) >= 0 ? c.leaseholder(id) : c.leader(id));
  const placed = (): boolean => rangeIds.every((id, j) => holder(id) === target(j) && c.leader(id) === target(j));
  const deadline = performance.now() + 30_000;
  while (!placed() && performance.now() < deadline) {
    await Promise.all(
      rangeIds.map(async (id, j) => {
        const lh = c.leaseholder(id);
        if (lh < 0 || (lh === target(j) && c.leader(id) === lh)) return;
        const to = c.replicas(id).find(({ i }) => i === target(j));
        if (to !== undefined) await c.store(lh).transferLease(id, to.r.replicaId).catch(() => undefined);
      }),
    );
    await new Promise((r) => setTimeout(r, 200));
  }
  const byNode = rangeIds.map((id) => `r${id}→n${holder(id) + 1}${c.leader(id) === holder(id) ? '' : ` (leader n${c.leader(id) + 1})`}`);
  return `${rangeIds.length} ranges ${byNode.join(' ')}${placed() ? '' : ' (not placed in time)'}`;
}

/** --in-process: CPU per point get (or put) on the KV request path (see the header). */
async function inProcessOps(o: Opts, nodes: number): Promise<void> {
  const c = await TestCluster.start({ nodes, engine: o.engine, localCalls: o.localCalls });
  try {
    c.startTicker();
    // One KV client per gateway node; client i sends through gateway i % gateways.
    const gateways = Math.max(1, Math.min(nodes, o.gateways));
    const dss = Array.from({ length: gateways }, (_, g) => {
      const rpc = c.node(g).rpc;
      if (rpc === null) throw new Error(`bench: node ${g + 1} has no RPC context`);
      return new DistSender(new RpcNodeDialer(rpc, 10_000), { nodes: () => Array.from({ length: nodes }, (_, i) => i + 1), now: () => c.node(g).clock.now() });
    });
    const kvs = dss.map((ds) => new KvClient(ds));
    const kv = kvs[0] as KvClient;
    const value = Buffer.alloc(o.valueSize, 0x61);
    const key = (k: number): Buffer => Buffer.from(`\x90bench${String(k).padStart(8, '0')}`, 'latin1');
    const ranges = o.splits[o.splits.length - 1] ?? 0;
    const layout = ranges > 1 ? await splitInProcess(c, dss[0] as DistSender, Array.from({ length: ranges }, (_, i) => key(Math.floor((i * o.keys) / ranges)))) : 'one range';
    for (let b = 0; b < o.keys; b += 200) await kv.batch(Array.from({ length: Math.min(200, o.keys - b) }, (_, j) => ({ kind: 'put' as const, key: key(b + j), value })));
    const counters = (): { rounds: number; syncs: number; fast: number; proposals: number; msgs: number[] } => {
      const m = { rounds: 0, syncs: 0, fast: 0, proposals: 0, msgs: [] as number[] };
      for (let i = 0; i < nodes; i++) {
        const s = c.store(i).metrics;
        m.rounds += s.readyRounds;
        m.proposals += s.proposals;
        m.syncs += s.syncs;
        m.fast += s.fastApplies;
        m.msgs.push(s.raftMessagesSent);
      }
      return m;
    };
    const run = async (total: number): Promise<number> => {
      // Each gateway serves an equal share of the operations (a shared counter would hand most of them to the
      // gateway whose calls finish soonest — the leaseholder's, with local calls — and skew the mix).
      const next = Array.from({ length: gateways }, (_, g) => g);
      const m0 = counters();
      const t0 = process.cpuUsage();
      const w0 = performance.now();
      await Promise.all(
        Array.from({ length: o.clients }, async (_, ci) => {
          const g = ci % gateways;
          const kv = kvs[g] as KvClient;
          while ((next[g] as number) < total) {
            const i = next[g] as number;
            next[g] = i + gateways;
            if (o.op === 'put') await kv.put(key(i % o.keys), value);
            else if ((await kv.get(key(i % o.keys))) === null) throw new Error('bench: get found no value');
          }
        }),
      );
      const d = process.cpuUsage(t0);
      const sec = (performance.now() - w0) / 1000;
      const m1 = counters();
      if (o.op === 'put') {
        const per = (x: number): string => (x / total).toFixed(2);
        // Raft messages each node sent per put (the leaseholder's node marked *: it leads the range's Raft group).
        const lh = c.leaseholder();
        const msgs = m1.msgs.map((x, i) => `n${i + 1}${i === lh ? '*' : ''} ${per(x - (m0.msgs[i] as number))}`).join(', ');
        process.stdout.write(
          `  ${Math.round(total / sec)} puts/s; per put (all nodes): ${per(m1.rounds - m0.rounds)} Ready rounds, ${per(m1.syncs - m0.syncs)} synced writes, ${per(m1.proposals - m0.proposals)} Raft proposals; Raft messages sent ${msgs}; fast apply passes ${Math.round((m1.fast - m0.fast) / sec)}/s\n`,
        );
      }
      return (d.user + d.system) / total;
    };
    await run(Math.max(o.ops, 10_000)); // warm-up: caches, leases, JIT (3,000 left the first measured run ~1.5–2× the others)
    // Calls the nodes served to themselves in process (local-call.ts): those of the gateway that leases the range.
    const localCalls = (): number => Array.from({ length: nodes }, (_, i) => c.node(i).rpc?.local.calls ?? 0).reduce((a, b) => a + b, 0);
    const l0 = localCalls();
    const xs: number[] = [];
    for (let i = 0; i < o.runs; i++) xs.push(await run(o.ops));
    const sorted = [...xs].sort((a, b) => a - b);
    process.stdout.write(
      `in-process ${nodes} node(s), ${o.engine} engines, ${o.clients} clients through ${gateways} gateway node(s), ${ranges > 1 ? layout : `one range, leaseholder n${c.leaseholder() + 1}`}, ${localCalls() - l0} calls served in process; ` +
        `${o.ops} ${o.op}s/run: CPU per ${o.op} (client + servers) ${xs.map((x) => x.toFixed(1)).join(', ')} µs; median ${(sorted[sorted.length >> 1] as number).toFixed(1)} µs\n`,
    );
  } finally {
    await c.close();
  }
}

async function main(): Promise<void> {
  const cmd = new Command('bench-kv')
    .option('--clients <n>', 'concurrent clients', (v) => Number(v), 64)
    .option('--duration <d>', 'per phase', parseDuration, 10_000)
    .option('--keys <n>', 'key space', (v) => Number(v), 10_000)
    .option('--value-size <n>', 'value bytes', (v) => Number(v), 1024)
    .option('--splits <n[,n…]>', 'Cairn ranges of the bench keyspace, leases spread (a list: each measured in turn, each compared with etcd)', (v) => v.split(',').map(Number).sort((a, b) => a - b), [0, 6])
    .option('--skip-etcd', 'measure only Cairn')
    .option('--out <dir>', 'results directory', 'bench/results')
    .option('--in-process <nodes>', 'measure the KV request path in one process (1 or 3 nodes)', (v) => Number(v))
    .option('--op <op>', 'in-process: get or put', 'get')
    .option('--engine <engine>', 'in-process: memory or level stores', 'memory')
    .option('--runs <n>', 'in-process: measured runs (median printed)', (v) => Number(v), 3)
    .option('--ops <n>', 'in-process: operations per run', (v) => Number(v), 10_000)
    .option('--no-local-calls', "in-process: a node's calls to itself over its loopback socket, as a peer's")
    .option('--stall-after <d>', 'an operation outstanding this long: dump the cluster state and fail the run', parseDuration, 30_000)
    .option('--gateways <n>', 'in-process: spread the clients over the KV clients of this many nodes', (v) => Number(v), 1)
    .parse();
  const o = cmd.opts<Opts>();
  if (o.inProcess !== undefined) {
    if (o.op !== 'get' && o.op !== 'put') throw new Error(`bench: --op must be get or put, not ${String(o.op)}`);
    if (o.engine !== 'memory' && o.engine !== 'level') throw new Error(`bench: --engine must be memory or level, not ${String(o.engine)}`);
    // --splits applies in process only when given (one value: the ranges of the bench keyspace); by default one range.
    const splits = cmd.getOptionValueSource('splits') === 'default' ? [0] : o.splits;
    await inProcessOps({ ...o, splits, keys: Math.min(o.keys, 2000) }, o.inProcess);
    return;
  }
  const value = Buffer.alloc(o.valueSize, 0x61);
  const results: Record<string, { put: Measured; get: Measured }> = {};
  const layout: Record<string, string> = {};
  const configName = (n: number): string => (o.splits.length === 1 ? 'cairn' : `cairn, ${Math.max(1, n)} range${n > 1 ? 's' : ''}`);
  let etcdVersion = '';
  const cairn = await startCairn(3);
  mkdirSync(o.out, { recursive: true });
  // An operation outstanding for --stall-after: dump every node's state while it is stuck, then fail the run.
  watch = new StallWatch(o.stallAfter, async (oldest, count) => {
    const name = `kv-stall-${new Date().toISOString().replace(/[:]/g, '-').replace(/\.\d+Z$/, 'Z')}`;
    const file = await clusterDiagnostics(cairn, o.out, name, `bench:kv stalled: ${count} operation(s) outstanding, the oldest for ${oldest.ageMs} ms: ${oldest.what}`);
    process.stderr.write(`bench: stalled (${count} outstanding, oldest ${oldest.ageMs} ms: ${oldest.what}); cluster state in ${file}\n`);
  });
  try {
    process.stdout.write(`\n== cairn: 3 nodes, ${o.clients} clients, ${o.valueSize} B values\n`);
    for (const n of o.splits) {
      const cfg = configName(n);
      layout[cfg] = n > 1 ? await splitKeyspace(cairn, o.keys, n) : 'one range';
      process.stdout.write(`${cfg}: ${layout[cfg]}\n`);
      results[cfg] = await measure(cfg, cairnDriver(cairn.nodes.map((n) => n.httpPort), value), cairn.pids, cairn.rssMiB, o, (i) => `n${i + 1}`, () => scrapeCounters(cairn), () => scrapeHistogramTotals(cairn, 'cairn_storage_sync_latency_seconds'));
    }
  } finally {
    watch.stop();
    watch = null;
    await cairn.stop();
  }
  if (o.skipEtcd !== true) {
    const etcd = await startEtcd(3);
    etcdVersion = etcd.version;
    try {
      process.stdout.write(`\n== ${etcd.version}: 3 members\n`);
      results['etcd'] = await measure('etcd', etcdDriver(etcd.urls, value), etcd.pids, etcd.rssMiB, o);
    } finally {
      await etcd.stop();
    }
  }
  agent.destroy();
  const row = (op: 'put' | 'get', cfg: string): (string | number)[] => {
    const c = results[cfg]?.[op];
    const e = results['etcd']?.[op];
    return [cfg === 'cairn' ? op : `${op} (${cfg.slice('cairn, '.length)})`, c?.opsPerSec ?? '–', c?.p50Ms ?? '–', c?.p99Ms ?? '–', c?.serverCpuSec ?? '–', e?.opsPerSec ?? '–', e?.p50Ms ?? '–', e?.p99Ms ?? '–', e?.serverCpuSec ?? '–', ratio(c?.opsPerSec, e?.opsPerSec)];
  };
  const cfgs = o.splits.map(configName);
  const table = mdTable(
    ['op', 'cairn ops/s', 'p50 ms', 'p99 ms', 'server CPU s', 'etcd ops/s', 'p50 ms', 'p99 ms', 'server CPU s', 'ratio'],
    (['put', 'get'] as const).flatMap((op) => cfgs.map((cfg) => row(op, cfg))),
  );
  const cpu = Object.entries(results)
    .flatMap(([cfg, r]) => [`- ${cfg} put: ${r.put.cpuPerOp}`, `- ${cfg} get: ${r.get.cpuPerOp}`, ...(r.put.counts !== undefined ? [`  - counts per put: ${r.put.counts}`, `  - counts per get: ${r.get.counts ?? ''}`] : [])])
    .join('\n');
  const date = new Date().toISOString().replace(/[:]/g, '-').replace(/\.\d+Z$/, 'Z');
  const meta = { date, clients: o.clients, durationMs: o.duration, keys: o.keys, valueSize: o.valueSize, splits: o.splits, node: process.version, load: loadavg().map((x) => x.toFixed(2)).join(' '), cairn: '3 nodes, replication factor 3, POST /_admin/kv', layout, etcd: `${etcdVersion}, 3 members, v3 JSON gateway, linearizable reads` };
  mkdirSync(o.out, { recursive: true });
  const base = join(o.out, `kv-${date}`);
  writeFileSync(`${base}.json`, JSON.stringify({ meta, results }, null, 2) + '\n');
  writeFileSync(`${base}.md`, `# bench:kv ${date}\n\n\`\`\`\n${JSON.stringify(meta, null, 2)}\n\`\`\`\n\n${table}\nCPU per operation by process (user + system, /proc):\n\n${cpu}\n`);
  process.stdout.write(`\n${JSON.stringify(layout)}\nload ${meta.load}\n${table}\n${cpu}\nwrote ${base}.json and .md\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
