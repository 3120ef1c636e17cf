/**
 * Helpers of the multi-process range tests (issue 4 must-shows 4 and 5 on
 * real processes): keys of the test span, a write load that remembers every
 * acknowledged write, the cluster's range census from /_status/ranges, and a
 * check that no node process died or asserted.
 *
 * Keys: 0x90 'k' + six digits (+ a suffix for load writes) — above meta2,
 * valid split keys, in the test span [0x90, 0x91).
 */
import { afterEach, expect } from 'vitest';
import type { RangeStatus } from '../../src/server/node.js';
import { decodeRangeDescriptor } from '../../src/kv/api-codec.js';
import { META2_MAX, META2_PREFIX } from '../../storage/keys.js';
import { ProcessCluster, type AdminOpResult, type ProcessClusterOptions } from '../support/process-cluster.js';

export const SPAN_START = '90';
export const SPAN_END = '91';

/** The hex of key k<n> (0x90 'k' + six digits). */
export function keyHex(n: number, suffix = ''): string {
  return Buffer.from(`\x90k${String(n).padStart(6, '0')}${suffix}`, 'latin1').toString('hex');
}

/** Polls `f` until it returns a value (not undefined), bounded; errors count as "not yet". */
export async function waitFor<T>(what: string, timeoutMs: number, f: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr = '';
  while (Date.now() < deadline) {
    try {
      const v = await f();
      if (v !== undefined) return v;
    } catch (e) {
      lastErr = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr === '' ? '' : ` (last error: ${lastErr})`}`);
}

/**
 * Writes `puts` through node `via` and makes sure every one holds: a put
 * answered ambiguous (a lease or leadership moving with its command in
 * flight: replica.ts re-proposal after a lease change, a snapshot covering
 * it) is settled from the data — read back, and written again only if its
 * value is not there (the puts are idempotent). Any other failure fails the
 * test, as an ambiguous answer after `rounds` rounds does.
 */
export async function putAll(c: ProcessCluster, via: number, puts: readonly { op: 'put'; key: string; value: string }[], rounds = 5): Promise<{ ambiguous: number }> {
  let todo = puts;
  let ambiguous = 0;
  for (let round = 0; todo.length > 0; round++) {
    const res = await c.kv(via, todo);
    const unsettled = todo.filter((_, i) => {
      const r = res[i] as AdminOpResult;
      if (!r.ok) expect(r.ambiguous, `${r.code ?? ''} ${r.message ?? ''}`).toBe(true);
      return !r.ok;
    });
    ambiguous += unsettled.length;
    if (unsettled.length > 0) expect(round, `puts still ambiguous after ${rounds} rounds`).toBeLessThan(rounds);
    const read = unsettled.length === 0 ? [] : await c.kv(via, unsettled.map((p) => ({ op: 'get' as const, key: p.key })));
    todo = unsettled.filter((p, i) => {
      const r = read[i] as AdminOpResult;
      expect(r.ok, r.message).toBe(true);
      return r.value !== p.value;
    });
  }
  return { ambiguous };
}

/** Every range the running nodes report (a node's view: its own replicas), the newest view of each. */
export async function rangeCensus(c: ProcessCluster): Promise<Map<number, { status: RangeStatus; holders: number[] }>> {
  const out = new Map<number, { status: RangeStatus; holders: number[] }>();
  for (const n of c.nodes) {
    if (!n.running) continue;
    const ranges = await c.json<RangeStatus[]>(n.index, '/_status/ranges').catch(() => [] as RangeStatus[]);
    for (const r of ranges) {
      const cur = out.get(r.rangeId);
      if (cur === undefined) out.set(r.rangeId, { status: r, holders: [n.index] });
      else {
        cur.holders.push(n.index);
        if (r.isLeaseholder || r.applied > cur.status.applied) cur.status = r;
      }
    }
  }
  return out;
}

/** Waits until every range has exactly three voters, all on `on` (node ids); names the ranges not there yet on a timeout. */
export async function waitFullyReplicatedOn(c: ProcessCluster, what: string, on: readonly number[], minRanges: number, timeoutMs: number): Promise<void> {
  let pending = '';
  await waitFor(what, timeoutMs, async () => {
    const census = await rangeCensus(c);
    const bad = [...census.values()].filter((r) => !(r.status.replicas.length === 3 && r.status.replicas.every((x) => x.type === 0 && on.includes(x.nodeId))));
    pending = bad.map((r) => `r${r.status.rangeId}:[${r.status.replicas.map((x) => `n${x.nodeId}/${x.type}`).join(',')}] lh n${r.status.leaseholderNodeId ?? '-'}`).join(' ');
    return census.size >= minRanges && bad.length === 0 ? true : undefined;
  }).catch((e: Error) => {
    throw new Error(`${e.message}; not yet: ${pending}`);
  });
}

/**
 * A write load through every running node's /_admin/kv: `workers` loops,
 * each writing batches of `batch` puts of unique keys spread over the test
 * span (k<0…spread-1>/w<worker>-<seq>). Acknowledged writes are remembered;
 * a failed or ambiguous batch is counted and never asserted on.
 */
export class WriteLoad {
  readonly acked = new Map<string, string>();
  failures = 0;
  lastFailure = '';
  private stopped = false;
  private readonly loops: Promise<void>[] = [];

  constructor(
    private readonly c: ProcessCluster,
    private readonly opts: { workers: number; batch: number; spread: number; pauseMs?: number },
  ) {}

  start(): this {
    for (let w = 0; w < this.opts.workers; w++) this.loops.push(this.run(w));
    return this;
  }

  private async run(w: number): Promise<void> {
    for (let seq = 0, turn = w; !this.stopped; turn++) {
      const nodes = this.c.nodes.filter((n) => n.running).map((n) => n.index);
      const via = nodes[turn % nodes.length] as number;
      const ops = Array.from({ length: this.opts.batch }, () => {
        const k = keyHex((seq * 7919 + w * 104_729) % this.opts.spread, `/w${w}-${seq}`);
        const v = Buffer.from(`v${w}-${seq++}`).toString('hex');
        return { op: 'put' as const, key: k, value: v };
      });
      try {
        const res = await this.c.kv(via, ops);
        res.forEach((r, i) => {
          const op = ops[i] as (typeof ops)[number];
          if (r.ok) this.acked.set(op.key, op.value);
          else {
            this.failures++;
            this.lastFailure = `${r.code ?? ''}: ${r.message ?? ''}`;
          }
        });
      } catch (e) {
        this.failures += ops.length; // the node went away mid-request (a kill): outcome unknown
        this.lastFailure = (e as Error).message;
      }
      if (this.opts.pauseMs !== undefined) await new Promise((r) => setTimeout(r, this.opts.pauseMs));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }
}

/** Every acknowledged write is read back, through node i, by one scan of the test span. */
export async function expectAckedReadable(c: ProcessCluster, i: number, acked: ReadonlyMap<string, string>): Promise<void> {
  const [res] = await c.kv(i, [{ op: 'scan', key: SPAN_START, endKey: SPAN_END }]);
  expect(res?.ok, res?.message).toBe(true);
  const rows = res?.rows ?? [];
  const keys = rows.map(([k]) => k);
  expect([...keys].sort(), 'the scan is ordered across range boundaries').toEqual(keys);
  const got = new Map(rows);
  const missing = [...acked].filter(([k, v]) => got.get(k) !== v);
  expect(missing.length, `acknowledged writes missing through n${i + 1}: ${missing.slice(0, 5).map(([k]) => k).join(', ')}`).toBe(0);
}

/**
 * meta2 holds exactly the live ranges (issue 4: a record of a range merged
 * away survived test/kv-ranges-multiproc/split-merge): one record per range
 * the nodes report, with its id and span, nothing else. Waits first (bounded)
 * until the census is settled — every range reported by each of its replicas
 * and the spans tiling the keyspace (a follower still applying a merge shows
 * the absorbed range) — then reads meta2 once, through node `via`.
 */
export async function expectMeta2MatchesRanges(c: ProcessCluster, via = 0): Promise<void> {
  const show = (id: number, start: string, end: string): string => `r${id} [${start}, ${end})`;
  const live = await waitFor('a settled range census', 60_000, async () => {
    const ranges = [...(await rangeCensus(c)).values()].sort((a, b) => (a.status.startKey < b.status.startKey ? -1 : 1));
    const settled = ranges.every((r, i) => r.holders.length === r.status.replicas.length && (i === 0 ? r.status.startKey === '' : r.status.startKey === ranges[i - 1]?.status.endKey));
    return settled ? ranges.map((r) => show(r.status.rangeId, r.status.startKey, r.status.endKey)) : undefined;
  });
  const [res] = await c.kv(via, [{ op: 'scan', key: META2_PREFIX.toString('hex'), endKey: META2_MAX.toString('hex') }]);
  expect(res?.ok, res?.message).toBe(true);
  const meta = (res?.rows ?? []).map(([, v]) => decodeRangeDescriptor(Buffer.from(v, 'hex'))).map((d) => show(d.rangeId, d.startKey.toString('hex'), d.endKey.toString('hex')));
  expect(meta, 'meta2 records (left) vs the ranges the nodes hold').toEqual(live);
}

/** No node process exited on its own or logged an assertion failure. */
export function expectNoCrash(c: ProcessCluster, killed: readonly number[] = []): void {
  for (const n of c.nodes) {
    const logs = c.logs(n.index);
    const crash = /AssertionError|Ready loop failed|out of range \[lastIndex|before its replica froze/.exec(logs);
    expect(crash?.[0], `n${n.index + 1}: ${crash === null ? '' : logs.slice(Math.max(0, crash.index - 500), crash.index + 1500)}`).toBeUndefined();
    if (!killed.includes(n.index)) expect(n.running, `n${n.index + 1} exited (${n.exitCode}): ${logs.slice(-2000)}`).toBe(true);
  }
}

/**
 * Per test file: clusters started and loads begun through the returned
 * functions are stopped after each test (the load first, so no writer
 * spins against a closed cluster), whether it passed or not.
 */
export function autoClose(): { cluster: (opts: ProcessClusterOptions) => Promise<ProcessCluster>; load: (c: ProcessCluster, opts: ConstructorParameters<typeof WriteLoad>[1]) => WriteLoad } {
  const clusters: ProcessCluster[] = [];
  const loads: WriteLoad[] = [];
  afterEach(async () => {
    for (const l of loads.splice(0)) await l.stop();
    for (const c of clusters.splice(0)) await c.close();
  });
  return {
    cluster: async (opts) => {
      const c = await ProcessCluster.start(opts);
      clusters.push(c);
      return c;
    },
    load: (c, opts) => {
      const l = new WriteLoad(c, opts).start();
      loads.push(l);
      return l;
    },
  };
}
