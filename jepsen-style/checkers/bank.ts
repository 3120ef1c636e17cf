/**
 * Bank checker: money moves between accounts (spread across ranges and tables) but is
 * never created or destroyed, so every snapshot read must sum to the same total.
 *
 * Operations:
 *   - `f: 'transfer'`, value `{ from, to, amount }` — not checked itself (its effect is
 *     what reads observe); its outcome only matters for the final-state check.
 *   - `f: 'read'`, value on ok: `{ [account]: balance }` — one snapshot of all accounts.
 *
 * Anomalies:
 *   - wrong-total       — an ok read whose balances do not sum to `total`;
 *   - missing-account / unexpected-account — when `accounts` is given, a read lacking one
 *                          or naming another;
 *   - negative-balance  — unless `allowNegative`;
 *   - final-disagreement — the final reads differ, although nothing could change in
 *                          between: the reads invoked with value 'final' (the runner's, after
 *                          the clients stopped and the cluster healed), or, when none is
 *                          marked, the ok reads invoked after every transfer completed —
 *                          then skipped when any transfer is indeterminate (it may apply late);
 *   - lost-transfer     — with `initial` balances given and no indeterminate transfer:
 *                          a final read differs from initial + every ok transfer (an
 *                          acknowledged transfer vanished, or a failed one applied).
 * Info and failed reads say nothing and are ignored; transfers' outcomes (ok, fail,
 * info) never change what a read must sum to. No ok read at all → 'unknown': a bank
 * test that never read proved nothing.
 */
import type { History } from '../history/history.js';
import { pairHistory } from '../history/history.js';
import { AnomalyLog } from './check-result.js';
import type { CheckResult } from './check-result.js';

export interface BankOptions {
  readonly total: number;
  readonly accounts?: readonly (string | number)[];
  readonly allowNegative?: boolean;
  /** Balances before the first transfer; enables the lost-transfer check. */
  readonly initial?: Readonly<Record<string, number>>;
}

type Balances = Readonly<Record<string, number>>;

export function checkBank(history: History, opts: BankOptions): CheckResult {
  const log = new AnomalyLog();
  const pairs = pairHistory(history);
  const reads = pairs.filter((p) => p.f === 'read' && p.type === 'ok');
  const transfers = pairs.filter((p) => p.f === 'transfer');
  const expected = opts.accounts?.map(String);
  for (const r of reads) {
    const b = r.value as Balances;
    const names = Object.keys(b);
    const sum = names.reduce((s, k) => s + b[k]!, 0);
    const where = { index: r.invokeIndex, process: r.process, balances: b };
    if (sum !== opts.total) log.add('wrong-total', { ...where, total: sum, expected: opts.total });
    if (!opts.allowNegative && names.some((k) => b[k]! < 0)) log.add('negative-balance', where);
    if (expected !== undefined) {
      const missing = expected.filter((a) => !(a in b));
      const extra = names.filter((a) => !expected.includes(a));
      if (missing.length > 0) log.add('missing-account', { ...where, missing });
      if (extra.length > 0) log.add('unexpected-account', { ...where, extra });
    }
  }
  // Final reads: those the runner marks as such (invoked with value 'final', after the clients stopped and the
  // cluster healed), else the reads after the last transfer ended. NB: an indeterminate transfer never "ends"
  // (it may apply at any later point), so without the mark a single info transfer — every run with faults has
  // some — left no final read and the agreement check silently never ran.
  const marked = reads.filter((r) => r.invoke.value === 'final');
  const lastTransferEnd = transfers.reduce((m, t) => Math.max(m, t.completeIndex), -1);
  const finals = marked.length > 0 ? marked : reads.filter((r) => r.invokeIndex > lastTransferEnd);
  if (marked.length > 0 || lastTransferEnd !== Infinity) {
    for (const r of finals.slice(1)) {
      if (!sameBalances(r.value as Balances, finals[0]!.value as Balances)) {
        log.add('final-disagreement', { first: finals[0]!.value, later: r.value, index: r.invokeIndex });
      }
    }
  }
  if (opts.initial !== undefined && finals.length > 0 && !transfers.some((t) => t.type === 'info')) {
    const expectedFinal: Record<string, number> = { ...opts.initial };
    for (const t of transfers) {
      if (t.type !== 'ok') continue;
      const { from, to, amount } = t.value as { from: string | number; to: string | number; amount: number };
      expectedFinal[String(from)] = (expectedFinal[String(from)] ?? 0) - amount;
      expectedFinal[String(to)] = (expectedFinal[String(to)] ?? 0) + amount;
    }
    for (const r of finals) {
      if (!sameBalances(r.value as Balances, expectedFinal)) log.add('lost-transfer', { index: r.invokeIndex, read: r.value, expected: expectedFinal });
    }
  }
  const anomalyTypes = log.types();
  return {
    valid: anomalyTypes.length > 0 ? false : reads.length === 0 ? 'unknown' : true,
    anomalyTypes,
    anomalies: log.examples,
    stats: {
      reads: reads.length,
      transfers: transfers.length,
      transfersOk: transfers.filter((t) => t.type === 'ok').length,
      transfersInfo: transfers.filter((t) => t.type === 'info').length,
      finalReads: finals.length,
      ...log.countStats(),
    },
  };
}

function sameBalances(a: Balances, b: Balances): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}

export function bankChecker(opts: BankOptions) {
  return { name: 'bank', check: (h: History) => checkBank(h, opts) };
}
