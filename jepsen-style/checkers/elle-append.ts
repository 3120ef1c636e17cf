/**
 * Elle-style list-append checker (Kingsbury & Alvaro, "Elle: Inferring Isolation
 * Anomalies from Experimental Observations", VLDB 2020).
 *
 * Workload. Every operation is a transaction `f: 'txn'` whose value is a list of
 * micro-ops: `['append', key, v]` appends the unique value v to the list at key;
 * `['r', key, list]` reads the whole list (null on invoke; on ok, null means the key
 * does not exist, i.e. the empty list). Appended values are unique per key, so every
 * element of a read names the transaction that wrote it, and since a list's versions
 * are its prefixes, the longest read of a key reveals the key's version order.
 *
 * Which transactions count:
 *   - ok:   committed; all its micro-ops are used.
 *   - fail: certainly not committed; reading one of its values is G1a (aborted read).
 *   - info: may or may not have committed, reads unknown. If any of its appends was
 *           observed it is treated as committed (a graph node with ww/wr edges and
 *           realtime edges *into* it only — it may have committed any time after its
 *           invocation); otherwise it is ignored. It is never treated as failed.
 *
 * Non-cycle anomalies:
 *   - duplicate-elements — a read lists the same value twice;
 *   - garbage-read       — a read lists a value no transaction appended;
 *   - G1a                — a read lists a value appended by a failed transaction;
 *   - G1b                — a read ends in a value that was not its writer's last append
 *                          to that key (an intermediate version);
 *   - internal           — a transaction's read disagrees with its own earlier reads and
 *                          appends of that key, or lists one of its own later appends;
 *   - incompatible-order — two reads of a key where neither is a prefix of the other, or
 *                          a read listing a txn's appends to the key out of its order or
 *                          without its earlier ones;
 *   - lost-update        — two committed transactions read the same version of a key
 *                          and both appended to it;
 *   - nonunique-append   — the generator appended a value twice (the history cannot be
 *                          analysed soundly: the verdict is at best 'unknown').
 *
 * Dependency edges (graph.ts) between graph nodes, from each key's version order
 * (the longest read) and each transaction's *external* read of a key (its first read
 * of the key before appending to it):
 *   ww  writer(order[i]) → writer(order[i+1]), and writer(last of order) → every
 *       committed txn whose append to the key no read observed (lists only grow, so an
 *       unobserved committed append was installed after every observed version);
 *   wr  writer(last element read) → reader;
 *   rw  reader → writer(order[len(read)]), the version after the one it read, and, for
 *       a reader of the newest observed version, reader → every committed txn whose
 *       append to the key no read observed (older readers reach those through ww);
 *   process   each ok txn → the next txn of the same process;
 *   realtime  ok T1 → T2 when T1 completed before T2 was invoked (transitively reduced:
 *             only edges from the "frontier" of latest completions).
 * Cycles are found and classified by graph.ts. Serializable: none of G0, G1a, G1b,
 * G1c, G-single, G2-item, internal, duplicate-elements, garbage-read,
 * incompatible-order, lost-update. Strict serializable: additionally none of the
 * `-process` / `-realtime` cycle variants. `valid` follows `options.consistencyModel`
 * (default 'serializable'); both verdicts are always reported.
 */
import type { History, PairedOp } from '../history/history.js';
import { pairHistory } from '../history/history.js';
import { AnomalyLog } from './check-result.js';
import type { CheckResult, Validity } from './check-result.js';
import { DepGraph, PROCESS, REALTIME, RW, WR, WW, findCycles, relName } from './graph.js';
import type { CycleStep } from './graph.js';

export type AppendKey = string | number;
export type AppendValue = string | number;
export type MicroOp =
  | readonly ['append', AppendKey, AppendValue]
  | readonly ['r', AppendKey, readonly AppendValue[] | null];

export type ConsistencyModel = 'serializable' | 'strict-serializable';

export interface ElleAppendOptions {
  readonly consistencyModel?: ConsistencyModel;
  /** Examples kept per anomaly type. */
  readonly examplesPerType?: number;
  /** Edge inspections allowed when looking for the weakest cycle class. */
  readonly cycleSearchBudget?: number;
  /** Monotonic ms clock for the elapsedMs stat; default performance.now. */
  readonly now?: () => number;
}

export interface ElleAppendResult extends CheckResult {
  readonly serializable: Validity;
  readonly strictSerializable: Validity;
}

/** Anomalies that violate serializability. */
export const SERIALIZABILITY_ANOMALIES: ReadonlySet<string> = new Set([
  'G0', 'G1a', 'G1b', 'G1c', 'G-single', 'G2-item', 'internal', 'duplicate-elements',
  'garbage-read', 'incompatible-order', 'lost-update',
]);

interface Txn {
  readonly op: PairedOp<readonly MicroOp[]>;
  readonly mops: readonly MicroOp[];
  node: number; // graph node, -1 when not in the graph
}

interface Writer {
  readonly txn: Txn;
  /** Position among the txn's appends to the key (0 = its first). */
  readonly seq: number;
  /** Whether this is the txn's last append to the key. */
  final: boolean;
}

/** A transaction as anomaly reports show it: `T<invocation index>`. */
export interface TxnSummary {
  readonly name: string;
  readonly index: number;
  readonly process: number | string;
  readonly type: string;
  readonly value: readonly MicroOp[];
}

function describe(t: Txn): TxnSummary {
  return { name: nameOf(t), index: t.op.invokeIndex, process: t.op.process, type: t.op.type, value: t.mops };
}

function nameOf(t: Txn): string {
  return `T${t.op.invokeIndex}`;
}

/** A list for messages; long ones keep their ends: `[6 14 … 357 358] (72 values)`. */
function fmtList(l: readonly AppendValue[]): string {
  if (l.length <= 8) return `[${l.join(' ')}]`;
  return `[${l.slice(0, 2).join(' ')} … ${l.slice(-3).join(' ')}] (${l.length} values)`;
}

/** `r x [1 2] append y 3`, as the transcripts and reports print micro-ops. */
export function formatMops(mops: readonly MicroOp[]): string {
  return mops.map((m) => (m[0] === 'r' ? `r ${String(m[1])} ${m[2] === null ? 'nil' : fmtList(m[2])}` : `append ${String(m[1])} ${String(m[2])}`)).join(', ');
}

function isPrefix(a: readonly AppendValue[], b: readonly AppendValue[]): boolean {
  if (a.length > b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function readList(m: MicroOp): readonly AppendValue[] {
  return (m[2] as readonly AppendValue[] | null) ?? [];
}

/** Per-key analysis state. */
interface KeyInfo {
  readonly writers: Map<AppendValue, Writer>;
  longest: readonly AppendValue[];
  /** Position of each value in `longest`. */
  position: Map<AppendValue, number>;
}

export function checkElleAppend(history: History, options: ElleAppendOptions = {}): ElleAppendResult {
  const now = options.now ?? (() => performance.now());
  const start = now();
  const log = new AnomalyLog(options.examplesPerType ?? 8);
  const txns: Txn[] = pairHistory(history)
    .filter((p) => p.f === 'txn')
    .map((p) => {
      const op = p as PairedOp<readonly MicroOp[]>;
      return { op, mops: op.value ?? [], node: -1 };
    });
  const keys = new Map<AppendKey, KeyInfo>();
  const keyInfo = (k: AppendKey): KeyInfo => {
    let ki = keys.get(k);
    if (ki === undefined) keys.set(k, (ki = { writers: new Map(), longest: [], position: new Map() }));
    return ki;
  };

  // 1. Index every append (ok, info and fail alike).
  for (const t of txns) {
    const lastOfKey = new Map<AppendKey, Writer>();
    for (const m of t.mops) {
      if (m[0] !== 'append') continue;
      const ki = keyInfo(m[1]);
      if (ki.writers.has(m[2])) {
        log.add('nonunique-append', { message: `${nameOf(t)} appended ${String(m[2])} to ${String(m[1])}, as another txn did`, txn: describe(t) });
        continue;
      }
      const prev = lastOfKey.get(m[1]);
      const w: Writer = { txn: t, seq: prev === undefined ? 0 : prev.seq + 1, final: true };
      if (prev !== undefined) prev.final = false;
      lastOfKey.set(m[1], w);
      ki.writers.set(m[2], w);
    }
  }

  // 2. Per-read checks of committed transactions; version orders from the longest reads.
  const committed = txns.filter((t) => t.op.type === 'ok');
  const observed = new Set<Txn>();
  const allReads: { t: Txn; key: AppendKey; list: readonly AppendValue[] }[] = [];
  for (const t of committed) {
    const ownState = new Map<AppendKey, { read: readonly AppendValue[] | undefined; appended: AppendValue[] }>();
    const ownSoFar = new Map<AppendKey, Set<AppendValue>>();
    for (const m of t.mops) {
      const st = ownState.get(m[1]) ?? { read: undefined, appended: [] };
      ownState.set(m[1], st);
      if (m[0] === 'append') {
        st.appended.push(m[2]);
        ownSoFar.set(m[1], (ownSoFar.get(m[1]) ?? new Set()).add(m[2]));
        continue;
      }
      const list = readList(m);
      const ki = keyInfo(m[1]);
      checkReadElements(t, m, list, ki, log, observed);
      // Reading one's own append before making it.
      const future = list.filter((v) => ki.writers.get(v)?.txn === t && ownSoFar.get(m[1])?.has(v) !== true);
      if (future.length > 0) {
        log.add('internal', { message: `${nameOf(t)} read ${String(m[1])} = ${fmtList(list)}, listing its own later append of ${fmtList(future)}`, txn: describe(t) });
      }
      // Internal consistency: the read must reflect this txn's own earlier micro-ops.
      if (st.read !== undefined) {
        const expected = [...st.read, ...st.appended];
        if (expected.length !== list.length || !isPrefix(expected, list)) {
          log.add('internal', { message: `${nameOf(t)} read ${String(m[1])} = ${fmtList(list)}, but its own earlier micro-ops imply ${fmtList(expected)}`, txn: describe(t) });
        }
      } else if (st.appended.length > 0) {
        const tail = list.slice(list.length - st.appended.length);
        if (list.length < st.appended.length || !isPrefix(st.appended, tail)) {
          log.add('internal', { message: `${nameOf(t)} read ${String(m[1])} = ${fmtList(list)}, which does not end with its own appends ${fmtList(st.appended)}`, txn: describe(t) });
        }
      }
      st.read = list;
      st.appended = [];
      allReads.push({ t, key: m[1], list });
      if (list.length > ki.longest.length) ki.longest = list;
    }
  }
  for (const ki of keys.values()) {
    ki.longest.forEach((v, i) => {
      if (!ki.position.has(v)) ki.position.set(v, i);
    });
  }
  // Every read must be a prefix of the key's longest read: one version order for all.
  const incompatible = new Set<readonly AppendValue[]>();
  for (const { t, key, list } of allReads) {
    const longest = keys.get(key)!.longest;
    if (isPrefix(list, longest)) continue;
    incompatible.add(list);
    log.add('incompatible-order', { message: `${nameOf(t)} read ${String(key)} = ${fmtList(list)}, not a prefix of another read ${fmtList(longest)}`, txn: describe(t) });
  }

  // 3. Graph nodes: committed txns and observed indeterminate ones.
  let nodes = 0;
  for (const t of txns) {
    if (t.op.type === 'ok' || (t.op.type === 'info' && observed.has(t))) t.node = nodes++;
  }
  const byNode: Txn[] = [];
  for (const t of txns) if (t.node >= 0) byNode[t.node] = t;
  const g = new DepGraph(nodes);
  const nodeOf = (ki: KeyInfo, v: AppendValue | undefined): number => {
    if (v === undefined) return -1;
    return ki.writers.get(v)?.txn.node ?? -1;
  };

  // ww edges along each version order. A committed append that no read observed was
  // installed after every observed version (lists only grow): it follows the last one.
  const unobserved = new Map<AppendKey, number[]>();
  for (const [k, ki] of keys) {
    for (let i = 0; i + 1 < ki.longest.length; i++) {
      const a = nodeOf(ki, ki.longest[i]);
      const b = nodeOf(ki, ki.longest[i + 1]);
      if (a >= 0 && b >= 0) g.addEdge(a, b, WW);
    }
    const after: number[] = [];
    for (const [v, w] of ki.writers) if (w.txn.node >= 0 && !ki.position.has(v)) after.push(w.txn.node);
    unobserved.set(k, after);
    const last = nodeOf(ki, ki.longest[ki.longest.length - 1]);
    if (last >= 0) for (const b of after) g.addEdge(last, b, WW);
  }
  // wr / rw edges from external reads; incompatible orders; lost updates.
  const readersOfVersion = new Map<string, { key: AppendKey; list: readonly AppendValue[]; txns: Txn[] }>();
  for (const t of committed) {
    const seen = new Set<AppendKey>();
    const appendedKeys = new Set<AppendKey>(t.mops.filter((m) => m[0] === 'append').map((m) => m[1]));
    for (const m of t.mops) {
      if (seen.has(m[1])) continue;
      seen.add(m[1]);
      if (m[0] !== 'r') continue;
      const ki = keys.get(m[1])!;
      const list = readList(m);
      if (incompatible.has(list)) continue;
      const w = nodeOf(ki, list[list.length - 1]);
      if (w >= 0) g.addEdge(w, t.node, WR);
      const nxt = nodeOf(ki, ki.longest[list.length]);
      if (nxt >= 0) g.addEdge(t.node, nxt, RW);
      // Unobserved committed appends came after this version too. A reader of an older
      // version reaches them through the ww chain; only readers of the newest need edges.
      if (list.length === ki.longest.length) for (const b of unobserved.get(m[1])!) g.addEdge(t.node, b, RW);
      if (appendedKeys.has(m[1])) {
        const id = `${typeof m[1]}:${String(m[1])}@${list.length}`;
        const v = readersOfVersion.get(id) ?? { key: m[1], list, txns: [] };
        readersOfVersion.set(id, v);
        v.txns.push(t);
      }
    }
  }
  for (const { key, list, txns: readers } of readersOfVersion.values()) {
    if (readers.length < 2) continue;
    const names = readers.map(nameOf).join(', ');
    log.add('lost-update', { message: `${names} all read ${String(key)} = ${fmtList(list)} and appended to it`, txns: readers.map(describe) });
  }
  addSessionEdges(g, byNode);

  // 4. Cycles.
  const found = findCycles(g, options.cycleSearchBudget === undefined ? {} : { budget: options.cycleSearchBudget });
  for (const c of found.cycles) log.add(c.type, explainCycle(c.steps, byNode, keys));

  const anomalyTypes = log.types();
  const broken = (strict: boolean): Validity => {
    const bad = anomalyTypes.some((a) => SERIALIZABILITY_ANOMALIES.has(a) || (strict && /-(realtime|process)$/.test(a)));
    if (bad) return false;
    return log.has('nonunique-append') ? 'unknown' : true;
  };
  const serializable = broken(false);
  const strictSerializable = broken(true);
  return {
    valid: options.consistencyModel === 'strict-serializable' ? strictSerializable : serializable,
    serializable,
    strictSerializable,
    anomalyTypes,
    anomalies: log.examples,
    stats: {
      txns: txns.length,
      ok: committed.length,
      info: txns.filter((t) => t.op.type === 'info').length,
      fail: txns.filter((t) => t.op.type === 'fail').length,
      nodes,
      edges: g.edges,
      keys: keys.size,
      sccs: found.sccs,
      cycleSearchTruncated: found.truncated ? 1 : 0,
      elapsedMs: now() - start,
      ...log.countStats(),
    },
  };
}

/** duplicate-elements, garbage-read, G1a and G1b for one read of a committed txn. */
function checkReadElements(t: Txn, m: MicroOp, list: readonly AppendValue[], ki: KeyInfo, log: AnomalyLog, observed: Set<Txn>): void {
  const k = String(m[1]);
  const r = `${nameOf(t)} read ${k} = ${fmtList(list)}`;
  if (new Set(list).size !== list.length) log.add('duplicate-elements', { message: `${r}, listing a value twice`, txn: describe(t) });
  const seenOf = new Map<Txn, number>(); // appends of each other writer seen so far
  const listed = new Set<AppendValue>();
  for (const v of list) {
    if (listed.has(v)) continue; // a duplicate-elements anomaly, reported above
    listed.add(v);
    const w = ki.writers.get(v);
    if (w === undefined) {
      log.add('garbage-read', { message: `${r}, but no txn appended ${String(v)} to ${k}`, txn: describe(t) });
      continue;
    }
    if (w.txn !== t) {
      // A txn's appends to one key enter the list together and in its order.
      const seen = seenOf.get(w.txn) ?? 0;
      if (w.seq !== seen) {
        const how = w.seq > seen ? 'without its earlier append(s) to' : 'out of the order it appended to';
        log.add('incompatible-order', { message: `${r}, listing ${nameOf(w.txn)}'s append of ${String(v)} ${how} ${k}`, txn: describe(t) });
      }
      seenOf.set(w.txn, Math.max(seen, w.seq) + 1);
    }
    if (w.txn.op.type === 'fail') {
      log.add('G1a', { message: `${r}, with ${String(v)} from failed ${nameOf(w.txn)}`, reader: describe(t), writer: describe(w.txn) });
    }
    else if (w.txn !== t) observed.add(w.txn);
  }
  const last = list[list.length - 1];
  const lw = last === undefined ? undefined : ki.writers.get(last);
  if (lw !== undefined && lw.txn !== t && !lw.final && lw.txn.op.type !== 'fail') {
    const msg = `${r}, ending in ${String(last)}: an intermediate append of ${nameOf(lw.txn)}, which appended to ${k} again`;
    log.add('G1b', { message: msg, reader: describe(t), writer: describe(lw.txn) });
  }
}

/** Process edges and transitively-reduced realtime edges. */
function addSessionEdges(g: DepGraph, byNode: readonly Txn[]): void {
  const lastOfProcess = new Map<number | string, Txn>();
  const events: { at: number; t: Txn; invoke: boolean }[] = [];
  for (const t of [...byNode].sort((a, b) => a.op.invokeIndex - b.op.invokeIndex)) {
    const prev = lastOfProcess.get(t.op.process);
    if (prev !== undefined && prev.op.type === 'ok') g.addEdge(prev.node, t.node, PROCESS);
    lastOfProcess.set(t.op.process, t);
    events.push({ at: t.op.invokeIndex, t, invoke: true });
    if (t.op.type === 'ok') events.push({ at: t.op.completeIndex, t, invoke: false });
  }
  events.sort((a, b) => a.at - b.at);
  // frontier: completed txns with no completed realtime successor yet.
  const frontier = new Set<Txn>();
  const preds = new Map<Txn, Txn[]>();
  for (const e of events) {
    if (e.invoke) {
      preds.set(e.t, [...frontier]);
      for (const f of frontier) g.addEdge(f.node, e.t.node, REALTIME);
    } else {
      for (const p of preds.get(e.t) ?? []) frontier.delete(p);
      frontier.add(e.t);
    }
  }
}

/** Explains each step of a cycle: which key and values make the dependency. */
function explainCycle(steps: readonly CycleStep[], byNode: readonly Txn[], keys: Map<AppendKey, KeyInfo>) {
  const cycle = steps.map((s) => {
    const a = byNode[s.from]!;
    const b = byNode[s.to]!;
    return { from: nameOf(a), rel: relName(s.rel), to: nameOf(b), why: explainStep(a, b, s.rel, keys) };
  });
  return {
    message: cycle.map((c) => `${c.from} -${c.rel}-> ${c.to}: ${c.why}`).join('\n'),
    cycle,
    txns: steps.map((s) => describe(byNode[s.from]!)),
  };
}

function externalReads(t: Txn): Map<AppendKey, readonly AppendValue[]> {
  const out = new Map<AppendKey, readonly AppendValue[]>();
  const seen = new Set<AppendKey>();
  for (const m of t.mops) {
    if (!seen.has(m[1]) && m[0] === 'r') out.set(m[1], readList(m));
    seen.add(m[1]);
  }
  return out;
}

/** A value `t` appended to `key` that no read observed, if any. */
function unobservedAppend(t: Txn, key: AppendKey, keys: Map<AppendKey, KeyInfo>): AppendValue | undefined {
  const ki = keys.get(key)!;
  for (const m of t.mops) if (m[0] === 'append' && m[1] === key && !ki.position.has(m[2])) return m[2];
  return undefined;
}

function explainStep(a: Txn, b: Txn, rel: number, keys: Map<AppendKey, KeyInfo>): string {
  const [an, bn] = [nameOf(a), nameOf(b)];
  switch (rel) {
    case WW:
      for (const m of a.mops) {
        if (m[0] !== 'append') continue;
        const ki = keys.get(m[1])!;
        const i = ki.position.get(m[2]);
        const next = i === undefined ? undefined : ki.longest[i + 1];
        if (next !== undefined && ki.writers.get(next)?.txn === b) {
          return `${an} appended ${String(m[2])} to ${String(m[1])}, and ${bn} appended ${String(next)} right after it`;
        }
        const later = unobservedAppend(b, m[1], keys);
        if (i === ki.longest.length - 1 && later !== undefined) {
          return `${an}'s append of ${String(m[2])} ends the longest read of ${String(m[1])}, and ${bn}'s committed append of ${String(later)} was never read, so came later`;
        }
      }
      break;
    case WR:
      for (const [k, list] of externalReads(b)) {
        const last = list[list.length - 1];
        if (last !== undefined && keys.get(k)!.writers.get(last)?.txn === a) {
          return `${bn} read ${String(k)} = ${fmtList(list)}, ending in ${an}'s append of ${String(last)}`;
        }
      }
      break;
    case RW:
      for (const [k, list] of externalReads(a)) {
        const ki = keys.get(k)!;
        const next = ki.longest[list.length];
        if (next !== undefined && isPrefix(list, ki.longest) && ki.writers.get(next)?.txn === b) {
          return `${an} read ${String(k)} = ${fmtList(list)}, and ${bn}'s append of ${String(next)} came next`;
        }
        const later = unobservedAppend(b, k, keys);
        if (later !== undefined) {
          return `${an} read ${String(k)} = ${fmtList(list)}, and ${bn}'s committed append of ${String(later)} was never read, so came later`;
        }
      }
      break;
    case PROCESS:
      return `${an} ran before ${bn} on process ${String(a.op.process)}`;
    case REALTIME:
      return `${an} completed (index ${a.op.completeIndex}) before ${bn} was invoked (index ${b.op.invokeIndex})`;
  }
  return relName(rel);
}

/**
 * The result as text for people: both verdicts, then each anomaly type with its count
 * and examples (cycles one step per line), then the transactions involved.
 */
export function formatElleResult(r: ElleAppendResult): string {
  const lines = [`serializable=${String(r.serializable)} strict-serializable=${String(r.strictSerializable)}`];
  for (const type of r.anomalyTypes) {
    lines.push(`${type} ×${r.stats[`anomaly:${type}`] ?? r.anomalies[type]!.length}`);
    for (const ex of r.anomalies[type]! as { message: string; txns?: readonly TxnSummary[] }[]) {
      for (const l of ex.message.split('\n')) lines.push(`  ${l}`);
      for (const t of ex.txns ?? []) lines.push(`    ${t.name} p${String(t.process)} ${t.type}: ${formatMops(t.value)}`);
    }
  }
  return lines.join('\n');
}

/** The list-append checker as a `Checker`. */
export function elleAppendChecker(options: ElleAppendOptions = {}) {
  return { name: 'elle-append', check: (h: History) => checkElleAppend(h, options) };
}
