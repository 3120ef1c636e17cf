/**
 * G2 (anti-dependency cycle) checker, after Jepsen's CockroachDB "g2" test. For each
 * key, two (or more) transactions concurrently run a predicate read over two tables —
 * "is there any row for this key in a or in b?" — and, seeing none, insert a row for
 * the key (one into a, the other into b). Under serializability at most one of them
 * can commit: each one's predicate read anti-depends on the other's insert, a G2 cycle.
 *
 * Operations: `f: 'insert'`, value `[key, id]`. ok = committed (the predicate read was
 * empty and the insert succeeded); fail = not committed (including "predicate read
 * was not empty, nothing inserted"); info = unknown.
 *
 * Anomalies:
 *   - G2 — two or more ok inserts for one key.
 * Info inserts may have committed but never prove a violation, so they do not count.
 * Verdict 'unknown' when no insert committed at all (nothing was tested).
 */
import type { History } from '../history/history.js';
import { pairHistory } from '../history/history.js';
import { AnomalyLog } from './check-result.js';
import type { CheckResult } from './check-result.js';

export function checkG2(history: History): CheckResult {
  const log = new AnomalyLog();
  const byKey = new Map<string, { id: unknown; index: number; process: number | string }[]>();
  let attempts = 0;
  let committed = 0;
  for (const p of pairHistory(history)) {
    if (p.f !== 'insert') continue;
    attempts++;
    if (p.type !== 'ok') continue;
    committed++;
    const [key, id] = p.invoke.value as [unknown, unknown];
    const k = JSON.stringify(key);
    const l = byKey.get(k) ?? [];
    byKey.set(k, l);
    l.push({ id, index: p.invokeIndex, process: p.process });
  }
  for (const [k, l] of byKey) if (l.length > 1) log.add('G2', { key: JSON.parse(k), committed: l });
  const anomalyTypes = log.types();
  return {
    valid: anomalyTypes.length > 0 ? false : committed === 0 ? 'unknown' : true,
    anomalyTypes,
    anomalies: log.examples,
    stats: { attempts, committed, keys: byKey.size, ...log.countStats() },
  };
}

export const g2Checker = { name: 'g2', check: checkG2 };
