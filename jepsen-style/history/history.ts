/**
 * Histories: the record of what clients asked and what they were told, in Jepsen's form.
 *
 * A history is a sequence of operations in the order the harness observed them. Every
 * client operation appears twice: an `invoke` when the client sends it, and a completion
 * when it learns the outcome:
 *   - `ok`   — it took effect (value: the result, e.g. what a read returned);
 *   - `fail` — it certainly did NOT take effect (e.g. SQLSTATE 40001 before commit);
 *   - `info` — unknown: it may or may not have taken effect, at any time after its
 *              invocation (timeouts, a connection reset during COMMIT, SQLSTATE 40003).
 * A missing completion means the same as `info`. Indeterminate operations are
 * "pending forever": checkers must consider both outcomes and must never treat them as
 * failed (DESIGN.md §6, "Checkers that pass broken systems").
 *
 * Invariants of a well-formed history:
 *   - `index` is the position in the history (0, 1, 2, …); `time` is non-decreasing,
 *     harness-monotonic nanoseconds (relative; only comparisons matter);
 *   - a process has at most one outstanding operation: it invokes, then completes, then
 *     may invoke again. After an `info` a Jepsen harness moves to a fresh process id, but
 *     pairing tolerates reuse (the earlier operation just stays pending forever);
 *   - `f` names the operation ('txn', 'read', 'write', 'cas', 'transfer', …); `value` is
 *     the operation's argument on invoke and its result on ok.
 *
 * The on-disk format is `history.jsonl`: one JSON object per line, the fields of `Op`.
 * Nemesis events (process "nemesis") live in the same history; checkers skip them.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { CairnError } from '../../src/util/index.js';

export type OpType = 'invoke' | 'ok' | 'fail' | 'info';

export interface Op<V = unknown> {
  /** Position in the history, 0-based. */
  readonly index: number;
  /** Harness-monotonic time in ns (only relative order matters). */
  readonly time: number;
  /** Client process (a number), or a name such as 'nemesis'. */
  readonly process: number | string;
  readonly type: OpType;
  readonly f: string;
  readonly value: V;
  /** For per-key workloads (register): the key the operation targets. */
  readonly key?: string | number;
  /** For fail/info completions: why (an error code or SQLSTATE). */
  readonly error?: string;
}

export type History<V = unknown> = readonly Op<V>[];

/**
 * An invocation paired with its completion. For indeterminate operations (`info` or no
 * completion at all) `completeIndex` and `completeTime` are +Infinity: they may take
 * effect at any point after their invocation.
 */
export interface PairedOp<V = unknown> {
  /** Dense id: the position of this pair in `pairHistory`'s result. */
  readonly id: number;
  readonly process: number | string;
  readonly f: string;
  readonly type: 'ok' | 'fail' | 'info';
  /** The result for ok operations, otherwise the invoked argument. */
  readonly value: V;
  readonly key: string | number | undefined;
  readonly invoke: Op<V>;
  readonly completion: Op<V> | undefined;
  readonly invokeIndex: number;
  readonly completeIndex: number;
  readonly invokeTime: number;
  readonly completeTime: number;
}

/** True for operations issued by clients (not the nemesis or other harness actors). */
export function isClientOp(op: Op): boolean {
  return typeof op.process === 'number';
}

/**
 * Pairs every client invocation with its completion, in invocation order. A completion
 * without an invocation is an `history.unpaired` error, except a lone `info` (Knossos
 * files contain a few), which stands for an operation invoked at that point and never
 * resolved.
 */
export function pairHistory<V>(history: History<V>): PairedOp<V>[] {
  const out: PairedOp<V>[] = [];
  const open = new Map<number | string, Op<V>>();
  const completions = new Map<Op<V>, Op<V>>();
  const order: Op<V>[] = [];
  for (const op of history) {
    if (!isClientOp(op)) continue;
    if (op.type === 'invoke') {
      open.set(op.process, op); // a previous open op of this process stays pending forever
      order.push(op);
      continue;
    }
    const inv = open.get(op.process);
    if (inv === undefined) {
      if (op.type !== 'info') {
        throw new CairnError('history.unpaired', `history: ${op.type} completion at index ${op.index} (process ${String(op.process)}) has no invocation`);
      }
      order.push(op);
      completions.set(op, op);
      continue;
    }
    if (inv.f !== op.f) {
      throw new CairnError('history.mismatched', `history: completion at index ${op.index} is ${op.f}, its invocation ${inv.f}`);
    }
    open.delete(op.process);
    completions.set(inv, op);
  }
  for (const inv of order) {
    const c = completions.get(inv);
    const type = c === undefined ? 'info' : c.type === 'invoke' ? 'info' : c.type;
    const determinate = type !== 'info';
    out.push({
      id: out.length,
      process: inv.process,
      f: inv.f,
      type,
      value: type === 'ok' && c !== undefined ? c.value : inv.value,
      key: inv.key ?? c?.key,
      invoke: inv,
      completion: c === inv ? undefined : c,
      invokeIndex: inv.index,
      completeIndex: determinate && c !== undefined ? c.index : Infinity,
      invokeTime: inv.time,
      completeTime: determinate && c !== undefined ? c.time : Infinity,
    });
  }
  return out;
}

/**
 * Builds a history from partial ops (tests, parsers): fills `index` and, where missing,
 * `time` (= index), keeping the given order.
 */
export function buildHistory<V>(ops: readonly (Omit<Op<V>, 'index' | 'time'> & { time?: number })[]): Op<V>[] {
  return ops.map((o, i) => ({ ...o, index: i, time: o.time ?? i }));
}

/**
 * Converts Jepsen "independent" ops, whose value is a `[key, value]` tuple, to our form
 * with a `key` field (nemesis ops and ops already keyed are kept as they are).
 */
export function fromIndependent(history: History): Op[] {
  return history.map((op) => {
    if (!isClientOp(op) || op.key !== undefined || !Array.isArray(op.value) || op.value.length !== 2) return op;
    const [key, value] = op.value as [string | number, unknown];
    return { ...op, key, value };
  });
}

/** Serialises a history as JSON lines (one op per line, trailing newline). */
export function formatHistoryJsonl(history: History): string {
  let s = '';
  for (const op of history) s += JSON.stringify(op) + '\n';
  return s;
}

/** Parses `history.jsonl`; blank lines are ignored. Throws `history.jsonl_syntax`. */
export function parseHistoryJsonl(text: string): Op[] {
  const out: Op[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch (e) {
      throw new CairnError('history.jsonl_syntax', `history: line ${i + 1} is not JSON`, { cause: e });
    }
    out.push(validateOp(o, i + 1));
  }
  return out;
}

const OP_TYPES = new Set<string>(['invoke', 'ok', 'fail', 'info']);

function validateOp(o: unknown, line: number): Op {
  const bad = (what: string): never => {
    throw new CairnError('history.jsonl_syntax', `history: line ${line}: ${what}`);
  };
  if (typeof o !== 'object' || o === null) return bad('not an object');
  const r = o as Record<string, unknown>;
  if (typeof r['index'] !== 'number') bad('index is not a number');
  if (typeof r['time'] !== 'number') bad('time is not a number');
  if (typeof r['process'] !== 'number' && typeof r['process'] !== 'string') bad('bad process');
  if (typeof r['type'] !== 'string' || !OP_TYPES.has(r['type'])) bad('bad type');
  if (typeof r['f'] !== 'string') bad('f is not a string');
  return r as unknown as Op;
}

export async function readHistoryFile(path: string): Promise<Op[]> {
  return parseHistoryJsonl(await readFile(path, 'utf8'));
}

export async function writeHistoryFile(path: string, history: History): Promise<void> {
  await writeFile(path, formatHistoryJsonl(history));
}
