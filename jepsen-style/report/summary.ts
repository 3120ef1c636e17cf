/**
 * The one-line summary that ends every run, e.g.
 *   append partition+kill seed=7 300s | 41233 ops (35870 ok, 3910 fail, 1453 info) | 58 faults | elle-append: valid, 0 anomalies
 * `ops` counts client operations (invocations); an invocation without a completion counts
 * as info.
 */
import type { ComposedResult } from '../checkers/index.js';
import type { History } from '../history/history.js';
import { pairHistory } from '../history/history.js';

export interface OpCounts {
  readonly ops: number;
  readonly ok: number;
  readonly fail: number;
  readonly info: number;
}

export function opCounts(history: History): OpCounts {
  let ok = 0;
  let fail = 0;
  let info = 0;
  for (const p of pairHistory(history)) {
    if (p.type === 'ok') ok++;
    else if (p.type === 'fail') fail++;
    else info++;
  }
  return { ops: ok + fail + info, ok, fail, info };
}

function anomalyCount(r: ComposedResult['results'][string]): number {
  let n = 0;
  for (const [k, v] of Object.entries(r.stats)) if (k.startsWith('anomaly:')) n += v;
  if (n === 0) for (const t of r.anomalyTypes) n += r.anomalies[t]?.length ?? 0;
  return n;
}

export function formatSummary(s: {
  workload: string;
  nemesis: string;
  seed: number;
  timeSec: number;
  counts: OpCounts;
  faults: number;
  checks: ComposedResult;
  /** Node processes that exited on their own (omitted from the line when 0). */
  crashes?: number;
}): string {
  const verdicts = Object.entries(s.checks.results).map(([name, r]) => {
    const v = r.valid === true ? 'valid' : r.valid === false ? 'INVALID' : 'unknown';
    const n = anomalyCount(r);
    return `${name}: ${v}, ${n} anomal${n === 1 ? 'y' : 'ies'}${r.anomalyTypes.length > 0 ? ` (${r.anomalyTypes.join(', ')})` : ''}`;
  });
  const c = s.counts;
  return [
    `${s.workload} ${s.nemesis} seed=${s.seed} ${s.timeSec}s`,
    `${c.ops} ops (${c.ok} ok, ${c.fail} fail, ${c.info} info)`,
    `${s.faults} faults`,
    ...(s.crashes ? [`${s.crashes} node crash${s.crashes === 1 ? '' : 'es'}`] : []),
    verdicts.length === 0 ? 'no checker ran: unknown' : verdicts.join('; '),
  ].join(' | ');
}
