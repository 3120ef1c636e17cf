// Reports: the one-line summary (issue 9's format; unknown is never a pass), the
// timeline page, and the tolerant reading of /_status/ranges.
import { describe, expect, it } from 'vitest';
import { composeResults, unknownResult } from '../../jepsen-style/checkers/index.js';
import { buildHistory } from '../../jepsen-style/history/history.js';
import { formatSummary, opCounts } from '../../jepsen-style/report/summary.js';
import { renderTimeline } from '../../jepsen-style/report/timeline.js';
import type { FaultWindow } from '../../jepsen-style/report/timeline.js';
import { leadershipChanges, parseRanges } from '../../jepsen-style/control/admin.js';
import { crashReason } from '../../jepsen-style/control/target.js';

const ms = 1e6;
const history = buildHistory<unknown>([
  { process: 0, type: 'invoke', f: 'write', value: 1, time: 0 },
  { process: 1, type: 'invoke', f: 'read', value: null, time: 1 * ms },
  { process: 0, type: 'ok', f: 'write', value: 1, time: 3 * ms },
  { process: 'nemesis', type: 'info', f: 'start', value: 'kill n1', time: 4 * ms },
  { process: 1, type: 'fail', f: 'read', value: null, time: 5 * ms, error: '08006' },
  { process: 2, type: 'invoke', f: 'write', value: 2, time: 6 * ms },
  { process: 2, type: 'info', f: 'write', value: 2, time: 9 * ms, error: 'timeout' },
  { process: 0, type: 'invoke', f: 'write', value: 3, time: 10 * ms },
]);

describe('summary', () => {
  it('counts invocations; an op without completion is info', () => {
    expect(opCounts(history)).toEqual({ ops: 4, ok: 1, fail: 1, info: 2 });
  });

  it('has the issue\'s shape and says INVALID / unknown plainly', () => {
    const ok = { valid: true, anomalyTypes: [], anomalies: {}, stats: {} } as const;
    const bad = { valid: false, anomalyTypes: ['G-single'], anomalies: { 'G-single': [1, 2] }, stats: { 'anomaly:G-single': 3 } } as const;
    const line = (results: Parameters<typeof composeResults>[0]) =>
      formatSummary({ workload: 'append', nemesis: 'partition+kill', seed: 7, timeSec: 300, counts: { ops: 41233, ok: 35870, fail: 3910, info: 1453 }, faults: 58, checks: composeResults(results) });
    expect(line({ 'elle-append': ok })).toBe('append partition+kill seed=7 300s | 41233 ops (35870 ok, 3910 fail, 1453 info) | 58 faults | elle-append: valid, 0 anomalies');
    expect(line({ 'elle-append': bad })).toMatch(/elle-append: INVALID, 3 anomalies \(G-single\)$/);
    const unknown = composeResults({ lin: unknownResult('budget') });
    expect(unknown.valid).toBe('unknown');
    expect(line({ lin: unknownResult('budget') })).toMatch(/lin: unknown, 1 anomaly \(checker-error\)$/);
    expect(line({})).toMatch(/no checker ran: unknown$/);
  });

  it('names node crashes (a node that exited on its own) before the verdict', () => {
    const ok = { valid: true, anomalyTypes: [], anomalies: {}, stats: {} } as const;
    const counts = { ops: 10, ok: 5, fail: 5, info: 0 };
    const line = (crashes: number) => formatSummary({ workload: 'g2', nemesis: 'kill', seed: 1, timeSec: 300, counts, faults: 14, checks: composeResults({ g2: ok }), crashes });
    expect(line(0)).toBe('g2 kill seed=1 300s | 10 ops (5 ok, 5 fail, 0 info) | 14 faults | g2: valid, 0 anomalies');
    expect(line(1)).toBe('g2 kill seed=1 300s | 10 ops (5 ok, 5 fail, 0 info) | 14 faults | 1 node crash | g2: valid, 0 anomalies');
    expect(line(3)).toMatch(/\| 3 node crashes \|/);
  });
});

describe('crashReason', () => {
  it('takes the last error line of a node output tail, not its stack frames or JSON log lines', () => {
    // The shape of a real one (g2 × kill, seed 301: n2 could not restart after a SIGKILL).
    const tail = [
      'clusterID: 81ea1201-46c6-4276-b26f-ba228f852fe8',
      'AssertionError: raft: applied(1005) is out of range [prevApplied(10), committed(1001)]',
      '    at assert (file:///x/dist/src/util/assert.js:13:15)',
      '    at RaftLog.appliedTo (file:///x/dist/raft/log.js:202:13)',
      '{"level":50,"msg":"Error: not this one"}',
      '',
    ].join('\n');
    expect(crashReason(tail)).toBe('AssertionError: raft: applied(1005) is out of range [prevApplied(10), committed(1001)]');
    expect(crashReason('starting\nsomething odd\n')).toBe('something odd');
    expect(crashReason('')).toBe('(no output)');
  });
});

describe('timeline', () => {
  it('draws one bar per client operation, latency dots for completed ones, and shaded fault windows', () => {
    const faults: FaultWindow[] = [{ description: 'kill n1 <all>', nodes: [1], startNs: 4 * ms, endNs: 8 * ms, evidence: ['SIGKILL n1 pid 42: gone'], clientErrors: 2, bit: true }];
    const html = renderTimeline(history, faults, { title: 'register kill', concurrency: 3 });
    const ops = html.slice(html.indexOf('id="ops"'), html.indexOf('id="latency"'));
    expect(ops.match(/<rect [^>]*fill="#3a3"/g)).toHaveLength(1); // the ok write
    expect(ops.match(/<rect [^>]*fill="#e58"/g)).toHaveLength(1); // the failed read
    expect(ops.match(/<rect [^>]*fill="#fa0"/g)).toHaveLength(2); // info + never completed
    expect(ops).toContain('<title>kill n1 &lt;all&gt;\nSIGKILL n1 pid 42: gone</title>');
    const lat = html.slice(html.indexOf('id="latency"'));
    expect(lat.match(/<circle /g)).toHaveLength(2);
    expect(html).toContain('<td>kill n1 &lt;all&gt;</td><td>yes</td><td>2</td>');
  });

  it('samples very long histories down to maxOps bars', () => {
    const ops = [];
    for (let i = 0; i < 1000; i++) ops.push({ process: i % 4, type: 'invoke' as const, f: 'r', value: null, time: 2 * i }, { process: i % 4, type: 'ok' as const, f: 'r', value: null, time: 2 * i + 1 });
    const html = renderTimeline(buildHistory(ops), [], { title: 't', concurrency: 4, maxOps: 100 });
    expect(html.match(/<rect /g)).toHaveLength(100);
    expect(html).toContain('every 10th operation drawn');
  });

  it('renders a history of 150 000 operations (sequential × none made 128 532; spreading their latencies overflowed the stack)', () => {
    const big: Parameters<typeof buildHistory<unknown>>[0][number][] = [];
    for (let i = 0; i < 150_000; i++) {
      big.push({ process: i % 10, type: 'invoke', f: 'read', value: null, time: 2 * i * ms });
      big.push({ process: i % 10, type: 'ok', f: 'read', value: null, time: (2 * i + 1) * ms });
    }
    const html = renderTimeline(buildHistory<unknown>(big), [], { title: 'big', concurrency: 10 });
    expect(html).toContain('<svg');
  });
});

describe('range status', () => {
  it('reads Cairn\'s per-node RangeStatus and merges leaders reported by their nodes', () => {
    const n2 = [
      { rangeId: 1, startKey: '', isLeader: true, isLeaseholder: true, leaseholderNodeId: 2 },
      { rangeId: 5, startKey: '/Table/52', isLeader: false, isLeaseholder: false, leaseholderNodeId: 3 },
    ];
    expect(parseRanges(n2, 2)).toEqual([
      { rangeId: 1, leaseholder: 2, leader: 2, startKey: '' },
      { rangeId: 5, leaseholder: 3, leader: undefined, startKey: '/Table/52' },
    ]);
    const before = parseRanges(n2, 2);
    const after = [{ rangeId: 1, leaseholder: 3, leader: 3, startKey: '' }, { rangeId: 5, leaseholder: 3, leader: undefined, startKey: '/Table/52' }, { rangeId: 6, leaseholder: 1, leader: 1, startKey: '/Table/53' }];
    expect(leadershipChanges(before, after)).toEqual(['r1 lease n2 → n3', 'r1 leader n2 → n3', 'r6 appeared (split)']);
    expect(leadershipChanges(after, [after[0]!, after[2]!])).toEqual(['r5 gone (merged, or no replica answered)']);
    // CockroachDB-style nesting: lease.replica.nodeId.
    expect(parseRanges({ ranges: [{ range_id: '7', lease: { replica: { nodeId: 4 } } }] })).toEqual([{ rangeId: 7, leaseholder: 4, leader: undefined, startKey: undefined }]);
  });
});
