/**
 * Sequential checker (Jepsen's CockroachDB "sequential" test): one writer per key group
 * inserts keys 0, 1, …, n-1 of the group in order, each in its own transaction and
 * placed on different ranges; a reader then reads the group's keys in *reverse* order
 * (n-1 first), each read its own transaction. Sequential consistency forbids the
 * reader from seeing key i yet missing a key j < i that it read later: the write of j
 * completed before the write of i began, and the read of j happened after the read of
 * i observed i.
 *
 * Operations:
 *   - `f: 'write'`, value `[group, i]` — the writer's insert of key i of group;
 *   - `f: 'read'`,  value on ok `[group, present]` — present[i] says whether key i was
 *                   seen; the reader read them from the highest index down.
 * Anomalies:
 *   - sequential-violation — present[i] and !present[j] for j < i, where write j was ok
 *                            and completed before write i was invoked (an info or failed
 *                            write j may legitimately be absent);
 *   - stale-read          — !present[i] although write i completed (ok) before the read
 *                            was invoked (CockroachDB promises no stale reads);
 *   - failed-but-present  — present[i] for a write that failed;
 *   - garbage-read        — present[i] for a key nobody wrote.
 * No ok read → 'unknown'.
 */
import type { History, PairedOp } from '../history/history.js';
import { pairHistory } from '../history/history.js';
import { AnomalyLog } from './check-result.js';
import type { CheckResult } from './check-result.js';

type Group = string | number;

export function checkSequential(history: History): CheckResult {
  const log = new AnomalyLog();
  const pairs = pairHistory(history);
  const writes = new Map<string, PairedOp>();
  const id = (g: Group, i: number) => `${String(g)}/${i}`;
  for (const p of pairs) {
    if (p.f !== 'write') continue;
    const [g, i] = p.invoke.value as [Group, number];
    writes.set(id(g, i), p);
  }
  const reads = pairs.filter((p) => p.f === 'read' && p.type === 'ok');
  for (const r of reads) {
    const [g, present] = r.value as [Group, readonly boolean[]];
    const where = { index: r.invokeIndex, process: r.process, group: g, present };
    // Highest index seen so far in read order (descending i), and violations below it.
    let seenHigh: number | undefined;
    for (let i = present.length - 1; i >= 0; i--) {
      const w = writes.get(id(g, i));
      if (present[i]) {
        if (w === undefined) log.add('garbage-read', { ...where, key: i });
        else if (w.type === 'fail') log.add('failed-but-present', { ...where, key: i });
        if (seenHigh === undefined) seenHigh = i;
        continue;
      }
      if (w?.type === 'ok' && w.completeIndex < r.invokeIndex) log.add('stale-read', { ...where, key: i });
      const later = seenHigh === undefined ? undefined : writes.get(id(g, seenHigh));
      if (later !== undefined && w?.type === 'ok' && w.completeIndex < later.invokeIndex) {
        log.add('sequential-violation', { ...where, saw: seenHigh, missed: i });
      }
    }
  }
  const anomalyTypes = log.types();
  return {
    valid: anomalyTypes.length > 0 ? false : reads.length === 0 ? 'unknown' : true,
    anomalyTypes,
    anomalies: log.examples,
    stats: { writes: writes.size, reads: reads.length, ...log.countStats() },
  };
}

export const sequentialChecker = { name: 'sequential', check: checkSequential };
