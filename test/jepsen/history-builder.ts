/**
 * Hand-made histories for the checker tests: a builder that records invocations and
 * completions in the order the test writes them (time = position).
 */
import type { Op, OpType } from '../../jepsen-style/history/history.js';

export class HistoryBuilder {
  private readonly ops: Op[] = [];

  private push(process: number | string, type: OpType, f: string, value: unknown, key?: string | number): this {
    const i = this.ops.length;
    this.ops.push({ index: i, time: i * 10, process, type, f, value, ...(key === undefined ? {} : { key }) });
    return this;
  }

  invoke(process: number | string, f: string, value: unknown, key?: string | number): this {
    return this.push(process, 'invoke', f, value, key);
  }
  ok(process: number | string, f: string, value: unknown, key?: string | number): this {
    return this.push(process, 'ok', f, value, key);
  }
  fail(process: number | string, f: string, value: unknown, key?: string | number): this {
    return this.push(process, 'fail', f, value, key);
  }
  info(process: number | string, f: string, value: unknown, key?: string | number): this {
    return this.push(process, 'info', f, value, key);
  }
  /** An invocation immediately followed by its completion. */
  op(process: number | string, type: Exclude<OpType, 'invoke'>, f: string, invokeValue: unknown, result: unknown = invokeValue, key?: string | number): this {
    this.invoke(process, f, invokeValue, key);
    return this.push(process, type, f, result, key);
  }
  build(): Op[] {
    return this.ops.slice();
  }
}

type Mop = readonly [string, string | number, unknown];

/** A txn's invocation value: reads carry null. */
export function invokeValue(mops: readonly Mop[]): Mop[] {
  return mops.map((m) => (m[0] === 'r' ? ['r', m[1], null] : m));
}

/**
 * Transactions given as [process, type, mops]; with `concurrent` all are invoked before
 * any completes (no realtime order), otherwise each runs alone, in the given order.
 */
export function txnHistory(txns: readonly [number, 'ok' | 'fail' | 'info', readonly Mop[]][], concurrent: boolean): Op[] {
  const b = new HistoryBuilder();
  if (!concurrent) {
    for (const [p, type, mops] of txns) b.op(p, type, 'txn', invokeValue(mops), type === 'ok' ? mops : invokeValue(mops));
    return b.build();
  }
  for (const [p, , mops] of txns) b.invoke(p, 'txn', invokeValue(mops));
  for (const [p, type, mops] of txns) {
    if (type === 'ok') b.ok(p, 'txn', mops);
    else if (type === 'fail') b.fail(p, 'txn', invokeValue(mops));
    else b.info(p, 'txn', invokeValue(mops));
  }
  return b.build();
}
