/**
 * The command framework (CockroachDB's kvserver/batcheval): one Command per
 * request kind, registered here by its cmd-*.ts file. A Command says
 *   - which spans it touches and how (declareKeys → latches and lock table:
 *     src/kv/concurrency serializes overlapping writers with readers and
 *     writers, and queues requests behind other transactions' locks);
 *   - how it evaluates: reads against the leaseholder's engine (a Reader);
 *     writes into the proposal's WriteBatch (a ReadWriter), adding their MVCC
 *     stats delta into ctx.stats and their replicated side effects (a new
 *     lease, a log truncation, a checksum request) into ctx.sideEffects.
 * Evaluation is deterministic given the engine state, the header and the
 * request; it reads no clock (the batch timestamp is resolved by the caller)
 * and does no I/O beyond its reader.
 *
 * Later kinds (EndTxn, PushTxn, ResolveIntent, AdminSplit, …) plug in by
 * adding their variant to api.ts/api-codec.ts and calling registerCommand.
 *
 * Ownership: src/kv/batcheval.
 */
import { assert } from '../../util/assert.js';
import type { Timestamp } from '../../util/hlc.js';
import type { Reader, ReadWriter } from '../../../storage/engine.js';
import type { MvccStats } from '../../../storage/mvcc-stats.js';
import type { Txn } from '../../../storage/mvcc.js';
import type { Lease, RangeDescriptor, Request, RequestKind, Response, TruncatedState } from '../api.js';

/** A span a command reads or writes; endKey null: the single key. */
export interface DeclaredSpan {
  readonly key: Buffer;
  readonly endKey: Buffer | null;
  readonly write: boolean;
}

/** The header as evaluation sees it: the timestamp is resolved (never zero). */
export interface EvalHeader {
  readonly rangeId: number;
  readonly timestamp: Timestamp;
  readonly txn?: Txn;
  /** Reads: values in (timestamp, uncertaintyLimit] are uncertain (the txn layer sets it). */
  readonly uncertaintyLimit?: Timestamp;
}

/** Mutable side effects collected while evaluating one batch. */
export interface SideEffectsBuilder {
  newLease?: Lease;
  truncatedState?: TruncatedState;
  checksumId?: number;
  /** Encoded by split-trigger.ts; applied on every replica with the batch. */
  trigger?: Buffer;
  /** The range's new GC threshold (cmd-gc.ts, cmd-admin-merge.ts), written in the batch too. */
  gcThreshold?: Timestamp;
  /** A lease transfer's read summary (cmd-lease.ts), applied with newLease. */
  priorReadSummary?: Timestamp;
}

export interface EvalContext {
  readonly rangeId: number;
  readonly desc: RangeDescriptor;
  /** The lease as of evaluation (null: none yet). */
  readonly lease: Lease | null;
  /** The MVCC stats delta of the batch, added to by each write. */
  readonly stats: MvccStats;
  readonly sideEffects: SideEffectsBuilder;
  /** The term of a Raft log entry still in the log (TruncateLog needs it). */
  raftTerm(index: number): number;
  /** The range's GC threshold as of evaluation (ZERO_TIMESTAMP: none). */
  readonly gcThreshold: Timestamp;
}

export interface Command<R extends Request = Request> {
  readonly kind: R['kind'];
  /** Whether the command changes replicated state (then it is proposed to Raft). */
  readonly isWrite: boolean;
  declareKeys(h: EvalHeader, req: R, desc: RangeDescriptor, out: DeclaredSpan[]): void;
  /** Reads evaluate against a Reader, writes against the proposal's batch. */
  evaluate(ctx: EvalContext, rw: R extends { kind: 'get' | 'scan' | 'reverseScan' | 'leaseInfo' } ? Reader : ReadWriter, h: EvalHeader, req: R): Response | Promise<Response>;
}

const registry = new Map<RequestKind, Command>();

export function registerCommand<R extends Request>(cmd: Command<R>): void {
  assert(!registry.has(cmd.kind), `batcheval: command ${cmd.kind} registered twice`);
  registry.set(cmd.kind, cmd as unknown as Command);
}

export function lookupCommand(kind: RequestKind): Command {
  const c = registry.get(kind);
  assert(c !== undefined, `batcheval: no command registered for ${kind}`);
  return c;
}
