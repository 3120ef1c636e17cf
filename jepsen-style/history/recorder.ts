/**
 * HistoryRecorder: how clients write a history while a test runs.
 *
 * Each client calls `invoke` before sending an operation and `complete` when it learns
 * the outcome; the recorder assigns `index` (arrival order) and `time` (from the injected
 * monotonic clock, in ns) and optionally streams each op to a sink as one jsonl line, so a
 * crash of the harness loses at most the unflushed tail. Operations still open when the
 * test ends need nothing: a missing completion already means indeterminate
 * (history.ts). Ownership: the recorder owns its op array; `history()` returns a copy.
 *
 * Invariant (asserted): a process has at most one open operation, and completes only
 * the operation it invoked.
 */
import { assert } from '../../src/util/index.js';
import type { Op, OpType } from './history.js';
import { outcomeOfError, sqlStateOf } from './outcome.js';
import type { OutcomeContext } from './outcome.js';

export interface RecorderOptions {
  /** Monotonic time in ns; default process.hrtime.bigint relative to construction. */
  readonly now?: () => number;
  /** Receives every op as a JSON line (with trailing newline). */
  readonly sink?: (line: string) => void;
}

export class HistoryRecorder {
  private readonly ops: Op[] = [];
  private readonly open = new Map<number | string, Op>();
  private readonly now: () => number;
  private readonly sink: ((line: string) => void) | undefined;

  constructor(opts: RecorderOptions = {}) {
    const t0 = process.hrtime.bigint();
    this.now = opts.now ?? (() => Number(process.hrtime.bigint() - t0));
    this.sink = opts.sink;
  }

  private push(op: Omit<Op, 'index' | 'time'>): Op {
    const full: Op = { ...op, index: this.ops.length, time: this.now() };
    this.ops.push(full);
    this.sink?.(JSON.stringify(full) + '\n');
    return full;
  }

  invoke(process: number | string, f: string, value: unknown, key?: string | number): Op {
    assert(!this.open.has(process), `history: process ${String(process)} invoked while an operation is open`);
    const op = this.push({ process, type: 'invoke', f, value, ...(key === undefined ? {} : { key }) });
    this.open.set(process, op);
    return op;
  }

  /**
   * Records the outcome of `invocation`: 'ok' with the result, 'fail' when it certainly
   * did not take effect, 'info' when it may have (see outcome.ts to classify errors).
   */
  complete(invocation: Op, type: Exclude<OpType, 'invoke'>, value: unknown, error?: string): Op {
    assert(this.open.get(invocation.process) === invocation, `history: completion for an operation that is not open`);
    this.open.delete(invocation.process);
    return this.push({
      process: invocation.process,
      type,
      f: invocation.f,
      value,
      ...(invocation.key === undefined ? {} : { key: invocation.key }),
      ...(error === undefined ? {} : { error }),
    });
  }

  /**
   * Records the outcome of an operation that threw: `fail` only when the error proves it
   * did not take effect, else `info` (outcome.ts). The error field holds the SQLSTATE or
   * the message.
   */
  completeWithError(invocation: Op, e: unknown, ctx: OutcomeContext = {}): Op {
    const error = sqlStateOf(e) ?? (e instanceof Error ? e.message : String(e));
    return this.complete(invocation, outcomeOfError(e, ctx), invocation.value, error);
  }

  /** Records a harness event (nemesis start/stop) that is not a client operation. */
  event(process: string, f: string, value: unknown): Op {
    return this.push({ process, type: 'info', f, value });
  }

  history(): Op[] {
    return this.ops.slice();
  }
}
