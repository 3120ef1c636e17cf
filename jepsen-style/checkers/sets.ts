/**
 * Set checker: clients add unique elements; reads return the whole set.
 *
 * Operations: `f: 'add'`, value = the element; `f: 'read'`, value on ok = array of
 * elements. Semantics of outcomes:
 *   - ok add:   acknowledged — must be present in every read invoked after it completed;
 *   - fail add: certainly not applied — must never be present;
 *   - info add: unknown — may or may not be present (reported as `recovered` if seen,
 *               never an anomaly either way);
 * Anomalies:
 *   - lost               — an acknowledged add missing from a read invoked after the
 *                          ack, or an element missing from a read although a read that
 *                          completed before this one was invoked saw it (sets do not
 *                          forget);
 *   - duplicated         — a read lists an element more than once;
 *   - failed-but-present — a read lists an element whose add failed;
 *   - unexpected         — a read lists an element nobody tried to add.
 * No ok read → 'unknown' (nothing was verified).
 */
import type { History, PairedOp } from '../history/history.js';
import { pairHistory } from '../history/history.js';
import { AnomalyLog } from './check-result.js';
import type { CheckResult } from './check-result.js';

type Elem = string | number;

export function checkSets(history: History): CheckResult {
  const log = new AnomalyLog();
  const pairs = pairHistory(history);
  const adds = new Map<Elem, PairedOp>();
  for (const p of pairs) if (p.f === 'add') adds.set(p.invoke.value as Elem, p);
  const reads = pairs.filter((p) => p.f === 'read' && p.type === 'ok').sort((a, b) => a.completeIndex - b.completeIndex);
  const recovered = new Set<Elem>();
  // Elements seen by reads completed so far, with the completion index of the first sighting.
  const seenAt = new Map<Elem, number>();
  let readsDone = 0;
  for (const r of [...reads].sort((a, b) => a.invokeIndex - b.invokeIndex)) {
    const list = r.value as readonly Elem[];
    const present = new Set(list);
    const where = { index: r.invokeIndex, process: r.process };
    if (present.size !== list.length) {
      log.add('duplicated', { ...where, elements: list.filter((e, i) => list.indexOf(e) !== i) });
    }
    for (const e of present) {
      const a = adds.get(e);
      if (a === undefined) log.add('unexpected', { ...where, element: e });
      else if (a.type === 'fail') log.add('failed-but-present', { ...where, element: e });
      else if (a.type === 'info') recovered.add(e);
    }
    for (const a of adds.values()) {
      if (a.type === 'ok' && a.completeIndex < r.invokeIndex && !present.has(a.invoke.value as Elem)) {
        log.add('lost', { ...where, element: a.invoke.value, ackedAt: a.completeIndex });
      }
    }
    // Reads that completed before this one began bound what it must contain.
    while (readsDone < reads.length && reads[readsDone]!.completeIndex < r.invokeIndex) {
      for (const e of reads[readsDone]!.value as readonly Elem[]) if (!seenAt.has(e)) seenAt.set(e, reads[readsDone]!.completeIndex);
      readsDone++;
    }
    for (const [e, at] of seenAt) {
      const a = adds.get(e);
      const flagged = a?.type === 'ok' && a.completeIndex < r.invokeIndex;
      if (!present.has(e) && !flagged) log.add('lost', { ...where, element: e, seenBy: at });
    }
  }
  const anomalyTypes = log.types();
  return {
    valid: anomalyTypes.length > 0 ? false : reads.length === 0 ? 'unknown' : true,
    anomalyTypes,
    anomalies: { ...log.examples, ...(recovered.size > 0 ? { recovered: [...recovered].slice(0, 8) } : {}) },
    stats: {
      reads: reads.length,
      addsOk: [...adds.values()].filter((a) => a.type === 'ok').length,
      addsFail: [...adds.values()].filter((a) => a.type === 'fail').length,
      addsInfo: [...adds.values()].filter((a) => a.type === 'info').length,
      recovered: recovered.size,
      ...log.countStats(),
    },
  };
}

export const setsChecker = { name: 'sets', check: checkSets };
