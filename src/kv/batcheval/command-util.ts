/** Helpers shared by the cmd-*.ts files. */
import type { MvccReadOptions, MvccWriteOptions } from '../../../storage/mvcc.js';
import type { EvalContext, EvalHeader } from './command.js';

export { registerCommand } from './command.js';

/** The MVCC write options of a batch: its transaction (if any) and the stats delta to add into. */
export function writeOptions(ctx: EvalContext, h: EvalHeader): MvccWriteOptions {
  return h.txn === undefined ? { stats: ctx.stats } : { txn: h.txn, stats: ctx.stats };
}

/** The MVCC read options of a batch: its transaction and uncertainty limit (if any). */
export function readOptions(h: EvalHeader): MvccReadOptions {
  if (h.txn === undefined) return h.uncertaintyLimit === undefined ? {} : { uncertaintyLimit: h.uncertaintyLimit };
  return h.uncertaintyLimit === undefined ? { txn: h.txn } : { txn: h.txn, uncertaintyLimit: h.uncertaintyLimit };
}
