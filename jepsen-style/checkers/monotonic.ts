/**
 * Monotonic checker: each transaction reads the current maximum and inserts max + 1,
 * reporting the commit timestamp of its insert; a final read returns every row. Under
 * serializability the values, ordered by commit timestamp, strictly increase, and with
 * CockroachDB's "no stale reads" guarantee a transaction that starts after another
 * committed inserts a larger value.
 *
 * Operations:
 *   - `f: 'inc'`, value on ok: `{ value, ts }` — the inserted value and its commit
 *     timestamp; fail: not inserted; info: unknown (may appear in the final read).
 *   - `f: 'read'`, value on ok: array of `{ value, ts }` — all rows (the final read).
 * Timestamps: numbers, HLC objects `{ wall, logical }`, or decimal strings
 * "wall.logical" as CockroachDB prints crdb_internal_mvcc_timestamp.
 *
 * Anomalies:
 *   - regression          — two rows where the later commit timestamp has the smaller or
 *                           equal value (from the final read and the ok incs together);
 *   - realtime-regression — inc B invoked after inc A completed, yet B.value ≤ A.value;
 *   - duplicate-value     — two rows with the same value;
 *   - lost                — an ok inc missing from the final read.
 * A failed inc inserted nothing and its value is unknown, so it contributes nothing; an
 * info inc's row may or may not appear in the final read (both are fine), and once
 * there it is ordered like any other row.
 * No final read → only the ok incs are checked; no ok inc and no read → 'unknown'.
 */
import type { Timestamp } from '../../src/util/index.js';
import { CairnError, compareTimestamps } from '../../src/util/index.js';
import type { History } from '../history/history.js';
import { pairHistory } from '../history/history.js';
import { AnomalyLog } from './check-result.js';
import type { CheckResult } from './check-result.js';

export type CommitTs = number | string | Timestamp;

export interface MonotonicRow {
  readonly value: number;
  readonly ts: CommitTs;
}

/** Orders commit timestamps of the three accepted forms (not mixed). */
export function compareCommitTs(a: CommitTs, b: CommitTs): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') {
    const [ai = '0', af = ''] = a.split('.');
    const [bi = '0', bf = ''] = b.split('.');
    const d = BigInt(ai) - BigInt(bi);
    if (d !== 0n) return d < 0n ? -1 : 1;
    const w = Math.max(af.length, bf.length);
    const fa = af.padEnd(w, '0');
    const fb = bf.padEnd(w, '0');
    return fa < fb ? -1 : fa > fb ? 1 : 0;
  }
  if (typeof a === 'object' && typeof b === 'object') return compareTimestamps(a, b);
  throw new CairnError('checkers.bad_timestamp', `monotonic: cannot compare timestamps ${JSON.stringify(a)} and ${JSON.stringify(b)}`);
}

export function checkMonotonic(history: History): CheckResult {
  const log = new AnomalyLog();
  const pairs = pairHistory(history);
  const incs = pairs.filter((p) => p.f === 'inc');
  const okIncs = incs.filter((p) => p.type === 'ok');
  const reads = pairs.filter((p) => p.f === 'read' && p.type === 'ok');
  const finalRead = reads.reduce<(typeof reads)[number] | undefined>((a, r) => (a === undefined || r.invokeIndex > a.invokeIndex ? r : a), undefined);
  const finalRows = (finalRead?.value ?? []) as readonly MonotonicRow[];

  // All rows known to be committed: the final read's plus every acknowledged inc.
  const rows = new Map<string, MonotonicRow>();
  const rowId = (r: MonotonicRow) => `${r.value}@${JSON.stringify(r.ts)}`;
  for (const r of finalRows) rows.set(rowId(r), r);
  for (const p of okIncs) rows.set(rowId(p.value as MonotonicRow), p.value as MonotonicRow);
  const sorted = [...rows.values()].sort((a, b) => compareCommitTs(a.ts, b.ts) || a.value - b.value);
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1]!;
    const b = sorted[i]!;
    if (a.value === b.value) log.add('duplicate-value', { rows: [a, b] });
    else if (b.value < a.value || compareCommitTs(a.ts, b.ts) === 0) log.add('regression', { earlier: a, later: b });
  }
  // Realtime: sort by completion; every inc invoked after A completed must exceed A.
  const byCompletion = [...okIncs].sort((a, b) => a.completeIndex - b.completeIndex);
  const byInvoke = [...okIncs].sort((a, b) => a.invokeIndex - b.invokeIndex);
  let j = 0;
  let maxDone: (typeof okIncs)[number] | undefined;
  for (const b of byInvoke) {
    while (j < byCompletion.length && byCompletion[j]!.completeIndex < b.invokeIndex) {
      const c = byCompletion[j++]!;
      if (maxDone === undefined || (c.value as MonotonicRow).value > (maxDone.value as MonotonicRow).value) maxDone = c;
    }
    if (maxDone !== undefined && (b.value as MonotonicRow).value <= (maxDone.value as MonotonicRow).value) {
      log.add('realtime-regression', { completed: maxDone.value, completedAt: maxDone.completeIndex, later: b.value, invokedAt: b.invokeIndex });
    }
  }
  if (finalRead !== undefined) {
    const present = new Set(finalRows.map(rowId));
    for (const p of okIncs) {
      const id = rowId(p.value as MonotonicRow);
      if (p.type === 'ok' && !present.has(id)) log.add('lost', { row: p.value, index: p.invokeIndex });
    }
  }
  const anomalyTypes = log.types();
  return {
    valid: anomalyTypes.length > 0 ? false : okIncs.length === 0 && finalRead === undefined ? 'unknown' : true,
    anomalyTypes,
    anomalies: log.examples,
    stats: { incs: incs.length, incsOk: okIncs.length, rows: rows.size, finalRead: finalRead === undefined ? 0 : 1, ...log.countStats() },
  };
}

export const monotonicChecker = { name: 'monotonic', check: checkMonotonic };
